"""What a grading run leaves for the instructor besides the tables: the JSON report (with
the class summary), the gradebook CSV and the feedback files.

``Outputs.prepare`` runs before grading, so that a bad roster or an output path that
would overwrite a submission stops the run before minutes of grading, not after;
``Outputs.write`` runs once grading has ended. Every file is written atomically
(files.py), and never over a submission.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from grader.errors import GraderError
from grader.feedback import write_feedback
from grader.gradebook import write_gradebook
from grader.report import write_json
from grader.results import SubmissionResult
from grader.roster import Roster, class_rows, read_roster

FEEDBACK_FOLDER = "feedback"  # where a bare --feedback writes: next to the report


@dataclass
class Outputs:
    report: Path | None = None
    feedback: Path | None = None
    gradebook: Path | None = None
    roster: Roster | None = None

    @classmethod
    def prepare(
        cls,
        submissions: list[Path],
        report: Path | None = None,
        feedback: Path | bool | None = None,
        gradebook: Path | None = None,
        roster: Path | None = None,
    ) -> Outputs:
        """Check the paths and read the roster; ``feedback=True`` means the default folder,
        ``feedback/`` next to the report (or in the current folder without one)."""
        if feedback is True:
            feedback = (report.parent if report else Path()) / FEEDBACK_FOLDER
        folder = feedback if isinstance(feedback, Path) else None
        handed = {_same(path) for path in submissions}
        for option, path in (("--report", report), ("--gradebook", gradebook)):
            if path is not None and (_same(path) in handed or path.suffix == ".ipynb"):
                raise GraderError(f"{option} {path}: that is a submission; grading never writes to one.")
        if report is not None and gradebook is not None and _same(report) == _same(gradebook):
            raise GraderError("--report and --gradebook name the same file.")
        if folder is not None:
            if folder.suffix == ".ipynb":
                raise GraderError(
                    f"--feedback {folder}: that is a notebook, not a folder. Name the folder, or put "
                    "--feedback after the submissions."
                )
            if folder.exists() and not folder.is_dir():
                raise GraderError(f"--feedback {folder}: not a folder.")
        return cls(report, folder, gradebook, read_roster(roster) if roster is not None else None)

    def write(self, results: list[SubmissionResult], sandboxed: bool = True) -> None:
        """Write every file asked for; notes for the instructor go to stderr.
        ``sandboxed=False`` marks the report, summary and feedback pages unsandboxed."""
        rows = class_rows(results, self.roster)
        if self.roster is not None:
            for row in rows:
                for note in row.notes:
                    if note == "no submission" or note.endswith(": not in roster"):
                        print(f"warning: roster: {row.student.id}: {note}", file=sys.stderr)
        try:
            if self.report is not None:
                write_json(results, self.report, sandboxed)
            if self.gradebook is not None:
                write_gradebook(rows, self.gradebook)
                print(f"wrote the gradebook to {self.gradebook}")
            if self.feedback is not None:
                written = write_feedback(rows, self.feedback, sandboxed)
                print(f"wrote {len(written)} feedback file(s) to {self.feedback}")
        except OSError as error:
            raise GraderError(f"cannot write the grading files: {error}") from None


def _same(path: Path) -> Path:
    return Path(path).resolve()
