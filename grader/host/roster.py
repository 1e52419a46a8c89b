"""The roster: who the students are, and which submission is whose.

Without a roster, a student is named by their submission's path (identity.py: the file
stem, or the student's folder where file names repeat). A roster is a CSV file (UTF-8,
commas, a header row) with one line per student and the columns

- ``file``: the submission's file name, with or without ``.ipynb`` (``alice.ipynb``,
  ``alice``), its path or the end of its path (``class/alice.ipynb``,
  ``alice/02_autograd.ipynb``), or the student's folder (``alice``);
- ``id``: the student's id, as the LMS knows it (the gradebook's first column);
- ``name`` (or ``student``, as Canvas's export calls it): optional, the student's name.

Other columns are kept for the LMS gradebooks (lms.py: Canvas's SIS columns, an email
for Moodle). An id or a file on two lines is refused: one of them is a typo that would
give one student's grade to another. A submission the roster does not name is graded
under its path's name and flagged "not in roster" in the gradebook (never on the
student's own page); a roster student without a submission (an empty ``file``, or one
that names no submission) gets a row of zeros, "no submission".

File values match whatever their letter case and Unicode form (``fold``): macOS writes
file names decomposed (NFD) where a roster typed elsewhere is composed (NFC), and a
Windows or macOS disk keeps ``Alice.ipynb`` and ``alice.ipynb`` as one file.

A Canvas gradebook export with a ``file`` column added is a roster as it is: its
"Points Possible" line and Canvas's Test Student (``Student, Test``, without a file) are
left out, and ``Roster.skipped`` says so for the log.
"""

from __future__ import annotations

import codecs
import csv
import io
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from grader.host.errors import GraderError

SUFFIX = ".ipynb"
COLUMNS = ("file", "id", "name")
CANVAS_POINTS = "points possible"  # the line under the header of a Canvas gradebook export
CANVAS_TEST_STUDENTS = ("student, test", "test student")  # Canvas's student view, in every course
# Under the header of a Canvas export where an assignment posts its grades manually: no
# student, only this under such assignments (Canvas never translates it)
CANVAS_MANUAL_POSTING = "manual posting"


def fold(text: str) -> str:
    """``text`` as names are compared: composed (NFC) and case-folded, so that a name
    typed on one system matches the same name as another system's disk writes it."""
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", text).casefold())


@dataclass(frozen=True)
class Student:
    id: str
    name: str = ""
    listed: bool = True  # on the roster (or no roster was given)
    columns: tuple[tuple[str, str], ...] = ()  # the roster line: (header as written, value)

    def column(self, header: str) -> str | None:
        """The value of one of the roster's columns (header case-insensitive), None if absent."""
        for name, value in self.columns:
            if name.strip().casefold() == header.strip().casefold():
                return value
        return None


@dataclass(frozen=True)
class Entry:
    """One roster line: the file value as written, and its student."""

    line: int
    file: str
    student: Student

    @property
    def keys(self) -> list[str]:
        """How the file value can name a submission, folded (``fold``): as written (``/``
        separators), and without ``.ipynb``; none for a student without a file."""
        file = fold(self.file.replace("\\", "/").strip("/"))
        if not file:
            return []
        return [file, file.removesuffix(SUFFIX)] if file.endswith(SUFFIX) else [file]


@dataclass
class Roster:
    entries: list[Entry]
    path: Path = Path("roster.csv")
    headers: tuple[str, ...] = ()  # the columns as the header row writes them
    skipped: list[str] = field(default_factory=list)  # lines left out, and why (for the log)

    @property
    def students(self) -> list[Student]:
        return [entry.student for entry in self.entries]


def read_roster(path: Path) -> Roster:
    """Read a roster CSV; GraderError says what is wrong with it and how to fix it."""
    path = Path(path)
    first, lines = _read_csv(path)
    header = [name.strip() for name in lines[0]] if lines else []
    keys = [name.casefold() for name in header]
    _refuse_other_separators(path, first)
    if "name" not in keys and "student" in keys:  # Canvas's export names the column Student
        keys[keys.index("student")] = "name"
    missing = [name for name in ("file", "id") if name not in keys]
    if missing:
        raise GraderError(
            f"roster {path}: no column {' or '.join(map(repr, missing))}. The first row must name the "
            f"columns {', '.join(COLUMNS)} (name is optional), separated by commas."
        )
    entries, skipped = _entries(path, header, keys, lines)
    if not entries:
        raise GraderError(f"roster {path}: no students in it.")
    _refuse_duplicates(path, entries)
    return Roster(entries, path, tuple(header), skipped)


def _read_csv(path: Path) -> tuple[str, list[list[str]]]:
    """The file's first line as written (to tell its separator) and its CSV rows; a file
    that cannot be read is an error that says what a roster must be."""
    try:
        data = path.read_bytes()
        # utf-8-sig: spreadsheets often write a byte order mark.
        text = data.decode("utf-8-sig")
        return text.splitlines(keepends=True)[0] if text else "", list(csv.reader(io.StringIO(text, newline="")))
    except UnicodeDecodeError as error:
        raise GraderError(_not_utf8(path, data, error)) from None
    except (OSError, csv.Error) as error:
        raise GraderError(f"roster {path}: cannot read it as a UTF-8 CSV file ({error}).") from None


