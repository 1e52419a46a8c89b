"""Grade submissions: rebuild each from the instructor's copy, run it through nbval,
turn nbval's per-cell verdicts into per-task verdicts.

The notebook nbval runs is the instructor's notebook with only the solution cells'
code taken from the submission (submission.py finds them, assemble.py builds it,
run.py runs nbval, verdicts.py reads the result). A task passes when its solution cell
runs without error and its check and hidden cells run without error and print what
the instructor's copy printed.

One failing task never hides the others. An ordinary failure (an exception, a wrong
output) leaves the kernel usable, and nbval goes on with the next cell. A lost kernel
(timeout, crash) is different: the plugin in nbval_plugin.py stops the run, that task
fails with the reason, and grading resumes in a fresh kernel with the tasks after it,
having first replayed the setup cells and the earlier tasks' solution cells (their
verdicts are already known; they run only to rebuild the state later tasks use). This
costs one kernel start per lost kernel instead of one per task.

Each submission has its rounds to itself: a round is one nbval process with one kernel,
in a sandbox of its own (sandbox.py), and several submissions are graded at once
(``--jobs``, one per core by default). A submission can then end, crash or exhaust only
its own runs; its classmates' verdicts come from runs it cannot see.
"""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from grader.assemble import grading_notebook
from grader.errors import GraderError
from grader.notebook import Chapter, Task, role
from grader.results import SubmissionResult, TaskResult
from grader.run import run_nbval, stop_all
from grader.sandbox import Sandbox
from grader.scan import findings, module_aliases
from grader.submission import chapter_of, match_solutions, read_submission
from grader.verdicts import read_verdicts


@dataclass
class _Grading:
    """One submission on its way through the grading rounds."""

    result: SubmissionResult
    chapter: Chapter
    answers: dict[str, str | None]
    decided: dict[str, TaskResult]
    lost: set[str]  # tasks whose solution must not run again
    setup_retried: bool = False  # a round already lost the kernel before any task ran

    @property
    def graded(self) -> list[Task]:
        return [t for t in self.chapter.tasks if t.number not in self.decided]

    @property
    def replayed(self) -> list[Task]:
        return [t for t in self.chapter.tasks if t.number in self.decided and t.number not in self.lost]


def grade_files(
    paths: list[Path],
    chapters: dict[str, Chapter],
    cell_timeout: float,
    sandbox: Sandbox | None = None,
    jobs: int = 1,
    progress: bool = False,
) -> list[SubmissionResult]:
    """Grade submissions; bad input becomes SubmissionResult.error, never an exception.

    Each submission goes through its own rounds, one nbval process and one kernel (in a
    sandbox of its own, unless ``sandbox`` is None) per round, so that nothing one
    submission does reaches another's grading; ``jobs`` submissions are graded at once,
    and ``progress`` shows a bar on stderr. Returns when every run has ended and every
    sandbox is gone."""
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
        result.answers = answers  # for the feedback file (report.py never writes them)
        decided = _unrunnable(chapter, answers)
        gradings.append(_Grading(result, chapter, answers, decided, set(decided)))
    with (
        ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="grader") as pool,
        tqdm(total=len(results), desc="grading", unit="submission", file=sys.stderr, disable=not progress) as bar,
    ):
        bar.update(len(results) - len(gradings))  # nothing to run
        futures = [pool.submit(_grade, n, grading, cell_timeout, sandbox) for n, grading in enumerate(gradings)]
        try:
            for future in as_completed(futures):
                future.result()
                bar.update()
        except BaseException:  # Ctrl-C, or a run that stops grading (GraderError): end them all
            pool.shutdown(wait=False, cancel_futures=True)
            stop_all()
            raise
    return results


def _grade(n: int, grading: _Grading, cell_timeout: float, sandbox: Sandbox | None) -> None:
    """All the rounds of one submission (see the module's doc)."""
    name = f"{n:04d}_{grading.chapter.name}"
    while grading.graded:
        nb, roles = grading_notebook(grading.chapter, grading.answers, grading.graded, grading.replayed)
        records = run_nbval(name, nb, cell_timeout, sandbox)
        verdicts, fatal_task = read_verdicts(
            grading.chapter,
            roles,
            records,
            grading.graded,
            cell_timeout,
            grading.result.notes,
            retry_setup=not grading.setup_retried,
        )
        if not verdicts:  # lost before any task: once more, in the next round
            if grading.setup_retried:
                raise GraderError("internal error: a grading round decided no task")  # pragma: no cover
            grading.setup_retried = True
        grading.decided.update(verdicts)
        if fatal_task is not None:
            grading.lost.add(fatal_task)
    grading.result.tasks = [grading.decided[task.number] for task in grading.chapter.tasks]


def _unrunnable(chapter: Chapter, answers: dict[str, str | None]) -> dict[str, TaskResult]:
    """Verdicts decided before anything runs: tasks with no solution cell, and solutions
    that reach into the checking machinery (see scan.py)."""
    # Names the checks rely on without importing them: the setup cells' imports, and the
    # learner's own (checks import anything else they need themselves).
    setup_code = [c.source for c in chapter.nb.cells if role(c) == "setup"]
    modules = module_aliases(setup_code + [code for code in answers.values() if code])
    decided = {}
    for task in chapter.tasks:
        code = answers[task.number]
        if code is None:
            decided[task.number] = TaskResult(
                task.number,
                task.points,
                "unmatched",
                (
                    f"no solution cell found for Exercise {task.number}: it was deleted, or moved "
                    "away from its heading. Put your answer back in the exercise's solution cell."
                ),
            )
        elif flags := findings(code, modules):
            decided[task.number] = TaskResult(
                task.number,
                task.points,
                "flagged",
                (
                    "not run: the solution reaches into the checking machinery ("
                    + "; ".join(flags)
                    + "). Answers must not change modules, builtins or the kernel."
                ),
            )
    return decided
