"""vizlib on a CUDA device: what a recording costs beside a plain step where the device is fast.

On a CPU one op takes long enough to hide a recording's bookkeeping; on a GPU it does not,
and every read of a number waits for the device's queue. So this measures, on the GPU:

- µs a recording adds per op (the chain of ``bench_scale.per_op``, on the device);
- GPT-12 and GPT-48 (coursekit's GPT, d=768, batch 8 × 64) and, where ``transformers`` is
  installed, Hugging Face's GPT-2 small (batch 4 × 128, built from its config): a plain
  forward + ``torch.autograd.grad`` against ``vz.graph`` (recording and folding, no drawing),
  each timed between ``torch.cuda.synchronize()`` calls, the median of the runs' ratios;
- their peak device memory (``torch.cuda.max_memory_allocated``) above what was allocated
  before the call (the parameters), plain against recording: no ``.grad`` is alive in either;
- host reads in one recording (``bench.probes.count_host_reads``);
- where the recording's time goes: what one kernel launch costs the host, GPT-12's recording
  with its statistics left out (``Summaries`` asked for nothing), and its recording under
  cProfile (``--profile``), the top functions.

Writes bench/results/gpu_scale.md; without CUDA it says so and writes nothing. Not a bench_*.py:
`make bench` runs on machines without a GPU, and keeps this section as it was written (run_all.py).

    python -m bench.gpu_scale [--repeats 5] [--profile]
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import pstats
import statistics
import time
from collections.abc import Callable, Iterator

import torch

import vizlib as vz
from bench.bench_scale import per_op
from bench.probes import count_host_reads
from bench.report import table, write_section
from coursekit.models import GPTConfig, make_gpt
from vizlib.capture import Summaries

DEVICE = "cuda"
GPTS = {"GPT-12": 12, "GPT-48": 48}


def synced(fn: Callable[[], object]) -> float:
    """Seconds of ``fn()``, the device's queue empty before and after."""
    torch.cuda.synchronize()
    start = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    return time.perf_counter() - start


def peak_above_start(fn: Callable[[], object]) -> int:
    """The most bytes the device held during ``fn()`` above what it held before."""
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    fn()
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - before


def compare(plain: Callable[[], object], record: Callable[[], object], repeats: int) -> dict:
    """Plain step and recording, each timed right after the other; peaks and host reads."""
    plain()
    record()  # warm up both
    runs = [(synced(plain), synced(record)) for _ in range(repeats)]
    extra_plain, extra_record = peak_above_start(plain), peak_above_start(record)
    base = torch.cuda.memory_allocated()
    return {
        "plain": statistics.median(p for p, _ in runs),
        "record": statistics.median(r for _, r in runs),
        "ratio": statistics.median(r / p for p, r in runs),
        "each": [r / p for p, r in runs],
        "peak_plain": extra_plain / 2**20,
        "peak_record": extra_record / 2**20,
        "base": base / 2**20,
        "reads": count_host_reads(record),
    }


def gpt(n_layer: int, repeats: int) -> dict:
    model, (idx, targets) = make_gpt(GPTConfig(n_layer=n_layer), batch=8)
    model.to(DEVICE)
    batch = idx.to(DEVICE), targets.to(DEVICE)
    params = list(model.parameters())
    return compare(lambda: torch.autograd.grad(model(*batch), params), lambda: vz.graph(model, *batch), repeats)


def hf_gpt2(repeats: int) -> dict | str:
    """Hugging Face's GPT-2 small from its config (random weights, nothing downloaded)."""
    try:
        from transformers import GPT2Config, GPT2LMHeadModel  # type: ignore[import-not-found]
        from transformers.utils import logging  # type: ignore[import-not-found]
    except ImportError as err:
        return f"not measured: transformers is not installed ({err})"
    logging.set_verbosity_error()
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_positions=128)).to(DEVICE)
    ids = torch.randint(0, 50257, (4, 128), device=DEVICE)
    params = list(model.parameters())

    def loss(i: torch.Tensor) -> torch.Tensor:
        return model(input_ids=i, labels=i).loss

    return compare(lambda: torch.autograd.grad(loss(ids), params), lambda: vz.graph(loss, ids, params=model), repeats)


def launch_us(calls: int = 2000) -> float:
    """µs of the host's time per kernel launch: ``x.sum()`` of a 256K-element tensor."""
    x = torch.randn(1 << 18, device=DEVICE)
    return synced(lambda: [x.sum() for _ in range(calls)]) / calls * 1e6


