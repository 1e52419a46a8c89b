"""How a tensor's elements sit in memory, read from its strides: whether they fill one
block (``dense``), in which order, which memory a tensor reads (``memory_key``), and how
to read them a bounded piece at a time without copying more than a piece.

Statistics (summary.py) do not care about the order of the elements, so they read a
tensor in memory order: a transposed gradient is read as it lies, without a copy.
"""

from __future__ import annotations

import torch


def block_copy(x: torch.Tensor) -> torch.Tensor:
    """A copy of x in one block of memory, its elements in memory order where x fills one
    block (as ``pieces`` reads it), else in x's own order; of x's dtype. Not flattened:
    the batch it joins flattens all its copies in one call (``Summaries._reduce``), where a
    view of each would cost a GPU's host a dispatcher call per piece."""
    if dense(x) and not x.is_contiguous():
        x = x.permute(memory_order(x))
    return x.clone(memory_format=torch.contiguous_format)


def pieces(x: torch.Tensor, limit: int) -> list[torch.Tensor]:
    """x's elements as pieces of at most ``limit`` elements, in memory order where x fills
    one block of memory (the statistics do not care about order; gradients are often
    transposed, and copying one to flatten it would cost more than all the statistics).

    Dense: 1-D views of the block. Otherwise (a slice, a split's part) x is cut along its
    outermost dimension into pieces that are dense or small, so that reading one never
    copies more than a piece.
    """
    if dense(x):
        flat = x.view(-1) if x.is_contiguous() else x.permute(memory_order(x)).view(-1)
        if flat.numel() <= limit:
            return [flat]
        return list(flat.split(limit))
    if x.numel() <= limit:
        return [x]
    outer = memory_order(x)[0]
    step = max(1, limit // (x.numel() // x.shape[outer]))
    return [p for part in x.split(step, dim=outer) for p in pieces(part, limit)]


def memory_order(x: torch.Tensor) -> list[int]:
    """x's dimensions from the largest stride to the smallest."""
    return sorted(range(x.dim()), key=x.stride, reverse=True)


def memory_key(x: torch.Tensor) -> tuple[torch.UntypedStorage, tuple] | None:
    """x's storage, and a key naming it and which of its elements x reads in which order,
    at which version.

    None where that cannot be named: sparse and inference tensors (no storage, no version
    counter), and tensor subclasses, whose storage may not be their data.
    """
    if type(x) is not torch.Tensor or x.layout != torch.strided or x.is_inference():
        return None
    storage = x.untyped_storage()
    layout = None if dense(x) else (tuple(x.shape), x.stride())
    return storage, (id(storage), x.storage_offset(), x.numel(), x.dtype, layout, x._version)


def dense(x: torch.Tensor) -> bool:
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


def unexpanded(x: torch.Tensor) -> torch.Tensor:
    """The distinct elements of an expanded tensor (stride 0), e.g. the gradient of a sum."""
    if 0 not in x.stride():
        return x
    return x[tuple(slice(0, 1) if st == 0 else slice(None) for st in x.stride())]
