"""Command line: ``python -m grader release`` and ``python -m grader grade SUBMISSION.ipynb ...``."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from grader.errors import GraderError
from grader.notebook import COURSE_ROOT, chapter_paths, load_chapter
from grader.release import release
from grader.sandbox import GiB, Limits, fallback_note
from grader.sandbox import prepare as prepare_sandbox

CELL_TIMEOUT = 60.0  # seconds; generous: course cells take well under one
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
) -> int:
    """Grade, print a table per submission and the class summary, write the JSON report,
    gradebook and feedback files asked for (grader/outputs.py); the exit status."""
    # Imported here: release must work where only the course (not nbval) is installed.
    from grader.grade import grade_files
    from grader.outputs import Outputs
    from grader.report import table
    from grader.summary import class_summary, summary_text

    outputs = Outputs.prepare(submissions, report, feedback, gradebook, roster)  # before grading: fail early
    # Learners' code runs in a sandbox per kernel (grader/sandbox.py), or, told --no-sandbox,
    # with the instructor's rights: the tables, the JSON summary and the feedback pages then
    # say "unsandboxed". Where no sandbox can be made, grading stops here and says how to fix it.
    box = prepare_sandbox(limits) if sandbox else None
    sandboxed = box is not None
    if box is not None and (note := fallback_note(box)):
        print(f"warning: {note}", file=sys.stderr)
    if not sandboxed:
        print(UNSANDBOXED)

    chapters = {name: load_chapter(path) for name, path in chapter_paths(solutions).items()}
    if not chapters:
        raise GraderError(f"no instructor notebooks (*.ipynb) in {solutions}.")
    results = grade_files(submissions, chapters, cell_timeout, box, jobs or default_jobs(), progress=True)
    for result in results:
        for note in result.notes:
            print(f"warning: {result.path}: {note}", file=sys.stderr)
        print(table(result))
    if len(results) > 1:
        print(summary_text(class_summary(results, sandboxed)))
    outputs.write(results, sandboxed)
    return 0 if all(result.passed for result in results) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m grader",
        description=("Generate exercise notebooks from solutions/ and grade learners' submissions with nbval."),
    )
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--solutions",
        type=Path,
        default=COURSE_ROOT / "solutions",
        help="folder of instructor notebooks (default: the course's solutions/)",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    release_command = commands.add_parser(
        "release", parents=[common], help="write the exercise notebooks from the solutions"
    )
    release_command.add_argument(
        "--into",
        type=Path,
        default=COURSE_ROOT / "exercises",
        help="folder to write them to (default: the course's exercises/)",
    )
    grade_command = commands.add_parser(
        "grade", parents=[common], help="grade submissions; exit status 1 if any task failed"
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
        "--roster",
        type=Path,
        metavar="FILE.csv",
        help="CSV with columns file,id[,name]: whose each submission is (default: its file name)",
    )
    grade_command.add_argument(
        "--cell-timeout",
        type=float,
        default=CELL_TIMEOUT,
        help=f"seconds one cell may run before its task fails (default {CELL_TIMEOUT:g})",
    )
    grade_command.add_argument(
        "--jobs",
        type=int,
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
        type=float,
        default=Limits.memory / GiB,
        metavar="GiB",
        help=f"memory one submission's kernel and its processes may use (default {Limits.memory / GiB:g})",
    )
    grade_command.add_argument(
        "--process-limit",
        type=int,
        default=Limits.processes,
        metavar="N",
        help=f"processes and threads one submission's kernel may have (default {Limits.processes})",
    )
    args = parser.parse_args(argv)

    try:
        if args.command == "release":
            for path in release(args.solutions, args.into):
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
        )
    except GraderError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
