"""Grade submissions: rebuild each from the instructor's copy, run it through nbval,
turn nbval's per-cell verdicts into per-task verdicts.

The notebook nbval runs is the instructor's notebook with only the solution cells'
code taken from the submission (submission.py finds them, assemble.py builds it,
run.py runs nbval, verdicts.py reads the result). A task passes when its solution cell
runs without error and its check and hidden cells run without error and print what
the instructor's copy printed.

One failing task never hides the others. An ordinary failure (an exception, a wrong
output) leaves the kernel usable, and nbval goes on with the next cell. A lost kernel
(timeout, crash) is different: the plugin (grader/plugin/recorder.py) stops the run, that task
fails with the reason, and grading resumes in a fresh kernel with the tasks after it,
having first replayed the setup cells and the earlier tasks' solution cells (their
verdicts are already known; they run only to rebuild the state later tasks use). This
costs one kernel start per lost kernel instead of one per task.

One class is graded on one chapter: the one named by ``--chapter``, else the one most
submissions are the exercises of. A notebook of another chapter is refused for its
student (not graded against its own chapter, whose points would then be mixed into the
class's gradebook). ``--chapter each`` grades every notebook against its own chapter: a
learner checking all their notebooks, the course's check of its solutions.

Each submission has its rounds to itself: a round is one nbval process with one kernel,
in a sandbox of its own (sandbox.py), and several submissions are graded at once
(``--jobs``, one per core by default). A submission can then end, crash or exhaust only
its own runs; its classmates' verdicts come from runs it cannot see.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from time import monotonic
from typing import NamedTuple

from tqdm import tqdm

from grader.host.assemble import grading_notebook
from grader.host.errors import GraderError
from grader.host.files import links_out, real_path
from grader.host.identity import chapter_named
from grader.host.notebook import Chapter, Task, role
from grader.host.results import EACH, SubmissionResult, TaskResult
from grader.host.roster import fold
from grader.host.run import run_nbval, stop_all
from grader.host.sandbox import Sandbox
from grader.host.scan import findings, module_aliases
from grader.host.submission import (
    Submission,
    chapter_of,
    markdown_solutions,
    match_solutions,
    read_submission,
)
from grader.host.verdicts import read_verdicts


@dataclass
class _Grading:
    """One submission on its way through the grading rounds."""

    result: SubmissionResult
    chapter: Chapter
    answers: dict[str, str | None]
    decided: dict[str, TaskResult]
    lost: set[str]  # tasks whose solution must not run again
    setup_retried: bool = False  # a round already lost the kernel before any task ran
    started: float | None = None  # monotonic(), when its first round started

    @property
    def graded(self) -> list[Task]:
        return [t for t in self.chapter.tasks if t.number not in self.decided]

    @property
    def replayed(self) -> list[Task]:
        return [t for t in self.chapter.tasks if t.number in self.decided and t.number not in self.lost]


class ClassGrading(NamedTuple):
    results: list[SubmissionResult]
    chapter: str | None  # the class's chapter; None with --chapter each, or nothing readable


def choose_chapter(found: list[str], wanted: str | None, names: list[str]) -> str | None:
    """The class's chapter: ``wanted`` (a chapter's name, or a prefix only it has), else the
    chapter most of the submissions are (``found``: each one's chapter, by its contents or,
    where it could not be read, by its name); None when nothing was found. A tie, or a
    ``wanted`` that names no chapter or several, is refused with what to pass instead."""
    if wanted is not None:
        if wanted in names:
            return wanted
        fitting = [name for name in names if name.startswith(wanted)]
        if len(fitting) == 1:
            return fitting[0]
        if fitting:
            raise GraderError(f"--chapter {wanted} fits several chapters ({', '.join(fitting)}): name one of them.")
        raise GraderError(
            f"--chapter {wanted}: no such chapter among the instructor notebooks (chapters: {', '.join(names)})."
        )
    counts = Counter(found).most_common()
    if not counts:
        return None
    if len(counts) > 1 and counts[0][1] == counts[1][1]:
        listed = ", ".join(f"{name} ({count})" for name, count in sorted(counts, key=lambda c: (-c[1], c[0])))
        raise GraderError(
            f"the submissions are the exercises of several chapters, none of them the most: {listed}. A class "
            f"is graded on one chapter: pass --chapter NAME (or --chapter {EACH} to grade each notebook against "
            "its own chapter, without a gradebook)."
        )
    return counts[0][0]


def _named_after(unread: list[Path], chapters: list[str]) -> list[str]:
    """The chapters the files that could not be read are named after (``01_tensors.ipynb``,
    ``Copy of 01_tensors (1).ipynb``): an empty or damaged file still says which chapter its
    student handed in, and counts toward the class's chapter as the others' contents do."""
    by_folded = {fold(name): name for name in chapters}
    folded = set(by_folded)
    named = (chapter_named(path, folded) for path in unread)
    return [by_folded[name] for name in named if name]


def grade_files(
    paths: list[Path],
    chapters: dict[str, Chapter],
    cell_timeout: float,
    sandbox: Sandbox | None = None,
    jobs: int = 1,
    progress: bool = False,
    chapter: str | None = None,
    time_limit: float | None = None,
) -> ClassGrading:
    """Grade submissions as one class (``chapter``: see choose_chapter, or EACH); bad input
    becomes SubmissionResult.error, never an exception, except a class whose chapter
    cannot be decided (GraderError, before anything runs). So does an unexpected exception
    on one submission (a bug, or input nothing foresaw): that submission is not graded,
    its traceback goes to the instructor's notes, and its classmates are graded as ever.

    Each submission goes through its own rounds, one nbval process and one kernel (in a
    sandbox of its own, unless ``sandbox`` is None) per round, so that nothing one
    submission does reaches another's grading; ``jobs`` submissions are graded at once,
    and ``progress`` shows a bar on stderr. ``time_limit``: the seconds all of one
    submission's rounds may take together (None: no limit but the cells'). Returns when
    every run has ended and every sandbox is gone."""
    results, read = _read_all(paths, chapters)
    gradings = []
    unread = [r.path for r in results if r.error is not None]
    handed = [c.name for _, _, c in read] + _named_after(unread, list(chapters))
    name = None if chapter == EACH else choose_chapter(handed, chapter, sorted(chapters))
    for result, submission, found in read:
        if name is not None and found.name != name:
            _refuse(result, found.name, name)
            continue
        try:
            gradings.append(_prepare(result, submission, found))
        except Exception as error:
            _failed(result, error)
    with (
        ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="grader") as pool,
        tqdm(total=len(results), desc="grading", unit="submission", file=sys.stderr, disable=not progress) as bar,
    ):
        bar.update(len(results) - len(gradings))  # nothing to run
        futures = [
            pool.submit(_grade_or_fail, n, grading, cell_timeout, sandbox, time_limit)
            for n, grading in enumerate(gradings)
        ]
        try:
            for future in as_completed(futures):
                future.result()
                bar.update()
        except BaseException:  # Ctrl-C, or a run that stops grading (GraderError): end them all
            pool.shutdown(wait=False, cancel_futures=True)
            stop_all()
            raise
    return ClassGrading(results, name)


def _read_all(
    paths: list[Path], chapters: dict[str, Chapter]
) -> tuple[list[SubmissionResult], list[tuple[SubmissionResult, Submission, Chapter]]]:
    """A result per path, and the submissions read, with their chapter. What cannot be read
    is its result's error, for its student."""
    results = []
    read: list[tuple[SubmissionResult, Submission, Chapter]] = []
    away = links_out([Path(path) for path in paths], list(chapters))
    for path in paths:
        result = SubmissionResult(Path(path))
        results.append(result)
        if result.path in away:
            _linked_away(result, away[result.path])
            continue
        try:
            read.append(_read(result, chapters))
        except GraderError as error:
            result.error = private(str(error), result.path)
        except Exception as error:
            _failed(result, error)
    return results, read


