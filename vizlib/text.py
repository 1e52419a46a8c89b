"""Numbers and sizes as short, deterministic text: what labels, tooltips and summaries print.

The same Graph must always give the same text (nbval compares it, DOT ids depend on it),
so every number goes through ``fmt``: four significant digits, never a platform's repr.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


def fmt(x: float) -> str:
    """A short, deterministic number: 4 significant digits, no trailing zeros."""
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, int):
        return str(x)
    return format(x, ".4g")


def dims(shape: Iterable[int | str]) -> str:
    """[2, 3], or [batch, 3] and [2, j1, 4] where a dimension is symbolic or a nested
    tensor's ragged one (no quotes around its name)."""
    return "[" + ", ".join(map(str, shape)) + "]"


def fmt_value(v: float | int | bool | list) -> str:
    """Format a small value (number or nested list) with :func:`fmt`."""
    if isinstance(v, list):
        return "[" + ", ".join(fmt_value(e) for e in v) + "]"
    return fmt(v)


@functools.cache
def dtype_name(dtype: torch.dtype) -> str:
    """'float32' for torch.float32: the name a learner types after ``torch.``. (Cached:
    a recording names every tensor's dtype.)"""
    return str(dtype).removeprefix("torch.")


@functools.cache
def device_name(device: torch.device) -> str:
    """'cuda:0' for torch.device("cuda", 0): ``str``, cached (a recording names every
    tensor's device)."""
    return str(device)


def human_bytes(n: int) -> str:
    """1536 -> '1.5 KiB'."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")
