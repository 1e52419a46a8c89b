"""Turn a tensor into plain numbers that can outlive it.

A Graph must not keep activations alive, so every tensor it describes is reduced at
capture time: small tensors are copied exactly (``value``), every tensor gets a few
statistics (``Stats``).
"""

from __future__ import annotations

import math

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


def stats(t: torch.Tensor, extremes: bool = True) -> Stats | None:
    """Mean, std and L2 norm (and min, max with ``extremes``) of a real tensor.

    None for empty or complex tensors. Recording a transformer summarises thousands of
    tensors, so this reads each one a few times with cheap kernels (sum, dot, aminmax)
    instead of std_mean, which on CPU is about sixty times slower than a sum, and makes
    no copy of it. The one-pass variance sum(x^2)/n - mean^2 cancels catastrophically
    for data far from zero (1000 + 0.01*noise would get std 0), so when the mean
    dominates, the squares are summed again around the mean.
    """
    if t.numel() == 0 or t.is_complex():
        return None
    x = _unexpanded(t.detach())
    if x.dtype not in (torch.float32, torch.float64):
        x = x.float()
    flat = _flat(x)
    parts = [flat.sum(), torch.dot(flat, flat), *(torch.aminmax(flat) if extremes else ())]
    total, squares, *lo_hi = torch.stack(parts).tolist()
    if math.isinf(squares) and flat.dtype == torch.float32:  # big finite values overflow float32
        squares = torch.dot(flat.double(), flat.double()).item()
    repeat = t.numel() / x.numel()
    n = t.numel()
    total, squares = total * repeat, squares * repeat
    mean = total / n
    variance = squares / n - mean * mean
    if math.isfinite(squares) and variance < _CANCELLATION * squares / n:
        d = flat - mean
        variance = torch.dot(d, d).item() * repeat / n
    std = math.sqrt(max(variance, 0.0)) if math.isfinite(squares) else math.nan
    return Stats(n, mean, std, math.sqrt(squares), *lo_hi)


def _flat(x: torch.Tensor) -> torch.Tensor:
    """x's elements as a 1-D view in the order memory holds them, which the statistics do
    not care about. Gradients are often transposed; copying one to flatten it would cost
    more than all the statistics together. A copy only where no such view exists."""
    if not x.is_contiguous():
        in_memory = x.permute(sorted(range(x.dim()), key=x.stride, reverse=True))
        x = in_memory if in_memory.is_contiguous() else x.contiguous()
    return x.view(-1)


def _unexpanded(x: torch.Tensor) -> torch.Tensor:
    """The distinct elements of an expanded tensor (stride 0), e.g. the gradient of a sum."""
    if 0 not in x.stride():
        return x
    return x[tuple(slice(0, 1) if st == 0 else slice(None) for st in x.stride())]
