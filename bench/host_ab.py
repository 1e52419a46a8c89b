"""A recording's host time, this code against an earlier revision, in one process.

On a GPU a step of a transformer is its host's work (a few µs of Python and dispatch per
op, the kernels queued behind), so what a recording adds is the Python it runs. This
measures that on the CPU with models whose arithmetic is next to nothing: coursekit's
GPT-12 at width 48, batch 2 × 8, and, where ``transformers`` is installed, Hugging Face's
GPT-2 of the same size; one thread. vizlib at ``REV`` is copied out of git as the package
``vizlib_at_rev`` (vizlib's imports are relative) and imported beside this checkout's;
the plain step and the two recordings are called in turn, so the machine's load falls on
all three alike. Prints each median CPU time and what each recording adds over the plain
step; the figures go into bench/results/scale.md by hand.

With ``--gpu-path`` both packages read statistics as on an accelerator (``take_gpu_path``):
the calls a GPU's host pays for, made and timed on the CPU.

    .venv/bin/python -m bench.host_ab REV [--runs 100] [--gpu-path]
"""

from __future__ import annotations

import argparse
import importlib
import io
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import torch

import vizlib
from coursekit.models import GPTConfig, make_gpt

ROOT = Path(__file__).resolve().parent.parent


def vizlib_at(rev: str, into: Path) -> object:
    """vizlib as it was at git revision ``rev``, imported as ``vizlib_at_rev``."""
    archive = subprocess.run(["git", "archive", rev, "vizlib"], cwd=ROOT, check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    (into / "vizlib").rename(into / "vizlib_at_rev")
    sys.path.insert(0, str(into))
    return importlib.import_module("vizlib_at_rev")


def take_gpu_path(package: Any) -> None:
    """Make a vizlib package read a CPU tensor's statistics as it reads an accelerator's:
    values whole by ``moments``, big gradients held for one multi-tensor norm, every
    small piece batched, pieces of an accelerator's size."""
    summary = importlib.import_module(f"{package.__name__}.capture.summary")
    summary._BY_MOMENTS["cpu"] = True
    summary._BY_FOREACH["cpu"] = True
    summary._BATCHED["cpu"] = summary.FLOAT64_UP_TO
    summary._PIECE["cpu"] = summary._DEVICE_PIECE


# A model's plain step, and its recording by a given vizlib package.
Steps = tuple[Callable[[], object], Callable[[Any], object]]


def models() -> dict[str, Steps]:
    """Each model: its plain step, and its recording by a given vizlib."""
    torch.manual_seed(0)
    gpt, batch = make_gpt(GPTConfig(n_layer=12, n_embd=48, n_head=4, block_size=8, vocab=50), batch=2)
    params = list(gpt.parameters())
    found: dict[str, Steps] = {
        "GPT-12": (lambda: torch.autograd.grad(gpt(*batch), params), lambda vz: vz.graph(gpt, *batch)),
    }
    try:
        from transformers import GPT2Config, GPT2LMHeadModel  # type: ignore[import-not-found]
        from transformers.utils import logging  # type: ignore[import-not-found]
    except ImportError:
        print("Hugging Face GPT-2: not measured (transformers is not installed)")
        return found
    logging.set_verbosity_error()
    hf = GPT2LMHeadModel(GPT2Config(n_positions=16, n_embd=48, n_layer=12, n_head=4, vocab_size=50))
    ids, hf_params = torch.randint(0, 50, (2, 8)), list(hf.parameters())

    def loss(i: torch.Tensor) -> torch.Tensor:
        return hf(input_ids=i, labels=i).loss

    found["Hugging Face GPT-2"] = (
        lambda: torch.autograd.grad(loss(ids), hf_params),
        lambda vz: vz.graph(loss, ids, params=hf),
    )
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rev", help="the git revision to compare with, e.g. HEAD~3")
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--gpu-path", action="store_true", help="read statistics as on an accelerator")
    args = parser.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        before = vizlib_at(args.rev, Path(tmp))
        if args.gpu_path:
            for package in (before, vizlib):
                take_gpu_path(package)
        for name, (plain, record) in models().items():
            calls: dict[str, Callable[[], object]] = {
                "plain": plain,
                args.rev: partial(record, before),
                "this checkout": partial(record, vizlib),
            }
            for call in calls.values():
                for _ in range(5):  # warm-up
                    call()
            times: dict[str, list[float]] = {k: [] for k in calls}
            for _ in range(args.runs):
                for k, call in calls.items():
                    start = time.process_time()
                    call()
                    times[k].append(time.process_time() - start)
            median = {k: statistics.median(v) * 1e3 for k, v in times.items()}
            added = {k: median[k] - median["plain"] for k in (args.rev, "this checkout")}
            print(f"{name}: plain step {median['plain']:.2f} ms of CPU time")
            for k, extra in added.items():
                print(f"  {k}: {median[k]:.2f} ms, {median[k] / median['plain']:.2f}x, adds {extra:.2f} ms")
            ratio = added["this checkout"] / added[args.rev]
            print(f"  what a recording adds, this checkout / {args.rev}: {ratio:.3f}")


if __name__ == "__main__":
    main()
