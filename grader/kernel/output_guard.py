"""Installed in the grading kernel before any learner code: caps what one cell may
print and discards stderr.

Why in the kernel: nbval keeps every output message in memory, so a solution printing
in a loop would otherwise exhaust the grader; cut off at the source, the cell fails with
a clear ``OutputLimitExceeded`` instead. stderr is discarded because warnings never cost
a point (nbval would compare them), and the grader removes stderr from the reference
outputs to match.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Protocol, cast

LIMIT = 1_000_000  # characters per cell; a printed tensor is a few thousand


class OutputLimitExceeded(Exception):
    """A cell printed or displayed more than the grader keeps."""


class _Stream(Protocol):
    """sys.stdout and sys.stderr in a kernel: ipykernel's OutStream objects, whose
    ``write`` can be replaced on the instance (typeshed's TextIO has it as a method)."""

    write: Callable[[str], int]


def install(limit: int = LIMIT) -> None:
    """Wrap the kernel's stdout, display publisher and displayhook for the session."""
    from IPython import get_ipython

    shell = get_ipython()
    used = 0

    def spend(amount: int) -> bool:
        """Count output; past the limit, raise in the cell's own thread (the error then
        fails the cell) and drop silently elsewhere (ipykernel's fd-capture thread)."""
        nonlocal used
        used += amount
        if used <= limit:
            return True
        if threading.current_thread() is threading.main_thread():
            raise OutputLimitExceeded(
                f"this cell printed more than {limit:,} characters; print a summary (a shape, a few values) instead"
            )
        return False

    def reset(*_args: object) -> None:
        nonlocal used
        used = 0

    def wrap_streams(*_args: object) -> None:
        """Runs as each cell starts. IPython re-wraps the streams' ``write`` for every
        cell (to record history) and restores it afterwards, so the cap is put on top
        of that each time rather than once."""
        reset()
        stdout, stderr = cast(_Stream, sys.stdout), cast(_Stream, sys.stderr)
        write = stdout.write
        stdout.write = lambda text: write(text) if spend(len(text)) else len(text)
        stderr.write = lambda text: len(text)

    publish = shell.display_pub.publish

    def capped_publish(data: dict, *args: object, **kwargs: object) -> None:
        if spend(sum(len(str(value)) for value in data.values())):
            publish(data, *args, **kwargs)

    shell.display_pub.publish = capped_publish
    write_result = shell.displayhook.write_format_data

    def capped_result(format_dict: dict, *args: object, **kwargs: object) -> None:
        spend(sum(len(str(value)) for value in format_dict.values()))
        write_result(format_dict, *args, **kwargs)

    shell.displayhook.write_format_data = capped_result
    shell.events.register("pre_run_cell", wrap_streams)
