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

import math
from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.colors import is_color_like
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from ..errors import VizlibTypeError, VizlibValueError
from .style import NOTEBOOK_WIDTH

Interval = tuple[float, float, str]

LANE_INCHES = 0.32
BAR_HEIGHT = 0.7  # of a lane
LABEL_POINTS = 7
# A label is written inside its bar when the bar is at least this wide per character,
# as a fraction of the axis' width (7 pt characters on a figure about 8 inches wide).
CHARACTER_FRACTION = 1 / 115


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

    for row, (name, intervals) in enumerate(checked.items()):
        tracks = _tracks(intervals)
        height = BAR_HEIGHT / max(len(tracks), 1)
        for number, track in enumerate(tracks):
            middle = row - BAR_HEIGHT / 2 + (number + 0.5) * height
            ax.broken_barh(
                [(s, e - s) for s, e, _ in track],
                (middle - height / 2, height),
                facecolors=lane_colours[name],
                # white edges keep touching bars apart; an instant keeps its colour to be seen
                edgecolors=[lane_colours[name] if e == s else "white" for s, e, _ in track],
                linewidth=0.8,
            )
            for s, e, label in track:
                if label and e - s >= len(label) * span * CHARACTER_FRACTION:
                    ax.text((s + e) / 2, middle, label, ha="center", va="center", fontsize=LABEL_POINTS, clip_on=True)
    ax.set_yticks(range(len(checked)), list(checked), fontsize=8)
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    ax.set_axisbelow(True)  # grid lines behind the bars
    if legend_colours:  # right of the axes, outside: it never covers a bar or a label
        ax.legend(
            handles=[Patch(color=c, label=text) for text, c in legend_colours.items()],
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            fontsize=8,
            frameon=False,
        )
    fig = ax.get_figure(root=True)
    if not isinstance(fig, Figure):
        raise VizlibValueError("ax is not on a figure: pass an Axes made by plt.subplots() or fig.add_subplot().")
    if own_figure:
        fig.tight_layout()
        plt.close(fig)  # shown once in Jupyter, through the returned value
    return fig


def _tracks(intervals: list[Interval]) -> list[list[Interval]]:
    """Split a lane's intervals into tracks in which none overlap (earliest start first,
    each into the first track free by then): overlapping bars are drawn thinner, one above
    the other, so that each stays visible."""
    tracks: list[list[Interval]] = []
    for interval in sorted(intervals, key=lambda i: (i[0], i[1])):
        free = next((t for t in tracks if t[-1][1] <= interval[0]), None)
        if free is None:
            tracks.append([interval])
        else:
            free.append(interval)
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
    for what, value in (("start", start), ("end", end)):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise VizlibTypeError(f"lane {lane!r}: the {what} of {interval!r} must be a number, not {value!r}.")
        if not math.isfinite(value):
            raise VizlibValueError(f"lane {lane!r}: the {what} of {interval!r} is not finite; give a measured time.")
    if not isinstance(label, str):
        raise VizlibTypeError(
            f"lane {lane!r}: the label of {interval!r} must be a string (use '' for none), not {label!r}."
        )
    if end < start:
        raise VizlibValueError(
            f"lane {lane!r}: interval {interval!r} ends before it starts; intervals are (start, end, label)."
        )
    return float(start), float(end), label


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
