"""Show grades: a table per submission for people, one JSON file for tools."""

from __future__ import annotations

import json
from pathlib import Path

from grader.host.files import write_atomic
from grader.host.results import SubmissionResult
from grader.host.roster import Roster
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
    each submission is)."""
    return {
        "submissions": [
            {
                "file": str(result.path),
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
            for result in results
        ],
        "summary": class_summary(results, sandboxed, roster),
    }


def write_json(
    results: list[SubmissionResult], path: Path, sandboxed: bool = True, roster: Roster | None = None
) -> None:
    write_atomic(Path(path), json.dumps(as_json(results, sandboxed, roster), indent=2, ensure_ascii=False) + "\n")
