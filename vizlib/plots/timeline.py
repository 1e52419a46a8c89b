"""When did each thing happen, and what ran at the same time? A timeline (a Gantt chart).

Overlap is the whole point of much of what PyTorch does for speed: DDP all-reduces one
bucket of gradients while backward computes the next, a data loader's workers prepare
batches while the model trains, CUDA streams copy while kernels run. Whether two things
really overlapped is a question about intervals of time, and a picture answers it at a
glance where a table of numbers does not.

``timeline(lanes)`` draws one horizontal lane per activity (a rank's backward, its
communication, a worker...), top to bottom in the order given, and one bar per interval
``(start, end, label)`` in it, the label written inside the bar when it fits. Times are
whatever unit the caller measured in (the x label says which; milliseconds by default).
Intervals of one lane that overlap in time (work queued while earlier work still runs)
are drawn as thinner bars one above the other, so none hides another. Each lane has a
colour; lanes that show the same kind of activity can share one, and a ``legend`` names
the colours.
"""

from __future__ import annotations

import heapq
import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import matplotlib.pyplot as plt
import torch
from matplotlib.axes import Axes
from matplotlib.collections import PolyCollection
from matplotlib.colors import is_color_like
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.patches import Patch
from matplotlib.textpath import text_to_path

from ..errors import VizlibTypeError, VizlibValueError
from .style import NOTEBOOK_WIDTH

Interval = tuple[float, float, str]

LANE_INCHES = 0.32
BAR_HEIGHT = 0.7  # of a lane
LABEL_POINTS = 7
# A label is written inside its bar when the bar is at least this many points taller than
# the label (a bar a fraction of a pixel tall under a label is a black blob, not a label)...
LABEL_HEIGHT_ROOM = 2.0
# ... and this many points wider than it.
LABEL_WIDTH_ROOM = 4.0


@dataclass(frozen=True)
class _Bar:
    """One bar drawn: its interval, the middle and height of it in lane units, its label."""

    start: float
    end: float
    middle: float
    height: float
    label: str


def timeline(
    lanes: Mapping[str, Sequence[Interval]],
    *,
    colours: Mapping[str, str] | None = None,
    legend: Mapping[str, str] | None = None,
    title: str = "Timeline",
    xlabel: str = "time (ms)",
    ax: Axes | None = None,
) -> Figure:
    """Draw ``lanes`` (lane name -> its ``(start, end, label)`` intervals) as a Gantt chart.

    - ``colours``: lane name -> a matplotlib colour; lanes left out take the next colour
      of matplotlib's cycle, one per lane.
    - ``legend``: text -> colour, e.g. ``{"backward": "tab:blue", "all-reduce":
      "tab:orange"}`` when lanes of several ranks share two colours; drawn right of the axes.
    - ``ax``: draw into this Axes (a panel of a larger figure) instead of a new figure.

    Returns the Figure (closed, so that Jupyter shows it once, through the return value).
    An interval may have zero length (an instant): it is drawn as a thin line.
    """
    checked = _check_lanes(lanes)
    lane_colours = _lane_colours(checked, colours)
    legend_colours = _check_legend(legend)
    own_figure = ax is None
    if ax is None:
        height = 1.4 + LANE_INCHES * len(checked)
        ax = plt.figure(figsize=(NOTEBOOK_WIDTH, height)).add_subplot()
    elif not isinstance(ax, Axes):
        raise VizlibTypeError(f"ax must be a matplotlib Axes (e.g. from plt.subplots()), not {type(ax).__name__}.")
    start = min(s for intervals in checked.values() for s, _, _ in intervals)
    end = max(e for intervals in checked.values() for _, e, _ in intervals)
    span = (end - start) or 1.0
    ax.set_xlim(start - 0.01 * span, end + 0.01 * span)
    ax.set_ylim(len(checked) - 0.5, -0.5)  # the first lane on top

    drawn = [
        _draw_lane(ax, row, intervals, lane_colours[name]) for row, (name, intervals) in enumerate(checked.items())
    ]
    ax.set_yticks(range(len(checked)), list(checked), fontsize=8, parse_math=False)
    ax.set_xlabel(xlabel, parse_math=False)
    ax.set_title(title, fontsize=10, parse_math=False)
    ax.grid(axis="x", alpha=0.3)
    ax.set_axisbelow(True)  # grid lines behind the bars
    if legend_colours:  # right of the axes, outside: it never covers a bar or a label
        legend_box = ax.legend(
            handles=[Patch(color=c, label=text) for text, c in legend_colours.items()],
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            fontsize=8,
            frameon=False,
        )
        for text in legend_box.get_texts():
            text.set_parse_math(False)
    fig = ax.get_figure(root=True)
    if not isinstance(fig, Figure):
        raise VizlibValueError("ax is not on a figure: pass an Axes made by plt.subplots() or fig.add_subplot().")
    if own_figure:
        fig.tight_layout()
    lane_points = _lane_points(ax, fig, len(checked))  # once the layout has sized the axes
    for collection, bars in drawn:
        _edges_for(collection, bars, lane_points)
        _write_labels(ax, fig, bars, lane_points)
    if own_figure:
        plt.close(fig)  # shown once in Jupyter, through the returned value
    return fig


