"""What a grading run leaves for the instructor besides the tables: the JSON report (with
the class summary), the gradebook and the feedback pages.

``Outputs.prepare`` runs before grading, so that a bad roster, two students who cannot be
told apart, or an output path that cannot be written (or would overwrite a submission)
stops the run before minutes of grading, not after. ``Outputs.write`` runs once grading
has ended and writes every part it can: one that fails (a disk gone full) costs neither
of the others, and the error names it. Every file is written atomically (files.py), and
never over a submission; a gradebook whose rows this run changes or leaves out, or a report
of students this run did not grade (one student graded again with the class's command line)
is kept as ``grades.earlier.csv`` beside the new one (``_keeping_earlier``), and the
feedback pages of such students are left as they were and named (feedback.py).
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path

from grader.host.errors import GraderError
from grader.host.feedback import earlier_pages, other_classes_pages, write_feedback
from grader.host.files import InUse, real_path
from grader.host.gradebook import tasks_path, write_gradebook
from grader.host.identity import owners
from grader.host.lms import write_lms_gradebook
from grader.host.report import write_json
from grader.host.results import SubmissionResult
from grader.host.roster import Roster, Student, read_roster
from grader.host.students import NOT_IN_ROSTER, Row, class_rows

FEEDBACK_FOLDER = "feedback"  # where a bare --feedback writes: next to the report


@dataclass
class Outputs:
    report: Path | None = None
    feedback: Path | None = None
    gradebook: Path | None = None
    roster: Roster | None = None
    form: str = "csv"  # the gradebook's format (gradebook.FORMATS)
    assignment: str | None = None
    id_column: str | None = None

    @classmethod
    def prepare(
        cls,
        submissions: list[Path],
        report: Path | None = None,
        feedback: Path | bool | None = None,
        gradebook: Path | None = None,
        roster: Path | None = None,
        form: str = "csv",
        assignment: str | None = None,
        id_column: str | None = None,
        chapters: Collection[str] = (),
    ) -> Outputs:
        """Check the paths, read the roster, and tell the students apart (``chapters``: the
        course's, whose names name no student, as when the class's rows are made);
        ``feedback=True`` means the default folder, ``feedback/`` next to the report (or in
        the current folder without one)."""
        if feedback is True:
            feedback = (report.parent if report else Path()) / FEEDBACK_FOLDER
        folder = feedback if isinstance(feedback, Path) else None
        _refuse_clashes(submissions, report, gradebook, folder, form)
        _check_targets(report, gradebook, folder, form)
        students = read_roster(roster) if roster is not None else None
        for note in students.skipped if students is not None else []:
            print(f"note: {note}", file=sys.stderr)
        if form != "csv":
            _check_lms(form, students, id_column)
        if gradebook is not None or folder is not None or students is not None:
            found = owners(submissions, students, chapters)  # refuses two students it cannot tell apart
            if folder is not None:
                _refuse_other_classes_pages(folder, found)
        return cls(report, folder, gradebook, students, form, assignment, id_column)

    def write(
        self, results: list[SubmissionResult], tasks: list[tuple[str, float]] | None = None, sandboxed: bool = True
    ) -> None:
        """Write every file asked for, each on its own; notes for the instructor go to
        stderr. ``tasks`` (number, points) are the class chapter's; ``sandboxed=False``
        marks the report, summary and feedback pages unsandboxed. GraderError at the end
        names every part that could not be written."""
        # Students matter only to the gradebook, the pages and the roster's warnings
        # (prepare has told them apart); a report alone is per submission.
        wanted = self.gradebook is not None or self.feedback is not None or self.roster is not None
        rows = class_rows(results, self.roster) if wanted else []
        _warn_wrong_chapters(results)
        if self.roster is not None:
            _warn_roster(rows)
        gradebooks = [self.gradebook] if self.gradebook else []
        if self.gradebook and self.form != "csv":
            gradebooks.append(tasks_path(self.gradebook))  # an LMS gradebook's tasks, beside it
        parts: list[tuple[str, Path | None, Callable[[], None]]] = [
            (
                "--report",
                self.report,
                lambda: _keeping_earlier(
                    [self.report] if self.report else [],
                    lambda: write_json(results, self.report, sandboxed, self.roster) if self.report else None,
                    _report_students,
                    "not graded in this run",
                ),
            ),
            (
                "--gradebook",
                self.gradebook,
                lambda: _keeping_earlier(
                    gradebooks,
                    lambda: self._write_gradebook(rows, tasks),
                    _gradebook_rows,
                    "whose rows this run changed or left out",
                ),
            ),
            ("--feedback", self.feedback, lambda: self._write_feedback(rows, tasks, sandboxed)),
        ]
        failed = []
        for option, path, write in parts:
            if path is None:
                continue
            try:
                write()
            except OSError as error:
                failed.append(f"{option} {path}: cannot write it ({error.strerror or error}){_kept(error, path)}")
        if failed:
            raise GraderError("; ".join(failed) + ". Everything else asked for was written.")

    def _write_gradebook(self, rows: list[Row], tasks: list[tuple[str, float]] | None) -> None:
        """The gradebook in its format (CSV, or an LMS's with every task's points beside it);
        a warning names the students an LMS gradebook had to leave out, so none is lost silently."""
        assert self.gradebook is not None
        left_out = []
        if self.form == "csv":
            write_gradebook(rows, self.gradebook, tasks)
        else:
            left_out = write_lms_gradebook(rows, self.gradebook, tasks, self.form, self.assignment, self.id_column)
        print(f"wrote the gradebook to {self.gradebook}")
        if self.form != "csv":
            print(f"wrote every task's points to {tasks_path(self.gradebook)}")
        if left_out:
            print(
                f"warning: gradebook ({self.form}): left out {', '.join(left_out)}: not on the roster, or "
                f"nothing in its column to identify them by ({self.form.capitalize()} would refuse the "
                f"import); their points are in {tasks_path(self.gradebook)}",
                file=sys.stderr,
            )

    def _write_feedback(self, rows: list[Row], tasks: list[tuple[str, float]] | None, sandboxed: bool) -> None:
        """One page per student; the points possible come from the class chapter's tasks."""
        assert self.feedback is not None
        possible = sum(value for _, value in tasks) if tasks is not None else None
        written = write_feedback(rows, self.feedback, sandboxed, possible)
        print(f"wrote {len(written)} feedback file(s) to {self.feedback}")
        if earlier := earlier_pages(self.feedback, written):
            names = ", ".join(path.name for path in earlier[:10]) + (
                f" and {len(earlier) - 10} more" if len(earlier) > 10 else ""
            )
            print(
                f"warning: --feedback {self.feedback}: {len(earlier)} page(s) there are of an earlier run, of "
                f"students not graded in this one, and were left as they were: {names}. Before handing the "
                "folder out, remove the pages of students whose grades changed, or grade the whole class "
                "into an empty folder.",
                file=sys.stderr,
            )


