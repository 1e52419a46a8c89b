"""Nested tensors (``torch.nested``), as a recording reads them: a shape it can draw, and the
elements its statistics read.

A nested tensor has no shape of plain ints: a jagged one's ragged dimension is a symbol
(``torch.Size([2, j1, 4])``), and a strided one answers no ``.shape`` at all. Nor can it be
viewed as one flat tensor, as a recording reads the others. Its elements are one plain
tensor underneath (``values()``), and statistics do not care about order.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from ..data import Shape


def tensor_shape(t: torch.Tensor) -> Shape:
    """``t``'s shape as a picture names it: ints, and for a nested tensor's ragged dimension
    torch's own name of it (``j1``, a jagged layout's) or the range of its lengths (``2..3``,
    a strided layout's, whose sizes are kept on the host)."""
    if not t.is_nested:
        return tuple(t.shape)
    if t.layout == torch.jagged:
        return named_sizes(t.shape)
    sizes = t._nested_tensor_size().tolist()
    dims: list[int | str] = [len(sizes)]
    for lengths in zip(*sizes, strict=True):
        lo, hi = min(lengths), max(lengths)
        dims.append(lo if lo == hi else f"{lo}..{hi}")
    return tuple(dims)


def named_sizes(size: Iterable[object]) -> Shape:
    """A ``torch.Size`` as ints, and a symbolic size (a jagged tensor's ``j1``) by its name."""
    return tuple(d if isinstance(d, int) else str(d) for d in size)


def nested_elements(t: torch.Tensor) -> torch.Tensor:
    """Every element of a nested tensor ``t``, once each, as one plain tensor: the values
    underneath it where they are exactly its elements (no copy, nothing read on the host),
    else its components, flattened and joined (a copy)."""
    if t.layout == torch.jagged:
        if getattr(t, "_lengths", None) is None and t.is_contiguous():  # its values hold no gap
            return t.values()
    elif t.is_contiguous():
        return t.values()
    parts = [c.reshape(-1) for c in t.unbind()]
    return torch.cat(parts) if parts else t.values()[:0]
