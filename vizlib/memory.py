"""Whether a tensor's values are there to read.

Two kinds of tensor have a storage with no memory behind it: a wrapper subclass (DTensor,
TwoTensor), whose storage only stands in for the tensors it is made of, and one whose
memory was freed under it (``untyped_storage().resize_(0)``, as FSDP frees a parameter it
gathered), which keeps its shape. Reading the second crashes Python, so every stage that
reads a tensor the user hands over asks first: capture, and the plots.
"""

from __future__ import annotations

import torch

from .errors import VizlibValueError


def in_own_storage(t: torch.Tensor) -> bool:
    """Whether ``t``'s memory is its storage: a strided tensor's, unless it is nested or a
    wrapper subclass (``_make_wrapper_subclass``, as TwoTensor and DTensor are made), whose
    storage only stands in, with no memory (torch calls it an invalid python storage: its
    ``data_ptr()`` raises)."""
    if t.layout != torch.strided or t.is_nested:
        return False
    if type(t) is torch.Tensor or type(t) is torch.nn.Parameter:
        return True
    try:
        t.untyped_storage().data_ptr()
    except RuntimeError:
        return False
    return True


def has_memory(t: torch.Tensor) -> bool:
    """Whether ``t``'s storage holds all its elements: ``t.untyped_storage().resize_(0)``
    frees it (as FSDP frees a parameter it gathered) and leaves the shape, and reading such
    a tensor crashes Python. A tensor without a storage of its own is taken to have one."""
    if not in_own_storage(t) or t.is_meta or t.numel() == 0:
        return True
    try:
        return t.untyped_storage().nbytes() >= _bytes_needed(t)
    except (RuntimeError, NotImplementedError):  # (a torch.func transform's wrapper: no storage to ask)
        return True


def _bytes_needed(t: torch.Tensor) -> int:
    last = t.storage_offset() + sum((n - 1) * step for n, step in zip(t.shape, t.stride(), strict=True))
    return int((last + 1) * t.element_size())


def refuse_without_memory(t: torch.Tensor, what: str) -> None:
    """Refuse ``t`` (``what`` names it) where its storage is too small for its elements
    (``has_memory``): asked before anything reads a tensor the user hands over."""
    if has_memory(t):
        return
    raise VizlibValueError(
        f"{what} has no memory for its values: its storage holds {t.untyped_storage().nbytes()} bytes, and its "
        f"{t.numel()} elements need {_bytes_needed(t)}: it was freed (untyped_storage().resize_(0) frees it, as FSDP "
        "frees a parameter between uses), and reading it would crash Python. Give it its memory back before drawing "
        "it (for FSDP, draw inside the forward, or within summon_full_params())."
    )