def _read(result: SubmissionResult, chapters: dict[str, Chapter]) -> tuple[SubmissionResult, Submission, Chapter]:
    """Read one submission and decide its chapter; what reading it took (a zip, replaced
    characters, a misleading file name) goes to the student's page and the notes."""
    submission = read_submission(result.path)
    try:
        return result, submission, chapter_of(submission, chapters)
    finally:
        result.notices = submission.notices
        result.notes.extend(submission.notices)


def _linked_away(result: SubmissionResult, target: Path) -> None:
    """A submission that is a link (unpacked from a student's archive, or committed to their
    repository) to a file outside its student's own folder: not read, since that file is not
    what the student handed in (the instructor's solutions, a classmate's or another class's
    notebook, whose code the student's page would show). The student is told; the
    instructor is told where it leads."""
    result.error = (
        "a link to a file outside the student's own folder, not a notebook (the grader follows no link "
        "out of a student's folder). Hand in the exercise notebook itself, not a link to it."
    )
    result.notes.append(f"a link to {target}, outside the student's own folder: not read")


def _prepare(result: SubmissionResult, submission: Submission, chapter: Chapter) -> _Grading:
    """A submission of the class's chapter, its answers found and what cannot run decided."""
    result.chapter = chapter.name
    answers = match_solutions(chapter, submission)
    result.answers = answers  # for the feedback file (report.py never writes them)
    decided = _unrunnable(chapter, answers, markdown_solutions(chapter, submission))
    return _Grading(result, chapter, answers, decided, set(decided))


