"""Command line: ``python -m grader release`` and ``python -m grader grade SUBMISSION.ipynb ...``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from grader.errors import GraderError
from grader.notebook import COURSE_ROOT, chapter_paths, load_chapter
from grader.release import release

CELL_TIMEOUT = 60.0  # seconds; generous: course cells take well under one


def grade(submissions: list[Path], solutions: Path, report: Path | None, cell_timeout: float) -> int:
    """Grade, print a table per submission, write the JSON report; the exit status."""
    # Imported here: release must work where only the course (not nbval) is installed.
    from grader.grade import grade_files
    from grader.report import table, write_json

    chapters = {name: load_chapter(path) for name, path in chapter_paths(solutions).items()}
    if not chapters:
        raise GraderError(f"no instructor notebooks (*.ipynb) in {solutions}.")
    results = grade_files(submissions, chapters, cell_timeout)
    for result in results:
        for note in result.notes:
            print(f"warning: {result.path}: {note}", file=sys.stderr)
        print(table(result))
    if report:
        write_json(results, report)
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
        "--cell-timeout",
        type=float,
        default=CELL_TIMEOUT,
        help=f"seconds one cell may run before its task fails (default {CELL_TIMEOUT:g})",
    )
    args = parser.parse_args(argv)

    try:
        if args.command == "release":
            for path in release(args.solutions, args.into):
                print(f"wrote {path}")
            return 0
        return grade(args.submissions, args.solutions, args.report, args.cell_timeout)
    except GraderError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
