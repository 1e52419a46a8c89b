"""Turn a tensor into plain numbers that can outlive it, without waiting for the device.

A Graph must not keep activations alive, so every tensor it describes is reduced at
capture time: small tensors are copied exactly (``value``), every tensor gets a few
statistics (``Stats``), every gradient along an edge its norm. Reading a number from a
GPU waits for everything queued before it; a recording that read each op's statistics
at once would wait thousands of times per step. So ``Summaries`` leaves each reduction
on the tensor's device as a few numbers (a "row"), and ``fetch`` brings all rows to the
host at the end of the recording in one transfer per device and dtype. A recording
reduces the same memory many times over (a gradient passes unchanged through chains of
views), so ``Summaries`` also reduces each piece of memory once.

No reduction makes a copy of the whole tensor: a tensor is read in pieces, each cast
(half precision, integers) or centred on its mean on its own, so the largest temporary
is one piece (``_PIECE``).

Most tensors of a loop, and the biases and norms of a model, are small, and reducing
each on its own costs a handful of kernel calls: more than the op itself, on any device.
So a small piece is only copied when it is asked for (one call, and the copy is also a
small tensor's exact value), and the copies waiting on one device are reduced together,
a batch at a time, by segment reductions (``_Batch``); a batch is reduced as soon as it
holds ``_BATCH_ELEMENTS``, so what waits stays bounded. On a GPU a big gradient's norm is
likewise one multi-tensor norm per batch of gradients held (``_hold``, ``_HELD_BYTES``), and
big values of one shape are copied to wait for two reductions per batch (``_wait_alike``,
``_WAITING_BYTES``).
rows.py turns the rows, once on the host, into each tensor's numbers.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import torch
from torch import nn

from ..data import Stats, Value
from .autocast import autocast_off
from .layout import block_copy, dense, memory_key, pieces, unexpanded
from .nested import nested_elements
from .reductions import FLOAT64_UP_TO, moments, piece_row, segment_rows
from .rows import UNREDUCED, Pending, finish, finish_one, sum_and_squares

P = ParamSpec("P")
R = TypeVar("R")

# Tensors with at most this many elements are copied exactly into the Graph.
SMALL_NUMEL = 16

# Elements per piece of a tensor read through a copy (a cast, a centring): the largest
# temporary a reduction makes, 1 MiB of float32 on a CPU, 16 MiB on an accelerator.
_PIECE = {"cpu": 1 << 18}
_DEVICE_PIECE = 1 << 22
# Pieces of up to this many elements are batched (at most FLOAT64_UP_TO). A segment
# reduction costs more per element than a plain one: on a CPU, past about a thousand
# elements the handful of calls a piece costs on its own is the cheaper; on an
# accelerator every call waits its turn on the device, and batching always pays.
_BATCHED = {"cpu": 1024}
# Devices whose big pieces of values are reduced by ``moments`` (two reductions a batch)
# rather than ``piece_row`` (six calls a piece, and a centred copy): all but the CPU, where
# var_mean is the slower.
_BY_MOMENTS = {"cpu": False}
# The most bytes the copies of big values waiting for ``moments`` hold, all shapes together:
# this much, and a ``_WAITING_SHARE``-th of the bytes of the big values read so far (mostly
# activations a plain step keeps too), so that a small model's recording grows its peak
# memory by as small a share as a big one's. (A GPT-12 of width 768 at batch 8 x 64, whose
# box outputs are 1.5 MiB each: the first 16 reduced alone, then batches that grow to six.)
_WAITING_BYTES = 8 << 20
_WAITING_SHARE = 8
# A batch is reduced once its copies hold this many elements (512 KiB of float64): its
# temporaries stay a few MiB, whatever the recording's size.
_BATCH_ELEMENTS = 1 << 16
# Devices whose big float32/float64 gradients are held, not reduced one at a time, until
# one multi-tensor norm (``torch._foreach_norm``) reads a batch of them: on a GPU each
# ``dot`` is a launch the host waits on, and a backward summarises hundreds of gradients.
# Not the CPU, where a ``dot`` costs no launch and the batch would only hold memory.
_BY_FOREACH = {"cpu": False}
# Held gradients are read once they hold this many bytes: the most a recording keeps
# alive beyond what a plain backward would.
_HELD_BYTES = 16 << 20


def small_value(t: torch.Tensor) -> Value:
    """An exact Python copy of a small tensor (a number for 0-d), else None; read at once
    (the ways in that record a whole call use ``Summaries.value`` instead)."""
    readable = _readable(t.detach()) if _small(t) else None  # (a subclass that runs ops itself: none)
    return None if readable is None else readable.cpu().tolist()


def stats(t: torch.Tensor, gradient: bool = False) -> Stats | None:
    """Mean, std, L2 norm, min and max of a real tensor; of a gradient, and of a complex
    tensor (the norm of its magnitudes), its L2 norm only.

    None for empty and meta tensors. Read at once (one transfer); a recording
    uses ``Summaries``, which reads all of its tensors' statistics together.
    """
    s = Summaries()
    pending = s.stats(t, gradient)
    s.fetch()
    return s.result(pending)


def _readable(t: torch.Tensor) -> torch.Tensor | None:
    """A sparse tensor as the dense one it stands for (whose values can be summed up), a
    nested one as its elements (``nested_elements``), a strided one as it is. Read with
    autograd off (``_grad_off``), so not detached: a ``detach`` is a dispatcher call, which
    a GPU's host pays for every value a forward shows. A torch.func wrapper that outlived
    its transform is the one tensor ``detach`` still unwraps (its storage cannot be read).

    A subclass that runs ops itself (``__torch_dispatch__``: a MaskedTensor, a DTensor)
    holds other tensors, not values vizlib can read as memory: None, no numbers. One that
    only overrides ``__torch_function__`` is read as the plain tensor it is, so that its
    override does not see vizlib's own reads."""
    if t.requires_grad and torch._C._functorch.is_functorch_wrapped_tensor(t):
        t = t.detach()
    if t.is_nested:  # (a jagged one is a subclass of its own)
        return nested_elements(t)
    kind = type(t)
    if kind is not torch.Tensor and kind is not nn.Parameter:
        if kind.__torch_dispatch__ is not torch.Tensor.__torch_dispatch__:
            return None
        with torch._C.DisableTorchFunctionSubclass():
            t = t.as_subclass(torch.Tensor)
    return t.to_dense() if t.layout != torch.strided else t


