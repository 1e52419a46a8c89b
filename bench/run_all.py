"""Run every bench/bench_*.py, then gather their sections into bench/RESULTS.md.

Each script runs in its own Python process, so one benchmark's imports, threads and peak
memory cannot change another's numbers, and a failing script does not stop the others.
Script bench_<name>.py writes bench/results/<name>.md; RESULTS.md is those sections in
the scripts' alphabetical order under a header naming the machine. A script that fails
gets a line saying so instead of its section (a section left from an earlier run is
deleted first, so it cannot pass for a new one), and run_all exits with status 1.

    .venv/bin/python -m bench.run_all      # what `make bench` runs
"""

from __future__ import annotations

import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

from bench.report import machine

BENCH = Path(__file__).resolve().parent


def run_scripts(bench_dir: Path) -> dict[str, int]:
    """Run each bench_*.py in ``bench_dir`` (from the repo root); its exit status by name."""
    status = {}
    for script in sorted(bench_dir.glob("bench_*.py")):
        name = script.stem.removeprefix("bench_")
        print(f"== {script.name}", flush=True)
        # An old section must never pass for a new one.
        (bench_dir / "results" / f"{name}.md").unlink(missing_ok=True)
        start = time.perf_counter()
        status[name] = subprocess.run(
            [sys.executable, "-m", f"{bench_dir.name}.{script.stem}"], cwd=bench_dir.parent
        ).returncode
        print(f"== {script.name}: exit {status[name]} after {time.perf_counter() - start:.0f} s", flush=True)
    return status


def results_text(bench_dir: Path, status: dict[str, int], header: str) -> str:
    """The header, then each script's section, or why it has none; then the sections no
    script here writes, as they are: figures taken on another machine (results/gpu.md, from
    make gpu-check on a GPU machine) that this one cannot measure again."""
    parts = [header.rstrip()]
    for name, code in status.items():
        section = bench_dir / "results" / f"{name}.md"
        if code != 0:
            parts.append(f"## {name}\n\n**bench_{name}.py failed (exit status {code}); no results.**")
        elif not section.exists():
            parts.append(f"## {name}\n\n**bench_{name}.py wrote no results/{name}.md.**")
        else:
            parts.append(section.read_text().rstrip())
    for section in sorted((bench_dir / "results").glob("*.md")):
        if section.stem not in status:
            parts.append(section.read_text().rstrip())
    return "\n\n".join(parts) + "\n"


def header() -> str:
    return (
        "# Benchmark results\n\n"
        f"Written by `make bench` (`python -m bench.run_all`) on {datetime.now():%Y-%m-%d %H:%M}. "
        f"Machine: {machine()}. How each figure is measured: bench/README.md."
    )


def main() -> int:
    status = run_scripts(BENCH)
    (BENCH / "RESULTS.md").write_text(results_text(BENCH, status, header()))
    print(f"wrote {BENCH / 'RESULTS.md'}")
    return 1 if any(status.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
