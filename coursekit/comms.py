"""Count the collectives a piece of code really issues, and the bytes each one moves.

Chapter 05c compares what DDP and FSDP send per training step (05b reads DDP's collectives
with it). Both issue their collectives through the c10d operators (``c10d.allreduce_``,
``c10d._allgather_base_``, ...) that every ``torch.distributed`` call dispatches to, DDP from
its C++ reducer, FSDP2 from Python, so a ``TorchDispatchMode`` sees each one whatever issued
it, on any backend. (The functional collectives of DTensor redistributions and compiled code
are other operators, not counted.)

Each call is kept with the size of the *whole* tensor it is about (the all-reduced tensor,
the all-gathered output, the reduce-scattered input), and ``ring_bytes_sent`` turns that
into what each rank sends under the ring algorithm.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch.utils._python_dispatch import TorchDispatchMode

# c10d operator -> (the collective it is, the argument holding the whole tensor)
KNOWN = {
    "allreduce_": ("all_reduce", 0),
    "allreduce_coalesced_": ("all_reduce", 0),
    "allgather_": ("all_gather", 0),
    "_allgather_base_": ("all_gather", 0),
    "allgather_coalesced_": ("all_gather", 0),
    "allgather_into_tensor_coalesced_": ("all_gather", 0),
    "reduce_scatter_": ("reduce_scatter", 1),
    "_reduce_scatter_base_": ("reduce_scatter", 1),
    "reduce_scatter_tensor_coalesced_": ("reduce_scatter", 1),
    "broadcast_": ("broadcast", 0),
}

# What one rank sends under the ring algorithm, in units of the whole tensor, for N ranks.
RING_FACTOR = {
    "all_reduce": lambda n: 2 * (n - 1) / n,  # a reduce-scatter, then an all-gather
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
}


@dataclass(frozen=True)
class Collective:
    """One collective call as this rank issued it."""

    kind: str  # "all_reduce", "all_gather", "reduce_scatter", "broadcast", or the c10d name
    dtype: torch.dtype
    nbytes: int  # the whole tensor: all-reduced, all-gathered (output), reduce-scattered (input)
    group_size: int

    def ring_bytes_sent(self) -> float:
        """Bytes this rank sends for this call under the ring algorithm."""
        if self.kind not in RING_FACTOR:
            raise ValueError(f"no ring model for {self.kind}: only for {', '.join(RING_FACTOR)}")
        return RING_FACTOR[self.kind](self.group_size) * self.nbytes


class CollectiveLog(TorchDispatchMode):
    """``with CollectiveLog() as log: ...`` keeps every c10d collective issued in the block,
    in order, in ``log.calls``."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[Collective] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        if func.namespace == "c10d":
            name = func._overloadpacket.__name__
            kind, whole = KNOWN.get(name, (name, 0))
            tensors = _tensors(args[whole])
            groups = [arg for arg in args if isinstance(arg, torch.ScriptObject)]  # the group comes first
            self.calls.append(
                Collective(
                    kind=kind,
                    dtype=tensors[0].dtype if tensors else torch.uint8,
                    nbytes=sum(t.numel() * t.element_size() for t in tensors),
                    group_size=dist.ProcessGroup.unbox(groups[0]).size() if groups else 1,
                )
            )
        return func(*args, **(kwargs or {}))

    def count(self, kind: str) -> int:
        """How many calls of ``kind`` ("all_gather", ...) the block issued."""
        return sum(call.kind == kind for call in self.calls)

    def ring_bytes_sent(self) -> float:
        """Bytes this rank sent in the block under the ring algorithm, all calls together."""
        return sum(call.ring_bytes_sent() for call in self.calls)


def _tensors(arg: Any) -> list[torch.Tensor]:
    """The tensors in an argument: a tensor, or (nested) lists of them."""
    if isinstance(arg, torch.Tensor):
        return [arg]
    if isinstance(arg, list | tuple):
        return [t for item in arg for t in _tensors(item)]
    return []
