"""Grade submissions: rebuild each from the instructor's copy, run it through nbval,
turn nbval's per-cell verdicts into per-task verdicts.

The notebook nbval runs is the instructor's notebook with only the solution cells'
code taken from the submission (see submission.py), preceded by a cell that installs
output_guard. A task passes when its solution cell runs without error and its check
and hidden cells run without error and print what the instructor's copy printed.

One failing task never hides the others. An ordinary failure (an exception, a wrong
output) leaves the kernel usable, and nbval goes on with the next cell. A lost kernel
(timeout, crash) is different: the plugin in nbval_plugin.py stops the run, that task
fails with the reason, and grading resumes in a fresh kernel with the tasks after it,
having first replayed the setup cells and the earlier tasks' solution cells (their
verdicts are already known; they run only to rebuild the state later tasks use). This
costs one kernel start per lost kernel instead of one per task.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from grader.errors import GraderError
from grader.nbval_plugin import GRACE
from grader.notebook import Chapter, Task, role
from grader.scan import findings, module_aliases
from grader.submission import chapter_of, match_solutions, read_submission

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
SANITIZE = PACKAGE_ROOT / "tests" / "nbval-sanitize.cfg"
CELL_TIMEOUT = 60.0
GUARD = "from grader.output_guard import install\ninstall()\ndel install"


@dataclass
class TaskResult:
    number: str
    points: float
    passed: bool
    message: str

    @property
    def score(self) -> float:
        return self.points if self.passed else 0.0


@dataclass
class SubmissionResult:
    path: Path
    chapter: str | None = None
    tasks: list[TaskResult] = field(default_factory=list)
    error: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.error is None and all(task.passed for task in self.tasks)


@dataclass
class CellRole:
    """What a code cell of the grading notebook is, to read nbval's verdict on it."""

    kind: str  # guard, setup, replay, solution, check, hidden
    task: str | None
    index: int | None  # the cell's index in the instructor notebook


@dataclass
class _Grading:
    """One submission on its way through the grading rounds."""

    result: SubmissionResult
    chapter: Chapter
    answers: dict[str, str | None]
    decided: dict[str, TaskResult]
    lost: set[str]  # tasks whose solution must not run again

    @property
    def graded(self) -> list[Task]:
        return [t for t in self.chapter.tasks if t.number not in self.decided]

    @property
    def replayed(self) -> list[Task]:
        return [t for t in self.chapter.tasks if t.number in self.decided and t.number not in self.lost]


def grade_files(paths: list[Path], chapters: dict[str, Chapter],
                cell_timeout: float = CELL_TIMEOUT) -> list[SubmissionResult]:
    """Grade submissions; bad input becomes SubmissionResult.error, never an exception.

    All submissions still being graded go through one pytest process per round (each
    notebook in its own fresh kernel): starting pytest and nbval costs seconds, a
    kernel less. A round in which some kernel dies ends early; submissions it did not
    reach simply go into the next round."""
    results, gradings = [], []
    for path in paths:
        result = SubmissionResult(Path(path))
        results.append(result)
        try:
            submission = read_submission(path)
            chapter = chapter_of(submission, chapters)
        except GraderError as error:
            result.error = str(error)
            continue
        result.chapter = chapter.name
        answers = match_solutions(chapter, submission)
        decided = _unrunnable(chapter, answers)
        gradings.append(_Grading(result, chapter, answers, decided, set(decided)))
    while pending := [g for g in gradings if g.graded]:
        builds = {f"{n:04d}_{g.chapter.name}": (g, *grading_notebook(g.chapter, g.answers, g.graded, g.replayed))
                  for n, g in enumerate(pending)}
        records = run_nbval({name: nb for name, (_, nb, _) in builds.items()}, cell_timeout)
        progress = False
        for name, (grading, _, roles) in builds.items():
            if name not in records:
                continue  # the round ended before this notebook's turn
            progress = True
            verdicts, fatal_task = read_verdicts(grading.chapter, roles, records[name], grading.graded,
                                                 cell_timeout, grading.result.notes)
            grading.decided.update(verdicts)
            if fatal_task is not None:
                grading.lost.add(fatal_task)
        if not progress:
            raise GraderError("internal error: a grading round decided no task")  # pragma: no cover
    for grading in gradings:
        grading.result.tasks = [grading.decided[task.number] for task in grading.chapter.tasks]
    return results


