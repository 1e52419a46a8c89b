"""Command line: ``python -m grader release`` and ``python -m grader grade SUBMISSION.ipynb ...``."""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable, Collection, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grader.host.errors import GraderError
from grader.host.feedback import earlier_pages
from grader.host.files import links_out, real_path
from grader.host.gradebook import FORMATS, tasks_path
from grader.host.identity import lms_student, owners
from grader.host.lock import file_lock, folder_lock
from grader.host.notebook import COURSE_ROOT, chapter_paths, load_chapter
from grader.host.release import release
from grader.host.results import EACH
from grader.host.sandbox import GiB, Limits, fallback_note
from grader.host.sandbox import prepare as prepare_sandbox
from grader.host.submission import refuse_class_archives
from grader.kernel.output_guard import LIMIT as OUTPUT_LIMIT

if TYPE_CHECKING:
    from grader.host.grade import ClassGrading
    from grader.host.notebook import Chapter
    from grader.host.outputs import Outputs

CELL_TIMEOUT = 60.0  # seconds; generous: course cells take well under one
# Seconds all of one submission's rounds may take together: a correct notebook of the
# slowest chapter grades in under 30 s (bench/RESULTS.md), so 20 times that; without it, a
# notebook whose cells hang costs a cell timeout per task plus the replays after each.
SUBMISSION_TIMEOUT = 600.0
# The exit status: tells an instructor's script a student's lost point from a run to redo.
GRADED, POINTS_LOST, GRADING_FAILED = 0, 1, 2
INTERRUPTED = 130  # as a shell reports a program stopped by Ctrl-C
EXIT_STATUS = (
    "exit status: 0 when every submission was graded and passed every task; 1 when some student lost "
    "points or handed in something that could not be graded (not a notebook, another chapter's); 2 when "
    "grading itself failed: a usage error, an output that could not be written, or the grader's own "
    "failure on a submission (its traceback is in the report's notes and on stderr), after writing "
    "everything it could."
)
UNSANDBOXED = "unsandboxed (--no-sandbox): learners' code ran with your rights, outside the grader's sandbox\n"


def default_jobs() -> int:
    """One submission at a time per core this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def grade(
    submissions: list[Path],
    solutions: Path,
    report: Path | None,
    cell_timeout: float,
    feedback: Path | bool | None = None,
    gradebook: Path | None = None,
    roster: Path | None = None,
    sandbox: bool = True,
    jobs: int | None = None,
    limits: Limits | None = None,
    chapter: str | None = None,
    gradebook_format: str = "csv",
    assignment: str | None = None,
    id_column: str | None = None,
    time_limit: float | None = SUBMISSION_TIMEOUT,
) -> int:
    """Grade, print a table per submission and the class summary, write the JSON report,
    gradebook and feedback files asked for (grader/host/outputs.py); the exit status
    (EXIT_STATUS; a GraderError, raised, is GRADING_FAILED)."""
    # Imported here: release must work where only the course (not nbval) is installed.
    from grader.host.outputs import Outputs

    names = list(chapter_paths(solutions))
    submissions = once(no_companions(no_checkpoints(submissions), names), names)
    refuse_class_archives(submissions)
    refuse_folders(submissions)
    if chapter == EACH and gradebook is not None:
        raise GraderError(
            f"--chapter {EACH} and --gradebook: a gradebook holds one chapter's points. Grade each chapter's "
            "class on its own (--chapter NAME)."
        )
    chapters = {name: load_chapter(path) for name, path in chapter_paths(solutions).items()}
    if not chapters:
        raise GraderError(f"no instructor notebooks (*.ipynb) in {solutions}.")
    # Before grading: a bad roster, an unwritable output, students that cannot be told apart.
    outputs = Outputs.prepare(
        submissions, report, feedback, gradebook, roster, gradebook_format, assignment, id_column, list(chapters)
    )
    # One run at a time writes each output: a second stops here (lock.py).
    with _locked(outputs):
        return _grade_and_write(
            submissions, chapters, outputs, cell_timeout, sandbox, jobs, limits, chapter, time_limit
        )


@contextmanager
def _locked(outputs: Outputs) -> Iterator[None]:
    """Hold the lock of every output the run writes (lock.py) while the block runs: two
    runs writing one feedback folder, report or gradebook would each replace the other's."""
    with ExitStack() as held:
        if outputs.feedback is not None:
            held.enter_context(folder_lock(outputs.feedback))
        files = [("--report", outputs.report), ("--gradebook", outputs.gradebook)]
        if outputs.gradebook is not None and outputs.form != "csv":
            files.append(("--gradebook", tasks_path(outputs.gradebook)))  # an LMS gradebook's tasks, beside it
        for option, path in files:
            if path is not None:
                held.enter_context(file_lock(path, option))
        yield


