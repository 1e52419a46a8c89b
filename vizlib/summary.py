"""Turn a tensor into plain numbers that can outlive it.

A Graph must not keep activations alive, so every tensor it describes is reduced at
capture time: small tensors are copied exactly (``value``), every tensor gets a few
statistics (``Stats``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

# Tensors with at most this many elements are copied exactly into the Graph.
SMALL_NUMEL = 16

Value = float | int | bool | list | None


@dataclass(frozen=True)
class Stats:
    """Statistics of one tensor, enough for a tooltip and for NaN/Inf flags."""

    numel: int
    mean: float
    std: float
    norm: float
    min: float | None = None  # None where not computed (gradients: their norm is what matters)
    max: float | None = None

    @property
    def finite(self) -> bool:
        """False when any element is NaN or ±Inf."""
        return all(v is None or math.isfinite(v) for v in (self.mean, self.norm, self.min, self.max))


def dtype_name(dtype: torch.dtype) -> str:
    """'float32' for torch.float32: the name a learner types."""
    return str(dtype).removeprefix("torch.")


def small_value(t: torch.Tensor) -> Value:
    """An exact Python copy of a small tensor (a number for 0-d), else None."""
    if t.numel() > SMALL_NUMEL or t.is_complex():
        return None
    return t.detach().cpu().tolist()


def stats(t: torch.Tensor, extremes: bool = True) -> Stats | None:
    """Mean, std and L2 norm (and min, max with ``extremes``) of a real tensor.

    None for empty or complex tensors. A few cheap kernels (a subtraction, sum, dot, aminmax) instead of
    std_mean, which on CPU is about a hundred times slower than a sum: recording a
    transformer summarises thousands of tensors.
    """
    if t.numel() == 0 or t.is_complex():
        return None
    x = _unexpanded(t.detach())
    if x.dtype not in (torch.float32, torch.float64):
        x = x.float()
    repeat = t.numel() / x.numel()
    # Sums of x - x[0] rather than of x: sum(x^2)/n - mean^2 cancels catastrophically for
    # data far from zero (1000 + 0.01*noise would get std 0).
    shift = x[(0,) * x.dim()]
    d = x - shift
    squares = torch.dot(d.view(-1), d.view(-1)) if d.is_contiguous() else torch.linalg.vector_norm(d) ** 2
    parts = [shift, d.sum(), squares, *(torch.aminmax(x) if extremes else ())]
    c, total, squares, *lo_hi = torch.stack(parts).tolist()
    n = t.numel()
    total, squares = total * repeat, squares * repeat
    mean_d = total / n
    std = math.sqrt(max(squares / n - mean_d * mean_d, 0.0)) if math.isfinite(squares) else math.nan
    norm_sq = squares + 2 * c * total + n * c * c  # sum((d + c)^2)
    return Stats(n, c + mean_d, std, math.sqrt(max(norm_sq, 0.0)) if math.isfinite(norm_sq) else math.nan, *lo_hi)


def _unexpanded(x: torch.Tensor) -> torch.Tensor:
    """The distinct elements of an expanded tensor (stride 0), e.g. the gradient of a sum."""
    if 0 not in x.stride():
        return x
    return x[tuple(slice(0, 1) if st == 0 else slice(None) for st in x.stride())]


def fmt(x: float) -> str:
    """A short, deterministic number: 4 significant digits, no trailing zeros."""
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, int):
        return str(x)
    return format(x, ".4g")


def fmt_value(v: Value) -> str:
    """Format a small value (number or nested list) with :func:`fmt`."""
    if isinstance(v, list):
        return "[" + ", ".join(fmt_value(e) for e in v) + "]"
    return fmt(v)


def human_bytes(n: int) -> str:
    """1536 -> '1.5 KiB'."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")
