"""What a cell's code reads and sets, read from its source (``ast``) and from the code
objects of what it defined: the guard compares only what a check uses, and records the
cells that set a prediction."""

from __future__ import annotations

import ast
import functools
import types
from collections.abc import Iterable
from typing import Any

from grader.kernel.rules import MUTATING_METHODS


def _globals_used(code: types.CodeType) -> set[str]:
    """Global names a function (and the functions and classes nested in it) may read."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _globals_used(const)
    return names


def dependencies(value: Any) -> set[str]:
    if isinstance(value, types.FunctionType):
        return _globals_used(value.__code__)
    if isinstance(value, type):
        names: set[str] = set()
        for item in vars(value).values():
            if isinstance(item, (staticmethod, classmethod)):
                item = item.__func__
            if isinstance(item, types.FunctionType):
                names |= _globals_used(item.__code__)
        return names
    if isinstance(value, dict):
        return set().union(*(dependencies(v) for v in value.values() if isinstance(v, types.FunctionType)))
    return set()


def cell_names(source: str) -> tuple[set[str], set[str]]:
    """The names a cell reads without defining them itself (from the setup, earlier cells or
    the builtins), and the names it defines, both anywhere in the cell."""
    loaded, stored = _cell_names(source)
    return set(loaded), set(stored)


@functools.lru_cache(maxsize=256)
def _cell_names(source: str) -> tuple[frozenset[str], frozenset[str]]:
    """``cell_names``, kept per source: asked before every check cell runs, and a kernel may
    run the same check cell again and again (the test suite's runs of many answers in one)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return frozenset(), frozenset()
    loaded: set[str] = set()
    stored: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else stored).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stored.add(node.name)
        elif isinstance(node, ast.arg):
            stored.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            stored.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            stored.add(node.name)
    return frozenset(loaded - stored), frozenset(stored)


def sets_names(source: str, names: Iterable[str]) -> set[str]:
    """Which of ``names`` a cell sets or changes: assigns, defines (def, class), deletes,
    assigns into (x[k] = v, x.a = v) or calls a changing method of (x.update(...),
    x.add_(...))."""
    wanted = set(names)
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            found.update(wanted & set(node.names))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.update(wanted & {node.name})
        else:
            found.update(wanted & {_changed_name(node)})
    return found


def _changed_name(node: ast.AST) -> str | None:
    """The name whose value ``node`` sets or changes (``x = ...``, ``x[k] = v``, ``x.a = v``,
    ``x.update(...)``), or None."""
    if isinstance(node, ast.Name):
        return node.id if not isinstance(node.ctx, ast.Load) else None
    if isinstance(node, (ast.Subscript, ast.Attribute)) and not isinstance(node.ctx, ast.Load):
        target: ast.expr = node.value
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and _mutates(node.func.attr):
        target = node.func.value
    else:
        return None
    while isinstance(target, (ast.Subscript, ast.Attribute)):
        target = target.value
    return target.id if isinstance(target, ast.Name) else None


def _mutates(method: str) -> bool:
    """Whether a method of that name changes its object (dict.update, list.append, add_)."""
    return method in MUTATING_METHODS or (method.endswith("_") and not method.startswith("_"))


def is_check(source: str) -> bool:
    """A check or hidden cell ends with _grading.passed(...) or _grading.done()."""
    return "_grading.passed(" in source or "_grading.done(" in source


# --------------------------------------------------------------------------------------
# The session
# --------------------------------------------------------------------------------------
