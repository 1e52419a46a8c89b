"""What starting ranks from a notebook costs with coursekit.ranks.run_ranks.

run_ranks starts its ranks as forks of multiprocessing's fork server, which imports torch
(and what DDP and FSDP import) once, the first time; the function travels by value. So the
first call of a session pays the server's start, and every later call only the forks, the
unpickling and gloo's rendezvous. Measured in a fresh Python per series (the first call
must meet no server), for a function that returns at once and for one that builds a DDP
model and runs a step. Writes bench/results/ranks.md.

    .venv/bin/python -m bench.bench_ranks
"""

from __future__ import annotations

import json
import subprocess
import sys

from bench.report import median, table, write_section
from harness.paths import REPO

CALLS = 6  # per fresh process: the first (the server starts), then later ones
SERIES = 3  # fresh processes

ONE_SERIES = """
import json, sys, time
import torch
from coursekit.ranks import run_ranks

def nothing(rank, world_size):
    return rank

def ddp_step(rank, world_size):
    from torch.nn.parallel import DistributedDataParallel as DDP
    model = DDP(torch.nn.Linear(8, 8))
    model(torch.ones(2, 8)).sum().backward()
    return rank

if __name__ == "__main__":
    fn, world_size, calls = {"nothing": nothing, "ddp_step": ddp_step}[sys.argv[1]], int(sys.argv[2]), int(sys.argv[3])
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        run_ranks(fn, world_size, show_output=False)
        times.append(time.perf_counter() - start)
    print(json.dumps(times))
"""


def series(function: str, world_size: int) -> list[float]:
    """Seconds of each of CALLS calls in one fresh Python."""
    out = subprocess.run(
        [sys.executable, "-c", ONE_SERIES, function, str(world_size), str(CALLS)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(out.splitlines()[-1])


def main() -> None:
    rows = []
    for function in ("nothing", "ddp_step"):
        for world_size in (2, 4):
            runs = [series(function, world_size) for _ in range(SERIES)]
            first = median([r[0] for r in runs])
            later = median([t for r in runs for t in r[1:]])
            rows.append([f"`{function}`", str(world_size), f"{first:.2f}", f"{later:.3f}"])
    write_section(
        "ranks",
        "Starting ranks from a notebook (run_ranks)",
        f"How measured: `.venv/bin/python -m bench.bench_ranks`. {SERIES} fresh Python processes, each calling "
        f"`run_ranks` {CALLS} times; the first call starts the fork server, the later calls reuse it. "
        "Seconds per call, whole call (ranks started, function run, results back, ranks reaped), median.",
        table(["function", "ranks", "first call s", "later calls s"], rows),
    )


if __name__ == "__main__":
    main()
