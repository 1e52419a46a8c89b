"""Snapshots of what the checks rely on, compared and put back before every check.

- ``Owner``: a module or class (torch's functions and classes, the builtins' owners) as it
  was: its functions, classes and other objects, and for a class the names it had;
- ``Kept``: a name a setup cell (or a check) defined, with what it held: a function's code,
  defaults and closure, a class's attributes, a small tensor's values, a container's items.
"""

from __future__ import annotations

import operator
import sys
import types
from dataclasses import dataclass
from itertools import repeat
from typing import Any

import torch

from grader.kernel.rules import CLASS_MODULES, MISSING, TORCH_DIR, WATCHED_MODULES, plain_data


@dataclass
class Owner:
    """A module or class whose attributes the checks rely on, as it was: its functions,
    classes and other objects (not plain data, which may change by itself) and, for a
    class, the names it had (a new method on a class overrides an inherited one)."""

    label: str
    owner: Any
    saved: dict[str, Any]
    keys: set[str] | None  # for a class: every attribute name it had

    @staticmethod
    def of(label: str, owner: Any, is_class: bool) -> Owner:
        saved = {k: v for k, v in vars(owner).items() if not plain_data(v)}
        return Owner(label, owner, saved, set(vars(owner)) if is_class else None)

    def changes(self) -> list[str]:
        current = vars(self.owner)
        # Asked of a few hundred owners before and after every check, and nearly always
        # unchanged: that answer first, at C speed, then the names of what changed.
        if all(map(operator.is_, map(current.get, self.saved, repeat(MISSING)), self.saved.values())) and (
            self.keys is None or current.keys() <= self.keys
        ):
            return []
        changed = []
        for key, value in self.saved.items():
            now = current.get(key, MISSING)
            if now is value:
                continue
            if torch_wrapper_of(now, value):
                self.saved[key] = now  # torch wraps some of its own functions when it first needs to
            else:
                changed.append(key)
        if self.keys is not None:
            for key, value in list(current.items()):
                if key in self.keys or plain_data(value):
                    continue
                inherited = next((vars(k)[key] for k in self.owner.__mro__[1:] if key in vars(k)), MISSING)
                if torch_wrapper_of(value, inherited):
                    self.keys.add(key)  # an optimizer's inherited step, wrapped by torch
                    self.saved[key] = value
                else:
                    changed.append(key)
        return changed

    def restore(self) -> None:
        current = vars(self.owner)
        for key, value in self.saved.items():
            if current.get(key, MISSING) is not value:
                try:
                    setattr(self.owner, key, value)
                except (AttributeError, TypeError):
                    pass
        if self.keys is not None:
            for key in [k for k, v in current.items() if k not in self.keys and not plain_data(v)]:
                try:
                    delattr(self.owner, key)
                except (AttributeError, TypeError):
                    pass


def torch_wrapper_of(new: Any, old: Any) -> bool:
    """Whether torch itself wrapped ``old`` (torch._dynamo wraps torch.manual_seed when it is
    first imported, an optimizer class's step is wrapped when the first one is made)."""
    return (
        isinstance(new, types.FunctionType)
        and getattr(new, "__wrapped__", None) is old
        and new.__code__.co_filename.startswith(TORCH_DIR)
    )


def _watched_classes() -> list[type]:
    """torch's classes the checks use: tensors, parameters, Functions and the classes of
    CLASS_MODULES (those imported by now)."""
    classes: list[type] = [torch.Tensor, torch.nn.Parameter, torch.autograd.Function]
    for name in CLASS_MODULES:
        module = sys.modules.get(name)
        for value in vars(module).values() if module is not None else ():
            if isinstance(value, type) and value.__module__.startswith("torch"):
                classes.append(value)
    return classes


def watched_owners() -> list[Owner]:
    """The watched modules and torch's classes that checks use (and their torch bases)."""
    owners: list[Owner] = []
    seen: set[int] = set()

    def add(label: str, owner: Any, is_class: bool) -> None:
        if id(owner) not in seen:
            seen.add(id(owner))
            owners.append(Owner.of(label, owner, is_class))

    for name in WATCHED_MODULES:
        module = sys.modules.get(name)
        if module is not None:
            add(name, module, False)
    for cls in _watched_classes():
        for klass in cls.__mro__:
            if klass.__module__.startswith("torch") and not klass.__module__.startswith("torch._C"):
                add(f"{klass.__module__}.{klass.__qualname__}", klass, True)
    return owners


