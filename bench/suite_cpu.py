"""Where `make test`'s CPU goes: every process the test suite starts, by what it is.

The suite is CPU-bound on 2 cores (both busy nearly all the time), so its wall-clock time
is its CPU time over two; making it faster means finding the processes that spend it.
pytest's --durations cannot: a test's seconds include the kernels, ranks, browsers and
sandboxes it starts, and say nothing of which of them worked. Linux's process accounting
(the `acct` package: `accton` makes the kernel write one record per process that ends,
killed ones included, with its CPU time and parent) can; a sampler of `ps` every 0.3 s adds
each process's command line, which the record lacks. Each process is then put in a group
by its own command line and those of its ancestors (a kernel under bubblewrap is one the
grader graded).

Root and `apt-get install acct` are needed (accounting is the kernel's, for the whole
machine: run it on an otherwise idle one).

    .venv/bin/python -m bench.suite_cpu [-- pytest arguments]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from bench.report import table, write_section
from harness.paths import REPO

SAMPLE_EVERY = 0.3  # seconds between `ps` samples: a process that lives less is named by its record alone


@dataclass
class Process:
    comm: str  # the record's 16-character command name
    cpu: float  # user + system seconds
    parent: int


def accounting_records(path: Path) -> dict[int, Process]:
    """`dump-acct`'s lines (fields split by '|': comm, version, utime, stime, elapsed, uid,
    gid, memory, io, pid, ppid, ...; times in centiseconds) by pid."""
    out = subprocess.run(["dump-acct", str(path)], capture_output=True, text=True, check=True).stdout
    records = {}
    for line in out.splitlines():
        fields = [f.strip() for f in line.split("|")]
        pid, ppid = int(fields[9]), int(fields[10])
        records[pid] = Process(fields[0], (float(fields[2]) + float(fields[3])) / 100, ppid)
    return records


def sampled_commands(path: Path) -> tuple[dict[int, str], dict[int, int]]:
    """Each pid's longest command line seen by the sampler, and its first-seen parent (a
    record's parent is the one at exit, often init once its parent has gone)."""
    commands: dict[int, str] = {}
    parents: dict[int, int] = {}
    for line in path.read_text(errors="replace").splitlines():
        parts = line.split(None, 2)
        if len(parts) < 2 or not (parts[0].isdigit() and parts[1].isdigit()):
            continue
        pid, command = int(parts[0]), parts[2] if len(parts) > 2 else ""
        if len(command) > len(commands.get(pid, "")):
            commands[pid] = command
        parents.setdefault(pid, int(parts[1]))
    return commands, parents


# (group, pattern on the process's own command line, pattern on its ancestors' or None)
GROUPS = [
    ("ranks and their fork servers (run_ranks)", r"multiprocessing\.forkserver", None),
    ("kernels the grader graded", r"ipykernel", r"bwrap|grader"),
    ("kernels of the browser tests' JupyterLab", r"ipykernel", r"jupyterlab|lab\.py"),
    ("kernels of nbval (course/, solutions/), answer runs and other tests", r"ipykernel", None),
    ("Chromium and Playwright", r"chrom|playwright", None),
    ("JupyterLab servers", r"jupyter|lab\.py", None),
    ("the grader's nbval runs, one per submission", r"grader\.host, pytest", None),
    ("grader commands", r"-m grader", None),
    ("pytest-xdist workers (collection, nbval's comparisons, in-process tests)", r"exec\(eval\(sys\.stdin", None),
    ("torchrun and its rank scripts", r"torch\.distributed\.run|job\.py|ddp_train|broken\.py", None),
    ("nbval in a pytest of its own (test_outputs_on_other_cpus)", r"pytest -o addopts=", None),
    ("packaging tests' venvs (pip, probes)", r"\bpip\b|/venv/bin/python|_probe\.py", None),
    ("Graphviz dot", r"^\S*\bdot\b", None),
]


def group_of(command: str, ancestors: str) -> str:
    for name, own, above in GROUPS:
        if re.search(own, command) and (above is None or re.search(above, ancestors)):
            return name
    return "other (pytest itself, tests' short Python runs, shells)"


def by_group(
    records: dict[int, Process], commands: dict[int, str], parents: dict[int, int]
) -> tuple[dict[str, float], Counter[str]]:
    """CPU seconds per group, and how many processes each has."""
    cpu: dict[str, float] = {}
    count: Counter[str] = Counter()
    for pid, process in records.items():
        chain: list[str] = []
        up = parents.get(pid, process.parent)
        while up and len(chain) < 12:
            chain.append(commands.get(up, records[up].comm if up in records else ""))
            up = parents.get(up, records[up].parent if up in records else 0)
        name = group_of(commands.get(pid, process.comm), " ".join(chain))
        cpu[name] = cpu.get(name, 0.0) + process.cpu
        count[name] += 1
    return cpu, count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pytest_args", nargs="*", help="passed to pytest (default: make test's own options)")
    args = parser.parse_args()
    for tool in ("accton", "dump-acct"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} is missing: run as root after `apt-get install acct` (Linux's process accounting)")
    work = Path(tempfile.mkdtemp(prefix="suite-cpu-"))
    accounting, samples = work / "pacct", work / "ps.txt"
    accounting.touch()
    subprocess.run(["accton", str(accounting)], check=True, capture_output=True)
    sampler = subprocess.Popen(
        ["bash", "-c", f"while true; do ps -eo pid=,ppid=,args= >> {samples}; sleep {SAMPLE_EVERY}; done"]
    )
    load_before = os.getloadavg()[0]
    start = time.monotonic()
    try:
        run = subprocess.run([sys.executable, "-m", "pytest", *args.pytest_args], cwd=REPO)
    finally:
        wall = time.monotonic() - start
        sampler.kill()
        subprocess.run(["accton", "off"], capture_output=True)
    records = accounting_records(accounting)
    cpu, count = by_group(records, *sampled_commands(samples))
    total = sum(cpu.values())
    rows = [
        [name, str(count[name]), f"{seconds:.0f}", f"{seconds / total:.0%}"]
        for name, seconds in sorted(cpu.items(), key=lambda kv: -kv[1])
    ]
    body = table(["processes", "how many", "CPU s", "share"], rows)
    status = run.returncode
    body += (
        f"\n\nIn all: {total:.0f} CPU seconds in {wall:.0f} s of wall-clock time (pytest's exit status: "
        f"{status}). Load average before the suite started: {load_before:.1f} (the machine line below "
        "is written after it, so its load average is the suite's own)."
    )
    how = (
        "`.venv/bin/python -m bench.suite_cpu` (as root, with Debian's `acct`): the whole test suite "
        "under Linux's process accounting, each process's CPU time put in a group by its command "
        "line and its ancestors' (bench/suite_cpu.py says how)."
    )
    print(write_section("suite_cpu", "Where the test suite's CPU goes", how, body).read_text())
    return run.returncode


if __name__ == "__main__":
    raise SystemExit(main())
