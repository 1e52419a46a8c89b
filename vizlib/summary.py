"""Turn a tensor into plain numbers that can outlive it.

A Graph must not keep activations alive, so every tensor it describes is reduced at
capture time: small tensors are copied exactly (``value``), every tensor gets a few
statistics (``Stats``). Two reductions per tensor (``aminmax`` and ``std_mean``) give all
of them, which keeps recording a large model cheap.
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
    min: float
    max: float
    mean: float
    std: float
    norm: float

    @property
    def finite(self) -> bool:
        """False when any element is NaN or ±Inf."""
        return all(math.isfinite(v) for v in (self.min, self.max, self.mean))


def dtype_name(dtype: torch.dtype) -> str:
    """'float32' for torch.float32: the name a learner types."""
    return str(dtype).removeprefix("torch.")


def small_value(t: torch.Tensor) -> Value:
    """An exact Python copy of a small tensor (a number for 0-d), else None."""
    if t.numel() > SMALL_NUMEL or t.is_complex():
        return None
    return t.detach().cpu().tolist()


def stats(t: torch.Tensor) -> Stats | None:
    """Min, max, mean, std and L2 norm of a real tensor; None for empty or complex ones."""
    if t.numel() == 0 or t.is_complex():
        return None
    x = t.detach()
    if not x.is_floating_point():
        x = x.double()
    lo, hi = torch.aminmax(x)
    std, mean = torch.std_mean(x.float(), correction=0)
    lo, hi, mean, std = torch.stack([lo.float(), hi.float(), mean, std]).tolist()
    n = x.numel()
    # ||x||^2 = n * (var + mean^2): no third pass over the data.
    norm = math.sqrt(max(n * (std * std + mean * mean), 0.0)) if math.isfinite(std + mean) else math.nan
    return Stats(numel=n, min=lo, max=hi, mean=mean, std=std, norm=norm)


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
