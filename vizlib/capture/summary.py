"""Turn a tensor into plain numbers that can outlive it.

A Graph must not keep activations alive, so every tensor it describes is reduced at
capture time: small tensors are copied exactly (``value``), every tensor gets a few
statistics (``Stats``), every gradient along an edge its norm. A recording reduces the
same memory many times over (a gradient passes unchanged through chains of views), so
``Summaries`` reduces each piece of memory once.
"""

from __future__ import annotations

import math
import weakref

import torch

from ..data import Stats, Value

# Tensors with at most this many elements are copied exactly into the Graph.
SMALL_NUMEL = 16


def small_value(t: torch.Tensor) -> Value:
    """An exact Python copy of a small tensor (a number for 0-d), else None."""
    if t.numel() > SMALL_NUMEL or t.is_complex():
        return None
    return t.detach().cpu().tolist()


# Below this fraction of the mean square, the one-pass variance has lost too many digits.
_CANCELLATION = 1 / 64


def stats(t: torch.Tensor, gradient: bool = False) -> Stats | None:
    """Mean, std, L2 norm, min and max of a real tensor; of a gradient, its L2 norm only.

    None for empty or complex tensors. Recording a transformer summarises thousands of
    tensors, so this reads each one a few times with cheap kernels (sum, dot, aminmax)
    instead of std_mean, which on CPU is about sixty times slower than a sum, and makes
    no copy of it. The one-pass variance sum(x^2)/n - mean^2 cancels catastrophically
    for data far from zero (1000 + 0.01*noise would get std 0), so when the mean
    dominates, the squares are summed again around the mean. A gradient gets one pass, a
    dot: its norm is what tells vanishing from exploding, and the sums and extremes of
    every gradient cost GPT-12's recording about a tenth of a plain forward + backward
    (bench/RESULTS.md).
    """
    if t.numel() == 0 or t.is_complex():
        return None
    return _stats(_unexpanded(t.detach()), t.numel(), gradient)


def _stats(x: torch.Tensor, n: int, gradient: bool) -> Stats:
    """``stats`` of a tensor of ``n`` elements whose distinct elements are ``x``."""
    if x.dtype not in (torch.float32, torch.float64):
        x = x.float()
    flat = _flat(x)
    repeat = n / x.numel()
    if gradient:
        return Stats(n, None, None, math.sqrt(_squares(flat, torch.dot(flat, flat).item()) * repeat))
    total, squares, lo, hi = torch.stack([flat.sum(), torch.dot(flat, flat), *torch.aminmax(flat)]).tolist()
    total, squares = total * repeat, _squares(flat, squares) * repeat
    mean = total / n
    variance = squares / n - mean * mean
    if math.isfinite(squares) and variance < _CANCELLATION * squares / n:
        d = flat - mean
        variance = torch.dot(d, d).item() * repeat / n
    std = math.sqrt(max(variance, 0.0)) if math.isfinite(squares) else math.nan
    return Stats(n, mean, std, math.sqrt(squares), lo, hi)


def _squares(flat: torch.Tensor, squares: float) -> float:
    """The sum of squares ``squares`` that float32 computed, again in float64 where it
    overflowed (finite values above about 1.8e19 square past float32's range)."""
    if math.isinf(squares) and flat.dtype == torch.float32:
        return torch.dot(flat.double(), flat.double()).item()
    return squares


def norm(g: torch.Tensor) -> float:
    """L2 norm of a gradient that ``stats`` has no numbers for: a complex one (the norm of
    its magnitudes, as casting it to float would drop the imaginary part and PyTorch would
    warn the learner about vizlib's own cast) or an empty one."""
    g = g.detach()
    return torch.linalg.vector_norm(g.abs() if g.is_complex() else g.float()).item()


class Summaries:
    """``stats`` and gradient norms for one recording, each computed once per piece of memory.

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
        self._done: dict[tuple, tuple[weakref.ref, Stats]] = {}

    def stats(self, t: torch.Tensor, gradient: bool = False) -> Stats | None:
        """``stats(t, gradient)``, computed once per memory and request."""
        if t.numel() == 0 or t.is_complex():
            return None
        x = _unexpanded(t.detach())
        memory = _memory(x)
        if memory is None:
            return _stats(x, t.numel(), gradient)
        storage, elements = memory
        key = elements + (t.numel(), gradient)
        held = self._done.get(key)
        if held is not None and held[0]() is storage:
            return held[1]
        result = self._done[key] = weakref.ref(storage), _stats(x, t.numel(), gradient)
        return result[1]

    def norm(self, g: torch.Tensor) -> float:
        """L2 norm of the gradient going down an edge.

        The norm of its statistics: the node the gradient reaches reads them from the same
        memory anyway, so the edge costs nothing more, and the two numbers agree. A sum of
        squares by ``dot`` is also the closer one in float32: for GPT-12's lm_head gradient
        (768,000 elements) it is 1.7e-5 off the float64 norm, ``vector_norm`` 1.1e-4.
        """
        st = self.stats(g, gradient=True)
        return st.norm if st is not None else norm(g)


def _memory(x: torch.Tensor) -> tuple[torch.UntypedStorage, tuple] | None:
    """x's storage, and a key naming it and which of its elements x reads in which order,
    at which version.

    None where that cannot be named: sparse and inference tensors (no storage, no version
    counter), and tensor subclasses, whose storage may not be their data.
    """
    if type(x) is not torch.Tensor or x.layout != torch.strided or x.is_inference():
        return None
    storage = x.untyped_storage()
    layout = None if _dense(x) else (tuple(x.shape), x.stride())
    return storage, (id(storage), x.storage_offset(), x.numel(), x.dtype, layout, x._version)


def _flat(x: torch.Tensor) -> torch.Tensor:
    """x's elements as a 1-D view in the order memory holds them, which the statistics do
    not care about. Gradients are often transposed; copying one to flatten it would cost
    more than all the statistics together. A copy only where no such view exists."""
    if x.is_contiguous():
        return x.view(-1)
    if _dense(x):
        return x.permute(sorted(range(x.dim()), key=x.stride, reverse=True)).view(-1)
    return x.contiguous().view(-1)


def _dense(x: torch.Tensor) -> bool:
    """Whether x's elements fill one block of memory, in some order of its dimensions.

    Read from the strides, without making the permuted view: this runs for every tensor
    a recording summarises.
    """
    if x.is_contiguous():
        return True
    block = 1
    for size, stride in sorted(zip(x.shape, x.stride(), strict=True), key=lambda dim: dim[1]):
        if size != 1:
            if stride != block:
                return False
            block *= size
    return True


def _unexpanded(x: torch.Tensor) -> torch.Tensor:
    """The distinct elements of an expanded tensor (stride 0), e.g. the gradient of a sum."""
    if 0 not in x.stride():
        return x
    return x[tuple(slice(0, 1) if st == 0 else slice(None) for st in x.stride())]