def _grade_and_write(
    submissions: list[Path],
    chapters: dict[str, Chapter],
    outputs: Outputs,
    cell_timeout: float,
    sandbox: bool,
    jobs: int | None,
    limits: Limits | None,
    chapter: str | None,
    time_limit: float | None,
) -> int:
    """grade's work once its input is checked: grade the class, print, write the outputs."""
    from grader.host.report import table
    from grader.host.summary import class_summary, summary_text

    # Learners' code runs in a sandbox per kernel (grader/host/sandbox.py), or, told --no-sandbox,
    # with the instructor's rights: the tables, the JSON summary and the feedback pages then
    # say "unsandboxed". Where no sandbox can be made, grading stops here and says how to fix it.
    box = prepare_sandbox(limits) if sandbox else None
    sandboxed = box is not None
    if box is not None and (note := fallback_note(box)):
        print(f"warning: {note}", file=sys.stderr)
    if not sandboxed:
        print(UNSANDBOXED)

    results, name = _grade_class(
        submissions,
        chapters,
        cell_timeout,
        box,
        jobs or default_jobs(),
        progress=True,
        chapter=chapter,
        time_limit=time_limit,
    )
    for result in results:
        for note in result.notes:
            print(f"warning: {result.path}: {note}", file=sys.stderr)
        print(table(result))
    if len(results) > 1:
        print(summary_text(class_summary(results, sandboxed, outputs.roster)))
    tasks = [(task.number, task.points) for task in chapters[name].tasks] if name is not None else None
    outputs.write(results, tasks, sandboxed)
    if any(result.internal_error for result in results):
        failed = [str(result.path) for result in results if result.internal_error]
        print(
            f"error: the grader failed on {len(failed)} submission(s), not graded: {', '.join(failed)} "
            "(the traceback is in the warnings above and the report's notes); everything else was graded "
            "and written",
            file=sys.stderr,
        )
        return GRADING_FAILED
    return GRADED if all(result.passed for result in results) else POINTS_LOST


def refuse_folders(submissions: list[Path]) -> None:
    """A folder given as a submission is refused with what to give instead: its notebooks,
    or, where it is the grader's own feedback folder caught by ``class/*``, the notebooks
    beside it (the feedback pages are no one's submission)."""
    folders = [path for path in submissions if path.is_dir()]
    if folders and (pages := earlier_pages(folders[0], [])):
        raise GraderError(
            f"{folders[0]}: a folder of feedback pages this grader wrote ({pages[0].name}, ...), not a student's: "
            f"the submissions' pattern caught the grader's own output. Give the notebooks only "
            f"({folders[0].parent / '*.ipynb'}), and keep the outputs outside the class's folder."
        )
    if folders:
        raise GraderError(
            f"{folders[0]}: a folder, not a notebook. Give the notebooks themselves, e.g. "
            f"{folders[0] / '*.ipynb'} or {folders[0] / '*' / 'NN_chapter.ipynb'} (one folder per student)."
        )


CHECKPOINTS = ".ipynb_checkpoints"  # where Jupyter keeps its autosaved copy of each notebook
NOTEBOOKS = (".ipynb", ".zip")  # what a student hands in: a notebook, or a zip of one