def _kept(error: OSError, path: Path) -> str:
    """Where this run's version of a file that could not be replaced is, and what to do."""
    if not isinstance(error, InUse):
        return ""
    return (
        f"; this run's version is written beside it as {error.kept}: close {Path(path).name} where it is open "
        f"(a spreadsheet program such as Excel keeps the file it shows from being replaced) and put "
        f"{error.kept.name} in its place"
    )


EARLIER = "earlier"  # grades.csv's earlier version is kept as grades.earlier.csv


def _keeping_earlier(
    paths: list[Path], write: Callable[[], None], keys: Callable[[str], dict[str, str]], lost: str
) -> None:
    """``write``, which replaces the files at ``paths``; where the new version of one lacks
    something of its earlier one (``keys``: each thing's key and the name it is told by;
    ``lost``: what missing keys mean, for the terminal), as grading one student again with
    the class's command line does, the earlier version is kept beside it
    (``grades.earlier.csv``, numbered when taken) and the terminal says so: a class's
    gradebook or report is never lost to a run over some of its students."""
    copies: dict[Path, Path] = {}
    try:
        for path in paths:
            if Path(path).is_file():
                fd, temp = tempfile.mkstemp(dir=Path(path).parent, prefix=f".{Path(path).name}.", suffix=".earlier")
                os.close(fd)
                copies[Path(path)] = Path(temp)
                try:
                    shutil.copy2(path, temp)
                except OSError:  # unreadable: nothing to compare, and no reason not to write
                    Path(temp).unlink(missing_ok=True)
                    del copies[Path(path)]
        write()
        for path, copy in list(copies.items()):
            before, now = _keys(copy, keys), _keys(path, keys)
            gone = sorted({before[key] for key in before.keys() - now.keys()})
            if not gone:
                continue
            kept = path.with_name(f"{path.stem}.{EARLIER}{path.suffix}")
            n = 1
            while kept.exists():
                n += 1
                kept = path.with_name(f"{path.stem}.{EARLIER}-{n}{path.suffix}")
            os.replace(copy, kept)
            del copies[path]
            names = ", ".join(gone[:5]) + (f" and {len(gone) - 5} more" if len(gone) > 5 else "")
            print(
                f"warning: {path} held {len(gone)} student(s) {lost} ({names}); its earlier version is kept as {kept}",
                file=sys.stderr,
            )
    finally:
        for copy in copies.values():
            copy.unlink(missing_ok=True)


