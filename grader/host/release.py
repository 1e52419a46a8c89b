"""Write the learners' exercise notebooks from the instructor's solutions.

Each solution region becomes a stub that raises ``NotImplementedError("Exercise N.M")``
(code outside the region is kept: it sets the task up), hidden cells are removed, and
solution and check cells lose their outputs and execution counts: a fresh exercise notebook
must not show "Exercise N.M passed" under a check whose answer above still raises. Every
verdict a learner sees is then their own answer's; the grader compares a check's output with
the instructor's notebook, never with the learner's file. Setup cells keep their outputs:
a task may point at them ("the cell below shows the error").
Output is a pure function of the solutions notebook (nbformat's sorted, indented JSON),
so releasing twice gives byte-identical files and a test can compare the committed
exercises with a fresh release.
"""

from __future__ import annotations

import copy
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from grader.host.notebook import BEGIN, END, Chapter, chapter_paths, load_chapter, role


def stub(source: str, number: str) -> str:
    """Replace every BEGIN/END SOLUTION region with a raise, indented like the markers."""
    lines = source.split("\n")
    out: list[str] = []
    inside = False
    for line in lines:
        stripped = line.strip()
        if stripped == BEGIN:
            indent = line[: len(line) - len(line.lstrip())]
            out += [line, f'{indent}raise NotImplementedError("Exercise {number}")']
            inside = True
        elif stripped == END:
            out.append(line)
            inside = False
        elif not inside:
            out.append(line)
    return "\n".join(out)


def exercise_notebook(chapter: Chapter) -> NotebookNode:
    """The learner's version of a chapter's instructor notebook."""
    nb = copy.deepcopy(chapter.nb)
    number_of = {task.solution: task.number for task in chapter.tasks}
    cells = []
    for index, cell in enumerate(nb.cells):
        kind = role(cell)
        if kind == "hidden":
            continue
        # Execution timestamps are noise in a file learners diff and graders compare.
        cell.metadata.pop("execution", None)
        if kind == "solution":
            cell.source = stub(cell.source, number_of[index])
            cell.outputs = []
            cell.execution_count = None
            cell.metadata["deletable"] = False
        elif kind == "check":
            cell.outputs = []
            cell.execution_count = None
            # JupyterLab honours these: a learner cannot edit or delete a check by accident.
            cell.metadata["deletable"] = False
            cell.metadata["editable"] = False
        cells.append(cell)
    nb.cells = cells
    nb.metadata["grader"] = {"chapter": chapter.name}
    return nb


def release(solutions_dir: Path, exercises_dir: Path) -> list[Path]:
    """Write exercises_dir/<chapter>.ipynb for every solutions notebook; returns the paths."""
    exercises_dir = Path(exercises_dir)
    exercises_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, path in chapter_paths(solutions_dir).items():
        target = exercises_dir / f"{name}.ipynb"
        nbformat.write(exercise_notebook(load_chapter(path)), target)
        written.append(target)
    return written
