"""The one place that takes, and puts back, every piece of the user's state a capture may touch.

Drawing a call runs it: a BatchNorm reached through a closure updates its running
statistics, a ``retain_grad()`` tensor gets a ``.grad`` from vizlib's backward, a
``torch.Generator`` the function uses advances, and so do torch's, Python's and NumPy's
random states. The contract is that drawing changes nothing of the user's, on every entry
point, so each capture runs inside ``UserState``:

- on entry it notes the random states (torch's CPU and, once initialised, CUDA's;
  Python's ``random``; NumPy's global one) and walks what it is handed (the function, its
  arguments, ``params=``) for modules, tensors and generators, following a function's
  closure, the globals it names, a bound method's object and a ``functools.partial``;
- while a call is recorded, the recorder hands it each module as it is entered (before it
  runs), each generator a torch call is given, and each tensor that existed before the call
  and an in-place op is about to change;
- on exit it puts everything back: buffer and tensor values (copied back only where they
  changed), which tensor each ``.grad`` is (not its values: vizlib never accumulates into
  one; only a ``backward()`` of the user's own inside the call would), generator states and
  random states.
"""

from __future__ import annotations

import functools
import inspect
import random
import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import fields, is_dataclass
from typing import Any

import torch
from torch import nn

# How far and how much the walk of a call's objects goes: enough for closures over models,
# bounded so that a function naming a huge global structure costs little.
_MAX_DEPTH = 4
_MAX_OBJECTS = 20_000


class UserState:
    """Context manager: everything noted while it is active is put back when it ends."""

    def __init__(self, *objs: object):
        self._objs = objs
        self._values: dict[int, tuple[torch.Tensor, torch.Tensor, int]] = {}  # id -> tensor, copy, version
        self._grads: dict[int, tuple[torch.Tensor, torch.Tensor | None]] = {}
        self._generators: dict[int, tuple[torch.Generator, torch.Tensor]] = {}
        self._modules: set[int] = set()
        self._seen: set[int] = set()
        self._rng: list[tuple[Callable[[Any], object], object]] = []

    def __enter__(self) -> UserState:
        self._rng = _random_states()
        self.keep(*self._objs)
        return self

    def __exit__(self, *exc: object) -> None:
        _put_back(list(self._values.values()))
        for t, grad in self._grads.values():
            if t.grad is not grad:
                t.grad = grad
        for gen, gen_state in self._generators.values():
            gen.set_state(gen_state)
        for restore, rng_state in self._rng:
            restore(rng_state)

    @contextmanager
    def grads_set_aside(self) -> Iterator[None]:
        """Every noted tensor's ``.grad`` set aside (None) while a ``backward()`` vizlib runs
        fills them, then put back: the user's gradients take nothing from vizlib's."""
        kept = [(t, t.grad) for t, _ in self._grads.values()]
        for t, _ in kept:
            t.grad = None
        try:
            yield
        finally:
            for t, grad in kept:
                t.grad = grad

    # -- what the walk and the recorder hand in --
    def keep(self, *objs: object) -> None:
        """Note every module, tensor and generator reachable from ``objs``."""
        budget = [_MAX_OBJECTS]
        for obj in objs:
            self._walk(obj, 0, budget)

    def keep_module(self, module: nn.Module) -> None:
        """A module about to run: its buffers' values and its parameters' ``.grad``, and
        those of every module inside it. One walk of the tree, which stops at a module
        kept already (``modules()``, ``buffers()`` and ``parameters()`` would each walk all
        of it, on every recording)."""
        todo = [module]
        while todo:
            m = todo.pop()
            if id(m) in self._modules:
                continue
            self._modules.add(id(m))
            for b in m._buffers.values():
                if b is not None:
                    self.keep_value(b)
            if isinstance(m, (nn.Embedding, nn.EmbeddingBag)) and m.max_norm is not None:
                self.keep_value(m.weight)  # its forward rescales rows of it in place
            for p in m._parameters.values():
                if p is not None:
                    self.keep_grad(p)
            todo += [child for child in m._modules.values() if child is not None]

    def keep_value(self, t: torch.Tensor) -> None:
        """A tensor whose values may change (a buffer, the target of an in-place op)."""
        # A meta tensor has no values to change or put back.
        if id(t) not in self._values and t.layout == torch.strided and not t.is_inference() and not t.is_meta:
            self._values[id(t)] = (t, t.detach().clone(), t._version)

    def keep_grad(self, t: torch.Tensor) -> None:
        """A tensor whose ``.grad`` a backward may fill: a leaf, or one that retains its grad
        (reading a plain non-leaf's ``.grad`` would only make torch warn)."""
        if id(t) not in self._grads and (t.is_leaf or t.retains_grad):
            self._grads[id(t)] = (t, t.grad)

    def keep_generator(self, gen: torch.Generator) -> None:
        if id(gen) not in self._generators:
            self._generators[id(gen)] = (gen, gen.get_state())

    def _walk(self, obj: object, depth: int, budget: list[int]) -> None:
        if depth > _MAX_DEPTH or budget[0] <= 0 or id(obj) in self._seen or _is_plain(obj):
            return
        self._seen.add(id(obj))
        budget[0] -= 1
        if isinstance(obj, torch.Tensor):
            self.keep_grad(obj)
            return
        if isinstance(obj, nn.Module):
            self.keep_module(obj)
            return
        if isinstance(obj, torch.Generator):
            self.keep_generator(obj)
            return
        for child in _children(obj):
            self._walk(child, depth + 1, budget)


