"""The gradebook: a CSV file an LMS imports, one row per student, one column per task.

Columns: ``student`` (the id: the roster's, else the submission's file stem), ``name``
(from the roster, else empty), one column per task headed with its number and points
(``9.1 (2 pts)``) holding the points earned, ``total (N pts)``, and ``notes`` (no
submission, not in the roster, not graded and why, flagged tasks, a chapter handed in
twice). UTF-8, comma-separated, students sorted by id. Tasks of every chapter graded in
the run are columns (in chapter order); a student without a submission for a chapter
gets 0 for its tasks.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from grader.files import write_atomic
from grader.results import SubmissionResult
from grader.roster import Row


def points(value: float) -> str:
    return f"{value:g}"


def header_points(value: float) -> str:
    return f"{points(value)} pt" if value == 1 else f"{points(value)} pts"


def columns(results: list[SubmissionResult]) -> list[tuple[str, str, float]]:
    """(chapter, task number, points) of every task graded, in chapter then task order."""
    found: dict[tuple[str, str], float] = {}
    for result in sorted(results, key=lambda r: r.chapter or ""):
        for task in result.tasks:
            if result.chapter is not None:
                found.setdefault((result.chapter, task.number), task.points)
    return [(chapter, number, value) for (chapter, number), value in found.items()]


def gradebook_rows(rows: list[Row]) -> list[list[str]]:
    """The gradebook as a table of text, header first."""
    tasks = columns([result for row in rows for result in row.results])
    total = sum(value for _, _, value in tasks)
    table = [
        ["student", "name"]
        + [f"{number} ({header_points(value)})" for _, number, value in tasks]
        + [f"total ({header_points(total)})", "notes"]
    ]
    for row in rows:
        counted = row.counted()
        scores = []
        for chapter, number, _ in tasks:
            result = counted.get(chapter)
            scores.append(sum(t.score for t in result.tasks if t.number == number) if result else 0.0)
        table.append(
            [_text(row.student.id), _text(row.student.name)]
            + [points(score) for score in scores]
            + [points(sum(scores)), _text("; ".join(row.notes))]
        )
    return table


def write_gradebook(rows: list[Row], path: Path) -> None:
    buffer = io.StringIO()
    csv.writer(buffer).writerows(gradebook_rows(rows))
    write_atomic(path, buffer.getvalue())


def _text(value: str) -> str:
    """A text cell a spreadsheet will not run: one that starts like a formula gets a leading
    apostrophe (file names and error messages come from learners)."""
    value = " ".join(value.split()) if "\n" in value or "\r" in value else value
    return "'" + value if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value