def _grad_off(method: Callable[P, R]) -> Callable[P, R]:
    """``method`` run with autograd off: what it reads of a tensor that requires grad
    makes no node (nor a number in autograd's count, which ``unwatched`` reads), and it
    needs no ``detach`` first. (In backward, where every gradient is read, autograd is
    off already.)"""

    @functools.wraps(method)
    def reading(*args: P.args, **kwargs: P.kwargs) -> R:
        if not torch.is_grad_enabled():
            return method(*args, **kwargs)
        torch._C._set_grad_enabled(False)
        try:
            return method(*args, **kwargs)
        finally:
            torch._C._set_grad_enabled(True)

    return reading


def _small(t: torch.Tensor) -> bool:
    return t.numel() <= SMALL_NUMEL and not t.is_complex() and not t.is_meta and not t.is_nested


class _Batch:
    """Copies of small pieces on one device, of one dtype and request, waiting to be
    reduced together. ``targets`` says which row of which ``Pending`` each one fills
    (None: a copy kept only as a value); ``values``, which small tensor's value starts
    where among the copies, until the batch is reduced and ``offset`` says where its
    copies are among the rows ``fetch`` reads."""

    __slots__ = ("key", "copies", "lengths", "targets", "values", "elements", "offset")

    def __init__(self, key: tuple) -> None:
        self.key: tuple | None = key  # (device, dtype, gradient, kept); None once fetched
        self.copies: list[torch.Tensor] = []
        self.lengths: list[int] = []
        self.targets: list[tuple[Pending, int] | None] = []
        self.values: list[tuple[Pending, int]] = []
        self.elements = 0
        self.offset: int | None = None

    @property
    def group(self) -> tuple:
        """Where its copies are read: (device, dtype)."""
        assert self.key is not None
        return self.key[:2]

    def add_value(self, value: Pending, start: int) -> None:
        """``value`` is the copy that starts ``start`` elements into this batch."""
        value.counts.append(value.numel)
        if self.offset is None:
            value.rows.append(UNREDUCED)
            self.values.append((value, start))
        else:
            value.rows.append((self.group, self.offset + start, value.numel))

    def kept_at(self, offset: int) -> None:
        """The batch's copies are kept, from ``offset`` on in the rows of their dtype."""
        self.offset = offset
        for value, start in self.values:
            value.rows[0] = (self.group, offset + start, value.numel)
        self.values = []


