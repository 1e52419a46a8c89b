"""Whether a prediction was written down or measured, read from the code that set it.

Some tasks ask for a prediction made without running anything ("which of these ops return
float32 under autocast?", "which tensors does the compiled backward save?"). The watch sees
what ran in the cell that set the answer (``Grading.ran_while_setting``), but a value can
be measured where it does not look: in code run by ``exec`` or a decorator, in a copy of the
globals, in an earlier cell, by a thread an earlier cell left running. So the cell's own
code is read as well. A prediction's cell may only build values: literals, names,
operators, comprehensions, and the builtins that build a value (PLAIN_CALLS). It is then run
again on its own, with only those builtins and no globals, and must give the values the
check took: a name read from another cell, or a value changed after the cell ran, shows.
A reading of a text the task hands out (``reading_problems``) may be any Python, and is run
again the same way, with the text and the string tools it may use.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable, Iterable
from typing import Any

PLAIN_CALLS = frozenset({"set", "frozenset", "list", "tuple", "dict", "sorted", "len", "int", "print"})
_LITERALS = (ast.Constant, ast.Set, ast.List, ast.Tuple, ast.Dict)
_PLAIN_NODES = (
    ast.Module, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Pass, ast.Name,
    ast.Call, ast.keyword, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp,
    ast.Starred, ast.SetComp, ast.ListComp, ast.GeneratorExp, ast.comprehension, ast.operator,
    ast.unaryop, ast.boolop, ast.cmpop, ast.expr_context, ast.JoinedStr, ast.FormattedValue,
    *_LITERALS,
)  # fmt: skip
_KINDS: dict[type, str] = {
    ast.FunctionDef: "a def",
    ast.AsyncFunctionDef: "a def",
    ast.ClassDef: "a class",
    ast.Lambda: "a lambda",
    ast.Import: "import",
    ast.ImportFrom: "import",
    ast.With: "a with block",
}


# Methods of a literal that reach further than its value: a format string's fields read
# attributes and items of its arguments ("{0.__globals__[sys]}".format(print)).
_REACHING_METHODS = frozenset({"format", "format_map"})
# Attributes that lead from an object to the frames running it, and from there to any
# namespace: a generator's frame, its caller, the caller's globals.
FRAME_ATTRIBUTES = frozenset(
    {"gi_frame", "cr_frame", "ag_frame", "tb_frame", "tb_next", "f_back", "f_globals", "f_locals", "f_builtins"}
)


def plain_node(node: ast.AST) -> bool:
    """Whether a node of a prediction's code only builds a value: a literal, a name (not a
    dunder such as ``__builtins__``, which tells the cell where it runs), an operator, a
    call of a value-building builtin, a public method of a literal (``{"x"}.union(...)``;
    not ``format``, whose fields reach into its arguments). Not an imaginary number: no
    prediction needs one, and ``f(x + 1e-20j)`` measures a derivative."""
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute):
            return func.attr not in _REACHING_METHODS
        return isinstance(func, ast.Name) and func.id in PLAIN_CALLS
    if isinstance(node, ast.Attribute):
        return isinstance(node.value, _LITERALS) and not node.attr.startswith("_")
    if isinstance(node, ast.Name):
        return not node.id.startswith("__")
    if isinstance(node, ast.Constant) and isinstance(node.value, complex):
        return False  # f(x + ih) / h: a derivative measured by complex-step differentiation
    return isinstance(node, _PLAIN_NODES)


def code_problems(sources: Iterable[str], given: dict[str, Any]) -> list[str]:
    """What makes the cells' code (``sources``: the code of the cells that set the names in
    ``given``, with the values the check took) more than a written-down prediction: code
    beyond building values (named by its kind or its first 40 characters), a name read from
    another cell, a value that is not what the cell's own code gives. Empty when none."""
    return _read_cells(sources, _beyond_values, lambda tree: _rerun_problems(tree, given))