@contextlib.contextmanager
def no_statistics() -> Iterator[None]:
    """Recordings that ask ``Summaries`` for nothing (no values, statistics or norms): what
    the rest of a recording costs, its hooks and its bookkeeping."""
    saved = {name: getattr(Summaries, name) for name in ("describe", "stats", "norm")}
    Summaries.describe = lambda self, t, gradient=False: (None, None)  # type: ignore[method-assign]
    Summaries.stats = lambda self, t, gradient=False: None  # type: ignore[method-assign]
    Summaries.norm = lambda self, g: None  # type: ignore[method-assign]
    try:
        yield
    finally:
        for name, method in saved.items():
            setattr(Summaries, name, method)


def profile_gpt12(lines: int = 30) -> str:
    """The top functions of one GPT-12 recording by their own time, as cProfile prints them."""
    model, (idx, targets) = make_gpt(GPTConfig(n_layer=12), batch=8)
    model.to(DEVICE)
    batch = idx.to(DEVICE), targets.to(DEVICE)
    vz.graph(model, *batch)

    def recorded() -> None:
        vz.graph(model, *batch)
        torch.cuda.synchronize()

    profiler = cProfile.Profile()
    profiler.runcall(recorded)
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(lines)
    return out.getvalue()


def report(ops: list[dict], models: dict[str, dict | str], launch: float) -> str:
    rows = [[f"{o['numel']:,}", str(o["ops"]), f"{o['us']:.0f} µs"] for o in ops]
    body = "µs a recording adds per op (a chain of `(x * 1.0001).sin()` on the GPU, every op recorded):\n\n"
    body += table(["elements per tensor", "ops recorded", "added per op"], rows)
    rows = []
    for name, m in models.items():
        if isinstance(m, str):
            rows.append([name, m, "", "", "", ""])
            continue
        rows.append(
            [
                name,
                f"{m['plain'] * 1e3:.1f} ms",
                f"{m['record'] * 1e3:.1f} ms",
                f"{m['ratio']:.2f}× (runs: {', '.join(f'{r:.2f}' for r in m['each'])})",
                f"{m['peak_plain']:.0f} → {m['peak_record']:.0f} MiB "
                f"({m['peak_record'] / m['peak_plain']:.3f}×; parameters {m['base']:.0f} MiB)",
                str(m["reads"]),
            ]
        )
    body += "\n\nRecording (`vz.graph`: values, gradients, folding; no drawing) over a plain forward + "
    body += "`torch.autograd.grad` of the parameters (targets: within 3×, peak memory within 1.1×):\n\n"
    header = ["model", "plain", "recording", "ratio", "peak above the parameters, plain → recording", "host reads"]
    body += table(header, rows)
    bare = models.get("GPT-12 without statistics")
    if isinstance(bare, dict):
        body += (
            f"\n\nOne kernel launch costs this host {launch:.0f} µs (`x.sum()`, 256K elements). GPT-12's recording "
            f"with no statistics asked for (values, statistics and norms left out, the hooks and bookkeeping "
            f"kept) is {bare['ratio']:.2f}× its plain step: the rest of the ratio is the statistics' kernel launches."
        )
    return body


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--profile", action="store_true", help="print where GPT-12's recording spends its time")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device here: gpu_scale measures nothing (bench_scale is the CPU's)")
        return
    how = (
        f"One process on {torch.cuda.get_device_name()}, after a warm-up of each call; each plain step "
        "timed right before the recording it is compared with, between `torch.cuda.synchronize()` calls; "
        "medians of the runs. Command: `python -m bench.gpu_scale`."
    )
    ops = [per_op(500, numel, args.repeats, DEVICE, synced) for numel in (16, 4096, 1 << 16)]
    print("per op done", flush=True)
    models: dict[str, dict | str] = {}
    for name, layers in GPTS.items():
        models[name] = gpt(layers, args.repeats)
        print(name, "done", flush=True)
    models["Hugging Face GPT-2 small (4 × 128)"] = hf_gpt2(args.repeats)
    with no_statistics():
        models["GPT-12 without statistics"] = gpt(12, args.repeats)
    launch = launch_us()
    path = write_section("gpu_scale", "vizlib at GPU scale, measured on a GPU", how, report(ops, models, launch))
    print(path.read_text(), flush=True)
    if args.profile:
        print(profile_gpt12(), flush=True)


if __name__ == "__main__":
    main()
