"""Show grades: a table per submission for people, one JSON file for tools."""

from __future__ import annotations

import json
from pathlib import Path

from grader.host.errors import GraderError
from grader.host.files import write_atomic
from grader.host.results import SubmissionResult
from grader.host.roster import Roster, Student
from grader.host.students import class_rows
from grader.host.summary import class_summary


def _points(value: float) -> str:
    return f"{value:g}"


def table(result: SubmissionResult) -> str:
    """A plain-text table: task, points, passed/FAILED, the check's message."""
    if result.error:
        return f"{result.path}: ERROR\n  {result.error}\n"
    score = sum(task.score for task in result.tasks)
    total = sum(task.points for task in result.tasks)
    lines = [f"{result.path} (chapter {result.chapter}): {_points(score)}/{_points(total)} points"]
    rows = [("task", "points", "result", "message")] + [
        (
            task.number,
            f"{_points(task.score)}/{_points(task.points)}",
            "passed" if task.passed else "FAILED",
            task.message,
        )
        for task in result.tasks
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        first, *more = row[3].splitlines() or [""]
        # Not strict: only the first three columns are padded; the message comes after them.
        lead = "  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)) + "  "
        lines.append(lead + first)
        lines += [" " * len(lead) + line for line in more]
    return "\n".join(lines) + "\n"


def as_json(results: list[SubmissionResult], sandboxed: bool = True, roster: Roster | None = None) -> dict:
    """Everything the table shows, for a gradebook import, and the class summary
    (summary.py; ``sandboxed=False`` marks it unsandboxed; the ``roster`` tells it whose
    each submission is: ``student`` and ``name`` as in the gradebook, and ``counted``, whether
    this file is the one the gradebook counts for its student, so that a tool summing the
    entries counts a student who handed in twice once)."""
    whose, counted = _students(results, roster)
    return {
        "submissions": [
            {
                "file": str(result.path),
                "student": whose[n].id if n in whose else None,
                "name": whose[n].name if n in whose else None,
                "counted": n in counted,
                "chapter": result.chapter,
                "error": result.error,
                "handed_in_chapter": result.handed_in_chapter,  # another chapter's notebook, refused
                "score": sum(task.score for task in result.tasks),
                "max_score": sum(task.points for task in result.tasks),
                "notes": result.notes,
                "tasks": [
                    {
                        "task": t.number,
                        "points": t.points,
                        "score": t.score,
                        "passed": t.passed,
                        "reason": t.reason,
                        "message": t.message,
                    }
                    for t in result.tasks
                ],
            }
            for n, result in enumerate(results)
        ],
        "summary": class_summary(results, sandboxed, roster),
    }


def _students(results: list[SubmissionResult], roster: Roster | None) -> tuple[dict[int, Student], set[int]]:
    """Each result's student, by its place in ``results``, and the places of the results
    that count; none where the paths cannot tell the students apart (a report alone may be
    asked for such a class: every entry then has ``student`` null)."""
    try:
        rows = class_rows(results, roster)
    except GraderError:
        return {}, set()
    place = {id(result): n for n, result in enumerate(results)}
    whose = {place[id(result)]: row.student for row in rows for result in row.results}
    counted = {place[id(result)] for row in rows for result in row.counted().values()}
    return whose, counted


def write_json(
    results: list[SubmissionResult], path: Path, sandboxed: bool = True, roster: Roster | None = None
) -> None:
    write_atomic(Path(path), json.dumps(as_json(results, sandboxed, roster), indent=2, ensure_ascii=False) + "\n")
