"""Chapter 05b's pictures of DDP's communication: every measured interval becomes a bar in
its rank's lane, both runs share one time axis, and the cost plot shows the measured
times, the bus bandwidth the ring formula gives, and the fitted latency floor."""

import matplotlib.colors as mcolors
import numpy as np
import pytest

from coursekit.ddp_plots import COLOURS, draw_allreduce_cost, draw_overlap


def rank(backward, all_reduce):
    return {"backward": backward, "all-reduce": all_reduce}


OVERLAPPED = [
    rank([(0.0, 4.0, "L1"), (4.0, 8.0, "L0")], [(4.1, 5.0, "b0"), (8.1, 9.0, "b1")]),
    rank([(0.0, 4.5, "L1"), (4.5, 8.5, "L0")], [(4.6, 5.0, "b0"), (8.6, 9.0, "b1")]),
]
ONE_BUCKET = [
    rank([(0.0, 4.0, "L1"), (4.0, 8.0, "L0")], [(8.1, 20.0, "b0")]),
    rank([(0.0, 4.0, "L1"), (4.0, 8.0, "L0")], [(8.1, 20.0, "b0")]),
]


def bars(ax):
    """(lane row, start, end, colour) of every bar of a panel."""
    found = []
    for collection in ax.collections:
        colours = collection.get_facecolors()
        for i, path in enumerate(collection.get_paths()):
            (x0, y0), (x1, y1) = path.get_extents().get_points()
            colour = colours[i if len(colours) > 1 else 0]
            found.append((round((y0 + y1) / 2), round(x0, 6), round(x1, 6), mcolors.to_hex(colour)))
    return sorted(found)


def test_overlap_draws_a_panel_per_run_with_a_backward_and_an_all_reduce_lane_per_rank():
    fig = draw_overlap({"8 buckets": OVERLAPPED, "1 bucket": ONE_BUCKET})
    top, bottom = fig.axes
    assert [top.get_title(), bottom.get_title()] == ["8 buckets", "1 bucket"]
    lanes = ["rank 0 · backward", "rank 0 · all-reduce", "rank 1 · backward", "rank 1 · all-reduce"]
    assert [t.get_text() for t in top.get_yticklabels()] == lanes
    blue, orange = mcolors.to_hex(COLOURS["backward"]), mcolors.to_hex(COLOURS["all-reduce"])
    assert bars(top) == [
        (0, 0.0, 4.0, blue),
        (0, 4.0, 8.0, blue),
        (1, 4.1, 5.0, orange),
        (1, 8.1, 9.0, orange),
        (2, 0.0, 4.5, blue),
        (2, 4.5, 8.5, blue),
        (3, 4.6, 5.0, orange),
        (3, 8.6, 9.0, orange),
    ]
    assert (1, 8.1, 20.0, orange) in bars(bottom)
    # one time axis, wide enough for the longest run even when it is not drawn last
    assert top.get_xlim() == bottom.get_xlim() and bottom.get_xlim()[1] >= 20.0
    long_first = draw_overlap({"1 bucket": ONE_BUCKET, "8 buckets": OVERLAPPED})
    assert long_first.axes[0].get_xlim()[1] >= 20.0
    assert [t.get_text() for t in top.get_legend().get_texts()] == ["backward", "all-reduce"]
    assert bottom.get_legend() is None  # once is enough
    assert "ms" in bottom.get_xlabel()


def test_overlap_refuses_what_it_cannot_draw():
    with pytest.raises(ValueError, match="at least one run"):
        draw_overlap({})
    with pytest.raises(ValueError, match="rank 1: expected the lanes 'backward' and 'all-reduce'"):
        draw_overlap({"run": [OVERLAPPED[0], {"backward": []}]})


def test_cost_plot_shows_times_bus_bandwidth_and_the_fitted_floor(tmp_path):
    sizes = [2**15, 2**20, 2**25]
    seconds = {2: {s: 1e-4 + s / 1e9 for s in sizes}, 4: {s: 2e-4 + 1.5 * s / 1e9 for s in sizes}}
    fig = draw_allreduce_cost(seconds, fits={2: (1e-4, 1e-9), 4: (2e-4, 1.5e-9)})
    left, right = fig.axes
    assert left.get_xscale() == "log" and left.get_yscale() == "log"
    lines = {line.get_label(): line for line in left.get_lines()}
    measured = lines["N = 2: measured"]
    assert list(measured.get_xdata()) == sizes
    assert np.allclose(measured.get_ydata(), [1e3 * seconds[2][s] for s in sizes])  # in ms
    assert np.allclose(lines["N = 4: latency floor a"].get_ydata(), 0.2)  # a, in ms
    assert np.allclose(lines["N = 4: a + b · size"].get_ydata(), [0.2 + 1.5e-6 * s for s in sizes])
    busbw = {line.get_label(): line.get_ydata() for line in right.get_lines()}
    # busbw = size / time * 2(N-1)/N, in GB/s
    assert np.allclose(busbw["N = 4"], [s / seconds[4][s] * 1.5 / 1e9 for s in sizes])
    assert np.allclose(busbw["N = 2"], [s / seconds[2][s] / 1e9 for s in sizes])
    assert [t.get_text() for t in left.get_xticklabels()] == ["32 KiB", "32 MiB"]
    assert "bandwidth" in right.get_ylabel() and "ms" in left.get_ylabel()
    fig.savefig(tmp_path / "cost.png")


def test_cost_plot_without_fits_and_with_nothing_measured():
    fig = draw_allreduce_cost({2: {1024: 1e-4, 2048: 2e-4}})
    assert [line.get_label() for line in fig.axes[0].get_lines()] == ["N = 2: measured"]
    with pytest.raises(ValueError, match="at least one size"):
        draw_allreduce_cost({2: {}})
