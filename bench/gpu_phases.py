"""Where a GPT-12 recording's time goes on a GPU: the host's time per phase, and how busy the device is.

`gpu_scale.py` gives the ratio of a recording to a plain step; this says what to work on
next. It times `vz.graph(model, idx, targets)` (coursekit's GPT-12, d=768, batch 8 × 64) on
the host and until the device is done, shares the host's time among the recording's phases
as cProfile sees them, and counts with `torch.profiler` the kernels a plain step and a
recording launch, how long the device is busy in each, and which torch calls take the host's time.

    python -m bench.gpu_phases [--device cuda] [--repeats 9]

Prints; writes nothing (the figures go into bench/RESULTS.md by hand, with the machine).
Runs on a CPU too (`--device cpu`), where the device is the host.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import time
from collections.abc import Callable

import torch
from torch.profiler import ProfilerActivity, profile

import vizlib as vz
from coursekit.models import GPTConfig, make_gpt

# The phases of a recording: (file, function) as cProfile names them. The forward is the
# model's own, run under the recorder (its function mode's and module hooks' work included).
PHASES = {
    "forward (recorded)": ("coursekit/models.py", "forward"),
    "backward (hooked)": ("vizlib/capture/build.py", "_leaf_gradients"),
    "walk": ("vizlib/capture/walk.py", "walk"),
    "the graph's nodes (one per autograd node or stretch)": ("vizlib/capture/build.py", "_graph_of"),
    "which numbers are drawn": ("vizlib/capture/build.py", "_drawn_part"),
    "backward hooks put on": ("vizlib/capture/backward.py", "hook_backward"),
    "numbers read (fetch)": ("vizlib/capture/build.py", "_fill_in"),
    "saved for backward": ("vizlib/capture/build.py", "_kept_for_backward"),
    "autograd's names of what drawn nodes saved": ("vizlib/capture/build.py", "_name_saved"),
    "graph let go": ("vizlib/capture/build.py", "_let_go"),
    "folding": ("vizlib/transform.py", "simplify"),
}


def host_and_wall(fn: Callable[[], object], sync: Callable[[], None]) -> tuple[float, float]:
    """Seconds of ``fn()`` on the host (work maybe still queued), and until the device is done."""
    sync()
    start = time.perf_counter()
    fn()
    host = time.perf_counter() - start
    sync()
    return host, time.perf_counter() - start


def phase_shares(fn: Callable[[], object], n: int) -> dict[str, float]:
    """Each phase's share of ``n`` calls of ``fn`` under cProfile (which slows Python more than
    torch's C++: a share, not a time). Where a name matches several functions (every module's
    ``forward``), the outermost one: the one with the most time."""
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(n):
        fn()
    profiler.disable()
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    total = sum(own for _, _, own, _, _ in stats.values())
    shares = dict.fromkeys(PHASES, 0.0)
    for (path, _, name), (_, _, _, cumulative, _) in stats.items():
        for phase, (file, function) in PHASES.items():
            if name == function and path.replace("\\", "/").endswith(file):
                shares[phase] = max(shares[phase], cumulative / total)
    return shares


def profiled(fn: Callable[[], object], device: str, sync: Callable[[], None]) -> str:
    """Kernels launched, device busy time and the top torch calls by the host's time, of one call."""
    fn()
    sync()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profile(activities=activities) as prof:
        fn()
        sync()
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    busy = sum(e.device_time for e in kernels) / 1e3
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12, max_name_column_width=40)
    return f"{len(kernels)} device kernels, device busy {busy:.1f} ms\n{table}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    device, n = args.device, args.repeats
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    model, (idx, targets) = make_gpt(GPTConfig(n_layer=12), batch=8)
    model.to(device)
    idx, targets = idx.to(device), targets.to(device)
    params = list(model.parameters())
    calls = {
        "plain step": lambda: torch.autograd.grad(model(idx, targets), params),
        "plain forward": lambda: model(idx, targets),
        "recording": lambda: vz.graph(model, idx, targets),
    }
    for fn in calls.values():
        fn()
    print(f"{device}, torch {torch.__version__}; medians of {n}")
    host = {}
    for name, fn in calls.items():
        runs = [host_and_wall(fn, sync) for _ in range(n)]
        host[name] = statistics.median(h for h, _ in runs)
        wall = statistics.median(w for _, w in runs)
        print(f"  {name:14s} {wall * 1e3:7.1f} ms until the device is done, {host[name] * 1e3:7.1f} ms on the host")
    shares = phase_shares(calls["recording"], n)
    print("a recording's phases: the share under cProfile, and that share of the host's time")
    for name, share in sorted(shares.items(), key=lambda kv: -kv[1]):
        print(f"  {name:28s} {share * 100:5.1f}%  {share * host['recording'] * 1e3:7.2f} ms")
    print(f"  {'the rest':28s} {(1 - sum(shares.values())) * 100:5.1f}%")
    for name in ("plain step", "recording"):
        print(f"== {name}: {profiled(calls[name], device, sync)}")


if __name__ == "__main__":
    main()
