"""How big are the gradients, layer by layer? Vanishing and exploding gradients, made visible.

A deep network trains only if the gradient that reaches its first layers is neither
vanishingly small (those layers stop learning) nor huge (updates blow the weights up).
``grad_flow(model)`` draws, for every trainable parameter, the mean and the max of
``|grad|`` on a log scale, with the two danger zones shaded, so a learner sees the
problem without reading a number. ``GradFlowMonitor`` records the same numbers at every
optimizer step (and at every step a ``GradScaler`` skips) and draws them as a layers x steps
heatmap.

Parameters appear in registration order (``model.named_parameters()``): the order in
which ``__init__`` created them. For ``nn.Sequential`` and for models that create their
layers in the order they use them, that is forward order. Biases are kept: they are
trained too, and their gradients vanish along with the weights'.

Only ``.grad`` is read (detached, never written), and hooks are only ever added to the
optimizer machinery (optimizers, and the ``step`` of a GradScaler handed to the monitor),
never to the model, so looking never changes training.
"""

from __future__ import annotations

import contextlib
import math
import sys
import threading
import warnings
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import MaxNLocator
from matplotlib.transforms import ScaledTranslation
from torch import nn
from torch.amp import GradScaler
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

from ..errors import VizlibTypeError, VizlibValueError
from ..memory import refuse_without_memory
from .style import NOTEBOOK_WIDTH

# Rules of thumb, on mean |grad|. Below VANISHING, a weight of size ~0.01 trained with
# SGD at lr 0.01 moves by a millionth of itself per step: it has stopped learning.
# Above EXPLODING, one such step moves a typical weight by more than its own size.
VANISHING = 1e-6
EXPLODING = 10.0

# Gradient magnitudes are drawn within this range (the numbers, in grad_magnitudes, are
# not clipped): beyond it a gradient is vanishing or exploding all the same, and a log
# axis spanning more decades makes matplotlib's tick maths overflow.
DRAWN_RANGE = (1e-200, 1e200)

# Colours shared by both plots, so a learner learns them once.
OK_COLOUR = "tab:blue"
VANISHING_COLOUR = "paleturquoise"
EXPLODING_COLOUR = "tab:red"
NO_GRAD_COLOUR = "tab:red"

# Sparse layouts that store each element at most once (``values()`` of a COO tensor may repeat one).
_COMPRESSED = (torch.sparse_csr, torch.sparse_csc, torch.sparse_bsr, torch.sparse_bsc)

# Above this many parameters, only every k-th name is written on the axis.
MAX_LABELS = 40

# How the heatmap marks a step GradScaler skipped: its column hatched, in the legend too.
SKIPPED_STYLE: dict[str, Any] = {"fill": False, "hatch": "xx", "edgecolor": "black", "lw": 0.6}

# Points from the bottom of a heatmap to the bottom of its x axis's tick labels and label,
# at matplotlib's default sizes: where its legend starts.
BELOW_X_LABEL = 34
# Height of one row of a legend at 8 pt, in inches: a heatmap's figure is made taller by its
# legend's rows, so that the heatmap keeps its room.
LEGEND_ROW = 0.17


@dataclass(frozen=True, slots=True)
class ParamGrad:
    """Gradient magnitude of one parameter: the numbers behind one column of the plot.

    GradFlowMonitor keeps one per parameter per step, for the whole run: slots (no ``__dict__``)
    and a name shared by all steps (``_magnitudes``) keep a long run's history small.
    """

    name: str
    mean: float | None  # mean |grad|; None when the parameter has no .grad
    max: float | None  # max |grad|; None when the parameter has no .grad

    @property
    def status(self) -> str:
        """'ok', 'vanishing', 'exploding', 'non-finite' (NaN/Inf) or 'no grad'."""
        if self.mean is None or self.max is None:
            return "no grad"
        if not (math.isfinite(self.mean) and math.isfinite(self.max)):
            return "non-finite"
        if self.mean < VANISHING:
            return "vanishing"
        if self.mean > EXPLODING:
            return "exploding"
        return "ok"


def _trainable_parameters(model: nn.Module, caller: str) -> list[tuple[str, nn.Parameter]]:
    """(name, parameter) for every parameter that requires grad, in registration order
    (``_trainable``), refusing a model that has none."""
    if not isinstance(model, nn.Module):
        raise VizlibTypeError(
            f"{caller} expects an nn.Module (got {type(model).__name__}); "
            "pass the model whose gradients you want to see, e.g. vz.grad_flow(model)."
        )
    params = _trainable(model)
    if not params:
        raise VizlibValueError(
            f"{caller}: {type(model).__name__} has no parameter that requires grad, so it has "
            "no gradients to show. Check that it has layers and that they are not frozen."
        )
    return params


