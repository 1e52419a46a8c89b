"""The Watches recording now in this process (watch.py adds and removes them): threads.py
records other threads' work into them, containment.py refuses processes while there are any.
``Recording`` is what those two use of a Watch. And whether a check cell runs now (the
session sets ``CHECK``), with what containment saw the notebook's code do meanwhile."""

from __future__ import annotations

import types
from typing import Any, Protocol

from torch.utils._python_dispatch import TorchDispatchMode


class Recording(Protocol):
    _active: bool
    refuse: bool
    quiet: bool
    escaped: list[str]
    tampered: str | None
    unrecorded: str | None
    namespace: dict[str, Any]

    def recorder(self) -> TorchDispatchMode: ...

    def _on_event(self, frame: types.FrameType, event: str, arg: Any) -> None: ...


WATCHING: list[Recording] = []

# [True] while a check or hidden cell runs (session.py), and what the notebook's code did
# meanwhile that the check must fail for (containment.py: a frame taken, which reaches the
# check's own variables).
CHECK: list[bool] = [False]
DURING_CHECK: list[str] = []