def _unrunnable(chapter: Chapter, answers: dict[str, str | None]) -> dict[str, TaskResult]:
    """Verdicts decided before anything runs: tasks with no solution cell, and solutions
    that reach into the checking machinery (see scan.py)."""
    instructor_code = [c.source for c in chapter.nb.cells if c.cell_type == "code"]
    modules = module_aliases(instructor_code + [code for code in answers.values() if code])
    decided = {}
    for task in chapter.tasks:
        code = answers[task.number]
        if code is None:
            decided[task.number] = TaskResult(task.number, task.points, False, (
                f"no solution cell found for Exercise {task.number}: it was deleted, or moved "
                "away from its heading. Put your answer back in the exercise's solution cell."))
        elif flags := findings(code, modules):
            decided[task.number] = TaskResult(task.number, task.points, False, (
                "not run: the solution reaches into the checking machinery ("
                + "; ".join(flags) + "). Answers must not change modules, builtins or the kernel."))
    return decided


def grading_notebook(chapter: Chapter, answers: dict[str, str | None], graded: list[Task],
                     replayed: list[Task]) -> tuple[NotebookNode, list[CellRole]]:
    """The notebook nbval runs, and the role of each of its code cells in order."""
    task_of = chapter.task_of_cell()
    graded_numbers = {t.number for t in graded}
    replayed_numbers = {t.number for t in replayed}
    guard = nbformat.v4.new_code_cell(GUARD, id="grader-output-guard")
    cells, roles = [guard], [CellRole("guard", None, None)]
    for index, instructor_cell in enumerate(chapter.nb.cells):
        kind = role(instructor_cell)
        if instructor_cell.cell_type != "code":
            continue
        cell = nbformat.from_dict(json.loads(json.dumps(instructor_cell)))
        task = task_of.get(index)
        if task is None:
            _ignore_output(cell)
            cells.append(cell)
            roles.append(CellRole("setup", None, index))
        elif task.number in replayed_numbers and kind == "solution":
            cell.source, cell.outputs, cell.execution_count = answers[task.number], [], None
            cells.append(cell)
            roles.append(CellRole("replay", task.number, index))
        elif task.number in graded_numbers:
            if kind == "solution":
                cell.source, cell.outputs, cell.execution_count = answers[task.number], [], None
            else:
                # Warnings never cost a point: output_guard drops stderr, so drop it here too.
                cell.outputs = [o for o in cell.outputs if o.get("name") != "stderr"]
                if not cell.outputs:
                    _ignore_output(cell)  # nothing to compare: only errors count
            cells.append(cell)
            roles.append(CellRole(kind, task.number, index))
    nb = nbformat.v4.new_notebook(cells=cells, metadata=json.loads(json.dumps(chapter.nb.metadata)))
    nb.metadata.pop("widgets", None)
    return nb, roles


def _ignore_output(cell: NotebookNode) -> None:
    tags = cell.metadata.setdefault("tags", [])
    if "nbval-ignore-output" not in tags:
        tags.append("nbval-ignore-output")