def _trainable(model: nn.Module) -> list[tuple[str, nn.Parameter]]:
    """(name, parameter) for every parameter that requires grad and has elements.

    Frozen parameters are left out: they get no gradient by design, so showing them as
    "no grad" would cry wolf; so are empty ones (``nn.Linear(0, 3)``'s weight), which have
    no gradient to size.
    """
    return [(n, p) for n, p in model.named_parameters() if p.requires_grad and p.numel() > 0]


@torch.no_grad()
def _magnitudes(params: list[tuple[str, nn.Parameter]], scale: float = 1.0) -> list[ParamGrad]:
    """Mean and max |grad| of each parameter, read back to Python in one transfer (per device
    the gradients are on), divided by ``scale``: gradients that still carry GradScaler's scale
    are measured unscaled."""
    reductions = []
    for name, p in params:
        if p.grad is not None:
            reductions += _mean_and_max(name, p.grad.detach())
    numbers = iter([number / scale for number in _to_host(reductions)])
    return [
        # (named_parameters() builds its names anew at every call: interned, every step shares one)
        ParamGrad(name, None, None) if p.grad is None else ParamGrad(name, next(numbers), next(numbers))
        for name, p in ((sys.intern(n), p) for n, p in params)
    ]


def _to_host(reductions: list[torch.Tensor]) -> list[float]:
    """The 0-d tensors ``reductions`` as Python floats, each device's stacked and copied in one
    transfer: a copy per number would wait on the GPU once per parameter."""
    numbers = [0.0] * len(reductions)
    by_device: dict[torch.device, list[int]] = {}
    for i, r in enumerate(reductions):
        by_device.setdefault(r.device, []).append(i)
    for at in by_device.values():
        for i, number in zip(at, torch.stack([reductions[i] for i in at]).tolist(), strict=True):
            numbers[i] = number
    return numbers


def _mean_and_max(name: str, grad: torch.Tensor) -> list[torch.Tensor]:
    """Mean and max |grad| as two 0-d float64 tensors, on the gradient's device, over every
    element of the gradient: a sparse one (``nn.Embedding(sparse=True)``) counts the elements
    it does not store as the zeros they are, without making the dense tensor (an embedding's
    can be gigabytes)."""
    if grad.is_meta:
        raise VizlibValueError(
            f"The gradient of {name} is on the meta device: it has a shape but no values to measure. "
            "Run the model on a real device (model.to_empty(device='cpu'), then load or initialise its weights)."
        )
    refuse_without_memory(grad, f"The gradient of {name}")
    if grad.layout == torch.sparse_coo:
        stored = grad.coalesce().values()  # coalesced: an index given twice is one sum
    elif grad.layout in _COMPRESSED:  # CSR, CSC and their block forms: no repeats
        stored = grad.values()
    else:
        stored = grad if grad.layout == torch.strided else grad.to_dense()
    total, top = _abs_sum_and_max(stored)
    return [total / grad.numel(), top]


# Elements of a gradient measured at once: the temporaries of a measurement (|chunk|, in the
# gradient's dtype, and what a float64 sum of it needs) stay this small, where |grad| whole
# would be as big as the gradient, and its float64 mean twice that: a GPU near its limit
# would run out of memory for a plot.
CHUNK = 1 << 20