def _keys(path: Path, keys: Callable[[str], dict[str, str]]) -> dict[str, str]:
    """``keys`` of the file's text; none where it cannot be read as such (not a file of ours)."""
    try:
        return keys(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, IndexError, AttributeError, csv.Error):
        return {}


def _gradebook_rows(text: str) -> dict[str, str]:
    """A gradebook's rows below the header, each whole, told by its first column: a row the
    new version lacks is a student left out or changed, as a student without a submission
    this run is (with a roster every student has a row, and the one not graded gets none
    of their points)."""
    return {"\x1f".join(row): row[0] for row in list(csv.reader(io.StringIO(text)))[1:] if row and row[0]}


def _report_students(text: str) -> dict[str, str]:
    """A JSON report's students, by the ``student`` of each entry (by its file, in a report
    written before entries named their student): a run from another folder, or with
    ``./class/...``, names the same students."""
    entries = json.loads(text)["submissions"]
    return {key: key for entry in entries if (key := str(entry.get("student") or entry["file"]))}


def _refuse_clashes(
    submissions: list[Path], report: Path | None, gradebook: Path | None, folder: Path | None, form: str
) -> None:
    """Refuse outputs that would destroy a submission or each other, or that cannot mean what
    was asked (a notebook as the feedback folder, an LMS format without a gradebook file)."""
    handed = {_same(path) for path in submissions}
    for option, path in (("--report", report), ("--gradebook", gradebook)):
        if path is not None and path.suffix != ".ipynb" and _same(path) in handed:
            raise GraderError(
                f"{option} {path}: it is among the submissions given too (a pattern such as {path.parent / '*'} "
                "caught this output of an earlier run), and grading never writes to a submission. Give the "
                f"notebooks only ({path.parent / '*.ipynb'}), and keep the outputs outside the class's folder."
            )
        if path is not None and (_same(path) in handed or path.suffix == ".ipynb"):
            raise GraderError(f"{option} {path}: that is a submission; grading never writes to one.")
    if report is not None and gradebook is not None and _same(report) == _same(gradebook):
        raise GraderError("--report and --gradebook name the same file.")
    if folder is not None and folder.suffix == ".ipynb":
        raise GraderError(
            f"--feedback {folder}: that is a notebook, not a folder. Name the folder, or put "
            "--feedback after the submissions."
        )
    if form != "csv" and gradebook is None:
        raise GraderError(f"--gradebook-format {form}: name the gradebook's file with --gradebook FILE.csv.")


