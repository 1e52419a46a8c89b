"""How a failed check shows in the learner's notebook: the task and the check's message,
not the check's code.

A check ends in ``assert condition, message``. IPython would answer a failed one with a
traceback through the check cell's own code, a screen of the grader's helpers in which
the learner must find the one line meant for them. So, for an ``AssertionError`` raised
by a check cell's own code (or by library code it called, e.g. ``torch.testing``), the
cell's output is "Exercise 2.3 not passed: <message>". Whatever the learner's code raised
keeps IPython's full traceback: those lines are theirs to read. An assertion without a
message keeps it too (its line is all it says).

The verdict does not change: the kernel still replies with the error (its name and
message), which is what nbval and the grader read.
"""

from __future__ import annotations

import re
import traceback
from collections.abc import Callable
from types import TracebackType
from typing import Any

RED, RESET = "\x1b[0;31m", "\x1b[0m"
_NUMBER = re.compile(r"""_grading\.passed\(\s*["']([^"']+)["']""")


def task_number(check_source: str) -> str | None:
    """The task a check cell ends (``_grading.passed("2.3")``), or None for a hidden one."""
    found = _NUMBER.search(check_source)
    return found.group(1) if found else None


def _is_helper(name: str) -> bool:
    """A function the grader wrote: check helpers are private names (``_by_hand``)."""
    return name.startswith("_") and not name.endswith("__")


def raised_by_check(shell: Any, tb: TracebackType | None) -> bool:
    """Whether no code of the learner's ran between the check cell and the raise: the cell
    frames on the way are the running cell's own and the check helpers of earlier cells."""
    cells = [
        frame
        for frame in traceback.extract_tb(tb)
        if frame.filename.startswith("<") or shell.compile.format_code_name(frame.filename) is not None
    ]
    if not cells:
        return False
    running = cells[0].filename
    return all(frame.filename == running or _is_helper(frame.name) for frame in cells[1:])


def short_failure(number: str | None, message: str) -> list[str]:
    """The lines a failed check shows (IPython's structured traceback)."""
    what = f"Exercise {number} not passed" if number else "A check did not pass"
    return [f"{RED}{what}:{RESET} {message}"]


ShowFailure = Callable[[Any, type[BaseException], BaseException, TracebackType | None, int | None], None]


def handler(current_check: Callable[[], str | None]) -> ShowFailure:
    """IPython's handler for AssertionError (``shell.set_custom_exc``): ``current_check()``
    is the running cell's source when it is a check cell, else None."""

    def show(
        shell: Any,
        etype: type[BaseException],
        value: BaseException,
        tb: TracebackType | None,
        tb_offset: int | None = None,
    ) -> None:
        check = current_check()
        message = str(value)
        if check is not None and message.strip() and raised_by_check(shell, tb):
            shell._showtraceback(etype, value, short_failure(task_number(check), message))
        else:
            shell.showtraceback((etype, value, tb), tb_offset=tb_offset, running_compiled_code=True)

    return show


def for_storage(
    exception: BaseException, filename: str | None = None, running_compiled_code: bool = False
) -> dict[str, Any]:
    """What IPython 9 keeps of a cell's error for ``%notebook`` (``history_manager.exceptions``):
    its type and message, without the frames. IPython formats the whole traceback again to
    keep it, once more after showing it, and in a kernel that grades, where most checks of a
    wrong answer fail, that second formatting was about a sixth of the kernel's time."""
    return {
        "ename": type(exception).__name__,
        "evalue": str(exception),
        "traceback": traceback.format_exception_only(type(exception), exception),
    }