class Summaries:
    """``stats``, gradient norms and small values for one recording, kept on the device
    until ``fetch``, each statistic computed once per piece of memory.

    A gradient reaches a view node (view, transpose, t, expand...), goes down the edge
    below it as a view of the same memory, and reaches the next node again; a
    parameter's gradient is the one its TBackward node already saw. Computed anew each
    time, GPT-12's statistics would read about 40% more memory, most of it
    parameter-sized. Tensors over the same elements, read in the same order, give the
    same numbers to the last bit, so a repeat returns the first result.

    A result is looked up by the elements read (storage, offset, count, dtype, and the
    layout unless memory order), the version counter (every in-place change bumps it)
    and the request. It holds only a weak reference to the storage: while that storage
    is alive no other tensor can have its memory, and once it is gone the entry is
    never matched, so a block freed and reused by a new tensor is summarised anew.
    """

    def __init__(self) -> None:
        # memory -> (its storage, its statistics, where its copy waits if it is small)
        self._done: dict[tuple, tuple[weakref.ref, Pending, tuple[_Batch, int] | None]] = {}
        self._groups: dict[tuple, list[torch.Tensor]] = {}  # (device, dtype) -> rows on it
        self._sizes: dict[tuple, int] = {}  # (device, dtype) -> elements in its rows so far
        self._batches: dict[tuple, _Batch] = {}  # (device, dtype, gradient, kept) -> small pieces
        self._pending: list[Pending] = []
        self._devices: set[torch.device] = set()
        self._limits: dict[torch.device, int] = {}  # see _batched
        self._kept: list[_Batch] = []  # reduced batches whose copies are read at fetch
        # (device, dtype, shape) -> copies of big values' pieces waiting for ``moments``, and
        # the (Pending, slot, elements) of the row each fills
        self._alike: dict[tuple, tuple[list[torch.Tensor], list[tuple[Pending, int, int]]]] = {}
        self._waiting = 0  # bytes of their copies
        self._read = 0  # bytes of the big values read by ``moments`` so far
        # (device, dtype) -> what ``moments`` gave (four tensors of a number per row each), and
        # the (Pending, slot, elements) of each row: made rows at fetch, by one stack for all
        self._moments: dict[tuple, tuple[list[tuple[torch.Tensor, ...]], list[tuple[Pending, int, int]]]] = {}
        # (device, dtype) -> gradients held for one multi-tensor norm (see _BY_FOREACH), each
        # with the Pending and row it fills, and the bytes they hold
        self._held: dict[tuple, list[tuple[Pending, int, torch.Tensor]]] = {}
        self._held_bytes: dict[tuple, int] = {}

    @property
    def devices(self) -> set[str]:
        """Every device a summarised tensor lived on."""
        return {str(d) for d in self._devices}

    def saw(self, t: torch.Tensor) -> None:
        """Note the device of a tensor that was not summarised (a leaf without values)."""
        self._devices.add(t.device)

    # -- asking: each returns at once, the numbers stay on the device --
    @_grad_off
    def describe(self, t: torch.Tensor, gradient: bool = False) -> tuple[Pending | None, Pending | None]:
        """``value(t)`` and ``stats(t, gradient)`` together: a small tensor is copied once
        for both. (A nested tensor has no value: its elements read flat are not its value.)"""
        nested = t.is_nested
        readable = _readable(t)
        if readable is None:
            return None, None
        n = readable.numel()
        if n <= SMALL_NUMEL and self._plain(readable, n):
            return self._small_plain(readable, n, gradient, not nested)
        return None if nested else self.value(readable), self._summarise(readable, n, gradient)

    @_grad_off
    def stats(self, t: torch.Tensor, gradient: bool = False) -> Pending | None:
        """``stats(t, gradient)``, computed once per memory and request."""
        readable = _readable(t)
        if readable is None:
            return None
        n = readable.numel()
        if self._plain(readable, n):
            return self._small_plain(readable, n, gradient, False)[1]
        return self._summarise(readable, n, gradient)

    @_grad_off
    def norm(self, g: torch.Tensor) -> Pending | None:
        """L2 norm of the gradient going down an edge (``result(...).norm``).

        The norm of its statistics: the node the gradient reaches reads them from the same
        memory anyway, so the edge costs nothing more, and the two numbers agree. A complex
        gradient gets the norm of its magnitudes (``vector_norm`` reads complex tensors
        as they are: casting one to float would drop the imaginary part, and PyTorch would
        warn the learner about vizlib's own cast); an empty one 0; a meta one none.
        """
        readable = _readable(g)
        if readable is None:
            return None
        pending = self.stats(readable, gradient=True)
        if pending is not None or readable.is_meta:
            return pending
        return Pending("norms", 0, result=Stats(0, None, None, 0.0), done=True)  # an empty gradient

    @_grad_off
    def value(self, t: torch.Tensor) -> Pending | None:
        """An exact copy of a small tensor (see ``small_value``), else None."""
        if not _small(t):
            return None
        copy = t.clone(memory_format=torch.contiguous_format).view(-1)
        return self._queue(Pending("value", t.numel(), shape=tuple(t.shape)), [(copy, t.numel())])

    # -- reading: once, at the end --
    def fetch(self) -> None:
        """Bring every row to the host: one transfer per device and dtype, whatever the
        number of tensors summarised. (Autocast off: its casts are no part of vizlib's sums.)"""
        with autocast_off():
            self._fetch()

    def _fetch(self) -> None:
        for key in list(self._batches):
            self._reduce(key)
        for key in list(self._held):
            self._norms(key)
        for key in list(self._alike):
            self._reduce_alike(key)
        from_moments = self._stack_moments()
        host = {group: torch.cat(rows).cpu().tolist() for group, rows in self._groups.items()}
        for group, at, k in from_moments:
            sum_and_squares(host[group], at, k)
        for p in self._pending:
            if len(p.rows) == 1:  # nearly every tensor: one row, no list of parts to make
                group, offset, length = p.rows[0]
                p.result = finish_one(p, host[group][offset : offset + length])
            else:
                p.result = finish(p, [host[group][offset : offset + length] for group, offset, length in p.rows])
            p.done = True
        self._groups, self._sizes, self._pending, self._moments = {}, {}, [], {}
        for batch in self._kept:  # its copies were read: a later value copies anew
            batch.key = None
        self._kept = []

    @staticmethod
    def result(p: Pending | None) -> Stats | None:
        """The statistics ``stats`` or ``norm`` asked for, once fetched (None for none)."""
        if p is None:
            return None
        if not p.done:
            raise RuntimeError("vizlib: statistics read before Summaries.fetch()")
        assert p.result is None or isinstance(p.result, Stats)
        return p.result

    @staticmethod
    def value_of(p: Pending | None) -> Value:
        """The copy ``value`` asked for, once fetched (None for a big tensor)."""
        if p is None:
            return None
        if not p.done:
            raise RuntimeError("vizlib: value read before Summaries.fetch()")
        assert not isinstance(p.result, Stats)
        return p.result

    # -- the reductions --
    def _plain(self, t: torch.Tensor, n: int) -> bool:
        """Whether ``t`` (``n`` elements) is the common case ``_small_plain`` takes: a plain
        real tensor, small enough to batch, in one block in its own order."""
        return (
            0 < n <= self._batched(t.device)
            and type(t) is torch.Tensor
            and t.is_contiguous()
            and not t.is_complex()
            and not t.is_meta
            and not t.is_inference()
        )

    def _small_plain(self, t: torch.Tensor, n: int, gradient: bool, value: bool) -> tuple[Pending | None, Pending]:
        """``_summarise`` (and ``value``) of a ``_plain`` tensor: the same result, but this
        runs for nearly every tensor of a loop, so each property is read once, and a
        repeat costs no copy. Its copy (the tensor may change in place later) is read as
        both the statistics and the value."""
        device, dtype, storage = t.device, t.dtype, t.untyped_storage()
        self._devices.add(device)
        copied = None
        if value:
            copied = Pending("value", n, shape=tuple(t.shape))
            self._pending.append(copied)
        key = (id(storage), t.storage_offset(), n, dtype, None, t._version, n, gradient)  # as memory_key's
        held = self._done.get(key)
        if held is not None and held[0]() is storage:
            if copied is not None:
                at = held[2]
                if at is not None and at[0].key is not None:  # its copy is kept: the value is read from it
                    at[0].add_value(copied, at[1])
                else:
                    self._batch(None, t.clone(), n, gradient, copied)
            return copied, held[1]
        stats = Pending("squares" if gradient else "values", n)
        self._pending.append(stats)
        # A small tensor's copy is kept even when no value is asked for: a gradient's edge
        # asks for its norm first, then the node it reaches for its value.
        at = self._batch(stats, t.clone(), n, gradient, copied, n <= SMALL_NUMEL)
        self._done[key] = weakref.ref(storage), stats, at if n <= SMALL_NUMEL else None
        return copied, stats

    def _summarise(self, t: torch.Tensor, n: int, gradient: bool) -> Pending | None:
        """The statistics of ``t`` (detached, ``n`` elements), once per memory."""
        self._devices.add(t.device)
        if n == 0 or t.is_meta:
            return None
        if t.is_complex():  # one number: the norm of its magnitudes (see norm)
            return self._queue(Pending("norms", n), [(torch.linalg.vector_norm(t).view(1), n)])
        x = unexpanded(t)
        memory = memory_key(x)
        if memory is None:
            return self._stats(x, n, gradient)
        storage, elements = memory
        key = elements + (n, gradient)
        held = self._done.get(key)
        if held is not None and held[0]() is storage:
            return held[1]
        pending = self._stats(x, n, gradient)
        self._done[key] = weakref.ref(storage), pending, None
        return pending

    def _stats(self, x: torch.Tensor, n: int, gradient: bool) -> Pending:
        """Queue the statistics of a tensor of ``n`` elements whose distinct elements are ``x``.

        A gradient of float32 or float64 in one block of memory is read whole, by one
        ``dot`` that makes no copy (on a GPU, held for one multi-tensor norm); on a GPU, so is
        a value of float32 or float64 in one block, by ``moments``. Anything read through a
        copy is read in pieces; small pieces wait in a batch, and on a GPU so do copies of
        big pieces of values, by shape (``_wait_alike``).
        """
        p = Pending("squares" if gradient else "values", n)
        self._pending.append(p)
        k = x.numel()
        batched = self._batched(x.device)
        if k <= batched:
            self._batch(p, block_copy(x), k, gradient)
            return p
        as_is = x.dtype in (torch.float32, torch.float64) and dense(x) and k > FLOAT64_UP_TO  # no copy needed
        # A contiguous tensor of one piece is read as it is: its 1-D view would only cost a
        # dispatcher call (the reductions read every element whatever the shape).
        if gradient and as_is and _BY_FOREACH.get(x.device.type, True):
            self._hold(p, x if x.is_contiguous() else pieces(x, k)[0], k)
            return p
        # Pieces bound the copies a read makes; what is read as it is needs none. On an
        # accelerator a value read as it is goes to ``moments`` whole: each piece would cost
        # the host a var_mean and an aminmax (a logits tensor of 25 million floats: 7 pieces).
        whole = as_is and (gradient or _BY_MOMENTS.get(x.device.type, True))
        limit = k if whole else _PIECE.get(x.device.type, _DEVICE_PIECE)
        for piece in [x] if k <= limit and x.is_contiguous() else pieces(x, limit):
            k = piece.numel()
            if k <= batched:
                self._batch(p, block_copy(piece), k, gradient)
            elif not gradient and _BY_MOMENTS.get(piece.device.type, True):
                self._wait_alike(p, piece, k)
            else:
                self._add_row(p, piece_row(piece, gradient), k)
        return p

    def _hold(self, p: Pending, grad: torch.Tensor, count: int) -> None:
        """Hold a gradient (its memory, as one block) for ``_norms``: its row of ``p`` is
        filled in when the held gradients of its device and dtype are read together."""
        key = (grad.device, grad.dtype)
        self._held.setdefault(key, []).append((p, len(p.rows), grad))
        p.rows.append(UNREDUCED)
        p.counts.append(count)
        held = self._held_bytes[key] = self._held_bytes.get(key, 0) + count * grad.element_size()
        if held >= _HELD_BYTES:
            self._norms(key)

    def _norms(self, key: tuple) -> None:
        """Read the gradients held on one device in one dtype: one multi-tensor norm, whose
        squares (in float64) are their rows; then let go of them."""
        held = self._held.pop(key)
        del self._held_bytes[key]
        norms = torch._foreach_norm([grad for _, _, grad in held])
        squares = torch.stack(norms).to(torch.float64).square_()
        offset = self._append(squares)
        group = (squares.device, squares.dtype)
        for j, (p, slot, _) in enumerate(held):
            p.rows[slot] = (group, offset + j, 1)

    def _wait_alike(self, p: Pending, piece: torch.Tensor, k: int) -> None:
        """Copy a big piece of a value (``k`` elements) to wait, beside those of its shape,
        for ``moments``; its row of ``p`` is filled in when they are reduced.

        A copy, made now: the value may change in place once read (``relu_``, ``+=``), and
        a copy costs a GPU's host one call where ``var_mean`` and ``aminmax`` cost it
        several launches' time each. Half precision and integers are copied as float32.
        The copies waiting are all reduced once they reach their limit (``_WAITING_BYTES``,
        ``_WAITING_SHARE``); a piece of more than half of it is reduced alone, as it is."""
        dtype = piece.dtype if piece.dtype in (torch.float32, torch.float64) else torch.float32
        p.rows.append(UNREDUCED)
        p.counts.append(k)
        target = (p, len(p.rows) - 1, k)
        nbytes = k * dtype.itemsize
        self._read += nbytes
        limit = min(_WAITING_BYTES, self._read // _WAITING_SHARE)
        if 2 * nbytes > limit:
            self._add_moments([target], moments(piece.reshape(1, k).to(dtype)))
            return
        copies, targets = self._alike.setdefault((piece.device, dtype, piece.shape), ([], []))
        copies.append(piece.to(dtype, memory_format=torch.contiguous_format, copy=True))
        targets.append(target)
        self._waiting += nbytes
        if self._waiting >= limit:
            for other in list(self._alike):
                self._reduce_alike(other)

    def _reduce_alike(self, key: tuple) -> None:
        """Reduce the copies of one shape waiting for ``moments``, and let go of them."""
        copies, targets = self._alike.pop(key)
        self._waiting -= sum(c.nbytes for c in copies)
        data = torch.stack(copies) if len(copies) > 1 else copies[0]
        self._add_moments(targets, moments(data.view(len(copies), -1)))

    def _add_moments(self, targets: list[tuple[Pending, int, int]], four: tuple[torch.Tensor, ...]) -> None:
        """What ``moments`` gave for ``targets`` (each a ``Pending``, its row's slot, its
        elements), made rows at fetch (``_stack_moments``)."""
        parts, waiting = self._moments.setdefault((four[0].device, four[0].dtype), ([], []))
        parts.append(four)
        waiting += targets

    def _stack_moments(self) -> list[tuple[tuple, int, int]]:
        """Make every row ``moments`` gave, [mean, min, max, variance], one stack per device
        and dtype (a row's own stack would cost a GPU's host a launch per batch), each
        ``Pending`` told where its row is; return (group, offset, elements) of each row,
        whose mean and variance the host multiplies into a sum and squares."""
        made = []
        for group, (parts, targets) in self._moments.items():
            columns = [torch.cat(column) for column in zip(*parts, strict=True)]
            offset = self._append(torch.stack(columns, dim=1).view(-1))
            for j, (p, slot, count) in enumerate(targets):
                p.rows[slot] = (group, offset + 4 * j, 4)
                made.append((group, offset + 4 * j, count))
        return made

    def _queue(self, p: Pending, rows: list[tuple[torch.Tensor, int]]) -> Pending:
        for row, count in rows:
            self._add_row(p, row, count)
        self._pending.append(p)
        return p

    def _add_row(self, p: Pending, row: torch.Tensor, count: int) -> None:
        p.rows.append(((row.device, row.dtype), self._append(row), row.numel()))
        p.counts.append(count)

    def _batched(self, device: torch.device) -> int:
        """Pieces of up to this many elements are batched on ``device`` (asked for every
        tensor, so kept per device)."""
        limit = self._limits.get(device)
        if limit is None:
            limit = self._limits[device] = min(FLOAT64_UP_TO, _BATCHED.get(device.type, FLOAT64_UP_TO))
        return limit

    def _batch(
        self,
        p: Pending | None,
        copy: torch.Tensor,
        k: int,
        gradient: bool,
        value: Pending | None = None,
        keep: bool = False,
    ) -> tuple[_Batch, int]:
        """Put a small piece's copy (``k`` elements) in its batch: its row of ``p`` (None:
        none) is filled in when the batch is reduced, and so is ``value``, a small
        tensor's value read from the copy itself. Copies that may be values (``value``,
        ``keep``) wait in batches of their own, kept until ``fetch``: every one is small.
        Returns where the copy is."""
        key = (copy.device, copy.dtype, gradient, keep or value is not None)
        batch = self._batches.get(key)
        if batch is None:
            batch = self._batches[key] = _Batch(key)
        at = batch, batch.elements
        batch.copies.append(copy)
        batch.lengths.append(k)
        if p is None:
            batch.targets.append(None)
        else:
            batch.targets.append((p, len(p.rows)))
            p.rows.append(UNREDUCED)  # its place, filled in by _reduce
            p.counts.append(k)
        if value is not None:
            batch.add_value(value, batch.elements)
        batch.elements += k
        if batch.elements >= _BATCH_ELEMENTS:
            self._reduce(key)
        return at

    def _reduce(self, key: tuple) -> None:
        """Reduce one batch: its rows join the device's float64 rows, its copies (where
        they may be values) the rows of their dtype, and each ``Pending`` learns where its
        row is."""
        batch = self._batches.pop(key)
        device, _, gradient, kept = key
        # Each copy is one block: flattened and joined in one call, not a view of each.
        data = torch._C._nn.flatten_dense_tensors(batch.copies)
        rows = segment_rows(data, batch.lengths, gradient)
        width = 1 if gradient else 4
        offset = self._append(rows)
        group = (device, torch.float64)
        for j, target in enumerate(batch.targets):
            if target is not None:
                p, slot = target
                p.rows[slot] = (group, offset + j * width, width)
        if kept:
            batch.kept_at(self._append(data))
            self._kept.append(batch)
        batch.copies, batch.lengths, batch.targets = [], [], []

    def _append(self, row: torch.Tensor) -> int:
        """Add rows to those read at ``fetch``; where they start in their group."""
        group = (row.device, row.dtype)
        offset = self._sizes.get(group, 0)
        self._groups.setdefault(group, []).append(row)
        self._sizes[group] = offset + row.numel()
        return offset
