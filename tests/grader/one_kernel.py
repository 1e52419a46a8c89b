"""A chapter's further wrong answers, run one after another in one kernel.

The grader gives every submission a kernel of its own: about 3 s of starting Python, the
kernel and torch before any check runs. test_course.py grades the first wrong answer of
every task that way (in a tampered notebook); a task's further wrong answers test the
same check cells against other mistakes, so they run here, in one kernel per chapter, in
the instructor's notebook: at each task, before its right answer, every further wrong
answer in turn followed by the task's check and hidden cells, as the grader would run
them. A wrong answer's verdict is read as the grader reads it: it passed when its
solution cell and every check cell ran without error, and otherwise the first error is its
message.

One kernel for many answers must not let one answer's leftovers decide another's verdict:
- the names an answer defined (public names, as answers define; the checks' helpers are
  private) are deleted before the next one runs, so a name the next answer forgot is
  missing as it would be in a kernel of its own;
- every check cell starts with the grading session's guard, which puts back what an
  answer replaced (and fails that answer's check, naming it);
- after a task's wrong answers, its right answer and checks run as in the notebook, and
  must pass (``spoiled``): a wrong answer that left the kernel changed shows there.

Wrong answers that deadlock or kill the kernel are not for this: test_course.py grades
those in submissions of their own.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from grader.host.notebook import Chapter, Task

from .answers import Wrong

CELL_TIMEOUT = 120  # seconds: a check that starts ranks on a busy machine


@dataclass
class Verdict:
    passed: bool
    message: str  # "Ename: evalue" of the first error, "" when passed
    solution_raised: bool  # the error was in the answer's own cell


@dataclass
class Block:
    """Where one run of a task's cells sits in the notebook this module builds."""

    solution: int
    checks: list[int]


def _code(source: str, tag: str | None = None) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    if tag:
        cell.metadata["tags"] = [tag]
    return cell


def _error(cell: nbformat.NotebookNode) -> str | None:
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            return f"{output['ename']}: {output['evalue']}"
    return None


def _verdict(nb: nbformat.NotebookNode, block: Block) -> Verdict:
    raised = _error(nb.cells[block.solution])
    if raised is not None:
        return Verdict(False, raised, True)
    for index in block.checks:
        failed = _error(nb.cells[index])
        if failed is not None:
            return Verdict(False, failed, False)
    return Verdict(True, "", False)


def _task_block(chapter: Chapter, task: Task, answer: str, cells: list, forget: bool) -> Block:
    """Append the task's cells from its solution to its last check, the answer in place of
    the solution; with ``forget``, the names it defines are deleted after them."""
    source = chapter.nb.cells
    if forget:
        cells.append(_code("_one_kernel_names = set(globals())"))
    block = Block(len(cells), [])
    for index in range(task.solution, max(task.cells) + 1):
        cell = source[index]
        if cell.cell_type != "code":
            continue
        if index in task.cells and index != task.solution:
            block.checks.append(len(cells))
        cells.append(_code(answer) if index == task.solution else _code(cell.source))
    if forget:
        cells.append(
            _code(
                "for _one_kernel_name in set(globals()) - _one_kernel_names:\n"
                "    if not _one_kernel_name.startswith('_'):\n"
                "        del globals()[_one_kernel_name]"
            )
        )
    return block


def run_wrong_answers(
    chapter: Chapter, wrong: dict[str, list[tuple[int, Wrong]]], folder: Path
) -> tuple[dict[tuple[str, int], Verdict], dict[str, Verdict]]:
    """Each (task number, k) answer's verdict, and each task's right answer's verdict after
    them (which must pass), from one kernel started in ``folder``."""
    blocks: dict[tuple[str, int], Block] = {}
    rights: dict[str, Block] = {}
    cells: list = []
    starts = {task.solution: task for task in chapter.tasks}
    index = 0
    while index < len(chapter.nb.cells):
        task = starts.get(index)
        if task is None:
            cell = chapter.nb.cells[index]
            if cell.cell_type == "code":
                cells.append(_code(cell.source))
            index += 1
            continue
        for k, answer in wrong.get(task.number, []):
            blocks[(task.number, k)] = _task_block(chapter, task, answer.code, cells, forget=True)
        rights[task.number] = _task_block(chapter, task, chapter.nb.cells[task.solution].source, cells, forget=False)
        index = max(task.cells) + 1
    nb = nbformat.v4.new_notebook(cells=cells, metadata=chapter.nb.metadata)
    client = NotebookClient(
        nb,
        timeout=CELL_TIMEOUT,
        allow_errors=True,
        kernel_name="python3",
        resources={"metadata": {"path": str(folder)}},
    )
    client.execute()
    return (
        {key: _verdict(nb, block) for key, block in blocks.items()},
        {number: _verdict(nb, block) for number, block in rights.items()},
    )
