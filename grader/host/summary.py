"""The class summary: how many passed each task, and the most common ways it failed.

Pass rates count students, not files: each student's counted submission for the task's
chapter (students.py: of a chapter handed in twice, the one with the most points), as the
gradebook does. ``submissions`` counts every file, ``students`` those who handed one in,
``graded`` and ``not_graded`` the files (one the grader could not read is not graded).
Failures are grouped by their exact message; the three most common are kept per task,
with their counts (ties: the first one met).
"""

from __future__ import annotations

from collections import Counter
from typing import TypedDict

from grader.host.errors import GraderError
from grader.host.results import Reason, SubmissionResult
from grader.host.roster import Roster
from grader.host.students import class_rows

TOP = 3  # failure messages kept per task
SHOWN = 100  # characters of a failure message the printed summary shows


class Failure(TypedDict):
    message: str
    reason: Reason
    count: int


class TaskSummary(TypedDict):
    chapter: str
    task: str
    points: float
    graded: int
    passed: int
    pass_rate: float  # passed / graded; 0.0 when nothing was graded
    failures: list[Failure]  # the most common first, at most TOP


class ClassSummary(TypedDict):
    sandboxed: bool
    submissions: int
    students: int
    graded: int
    not_graded: int
    tasks: list[TaskSummary]


def class_summary(
    results: list[SubmissionResult], sandboxed: bool = True, roster: Roster | None = None
) -> ClassSummary:
    """``sandboxed=False`` marks a run whose learner code ran outside the sandbox; the
    ``roster`` (if any) tells whose each submission is, as for the gradebook."""
    graded = [r for r in results if r.error is None and r.chapter is not None]
    counted, students = _counted(results, roster)
    tasks: dict[tuple[str, str], TaskSummary] = {}
    failures: dict[tuple[str, str], Counter[tuple[str, Reason]]] = {}
    for result in sorted(counted, key=lambda r: r.chapter or ""):
        assert result.chapter is not None
        for task in result.tasks:
            key = (result.chapter, task.number)
            entry = tasks.setdefault(
                key,
                TaskSummary(
                    chapter=result.chapter,
                    task=task.number,
                    points=task.points,
                    graded=0,
                    passed=0,
                    pass_rate=0.0,
                    failures=[],
                ),
            )
            entry["graded"] += 1
            if task.passed:
                entry["passed"] += 1
            else:
                failures.setdefault(key, Counter())[(task.message, task.reason)] += 1
    for key, entry in tasks.items():
        entry["pass_rate"] = entry["passed"] / entry["graded"] if entry["graded"] else 0.0
        entry["failures"] = [
            Failure(message=message, reason=reason, count=count)
            for (message, reason), count in failures.get(key, Counter()).most_common(TOP)
        ]
    return ClassSummary(
        sandboxed=sandboxed,
        submissions=len(results),
        students=students,
        graded=len(graded),
        not_graded=len(results) - len(graded),
        tasks=list(tasks.values()),
    )


def _counted(results: list[SubmissionResult], roster: Roster | None) -> tuple[list[SubmissionResult], int]:
    """The graded submissions that count, one per student and chapter, and how many
    students handed something in. Where the paths cannot tell the students apart (a run
    without gradebook or pages may grade such a class), each file is its own student."""
    try:
        rows = [row for row in class_rows(results, roster) if row.results]
    except GraderError:
        return [r for r in results if r.error is None and r.chapter is not None], len(results)
    counted = [r for row in rows for r in row.counted().values() if r.error is None]
    return counted, len(rows)


def summary_text(summary: ClassSummary) -> str:
    """The summary as printed after the tables."""
    students = summary["students"]
    lines = [
        f"Class summary: {summary['graded']} of {summary['submissions']} submissions graded"
        + (
            f", from {students} student{'' if students == 1 else 's'} (each one's counted submission)"
            if students != summary["submissions"]
            else ""
        )
        + ("" if summary["sandboxed"] else " (unsandboxed: learner code ran without the sandbox)")
    ]
    chapters = list(dict.fromkeys(task["chapter"] for task in summary["tasks"]))
    for chapter in chapters:
        lines.append(f"  chapter {chapter}")
        entries = [t for t in summary["tasks"] if t["chapter"] == chapter]
        cells = [(t["task"], f"{t['passed']}/{t['graded']} passed ({t['pass_rate']:.0%})") for t in entries]
        widths = [max(len(cell[i]) for cell in cells) for i in range(2)]
        for entry, (number, rate) in zip(entries, cells, strict=True):
            lead = f"    {number.ljust(widths[0])}  {rate.ljust(widths[1])}  "
            shown = [f"{f['count']}x {_short(f['message'])}" for f in entry["failures"]]
            lines.append((lead + (shown[0] if shown else "")).rstrip())
            lines += [" " * len(lead) + line for line in shown[1:]]
    return "\n".join(lines) + "\n"


def _short(message: str) -> str:
    first = message.strip().splitlines()[0] if message.strip() else "(no message)"
    return first if len(first) <= SHOWN else first[: SHOWN - 1] + "…"
