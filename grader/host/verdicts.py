"""Turn nbval's per-cell records into per-task verdicts with a message a learner can use.

A task passes when all its cells passed; otherwise the message is that of the first
failing cell: "not answered yet" for the exercise stub, the assertion's own message for
a failed check, the exception for a crashing solution, the reason for a lost kernel.
"""

from __future__ import annotations

from grader.host.assemble import CellKind, CellRole
from grader.host.notebook import Chapter, Task
from grader.host.records import CellRecord, Limit
from grader.host.results import Reason, TaskResult

# A sandbox limit that stopped a cell's code (sandbox.py): its reason and what to tell the learner.
LIMITS: dict[Limit, tuple[Reason, str]] = {
    "memory": (
        "out_of_memory",
        "out of memory: the code used more memory than the grader allows (all its processes together)",
    ),
    "processes": (
        "too_many_processes",
        "too many processes: the code started more processes or threads than the grader allows",
    ),
    "cpu_time": ("cpu_time", "out of CPU time: a process used more CPU time than the grader allows"),
}

WHERE: dict[CellKind, str] = {
    "solution": "your solution cell",
    "check": "the check on your answer",
    "hidden": "a hidden check on your answer",
}


def read_verdicts(
    chapter: Chapter,
    roles: list[CellRole],
    records: dict[int, CellRecord],
    graded: list[Task],
    cell_timeout: float,
    notes: list[str],
    retry_setup: bool = False,
) -> tuple[dict[str, TaskResult], str | None]:
    """Per-task verdicts from one nbval run, and the task that lost the kernel (if any).
    Tasks after a lost kernel get no verdict: they go into the next round. So do all of
    them when the kernel was lost before any task's cell ran and ``retry_setup`` is set:
    no learner code had run, so that was the machine's doing (a kernel that could not
    start on a busy machine), not the learner's."""
    fatal_cell = next((n for n in sorted(records) if "fatal" in records[n]), None)
    missing = [n for n in range(len(roles)) if n not in records]
    if fatal_cell is None and missing:
        fatal_cell = missing[0]  # the run was cut off without saying why: treat as lost
        records[fatal_cell] = {"cell": fatal_cell, "outcome": "failed", "error": None, "fatal": "timeout"}
    fatal_task = None
    if fatal_cell is not None:
        # The task whose cell, or a setup cell right after it, lost the kernel.
        before = [r.task for r in roles[: fatal_cell + 1] if r.kind in ("solution", "check", "hidden")]
        fatal_task = before[-1] if before else None
    verdicts: dict[str, TaskResult] = {}
    for task in graded:
        cells = [n for n, r in enumerate(roles) if r.task == task.number and r.kind != "replay"]
        if fatal_cell is not None and task.number == fatal_task:
            where = WHERE.get(roles[fatal_cell].kind, "the cell after your solution")
            verdicts[task.number] = _lost(task, records[fatal_cell], cell_timeout, where)
        elif fatal_cell is not None and min(cells) > fatal_cell:
            break
        else:
            verdicts[task.number] = _verdict(chapter, task, roles, records, cells)
    if fatal_cell is not None and fatal_task is None:
        # Lost before any task's cell: nothing the learner wrote had run yet.
        if retry_setup:
            _, why = _loss(records[fatal_cell], cell_timeout, "a setup cell")
            notes.append(f"{why}, before any exercise ran: graded again in a fresh kernel")
            return {}, None
        for task in graded:
            verdicts[task.number] = _lost(task, records[fatal_cell], cell_timeout, "a setup cell")
    _note_setup_failures(chapter, roles, records, notes)
    return verdicts, fatal_task


def _note_setup_failures(
    chapter: Chapter, roles: list[CellRole], records: dict[int, CellRecord], notes: list[str]
) -> None:
    """Cells before the first task run no learner code: a failure there is the
    instructor's or the machine's problem, worth telling whoever grades."""
    first_task = min(task.heading for task in chapter.tasks)
    for n, r in enumerate(roles):
        record = records.get(n)
        if (
            r.kind in ("setup", "guard")
            and (r.index is None or r.index < first_task)
            and record
            and record["outcome"] == "failed"
        ):
            where = f"setup cell {r.index}" if r.index is not None else "the grader's output guard"
            note = f"{where} of {chapter.path.name} failed: {_describe(record)}"
            if note not in notes:
                notes.append(note)


def _lost(task: Task, record: CellRecord, cell_timeout: float, where: str) -> TaskResult:
    reason, message = _loss(record, cell_timeout, where)
    return TaskResult(task.number, task.points, reason, message)