def no_companions(submissions: list[Path], chapters: list[str]) -> list[Path]:
    """The submissions without the files that came beside a student's notebook, in their
    folder (a data file, a picture, an HTML export, caught by ``class/*/*``) or named as it
    is (``bob.html`` beside ``bob.ipynb``): graded, each was a "not a notebook, hand in the
    notebook" on the page of a student who had handed it in. The terminal names each one
    left out. A file that is its student's only one is kept: it says what to hand in. Where
    the notebooks are one student's (their folder graded alone, ``class/bob/*``, whatever
    the notebook is called), the folder they lie in is that student's too."""
    notebooks = [path for path in submissions if path.suffix.lower() in NOTEBOOKS]
    try:
        found = owners(notebooks, None, chapters)
    except GraderError:
        return submissions  # students that cannot be told apart: Outputs.prepare says so
    one_student = len({student.id for student in found.values()}) == 1
    beside: dict[Path, str] = {}
    for path in notebooks:
        # (not carol.ipynb among classmates' files)
        by_folder = one_student or found[path].id != lms_student(path.stem).id
        beside[path.parent / path.stem] = path.name
        if by_folder:
            beside[path.parent] = path.name
    kept = []
    for path in submissions:
        notebook = beside.get(path.parent / path.stem) or beside.get(path.parent)
        if path.suffix.lower() in NOTEBOOKS or notebook is None:
            kept.append(path)
        else:
            print(f"note: {path}: not a notebook, beside the notebook {notebook}: not graded", file=sys.stderr)
    return kept


def no_checkpoints(submissions: list[Path]) -> list[Path]:
    """The submissions without Jupyter's checkpoints (``alice/.ipynb_checkpoints/
    02_autograd-checkpoint.ipynb``, committed to a repository or found by ``find``): an
    older copy the student did not hand in, which as their second file could be the one
    that counts. The terminal names each one left out; a zip's are left out the same way."""
    kept = []
    for path in submissions:
        if CHECKPOINTS in path.parts:
            print(
                f"note: {path}: a Jupyter checkpoint (an autosaved copy), not a submission: not graded", file=sys.stderr
            )
        else:
            kept.append(path)
    if submissions and not kept:
        raise GraderError(
            f"every file given is a Jupyter checkpoint (in {CHECKPOINTS}/), not a submission: give the "
            "notebooks themselves."
        )
    return kept


def once(submissions: list[Path], chapters: Collection[str] = ()) -> list[Path]:
    """The submissions, each file once: a glob that overlaps another (``class/*/*.ipynb
    class/alice/*.ipynb``), ``./`` or a link gives one file twice, which would be graded
    twice and read as the student's two submissions (or, through a linked folder, as two
    students). Of a file's paths the one without a link or ``..`` is kept (else the first
    by name), whatever their order, and the terminal names the others. A link out of its
    student's folder (``dan/x.ipynb`` to ``bob/x.ipynb``; ``chapters``: see links_out) is
    kept apart, to be its student's "not graded" row rather than vanish into bob's file."""
    away = links_out(submissions, chapters)
    same: dict[Path, list[Path]] = {}
    for path in submissions:
        key = Path(os.path.normpath(os.path.abspath(path))) if path in away else real_path(path)
        same.setdefault(key, []).append(path)
    kept = []
    for real, paths in same.items():
        first = min(paths, key=lambda path: (_linked(path, real), os.path.normpath(path) != str(path), str(path)))
        kept.append(first)
        for path in paths:
            if path is not first:
                told = "given twice" if path == first else f"the same file as {first}"
                print(f"note: {path}: {told}: graded once", file=sys.stderr)
    return kept


def _linked(path: Path, real: Path) -> bool:
    """Whether ``path`` reaches its file ``real`` through a link."""
    return Path(os.path.normpath(os.path.abspath(path))) != real


