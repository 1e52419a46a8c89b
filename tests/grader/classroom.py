"""A class graded by hand: results of the fixture chapter (tests/grader/fixtures), as the
grader would give them, for the tests of what the grader writes from them (pages, class
tables, gradebooks) without running a kernel."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from grader.host.results import SubmissionResult, TaskResult

POINTS = {"9.1": 2.0, "9.2": 3.0, "9.3": 1.0}
TASKS = list(POINTS.items())


def graded(path: str, passed: tuple[str, ...] = ("9.1", "9.2", "9.3"), code: str = "") -> SubmissionResult:
    """A graded fixture-chapter submission at ``path``: the tasks in ``passed`` passed, the
    others failed; each failed task's code is ``code`` (to find it on the pages)."""
    return SubmissionResult(
        Path(path),
        "90_fixture",
        [
            TaskResult(n, p, "passed" if n in passed else "check_failed", "ok" if n in passed else "wrong")
            for n, p in POINTS.items()
        ],
        answers={n: code for n in POINTS},
    )


def roster_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "roster.csv"
    path.write_text(text, encoding="utf-8")
    return path


def read_table(path: Path) -> list[list[str]]:
    return list(csv.reader(io.StringIO(path.read_text(encoding="utf-8-sig"))))
