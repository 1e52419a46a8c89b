"""Building submissions and reading the grader's report: shared by the grader's end-to-end tests.

A submission is an exercise notebook with some solution cells rewritten, found by the
cell ids the exercise inherits from the instructor's copy. ``grade`` runs the real
command line (`python -m grader grade`) once over many files, as an instructor grading a
class would, and returns each file's entry of the JSON report under a short label.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from grader.host.notebook import Chapter


def copied(nb: NotebookNode) -> NotebookNode:
    """A deep copy, as reading the notebook from disk again would give."""
    return nbformat.from_dict(json.loads(json.dumps(nb)))


def solution_ids(chapter: Chapter) -> dict[str, str]:
    """Task number -> the id of its solution cell."""
    return {t.number: chapter.nb.cells[t.solution].id for t in chapter.tasks}


def with_answers(exercise: NotebookNode, chapter: Chapter, answers: dict[str, str]) -> NotebookNode:
    """A copy of the exercise notebook with these tasks' solution cells replaced."""
    nb = copied(exercise)
    ids = solution_ids(chapter)
    for number, code in answers.items():
        next(c for c in nb.cells if c.get("id") == ids[number]).source = code
    return nb


def tamper(nb: NotebookNode, chapter: Chapter) -> NotebookNode:
    """Everything a learner can do to the cells that are not theirs: edit the first task's
    check into a bare success line, delete the second task's check, clear every output,
    strip every tag, add a 'hidden' cell of their own, and give every cell a new id (as
    copying the cells into a fresh notebook does)."""
    nb = copied(nb)
    first, second = chapter.tasks[0], chapter.tasks[1]
    edited, deleted = (chapter.nb.cells[t.checks[0]].id for t in (first, second))
    next(c for c in nb.cells if c.get("id") == edited).source = f'print("Exercise {first.number} passed")'
    nb.cells = [c for c in nb.cells if c.get("id") != deleted]
    own = nbformat.v4.new_code_cell("pass", id="own-hidden")
    own.metadata["tags"] = ["hidden"]
    nb.cells.append(own)
    for n, c in enumerate(nb.cells):
        c.metadata.pop("tags", None)
        c.id = f"copied-{n}"
        if c.cell_type == "code":
            c.outputs, c.execution_count = [], None
    return nb


@dataclass
class Graded:
    """One run of the grade command: its process and its report, one entry per label."""

    run: subprocess.CompletedProcess
    entries: dict[str, dict]
    report: Path | None = None  # the JSON report the entries were read from

    def verdicts(self, label: str) -> dict[str, tuple[bool, str]]:
        """Task number -> (passed, message) for a submission the grader could read."""
        entry = self.entries[label]
        assert entry["error"] is None, entry["error"]
        return {t["task"]: (t["passed"], t["message"]) for t in entry["tasks"]}

    def reasons(self, label: str) -> list[str]:
        return [t["reason"] for t in self.entries[label]["tasks"]]


def write_submissions(root: Path, notebooks: dict[str, NotebookNode]) -> list[Path]:
    """Write each notebook to root/<label>.ipynb (a label may hold a folder: 'mixed_up/01')."""
    paths = []
    for label, nb in notebooks.items():
        paths.append(root / f"{label}.ipynb")
        paths[-1].parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, paths[-1])
    return paths


def grade(
    root: Path,
    paths: list[Path],
    cell_timeout: float,
    solutions: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 900,
    options: tuple[str, ...] = (),
) -> Graded:
    """Run `python -m grader grade` on the files (with more command-line ``options``: e.g.
    --no-sandbox); label each report entry by its path under ``root`` without the suffix."""
    report = root / "grades.json"
    where = ["--solutions", str(solutions)] if solutions else []
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "grader",
            "grade",
            *where,
            *map(str, paths),
            "--report",
            str(report),
            "--cell-timeout",
            str(cell_timeout),
            *options,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    entries = {}
    for entry in json.loads(report.read_text())["submissions"]:
        entries[Path(entry["file"]).relative_to(root).with_suffix("").as_posix()] = entry
    return Graded(run, entries, report)
