"""A chapter's further answers, run one after another in one kernel.

The grader gives every submission a kernel of its own: about 3 s of starting Python, the
kernel and torch before any check runs. test_course.py grades the first wrong answer of
every task that way (in a tampered notebook), with the instructor's solutions and the
untouched exercise; the other answers test the same check cells against other mistakes,
another right answer, and nothing answered at all, so they run here, in one kernel per
chapter, in the instructor's notebook: at each task, before its right answer, every other
answer in turn followed by the task's check and hidden cells, as the grader would run them.
An answer's verdict is read as the grader reads it: it passed when its solution cell and
every check cell ran without error, and otherwise the first error is its message. So its
cells after that first error are not run: they cannot change the verdict, only cost time (a
hidden check that deadlocks on three ranks waits out its time limit). The check cells print nothing
but their "passed" line, so no error means the output the grader compares is right too.

One kernel for many answers must not let one answer's leftovers decide another's verdict:
- the names an answer defined (public names, as answers define; the checks' helpers are
  private) are deleted before the next one runs, so a name the next answer forgot is
  missing as it would be in a kernel of its own;
- an answer run ``alone`` (nothing answered: the exercise's stub made a ``pass``) runs with
  the names the earlier tasks' right answers defined out of sight, as in a notebook where
  nothing was answered, and they come back after it;
- every check cell starts with the grading session's guard, which puts back what an
  answer replaced (and fails that answer's check, naming it), and the session puts it
  back again after each answer's block, whose last checks may not have run;
- a process the answer started and left running is ended after its block;
- after a task's other answers, its right answer and checks run as in the notebook, and
  must pass (``spoiled``): an answer that left the kernel changed shows there.

Answers that deadlock or kill the kernel are not for this: test_course.py grades those in
submissions of their own.
"""

from __future__ import annotations

import textwrap
from collections.abc import Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

from grader.host.notebook import Chapter, Task

CELL_TIMEOUT = 120  # seconds: a check that starts ranks on a busy machine


@dataclass
class Verdict:
    passed: bool
    message: str  # "Ename: evalue" of the first error, "" when passed
    solution_raised: bool  # the error was in the answer's own cell


@dataclass(frozen=True)
class Answer:
    """A solution cell to run in place of a task's right one, found again by ``key``."""

    key: Hashable  # e.g. 2 (the task's third wrong answer), "alternative"
    code: str
    alone: bool = False  # with the names earlier answers defined out of sight


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


class _UpToFirstError(NotebookClient):
    """Runs each block's cells (an answer and its checks) only up to its first error."""

    def __init__(self, nb: nbformat.NotebookNode, blocks: list[Block], **kwargs: Any) -> None:
        super().__init__(nb, **kwargs)
        # cell index -> its block's solution cell, which names the block
        self.block_of = {index: block.solution for block in blocks for index in (block.solution, *block.checks)}
        self.decided: set[int] = set()  # the blocks that met their first error

    async def async_execute_cell(
        self,
        cell: nbformat.NotebookNode,
        cell_index: int,
        execution_count: int | None = None,
        store_history: bool = True,
    ) -> nbformat.NotebookNode:
        block = self.block_of.get(cell_index)
        if block in self.decided:
            return cell
        cell = await super().async_execute_cell(cell, cell_index, execution_count, store_history)
        if block is not None and _error(cell) is not None:
            self.decided.add(block)
        return cell


def _task_block(chapter: Chapter, task: Task, answer: Answer | None, cells: list) -> Block:
    """Append the task's cells from its solution to its last check, ``answer`` in place of
    the solution; the names it defines are deleted after them. No ``answer``: the right
    one, whose names stay (later tasks use them) and are noted as answered."""
    source = chapter.nb.cells
    before = "_one_kernel_names = set(globals())"
    if answer is not None and answer.alone:
        hide = "globals().get('_one_kernel_answered', set()) & set(globals())"
        before += f"\n_one_kernel_hidden = {{k: globals().pop(k) for k in {hide}}}"
    cells.append(_code(before))
    block = Block(len(cells), [])
    for index in range(task.solution, max(task.cells) + 1):
        cell = source[index]
        if cell.cell_type != "code":
            continue
        if index in task.cells and index != task.solution:
            block.checks.append(len(cells))
        cells.append(_code(answer.code if answer is not None and index == task.solution else cell.source))
    new = "{k for k in set(globals()) - _one_kernel_names if not k.startswith('_')}"
    if answer is None:
        cells.append(_code(f"_one_kernel_answered = globals().get('_one_kernel_answered', set()) | {new}"))
        return block
    # One cell after the block (each cell costs a round trip to the kernel and the session's
    # hooks): what the answer replaced (torch's functions, the checks' helpers) put back first,
    # as a check cell's guard does, since the block's last checks may not have run; then a
    # worker process the answer started and left running ended (it would fail every later
    # check, the grader cannot see its work), as it would end with the answer's own kernel;
    # then the answer's names deleted, and those hidden from it shown again.
    # Each step runs whatever the one before raised (try/finally), as separate cells would.
    after = "_one_kernel_replaced = _grading.problems()"
    for step in (
        "from grader.kernel import containment as _c\nfor _p, _ in _c.lingering():\n    _p.kill()",
        f"for _one_kernel_name in {new}:\n    del globals()[_one_kernel_name]",
        *(["globals().update(_one_kernel_hidden)"] if answer.alone else []),
    ):
        after = f"try:\n{textwrap.indent(after, '    ')}\nfinally:\n{textwrap.indent(step, '    ')}"
    cells.append(_code(after))
    return block


def run_answers(
    chapter: Chapter, answers: dict[str, list[Answer]], folder: Path
) -> tuple[dict[tuple[str, Hashable], Verdict], dict[str, Verdict]]:
    """Each answer's verdict by (task number, key), and each task's right answer's verdict
    after them (which must pass), from one kernel started in ``folder``."""
    blocks: dict[tuple[str, Hashable], Block] = {}
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
        for answer in answers.get(task.number, []):
            blocks[(task.number, answer.key)] = _task_block(chapter, task, answer, cells)
        rights[task.number] = _task_block(chapter, task, None, cells)
        index = max(task.cells) + 1
    nb = nbformat.v4.new_notebook(cells=cells, metadata=chapter.nb.metadata)
    client = _UpToFirstError(
        nb,
        [*blocks.values(), *rights.values()],
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
