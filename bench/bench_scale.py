"""vizlib at GPU scale, measured on this CPU: what a recording costs beside a plain step.

- µs per recorded op: a chain of small elementwise ops, recorded (``vz.graph``, every
  op) and run plainly (forward + ``torch.autograd.grad``); the difference over the ops.
- GPT-12 and GPT-48 (d=768, batch 8 × 64, coursekit's GPT): ``vz.graph(model, *batch)``
  (recording and folding, no drawing) over a plain forward + ``torch.autograd.grad`` of
  the parameters timed just before it in the same process; wall clock and CPU time
  (all threads), the median of the runs' ratios.
- GPT-12's peak memory: malloc's live bytes after every op (``bench.probes.PeakMemory``)
  above what was live before, plain step vs recording, and how many times a recording
  reads numbers to the host (``count_host_reads``) next to how many tensors it summarises.
- A Llama-3-8B-shaped model on the meta device (``bench.llama``): building it, drawing
  it folded (``vz.graph`` then ``to_svg``), and recording every op.
- GPT-12 where a step is the host's work alone (width 48, batch 2 × 8, one thread): its
  arithmetic is next to nothing, as a GPU's is to its host, so the ratio is what the
  recording's Python costs beside PyTorch's own.

Writes bench/results/scale.md.

    .venv/bin/python -m bench.bench_scale [--repeats 3] [--cases GPT-12 GPT-48]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch

import vizlib as vz
from bench.llama import meta_llama
from bench.probes import PeakMemory, count_host_reads
from bench.report import table, write_section
from coursekit.models import GPTConfig, make_gpt

CASES = {"GPT-12": 12, "GPT-48": 48}
BATCH = 8  # sequences of coursekit's block_size, 64


def clocked(fn: Callable[[], object]) -> tuple[float, float]:
    """Wall-clock and CPU seconds (every thread of the process) of ``fn()``."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def wall(fn: Callable[[], object]) -> float:
    """Wall-clock seconds of ``fn()``."""
    return clocked(fn)[0]


def per_op(
    steps: int, numel: int, repeats: int, device: str = "cpu", clock: Callable[[Callable[[], object]], float] = wall
) -> dict:
    """µs a recording adds per op, on a chain of ``2 * steps`` ops over ``numel`` elements on
    ``device``, each call timed by ``clock`` (a GPU's waits for the device: gpu_scale.py)."""

    def chain(x: torch.Tensor) -> torch.Tensor:
        for _ in range(steps):
            x = (x * 1.0001).sin()
        return x.sum()

    x = torch.randn(numel, device=device)

    def plain() -> None:
        leaf = x.clone().requires_grad_()
        torch.autograd.grad(chain(leaf), [leaf])

    plain()  # warm up both
    vz.graph(chain, x, max_nodes=None)
    ops = sum(n.kind == "op" for n in vz.graph(chain, x, max_nodes=None).nodes)
    extra = []
    for _ in range(repeats):
        p = clock(plain)
        r = clock(lambda: vz.graph(chain, x, max_nodes=None))
        extra.append((r - p) / ops * 1e6)
    return {"numel": numel, "ops": ops, "us": statistics.median(extra)}


def gpt(n_layer: int, repeats: int) -> dict:
    model, batch = make_gpt(GPTConfig(n_layer=n_layer), batch=BATCH)
    params = list(model.parameters())

    def plain() -> None:
        torch.autograd.grad(model(*batch), params)

    def record() -> None:
        vz.graph(model, *batch)

    plain()  # warm up both
    record()
    runs = []
    for _ in range(repeats):
        p = clocked(plain)
        r = clocked(record)
        runs.append((p, r))
    return {
        "plain": statistics.median(p[0] for p, _ in runs),
        "record": statistics.median(r[0] for _, r in runs),
        "wall": statistics.median(r[0] / p[0] for p, r in runs),
        "cpu": statistics.median(r[1] / p[1] for p, r in runs),
        "each": [r[0] / p[0] for p, r in runs],
    }


def memory_and_reads(n_layer: int) -> dict:
    model, batch = make_gpt(GPTConfig(n_layer=n_layer), batch=BATCH)
    params = list(model.parameters())

    def plain() -> None:
        torch.autograd.grad(model(*batch), params)

    plain()  # warm up both
    vz.graph(model, *batch)
    peaks = {}
    for name, fn in (("plain", plain), ("recording", lambda: vz.graph(model, *batch))):
        with PeakMemory() as m:
            fn()
        peaks[name] = m.extra / 2**20
    graphs: list = []
    reads = count_host_reads(lambda: graphs.append(vz.graph(model, *batch, max_nodes=None)))
    summarised = sum((n.value_stats is not None) + (n.grad_stats is not None) for n in graphs[0].nodes)
    params_mb = sum(p.numel() * p.element_size() for p in params) / 2**20
    return {"peaks": peaks, "reads": reads, "summarised": summarised, "params_mb": params_mb}


