"""Turn nbval's per-cell records into per-task verdicts with a message a learner can use.

A task passes when all its cells passed; otherwise the message is that of the first
failing cell: "not answered yet" for the exercise stub, the assertion's own message for
a failed check, the exception for a crashing solution, the reason for a lost kernel.
"""

from __future__ import annotations

from grader.assemble import CellRole
from grader.notebook import Chapter, Task
from grader.results import TaskResult


def read_verdicts(chapter: Chapter, roles: list[CellRole], records: dict[int, dict], graded: list[Task],
                  cell_timeout: float, notes: list[str]) -> tuple[dict[str, TaskResult], str | None]:
    """Per-task verdicts from one nbval run, and the task that lost the kernel (if any)."""
    fatal_cell = next((n for n in sorted(records) if "fatal" in records[n]), None)
    missing = [n for n in range(len(roles)) if n not in records]
    if fatal_cell is None and missing:
        fatal_cell = missing[0]  # the run was cut off without saying why: treat as lost
        records[fatal_cell] = {"cell": fatal_cell, "outcome": "failed", "error": None, "fatal": "timeout"}
    fatal_task = None
    if fatal_cell is not None:
        # The task whose cell (or a setup cell right after it) lost the kernel.
        before = [r.task for r in roles[: fatal_cell + 1] if r.kind in ("solution", "check", "hidden")]
        fatal_task = before[-1] if before else None
    verdicts: dict[str, TaskResult] = {}
    for task in graded:
        cells = [n for n, r in enumerate(roles) if r.task == task.number and r.kind != "replay"]
        if fatal_cell is not None and min(cells) > fatal_cell and task.number != fatal_task:
            break  # not reached in this run
        if task.number == fatal_task:
            verdicts[task.number] = _lost(task, roles, records[fatal_cell], cell_timeout)
        else:
            verdicts[task.number] = _verdict(chapter, task, roles, records, cells)
    if fatal_cell is not None and fatal_task is None:
        reason = _lost_reason(records[fatal_cell], cell_timeout)
        for task in graded:
            verdicts[task.number] = TaskResult(task.number, task.points, False,
                                               f"could not be graded: {reason} in a setup cell")
    first_task = min(task.heading for task in chapter.tasks)
    for n, r in enumerate(roles):
        record = records.get(n)
        # Cells before the first task run no learner code: a failure there is the
        # instructor's or the machine's problem, worth telling whoever grades.
        if r.kind in ("setup", "guard") and (r.index is None or r.index < first_task) and \
                record and record["outcome"] == "failed":
            where = f"setup cell {r.index}" if r.index is not None else "the grader's output guard"
            note = f"{where} of {chapter.path.name} failed: {_describe(record)}"
            if note not in notes:
                notes.append(note)
    return verdicts, fatal_task


def _lost_reason(record: dict, cell_timeout: float) -> str:
    if record.get("fatal") == "died":
        return "the Python kernel died (os._exit(), a crash, or out of memory)"
    return f"timed out after {cell_timeout:g} s (an infinite loop?)"


def _lost(task: Task, roles: list[CellRole], record: dict, cell_timeout: float) -> TaskResult:
    kind = roles[record["cell"]].kind
    where = {"solution": "your solution cell", "check": "the check on your answer",
             "hidden": "a hidden check on your answer"}.get(kind, "the cell after your solution")
    return TaskResult(task.number, task.points, False, f"{_lost_reason(record, cell_timeout)} in {where}")


def _describe(record: dict) -> str:
    error = record.get("error")
    if error:
        return f"{error['ename']}: {error['evalue']}".strip()
    return record.get("problem", "failed").splitlines()[0]


def _verdict(chapter: Chapter, task: Task, roles: list[CellRole], records: dict[int, dict],
             cells: list[int]) -> TaskResult:
    def fail(message: str) -> TaskResult:
        return TaskResult(task.number, task.points, False, message)

    for n in cells:
        record, kind = records.get(n), roles[n].kind
        if record is None:
            return fail("not graded: nbval did not run this task's cells")
        if record["outcome"] == "passed":
            continue
        error = record.get("error") or {}
        ename, evalue = error.get("ename", ""), str(error.get("evalue", "")).strip()
        if ename == "NotImplementedError":
            return fail(f"not answered yet: the solution still raises NotImplementedError({evalue!r})")
        if ename == "OutputLimitExceeded":
            return fail(f"huge output: {evalue}")
        prefix = "hidden check: " if kind == "hidden" else ""
        if kind == "solution":
            return fail(f"your solution raised {ename}: {evalue}" if ename else _describe(record))
        if ename == "AssertionError":
            return fail(prefix + (evalue or "a check failed (it gives no message)"))
        if ename:
            return fail(f"{prefix}the check could not use your answer: {ename}: {evalue}")
        if record.get("problem") == "Cell outputs differ":
            return fail(f"{prefix}the check printed something other than expected:\n{record.get('diff', '')}".strip())
        return fail(prefix + _describe(record))
    last_check = chapter.nb.cells[task.checks[-1]]
    printed = [o.get("text", "") for o in last_check.get("outputs", []) if o.get("name") == "stdout"]
    lines = "".join(printed).strip().splitlines()
    return TaskResult(task.number, task.points, True, lines[-1] if lines else "passed")
