"""How long the course takes to run: every notebook of course/ and solutions/ executed
in a fresh kernel, and the grader's time per submission.

Notebooks run through nbclient exactly as `jupyter nbconvert --execute` would (kernel
start included); the per-cell times come from the timestamps nbclient records. The
grader is timed as an instructor runs it, `python -m grader grade`, on each chapter's
solutions notebook: alone (one pytest + nbval start and one sandboxed kernel) and as a
class of BATCH copies in one command (graded in parallel, one per core, each in its own
nbval process and sandbox), so the table shows what one more learner costs. CPU
seconds (ours and all children: kernels, pytest) are given next to wall-clock seconds
because on a shared machine the wall clock mostly measures the neighbours.

Chapter 06's time depends on Inductor's on-disk cache (the first compilation on a machine
probes the CPU and builds C++ from scratch), so it also runs twice in an empty cache of its
own: cold, then warm on what the first run left. Its speed cell's numbers are quoted.

    .venv/bin/python -m bench.bench_course [--runs 3]
    .venv/bin/python -c "from bench.bench_course import compile_section; print(compile_section())"
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from datetime import datetime
from functools import partial
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from bench.report import median, table, write_section
from harness.paths import COURSE, REPO, SOLUTIONS

SLOW = 60.0  # seconds: a notebook slower than this on its first run is run only once
BATCH = 5
COMPILE_CHAPTER = COURSE / "06_compile.ipynb"


def cpu_seconds() -> float:
    """CPU time of this process and every child it has waited for (kernels, pytest)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def run_notebook(path: Path) -> dict:
    """Execute a copy of the notebook in a fresh kernel; the file itself is not touched."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    cpu, start = cpu_seconds(), time.perf_counter()
    client.execute()
    wall, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    cells = []
    for index, cell in enumerate(nb.cells):
        stamps = cell.get("metadata", {}).get("execution", {})
        if "iopub.execute_input" in stamps and "shell.execute_reply" in stamps:
            begin = datetime.fromisoformat(stamps["iopub.execute_input"].replace("Z", "+00:00"))
            end = datetime.fromisoformat(stamps["shell.execute_reply"].replace("Z", "+00:00"))
            cells.append(((end - begin).total_seconds(), index))
    return {
        "wall": wall,
        "cpu": cpu,
        "cells": sum(s for s, _ in cells),
        "slowest": max(cells, default=(0.0, -1)),
        "nb": nb,
    }


def run_grader(paths: list[Path]) -> tuple[float, float]:
    """Wall and CPU seconds of one `python -m grader grade` over the paths."""
    cpu, start = cpu_seconds(), time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "grader", "grade", *map(str, paths)],
        cwd=REPO,
        capture_output=True,
        check=False,
        timeout=1800,
    )
    return time.perf_counter() - start, cpu_seconds() - cpu


def repeat(measure, runs: int) -> tuple[list, bool]:
    """Up to `runs` results of measure(); only one when the first took longer than SLOW."""
    first = measure()
    wall = first["wall"] if isinstance(first, dict) else first[0]
    if wall > SLOW:
        return [first], True
    return [first] + [measure() for _ in range(runs - 1)], False


def notebooks_section(runs: int) -> str:
    rows = []
    for path in sorted(COURSE.glob("*.ipynb")) + sorted(SOLUTIONS.glob("*.ipynb")):
        results, slow = repeat(partial(run_notebook, path), runs)
        best = sorted(results, key=lambda r: r["wall"])[len(results) // 2]
        seconds, index = best["slowest"]
        rows.append(
            [
                f"`{path.relative_to(REPO)}`",
                f"{median([r['wall'] for r in results]):.1f}",
                f"{median([r['cpu'] for r in results]):.1f}",
                f"{median([r['cells'] for r in results]):.1f}",
                f"{seconds:.2f} (cell {index})",
                f"{len(results)}{' (slow: 1 run)' if slow else ''}",
            ]
        )
    return table(["notebook", "wall s (median)", "CPU s (median)", "cells s", "slowest cell s", "runs"], rows)


@contextmanager
def inductor_cache(folder: str):
    """Kernels started inside keep Inductor's cache (compiled C++, the CPU's vector ISA) in ``folder``."""
    before = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = folder
    try:
        yield
    finally:
        if before is None:
            del os.environ["TORCHINDUCTOR_CACHE_DIR"]
        else:
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = before


def compile_section() -> str:
    """Chapter 06 in a fresh kernel with an empty Inductor cache (a learner's first run: Inductor
    probes the CPU's vector instructions and compiles its C++ from scratch), then again on the
    cache that run left; and what the chapter's speed cell measured in each run."""
    rows, measured = [], []
    with tempfile.TemporaryDirectory() as cache:
        for label in ("empty Inductor cache", "the cache of the run before"):
            with inductor_cache(cache):
                result = run_notebook(COMPILE_CHAPTER)
            seconds, index = result["slowest"]
            rows.append([label, f"{result['wall']:.1f}", f"{result['cpu']:.1f}", f"{seconds:.2f} (cell {index})"])
            speed = next(c for c in result["nb"].cells if c.get("id") == "speed")
            text = "".join(o.get("text", "") for o in speed.outputs if o.get("name") == "stdout")
            measured += [f"{label}: {line}" for line in text.splitlines()]
    return (
        table(["`course/06_compile.ipynb`, run with", "wall s", "CPU s", "slowest cell s"], rows)
        + "\n\nIts speed cell (inference, median of many calls, each model compiled by Inductor in that run):\n\n"
        + "```\n"
        + "\n".join(measured)
        + "\n```"
    )


def grader_section(runs: int) -> str:
    rows = []
    for path in sorted(SOLUTIONS.glob("*.ipynb")):
        results, slow = repeat(partial(run_grader, [path]), runs)
        alone_wall, alone_cpu = median([w for w, _ in results]), median([c for _, c in results])
        with tempfile.TemporaryDirectory() as tmp:
            copies = [Path(tmp) / f"learner{n}_{path.name}" for n in range(BATCH)]
            for copy in copies:
                copy.write_bytes(path.read_bytes())
            batch_wall, batch_cpu = run_grader(copies)
        rows.append(
            [
                f"`{path.stem}`",
                f"{alone_wall:.1f}",
                f"{alone_cpu:.1f}",
                f"{batch_wall:.1f}",
                f"{batch_wall / BATCH:.1f}",
                f"{batch_cpu / BATCH:.1f}",
                f"{len(results)}{' (slow: 1 run)' if slow else ''}",
            ]
        )
    return table(
        [
            "chapter",
            "1 submission: wall s",
            "CPU s",
            f"{BATCH} submissions: wall s",
            "wall s each",
            "CPU s each",
            "runs (alone)",
        ],
        rows,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per measurement; the median is shown")
    args = parser.parse_args()
    body = (
        "### Notebooks, fresh kernel each\n\n"
        + notebooks_section(args.runs)
        + "\n\n### Grader, `python -m grader grade` on the solutions notebook\n\n"
        + grader_section(args.runs)
        + "\n\n### Chapter 06: compile time and speed-ups\n\n"
        + compile_section()
    )
    how = (
        f"How measured: `.venv/bin/python -m bench.bench_course --runs {args.runs}`. Notebooks: nbclient, "
        "fresh kernel, kernel start included in wall/CPU; 'cells s' sums the cells' own times. "
        f"Median of {args.runs} run(s); 1 run where the first took over {SLOW:.0f} s. Grader: one command "
        f"for one submission, and one command for {BATCH} copies (graded one per core, each in its own "
        "nbval process and sandbox); CPU "
        "includes kernels and pytest."
    )
    print(write_section("course", "Course notebooks and grading time", how, body).read_text())


if __name__ == "__main__":
    main()