def positive(
    kind: type[int] | type[float], what: str, default: str, least: str = "more than 0"
) -> Callable[[str], float]:
    """An argparse type: a finite number of ``kind`` above zero (``least`` says how much);
    argparse names the option in front of the message, which says what to give instead."""

    def parse(text: str) -> float:
        fix = f"give {what}, {least} (default {default})"
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not {'a whole number' if kind is int else 'a number'}: {fix}"
            ) from None
        if not math.isfinite(value) or value <= 0:
            raise argparse.ArgumentTypeError(f"{text!r}: {fix}")
        return value

    return parse


def default_solutions(here: Path | None = None) -> Path:
    """The instructor's solutions/: in the folder the grader runs from, else in the checkout
    the grader belongs to (a grader installed from a wheel has none beside it)."""
    for folder in (here or Path.cwd(), COURSE_ROOT):
        if (folder / "solutions").is_dir():
            return folder / "solutions"
    raise GraderError(
        f"no solutions/ folder in {here or Path.cwd()}: run the grader from the course folder "
        "(the one that holds solutions/), or name the folder with --solutions DIR"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m grader",
        description=("Generate exercise notebooks from solutions/ and grade learners' submissions with nbval."),
    )
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--solutions",
        type=Path,
        default=None,
        help="folder of instructor notebooks (default: solutions/ in the current folder, else the course's)",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    release_command = commands.add_parser(
        "release", parents=[common], help="write the exercise notebooks from the solutions"
    )
    release_command.add_argument(
        "--into",
        type=Path,
        default=None,
        help="folder to write them to (default: exercises/ beside the solutions folder)",
    )
    grade_command = commands.add_parser(
        "grade",
        parents=[common],
        help="grade submissions; exit status 1 if a student lost points, 2 if grading failed",
        description=(
            "Grade submissions: each one's solution cells run in the instructor's notebook, in a sandbox "
            "of its own. One class is graded on one chapter (--chapter, else the chapter most submissions "
            "are); a notebook of another chapter is refused for its student. Students are told apart by "
            "their file names, or by their folders where file names repeat (submissions/<student>/...), "
            "or by a roster."
        ),
        epilog=(
            f"Limits on each submission, besides the options: a cell that prints or displays more than "
            f"{OUTPUT_LIMIT:,} characters fails its task (print a summary instead); each process may use "
            f"{Limits.cpu_seconds:,} s of CPU time and write files up to {Limits.file_size // GiB} GiB. " + EXIT_STATUS
        ),
    )
    grade_command.add_argument("submissions", nargs="+", type=Path, metavar="SUBMISSION.ipynb")
    grade_command.add_argument("--report", type=Path, help="also write the grades to this JSON file")
    grade_command.add_argument(
        "--feedback",
        type=Path,
        nargs="?",
        const=True,
        metavar="DIR",
        help="write an HTML feedback file per student into DIR (default: feedback/ next to the report)",
    )
    grade_command.add_argument(
        "--gradebook", type=Path, metavar="FILE.csv", help="write a gradebook CSV (a row per student) an LMS imports"
    )
    grade_command.add_argument(
        "--gradebook-format",
        choices=FORMATS,
        default="csv",
        help=(
            "csv: a column per task, total and notes (default); canvas: Canvas's gradebook import "
            "(Student, ID, SIS User ID, SIS Login ID, Section from the roster, one assignment column); "
            "moodle: one identifier column (--id-column) and the grade. canvas and moodle need --roster "
            "and write the tasks to FILE-tasks.csv"
        ),
    )
    grade_command.add_argument(
        "--assignment",
        metavar="NAME",
        help="the grade column's name in a canvas or moodle gradebook (default: the chapter)",
    )
    grade_command.add_argument(
        "--id-column",
        metavar="COLUMN",
        help="the roster column Moodle knows the students by: username, ID number or email (default: id)",
    )
    grade_command.add_argument(
        "--roster",
        type=Path,
        metavar="FILE.csv",
        help=(
            "CSV (commas) with columns file,id[,name]: a line per student; file is the submission's name, path "
            "or the student's folder (default: the file's name, or its folder where names repeat)"
        ),
    )
    grade_command.add_argument(
        "--chapter",
        metavar="NAME",
        help=(
            "the chapter this class hands in, e.g. 02_autograd or 02 (default: the chapter most submissions "
            f"are); '{EACH}': each notebook against its own chapter, no gradebook"
        ),
    )
    grade_command.add_argument(
        "--cell-timeout",
        type=positive(float, "the seconds one cell may run before its task fails", f"{CELL_TIMEOUT:g}"),
        default=CELL_TIMEOUT,
        metavar="SECONDS",
        help=f"seconds one cell may run before its task fails (default {CELL_TIMEOUT:g})",
    )
    grade_command.add_argument(
        "--submission-timeout",
        type=positive(float, "the seconds one submission's notebook may run in all", f"{SUBMISSION_TIMEOUT:g}"),
        default=SUBMISSION_TIMEOUT,
        metavar="SECONDS",
        help=(
            "seconds one submission may run in all (kernel starts and re-runs after a lost kernel included); "
            "then its remaining tasks fail as not run, with the time used "
            f"(default {SUBMISSION_TIMEOUT:g})"
        ),
    )
    grade_command.add_argument(
        "--jobs",
        type=positive(int, "the number of submissions graded at once", "one per core", "1 or more"),
        metavar="N",
        help="grade N submissions at once, each in its own sandbox (default: one per core)",
    )
    grade_command.add_argument(
        "--no-sandbox",
        action="store_true",
        help="run learners' code without the sandbox, with your rights (reports then say 'unsandboxed')",
    )
    grade_command.add_argument(
        "--memory-limit",
        type=positive(float, "the GiB of memory one submission may use", f"{Limits.memory / GiB:g}"),
        default=Limits.memory / GiB,
        metavar="GiB",
        help=f"memory one submission's kernel and its processes may use (default {Limits.memory / GiB:g})",
    )
    grade_command.add_argument(
        "--process-limit",
        type=positive(int, "the processes and threads one submission may have", f"{Limits.processes}"),
        default=Limits.processes,
        metavar="N",
        help=f"processes and threads one submission's kernel may have (default {Limits.processes})",
    )
    args = parser.parse_args(argv)

    try:
        args.solutions = args.solutions or default_solutions()
        if args.command == "release":
            for path in release(args.solutions, args.into or args.solutions.parent / "exercises"):
                print(f"wrote {path}")
            return 0
        return grade(
            args.submissions,
            args.solutions,
            args.report,
            args.cell_timeout,
            feedback=args.feedback,
            gradebook=args.gradebook,
            roster=args.roster,
            sandbox=not args.no_sandbox,
            jobs=args.jobs,
            limits=Limits(memory=int(args.memory_limit * GiB), processes=args.process_limit),
            chapter=args.chapter,
            gradebook_format=args.gradebook_format,
            assignment=args.assignment,
            id_column=args.id_column,
            time_limit=args.submission_timeout,
        )
    except GraderError as error:
        print(f"error: {error}", file=sys.stderr)
        return GRADING_FAILED
    except _Interrupted:
        return interrupted()


class _Interrupted(Exception):
    """Ctrl-C while the class was graded, before any output was written."""


def _grade_class(*args: Any, **kwargs: Any) -> ClassGrading:
    """``grade_files``; Ctrl-C meanwhile is ``_Interrupted`` (one during the writing that
    follows is not: some files may be written by then)."""
    from grader.host.grade import grade_files  # (imported here, as grade's imports are)

    try:
        return grade_files(*args, **kwargs)
    except KeyboardInterrupt as stop:
        raise _Interrupted from stop


def interrupted() -> int:
    """Ctrl-C while the class is graded: every kernel is stopped (grade_files), and nothing
    was written yet (outputs are written once grading ends); say so instead of a traceback
    that hides it, so the instructor knows the earlier files are whole and a rerun of the
    same command is right."""
    print(
        "\ninterrupted: grading stopped and nothing was written; the report, gradebook and feedback "
        "of an earlier run are as they were. Run the same command again to grade the class.",
        file=sys.stderr,
    )
    return INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