@dataclass
class Kept:
    """A name a setup cell (or a check) defined, with what it held."""

    value: Any
    state: Any

    @staticmethod
    def of(value: Any) -> Kept:
        return Kept(value, _state(value))

    def unchanged(self, current: Any) -> bool:
        if current is not self.value:
            return False
        try:
            return self.state is None or _same_state(self.value, self.state)
        except Exception:  # noqa: BLE001 - what cannot be compared counts as unchanged
            return True

    def restore(self, namespace: dict[str, Any], name: str) -> None:
        namespace[name] = self.value
        if self.state is not None:
            _restore_state(self.value, self.state)
            try:
                self.state = _state(self.value)
            except Exception:  # noqa: BLE001
                self.state = None


def _function_state(fn: types.FunctionType) -> tuple:
    cells = tuple(c.cell_contents if _cell_full(c) else MISSING for c in fn.__closure__ or ())
    return (fn.__code__, fn.__defaults__, dict(fn.__kwdefaults__ or {}), cells)


def _cell_full(cell: types.CellType) -> bool:
    try:
        cell.cell_contents  # noqa: B018
    except ValueError:
        return False
    return True


def _state(value: Any) -> Any:
    """What can change inside an object without changing its identity, as far as a check cares."""
    if isinstance(value, types.FunctionType):
        return _function_state(value)
    if isinstance(value, type):
        return {
            k: (v, _function_state(v) if isinstance(v, types.FunctionType) else None) for k, v in vars(value).items()
        }
    if isinstance(value, torch.Tensor):
        if (
            value.is_inference()
            or value.layout != torch.strided
            or type(value) is not torch.Tensor
            and not isinstance(value, torch.nn.Parameter)
        ):
            return None  # no version counter to read (an inference tensor), or a subclass: identity only
        return (value._version, value.detach().clone() if value.numel() <= 1 << 16 else None)
    if isinstance(value, dict):
        return {k: (v, _function_state(v) if isinstance(v, types.FunctionType) else None) for k, v in value.items()}
    if isinstance(value, (list, set)):
        return list(value)
    return None


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a is b or (type(a) is type(b) and type(a) in (int, float, str, bool) and a == b)


def _same_state(value: Any, state: Any) -> bool:
    if isinstance(value, torch.Tensor):
        return state is None or value._version == state[0]
    if isinstance(value, (list, set)):
        return len(value) == len(state) and all(x is y for x, y in zip(value, state, strict=True))
    return _same(_state(value), state)


def _restore_state(value: Any, state: Any) -> None:
    """Put ``value`` back as ``_state`` saw it (best effort: the task fails anyway)."""
    try:
        if isinstance(value, types.FunctionType):
            _restore_function(value, state)
        elif isinstance(value, type):
            _restore_class(value, state)
        elif isinstance(value, torch.Tensor) and state is not None and state[1] is not None:
            with torch.no_grad():
                value.copy_(state[1])
        elif isinstance(value, dict):
            value.clear()
            value.update({k: item for k, (item, _) in state.items()})
            for item, fstate in state.values():
                if fstate is not None:
                    _restore_state(item, fstate)
        elif isinstance(value, list):
            value[:] = state
        elif isinstance(value, set):
            value.clear()
            value.update(state)
    except Exception:  # noqa: BLE001, S110 - best effort: the task fails anyway
        pass


def _restore_function(value: types.FunctionType, state: tuple) -> None:
    code, defaults, kwdefaults, cells = state
    value.__code__, value.__defaults__ = code, defaults
    value.__kwdefaults__ = kwdefaults or None
    for cell, content in zip(value.__closure__ or (), cells, strict=False):
        if content is not MISSING:
            cell.cell_contents = content


def _restore_class(value: type, state: dict[str, Any]) -> None:
    for key in [k for k in vars(value) if k not in state]:
        delattr(value, key)
    for key, (item, fstate) in state.items():
        if vars(value).get(key, MISSING) is not item:
            setattr(value, key, item)
        if fstate is not None:
            _restore_state(item, fstate)
