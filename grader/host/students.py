"""The class as rows, one per student: their submissions (identity.py says whose each
is), the roster's students without one, and notes on anything to look at. The gradebook
and the feedback pages are written from these rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from grader.host.identity import owners
from grader.host.results import SubmissionResult
from grader.host.roster import Roster, Student

NOT_IN_ROSTER = "not in roster"


@dataclass
class Row:
    """One student's line of the gradebook: their submissions, and notes. ``notes`` are
    shown on the student's page too; ``instructor_notes`` only in the gradebook and on the
    terminal (how the roster matched: nothing the student can act on)."""

    student: Student
    results: list[SubmissionResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    instructor_notes: list[str] = field(default_factory=list)

    def counted(self) -> dict[str, SubmissionResult]:
        """Chapter -> the submission the gradebook counts (the last one given, where a
        student handed in the chapter twice)."""
        return {r.chapter: r for r in self.results if r.chapter is not None}


def class_rows(results: list[SubmissionResult], roster: Roster | None = None) -> list[Row]:
    """One row per student, sorted by id: every submission under its student (identity.py),
    the roster's students without one, and notes on anything the instructor should look at."""
    found = owners([result.path for result in results], roster)
    rows: dict[Student, Row] = {}
    if roster:
        for student in roster.students:
            rows[student] = Row(student)
    for result in results:
        student = found[result.path]
        row = rows.setdefault(student, Row(student))
        row.results.append(result)
        if roster and not student.listed:
            row.instructor_notes.append(f"{result.path.name}: {NOT_IN_ROSTER}")
    for row in rows.values():
        row.notes += _notes(row)
    return sorted(rows.values(), key=lambda row: (row.student.id.casefold(), row.student.id, row.student.listed))


def _notes(row: Row) -> list[str]:
    if not row.results:
        return ["no submission"]
    notes = []
    for result in row.results:
        if result.handed_in_chapter is not None:
            notes.append(
                f"{result.path.name}: wrong chapter: {result.handed_in_chapter}, not {result.expected_chapter}"
            )
        elif result.error is not None:
            first = result.error.splitlines()[0] if result.error.strip() else "error"
            notes.append(f"{result.path.name}: not graded: {first}")
        flagged = [task.number for task in result.tasks if task.reason == "flagged"]
        if flagged:
            notes.append(f"{result.path.name}: flagged (reaches into the checks): {', '.join(flagged)}")
    counted = row.counted()
    for chapter in sorted(counted):
        handed = [r.path.name for r in row.results if r.chapter == chapter]
        if len(handed) > 1:
            notes.append(
                f"{len(handed)} submissions for chapter {chapter} ({', '.join(handed)}): "
                f"counted {counted[chapter].path.name}"
            )
    return notes