def _put_back(kept: list[tuple[torch.Tensor, torch.Tensor, int]]) -> None:
    """Copy back each tensor whose values changed, then give it back the version it had.

    Only those are copied, compared on the device and read in one transfer per device
    (``torch.equal`` per tensor would wait for a GPU once per tensor). The version counter
    is put back too: the caller may hold a graph that saved the tensor (a BatchNorm saves
    its running statistics, which its kernel updates without counting a change), and
    autograd refuses a backward through a saved tensor whose version moved, though its
    values are the very ones saved.
    """
    kept = [(t, copy, version) for t, copy, version in kept if t.shape == copy.shape and t.dtype == copy.dtype]
    by_device: dict[torch.device, list[tuple[torch.Tensor, torch.Tensor]]] = {}
    for t, copy, _ in kept:
        by_device.setdefault(t.device, []).append((t, copy))
    with torch.no_grad():
        for pairs in by_device.values():
            changed = torch.stack([(t != copy).any() for t, copy in pairs]).tolist()
            for (t, copy), differs in zip(pairs, changed, strict=True):
                if differs:
                    t.copy_(copy)
    moved = [(t, version) for t, _, version in kept if t._version != version]
    if moved:
        torch._C._autograd._unsafe_set_version_counter(tuple(t for t, _ in moved), tuple(v for _, v in moved))


def outside_state(fn: object) -> list[tuple[str, object]]:
    """(name, value) of each module or tensor a function uses from outside its arguments:
    its closure's and the globals it names (nothing for a module or a builtin)."""
    if not isinstance(fn, types.FunctionType):
        return []
    try:
        found = inspect.getclosurevars(fn)
    except (TypeError, ValueError):
        return []
    return [
        (name, value)
        for name, value in {**found.globals, **found.nonlocals}.items()
        if isinstance(value, (nn.Module, torch.Tensor))
    ]


def _is_plain(obj: object) -> bool:
    """Objects that hold nothing of the user's state vizlib could touch."""
    return obj is None or isinstance(obj, (str, bytes, int, float, complex, bool, type, types.ModuleType))


def _children(obj: object) -> list[object]:
    """What a container, a function, a method, a partial or a plain object refers to."""
    if isinstance(obj, (list, tuple, set, frozenset)):
        return list(obj)
    if isinstance(obj, dict):
        return list(obj.values())
    if isinstance(obj, functools.partial):
        return [obj.func, *obj.args, *obj.keywords.values()]
    if isinstance(obj, types.MethodType):
        return [obj.__self__, obj.__func__]
    if isinstance(obj, types.FunctionType):
        try:
            found = inspect.getclosurevars(obj)
        except (TypeError, ValueError):
            return []
        return [*found.nonlocals.values(), *found.globals.values()]
    if is_dataclass(obj) and not isinstance(obj, type):
        return [getattr(obj, f.name, None) for f in fields(obj)]
    if callable(obj) or hasattr(obj, "__dict__"):
        return list(getattr(obj, "__dict__", {}).values())
    return []


def _random_states() -> list[tuple[Callable[[Any], object], object]]:
    """(restore, state) for each random number generator a call may draw from."""
    states: list[tuple[Callable[[Any], object], object]] = [
        (torch.set_rng_state, torch.get_rng_state()),
        (random.setstate, random.getstate()),
    ]
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        states.append((torch.cuda.set_rng_state_all, torch.cuda.get_rng_state_all()))
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        states.append((numpy.random.set_state, numpy.random.get_state()))
    return states
