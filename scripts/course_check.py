"""Run every chapter and grade every reference solution on this machine's PyTorch: does the
course work here? `make test-torch-floor` runs it on the oldest PyTorch the course supports.

`make test` compares each chapter's outputs with the stored ones, which only the pinned
PyTorch reproduces. This check asks less, of any version or machine: each chapter runs top
to bottom in a fresh kernel with no cell raising (except those tagged ``raises-exception``,
which show an error on purpose), and the grader gives the reference solutions full marks.
Nothing is written into the repository; every failing cell is listed with its error.

    .venv/bin/python scripts/course_check.py                      # every chapter and solution
    .venv/bin/python scripts/course_check.py --jobs 2 --no-sandbox course/04_amp.ipynb
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
CELL_TIMEOUT = 600
ON_PURPOSE = "raises-exception"
# Started first, so that two at a time end together (bench/RESULTS.md: the slowest chapters).
SLOWEST_FIRST = ("06_compile", "05_distributed", "05b_distributed_at_scale", "03b_training")


@dataclass
class ChapterRun:
    """What one chapter's run showed: its seconds, the cells that raised, or why it stopped."""

    path: Path
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)  # "cell 11: AttributeError: ..."
    stopped: str | None = None  # a timeout or a dead kernel: the later cells did not run

    @property
    def ok(self) -> bool:
        return not self.errors and self.stopped is None


def unexpected_errors(nb: nbformat.NotebookNode) -> list[str]:
    """Each code cell that shows an error and is not tagged to raise: 'cell N: Name: message'."""
    found = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or ON_PURPOSE in cell.metadata.get("tags", []):
            continue
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                message = str(output.get("evalue", "")).strip().splitlines()
                found.append(f"cell {index}: {output.get('ename')}: {message[0] if message else ''}")
    return found


def run_chapter(path: Path) -> ChapterRun:
    """Execute the notebook at ``path`` in a fresh kernel in its own folder, errors allowed."""
    nb = nbformat.read(path, as_version=4)
    run = ChapterRun(path)
    start = time.perf_counter()
    try:
        NotebookClient(
            nb,
            timeout=CELL_TIMEOUT,
            kernel_name="python3",
            allow_errors=True,
            resources={"metadata": {"path": str(path.parent)}},
        ).execute()
    except Exception as error:  # noqa: BLE001 - a timeout or a dead kernel: report it, go on
        run.stopped = f"{type(error).__name__}: {str(error).strip()[:500]}"
    run.seconds = time.perf_counter() - start
    run.errors = unexpected_errors(nb)
    return run


def short_of_full_marks(report: dict) -> list[str]:
    """Each task of the grader's JSON report that did not get its points, and each submission
    the grader could not grade: 'solutions/03_modules.ipynb 3.8: 0/2 ...'."""
    missing = []
    for submission in report["submissions"]:
        if submission["error"]:
            missing.append(f"{submission['file']}: {submission['error']}")
        for task in submission["tasks"]:
            if task["score"] < task["points"]:
                reason = task["message"] or task["reason"] or ""
                missing.append(
                    f"{submission['file']} {task['task']}: {task['score']}/{task['points']} {reason}".strip()
                )
    return missing


def grade_solutions(paths: list[Path], jobs: int, sandbox: bool) -> tuple[list[str], float]:
    """Grade the solutions as an instructor would; what fell short of full marks, and seconds."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        report_path = Path(tmp) / "grades.json"
        command = [sys.executable, "-m", "grader", "grade", *map(str, paths), "--jobs", str(jobs)]
        command += ["--report", str(report_path)] + ([] if sandbox else ["--no-sandbox"])
        proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        if not report_path.exists():
            return [f"the grader wrote no report (exit {proc.returncode}):\n{proc.stdout}{proc.stderr}"], 0.0
        missing = short_of_full_marks(json.loads(report_path.read_text()))
    if proc.returncode != 0 and not missing:
        missing = [f"the grader exited {proc.returncode}:\n{proc.stdout}{proc.stderr}"]
    return missing, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "notebooks",
        nargs="*",
        type=Path,
        help="chapters (course/) and solutions (solutions/) to check (default: all of both)",
    )
    parser.add_argument("--jobs", type=int, default=2, help="chapters run, and solutions graded, at once")
    parser.add_argument("--no-sandbox", action="store_true", help="grade without the grader's sandbox")
    args = parser.parse_args(argv)
    paths = [p.resolve() for p in args.notebooks] or [
        *sorted((ROOT / "course").glob("*.ipynb")),
        *sorted((ROOT / "solutions").glob("*.ipynb")),
    ]
    unknown = [p for p in paths if p.parent not in (ROOT / "course", ROOT / "solutions") or not p.exists()]
    if unknown:
        print(f"not a chapter or solution of this course: {', '.join(map(str, unknown))}", file=sys.stderr)
        return 2
    chapters = sorted(
        (p for p in paths if p.parent == ROOT / "course"),
        key=lambda p: SLOWEST_FIRST.index(p.stem) if p.stem in SLOWEST_FIRST else len(SLOWEST_FIRST),
    )
    solutions = [p for p in paths if p.parent == ROOT / "solutions"]

    import torch

    print(f"PyTorch {torch.__version__}, Python {sys.version.split()[0]}", flush=True)
    failed = False
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for run in pool.map(run_chapter, chapters):
            name = run.path.relative_to(ROOT)
            print(f"{name}: {run.seconds:.1f} s, {'ok' if run.ok else 'FAILED'}", flush=True)
            for line in [*run.errors, *([f"stopped: {run.stopped}"] if run.stopped else [])]:
                print(f"  {line}", flush=True)
            failed |= not run.ok
    if solutions:
        missing, seconds = grade_solutions(solutions, args.jobs, sandbox=not args.no_sandbox)
        names = ", ".join(p.stem for p in solutions)
        print(f"graded {names}: {seconds:.1f} s, {'full marks' if not missing else 'NOT full marks'}", flush=True)
        for line in missing:
            print(f"  {line}", flush=True)
        failed |= bool(missing)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
