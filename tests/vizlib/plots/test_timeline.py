"""vz.timeline: one lane per activity, a bar exactly where each interval says, its label
inside when it fits, shared colours named by a legend, and clear errors for bad input."""

import io
import random

import matplotlib.colors as mcolors
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg

import vizlib as vz
from vizlib.errors import VizlibTypeError, VizlibValueError

LANES = {
    "rank 0 · backward": [(0.0, 10.0, "layer 1"), (10.0, 20.0, "layer 0")],
    "rank 0 · all-reduce": [(10.5, 12.0, "b0"), (20.0, 26.0, "bucket 1")],
    "rank 1 · backward": [(0.0, 21.0, "layer 1 and layer 0")],
}


def bars(ax):
    """(lane row, start, end, face colour) of every bar drawn, lane by lane."""
    found = []
    for collection in ax.collections:
        paths, colours = collection.get_paths(), collection.get_facecolors()
        colours = list(colours) * len(paths) if len(colours) == 1 else colours  # one colour, every bar
        for path, colour in zip(paths, colours, strict=True):
            (x0, y0), (x1, y1) = path.get_extents().get_points()
            found.append((round((y0 + y1) / 2), x0, x1, mcolors.to_hex(colour)))
    return sorted(found)


def test_each_interval_is_a_bar_in_its_lane_from_start_to_end(tmp_path):
    open_figures = plt.get_fignums()
    fig = vz.timeline(LANES, title="two ranks", xlabel="time (ms)")
    assert plt.get_fignums() == open_figures  # closed: Jupyter shows it once, via the return value
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == list(LANES)
    assert [(row, x0, x1) for row, x0, x1, _ in bars(ax)] == [
        (0, 0.0, 10.0),
        (0, 10.0, 20.0),
        (1, 10.5, 12.0),
        (1, 20.0, 26.0),
        (2, 0.0, 21.0),
    ]
    assert ax.get_ylim()[0] > ax.get_ylim()[1]  # the first lane is drawn on top
    low, high = ax.get_xlim()
    assert low <= 0.0 and high >= 26.0
    assert ax.get_title() == "two ranks" and ax.get_xlabel() == "time (ms)"
    fig.savefig(tmp_path / "timeline.png")
    assert (tmp_path / "timeline.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_labels_are_written_inside_bars_wide_enough_for_them():
    ax = vz.timeline(LANES).axes[0]
    written = {t.get_text(): t.get_position() for t in ax.texts}
    assert set(written) == {"layer 1", "layer 0", "b0", "bucket 1", "layer 1 and layer 0"}
    assert written["layer 0"] == (15.0, 0)  # in the middle of its bar, on its lane
    narrow = vz.timeline({"lane": [(0.0, 100.0, "wide"), (100.0, 100.5, "a long label")]}).axes[0]
    assert [t.get_text() for t in narrow.texts] == ["wide"]  # the narrow bar's label would spill over


def test_lanes_take_their_colours_and_the_legend_names_them():
    blue, orange = mcolors.to_hex("tab:blue"), mcolors.to_hex("tab:orange")
    fig = vz.timeline(
        LANES,
        colours={"rank 0 · backward": "tab:blue", "rank 0 · all-reduce": "tab:orange", "rank 1 · backward": "tab:blue"},
        legend={"backward": "tab:blue", "all-reduce": "tab:orange"},
    )
    ax = fig.axes[0]
    assert [colour for *_, colour in bars(ax)] == [blue, blue, orange, orange, blue]
    legend = ax.get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["backward", "all-reduce"]
    assert [mcolors.to_hex(h.get_facecolor()) for h in legend.legend_handles] == [blue, orange]
    default = vz.timeline(LANES).axes[0]
    assert default.get_legend() is None
    assert len({colour for *_, colour in bars(default)}) == 3  # one colour per lane by default


def test_overlapping_intervals_of_a_lane_are_stacked_thinner_and_all_stay_visible():
    ax = vz.timeline({"queue": [(0.0, 10.0, "a"), (5.0, 12.0, "b"), (10.0, 15.0, "c")]}).axes[0]
    found = {}
    for collection in ax.collections:
        for path in collection.get_paths():
            (x0, y0), (x1, y1) = path.get_extents().get_points()
            found[(x0, x1)] = (y0, y1)
    a, b, c = found[(0.0, 10.0)], found[(5.0, 12.0)], found[(10.0, 15.0)]
    assert a == c  # c starts when a ends: same track
    assert a[1] <= b[0] + 1e-9  # b overlaps a: a track of its own, beside a's, not on it
    assert b[1] - b[0] == pytest.approx(a[1] - a[0]) and a[1] - a[0] < 0.5  # two thinner bars in the lane
    assert sorted(t.get_text() for t in ax.texts) == ["a", "b", "c"]


def test_an_empty_lane_keeps_its_row_and_an_instant_is_drawn():
    ax = vz.timeline({"idle": [], "busy": [(2.0, 2.0, "")]}).axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["idle", "busy"]
    assert [(row, x0, x1) for row, x0, x1, _ in bars(ax)] == [(1, 2.0, 2.0)]


def test_draws_into_a_panel_of_a_larger_figure():
    fig, (top, bottom) = plt.subplots(2, 1)
    assert vz.timeline({"a": [(0.0, 1.0, "x")]}, ax=bottom, title="panel") is fig
    assert bottom.get_title() == "panel" and not top.collections
    plt.close(fig)


@pytest.mark.parametrize(
    "lanes, error, message",
    [
        ([(0, 1, "x")], VizlibTypeError, "dict of lane name"),
        ({}, VizlibValueError, "no lanes"),
        ({"a": []}, VizlibValueError, "every lane of the timeline is empty"),
        ({"a": "0 1 x"}, VizlibTypeError, "list of \\(start, end, label\\) intervals"),
        ({"a": [(0, 1)]}, VizlibTypeError, "triple"),
        ({"a": [(0, "1", "x")]}, VizlibTypeError, "end .* must be a number"),
        ({"a": [(0, float("nan"), "x")]}, VizlibValueError, "not finite"),
        ({"a": [(0, 1, 2)]}, VizlibTypeError, "label .* must be a string"),
        ({"a": [(3, 1, "x")]}, VizlibValueError, "ends before it starts"),
        ({1: [(0, 1, "x")]}, VizlibTypeError, "lane names are strings"),
    ],
)
def test_bad_lanes_are_clear_errors(lanes, error, message):
    with pytest.raises(error, match=message):
        vz.timeline(lanes)


def test_bad_colours_legend_and_axes_are_clear_errors():
    lanes = {"a": [(0.0, 1.0, "x")]}
    with pytest.raises(VizlibValueError, match=r"does not have: \['b'\]; its lanes: \['a'\]"):
        vz.timeline(lanes, colours={"b": "red"})
    with pytest.raises(VizlibValueError, match="not a colour"):
        vz.timeline(lanes, colours={"a": "no-such-colour"})
    with pytest.raises(VizlibValueError, match="legend entry 'x'"):
        vz.timeline(lanes, legend={"x": "no-such-colour"})
    with pytest.raises(VizlibTypeError, match="matplotlib Axes"):
        vz.timeline(lanes, ax="left")


def _drawn(fig):
    """``fig`` drawn (a figure pyplot has closed has no canvas that draws), and its renderer."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


def test_many_overlapping_intervals_draw_in_one_collection_without_unreadable_labels():
    random.seed(0)
    queued = [(s, s + random.random() * 50, "k") for s in (random.random() * 1000 for _ in range(3_000))]
    ax = vz.timeline({"stream": queued, "other": [(0.0, 500.0, "wide enough")]}).axes[0]
    assert len(ax.collections) == 2  # one per lane, not one per track
    assert len(bars(ax)) == 3_001
    assert [t.get_text() for t in ax.texts] == ["wide enough"]  # no text on bars a fraction of a pixel tall


def test_labels_stay_inside_their_bars_whatever_the_axes_width():
    intervals = [(i * 10.0, i * 10.0 + 7.5, f"bucket {i}") for i in range(10)]
    lanes = {"rank 0 all-reduce (gloo, process group 0)": intervals, "rank 0 backward": [(0.0, 100.0, "")]}
    fig = vz.timeline(lanes, legend={"all-reduce on the slow network": "tab:blue", "backward": "tab:orange"})
    renderer = _drawn(fig)
    ax = fig.axes[0]
    for text in ax.texts:
        start, end, _ = next(i for i in intervals if i[2] == text.get_text())
        (x0, _), (x1, _) = ax.transData.transform([(start, 0), (end, 0)])
        box = text.get_window_extent(renderer)
        assert x0 <= box.x0 and box.x1 <= x1, text.get_text()
    wide = vz.timeline({"a": intervals}).axes[0]  # a wider axes: the labels fit, and are written
    assert len(wide.texts) == 10


@pytest.mark.parametrize(
    "start, end",
    [(np.int64(0), np.int64(8)), (np.float32(0.5), np.float32(2.5)), (torch.tensor(0.5), torch.tensor(2)), (0, 3)],
    ids=["np.int64", "np.float32", "0-d tensors", "int"],
)
def test_times_may_be_any_real_number(start, end):
    ax = vz.timeline({"steps": [(start, end, "a")]}).axes[0]
    assert [(x0, x1) for _, x0, x1, _ in bars(ax)] == [(float(start), float(end))]


@pytest.mark.parametrize(
    "time", [True, np.bool_(True), torch.tensor(True), torch.tensor([1.0]), 1 + 2j, torch.tensor(1 + 2j)]
)
def test_times_that_are_no_real_number_are_refused(time):
    with pytest.raises(VizlibTypeError, match="must be a number"):
        vz.timeline({"steps": [(0, time, "a")]})


def test_text_is_drawn_as_written_not_as_math():
    texts = {"label": r"read $\data$ at $5 and $6", "lane": "cost $5 and $6", "title": r"$\alpha$", "x": "$ (USD)"}
    fig = vz.timeline(
        {texts["lane"]: [(0.0, 100.0, texts["label"])]},
        title=texts["title"],
        xlabel=texts["x"],
        legend={"$x$": "tab:blue"},
    )
    fig.savefig(io.BytesIO(), format="png")  # no ParseFatalException when Jupyter shows it
    ax = fig.axes[0]
    written = [ax.texts[0], ax.title, ax.xaxis.label, *ax.get_yticklabels(), *ax.get_legend().get_texts()]
    assert [t.get_text() for t in written] == [texts["label"], texts["title"], texts["x"], texts["lane"], "$x$"]
    renderer = _drawn(fig)
    for text in written:
        assert not text._preprocess_math(text.get_text())[1], text.get_text()  # drawn literally
        assert text.get_window_extent(renderer).width > 0
