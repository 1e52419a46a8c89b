"""Find the graded tasks in an instructor notebook (solutions/<chapter>.ipynb).

A task is a markdown cell with a heading ``### Exercise N.M (P points)``, followed by
one code cell tagged ``solution`` (the answer between ``### BEGIN SOLUTION`` and
``### END SOLUTION``), one or more cells tagged ``check`` and optionally cells tagged
``hidden``. Untagged code cells are setup: they belong to no task and always run.
Everything else in the grader (release, matching, grading) works from the `Chapter`
this module builds, so the format is parsed in one place only.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeAlias

import nbformat
from nbformat import NotebookNode

from grader.host.errors import GraderError

HEADING = re.compile(
    r"^\s*#{1,6}\s*Exercise\s+(?P<number>\d+(?:\.\d+)*)\s*"
    r"\(\s*(?P<points>\d+(?:\.\d+)?)\s*points?\s*\)",
    re.MULTILINE | re.IGNORECASE,
)
# The repository holding solutions/ and exercises/.
COURSE_ROOT = Path(__file__).resolve().parents[2]
BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
# The tags that make a code cell part of a task.
TaskRole: TypeAlias = Literal["solution", "check", "hidden"]
ROLES: tuple[TaskRole, ...] = ("solution", "check", "hidden")
# Markers that would stop nbval from running a check or from failing it on an error.
NBVAL_MARKERS = {"nbval-skip", "raises-exception"}
NBVAL_COMMENT = re.compile(r"^\s*#+\s*(NBVAL_SKIP|NBVAL_RAISES_EXCEPTION)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Task:
    """One graded exercise; the ints are indices into the chapter notebook's cells."""

    number: str
    points: float
    heading: int
    solution: int
    checks: tuple[int, ...]
    hidden: tuple[int, ...]

    @property
    def cells(self) -> tuple[int, ...]:
        """The cells whose verdicts decide the task, in notebook order."""
        return (self.solution, *self.checks, *self.hidden)

    def role_of(self, index: int) -> TaskRole:
        """The role of one of the task's cells (its tag in the instructor notebook)."""
        if index == self.solution:
            return "solution"
        if index in self.checks:
            return "check"
        if index in self.hidden:
            return "hidden"
        raise ValueError(f"cell {index} is not one of Exercise {self.number}'s cells")


@dataclass
class Chapter:
    """An instructor notebook and the tasks found in it."""

    name: str
    path: Path
    nb: NotebookNode
    tasks: list[Task]

    def task_of_cell(self) -> dict[int, Task]:
        """Cell index -> the task it belongs to, for the solution, check and hidden cells."""
        return {index: task for task in self.tasks for index in task.cells}


def role(cell: NotebookNode) -> str:
    """'solution', 'check', 'hidden', 'setup' (untagged code) or 'markdown'/'raw'."""
    if cell.cell_type != "code":
        return cell.cell_type
    tags = cell.get("metadata", {}).get("tags", [])
    found = [tag for tag in ROLES if tag in tags]
    return found[0] if len(found) == 1 else ("setup" if not found else "conflict")


def heading_number(cell: NotebookNode) -> str | None:
    """The task number of a markdown cell with an exercise heading, else None."""
    if cell.cell_type != "markdown":
        return None
    match = HEADING.search(cell.source)
    return match["number"] if match else None


def chapter_paths(solutions_dir: Path) -> dict[str, Path]:
    """Chapter name (file stem, e.g. '01_tensors') -> instructor notebook."""
    return {path.stem: path for path in sorted(Path(solutions_dir).glob("*.ipynb"))}