def _refuse_other_classes_pages(folder: Path, found: dict[Path, Student]) -> None:
    """Refuse, before grading, a feedback folder holding a page of another class's student
    of the same name (two sections graded into one folder without a roster): this run's
    alice would replace the other alice's page, whose student would lose it."""
    students: dict[Student, list[Path]] = {}
    for path, student in found.items():
        students.setdefault(student, []).append(path)
    taken = other_classes_pages(folder, students)
    if not taken:
        return
    listed = "; ".join(
        f"{page.name} (this run's {student.id}: {', '.join(str(path) for path in students[student])})"
        for page, student in taken[:5]
    ) + (f"; and {len(taken) - 5} more" if len(taken) > 5 else "")
    raise GraderError(
        f"--feedback {folder}: it holds the pages of {len(taken)} student(s) of another class named as students "
        f"of this one, graded from other folders: {listed}. Grading into it would replace those pages with this "
        "class's. Grade each class (section) into a feedback folder of its own (--feedback feedback-sec2), or "
        "pass a roster (--roster) that gives each student an id of their own. A whole class moved or downloaded "
        "again to another folder is taken as itself (it shares most of its students with the pages there); "
        "if this is part of that class, from another folder, grade it with the class's roster or into an "
        "empty folder."
    )


def _check_targets(report: Path | None, gradebook: Path | None, folder: Path | None, form: str) -> None:
    """Every file and folder the run will write, checked writable now (an LMS gradebook
    writes a second file, every task's points, beside its own)."""
    targets = [("--report", report), ("--gradebook", gradebook), ("--feedback", folder)]
    if form != "csv" and gradebook is not None:
        targets.append(("--gradebook", tasks_path(gradebook)))
    for option, path in targets:
        if path is not None:
            _check_writable(option, path, folder=option == "--feedback")


def _warn_wrong_chapters(results: list[SubmissionResult]) -> None:
    """Tell the instructor, not only the gradebook, which submissions were another chapter's."""
    for result in results:
        if result.handed_in_chapter is not None:
            print(
                f"warning: {result.path}: wrong chapter: {result.handed_in_chapter}, not "
                f"{result.expected_chapter}; not graded (the gradebook and the student's page say so)",
                file=sys.stderr,
            )


def _warn_roster(rows: list[Row]) -> None:
    """Roster students without a submission, and submissions of no roster student: most
    often a typo in the roster or a misnamed file, which the instructor should fix."""
    for row in rows:
        for note in row.instructor_notes + row.notes:
            if note == "no submission" or note.endswith(f": {NOT_IN_ROSTER}"):
                print(f"warning: roster: {row.student.id}: {note}", file=sys.stderr)


def _check_writable(option: str, path: Path, folder: bool) -> None:
    """Refuse, before grading, an output that could not be written: a file where a folder
    must be, a folder where the file must be, a folder this user cannot write to."""
    path = Path(path)
    if not folder and path.is_dir():
        raise GraderError(f"{option} {path}: cannot write it: that is a folder. Name a file.")
    where = path if folder else path.parent
    existing = where
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    problem = None
    if not existing.is_dir():
        problem = f"{existing} is a file, not a folder"
    elif not os.access(existing, os.W_OK | os.X_OK):
        problem = f"no permission to write in {existing}"
    else:
        try:
            fd, probe = tempfile.mkstemp(dir=existing, prefix=".grader-probe-")
            os.close(fd)
            os.unlink(probe)
        except OSError as error:
            problem = f"{existing}: {error.strerror or error}"
    if problem:
        raise GraderError(f"{option} {path}: cannot write it ({problem}). Choose a path in a folder you can write to.")


def _check_lms(form: str, roster: Roster | None, id_column: str | None) -> None:
    """An LMS gradebook names students as the LMS knows them: that takes a roster."""
    if roster is None:
        what = "its IDs (ID, SIS User ID, SIS Login ID)" if form == "canvas" else "a username, ID number or email"
        raise GraderError(
            f"--gradebook-format {form} needs --roster: {form.capitalize()} matches each row to a student by "
            f"{what}, which only a roster gives. "
            + (
                "Export the Canvas gradebook and add a column file naming each student's submission."
                if form == "canvas"
                else "Give a roster with a column Moodle knows the students by, and name it with --id-column."
            )
        )
    if form == "moodle":
        wanted = (id_column or "id").casefold()
        if wanted not in {name.casefold() for name in roster.headers}:
            raise GraderError(
                f"--id-column {id_column or 'id'!r}: the roster has no such column (its columns: "
                f"{', '.join(roster.headers)})."
            )


def _same(path: Path) -> Path:
    return real_path(path)
