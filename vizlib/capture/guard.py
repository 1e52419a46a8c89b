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
- on exit it puts everything back: which tensor each module's buffer and parameter is,
  buffer and tensor values (copied back only where they changed, and their version
  counters), which tensor each ``.grad`` is, and its values where a ``backward()`` of the
  call's own added into it (vizlib's never does), each leaf's ``requires_grad`` (a call
  may freeze a layer), the state of an optimizer that stepped,
  generator states and random states, and what a plain object the walk reached held
  (its attributes, and the lists, dicts and sets it holds: a key/value cache the call
  grew) where a change concerns a tensor or what may hold one (``_snapshot``).
"""

from __future__ import annotations

import copy
import functools
import inspect
import itertools
import random
import sys
import threading
import types
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import fields, is_dataclass
from typing import Any

import torch
from torch import nn
from torch.nn.parameter import is_lazy
from torch.optim.optimizer import register_optimizer_step_pre_hook
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.hooks import RemovableHandle

from ..memory import in_own_storage
from .walk import memory_parts

# How far and how much the walk of a call's objects goes: enough for closures over models,
# bounded so that a function naming a huge global structure costs little.
_MAX_DEPTH = 4
_MAX_OBJECTS = 20_000
# What reached an object in UserState's walk: a name of the user's, a plain object that is put
# back, or something that is not (an iterator, or an object tied to one).
_USER, _OBJECT, _NONE = "user", "object", "none"
# Lists, dicts and sets of more items are not put back, and the walk reads only this many of
# a container's items: copying, comparing or visiting a tokenizer's vocabulary would cost a
# drawing more than the rest.
_MAX_ITEMS = 10_000
# The tensors in a list, tuple, dict or set of more items keep no place (UserState._walk).
_MAX_PLACED = 100


class UserState:
    """Context manager: everything noted while it is active is put back when it ends."""

    def __init__(self, *objs: object):
        self._objs = objs
        self._values: dict[tuple, _Kept] = {}  # memory -> tensor over it, copy, version
        # id -> a tensor keep_value was handed and where its values lay (``_placement``): per
        # tensor, not per memory, since ``x.data`` and ``x`` share memory but only ``x`` is moved
        self._placements: dict[int, _Placed] = {}
        # id -> a tensor whose .grad a backward may fill, that .grad, and its requires_grad flag
        self._grads: dict[int, tuple[torch.Tensor, torch.Tensor | None, bool]] = {}
        self._generators: dict[int, tuple[torch.Generator, torch.Tensor]] = {}
        self._modules: set[int] = set()
        # A lazy module's parameters and buffers, which its first call makes and initialises
        # (``nn.LazyLinear``): kept as that call leaves them, as a plain first call would.
        self._lazy: set[int] = set()
        # (a module's _buffers or _parameters, a name, the tensor it held): a forward that
        # assigns a new tensor to one (self.ema = 0.9 * self.ema + ...) gets the old one back
        self._entries: list[tuple[dict, str, torch.Tensor]] = []
        self._seen: set[int] = set()
        self._rng: list[tuple[Callable[[Any], object], object]] = []
        self._optimizers: dict[int, tuple[torch.optim.Optimizer, dict]] = {}  # id -> it, its state_dict
        self._step_hook: RemovableHandle | None = None
        # Plain objects, lists, dicts and sets the walk met, each with what it held (see _snapshot)
        self._held: list[tuple[object, object]] = []

    def __enter__(self) -> UserState:
        self._rng = _random_states()
        self.keep(*self._objs)
        self._step_hook = register_optimizer_step_pre_hook(_on_this_thread(self.keep_optimizer))
        return self

    def __exit__(self, *exc: object) -> None:
        if self._step_hook is not None:
            self._step_hook.remove()
        for obj, held in self._held:  # (before an optimizer that stepped gets its state back)
            _hold_again(obj, held)
        for opt, state in self._optimizers.values():
            opt.load_state_dict(state)
        for entries, name, t in self._entries:  # (a ScriptModule's are a mapping without .get)
            if (entries[name] if name in entries else None) is not t:
                entries[name] = t
        _put_back(list(self._values.values()), list(self._placements.values()))
        _put_back_grads(self._grads.values())
        for gen, gen_state in self._generators.values():
            gen.set_state(gen_state)
        for restore, rng_state in self._rng:
            restore(rng_state)

    @contextmanager
    def grads_set_aside(self) -> Iterator[None]:
        """Every noted tensor's ``.grad`` set aside (None) while a ``backward()`` vizlib runs
        fills them, then put back: the user's gradients take nothing from vizlib's. Their
        post-accumulate-grad hooks are held back meanwhile: ``autograd.grad`` runs none, and
        one may step an optimizer (an optimizer in backward) or clear the ``.grad`` vizlib
        reads. (The engine reads each tensor's dict of them as it runs: emptied is enough.)"""
        kept = [(t, t.grad) for t, _, _ in self._grads.values()]
        hooks = [(held, dict(held)) for t, _ in kept if (held := t._post_accumulate_grad_hooks)]
        for t, _ in kept:
            t.grad = None
        for held, _ in hooks:
            held.clear()
        try:
            yield
        finally:
            for t, grad in kept:
                t.grad = grad
            for held, them in hooks:
                held.update(them)

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
            for name, b in m._buffers.items():
                if b is not None:
                    self._note_lazy(b)
                    self.keep_value(b)
                    self._entries.append((m._buffers, name, b))
            if isinstance(m, (nn.Embedding, nn.EmbeddingBag)) and m.max_norm is not None:
                self.keep_value(m.weight)  # its forward rescales rows of it in place
            for name, p in m._parameters.items():
                if p is not None:
                    self._note_lazy(p)
                    self.keep_grad(p)
                    self.keep_place(p)
                    self._entries.append((m._parameters, name, p))
            # A tensor attribute a forward pre-hook computes (prune's and the old weight_norm's
            # weight = weight_orig * mask): the call would leave its own, from vizlib's graph.
            if m._forward_pre_hooks:
                self._entries += [(m.__dict__, k, v) for k, v in m.__dict__.items() if isinstance(v, torch.Tensor)]
            todo += [child for child in m._modules.values() if child is not None]

    def keep_value(self, t: torch.Tensor, placed: torch.Tensor | None = None) -> None:
        """A tensor whose values may change (a buffer, the target of an in-place op), kept
        once per piece of memory: ``x.data`` is a new tensor at each ask, and the values to
        put back are those before the first change through any of them. ``placed``: where
        its values lie (``_placement``), taken before a dispatch mode runs this (a view made
        below autograd, as inside one, shares no version counter with ``t``)."""
        if not self._has_place(t):
            return
        self.keep_place(t)
        memory = _memory_of(t)
        if memory not in self._values:
            # (copied back into that memory, where t lies now, wherever the call moves t meanwhile)
            placed = _placement(t) if placed is None else placed
            self._values[memory] = (t if placed is None else placed, t.detach().clone(), t._version)

    def noted_since(self, n: int) -> list[torch.Tensor]:
        """The caller's tensors whose place was noted after the first ``n`` (``keep_place``),
        oldest first: for a watch that looks at each once (``left_behind.LeftBehind``)."""
        return [t for t, _, _ in itertools.islice(self._placements.values(), n, None)]

    def keep_place(self, t: torch.Tensor) -> None:
        """Where a tensor of the user's lies (its storage, offset, shape, strides, dtype) and its
        version, to put it back there if the call moves it: ``t.set_(u)`` and ``t.resize_(n)``
        move a tensor without a new one, and torch hands ``set_`` to no function mode, so the
        recorder cannot see it coming. Memory for the values is not copied (``keep_value``
        does that where they may change)."""
        if id(t) not in self._placements and self._has_place(t) and (placed := _placement(t)) is not None:
            self._placements[id(t)] = (t, placed, t._version)

    def _has_place(self, t: torch.Tensor) -> bool:
        """Whether ``t`` has values in memory to keep: not a meta tensor, an inference one
        (no version counter), a sparse one, a quantized one (torch can neither compare nor
        tell where one lies: ``is_set_to`` has no quantized kernel), or a lazy module's
        parameter (its first call makes it: ``materialize`` sets its ``.data``)."""
        return not (
            id(t) in self._lazy
            or is_lazy(t)
            or t.layout != torch.strided
            or t.is_quantized
            or t.is_inference()
            or t.is_meta
        )

    def _note_lazy(self, t: torch.Tensor) -> None:
        if is_lazy(t):
            self._lazy.add(id(t))

    def keep_grad(self, t: torch.Tensor) -> None:
        """A tensor whose ``.grad`` a backward may fill: a leaf, or one that retains its grad
        (reading a plain non-leaf's ``.grad`` would only make torch warn). Its flag
        ``requires_grad`` too: a call may freeze or unfreeze parameters (``p.requires_grad_()``)."""
        if id(t) not in self._grads and (t.is_leaf or t.retains_grad):
            self._grads[id(t)] = (t, t.grad, t.requires_grad)

    def keep_grad_values(self) -> None:
        """The call runs a backward of its own (a training step, gradient accumulation): it
        adds into every ``.grad`` it reaches in place, so their values are kept too (only
        then: a copy of every gradient on each recording would double their memory)."""
        for _, grad, _ in list(self._grads.values()):
            if grad is not None:
                self.keep_value(grad)

    def keep_optimizer(self, opt: torch.optim.Optimizer, *_: object) -> None:
        """An optimizer about to step: its state (momentum, Adam's averages, step counts), as
        a copy; the parameters it changes are kept as any tensor changed in place is."""
        if id(opt) not in self._optimizers:
            self._optimizers[id(opt)] = (opt, copy.deepcopy(opt.state_dict()))

    def keep_generator(self, gen: torch.Generator) -> None:
        if id(gen) not in self._generators:
            self._generators[id(gen)] = (gen, gen.get_state())

    def _keep_tensor(self, t: torch.Tensor, placed: bool) -> None:
        """A tensor the walk reached: its ``.grad``, and where ``placed``, its place."""
        self.keep_grad(t)
        if placed:
            self.keep_place(t)

    def _walk(self, obj: object, depth: int, budget: list[int], held_by: str = _USER, placed: bool = True) -> None:
        """Note what ``obj`` reaches. ``held_by`` says what reached it (see ``_snapshot``): a
        name of the user's (an argument, a variable a function names), a plain object put
        back as it was, or something that cannot be (an iterator): below that, nothing is.
        ``placed``: a tensor reached keeps its place (``keep_place``); not the items of a
        container of more than ``_MAX_PLACED`` (a dataset held as a list of tensors), each of
        which would cost every drawing a few µs for a ``set_`` nobody calls on them."""
        if depth > _MAX_DEPTH or budget[0] <= 0 or id(obj) in self._seen or _is_plain(obj):
            return
        self._seen.add(id(obj))
        budget[0] -= 1
        if isinstance(obj, torch.Tensor):
            self._keep_tensor(obj, placed)
            return
        if isinstance(obj, nn.Module):
            self.keep_module(obj)
            return
        if isinstance(obj, torch.Generator):
            self.keep_generator(obj)
            return
        held = _snapshot(obj, held_by)
        if held is not None:
            self._held.append((obj, held))
        if isinstance(obj, (types.FunctionType, types.MethodType, functools.partial)):
            below = _USER  # what a function names is the user's own, wherever the function is held
        elif held is not None:
            below = _OBJECT
        else:
            below = _USER if held_by == _USER and isinstance(obj, (list, tuple, dict, set, frozenset)) else _NONE
        # (the first items of a container of millions: each of the rest would cost a call, and
        # numbers and strings take nothing from the budget)
        many = isinstance(obj, (list, tuple, dict, set, frozenset)) and len(obj) > _MAX_PLACED
        for child in itertools.islice(_children(obj), _MAX_ITEMS):
            if budget[0] <= 0:
                break
            self._walk(child, depth + 1, budget, below, placed and not many)


@contextmanager
def kept_before_written(state: UserState, tensors: list[torch.Tensor]) -> Iterator[None]:
    """While active, each of ``tensors`` is kept by ``state`` (``keep_value``) just before the
    first ATen op that writes into its memory, rather than copied up front: a run that changes
    none of them (nearly every one) copies nothing. Every write is seen, inside a module's
    forward too (``nn.ReLU(inplace=True)``), by the op's schema. Meant for runs that are not
    recorded (an FX graph run to learn its shapes): it costs a Python call per ATen op. A
    tensor whose memory cannot be told by its storage (a subclass, a sparse one) is kept at once."""
    # data_ptr of a storage -> the tensors over it, each with where it lies (keep_value's placed)
    watched: dict[int, list[tuple[torch.Tensor, torch.Tensor]]] = {}
    for t in tensors:
        if type(t) in (torch.Tensor, nn.Parameter) and in_own_storage(t) and t.untyped_storage().data_ptr():
            watched.setdefault(t.untyped_storage().data_ptr(), []).append((t, t.detach()))
        else:
            state.keep_value(t)
    with _WritesKept(state, watched):
        yield


class _WritesKept(TorchDispatchMode):
    """``kept_before_written``'s mode: hands ``state`` the tensors an op is about to write into."""

    def __init__(self, state: UserState, watched: dict[int, list[tuple[torch.Tensor, torch.Tensor]]]) -> None:
        super().__init__()
        self._state = state
        self._watched = watched

    def __torch_dispatch__(self, func: Any, types: object, args: tuple = (), kwargs: dict | None = None) -> object:
        kwargs = kwargs or {}
        if self._watched and func._schema.is_mutable:
            for t in _written(func._schema, args, kwargs):
                if t.layout == torch.strided and not t.is_meta:
                    for theirs, placed in self._watched.pop(t.untyped_storage().data_ptr(), ()):
                        self._state.keep_value(theirs, placed)
        return func(*args, **kwargs)


def _written(schema: torch.FunctionSchema, args: tuple, kwargs: dict) -> list[torch.Tensor]:
    """The tensors an op of ``schema`` writes into (``self`` of ``add_``, ``out=``, each
    tensor of a ``_foreach_`` op's list)."""
    found: list[torch.Tensor] = []
    for k, arg in enumerate(schema.arguments):
        if arg.alias_info is None or not arg.alias_info.is_write:
            continue
        value = args[k] if k < len(args) else kwargs.get(arg.name)
        items = value if isinstance(value, (list, tuple)) else [value]
        found += [t for t in items if isinstance(t, torch.Tensor)]
    return found


def _snapshot(obj: object, held_by: str) -> object:
    """What a plain object holds (its attributes), or a list, dict or set that a plain object
    holds (its items), as the same objects, for ``_hold_again``. A call may give an object new
    tensors: a Hugging Face ``DynamicCache`` handed to a decoding step grows by the step, and
    would keep the tensors of vizlib's graph. None for what is not put back: a list or dict
    the user names (a stash of what the call computed is theirs to keep), one of more than
    ``_MAX_ITEMS``, anything below what cannot be put back, immutable containers, functions,
    classes, and iterators and the objects that hold one, whose place in what they iterate
    over is not theirs to put back (a half put back object would be out of step with it)."""
    if held_by == _NONE:
        return None
    if isinstance(obj, (list, dict, set)):
        if held_by != _OBJECT or len(obj) > _MAX_ITEMS:
            return None
        return list(obj) if isinstance(obj, list) else obj.copy()
    if isinstance(obj, (tuple, frozenset, types.FunctionType, types.MethodType, functools.partial, type)):
        return None
    attributes = getattr(obj, "__dict__", None)
    if not isinstance(attributes, dict) or _iterates(obj) or any(map(_iterates, attributes.values())):
        return None
    return dict(attributes)


def _iterates(obj: object) -> bool:
    """An iterator or generator (asked of its type: an object's own ``__getattr__`` may raise
    anything for a name it does not know)."""
    return hasattr(type(obj), "__next__")


def _hold_again(obj: object, held: object) -> None:
    """Put back what ``obj`` held (``_snapshot``) where the call changed it: the very objects
    it held, not copies of them. Only where a change concerns a tensor, or what holds some (a
    container, an object): then every change of ``obj`` is put back, so that it stays whole
    (a cache layer's keys and its "initialised" flag). Numbers and strings changed alone are
    left: a counter another thread advances meanwhile keeps its count."""
    if isinstance(obj, list):
        assert isinstance(held, list)
        if len(obj) == len(held) and all(a is b for a, b in zip(obj, held, strict=True)):
            return
        before, now = {id(v) for v in held}, {id(v) for v in obj}
        moved = [v for v in obj if id(v) not in before] + [v for v in held if id(v) not in now]
        if any(map(_holds, moved)):
            obj[:] = held
        return
    if isinstance(obj, set):
        assert isinstance(held, set)
        if any(map(_holds, obj ^ held)):
            obj.clear()
            obj.update(held)
        return
    current = obj if isinstance(obj, dict) else obj.__dict__
    assert isinstance(held, dict)
    gone = object()
    changed = {k for k in current.keys() | held.keys() if current.get(k, gone) is not held.get(k, gone)}
    if not any(_holds(current.get(k)) or _holds(held.get(k)) for k in changed):
        return
    for key in changed:
        if key in held:
            current[key] = held[key]
        else:
            del current[key]


def _holds(value: object) -> bool:
    """Whether a value is, or may hold, a tensor: anything but a number, a string or None."""
    return not isinstance(value, (int, float, complex, str, bytes, type(None)))


def _on_this_thread(hook: Callable[..., None]) -> Callable[..., None]:
    """``hook``, run only on the thread that made it: optimizer hooks are global, and a
    training loop on another thread is not the call being drawn."""
    thread = threading.get_ident()

    def on_this_thread(*args: object) -> None:
        if threading.get_ident() == thread:
            hook(*args)

    return on_this_thread


def _memory_of(t: torch.Tensor) -> tuple:
    """Which elements of which memory ``t``'s values are, the same for every tensor that
    views them (``x.data``, a buffer's view). A wrapper subclass's are those of the tensors
    it holds (``walk.memory_parts``); where it names none, its own object stands for them."""
    if in_own_storage(t):
        storage = t.untyped_storage()
        # Every empty storage's data_ptr is 0: an observer's min_val and max_val, both empty
        # until its first call, are two tensors, told apart by their storages themselves.
        memory = storage.data_ptr() or ("empty", storage._cdata)
        return (memory, t.storage_offset(), t.shape, t.stride(), t.dtype)
    parts = memory_parts(t)
    return tuple(map(_memory_of, parts)) if parts else (id(t),)


# A piece of memory kept by UserState.keep_value: a tensor over it (``_placement``, else the
# tensor kept), a copy of its values, and its version.
_Kept = tuple[torch.Tensor, torch.Tensor, int]
# Where UserState.keep_place found a tensor: the tensor, another over the same values
# (``_placement``), and its version.
_Placed = tuple[torch.Tensor, torch.Tensor, int]


def _placement(t: torch.Tensor) -> torch.Tensor | None:
    """Where ``t``'s values lie: another tensor over them (its storage, offset, shape,
    strides and dtype), which nothing the call does to ``t`` in place moves; None for a
    tensor whose storage only stands in (``in_own_storage``)."""
    return t.detach() if in_own_storage(t) else None


def _put_back(kept: list[_Kept], placements: list[_Placed]) -> None:
    """Copy back each tensor whose values changed, then give it back the version it had.

    A tensor the call moved to other memory in place (``buf.resize_(n)``: a quantization
    observer's statistics grow to one per channel on their first call; ``p.data = u``;
    ``w.set_(u)``) is first put back where it lay, with the version it had there
    (``placements``: one per tensor, the first kept); the values are copied back into the
    memory they were kept from, not into wherever the tensor lies.

    Only those are copied, compared on the device and read in one transfer per device
    (``torch.equal`` per tensor would wait for a GPU once per tensor). The version counter
    is put back too: the caller may hold a graph that saved the tensor (a BatchNorm saves
    its running statistics, which its kernel updates without counting a change), and
    autograd refuses a backward through a saved tensor whose version moved, though its
    values are the very ones saved.
    """
    moved_back = []
    with torch.no_grad():
        for t, placed, version in placements:
            if not _lies_at(t, placed):
                t.data = placed
                moved_back.append((t, version))
    # the first kept last: two kept over one memory (before and after a resize) give it the first's
    kept = [k for k in reversed(kept) if k[0].shape == k[1].shape and k[0].dtype == k[1].dtype]
    by_device: dict[torch.device, list[tuple[torch.Tensor, torch.Tensor]]] = {}
    for t, before, _ in kept:
        by_device.setdefault(t.device, []).append((t, before))
    with torch.no_grad():
        for pairs in by_device.values():
            for t, before in _changed(pairs):
                t.copy_(before)
    # (a tensor moved back last: the version it had before the call moved it, as its values are)
    moved = [(t, version) for t, _, version in kept if t._version != version]
    moved += [(t, version) for t, version in moved_back if t._version != version]
    if moved:
        torch._C._autograd._unsafe_set_version_counter(tuple(t for t, _ in moved), tuple(v for _, v in moved))


def _put_back_grads(kept: Iterable[tuple[torch.Tensor, torch.Tensor | None, bool]]) -> None:
    """Give each tensor back the ``.grad`` it had (that very tensor) and its ``requires_grad``
    (a call may have frozen a layer, or made a tensor of its closure require grad)."""
    for t, grad, requires_grad in kept:
        if t.grad is not grad:
            t.grad = grad
        if t.requires_grad != requires_grad and t.is_leaf:
            t.requires_grad_(requires_grad)


def _lies_at(t: torch.Tensor, placed: torch.Tensor) -> bool:
    """Whether ``t``'s values still lie where ``placed``'s do (``_placement``)."""
    return t.is_set_to(placed) and t.dtype == placed.dtype  # (storage, offset, shape and strides)


def _changed(pairs: list[tuple[torch.Tensor, torch.Tensor]]) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The pairs (a tensor, a copy of its values before) that differ, compared on one device
    and read in one transfer. A subclass that runs ops itself (``__torch_dispatch__``, as
    TwoTensor does) compares into a tensor of its kind, which cannot be read so: each is
    taken as changed (copying its own values back onto it changes nothing)."""
    plain = [(t != before).any() for t, before in pairs if _compares_plainly(t)]
    differs = iter(torch.stack(plain).tolist() if plain else [])
    return [(t, before) for t, before in pairs if not _compares_plainly(t) or next(differs)]


def _compares_plainly(t: torch.Tensor) -> bool:
    """Whether ``t != x`` is a plain tensor: unless ``t``'s kind runs ops itself."""
    return type(t).__torch_dispatch__ is torch.Tensor.__torch_dispatch__


def outside_state(fn: object) -> list[tuple[str, object]]:
    """(name, value) of each module, tensor, list, tuple or dict (which may hold modules), and
    each plain object that holds a tensor (a model of plain tensors), a function uses from
    outside its arguments: its closure's and the globals it names (nothing for a module or
    a builtin)."""
    if not isinstance(fn, types.FunctionType):
        return []
    try:
        found = inspect.getclosurevars(fn)
    except (TypeError, ValueError):
        return []
    return [
        (name, value)
        for name, value in {**found.globals, **found.nonlocals}.items()
        if isinstance(value, (nn.Module, torch.Tensor, list, tuple, dict)) or _holds_a_tensor(value)
    ]


def _holds_a_tensor(obj: object) -> bool:
    """A plain object (no class, module or function) with a tensor among its attributes."""
    if isinstance(obj, (type, types.ModuleType, types.FunctionType)) or not hasattr(obj, "__dict__"):
        return False
    return any(isinstance(v, torch.Tensor) for v in vars(obj).values())


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
