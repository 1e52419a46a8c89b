"""The class as rows, one per student: their submissions (identity.py says whose each
is), the roster's students without one, and notes on anything to look at. The gradebook,
the feedback pages and the class summary are written from these rows.

A student who hands in a chapter more than once is graded on each file, and the one with
the most points counts (ties: the last by path, as an LMS names later attempts:
``attempt_2024-03-02`` after ``attempt_2024-03-01``, ``hw-1.ipynb`` after ``hw.ipynb``).
The order the files were given in (a shell's glob follows the locale) and their dates
(which copying and unzipping change) play no part, so grading again gives the same
grade; the note on the student's row and page names every file, its points, and the one
counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from grader.host.identity import owners
from grader.host.results import SubmissionResult
from grader.host.roster import Roster, Student, fold

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
        """Chapter -> the submission the gradebook counts: of a chapter handed in more than
        once, the one with the most points, ties to the last by path (see the module's
        docstring: never the order the files were given in)."""
        best: dict[str, SubmissionResult] = {}
        for result in sorted(self.results, key=_by_name):
            if result.chapter is None:
                continue
            if result.chapter not in best or _rank(result) >= _rank(best[result.chapter]):
                best[result.chapter] = result
        return best

    def label(self, result: SubmissionResult) -> str:
        """How the student's file is named in their notes and on their page: its name, or
        the end of its path where another of their files has that name (a repository's
        ``90_fixture.ipynb`` and ``exercises/90_fixture.ipynb``)."""
        return file_label(result.path, [other.path for other in self.results])


def file_label(path: Path, others: list[Path]) -> str:
    """The shortest end of ``path`` that none of ``others`` (but itself) ends with."""
    parts = path.parts
    for length in range(1, len(parts)):
        if not any(other != path and other.parts[-length:] == parts[-length:] for other in others):
            return "/".join(parts[-length:])
    return path.as_posix()


def _rank(result: SubmissionResult) -> tuple[float, bool]:
    """How a submission compares with the student's others: its points, then, of equal
    points, a graded one before one the grader could not finish."""
    return result.score, result.error is None


def _by_name(result: SubmissionResult) -> tuple[str, str]:
    """A submission's place in name order, the same on every system and locale."""
    return fold(result.path.as_posix()), result.path.as_posix()


def class_rows(results: list[SubmissionResult], roster: Roster | None = None) -> list[Row]:
    """One row per student, sorted by id: every submission under its student (identity.py),
    the roster's students without one, and notes on anything the instructor should look at."""
    # The chapters the files are: a file named after one names no student (identity.py).
    chapters = {c for r in results for c in (r.chapter, r.expected_chapter, r.handed_in_chapter) if c}
    found = owners([result.path for result in results], roster, chapters)
    rows: dict[Student, Row] = {}
    if roster:
        for student in roster.students:
            rows[student] = Row(student)
    for result in results:
        student = found[result.path]
        row = rows.setdefault(student, Row(student))
        row.results.append(result)
        if roster and not student.listed:
            row.instructor_notes.append(f"{row.label(result)}: {NOT_IN_ROSTER}")
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
                f"{row.label(result)}: wrong chapter: {result.handed_in_chapter}, not {result.expected_chapter}"
            )
        elif result.error is not None:
            first = result.error.splitlines()[0] if result.error.strip() else "error"
            notes.append(f"{row.label(result)}: not graded: {first}")
        flagged = [task.number for task in result.tasks if task.reason == "flagged"]
        if flagged:
            notes.append(f"{row.label(result)}: flagged (reaches into the checks): {', '.join(flagged)}")
    return notes + _handed_twice(row)


def _handed_twice(row: Row) -> list[str]:
    """For each chapter handed in more than once: every file with its points, and which
    counted and why (the student sees it on their page, so they know which work was graded)."""
    notes = []
    counted = row.counted()
    for chapter in sorted(counted):
        handed = sorted((r for r in row.results if r.chapter == chapter), key=lambda r: (_by_name(r), r.score))
        if len(handed) > 1:
            scored = ", ".join(f"{row.label(r)} {_points(r.score)}/{_points(r.max_score)}" for r in handed)
            notes.append(
                f"{len(handed)} submissions for chapter {chapter} ({scored}): counted {row.label(counted[chapter])} "
                "(the most points; of equal points, the last by name)"
            )
    return notes


def _points(value: float) -> str:
    return f"{value:g}"
