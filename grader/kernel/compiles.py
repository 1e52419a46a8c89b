"""Dynamo's guard-latency probe, left out while a check cell runs.

Each time ``torch.compile`` finishes a graph, Dynamo times the graph's new guards once,
after writing 32 MB to evict the CPU's caches, only to log the figure (its compile metric
``guard_latency_us``). A check compiles the learner's function many times over on tiny
inputs, and on a small machine that probe is most of each compile: chapter 06's check of
6.1 ran in 1.7 s with it and 0.7 s without. Nothing a compile builds, guards or returns
depends on it. The learner's own cells compile as torch does, probe included, so the
compile times a chapter shows are the learner's to expect.
"""

from __future__ import annotations

import sys
from typing import Any

# Dynamo's own probe, while ours stands in for it.
_probe: Any = None


def _untimed(*args: object, **kwargs: object) -> float:
    return 0.0


def leave_out() -> None:
    """No probe until ``put_back`` (where Dynamo is loaded and this PyTorch has the probe)."""
    global _probe
    guards = sys.modules.get("torch._dynamo.guards")
    probe = getattr(guards, "profile_guard_manager", None)
    if probe is None or probe is _untimed:
        return
    _probe = probe
    guards.profile_guard_manager = _untimed  # type: ignore[union-attr]


def put_back() -> None:
    """Dynamo's probe back, where ``leave_out`` took it out."""
    guards = sys.modules.get("torch._dynamo.guards")
    if guards is not None and _probe is not None and getattr(guards, "profile_guard_manager", None) is _untimed:
        guards.profile_guard_manager = _probe  # type: ignore[attr-defined]
