"""Run every chapter and grade every reference solution on this machine's PyTorch: does the
course work here? `make test-torch-floor` runs it on the oldest PyTorch the course supports.

`make test` compares each chapter's outputs with the stored ones, which only the pinned
PyTorch reproduces. This check asks less, of any version or machine: each chapter runs top
to bottom in a fresh kernel with no cell raising (except those tagged ``raises-exception``,
which show an error on purpose), and the grader gives the reference solutions full marks.
Nothing is written into the repository; every failing cell is listed with its error.

On a lab's GPU machines (`make gpu-check`, where the course's own tests never run: CI has no
GPU), ``--out DIR`` also keeps a record: summary.json and summary.md (the machine, each
chapter's seconds, the cells that raised and the GPU parts that skipped, each solution's
points: the table bench/results/gpu.md records) and each chapter executed.

    .venv/bin/python scripts/course_check.py                      # every chapter and solution
    .venv/bin/python scripts/course_check.py --jobs 2 --no-sandbox course/04_amp.ipynb
    .venv/bin/python scripts/course_check.py --jobs 4 --out gpu-check   # what make gpu-check runs
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import nbformat
from nbclient import NotebookClient

# A script knows the checkout by its own place: the repository's packages (harness.paths, coursekit)
# are imported from it, also where the project is not installed (a GPU machine's image).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from coursekit.gpu import SKIP_PREFIX  # noqa: E402 - after the path it is found on
from harness.paths import COURSE, REPO, SOLUTIONS  # noqa: E402

CELL_TIMEOUT = 600
ON_PURPOSE = "raises-exception"
# Started first, so that two at a time end together (bench/RESULTS.md: the slowest chapters).
SLOWEST_FIRST = (
    "06_compile",
    "05_distributed",
    "05b_distributed_at_scale",
    "05c_memory_at_scale",
    "03b_training",
)


@dataclass
class ChapterRun:
    """What one chapter's run showed: its seconds, the cells that raised, or why it stopped."""

    path: Path
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)  # "cell 11: AttributeError: ..."
    stopped: str | None = None  # a timeout or a dead kernel: the later cells did not run
    skipped: list[str] = field(default_factory=list)  # "no GPU: skipped ..." lines

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


def gpu_parts_skipped(nb: nbformat.NotebookNode) -> list[str]:
    """The lines of GPU-only cells that skipped themselves (coursekit.gpu.has_cuda)."""
    return [
        line
        for cell in nb.cells
        for output in cell.get("outputs", [])
        if output.get("output_type") == "stream"
        for line in output.get("text", "").splitlines()
        if line.startswith(SKIP_PREFIX)
    ]


def run_chapter(path: Path, keep: Path | None = None) -> ChapterRun:
    """Execute the notebook at ``path`` in a fresh kernel in its own folder, errors allowed;
    the executed notebook is written into ``keep`` when given."""
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
    run.skipped = gpu_parts_skipped(nb)
    if keep is not None:
        nbformat.write(nb, keep / path.name)
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


@dataclass
class Grading:
    """What grading the solutions showed: what fell short of full marks, the points of each
    solution's tasks ({path: {task: [score, points]}}), and the seconds it took."""

    missing: list[str]
    points: dict[str, dict[str, list[float]]]
    seconds: float


def grade_solutions(paths: list[Path], jobs: int, sandbox: bool) -> Grading:
    """Grade the solutions as an instructor would."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        report_path = Path(tmp) / "grades.json"
        command = [sys.executable, "-m", "grader", "grade", *map(str, paths), "--jobs", str(jobs), "--chapter", "each"]
        command += ["--report", str(report_path)] + ([] if sandbox else ["--no-sandbox"])
        proc = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
        if not report_path.exists():
            output = f"the grader wrote no report (exit {proc.returncode}):\n{proc.stdout}{proc.stderr}"
            return Grading([output], {}, 0.0)
        report = json.loads(report_path.read_text())
    missing = short_of_full_marks(report)
    if proc.returncode != 0 and not missing:
        missing = [f"the grader exited {proc.returncode}:\n{proc.stdout}{proc.stderr}"]
    points = {
        label(Path(entry["file"])): {task["task"]: [task["score"], task["points"]] for task in entry["tasks"]}
        for entry in report["submissions"]
    }
    return Grading(missing, points, time.perf_counter() - start)


def label(path: Path) -> str:
    """A notebook's path from the top folder ("solutions/01_tensors.ipynb") where it is inside it."""
    path = path.resolve()
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def machine() -> dict[str, object]:
    """What the check ran on: the GPUs, PyTorch and its CUDA, Python, the CPUs."""
    import torch

    return {
        "date": date.today().isoformat(),
        "gpus": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())],
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }


def summary_markdown(summary: dict) -> str:
    """The record as bench/results/gpu.md keeps it: a line for the machine, two tables."""
    m = summary["machine"]
    lines = [
        f"{m['date']}: {', '.join(m['gpus']) or 'no GPU'}, PyTorch {m['torch']} (CUDA {m['cuda']}), "
        f"Python {m['python']}, {m['cpus']} CPUs",
        "",
        "| chapter | seconds | cells that raised | GPU parts skipped |",
        "|---|---|---|---|",
    ]
    for name, run in summary["chapters"].items():
        raised = "; ".join(run["errors"] + ([f"stopped: {run['stopped']}"] if run["stopped"] else [])) or "none"
        lines.append(f"| {name} | {run['seconds']:.1f} | {raised[:300]} | {len(run['skipped'])} |")
    grading = summary.get("grading")
    if grading:
        lines += ["", f"Reference solutions graded ({grading['how']}):", ""]
        lines += ["| solution | points | tasks short of full marks |", "|---|---|---|"]
        for name, tasks in grading["points"].items():
            score, full = sum(s for s, _ in tasks.values()), sum(p for _, p in tasks.values())
            short = ", ".join(t for t, (s, p) in tasks.items() if s < p) or "none"
            lines.append(f"| {name} | {score:g}/{full:g} | {short} |")
    return "\n".join(lines) + "\n"


def write_summary(out: Path, summary: dict) -> None:
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    (out / "summary.md").write_text(summary_markdown(summary))


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
    parser.add_argument("--out", type=Path, help="also write summary.json, summary.md and the executed chapters here")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    paths = [p.resolve() for p in args.notebooks] or [
        *sorted(COURSE.glob("*.ipynb")),
        *sorted(SOLUTIONS.glob("*.ipynb")),
    ]
    unknown = [p for p in paths if p.parent not in (COURSE, SOLUTIONS) or not p.exists()]
    if unknown:
        print(f"not a chapter or solution of this course: {', '.join(map(str, unknown))}", file=sys.stderr)
        return 2
    chapters = sorted(
        (p for p in paths if p.parent == COURSE),
        key=lambda p: SLOWEST_FIRST.index(p.stem) if p.stem in SLOWEST_FIRST else len(SLOWEST_FIRST),
    )
    solutions = [p for p in paths if p.parent == SOLUTIONS]

    summary: dict = {"machine": machine(), "chapters": {}}
    print(f"PyTorch {summary['machine']['torch']}, Python {summary['machine']['python']}", flush=True)
    keep = None
    if args.out is not None:
        keep = args.out.resolve() / "chapters"
        keep.mkdir(parents=True, exist_ok=True)
    failed = False
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for run in pool.map(lambda path: run_chapter(path, keep), chapters):
            name = run.path.relative_to(REPO)
            print(f"{name}: {run.seconds:.1f} s, {'ok' if run.ok else 'FAILED'}", flush=True)
            for line in [*run.errors, *([f"stopped: {run.stopped}"] if run.stopped else [])]:
                print(f"  {line}", flush=True)
            failed |= not run.ok
            summary["chapters"][run.path.stem] = {
                "seconds": run.seconds,
                "errors": run.errors,
                "stopped": run.stopped,
                "skipped": run.skipped,
            }
            if args.out is not None:  # as each chapter ends: a run cut short keeps what it found
                write_summary(args.out, summary)
    if solutions:
        grading = grade_solutions(solutions, args.jobs, sandbox=not args.no_sandbox)
        names = ", ".join(p.stem for p in solutions)
        verdict = "full marks" if not grading.missing else "NOT full marks"
        print(f"graded {names}: {grading.seconds:.1f} s, {verdict}", flush=True)
        for line in grading.missing:
            print(f"  {line}", flush=True)
        failed |= bool(grading.missing)
        how = "unsandboxed" if args.no_sandbox else "sandboxed"
        summary["grading"] = {"how": how, "points": grading.points, "missing": grading.missing}
    if args.out is not None:
        write_summary(args.out, summary)
        print(summary_markdown(summary), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