def load_chapter(path: Path) -> Chapter:
    """Read an instructor notebook and find its tasks; a malformed one raises GraderError
    naming the cell to fix, because a silently skipped task would grade learners wrongly."""
    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    # _drafts is a generator: each task is checked as soon as its last cell has been seen,
    # before the cells of the next one, so the first problem in the notebook is the one named.
    tasks = [_task(path, nb, draft) for draft in _drafts(path, nb)]
    numbers = [task.number for task in tasks]
    if len(set(numbers)) != len(numbers):
        raise GraderError(f"{path.name}: two tasks share a number ({numbers}). Number them uniquely.")
    if not tasks:
        raise GraderError(f"{path.name}: no '### Exercise N.M (P points)' headings, so nothing to grade.")
    return Chapter(path.stem, path, nb, tasks)


@dataclass
class _Draft:
    """A task while its cells are collected: its heading and the tagged cells seen after it,
    kept apart from `Task` because it is not yet known to be well formed."""

    number: str
    points: float
    heading: int
    solution: list[int] = field(default_factory=list)
    checks: list[int] = field(default_factory=list)
    hidden: list[int] = field(default_factory=list)

    def add(self, kind: str, index: int) -> None:
        """File a cell tagged ``kind`` (one of ROLES) under the task."""
        {"solution": self.solution, "check": self.checks, "hidden": self.hidden}[kind].append(index)


def _drafts(path: Path, nb: NotebookNode) -> Iterator[_Draft]:
    """The notebook's tasks in order, each yielded once the next heading (or the end) closes
    it; a cell with two roles, or a tagged cell before any heading, is an error here
    because it belongs to no task the grader could check."""
    current: _Draft | None = None
    for index, cell in enumerate(nb.cells):
        kind = role(cell)
        match = HEADING.search(cell.source) if kind == "markdown" else None
        if match:
            if current is not None:
                yield current
            current = _Draft(match["number"], float(match["points"]), index)
        elif kind == "conflict":
            raise GraderError(f"{path.name}, cell {index}: a cell can have only one of the tags {ROLES}.")
        elif kind in ROLES:
            if current is None:
                raise GraderError(
                    f"{path.name}, cell {index}: a '{kind}' cell before the first "
                    "'### Exercise N.M (P points)' heading. Add the heading above it."
                )
            current.add(kind, index)
    if current is not None:
        yield current


def _task(path: Path, nb: NotebookNode, draft: _Draft) -> Task:
    """The task a draft describes, once it is known to be gradable: one solution cell with
    the solution markers, at least one check, and checks that nbval will run and compare."""
    where = f"{path.name}, Exercise {draft.number}"
    if len(draft.solution) != 1:
        raise GraderError(
            f"{where}: expected exactly one code cell tagged 'solution', found "
            f"{len(draft.solution)}. Tag the answer cell 'solution'."
        )
    if not draft.checks:
        raise GraderError(f"{where}: no code cell tagged 'check'. Add one after the solution cell.")
    source = nb.cells[draft.solution[0]].source
    if BEGIN not in source or END not in source:
        raise GraderError(f"{where}: the solution cell needs the lines '{BEGIN}' and '{END}'.")
    for index in draft.checks + draft.hidden:
        _check_runnable(where, index, nb.cells[index])
    return Task(draft.number, draft.points, draft.heading, draft.solution[0], tuple(draft.checks), tuple(draft.hidden))


def _check_runnable(where: str, index: int, cell: NotebookNode) -> None:
    """A check or hidden cell must be run by nbval and its output compared: otherwise a
    learner's answer could fail it and still pass."""
    if NBVAL_MARKERS & set(cell.metadata.get("tags", [])) or NBVAL_COMMENT.search(cell.source):
        raise GraderError(
            f"{where}: cell {index} is a check, so nbval must run it and compare "
            "its output: remove its nbval-skip/raises-exception tag or NBVAL_ comment."
        )
    if cell.outputs and cell.execution_count is None:
        # nbval refuses such a cell ("Unrun reference cell has outputs").
        raise GraderError(
            f"{where}: cell {index} has outputs but no execution count. "
            "Re-execute the notebook (jupyter nbconvert --execute --inplace)."
        )
