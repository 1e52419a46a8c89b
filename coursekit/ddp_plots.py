"""Chapter 05b's pictures of DDP's communication: when each bucket's all-reduce ran beside
backward (``draw_overlap``), and what one all-reduce costs as the message grows
(``draw_allreduce_cost``).

The numbers are measured on the ranks by the chapter's cells; these functions only draw
them. Times are in milliseconds, sizes in bytes, bandwidths in GB/s (10**9 bytes a second).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator

import vizlib as vz
from vizlib.plots import NOTEBOOK_WIDTH

Interval = tuple[float, float, str]
BACKWARD, ALL_REDUCE = "backward", "all-reduce"
COLOURS = {BACKWARD: "tab:blue", ALL_REDUCE: "tab:orange"}
WORLD_COLOURS = {2: "tab:green", 4: "tab:purple", 8: "tab:red"}


def draw_overlap(runs: Mapping[str, Sequence[Mapping[str, Sequence[Interval]]]]) -> Figure:
    """One panel per run, on one time axis: for each rank a lane of backward's layers and a
    lane of the buckets' all-reduces. ``runs`` maps a panel title to what each rank
    measured, in rank order: ``{"backward": [(start, end, label)...], "all-reduce": [...]}``
    in ms from the start of that rank's backward."""
    if not runs:
        raise ValueError("draw_overlap needs at least one run: {title: [rank 0's lanes, rank 1's lanes, ...]}")
    for title, ranks in runs.items():
        for rank, lanes in enumerate(ranks):
            if set(lanes) != {BACKWARD, ALL_REDUCE}:
                raise ValueError(
                    f"run {title!r}, rank {rank}: expected the lanes {BACKWARD!r} and {ALL_REDUCE!r}, "
                    f"got {sorted(lanes)}"
                )
    lanes_per_panel = max(2 * len(ranks) for ranks in runs.values())
    fig, axes = plt.subplots(
        len(runs),
        1,
        sharex=True,
        squeeze=False,
        figsize=(NOTEBOOK_WIDTH, 0.9 + (0.3 * lanes_per_panel + 0.7) * len(runs)),
    )
    for row, (ax, (title, ranks)) in enumerate(zip(axes[:, 0], runs.items(), strict=True)):
        lanes = {
            f"rank {rank} · {kind}": list(measured[kind]) for rank, measured in enumerate(ranks) for kind in COLOURS
        }
        colours = {name: COLOURS[name.split(" · ")[1]] for name in lanes}
        last = row == len(runs) - 1
        vz.timeline(
            lanes,
            colours=colours,
            legend=COLOURS if row == 0 else None,
            title=title,
            xlabel="time since this rank's backward began (ms)" if last else "",
            ax=ax,
        )
    # One time axis for every panel (each vz.timeline call fitted it to its own run).
    times = [
        t for ranks in runs.values() for lanes in ranks for kind in lanes for s, e, _ in lanes[kind] for t in (s, e)
    ]
    span = (max(times) - min(times)) or 1.0
    axes[0, 0].set_xlim(min(times) - 0.01 * span, max(times) + 0.01 * span)
    fig.tight_layout()
    plt.close(fig)  # shown once in Jupyter, through the returned value
    return fig


def _size_ticks(sizes: Sequence[int]) -> tuple[list[int], list[str]]:
    """Every other size, written as KiB or MiB."""
    ticks = sorted(sizes)[::2]
    return ticks, [f"{s >> 20} MiB" if s >= 1 << 20 else f"{s >> 10} KiB" for s in ticks]


def draw_allreduce_cost(
    seconds: Mapping[int, Mapping[int, float]], fits: Mapping[int, tuple[float, float]] | None = None
) -> Figure:
    """Two panels: the time of one all-reduce against its size (log-log), and the bus
    bandwidth, ``bytes / time * 2(N-1)/N``, against its size. ``seconds`` maps a world size
    N to {message bytes: median seconds}; ``fits`` maps N to (a, b) of ``time = a + b *
    bytes`` (seconds, seconds per byte), drawn dashed, with the latency floor ``a`` dotted."""
    if not seconds or not all(seconds.values()):
        raise ValueError("draw_allreduce_cost needs {world size: {bytes: seconds}} with at least one size measured")
    fig, (left, right) = plt.subplots(1, 2, figsize=(NOTEBOOK_WIDTH, 3.6))
    all_sizes: set[int] = set()
    for n, measured in seconds.items():
        colour = WORLD_COLOURS.get(n, "tab:grey")
        sizes = np.array(sorted(measured), dtype=float)
        times = np.array([measured[int(s)] for s in sizes])
        all_sizes.update(int(s) for s in sizes)
        left.plot(sizes, times * 1e3, "o-", color=colour, ms=4, label=f"N = {n}: measured")
        busbw = sizes / times * 2 * (n - 1) / n / 1e9
        right.plot(sizes, busbw, "o-", color=colour, ms=4, label=f"N = {n}")
        if fits and n in fits:
            a, b = fits[n]
            left.plot(sizes, (a + b * sizes) * 1e3, "--", color=colour, lw=1, label=f"N = {n}: a + b · size")
            left.axhline(a * 1e3, color=colour, ls=":", lw=1, label=f"N = {n}: latency floor a")
    ticks, labels = _size_ticks(sorted(all_sizes))
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.set_xticks(ticks, labels, rotation=45, fontsize=7)
        ax.xaxis.set_minor_locator(FixedLocator([]))
        ax.set_xlabel("message size (bytes)")
        ax.grid(alpha=0.3)
    left.set_yscale("log")
    left.set_ylabel("time of one all-reduce (ms)")
    left.set_title("Time: flat (latency), then proportional to size", fontsize=10)
    left.legend(fontsize=7)
    right.set_ylabel("bus bandwidth (GB/s)")
    right.set_title("busbw = size / time · 2(N-1)/N", fontsize=10)
    right.legend(fontsize=7, title="ranks", title_fontsize=7)
    right.set_ylim(bottom=0)
    fig.tight_layout()
    plt.close(fig)
    return fig
