"""Cells that need a GPU check for one themselves, and say in one line when they skip.

The course runs top to bottom on a CPU-only machine (CI has no GPU), so every CUDA-only
part (fp16 with GradScaler, NCCL, speed-ups) is guarded by ``has_cuda``. The skip line
is the same everywhere, so a reader learns it once and a test can look for it.
"""

from __future__ import annotations

import torch

SKIP_PREFIX = "no GPU: skipped"


def has_cuda(what: str) -> bool:
    """True when a CUDA GPU is usable; otherwise print "no GPU: skipped <what>" and say False.

    Use it as the guard of a GPU-only cell::

        if has_cuda("the fp16 run with GradScaler"):
            ...  # the CUDA code
    """
    if torch.cuda.is_available():
        return True
    print(f"{SKIP_PREFIX} {what}")
    return False
