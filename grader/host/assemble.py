"""Build the notebook nbval runs for one submission.

It is the instructor's notebook with only the solution cells' code taken from the
submission, preceded by a cell that installs output_guard. Setup cells' outputs are not
compared (they are not the learner's work), check and hidden cells are compared with the
text the instructor's run printed (stdout: warnings never cost a point, and what the
learner's code displays is not the check's), and a check with
no stored output counts only by raising or not. After a lost kernel, tasks already graded
are "replayed": only their solution cells run, to rebuild the state later tasks use. Each
cell of a graded task names its task and kind in its metadata, for the plugin.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Literal, TypeAlias

import nbformat
from nbformat import NotebookNode

from grader.host.notebook import Chapter, Task, TaskRole

# What a code cell of the grading notebook is: the grader's output guard, a setup cell, an
# earlier task's solution run again to rebuild state (replay), or a cell of a graded task.
CellKind: TypeAlias = Literal["guard", "setup", "replay"] | TaskRole

GUARD = "from grader.kernel.output_guard import install\ninstall()\ndel install"


@dataclass
class CellRole:
    """What a code cell of the grading notebook is, to read nbval's verdict on it."""

    kind: CellKind
    task: str | None
    index: int | None  # the cell's index in the instructor notebook


def grading_notebook(
    chapter: Chapter, answers: dict[str, str | None], graded: list[Task], replayed: list[Task]
) -> tuple[NotebookNode, list[CellRole]]:
    """The notebook nbval runs, and the role of each of its code cells in order."""
    task_of = chapter.task_of_cell()
    graded_numbers = {t.number for t in graded}
    replayed_numbers = {t.number for t in replayed}
    guard = nbformat.v4.new_code_cell(GUARD, id="grader-output-guard")
    cells, roles = [guard], [CellRole("guard", None, None)]
    for index, instructor_cell in enumerate(chapter.nb.cells):
        if instructor_cell.cell_type != "code":
            continue
        cell = copy.deepcopy(instructor_cell)
        task = task_of.get(index)
        if task is None:
            _ignore_output(cell)
            cells.append(cell)
            roles.append(CellRole("setup", None, index))
            continue
        kind = task.role_of(index)  # the cell's tag, as load_chapter read it
        if task.number in replayed_numbers and kind == "solution":
            cell.source, cell.outputs, cell.execution_count = answers[task.number], [], None
            cells.append(cell)
            roles.append(CellRole("replay", task.number, index))
        elif task.number in graded_numbers:
            if kind == "solution":
                cell.source, cell.outputs, cell.execution_count = answers[task.number], [], None
            else:
                # Only what a check prints is compared (plugin/recorder.py): warnings never cost
                # a point (output_guard drops stderr), and a figure or progress bar the learner's
                # function displays is not the check's output.
                cell.outputs = [
                    o for o in cell.outputs if o.get("output_type") == "stream" and o.get("name") == "stdout"
                ]
                if not cell.outputs:
                    _ignore_output(cell)  # nothing to compare: only errors count
            # The plugin reads which task a cell grades: a hidden check of a task that has
            # already failed is skipped (plugin/recorder.py).
            cell.metadata["grader"] = {"task": task.number, "kind": kind}
            cells.append(cell)
            roles.append(CellRole(kind, task.number, index))
    nb = nbformat.v4.new_notebook(cells=cells, metadata=copy.deepcopy(chapter.nb.metadata))
    nb.metadata.pop("widgets", None)
    return nb, roles


def _ignore_output(cell: NotebookNode) -> None:
    tags = cell.metadata.setdefault("tags", [])
    if "nbval-ignore-output" not in tags:
        tags.append("nbval-ignore-output")
