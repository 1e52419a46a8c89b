"""Who handed in what: submissions grouped by student, for the gradebook and feedback files.

Without a roster, a student is the stem of their submission's file name (``alice.ipynb``
is student ``alice``). A roster is a CSV file (UTF-8, a header row) with the columns

- ``file``: the submission's file name, with or without ``.ipynb`` (``alice.ipynb``,
  ``alice``), or its path as given on the command line (``class/alice.ipynb``);
- ``id``: the student's id, as the LMS knows it (the gradebook's first column);
- ``name``: optional, the student's name.

Other columns are ignored. A student may have several rows (one per chapter's file). A
submission the roster does not name is graded under its stem and flagged "not in
roster"; a roster student without a submission gets a row of zeros, "no submission".
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

from grader.errors import GraderError
from grader.results import SubmissionResult

SUFFIX = ".ipynb"
COLUMNS = ("file", "id", "name")


@dataclass(frozen=True)
class Student:
    id: str
    name: str = ""


@dataclass
class Roster:
    files: dict[str, Student]  # the roster's ``file`` value -> its student

    @property
    def students(self) -> list[Student]:
        return list(dict.fromkeys(self.files.values()))

    def find(self, path: Path) -> Student | None:
        """The student a submission belongs to: by its path as given, its name, its stem."""
        for key in (path.as_posix(), path.name, path.stem):
            if key in self.files:
                return self.files[key]
        return None


@dataclass
class Row:
    """One student's line of the gradebook: their submissions, and what to tell the instructor."""

    student: Student
    results: list[SubmissionResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def counted(self) -> dict[str, SubmissionResult]:
        """Chapter -> the submission the gradebook counts (the last one given, where a
        student handed in one chapter twice)."""
        return {r.chapter: r for r in self.results if r.chapter is not None}


def read_roster(path: Path) -> Roster:
    """Read a roster CSV; GraderError says what is wrong with it."""
    path = Path(path)
    try:
        # utf-8-sig: spreadsheets often write a byte order mark.
        with path.open(encoding="utf-8-sig", newline="") as text:
            reader = csv.DictReader(text)
            header = [name.strip().lower() for name in reader.fieldnames or []]
            rows = [
                {key.strip().lower(): (value or "").strip() for key, value in row.items() if isinstance(key, str)}
                for row in reader
            ]
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise GraderError(f"roster {path}: cannot read it as a UTF-8 CSV file ({error}).") from None
    missing = [name for name in ("file", "id") if name not in header]
    if missing:
        raise GraderError(
            f"roster {path}: no column {' or '.join(map(repr, missing))}. The first row must name the "
            f"columns {', '.join(COLUMNS)} (name is optional)."
        )
    entries: list[tuple[int, str, str]] = []
    names: dict[str, str] = {}  # id -> the first name the roster gives the student
    for line, row in enumerate(rows, start=2):
        if not any(row.values()):
            continue  # a blank line
        file, student_id = row.get("file", ""), row.get("id", "")
        if not file or not student_id:
            raise GraderError(f"roster {path}, line {line}: both file and id are needed.")
        entries.append((line, file, student_id))
        if row.get("name") and student_id not in names:
            names[student_id] = row["name"]
    files: dict[str, Student] = {}
    for line, file, student_id in entries:
        for key in _keys(file):
            if key in files and files[key].id != student_id:
                raise GraderError(
                    f"roster {path}, line {line}: file {file!r} is already given to student {files[key].id!r}."
                )
            files[key] = Student(student_id, names.get(student_id, ""))
    if not files:
        raise GraderError(f"roster {path}: no students in it.")
    return Roster(files)


def _keys(file: str) -> list[str]:
    """How a roster's file value can name a submission: as written, and without .ipynb."""
    file = file.replace("\\", "/")
    return [file, file.removesuffix(SUFFIX)] if file.endswith(SUFFIX) else [file]


def class_rows(results: list[SubmissionResult], roster: Roster | None = None) -> list[Row]:
    """One row per student, sorted by id: every submission under its student, the roster's
    students without one, and notes on anything the instructor should look at."""
    rows: dict[str, Row] = {}
    if roster:
        for student in roster.students:
            rows[student.id] = Row(student)
    for result in results:
        found = roster.find(result.path) if roster else None
        student = found or Student(result.path.stem)
        note = f"{result.path.name}: not in roster" if roster and found is None else None
        row = rows.setdefault(student.id, Row(student))
        row.results.append(result)
        if note:
            row.notes.append(note)
    for row in rows.values():
        row.notes += _notes(row)
    return sorted(rows.values(), key=lambda row: (row.student.id.casefold(), row.student.id))


def _notes(row: Row) -> list[str]:
    if not row.results:
        return ["no submission"]
    notes = []
    for result in row.results:
        if result.error is not None:
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
