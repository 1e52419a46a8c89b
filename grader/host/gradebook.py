"""The gradebook: a CSV file, one row per student, for a spreadsheet or an LMS.

One class, one chapter: the tasks are the chapter's, and results of another chapter are
refused rather than mixed into one total. The plain format (``--gradebook-format csv``)
has the columns ``student`` (the id: the roster's, else the name identity.py gives),
``name`` (from the roster, else empty), one column per task headed with its number and
points (``9.1 (2 pts)``) holding the points earned, ``total (N pts)``, and ``notes`` (no
submission, not in the roster, wrong chapter, not graded and why, flagged tasks, a
chapter handed in twice). Students sorted by id. The LMS formats (``canvas``,
``moodle``) are in lms.py; they write this one next to theirs for the tasks
(``tasks_path``).

UTF-8 with a byte order mark: Excel on Windows reads a CSV without one in the system's
code page and garbles accented names; Canvas and Moodle skip the mark.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from grader.host.errors import GraderError
from grader.host.files import write_atomic
from grader.host.results import SubmissionResult
from grader.host.students import Row

BOM = "\ufeff"
FORMATS = ("csv", "canvas", "moodle")


def points(value: float) -> str:
    return f"{value:g}"


def header_points(value: float) -> str:
    return f"{points(value)} pt" if value == 1 else f"{points(value)} pts"


def chapter_tasks(results: list[SubmissionResult]) -> list[tuple[str, float]]:
    """(task number, points) of the graded chapter's tasks, from its results; GraderError
    when they are of several chapters."""
    chapters = sorted({result.chapter for result in results if result.chapter is not None})
    if len(chapters) > 1:
        raise GraderError(
            f"a gradebook holds one chapter, and these results are of {', '.join(chapters)}: grade each "
            "chapter's class on its own."
        )
    found: dict[str, float] = {}
    for result in results:
        for task in result.tasks:
            found.setdefault(task.number, task.points)
    return list(found.items())


def scores(row: Row, tasks: list[tuple[str, float]]) -> list[float]:
    """The points a student earned for each task (0 for a task they did not hand in)."""
    counted = list(row.counted().values())
    result = counted[-1] if counted else None
    return [sum(t.score for t in result.tasks if t.number == number) if result else 0.0 for number, _ in tasks]


def gradebook_rows(rows: list[Row], tasks: list[tuple[str, float]] | None = None) -> list[list[str]]:
    """The plain gradebook as a table of text, header first; ``tasks`` (number, points) are
    the class chapter's (default: those of the results)."""
    found = chapter_tasks([result for row in rows for result in row.results])
    tasks = found if tasks is None else tasks
    total = sum(value for _, value in tasks)
    table = [
        ["student", "name"]
        + [f"{number} ({header_points(value)})" for number, value in tasks]
        + [f"total ({header_points(total)})", "notes"]
    ]
    for row in rows:
        earned = scores(row, tasks)
        table.append(
            [text(row.student.id), text(row.student.name)]
            + [points(score) for score in earned]
            + [points(sum(earned)), text("; ".join(row.instructor_notes + row.notes))]
        )
    return table


def write_gradebook(rows: list[Row], path: Path, tasks: list[tuple[str, float]] | None = None) -> None:
    """Write the plain gradebook (``tasks``: see gradebook_rows)."""
    write_csv(gradebook_rows(rows, tasks), path)


def tasks_path(path: Path) -> Path:
    """Where an LMS gradebook's task detail goes: ``grades.csv`` -> ``grades-tasks.csv``."""
    return path.with_name(f"{path.stem}-tasks{path.suffix or '.csv'}")


def write_csv(table: list[list[str]], path: Path) -> None:
    buffer = io.StringIO()
    csv.writer(buffer).writerows(table)
    write_atomic(path, BOM + buffer.getvalue())


def text(value: str) -> str:
    """A text cell a spreadsheet will not run: one that starts like a formula gets a leading
    apostrophe (file names and error messages come from learners)."""
    value = " ".join(value.split()) if "\n" in value or "\r" in value else value
    return "'" + value if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value