def _draw_lane(ax: Axes, row: int, intervals: list[Interval], colour: str) -> tuple[PolyCollection | None, list[_Bar]]:
    """Draw a lane's intervals as bars, in one collection (one artist per bar, for a profiler's
    thousands of kernels, took longer to draw than to make), overlapping ones stacked thinner
    (``_tracks``); returns the collection (None for an empty lane) and the bars drawn."""
    tracks = _tracks(intervals)
    height = BAR_HEIGHT / max(len(tracks), 1)
    bars = [
        _Bar(s, e, row - BAR_HEIGHT / 2 + (number + 0.5) * height, height, label)
        for number, track in enumerate(tracks)
        for s, e, label in track
    ]
    if not bars:
        return None, bars
    collection = PolyCollection(
        [
            [
                (b.start, b.middle - height / 2),
                (b.start, b.middle + height / 2),
                (b.end, b.middle + height / 2),
                (b.end, b.middle - height / 2),
            ]
            for b in bars
        ],
        facecolors=colour,
        # white edges keep touching bars apart; an instant keeps its colour to be seen
        edgecolors=[colour if b.end == b.start else "white" for b in bars],
        linewidths=0.8,
    )
    ax.add_collection(collection, autolim=False)
    return collection, bars


def _lane_points(ax: Axes, fig: Figure, lanes: int) -> float:
    """How high a lane is drawn, in points, from the axes' size on the figure."""
    return ax.get_position().height * fig.get_figheight() * 72 / lanes


def _edges_for(collection: PolyCollection | None, bars: list[_Bar], lane_points: float) -> None:
    """No white edges for bars thinner than an edge or two (thousands of overlapping intervals in
    one lane): the edges would cover them all, and the lane would look idle. They are drawn in
    their colour instead, a band as dense as the work is."""
    if collection is not None and bars[0].height * lane_points < 3.0:  # (a collection has bars)
        collection.set_edgecolor(collection.get_facecolor())


def _write_labels(ax: Axes, fig: Figure, bars: list[_Bar], lane_points: float) -> None:
    """Write each bar's label inside it where it fits: the bar as drawn, in the axes as laid out
    (long lane names and a legend make them narrower than the figure), is taller and wider than
    the label, with room to spare. Measured in points, from the axes' size on the figure."""
    width_points = ax.get_position().width * fig.get_figwidth() * 72
    low, high = ax.get_xlim()
    points_per_unit = width_points / (high - low)
    font = FontProperties(size=LABEL_POINTS)
    for bar in bars:
        if not bar.label or bar.height * lane_points < LABEL_POINTS + LABEL_HEIGHT_ROOM:
            continue
        room = (bar.end - bar.start) * points_per_unit - LABEL_WIDTH_ROOM
        if room <= 0 or room < len(bar.label) * LABEL_POINTS * 0.3:  # too narrow to measure it
            continue
        if text_to_path.get_text_width_height_descent(bar.label, font, ismath=False)[0] <= room:
            ax.text(
                (bar.start + bar.end) / 2,
                bar.middle,
                bar.label,
                ha="center",
                va="center",
                fontsize=LABEL_POINTS,
                clip_on=True,
                parse_math=False,
            )


def _tracks(intervals: list[Interval]) -> list[list[Interval]]:
    """Split a lane's intervals into tracks in which none overlap (earliest start first,
    each into the first track free by then): overlapping bars are drawn thinner, one above
    the other, so that each stays visible. The tracks still busy are kept in a heap by the
    time they end, and those free again in a heap by their number: a profiler's thousands of
    queued kernels are split without scanning every track for each."""
    tracks: list[list[Interval]] = []
    busy: list[tuple[float, int]] = []  # (when it ends, track)
    free: list[int] = []
    for interval in sorted(intervals, key=lambda i: (i[0], i[1])):
        while busy and busy[0][0] <= interval[0]:
            heapq.heappush(free, heapq.heappop(busy)[1])
        if free:
            number = heapq.heappop(free)
            tracks[number].append(interval)
        else:
            number = len(tracks)
            tracks.append([interval])
        heapq.heappush(busy, (interval[1], number))
    return tracks


