"""What every benchmark section shares: medians, the machine line, markdown tables, `dot`.

Each bench_*.py writes one markdown section to bench/results/<name>.md; these helpers
keep the sections alike so that run_all.py can simply concatenate them.
"""

from __future__ import annotations

import os
import platform
import resource
import statistics
import subprocess
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import psutil

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results"


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def machine() -> str:
    """One line naming the machine, so a reader knows what the numbers were taken on."""
    import torch

    return (
        f"{os.cpu_count()} CPUs ({platform.processor() or platform.machine()}), "
        f"{psutil.virtual_memory().total / 2**30:.0f} GiB RAM, Python {platform.python_version()}, "
        f"torch {torch.__version__}, {graphviz_version()}, load average "
        f"{os.getloadavg()[0]:.1f} at the start"
    )


def graphviz_version() -> str:
    """'graphviz 2.43.0' from `dot -V` (it prints to stderr)."""
    try:
        out = subprocess.run(["dot", "-V"], capture_output=True, text=True).stderr
    except FileNotFoundError:  # a GPU machine's image may have no Graphviz
        return "no Graphviz `dot`"
    return "graphviz " + out.split("version")[-1].split()[0] if "version" in out else "graphviz ?"


def table(header: list[str], rows: list[list[str]]) -> str:
    """A markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def write_section(name: str, title: str, how: str, body: str) -> Path:
    """bench/results/<name>.md: heading, how it was measured, the body, machine and date."""
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.md"
    path.write_text(
        f"## {title}\n\n{how}\n\n{body.rstrip()}\n\n_Machine: {machine()}. Date: {date.today().isoformat()}._\n"
    )
    return path


@dataclass
class DotRun:
    """One run of Graphviz: wall-clock and CPU seconds, and the output (None if it timed out)."""

    wall: float
    cpu: float
    output: bytes | None


def run_dot(dot_source: str, args: list[str], limit: float) -> DotRun:
    """Run `dot args` on ``dot_source``; CPU time is the child's user+system time.

    CPU time is reported next to wall-clock time because on a shared machine the wall
    clock mostly measures the neighbours, while `dot` is single-threaded: on an idle
    machine its wall time equals its CPU time.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    try:
        out = subprocess.run(
            ["dot", *args], input=dot_source.encode(), capture_output=True, timeout=limit, check=True
        ).stdout
    except subprocess.TimeoutExpired:
        out = None
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return DotRun(wall, cpu, out)