def _failed(result: SubmissionResult, error: Exception) -> None:
    """The grader failed on this submission, not the student: the student is told it is not
    their doing, and the instructor gets the traceback (the report's notes, stderr) and a
    non-zero exit status (2) to look at it and grade it again."""
    result.tasks = []
    result.chapter = None
    result.error = (
        "the grader failed on this notebook (an internal error, not a problem with your work). "
        "Your instructor has the details and will grade it again."
    )
    result.internal_error = "".join(traceback.format_exception(error))
    result.notes.append(
        f"internal error, the grader's own failure: {type(error).__name__}: {error}\n{result.internal_error}"
    )


def _refuse(result: SubmissionResult, found: str, expected: str) -> None:
    """Another chapter's notebook: not graded, and the student told what to hand in."""
    result.error = (
        f"This is the exercise notebook of chapter {found}; this assignment is chapter {expected}. "
        f"Hand in your {expected} notebook."
    )
    result.handed_in_chapter, result.expected_chapter = found, expected


def private(message: str, path: Path) -> str:
    """A message about a submission without the path it was given by (which may hold the
    instructor's folders): the file's name instead. It goes on the student's page."""
    message = message.removeprefix(f"{path}: ")
    for where in sorted({str(path), os.path.abspath(path), str(real_path(path))}, key=len, reverse=True):
        message = message.replace(where, path.name)
    return message


def _grade_or_fail(
    n: int, grading: _Grading, cell_timeout: float, sandbox: Sandbox | None, time_limit: float | None
) -> None:
    """_grade, with an unexpected exception made this submission's "not graded" row (see
    _failed). A GraderError still stops the whole run: it says the grading itself cannot go
    on (nbval missing, grading interrupted), which would fail every submission alike."""
    try:
        _grade(n, grading, cell_timeout, sandbox, time_limit)
    except GraderError:
        raise
    except Exception as error:
        _failed(grading.result, error)


def _grade(n: int, grading: _Grading, cell_timeout: float, sandbox: Sandbox | None, time_limit: float | None) -> None:
    """All the rounds of one submission (see the module's doc), within its ``time_limit``."""
    name = f"{n:04d}_{grading.chapter.name}"
    grading.started = monotonic()
    while grading.graded:
        left = None if time_limit is None else time_limit - (monotonic() - grading.started)
        if left is not None and left <= 0:
            assert time_limit is not None
            _out_of_time(grading, time_limit, None, {})
            break
        nb, roles = grading_notebook(grading.chapter, grading.answers, grading.graded, grading.replayed)
        records = run_nbval(name, nb, cell_timeout, sandbox, time_limit=left)
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
        if time_limit is not None and monotonic() - grading.started >= time_limit:
            _out_of_time(grading, time_limit, fatal_task, verdicts)
            break
    grading.result.tasks = [grading.decided[task.number] for task in grading.chapter.tasks]


def _out_of_time(
    grading: _Grading, time_limit: float, fatal_task: str | None, cut_round: dict[str, TaskResult]
) -> None:
    """The submission's time is spent: the tasks of the round it cut off that read as lost
    (a timeout, a dead kernel: the grader killed the run) and every task not yet run say
    so instead, with the time used."""
    used = monotonic() - (grading.started or 0.0)
    limit = f"({time_limit:g} s for the whole notebook; {used:.0f} s used)"
    advice = "Make your code faster: each exercise should run in seconds."
    lost = [number for number, verdict in cut_round.items() if verdict.reason in ("timeout", "kernel_died")]
    for task in [t for t in grading.chapter.tasks if t.number in lost] + grading.graded:
        what = "stopped" if task.number == fatal_task else "not run"
        during = " while this task ran" if task.number == fatal_task else ""
        grading.decided[task.number] = TaskResult(
            task.number,
            task.points,
            "time_limit",
            f"{what}: the notebook's time limit was reached{during} {limit}. {advice}",
        )


def _unrunnable(
    chapter: Chapter, answers: dict[str, str | None], markdown: set[str] | frozenset[str] = frozenset()
) -> dict[str, TaskResult]:
    """Verdicts decided before anything runs: tasks with no solution cell (``markdown``:
    those whose solution cell became a markdown cell, which the learner can change back),
    and solutions that reach into the checking machinery (see scan.py)."""
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
                _unmatched(task.number, task.number in markdown),
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


def _unmatched(number: str, markdown: bool) -> str:
    """Why a task has no solution cell, and what the learner does about it."""
    if markdown:
        return (
            f"the solution cell of Exercise {number} became a markdown cell, so it cannot run. In Jupyter, "
            "select it and make it a code cell again (press Y, or choose Code in the toolbar's cell type menu)."
        )
    return (
        f"no solution cell found for Exercise {number}: it was deleted, or moved "
        "away from its heading. Put your answer back in the exercise's solution cell."
    )
