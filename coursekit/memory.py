"""What a training process keeps in memory between steps, counted from its real tensors.

Chapter 05c reconciles the figures you will read ("16 bytes per parameter", ZeRO's
``16 Ψ / N``) with what a model and its optimizer really hold. Counting ``numel() *
element_size()`` of each tensor gets two things wrong, so the count here goes by storage,
the block of memory behind a tensor:

- under FSDP a parameter, its gradient and its optimizer state are ``DTensor``s: what this
  rank holds is the local shard (``to_local()``), and the block behind a shard can be larger
  than the shard itself, padded so that every rank's block has the same size;
- several tensors can be views of one block (FSDP's gradients of one unit share the buffer
  its reduce-scatter wrote into): a block is counted once.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import nn
from torch.distributed.tensor import DTensor


def local(tensor: torch.Tensor) -> torch.Tensor:
    """The part of ``tensor`` that lives in this process: a DTensor's local shard, or the
    tensor itself."""
    return tensor.to_local() if isinstance(tensor, DTensor) else tensor


def storage_bytes(tensors: Iterable[torch.Tensor]) -> int:
    """Bytes of memory behind ``tensors`` in this process: each storage counted once, its
    padding included."""
    blocks: dict[int, int] = {}
    for tensor in tensors:
        storage = local(tensor).untyped_storage()
        blocks[storage.data_ptr()] = storage.nbytes()
    blocks.pop(0, None)  # empty storages all sit at address 0 and hold nothing
    return sum(blocks.values())


def bytes_by_role(
    model: nn.Module, optimizer: torch.optim.Optimizer | None = None
) -> dict[tuple[str, torch.dtype], int]:
    """Bytes this process holds for ``model`` (and ``optimizer``), by (role, dtype).

    The roles: ``"parameters"``, ``"gradients"`` (of the parameters that have one), and
    every tensor the optimizer keeps per parameter under its own key (AdamW:
    ``"exp_avg"``, ``"exp_avg_sq"`` and ``"step"``, a one-element tensor per parameter
    tensor). Activations are not here: they live only from a forward to its backward.
    """
    groups: dict[tuple[str, torch.dtype], list[torch.Tensor]] = {}
    for p in model.parameters():
        groups.setdefault(("parameters", p.dtype), []).append(p)
        if p.grad is not None:
            groups.setdefault(("gradients", p.grad.dtype), []).append(p.grad)
    if optimizer is not None:
        for state in optimizer.state.values():
            for key, value in state.items():
                if isinstance(value, torch.Tensor):
                    groups.setdefault((key, value.dtype), []).append(value)
    return {role: storage_bytes(tensors) for role, tensors in groups.items()}
