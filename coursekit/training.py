"""The course's training loop: small and complete, the same wherever it runs.

Chapter 03b builds a training step piece by piece (zero_grad, forward, backward, clipping,
optimizer step, scheduler step) and then trains with this loop, so later chapters and the
benchmarks can train the same way without copying it. Models follow the convention of
``coursekit.models`` (and nanoGPT): ``model(*batch)`` returns the scalar loss.

The progress bar is tqdm's text bar on stdout with a fixed format: no rates, no times, and
redrawn every tenth of the way rather than every so many seconds. Run twice, a notebook
that trains prints the same final line, so nbval can compare it like any other output.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence, Sized
from dataclasses import dataclass, field
from typing import TypeVar

import torch
from torch import nn
from torch.optim import Optimizer
from torch.optim.lr_scheduler import LRScheduler
from tqdm import tqdm

T = TypeVar("T")

# What the bar shows: "train: 100%|██████████| 300/300, loss 0.5433". Rates and elapsed
# times are left out on purpose: they differ on every run.
BAR_FORMAT = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt}{postfix}"


@dataclass
class History:
    """What ``train`` saw at each optimizer step, one entry per step, ready to plot."""

    loss: list[float] = field(default_factory=list)
    lr: list[float] = field(default_factory=list)  # the learning rate the step used
    grad_norm: list[float] = field(default_factory=list)  # total gradient norm, before clipping


def progress_bar(items: Sequence[T], desc: str) -> tqdm:
    """Iterate over ``items`` behind a text progress bar whose output is the same every run."""
    total = len(items)
    return tqdm(
        items,
        desc=desc,
        total=total,
        file=sys.stdout,
        bar_format=BAR_FORMAT,
        mininterval=0,
        miniters=max(1, total // 10),
        maxinterval=math.inf,
    )


def train(
    model: nn.Module,
    optimizer: Optimizer,
    batches: Sequence[tuple],
    *,
    scheduler: LRScheduler | None = None,
    max_grad_norm: float | None = None,
    desc: str = "train",
) -> History:
    """Take one optimizer step per batch and return the loss, learning rate and gradient
    norm of every step.

    Each step: clear the gradients, ``loss = model(*batch)``, ``loss.backward()``, measure
    the total gradient norm (and clip it to ``max_grad_norm`` when given), then step the
    optimizer and, if there is one, the scheduler. The model is put in training mode first,
    so dropout and batch statistics are on.
    """
    if not isinstance(batches, Sized):
        raise TypeError(
            f"train() needs the batches as a list (anything with len()), for its progress bar; "
            f"got {type(batches).__name__}. Pass list(batches)."
        )
    model.train()
    history = History()
    bar = progress_bar(batches, desc)
    for batch in bar:
        optimizer.zero_grad()
        loss = model(*batch)
        if not (isinstance(loss, torch.Tensor) and loss.dim() == 0):
            shape = tuple(loss.shape) if isinstance(loss, torch.Tensor) else type(loss).__name__
            raise TypeError(
                f"train() expects model(*batch) to return the scalar loss, as coursekit's models "
                f"do; got {shape}. Compute the loss inside forward (or wrap the model)."
            )
        loss.backward()
        if max_grad_norm is None:
            norm = torch.nn.utils.get_total_norm([p.grad for p in model.parameters() if p.grad is not None])
        else:
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        history.lr.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        history.loss.append(loss.item())
        history.grad_norm.append(norm.item())
        bar.set_postfix_str(f"loss {history.loss[-1]:.4f}", refresh=False)
    return history


@torch.no_grad()
def evaluate(model: nn.Module, batches: Sequence[tuple]) -> float:
    """The mean of the losses of ``batches``, in eval mode and without recording a graph.

    The model's mode (train or eval) is put back afterwards, so evaluating in the middle of
    training does not silently leave dropout off for the steps that follow.
    """
    if len(batches) == 0:
        raise ValueError("evaluate() needs at least one batch.")
    was_training = model.training
    model.eval()
    try:
        return sum(model(*batch).item() for batch in batches) / len(batches)
    finally:
        model.train(was_training)