def _not_utf8(path: Path, data: bytes, error: UnicodeDecodeError) -> str:
    """What to do with a roster a spreadsheet saved in its own encoding (Excel's "CSV
    (Comma delimited)" writes the system's code page, e.g. Windows-1252; its "Unicode
    Text" writes UTF-16 with tabs): names and files would be misread if it were guessed."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        what = 'it is saved as UTF-16 (Excel\'s "Unicode Text")'
    else:
        # (utf-8-sig counts the error's position after the byte order mark it skipped)
        at = error.start + (len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0)
        line = data[:at].count(b"\n") + 1
        what = f"line {line} is not UTF-8 text (byte {data[at]:#04x}: a legacy encoding such as Windows-1252)"
    return (
        f"roster {path}: {what}, and the grader reads rosters as UTF-8 only, since a guessed encoding "
        "would misspell names and miss files. Save it again as CSV UTF-8 (Excel: Save As, CSV UTF-8 (Comma "
        "delimited); LibreOffice: Save As, Text CSV, character set Unicode (UTF-8), field delimiter ',')."
    )


def _refuse_other_separators(path: Path, first: str) -> None:
    """A spreadsheet set to a decimal comma saves 'CSV' with semicolons or tabs: read as
    commas that is one column, which would only be reported as a missing column."""
    if "," in first:
        return
    for separator, called in ((";", "';'"), ("\t", "tabs")):
        if separator in first:
            raise GraderError(
                f"roster {path}: its columns are separated by {called}, not commas (spreadsheets set "
                "to a decimal comma save CSV so). Save it again as CSV with commas as the field "
                "delimiter (LibreOffice: Save As, Text CSV, field delimiter ','; Excel: CSV UTF-8)."
            )


def _entries(path: Path, header: list[str], keys: list[str], lines: list[list[str]]) -> tuple[list[Entry], list[str]]:
    """One entry per student line, keeping every column as written for the LMS gradebooks,
    and what was left out: blank lines, and a Canvas export's lines that are not students
    (``_canvas_extra``). A line without an id is refused (the gradebook could not name its
    student); one without a file is a student who handed nothing in."""
    entries: list[Entry] = []
    skipped: list[str] = []
    for line, values in enumerate(lines[1:], start=2):
        if not any(value.strip() for value in values):
            continue  # a blank line
        row = {key: value.strip() for key, value in zip(keys, values, strict=False)}
        if why := _canvas_extra(row):
            skipped.append(f"roster {path}, line {line}: left out {row.get('name', '')!r}: {why}")
            continue
        if not row.get("id", ""):
            raise GraderError(
                f"roster {path}, line {line}: no id. Give every student the id the LMS knows them by "
                "(a student who handed nothing in needs only the id, with the file left empty)."
            )
        columns = tuple((name, value.strip()) for name, value in zip(header, values, strict=False))
        student = Student(row["id"], row.get("name", ""), True, columns)
        entries.append(Entry(line, row.get("file", ""), student))
    return entries, skipped


def _canvas_extra(row: dict[str, str]) -> str | None:
    """Why a line of a Canvas gradebook export is no student to grade, or None: the
    "Points Possible" line under the header, the "Manual Posting" line above it (in a
    course with an assignment whose grades are posted by hand: no name, no id, no file),
    and the Test Student Canvas adds to every course (unless the instructor gave it a file
    to grade)."""
    name, file = fold(row.get("name", "").strip()), row.get("file", "")
    if name == CANVAS_POINTS and not row.get("id"):
        return "the points possible of a Canvas export, not a student"
    if not (name or file or row.get("id")) and any(fold(v).startswith(CANVAS_MANUAL_POSTING) for v in row.values()):
        return "the posting policies of a Canvas export (Manual Posting), not a student"
    if name in CANVAS_TEST_STUDENTS and not file:
        return "Canvas's test student, with no file"
    return None


def _refuse_duplicates(path: Path, entries: list[Entry]) -> None:
    """One line per student, one student per file: a repeated id or file (in any letter
    case or Unicode form) is a typo that would give one student's grade (and code) to another."""
    ids: dict[str, Entry] = {}
    files: dict[str, Entry] = {}
    for entry in entries:
        for key in entry.keys:
            first = files.setdefault(key, entry)
            if first is not entry:
                raise GraderError(
                    f"roster {path}, line {entry.line}: file {entry.file!r} is already on line {first.line} "
                    f"(student {first.student.id!r}). Each file belongs to one student: correct one of the lines."
                )
        first = ids.setdefault(entry.student.id, entry)
        if first is not entry:
            raise GraderError(
                f"roster {path}: id {entry.student.id!r} is on lines {first.line} and {entry.line} "
                f"(files {first.file!r} and {entry.file!r}). Each student has one line: correct the id on one of them."
            )