def _abs_sum_and_max(values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Sum (in float64) and max of ``|values|``, as 0-d float64 tensors on their device,
    measured chunk by chunk (``_chunks``) into two running totals: NaN and Inf come through as
    a whole-tensor reduction's would; no values: 0 and 0.

    The totals are updated in place rather than each chunk's kept for the end: on the CPU, small
    tensors kept between the chunks' temporaries stop the allocator from reusing their memory,
    and the process grew by most of the gradient's size all the same.
    """
    total = torch.zeros((), dtype=torch.float64, device=values.device)
    top = torch.zeros((), dtype=torch.float64, device=values.device)
    for chunk in _chunks(values):
        size = chunk.abs()  # complex: the modulus
        total += size.sum(dtype=torch.float64)
        top.copy_(torch.maximum(top, size.max().double()))  # NaN stays NaN
        del size  # freed before the next chunk's is made
    return total, top


def _chunks(t: torch.Tensor) -> Iterator[torch.Tensor]:
    """Views of ``t`` that together hold each of its elements once, none of more than CHUNK
    elements (a flat view split where the memory allows it; else rows, or pieces of rows), and
    none empty: they are measured without a copy."""
    if t.numel() == 0:
        return
    if t.numel() <= CHUNK:
        yield t
        return
    flat = _flat_view(t)
    if flat is not None:
        yield from flat.split(CHUNK)
        return
    row = t[0].numel()
    if row > CHUNK:  # one row is already too big: each in pieces
        for r in t:
            yield from _chunks(r)
        return
    yield from t.split(CHUNK // row)


def _flat_view(t: torch.Tensor) -> torch.Tensor | None:
    """All of ``t``'s elements as a 1-d view, in memory order, when they fill their memory
    without gaps (contiguous, or so once its dimensions are reordered: a transposed weight's
    gradient); None when a view cannot have them (it would be a copy)."""
    order = sorted(range(t.dim()), key=lambda d: t.stride(d), reverse=True)
    permuted = t.permute(order)
    return permuted.view(-1) if permuted.is_contiguous() else None


def grad_magnitudes(model: nn.Module) -> list[ParamGrad]:
    """The numbers behind ``grad_flow(model)``: one ParamGrad per trainable parameter.

    Handy to ask which layers are in trouble:
    ``[p.name for p in grad_magnitudes(model) if p.status == "vanishing"]``.
    """
    return _after_backward(model, "grad_magnitudes")


def _after_backward(model: nn.Module, caller: str) -> list[ParamGrad]:
    """Magnitudes of a model's gradients, refusing a model that has none yet."""
    magnitudes = _magnitudes(_trainable_parameters(model, caller))
    if all(p.status == "no grad" for p in magnitudes):
        raise VizlibValueError(
            f"{caller}: no parameter of {type(model).__name__} has a gradient yet. Call "
            "loss.backward() first (and look before optimizer.zero_grad(), which clears them)."
        )
    return magnitudes


# Longest parameter name written on an axis, in characters: a Hugging Face model's names
# ('model.text_model.encoder.layers.0.self_attn.q_proj.weight', 57) would take half the figure.
MAX_NAME = 36
# Width of an 8 pt character, in inches, near enough to size a figure for its names.
CHAR_INCHES = 8 * 0.6 / 72
# Of the names' length, what a figure of the default size already has room for, in inches.
NAME_ROOM = 1.2


@dataclass(frozen=True)
class _Names:
    """Parameter names as an axis writes them: ``shown`` (a common prefix dropped, then the
    middle of a name too long cut out) and ``prefix``, the one dropped ('' if none): the axis'
    label says which it is."""

    shown: list[str]
    prefix: str

    @property
    def inches(self) -> float:
        """Room the longest of them needs beyond what a default-sized figure has."""
        return max(0.0, CHAR_INCHES * max(map(len, self.shown)) - NAME_ROOM)

    @property
    def label(self) -> str:
        """The axis' label, on two lines (the heatmap's, along its side, is as long as the figure
        is high): the prefix the names were written without, if any."""
        return f"parameters, each name\nafter '{self.prefix}'" if self.prefix else ""

    @property
    def label_inches(self) -> float:
        """How long the axis' label is, in inches: a heatmap's figure is made at least as high."""
        return CHAR_INCHES * max(map(len, self.label.splitlines()), default=0)


def _axis_names(names: list[str]) -> _Names:
    """The names to write along an axis: all of them as they are when they are short; else
    without the dotted prefix all share ('bert.encoder.'), said in the axis' label, and each
    still too long with its middle cut out (``_shortened``). The data keeps the full names."""
    if max(map(len, names)) <= MAX_NAME:
        return _Names(names, "")
    prefix = _common_prefix(names)
    rest = [n[len(prefix) :] for n in names]
    for head in (True, False):  # the first component kept where that tells them all apart
        shown = _shortened(rest, head)
        if len(set(shown)) == len(set(rest)):
            return _Names(shown, prefix)
    return _Names([n if len(n) <= MAX_NAME else "…" + n[1 - MAX_NAME :] for n in rest], prefix)


def _common_prefix(names: list[str]) -> str:
    """The whole dotted components that every name starts with ('bert.encoder.'), leaving each
    name its last component; '' for a single name, which has nothing to be told apart from."""
    if len(names) < 2:
        return ""
    split = [n.split(".")[:-1] for n in names]
    common: list[str] = []
    for parts in zip(*split, strict=False):
        if len(set(parts)) > 1:
            break
        common.append(parts[0])
    return "".join(part + "." for part in common)


def _shortened(names: list[str], head: bool) -> list[str]:
    """``names`` in at most MAX_NAME characters each: those longer as their first component (if
    ``head``), an ellipsis and their last components, as many as fit in all of them (what tells
    layers apart is near the end: the layer's number, and weight or bias; the same number in
    each keeps the layers' names alike), or their last characters where that is none."""
    split = [n.split(".") for n in names]
    starts = [p[0] + ".…" if head and len(p) > 2 and len(p[0]) <= MAX_NAME // 4 else "…" for p in split]
    long = [(start, parts) for start, parts, n in zip(starts, split, names, strict=True) if len(n) > MAX_NAME]
    kept = min((k for k in (_fitting(start, parts) for start, parts in long) if k), default=0)
    return [
        n
        if len(n) <= MAX_NAME
        else start + ".".join(parts[-kept:])
        if kept and len(start) + len(".".join(parts[-kept:])) <= MAX_NAME
        else "…" + n[1 - MAX_NAME :]
        for start, parts, n in zip(starts, split, names, strict=True)
    ]


def _fitting(start: str, parts: list[str]) -> int:
    """How many of a name's last components fit in MAX_NAME characters after ``start``."""
    length = len(start) - 1
    for kept, part in enumerate(reversed(parts[1:])):
        length += len(part) + 1
        if length > MAX_NAME:
            return kept
    return len(parts) - 1


def _name_ticks(ax: Axes, names: _Names, axis: str) -> None:
    """Write parameter names along an axis, thinning them out when there are many, and which
    common prefix they were written without, if any."""
    every = max(1, math.ceil(len(names.shown) / MAX_LABELS))
    positions = list(range(0, len(names.shown), every))
    labels = [names.shown[i] for i in positions]
    # Names are written as they are: matplotlib would read one with two '$' as TeX math.
    if axis == "x":
        ax.set_xticks(positions, labels, rotation=90, fontsize=8, parse_math=False)
        if names.label:
            ax.set_xlabel(names.label.replace("\n", " "), fontsize=8, parse_math=False)
    else:
        ax.set_yticks(positions, labels, fontsize=8, parse_math=False)
        if names.label:
            ax.set_ylabel(names.label, fontsize=8, parse_math=False)


def _tight(fig: Figure) -> None:
    """``fig.tight_layout()``, without its warning: the figures are sized for their names, and
    a learner cannot act on a warning about matplotlib's layout. Twice: a colour bar keeps its
    aspect, so the first layout changes its width, and the second makes room for its label."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Tight layout not applied", UserWarning)
        fig.tight_layout()
        fig.tight_layout()


def grad_flow(model: nn.Module) -> Figure:
    """Plot mean and max |grad| of every trainable parameter of ``model``, after backward.

    The y axis is logarithmic because gradients of a deep network differ by orders of
    magnitude; the shaded bands mark vanishing (mean |grad| < 1e-6) and exploding
    (> 10) gradients. Parameters without a gradient are marked "no grad" in red at the
    bottom, NaN/Inf ones "NaN/Inf" at the top. Call it after ``loss.backward()`` and
    before ``optimizer.zero_grad()``.
    """
    magnitudes = _after_backward(model, "grad_flow")
    names = [p.name for p in magnitudes]
    mean = np.array([p.mean if p.status in ("ok", "vanishing", "exploding") else np.nan for p in magnitudes])
    high = np.array([p.max if p.status in ("ok", "vanishing", "exploding") else np.nan for p in magnitudes])
    # Drawn within DRAWN_RANGE: a log axis of a few hundred decades more overflows matplotlib.
    mean, high = np.clip(mean, 0, DRAWN_RANGE[1]), np.clip(high, 0, DRAWN_RANGE[1])
    mean = np.where((mean > 0) & (mean < DRAWN_RANGE[0]), DRAWN_RANGE[0], mean)
    high = np.where((high > 0) & (high < DRAWN_RANGE[0]), DRAWN_RANGE[0], high)

    positive = np.concatenate([mean[mean > 0], high[high > 0]])
    bottom = min([VANISHING, *positive]) / 30
    top = max([EXPLODING, *positive]) * 30
    # An all-zero gradient has no logarithm: draw it on the floor, where "vanishing" is.
    mean = np.where(mean == 0, bottom, mean)
    high = np.where(high == 0, bottom, high)

    shown = _axis_names(names)
    fig = plt.figure(figsize=(min(NOTEBOOK_WIDTH, max(6.0, 2.0 + 0.3 * len(names))), 4.5 + shown.inches))
    with _closed_on_error(fig):
        _draw_flow(fig.add_subplot(), magnitudes, shown, type(model).__name__, mean, high, bottom, top)
        _tight(fig)
    # Closed so that Jupyter shows it once, through the returned value, not twice.
    plt.close(fig)
    return fig


@contextlib.contextmanager
def _closed_on_error(fig: Figure) -> Iterator[None]:
    """Close ``fig`` if drawing it fails: pyplot would keep it, and show it, half drawn."""
    try:
        yield
    except BaseException:
        plt.close(fig)
        raise


def _draw_flow(
    ax: Axes,
    magnitudes: list[ParamGrad],
    names: _Names,
    model_name: str,
    mean: np.ndarray,
    high: np.ndarray,
    bottom: float,
    top: float,
) -> None:
    """grad_flow's picture, on ``ax``: ``mean`` and ``high`` are what is drawn of each
    parameter's mean and max |grad| (NaN: not drawn), ``bottom`` and ``top`` the y limits,
    ``names`` the parameters' names as the x axis writes them."""
    x = np.arange(len(magnitudes))
    ax.set_yscale("log")
    ax.set_ylim(bottom, top)
    ax.set_xlim(-0.7, len(magnitudes) - 0.3)
    ax.axhspan(bottom, VANISHING, color=VANISHING_COLOUR, alpha=0.5, lw=0)
    ax.axhspan(EXPLODING, top, color=EXPLODING_COLOUR, alpha=0.12, lw=0)
    ax.text(
        0.005,
        VANISHING,
        f" vanishing (< {VANISHING:g})",
        transform=ax.get_yaxis_transform(),
        va="top",
        fontsize=8,
        color="teal",
    )
    ax.text(
        0.005,
        EXPLODING,
        f" exploding (> {EXPLODING:g})",
        transform=ax.get_yaxis_transform(),
        va="bottom",
        fontsize=8,
        color=EXPLODING_COLOUR,
    )

    ax.vlines(x, mean, high, color="lightgrey", lw=2, zorder=1)
    ax.plot(x, mean, color=OK_COLOUR, lw=1, alpha=0.5, zorder=2)
    colours = {"ok": OK_COLOUR, "vanishing": "teal", "exploding": EXPLODING_COLOUR}
    ax.scatter(x, mean, c=[colours.get(p.status, "none") for p in magnitudes], s=30, zorder=3, clip_on=False)
    ax.scatter(x, high, marker="_", s=80, color="dimgrey", zorder=3)

    for i, p in enumerate(magnitudes):
        if p.status == "no grad":
            ax.plot(i, bottom, "x", color=NO_GRAD_COLOUR, ms=10, mew=2, clip_on=False, zorder=4)
            ax.annotate(
                "no grad",
                (i, bottom),
                xytext=(0, 8),
                textcoords="offset points",
                ha="center",
                fontsize=7,
                color=NO_GRAD_COLOUR,
                rotation=90,
            )
        elif p.status == "non-finite":
            ax.plot(i, top, "X", color=EXPLODING_COLOUR, ms=10, clip_on=False, zorder=4)
            ax.annotate(
                "NaN/Inf",
                (i, top),
                xytext=(0, -8),
                textcoords="offset points",
                ha="center",
                va="top",
                fontsize=7,
                color=EXPLODING_COLOUR,
                rotation=90,
            )

    _name_ticks(ax, names, "x")
    ax.set_ylabel("|grad| (log scale)")
    ax.set_title(
        f"Gradient flow through {model_name} (parameters in registration order)", fontsize=10, parse_math=False
    )
    ax.grid(axis="y", which="major", alpha=0.3)
    _flow_legend(ax, any(p.status == "no grad" for p in magnitudes))


def _flow_legend(ax: Axes, no_grad: bool) -> None:
    """grad_flow's legend, in a row under the parameters' names. Not inside the axes: it hid
    the last layers' points, where an exploding gradient plots; nor above them: there it took
    the place of a title set afterwards with matplotlib's default pad (``ax.set_title("mine")``,
    the usual way to retitle a figure). "no grad" is in it only where some parameter has none
    (``no_grad``)."""
    handles = [
        Line2D([], [], marker="o", color=OK_COLOUR, lw=1, label="mean |grad|"),
        Line2D([], [], marker="_", color="dimgrey", lw=0, ms=10, label="max |grad|"),
    ]
    if no_grad:
        handles.append(Line2D([], [], marker="x", color=NO_GRAD_COLOUR, lw=0, mew=2, label="no grad"))
    # 4 points under the names, whose height in points is the same whatever room the layout
    # then gives the axes
    below = ax.transAxes + ScaledTranslation(0, -(_x_axis_depth(ax) + 4) / 72, ax.figure.dpi_scale_trans)
    ax.legend(
        handles=handles,
        loc="upper center",
        bbox_to_anchor=(0.5, 0),
        bbox_transform=below,
        ncols=len(handles),
        borderaxespad=0,
        fontsize=8,
        frameon=False,
    )


def _x_axis_depth(ax: Axes) -> float:
    """How far below the axes their x axis reaches (ticks, names, label), in points."""
    drawn = ax.xaxis.get_tightbbox()
    return 0.0 if drawn is None else (ax.bbox.y0 - drawn.y0) * 72 / ax.figure.dpi


# Whether the optimizer steps on this thread are ones a drawing undoes (``steps_undone``).
_UNDONE = threading.local()


@contextlib.contextmanager
def steps_undone() -> Iterator[None]:
    """Optimizer steps on this thread meanwhile are no training: vz.graph runs a call to draw
    it and puts back what it changed (api.py), so no ``GradFlowMonitor`` records them."""
    depth = getattr(_UNDONE, "depth", 0)
    _UNDONE.depth = depth + 1
    try:
        yield
    finally:
        _UNDONE.depth = depth


class GradFlowMonitor:
    """Record gradient magnitudes at every optimizer step, then plot layers x steps.

    Create it before training and train as usual; every ``optimizer.step()`` of an
    optimizer that holds this model's parameters records one row, just before the step
    uses the gradients (a step given a closure, as LBFGS's, computes them itself: its row
    is recorded after it, of the closure's last evaluation)::

        with vz.GradFlowMonitor(model) as mon:
            for x, y in data:
                opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
        mon.plot()

    With mixed precision, hand it your GradScaler: ``vz.GradFlowMonitor(model, scaler=scaler)``.
    ``scaler.step(opt)`` skips the optimizer step when the gradients hold Inf/NaN (an
    overflow), and a skipped step runs no optimizer code for the monitor to notice: watching
    the scaler, it records that step too, its gradients as they are (Inf/NaN shown as such),
    its row listed in ``mon.skipped`` and its column hatched. A row is thus a step of training,
    skipped or not; ``len(mon.history) - len(mon.skipped)`` of them updated the weights.
    Gradients are recorded unscaled, as the step uses them: GradScaler unscales them before an
    ordinary optimizer's step, and a fused optimizer's (``fused=True``), handed them still
    scaled, are divided by the scale handed with them. A fused step runs even on Inf/NaN
    gradients (its kernel skips the update), so it is seen, and marked skipped, with or
    without ``scaler=``.

    The model's parameters are read at every step: a layer added or replaced during
    training is recorded from then on. A step that ``vz.graph`` draws is not recorded: the
    drawing undoes it. A hand-written update (``p -= lr * p.grad``) has no
    optimizer to watch: call ``mon.record()`` after ``backward()`` instead. ``close()`` (or
    leaving the ``with`` block) stops recording; so does dropping the monitor.
    """

    def __init__(self, model: nn.Module, scaler: GradScaler | None = None) -> None:
        params = _trainable_parameters(model, "GradFlowMonitor")
        if scaler is not None and not isinstance(scaler, GradScaler):
            raise VizlibTypeError(
                f"GradFlowMonitor: scaler= expects the torch.amp.GradScaler your loop steps with "
                f"(got {type(scaler).__name__}); leave it out if you train without one."
            )
        self._model = model
        self.model_name = type(model).__name__
        # every trainable parameter's name, in the order first seen (registration order)
        self.layers: list[str] = [n for n, _ in params]
        self.history: list[list[ParamGrad]] = []  # one row per step: the parameters then
        self.skipped: list[int] = []  # the rows of history whose optimizer step GradScaler skipped
        before = register_optimizer_step_pre_hook(_weak_hook(self, closure=False))
        after = register_optimizer_step_post_hook(_weak_hook(self, closure=True))
        removers = [before.remove, after.remove]
        if scaler is not None:
            removers.append(_SkipWatch.of(scaler).listen(weakref.WeakMethod(self._on_skipped_step)))
        # Removes the hooks on close(), or when the monitor is garbage-collected.
        self._unhook = weakref.finalize(self, _call_each, *removers)

    def record(self) -> None:
        """Record the current gradients as one more step."""
        self._record(scale=1.0, skipped=False)

    def _record(self, scale: float, skipped: bool) -> None:
        """Record the gradients, divided by ``scale`` (GradScaler's, where they still carry it),
        as one more step, ``skipped`` if GradScaler skipped the optimizer step that had them."""
        row = _magnitudes(_trainable(self._model), scale)
        known = set(self.layers)
        self.layers += [p.name for p in row if p.name not in known]
        if skipped:
            self.skipped.append(len(self.history))
        self.history.append(row)

    def _on_optimizer_step(self, optimizer: torch.optim.Optimizer) -> None:
        if self._trains(optimizer):
            self._record(*_scale_and_overflow(optimizer))

    def _on_skipped_step(self, optimizer: torch.optim.Optimizer) -> None:
        """GradScaler skipped ``optimizer``'s step: its gradients, unscaled and holding Inf/NaN,
        are still there to record."""
        if self._trains(optimizer):
            self._record(scale=1.0, skipped=True)

    def _trains(self, optimizer: torch.optim.Optimizer) -> bool:
        """Whether a step of ``optimizer`` trains this model: it holds some of its parameters,
        and it is no step that vz.graph draws, then undoes."""
        if getattr(_UNDONE, "depth", 0):
            return False
        ours = {id(p) for p in self._model.parameters()}
        return any(id(p) in ours for group in optimizer.param_groups for p in group["params"])

    @property
    def recording(self) -> bool:
        """True until close(): optimizer steps are being recorded."""
        return self._unhook.alive

    def close(self) -> None:
        """Stop recording (the history stays)."""
        self._unhook()

    def __enter__(self) -> GradFlowMonitor:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "recording" if self.recording else "closed"
        skipped = f" ({len(self.skipped)} skipped by GradScaler)" if self.skipped else ""
        return (
            f"<GradFlowMonitor of {self.model_name}: {len(self.layers)} layers, "
            f"{len(self.history)} steps{skipped}, {state}>"
        )

    def plot(self) -> Figure:
        """Heatmap of mean |grad|: one row per parameter (registration order top to bottom),
        one column per recorded step. Vanishing cells are pale turquoise, exploding or
        NaN/Inf ones red, cells without a gradient (or of a parameter the model did not
        have at that step) grey; the columns of steps GradScaler skipped are hatched.
        """
        if not self.history:
            raise VizlibValueError(
                "GradFlowMonitor has recorded nothing yet: train with an optimizer (each "
                "optimizer.step() records a step) or call mon.record() after loss.backward()."
            )
        # rows = layers, columns = steps. Clipping puts zero gradients in the "under"
        # colour and NaN/Inf ones (+inf here) in the "over" one; NaN (no grad) stays "bad".
        at = {name: i for i, name in enumerate(self.layers)}
        grid = np.full((len(self.layers), len(self.history)), np.nan)
        for step, row in enumerate(self.history):
            for p in row:
                grid[at[p.name], step] = _cell(p)
        missing = sum(len(row) for row in self.history) < grid.size
        grid = np.clip(grid, VANISHING / 10, EXPLODING * 10)
        names = _axis_names(self.layers)
        width = min(NOTEBOOK_WIDTH, 5.0 + 0.05 * grid.shape[1] + names.inches)
        legend = self._legend_entries(bool(np.isnan(grid).any()), missing)
        height = min(12.0, max(2.0 + 0.25 * len(self.layers), 1.2 + names.label_inches) + LEGEND_ROW * len(legend))
        fig = plt.figure(figsize=(width, height))
        with _closed_on_error(fig):
            self._draw(fig, grid, names, legend)
            _tight(fig)
        plt.close(fig)  # shown once, through the returned value
        return fig

    def _draw(self, fig: Figure, grid: np.ndarray, names: _Names, legend: list[Patch]) -> None:
        """The heatmap of ``grid`` (layers x steps; NaN: grey), its colour bar and ``legend``,
        its rows named ``names``."""
        cmap = plt.get_cmap("viridis").with_extremes(under=VANISHING_COLOUR, over=EXPLODING_COLOUR, bad="lightgrey")
        ax = fig.add_subplot()
        steps = grid.shape[1]
        image = ax.imshow(
            np.ma.masked_invalid(grid),
            aspect="auto",
            interpolation="nearest",
            cmap=cmap,
            norm=LogNorm(VANISHING, EXPLODING),
            extent=(0.5, steps + 0.5, len(self.layers) - 0.5, -0.5),
        )
        for step in self.skipped:  # column i spans i + 0.5 to i + 1.5: steps are numbered from 1
            ax.add_patch(Rectangle((step + 0.5, 0), 1, 1, transform=ax.get_xaxis_transform(), **SKIPPED_STYLE))
        fig.colorbar(image, ax=ax, extend="both").set_label("mean |grad|", fontsize=8)
        _name_ticks(ax, names, "y")
        steps_axis = ax.xaxis.get_major_locator()
        if isinstance(steps_axis, MaxNLocator):  # matplotlib's default AutoLocator is one
            steps_axis.set_params(integer=True)
        ax.set_xlabel("recorded step")
        ax.set_title(f"Gradient flow during training of {self.model_name}", fontsize=10, parse_math=False)
        _heatmap_legend(ax, legend)

    def _legend_entries(self, grey: bool, missing: bool) -> list[Patch]:
        """What the heatmap's colours at either end mean, and its grey cells (``grey``: there
        are some; ``missing``: some are of a parameter the model did not have then) and hatched
        columns, if any: a row of the legend each."""
        handles = [
            Patch(color=VANISHING_COLOUR, label=f"vanishing (< {VANISHING:g})"),
            Patch(color=EXPLODING_COLOUR, label=f"exploding (> {EXPLODING:g}) or NaN/Inf"),
        ]
        if grey:
            label = "no grad, or not a parameter at that step" if missing else "no grad"
            handles.append(Patch(color="lightgrey", label=label))
        if self.skipped:
            handles.append(Patch(label="skipped by GradScaler (Inf/NaN): no update", **SKIPPED_STYLE))
        return handles


def _heatmap_legend(ax: Axes, handles: list[Patch]) -> None:
    """The heatmap's legend, below it. Not above it: there it took the place of a title set
    afterwards with matplotlib's default pad (``ax.set_title("mine")``); nor along the colour
    bar, too short for the words."""
    # Under the axis label, a fixed distance down (a fraction of the axes' height put it
    # on the label's line in a short figure), and out from the right edge, into the
    # room under the parameters' names: from the left edge, it can leave the figure.
    below = ax.transAxes + ScaledTranslation(0, -BELOW_X_LABEL / 72, ax.figure.dpi_scale_trans)
    ax.legend(
        handles=handles,
        loc="upper right",
        bbox_to_anchor=(1, 0),
        bbox_transform=below,
        borderaxespad=0,
        fontsize=8,
        frameon=False,
    )


def _cell(p: ParamGrad) -> float:
    """One heatmap cell: mean |grad|, NaN for 'no grad' (grey), +inf for NaN/Inf (red)."""
    if p.status == "no grad":
        return math.nan
    if p.status == "non-finite" or p.mean is None:
        return math.inf
    return p.mean


def _scale_and_overflow(optimizer: torch.optim.Optimizer) -> tuple[float, bool]:
    """The scale that the gradients a step is about to use still carry, and whether GradScaler
    found Inf/NaN in them.

    GradScaler unscales the gradients before it calls an ordinary optimizer's step, and calls
    none where they hold Inf/NaN (``_SkipWatch`` sees those). An optimizer that unscales them
    itself (``_step_supports_amp_scaling``: a fused one) gets them still scaled, and, as
    attributes for the length of its step, the scale (None where ``scaler.unscale_`` came first)
    and the Inf/NaN flag; its step runs either way, its kernel skipping the update.
    """
    found_inf = getattr(optimizer, "found_inf", None)
    if not getattr(optimizer, "_step_supports_amp_scaling", False) or found_inf is None:
        return 1.0, False
    scale = getattr(optimizer, "grad_scale", None)
    return (1.0 if scale is None else float(scale)), bool(found_inf)


class _SkipWatch:
    """Tells its listeners about each optimizer step that one GradScaler skips.

    GradScaler has no hooks, and a step it skips runs no optimizer code for an optimizer hook
    to see, so its ``step`` is wrapped: on the instance (an attribute that shadows the class's
    method, and goes when the last listener does), never on the class, which would change every
    scaler in the process and which the course's grader puts back as a learner's tampering.
    """

    def __init__(self, scaler: GradScaler) -> None:
        self._scaler = scaler
        self._shadowed = "step" in vars(scaler)  # someone's own wrapper already on the instance
        self._step = scaler.step
        self._listeners: dict[int, weakref.WeakMethod] = {}

    @staticmethod
    def of(scaler: GradScaler) -> _SkipWatch:
        """The watch on ``scaler``'s steps: the one there is, or a new one."""
        watch = vars(scaler).get("step")
        if not isinstance(watch, _SkipWatch):
            watch = vars(scaler)["step"] = _SkipWatch(scaler)
        return watch

    def listen(self, listener: weakref.WeakMethod) -> Callable[[], None]:
        """Call ``listener`` (weakly held: a forgotten monitor is freed) with the optimizer of
        every step the scaler skips; returns what stops it."""
        key = id(listener)
        self._listeners[key] = listener
        return lambda: self._forget(key)

    def _forget(self, key: int) -> None:
        del self._listeners[key]
        if not self._listeners and vars(self._scaler).get("step") is self:
            if self._shadowed:
                vars(self._scaler)["step"] = self._step
            else:
                del vars(self._scaler)["step"]

    def __reduce__(self) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        """A copy of the scaler (``copy.deepcopy``, ``pickle``, ``torch.save``: they copy its
        ``__dict__``, this watch in it) steps as the scaler did before it was watched, unwatched:
        with its own wrapper, where it had one, else with the class's ``step`` bound to the copy
        (read when the copy has no attributes yet), which the copy then holds as an attribute of
        its own, a ``step`` in ``vars(copy)`` that calls the class's. The listeners are monitors
        of the original, not something a copy could hold (nor pickle: they are weak references)."""
        if self._shadowed:
            return _same, (self._step,)
        return getattr, (self._scaler, "step")

    def __call__(self, optimizer: torch.optim.Optimizer, *args: Any, **kwargs: Any) -> Any:
        """``scaler.step(optimizer, ...)``, then the listeners, if it did not call the optimizer's step."""
        if not isinstance(optimizer, torch.optim.Optimizer):  # no step hooks to tell whether it ran
            return self._step(optimizer, *args, **kwargs)
        ran: list[bool] = []
        handle = optimizer.register_step_pre_hook(lambda *_: ran.append(True))
        try:
            result = self._step(optimizer, *args, **kwargs)
        finally:
            handle.remove()
        if not ran:
            for listener in list(self._listeners.values()):
                alive = listener()
                if alive is not None:
                    alive(optimizer)
        return result


def _weak_hook(monitor: GradFlowMonitor, closure: bool) -> Callable[[torch.optim.Optimizer, tuple, dict], None]:
    """An optimizer hook that does not keep the monitor (and its model) alive, for the steps
    given a closure (``closure``: run after the step) or not (run before it).

    A step reads the gradients as they are before it (SGD with Nesterov momentum, on its
    multi-tensor path, adds to them in place as it goes), but one given a closure (LBFGS)
    computes them itself, inside: those of its last evaluation are there after it. The
    hooks are global to all optimizers; holding the monitor strongly would keep a forgotten
    monitor, and its model, in memory until the kernel restarts.
    """
    ref = weakref.ref(monitor)

    def hook(optimizer: torch.optim.Optimizer, args: tuple, kwargs: dict) -> None:
        alive = ref()
        # (args: those of the step, its self first)
        if alive is not None and (kwargs.get("closure", args[1] if len(args) > 1 else None) is not None) == closure:
            alive._on_optimizer_step(optimizer)

    return hook


def _same(value: Any) -> Any:
    """``value`` itself: what a pickled ``_SkipWatch`` of a scaler with its own ``step`` becomes."""
    return value


def _call_each(*removers: Callable[[], None]) -> None:
    for remove in removers:
        remove()