def reading_problems(
    sources: Iterable[str],
    given: dict[str, Any],
    known: dict[str, Any],
    builtin_names: Iterable[str],
    modules: Iterable[str],
) -> list[str]:
    """What makes the cells' code (``sources``, which set the names in ``given``) more than
    a reading of the texts the task hands out (``known``: name -> value), with the builtins
    ``builtin_names`` and imports of ``modules`` only (string tools, say): an attribute with
    a double underscore or to a frame (ways to reach what the cell may not), a name read from another
    cell, an import of anything else, a value that is not what the cell's own code gives.
    Any Python may do the reading; it is run again on its own to see what it reads."""
    allowed = frozenset(modules)
    return _read_cells(
        sources, _dunder_attributes, lambda tree: _rerun_problems(tree, given, builtin_names, known, allowed)
    )


def reaches(sources: Iterable[str]) -> list[str]:
    """What the code of ``sources`` reaches past its own values, by its first 40 characters:
    dunder names and attributes, and the attributes that lead to frames (a check that runs a
    cell again on its own reads this first: from there, the cell could reach the kernel)."""
    found: set[str] = set()
    for source in sources:
        try:
            found |= _dunder_attributes(ast.parse(source))
        except SyntaxError:
            found.add("code that is not Python")
    return sorted(found)


def _read_cells(
    sources: Iterable[str], odd: Callable[[ast.Module], set[str]], rerun: Callable[[ast.Module], set[str]]
) -> list[str]:
    """Each cell's code parsed: what ``odd`` names in it, or, where it names nothing, what
    ``rerun`` (the cell run again on its own) shows."""
    found: set[str] = set()
    for source in set(sources):
        try:
            tree = ast.parse(source)
        except SyntaxError:
            found.add("code that is not Python")
            continue
        found |= odd(tree) or rerun(tree)
    return sorted(found)


def _beyond_values(tree: ast.Module) -> set[str]:
    """The statements and expressions that do more than build a value, by kind or by their
    first 40 characters (a def's arguments are not code that runs)."""
    odd = [n for n in ast.walk(tree) if isinstance(n, (ast.stmt, ast.expr)) and not plain_node(n)]
    return {_KINDS.get(type(n)) or ast.unparse(n).split("\n")[0][:40] for n in odd}


def _dunder_attributes(tree: ast.Module) -> set[str]:
    """What reaches past the cell's own values, by its first 40 characters: attributes with
    a double underscore or that lead to frames (FRAME_ATTRIBUTES), and dunder names."""
    return {
        ast.unparse(n)[:40]
        for n in ast.walk(tree)
        if (isinstance(n, ast.Attribute) and ("__" in n.attr or n.attr in FRAME_ATTRIBUTES))
        or (isinstance(n, ast.Name) and n.id.startswith("__"))
    }


def _rerun_problems(
    tree: ast.Module,
    given: dict[str, Any],
    builtin_names: Iterable[str] = PLAIN_CALLS,
    known: dict[str, Any] | None = None,
    modules: frozenset[str] = frozenset(),
) -> set[str]:
    """The cell's code run again on its own, with only ``builtin_names`` (print does
    nothing), the values in ``known`` and imports of ``modules``: what it cannot do alone,
    or the names whose values it does not give."""
    allowed: dict[str, Any] = {name: vars(builtins)[name] for name in builtin_names if name != "print"}
    allowed["print"] = lambda *args, **kwargs: None

    def importing(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.split(".")[0] not in modules:
            raise ImportError(f"import {name}")
        return builtins.__import__(name, *args, **kwargs)

    allowed["__import__"] = importing
    alone: dict[str, Any] = {"__builtins__": allowed, **(known or {})}
    try:
        exec(compile(tree, "<cell>", "exec"), alone)  # noqa: S102 - only what ``allowed`` and ``known`` hold
    except NameError as error:
        return {f"{error.name} (set in another cell)"}
    except ImportError as error:  # only ``importing`` raises one here
        return {str(error)}
    except Exception as error:  # noqa: BLE001 - whatever fails tells the learner the same
        return {f"code that fails on its own ({type(error).__name__})"}
    changed = [name for name in given if name in alone and alone[name] != given[name]]
    return {f"a value changed after the cell ran ({name})" for name in changed}
