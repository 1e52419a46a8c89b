"""What the grader's sandbox costs: a class graded with and without it.

A class of CLASS copies of chapter 03's exercise notebook, each with the instructor's
answers in its solution cells (so every task runs all its checks), is graded by one
`python -m grader grade --jobs JOBS` command in each mode: sandboxed (the default: a
bubblewrap sandbox and a control group per kernel, grader/host/sandbox.py) and `--no-sandbox`.
The modes alternate run by run, so that a machine slowing down shows in both. The table
gives wall-clock and CPU seconds (ours and all children: the nbval processes, bwrap,
kernels) for the class and per submission, and the sandbox's overhead as a ratio; below
it, what one kernel's sandbox costs to set up, and the check `grade` makes once before
grading (grader.host.sandbox.prepare).

    .venv/bin/python -m bench.bench_grading [--class-size 30] [--jobs 2] [--runs 2]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from bench.report import median, table, write_section
from grader.host.sandbox import bwrap_arguments, prepare
from harness.paths import EXERCISES, REPO, SOLUTIONS

CHAPTER = "03_modules"
MODES = {"sandbox": [], "no sandbox": ["--no-sandbox"]}


class CpuMeter:
    """CPU seconds of one command and everything it starts. A sandboxed kernel's time never
    reaches the waiting parents' rusage (jupyter_client SIGKILLs bwrap, which has not reaped
    the sandbox's processes), so the command runs in a cgroup v1 cpuacct group of its own
    where one can be made; elsewhere this falls back to the children's rusage, which then
    leaves the sandboxed kernels out (``exact`` says which)."""

    def __init__(self) -> None:
        self.group: Path | None = None
        try:
            own = next(
                line.split(":", 2)[2]
                for line in Path("/proc/self/cgroup").read_text().splitlines()
                if "cpuacct" in line.split(":", 2)[1].split(",")
            )
            group = Path("/sys/fs/cgroup/cpuacct", own.lstrip("/"), f"bench-grading-{os.getpid()}")
            group.mkdir()
            self.group = group
        except (OSError, StopIteration):
            pass

    @property
    def exact(self) -> bool:
        return self.group is not None

    def join(self) -> None:
        """In the command's process, before it runs (subprocess's preexec_fn)."""
        if self.group is not None:
            (self.group / "cgroup.procs").write_text(str(os.getpid()))

    def seconds(self) -> float:
        if self.group is not None:
            return int((self.group / "cpuacct.usage").read_text()) / 1e9
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        return children.ru_utime + children.ru_stime

    def close(self) -> None:
        if self.group is not None:
            self.group.rmdir()


def make_class(folder: Path, size: int) -> list[Path]:
    """``size`` learners' files: the exercise notebook, the instructor's answers in its
    solution cells (found by the cell ids the exercise keeps from the solutions)."""
    solutions = nbformat.read(SOLUTIONS / f"{CHAPTER}.ipynb", as_version=4)
    answers = {c.id: c.source for c in solutions.cells if "solution" in c.metadata.get("tags", [])}
    exercise = nbformat.read(EXERCISES / f"{CHAPTER}.ipynb", as_version=4)
    for cell in exercise.cells:
        if cell.get("id") in answers:
            cell.source = answers[cell.id]
    paths = [folder / f"learner{n:02d}_{CHAPTER}.ipynb" for n in range(size)]
    for path in paths:
        nbformat.write(exercise, path)
    return paths


def grade(paths: list[Path], options: list[str], jobs: int, report: Path, meter: CpuMeter) -> dict:
    """One `grade` command: wall and CPU seconds, and whether every learner got full marks."""
    report.unlink(missing_ok=True)
    cpu, start = meter.seconds(), time.perf_counter()
    run = subprocess.run(
        [sys.executable, "-m", "grader", "grade", *map(str, paths), *options, "--jobs", str(jobs)]
        + ["--report", str(report)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=3600,
        preexec_fn=meter.join,
    )
    wall, cpu = time.perf_counter() - start, meter.seconds() - cpu
    entries = json.loads(report.read_text())["submissions"] if report.exists() else []
    full = len(entries) == len(paths) and all(e["score"] == e["max_score"] > 0 for e in entries)
    if not full:
        print(run.stdout[-2000:], run.stderr[-2000:], file=sys.stderr)
    return {"wall": wall, "cpu": cpu, "full": full}


def sandbox_start(repeats: int = 10) -> tuple[float, float, float]:
    """Median seconds: a bare `python -I -S -c pass`, the same in a kernel's sandbox (bwrap
    and its mounts; no control group), and grader.host.sandbox.prepare() (once per command)."""
    sandbox = prepare()
    plain = [sys.executable, "-I", "-S", "-c", "pass"]
    boxed = [*bwrap_arguments(sandbox.bwrap, sandbox.limits), "--", *plain]

    def timed(command: list[str]) -> float:
        start = time.perf_counter()
        subprocess.run(command, check=True)
        return time.perf_counter() - start

    bare = median([timed(plain) for _ in range(repeats)])
    inside = median([timed(boxed) for _ in range(repeats)])
    start = time.perf_counter()
    prepare()
    return bare, inside, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--class-size", type=int, default=30, help="submissions in the class")
    parser.add_argument("--jobs", type=int, default=2, help="submissions graded at once (grade --jobs)")
    parser.add_argument("--runs", type=int, default=2, help="runs per mode; the median is shown")
    args = parser.parse_args()
    measured: dict[str, list[dict]] = {mode: [] for mode in MODES}
    meter = CpuMeter()
    load = os.getloadavg()[0]
    try:
        with tempfile.TemporaryDirectory(prefix="bench-grading-") as tmp:
            paths = make_class(Path(tmp), args.class_size)
            for run in range(args.runs):
                for mode, options in MODES.items():
                    result = grade(paths, options, args.jobs, Path(tmp) / "grades.json", meter)
                    print(f"run {run + 1}, {mode}: {result}", flush=True)
                    measured[mode].append(result)
    finally:
        meter.close()
    load = max(load, os.getloadavg()[0])
    rows, walls, fastest, cpus = [], {}, {}, {}
    for mode, results in measured.items():
        walls[mode], cpus[mode] = median([r["wall"] for r in results]), median([r["cpu"] for r in results])
        fastest[mode] = min(r["wall"] for r in results)
        rows.append(
            [
                mode,
                f"{walls[mode]:.1f}",
                f"{fastest[mode]:.1f}",
                f"{cpus[mode]:.1f}",
                f"{walls[mode] / args.class_size:.2f}",
                f"{cpus[mode] / args.class_size:.2f}",
                ", ".join(f"{r['wall']:.1f}" for r in results),
                "yes" if all(r["full"] for r in results) else "**no**",
            ]
        )
    rows.append(
        [
            "**sandbox / no sandbox**",
            f"**{walls['sandbox'] / walls['no sandbox']:.2f}×**",
            f"**{fastest['sandbox'] / fastest['no sandbox']:.2f}×**",
            f"**{cpus['sandbox'] / cpus['no sandbox']:.2f}×**",
            "",
            "",
            "",
            "",
        ]
    )
    bare, inside, check = sandbox_start()
    body = (
        table(
            [
                "mode",
                "class: wall s",
                "fastest run: wall s",
                "class: CPU s",
                "wall s per submission",
                "CPU s per submission",
                "runs (wall s)",
                "all full marks",
            ],
            rows,
        )
        + f"\n\nOne kernel's sandbox: `python -I -S -c pass` takes {bare * 1000:.0f} ms bare and "
        f"{inside * 1000:.0f} ms inside bwrap with the kernel's mounts, namespaces and environment "
        f"({(inside - bare) * 1000:.0f} ms more per kernel start; a grading round starts one kernel). "
        f"The check `grade` makes once before grading, a kernel's imports run in a sandbox "
        f"(grader.host.sandbox.prepare), took {check:.2f} s."
    )
    how = (
        f"How measured: `.venv/bin/python -m bench.bench_grading --class-size {args.class_size} --jobs {args.jobs} "
        f"--runs {args.runs}`: a class of {args.class_size} copies of `exercises/{CHAPTER}.ipynb` answered with "
        f"the instructor's solutions, graded by one `python -m grader grade --jobs {args.jobs}` per run, sandboxed "
        "(the default) and `--no-sandbox`, the modes alternating; median of the runs, and the fastest (the one a "
        "busy machine disturbed least). CPU: the grader and all its "
        + (
            "descendants (nbval processes, bwrap, kernels), from a cpuacct control group of the command's own."
            if meter.exact
            else "the children's rusage: **without the sandboxed kernels** (no cpuacct group could be made here)."
        )
        + f" Load average on the machine (1 min, highest seen at start and end): {load:.1f}."
    )
    print(write_section("grading", "The grader's sandbox: a class graded with and without it", how, body).read_text())


if __name__ == "__main__":
    main()
