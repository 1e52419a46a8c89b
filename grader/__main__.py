"""Command line: ``python -m grader release`` and ``python -m grader grade SUBMISSION.ipynb ...``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from grader.errors import GraderError
from grader.grade import CELL_TIMEOUT, grade_files
from grader.notebook import COURSE_ROOT, chapter_paths, load_chapter
from grader.release import release
from grader.report import table, write_json


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader", description=(
        "Generate exercise notebooks from solutions/ and grade learners' submissions with nbval."))
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--solutions", type=Path, default=COURSE_ROOT / "solutions",
                        help="folder of instructor notebooks (default: the course's solutions/)")
    commands = parser.add_subparsers(dest="command", required=True)
    rel = commands.add_parser("release", parents=[common],
                              help="write the exercise notebooks from the solutions")
    rel.add_argument("--into", type=Path, default=COURSE_ROOT / "exercises",
                     help="folder to write them to (default: the course's exercises/)")
    grade = commands.add_parser("grade", parents=[common],
                                help="grade submissions; exit status 1 if any task failed")
    grade.add_argument("submissions", nargs="+", type=Path, metavar="SUBMISSION.ipynb")
    grade.add_argument("--report", type=Path, help="also write the grades to this JSON file")
    grade.add_argument("--cell-timeout", type=float, default=CELL_TIMEOUT,
                       help=f"seconds one cell may run before its task fails (default {CELL_TIMEOUT:g})")
    args = parser.parse_args(argv)

    try:
        if args.command == "release":
            for path in release(args.solutions, args.into):
                print(f"wrote {path}")
            return 0
        chapters = {name: load_chapter(path) for name, path in chapter_paths(args.solutions).items()}
        if not chapters:
            raise GraderError(f"no instructor notebooks (*.ipynb) in {args.solutions}.")
        results = grade_files(args.submissions, chapters, args.cell_timeout)
        for result in results:
            for note in result.notes:
                print(f"warning: {result.path}: {note}", file=sys.stderr)
            print(table(result))
        if args.report:
            write_json(results, args.report)
        return 0 if all(result.passed for result in results) else 1
    except GraderError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