def _loss(record: CellRecord, cell_timeout: float, where: str) -> tuple[Reason, str]:
    """How the kernel was lost in the record's cell: the reason key and the learner's message."""
    limit = record.get("limit")
    if limit is not None:
        reason, message = LIMITS[limit]
        return reason, f"{message}, in {where}"
    if record.get("fatal") == "died":
        return "kernel_died", f"the Python kernel died (os._exit(), a crash, or out of memory) in {where}"
    return "timeout", f"timed out after {cell_timeout:g} s (an infinite loop?) in {where}"


def _describe(record: CellRecord) -> str:
    error = record.get("error")
    if error:
        return f"{error['ename']}: {error['evalue']}".strip()
    return record.get("problem", "failed").splitlines()[0]


def _verdict(
    chapter: Chapter, task: Task, roles: list[CellRole], records: dict[int, CellRecord], cells: list[int]
) -> TaskResult:
    """The verdict of a task whose cells all ran: the first cell that did not pass decides
    it (an error counts even where nbval let it pass: a learner's NBVAL_RAISES_EXCEPTION)."""
    for n in cells:
        record = records[n]
        if record["outcome"] == "passed" and not record.get("error"):
            continue
        reason, message = _failure(record, roles[n].kind, _passed_message(chapter, task))
        return TaskResult(task.number, task.points, reason, message)
    return TaskResult(task.number, task.points, "passed", _passed_message(chapter, task))


def _failure(record: CellRecord, kind: CellKind, verdict_line: str) -> tuple[Reason, str]:
    """Why a cell that did not pass fails its task, in the words a learner can act on:
    what any cell can run into first, then what its role (solution or check) makes of it
    (``verdict_line``: what the task's check prints when it passes)."""
    if record["outcome"] == "skipped":
        return "solution_error", "your solution cell was skipped: remove its NBVAL_SKIP comment"
    error = record.get("error")
    ename, evalue = (error["ename"], str(error["evalue"]).strip()) if error else ("", "")
    prefix = "hidden check: " if kind == "hidden" else ""
    anywhere = _failure_in_any_cell(ename, evalue)
    if anywhere is not None:
        return anywhere
    if kind == "solution":
        return "solution_error", f"your solution raised {ename}: {evalue}" if ename else _describe(record)
    return _check_failure(record, ename, evalue, prefix, verdict_line)


def _failure_in_any_cell(ename: str, evalue: str) -> tuple[Reason, str] | None:
    """Errors that mean the same wherever they happen: the exercise stub still in place,
    output past the guard's cap, memory past the sandbox's per-process limit."""
    if ename == "NotImplementedError":
        return "not_answered", f"not answered yet: the solution still raises NotImplementedError({evalue!r})"
    if ename == "OutputLimitExceeded":
        return "huge_output", f"huge output: {evalue}"
    if ename == "MemoryError":  # where the sandbox limits memory per process (sandbox.py)
        reason, message = LIMITS["memory"]
        return reason, f"{message}: {ename}"
    return None


def _check_failure(record: CellRecord, ename: str, evalue: str, prefix: str, verdict_line: str) -> tuple[Reason, str]:
    """A check that did not pass: its assertion's message, an error it met using the
    answer, or output other than the instructor's. That last is told in a sentence, never
    as nbval's diff: all that is compared is the check's own line (run.py), so the check
    either did not reach its end or the learner's code printed such a line itself."""
    if ename == "AssertionError":
        return "check_failed", prefix + (evalue or "a check failed (it gives no message)")
    if ename:
        return "check_error", f"{prefix}the check could not use your answer: {ename}: {evalue}"
    if record.get("problem") == "Cell outputs differ":
        return "output_differs", prefix + (
            f"the check did not print {verdict_line!r} exactly once, as it does when an answer passes: "
            "either your code printed a line such as that one itself (remove that print), or it stopped "
            "the check before its end without an error"
        )
    return "check_error", prefix + _describe(record)


def _passed_message(chapter: Chapter, task: Task) -> str:
    """A passed task's message is the last line its last check prints in the instructor's
    copy ('Exercise 1.1 passed'), the line the learner saw when their check passed."""
    last_check = chapter.nb.cells[task.checks[-1]]
    printed = [o.get("text", "") for o in last_check.get("outputs", []) if o.get("name") == "stdout"]
    lines = "".join(printed).strip().splitlines()
    return lines[-1] if lines else "passed"