def _check_lanes(lanes: object) -> dict[str, list[Interval]]:
    """The lanes as a plain dict of float intervals, or a clear error saying what is wrong."""
    example = 'e.g. vz.timeline({"backward": [(0.0, 3.5, "layer 2")], "all-reduce": [(3.6, 4.2, "bucket 0")]})'
    if not isinstance(lanes, Mapping):
        raise VizlibTypeError(
            f"timeline expects a dict of lane name -> list of (start, end, label) intervals, "
            f"not {type(lanes).__name__}; {example}."
        )
    if not lanes:
        raise VizlibValueError(f"timeline got no lanes: nothing to draw; {example}.")
    checked: dict[str, list[Interval]] = {}
    for name, intervals in lanes.items():
        if not isinstance(name, str):
            raise VizlibTypeError(f"lane names are strings (they label the lanes), not {name!r}.")
        if isinstance(intervals, str | bytes) or not isinstance(intervals, Sequence):
            raise VizlibTypeError(
                f"lane {name!r} must hold a list of (start, end, label) intervals, not {type(intervals).__name__}."
            )
        checked[name] = [_check_interval(name, interval) for interval in intervals]
    if not any(checked.values()):
        raise VizlibValueError(f"every lane of the timeline is empty: nothing to draw; {example}.")
    return checked


def _check_interval(lane: str, interval: object) -> Interval:
    if not (isinstance(interval, Sequence) and not isinstance(interval, str) and len(interval) == 3):
        raise VizlibTypeError(
            f"lane {lane!r}: each interval is a (start, end, label) triple, e.g. (0.0, 2.5, 'bucket 0'); "
            f"got {interval!r}."
        )
    start, end, label = interval
    times = []
    for what, value in (("start", start), ("end", end)):
        time = _real(value)
        if time is None:
            raise VizlibTypeError(f"lane {lane!r}: the {what} of {interval!r} must be a number, not {value!r}.")
        if not math.isfinite(time):
            raise VizlibValueError(f"lane {lane!r}: the {what} of {interval!r} is not finite; give a measured time.")
        times.append(time)
    if not isinstance(label, str):
        raise VizlibTypeError(
            f"lane {lane!r}: the label of {interval!r} must be a string (use '' for none), not {label!r}."
        )
    if times[1] < times[0]:
        raise VizlibValueError(
            f"lane {lane!r}: interval {interval!r} ends before it starts; intervals are (start, end, label)."
        )
    return times[0], times[1], label


def _real(value: object) -> float | None:
    """``value`` as a float if it is a real number: Python's, NumPy's (``np.arange`` gives
    np.int64, measured times np.float32) or a 0-d tensor; None if not, a bool included
    (True is no time)."""
    if isinstance(value, torch.Tensor):
        if value.dim() != 0 or value.dtype == torch.bool or value.is_complex():
            return None
        return float(value.item())
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    return float(value)


def _lane_colours(lanes: dict[str, list[Interval]], colours: Mapping[str, str] | None) -> dict[str, str]:
    """Each lane's colour: the caller's, else the next one of matplotlib's colour cycle."""
    if colours is None:
        colours = {}
    if not isinstance(colours, Mapping):
        raise VizlibTypeError(f"colours maps lane names to colours, e.g. {{'backward': 'tab:blue'}}; got {colours!r}.")
    unknown = [name for name in colours if name not in lanes]
    if unknown:
        raise VizlibValueError(
            f"colours names lanes that the timeline does not have: {unknown}; its lanes: {list(lanes)}."
        )
    for name, colour in colours.items():
        if not is_color_like(colour):
            raise VizlibValueError(
                f"colour {colour!r} of lane {name!r} is not a colour matplotlib knows, e.g. 'tab:blue'."
            )
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    return {name: colours.get(name, cycle[row % len(cycle)]) for row, name in enumerate(lanes)}


def _check_legend(legend: Mapping[str, str] | None) -> dict[str, str]:
    if legend is None:
        return {}
    if not isinstance(legend, Mapping):
        raise VizlibTypeError(f"legend maps text to colours, e.g. {{'all-reduce': 'tab:orange'}}; got {legend!r}.")
    for text, colour in legend.items():
        if not is_color_like(colour):
            raise VizlibValueError(f"legend entry {text!r}: {colour!r} is not a colour matplotlib knows.")
    return dict(legend)