def sanitize_rules(notebooks: list[NotebookNode]) -> str:
    """The project's sanitize file plus one rule: drop every line of output that no check
    prints, so a learner's debug print inside a function the check calls costs nothing
    while the check's own line ('Exercise 1.1 passed') is still compared."""
    project = SANITIZE.read_text(encoding="utf-8") if SANITIZE.exists() else ""
    patterns = re.findall(r"^regex: (.*)$\n^replace: (.*)$", project, flags=re.MULTILINE)
    kept = set()
    for cell in (cell for nb in notebooks for cell in nb.cells):
        if cell.cell_type != "code" or "nbval-ignore-output" in cell.metadata.get("tags", []):
            continue
        for output in cell.outputs:
            texts = [output.get("text", "")] + [v for v in output.get("data", {}).values() if isinstance(v, str)]
            for text in texts:
                for regex, replace in patterns:
                    text = re.sub(regex, replace, text)
                kept.update(text.split("\n"))
    if not kept:
        return project
    alternatives = "|".join(sorted(re.escape(line) for line in kept))
    return (project + "\n[grader: keep only lines that a check prints]\n"
            f"regex: (?m)^(?!(?:{alternatives})$).*(?:\\n|$)\nreplace: \n")


def run_nbval(notebooks: dict[str, NotebookNode], cell_timeout: float) -> dict[str, dict[int, dict]]:
    """Run nbval on the notebooks (a fresh kernel each), isolated from any project's
    pytest configuration. Returns notebook name -> nbval cell number -> the plugin's
    record; a notebook the run did not reach is absent."""
    with tempfile.TemporaryDirectory(prefix="grader-") as tmp:
        folder = Path(tmp)
        paths = []
        for name, nb in notebooks.items():
            paths.append(folder / f"{name}.ipynb")
            nbformat.write(nb, paths[-1])
        sanitize, results = folder / "sanitize.cfg", folder / "results.jsonl"
        sanitize.write_text(sanitize_rules(list(notebooks.values())), encoding="utf-8")
        (folder / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        command = [
            sys.executable, "-m", "pytest", *map(str, paths), "-q", "-c", str(folder / "pytest.ini"),
            "--rootdir", str(folder), "-o", "addopts=", "-p", "no:cacheprovider",
            "-p", "nbval.plugin", "-p", "grader.nbval_plugin", "--nbval", "--nbval-current-env",
            "--nbval-sanitize-with", str(sanitize),
            "--nbval-cell-timeout", str(cell_timeout), "--grader-results", str(results),
        ]
        env = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_")}
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PACKAGE_ROOT), env.get("PYTHONPATH")]))
        log_path = folder / "pytest.log"
        code_cells = sum(cell.cell_type == "code" for nb in notebooks.values() for cell in nb.cells)
        deadline = code_cells * (cell_timeout + GRACE) + 60 * (1 + len(notebooks))
        with log_path.open("w") as log:
            process = subprocess.Popen(command, cwd=folder, stdout=log, stderr=subprocess.STDOUT,
                                       env=env, start_new_session=True)
            try:
                process.wait(timeout=deadline)
            except subprocess.TimeoutExpired:
                _kill(process.pid)
                process.wait()
        lines = results.read_text(encoding="utf-8").splitlines() if results.exists() else []
        records: dict[str, dict[int, dict]] = {}
        for line in map(json.loads, lines):
            if "kernel_pid" in line:
                _kill(line["kernel_pid"])  # normally gone already; never leave one behind
                continue
            cells = records.setdefault(Path(line["file"]).stem, {})
            if line["cell"] not in cells or "fatal" in line:
                cells[line["cell"]] = line
        if not records:
            log = log_path.read_text(encoding="utf-8", errors="replace")[-3000:]
            raise GraderError(f"nbval did not run the notebooks (pytest exit code {process.returncode}):\n{log}")
        return records


def _kill(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


def read_verdicts(chapter: Chapter, roles: list[CellRole], records: dict[int, dict], graded: list[Task],
                  cell_timeout: float, notes: list[str]) -> tuple[dict[str, TaskResult], str | None]:
    """Per-task verdicts from one nbval run, and the task that lost the kernel (if any)."""
    fatal_cell = next((n for n in sorted(records) if "fatal" in records[n]), None)
    if fatal_cell is None and len(records) < len(roles):
        fatal_cell = len(records)  # the run ended early without saying why: treat as lost
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
