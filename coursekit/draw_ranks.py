"""Pictures of what collectives do: every rank's tensor before and after, and a ring
all-reduce step by step.

Each element is a square with its value in it, one row of squares per rank. The colour
says where the value comes from: a value only one rank held gets that rank's colour, a
sum of several ranks' values gets purple, darker the more ranks it sums. Which ranks a
value sums is read off the value itself, so the chapter builds its tensors for that:
rank r starts with multiples of 10**r (1..9 times), so each decimal digit of a sum names
one contributing rank: 1 + 20 = 21 sums ranks 0 and 1; 2220 sums ranks 1, 2 and 3.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import torch
from matplotlib.axes import Axes
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from vizlib.plots import NOTEBOOK_WIDTH

RANK_COLOURS = ["#9ecae1", "#fdae6b", "#a1d99b", "#fc9272", "#bcbddc", "#fdd0a2", "#c7e9c0", "#d9d9d9"]
SUM_COLOURS = plt.get_cmap("Purples")


def contributors(value: float) -> set[int]:
    """The ranks whose digit is non-zero in ``value`` (see the module's docstring)."""
    digits = str(int(round(abs(value))))[::-1]
    return {rank for rank, digit in enumerate(digits) if digit != "0"}


def _colour(value: float, world_size: int) -> tuple[float, float, float, float]:
    ranks = contributors(value)
    if len(ranks) == 1:
        return to_rgba(RANK_COLOURS[min(ranks) % len(RANK_COLOURS)])
    if not ranks:
        return to_rgba("white")
    return SUM_COLOURS(0.35 + 0.5 * (len(ranks) - 1) / max(world_size - 1, 1))


def _draw_ranks(
    ax: Axes,
    tensors: Sequence[torch.Tensor],
    title: str,
    world_size: int,
    outlined: Sequence[int | None] = (),
    width: int | None = None,
) -> None:
    """One row of squares per rank; the square at index outlined[rank] gets a thick border.
    ``width``: room for that many squares (panels side by side share a scale)."""
    width = width or max(t.numel() for t in tensors)
    for rank, tensor in enumerate(tensors):
        y = len(tensors) - 1 - rank
        for i, value in enumerate(tensor.flatten().tolist()):
            colour = _colour(value, world_size)
            ax.add_patch(Rectangle((i, y), 0.94, 0.9, facecolor=colour, edgecolor="grey", linewidth=0.6))
            dark = sum(colour[:3]) < 1.4
            ax.text(
                i + 0.47,
                y + 0.45,
                f"{value:g}",
                ha="center",
                va="center",
                fontsize=8,
                color="white" if dark else "black",
            )
        mark = outlined[rank] if rank < len(outlined) else None
        if mark is not None:
            ax.add_patch(Rectangle((mark, y), 0.94, 0.9, fill=False, edgecolor="black", linewidth=2.2))
        ax.text(-0.15, y + 0.45, f"rank {rank}", ha="right", va="center", fontsize=9)
    ax.set_xlim(-1.3, width)
    ax.set_ylim(-0.2, len(tensors))
    ax.set_title(title, fontsize=10)
    ax.axis("off")


def draw_collectives(runs: dict[str, tuple[Sequence[torch.Tensor], Sequence[torch.Tensor]]]) -> Figure:
    """One row per collective: every rank's tensor before it (left) and after it (right).
    ``runs`` maps a label ("all_reduce") to (tensors before, tensors after), in rank order."""
    if not runs:
        raise ValueError("draw_collectives needs at least one collective: {name: (before, after)}")
    world_size = len(next(iter(runs.values()))[0])
    fig, axes = plt.subplots(
        len(runs),
        2,
        figsize=(NOTEBOOK_WIDTH, 0.55 * world_size * len(runs) + 0.6 * len(runs)),
        squeeze=False,
        gridspec_kw={"hspace": 0.6},
    )
    for row, (name, (before, after)) in enumerate(runs.items()):
        width = max(t.numel() for t in [*before, *after])
        _draw_ranks(axes[row][0], before, f"{name}: before", world_size, width=width)
        _draw_ranks(axes[row][1], after, f"{name}: after", world_size, width=width)
    plt.close(fig)  # shown once in Jupyter, through the returned value
    return fig


def draw_ring(
    states: Sequence[Sequence[torch.Tensor]],
    updated: Sequence[Sequence[int | None]],
    titles: Sequence[str],
    columns: int = 4,
) -> Figure:
    """The steps of a ring all-reduce, one panel per step: ``states[s][r]`` is rank r's
    buffer after step s, ``updated[s][r]`` the index of the element (chunk) it received in
    that step (outlined; None for none), ``titles[s]`` the panel's title."""
    if not (len(states) == len(updated) == len(titles)):
        raise ValueError(
            f"one entry per step in states, updated and titles: got {len(states)}, {len(updated)} and {len(titles)}"
        )
    world_size = len(states[0])
    rows = -(-len(states) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(3.1 * columns, (0.42 * world_size + 0.7) * rows), squeeze=False)
    for ax in axes.flat:
        ax.axis("off")
    # Not strict: the grid can have more panels than steps (the spares stay blank).
    for ax, state, outlined, title in zip(axes.flat, states, updated, titles, strict=False):
        _draw_ranks(ax, state, title, world_size, outlined)
    plt.close(fig)
    return fig
