"""What a recording costs the device, measured on a CPU: host reads and peak memory.

Shared by bench/bench_scale.py (the figures) and tests/vizlib/capture/test_scale.py (the
limits). On a GPU each read of a tensor's numbers waits for the device, so ``HostReads``
counts them; peak memory is malloc's live bytes (where torch keeps CPU tensors), read
after every op by ``PeakMemory``, since tracemalloc does not see torch's allocations.
"""

from __future__ import annotations

import ctypes
import gc
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

aten = torch.ops.aten


class HostReads(TorchDispatchMode):
    """Counts the ops that bring a tensor's numbers to the host: ``item``/``float()``/
    ``bool()`` (``_local_scalar_dense``), ``equal``, and copies from another device to
    the CPU. ``tolist`` reads without dispatching on a CPU tensor, so ``count_host_reads``
    wraps it too."""

    READS = {aten._local_scalar_dense.default, aten.equal.default, aten.is_nonzero.default}

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        if func in self.READS:
            self.count += 1
        elif func in (aten._to_copy.default, aten.copy_.default):
            src = args[1] if func is aten.copy_.default else args[0]
            if isinstance(src, torch.Tensor) and src.device.type != "cpu":
                # A cast without a device (``.to(torch.float64)``) stays where it is.
                dst = args[0].device if func is aten.copy_.default else kwargs.get("device") or src.device
                if torch.device(dst).type == "cpu":
                    self.count += 1
        return func(*args, **kwargs)


def count_host_reads(fn: Callable[[], object]) -> int:
    """How many times ``fn()`` read tensor values to the host."""
    reads = HostReads()
    own = torch.Tensor.__dict__.get("tolist")  # None: inherited from torch._C.TensorBase
    tolist = torch.Tensor.tolist

    def counted(self: torch.Tensor) -> object:
        reads.count += 1
        return tolist(self)

    torch.Tensor.tolist = counted  # type: ignore[method-assign, assignment]
    try:
        with reads:
            fn()
    finally:
        if own is None:
            del torch.Tensor.tolist
        else:
            torch.Tensor.tolist = own  # type: ignore[method-assign]
    return reads.count


class _Mallinfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks")
        + ("keepcost",)
    ]


_libc = ctypes.CDLL("libc.so.6")
_libc.mallinfo2.restype = _Mallinfo2


def malloc_live() -> int:
    """Bytes malloc has handed out and not had back (torch's CPU tensors live there)."""
    info = _libc.mallinfo2()
    return int(info.uordblks + info.hblkhd)


class PeakMemory(TorchDispatchMode):
    """The most bytes live after any op ran, above what was live at the start."""

    def __enter__(self) -> PeakMemory:
        gc.collect()
        self.start = self.peak = malloc_live()
        return super().__enter__()

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        out = func(*args, **(kwargs or {}))
        self.peak = max(self.peak, malloc_live())
        return out

    @property
    def extra(self) -> int:
        return self.peak - self.start