def host_bound(repeats: int) -> dict:
    """GPT-12 where a step is the host's work alone: CPU time of recording over plain, the
    median of ``10 * repeats`` pairs."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model, batch = make_gpt(GPTConfig(n_layer=12, n_embd=48, n_head=4, block_size=8, vocab=50), batch=2)
        params = list(model.parameters())

        def plain() -> None:
            torch.autograd.grad(model(*batch), params)

        def record() -> None:
            vz.graph(model, *batch)

        for _ in range(3):  # warm up both
            plain()
            record()
        runs = [(clocked(plain)[1], clocked(record)[1]) for _ in range(10 * repeats)]
    finally:
        torch.set_num_threads(threads)
    return {
        "plain": statistics.median(p for p, _ in runs),
        "record": statistics.median(r for _, r in runs),
        "ratio": statistics.median(r / p for p, r in runs),
    }


def llama() -> dict:
    build, _ = clocked(lambda: meta_llama())
    model, batch = meta_llama()
    graphs: list = []
    draw, _ = clocked(lambda: graphs.append(vz.graph(model, *batch)))
    svg, _ = clocked(lambda: graphs[0].to_svg())
    every, _ = clocked(lambda: graphs.append(vz.graph(model, *batch, depth=None, max_nodes=None)))
    return {
        "params": sum(p.numel() for p in model.parameters()),
        "build": build,
        "graph": draw,
        "svg": svg,
        "nodes": len(graphs[0].nodes),
        "every": every,
        "every_nodes": len(graphs[1].nodes),
        "saved_gib": graphs[0].saved_bytes / 2**30,
    }


def report(ops: list[dict], gpts: dict[str, dict], mem: dict | None, big: dict | None, host: dict | None) -> str:
    """The section's body from what has been measured so far (a stage not yet run says so)."""
    rows = [[f"{o['numel']:,}", str(o["ops"]), f"{o['us']:.0f} µs"] for o in ops]
    body = "µs a recording adds per op (a chain of `(x * 1.0001).sin()`, every op recorded):\n\n"
    body += table(["elements per tensor", "ops recorded", "added per op"], rows)
    rows = [
        [
            case,
            f"{g['plain']:.2f} s",
            f"{g['record']:.2f} s",
            f"{g['wall']:.2f}× (runs: {', '.join(f'{r:.2f}' for r in g['each'])})",
            f"{g['cpu']:.2f}×",
        ]
        if g
        else [case, "not measured (stopped before)", "", "", ""]
        for case, g in gpts.items()
    ]
    body += "\n\nRecording (`vz.graph(model, *batch)`: values, gradients, folding; no drawing) over a plain "
    body += f"forward + backward, batch {BATCH} × 64, d = 768 (target: GPT-12 within 1.2×):\n\n"
    body += table(["model", "plain", "recording", "ratio, wall clock", "ratio, CPU time"], rows)
    if mem:
        p = mem["peaks"]
        body += (
            f"\n\nGPT-12's peak memory above its parameters ({mem['params_mb']:.0f} MiB), batch {BATCH} × 64: "
            f"plain step {p['plain']:.1f} MiB, recording {p['recording']:.1f} MiB "
            f"({p['recording'] / p['plain']:.3f}×; target ≤ 1.1×). Host reads in one recording of every op: "
            f"{mem['reads']}, for {mem['summarised']} statistics (before this change: at least one per tensor)."
        )
    if big:
        body += (
            f"\n\nLlama-3-8B's shape on the meta device ({big['params'] / 1e9:.2f} billion parameters, batch "
            f"1 × 16): built in {big['build']:.1f} s; `vz.graph` {big['graph']:.1f} s, folded to {big['nodes']} "
            f"nodes (layers ×32), `to_svg` {big['svg']:.2f} s; every op ({big['every_nodes']} nodes) recorded in "
            f"{big['every']:.1f} s. Saved for backward, as autograd would keep it: {big['saved_gib']:.1f} GiB. "
            "Target: drawn in under 10 s."
        )
    if host:
        body += (
            f"\n\nGPT-12 where a step is the host's work alone (width 48, batch 2 × 8, one thread): plain step "
            f"{host['plain'] * 1e3:.1f} ms, recording {host['record'] * 1e3:.1f} ms of CPU time, "
            f"{host['ratio']:.2f}× (the median of the pairs' ratios)."
        )
    body += (
        "\n\nOn a GPU the same recording's cost is its host reads (each waits for the device) and its "
        "launches; these runs had no GPU, so the host-read count above stands in for it. On a GPU, "
        "`python -m bench.gpu_scale` measures them (results/gpu_scale.md)."
    )
    return body


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cases", nargs="*", default=list(CASES))
    args = parser.parse_args()
    how = (
        "One process, after a warm-up of each call; each plain step is timed just before the recording "
        "it is compared with, the median of the runs (GPT-48: fewer runs). The machine is shared: the "
        "CPU-time ratio counts the work done, the wall clock also the neighbours. Command: "
        "`.venv/bin/python -m bench.bench_scale`."
    )
    ops: list[dict] = []
    gpts: dict[str, dict] = dict.fromkeys(args.cases, {})
    mem = big = host = None

    def stage(name: str) -> None:  # the section so far, so that a stopped run still leaves its figures
        write_section("scale", "vizlib at GPU scale, measured on the CPU", how, report(ops, gpts, mem, big, host))
        print(f"{name} done", flush=True)

    big = llama()
    stage("llama")
    host = host_bound(args.repeats)
    stage("host-bound GPT-12")
    ops += [per_op(500, numel, args.repeats) for numel in (16, 4096, 1 << 16)]
    stage("per op")
    mem = memory_and_reads(12)
    stage("memory")
    for case in args.cases:
        gpts[case] = gpt(CASES[case], args.repeats if CASES[case] <= 12 else max(2, args.repeats - 1))
        stage(case)


if __name__ == "__main__":
    main()
