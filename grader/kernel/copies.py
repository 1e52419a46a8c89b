"""torch's own code run under another name: a Watch names a function by its module or its
file, and a copy of torch's source ``exec``'d under a module name and file of the learner's
choosing (``exec(compile(inspect.getsource(clip_grad), "mine.py", "exec"), {})``) has
neither. Compiled by the same Python, the copy's code is torch's, instruction for
instruction and name for name: ``named`` tells it by that likeness."""

from __future__ import annotations

import sys
import types
from typing import Any

# A code object's likeness: its instructions, the names and constants it uses, its locals.
Likeness = tuple[bytes, tuple[str, ...], tuple[str, ...], tuple[Any, ...]]

_BY_MODULE: dict[str, dict[Likeness, str]] = {}  # a module's name -> its code's likeness -> label


def _likeness(code: types.CodeType) -> Likeness | None:
    """None for code too plain to tell a copy from the learner's own: a comprehension or a
    lambda (``[p.grad for p in parameters if p.grad is not None]`` is torch's line and the
    learner's), or a function of a few instructions."""
    if code.co_name.startswith("<") or len(code.co_code) <= 16:
        return None
    consts = tuple(("code", c.co_qualname) if isinstance(c, types.CodeType) else repr(c) for c in code.co_consts)
    return (code.co_code, code.co_names, code.co_varnames, consts)


def _codes(value: Any, module: str, seen: set[int]) -> list[types.CodeType]:
    """The code of a module's function or class (its methods, properties), nested code and
    the functions a decorator wrapped too. Only functions and classes are looked into (no
    attribute of any other object is read: one may warn or run code when read)."""
    kind = type(value)  # not isinstance: it reads __class__, which an object may answer in code
    if kind in (staticmethod, classmethod):
        value = value.__func__
    elif kind is property:
        value = value.fget
    if id(value) in seen:
        return []
    seen.add(id(value))
    if issubclass(type(value), type):
        return (
            [c for inner in vars(value).values() for c in _codes(inner, module, seen)]
            if value.__module__ == module
            else []
        )
    if type(value) is not types.FunctionType or value.__module__ != module:
        return []
    found, todo = [], [value.__code__]
    while todo:
        found.append(todo.pop())
        todo.extend(c for c in found[-1].co_consts if isinstance(c, types.CodeType))
    return found + _codes(value.__dict__.get("__wrapped__"), module, seen)


def _of_module(name: str) -> dict[Likeness, str]:
    if name not in _BY_MODULE:
        known: dict[Likeness, str] = {}
        seen: set[int] = set()
        file = getattr(sys.modules[name], "__file__", None)
        for value in list(vars(sys.modules[name]).values()):
            try:
                codes = _codes(value, name, seen)
            except Exception:  # noqa: BLE001 - a class whose attributes cannot be read holds nothing to name
                codes = []
            for code in codes:
                likeness = _likeness(code)
                # the module's own code (a decorator's wrapper, contextlib's, is another's)
                if likeness is not None and code.co_filename == file:
                    known.setdefault(likeness, f"{name}:{code.co_qualname}")
        _BY_MODULE[name] = known
    return _BY_MODULE[name]


def named(codes: set[types.CodeType], prefixes: tuple[str, ...]) -> list[str]:
    """The labels ('torch.nn.utils.clip_grad:clip_grad_norm_ (a copy)') starting with one of
    ``prefixes`` of the code in ``codes`` that is a copy of a loaded module's function."""
    # The modules asked about first: most prefixes name an operation or a C function
    # ('aten.', 'torch.Tensor.item'), no module, and then no code need be looked at.
    modules = tuple({p.split(":")[0] for p in prefixes})
    names = [m for m in list(sys.modules) if m.startswith(modules)]
    if not names:
        return []
    likenesses = {likeness for likeness in map(_likeness, codes) if likeness is not None}
    if not likenesses:
        return []
    found = set()
    for name in names:
        if getattr(sys.modules.get(name), "__dict__", None) is None:
            continue
        known = _of_module(name)
        for likeness in likenesses & known.keys():
            if known[likeness].startswith(prefixes):
                found.add(f"{known[likeness]} (a copy)")
    return sorted(found)
