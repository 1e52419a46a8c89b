"""The pictures of collectives: which ranks a value sums is read off its digits, and the
colours follow; each figure has a panel per step and a square per element."""

import matplotlib.colors as mcolors
import pytest
import torch
from matplotlib.patches import Rectangle

from coursekit.draw_ranks import RANK_COLOURS, contributors, draw_collectives, draw_ring


@pytest.mark.parametrize("value, ranks", [(3, {0}), (40, {1}), (22, {0, 1}), (2220, {1, 2, 3}), (0, set())])
def test_each_decimal_digit_names_a_contributing_rank(value, ranks):
    assert contributors(value) == ranks


def squares(ax):
    """(value shown, face colour) of every element square of a panel, row by row."""
    cells = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_fill()]
    labels = [t.get_text() for t in ax.texts if not t.get_text().startswith("rank")]
    return list(zip(labels, [mcolors.to_hex(c.get_facecolor()) for c in cells], strict=True))


def test_collectives_show_every_rank_before_and_after_coloured_by_origin():
    before = [torch.tensor([1.0, 2.0]), torch.tensor([10.0, 20.0])]
    after = [torch.tensor([11.0, 22.0])] * 2
    fig = draw_collectives({"all_reduce": (before, after), "broadcast": (before, [before[0]] * 2)})
    assert len(fig.axes) == 4 and fig.axes[0].get_title() == "all_reduce: before"
    blue, orange = (mcolors.to_hex(c) for c in RANK_COLOURS[:2])
    assert squares(fig.axes[0]) == [("1", blue), ("2", blue), ("10", orange), ("20", orange)]
    sums = squares(fig.axes[1])
    assert [label for label, _ in sums] == ["11", "22", "11", "22"]
    assert len({colour for _, colour in sums}) == 1 and sums[0][1] not in (blue, orange)
    assert [colour for _, colour in squares(fig.axes[3])] == [blue] * 4  # broadcast from rank 0


def test_ring_draws_a_panel_per_step_and_outlines_what_each_rank_received():
    states = [
        [torch.tensor([1.0, 2.0]), torch.tensor([10.0, 20.0])],
        [torch.tensor([1.0, 22.0]), torch.tensor([11.0, 20.0])],
    ]
    fig = draw_ring(states, [[None, None], [1, 0]], ["start", "step 1"], columns=2)
    assert [ax.get_title() for ax in fig.axes] == ["start", "step 1"]
    outlined = [p for p in fig.axes[1].patches if not p.get_fill()]
    assert sorted(p.get_xy() for p in outlined) == [(0, 0), (1, 1)]  # rank 1's chunk 0, rank 0's chunk 1
    assert not [p for p in fig.axes[0].patches if not p.get_fill()]


def test_bad_input_is_a_clear_error():
    with pytest.raises(ValueError, match="one entry per step"):
        draw_ring([[torch.ones(2)]], [], ["start"])
    with pytest.raises(ValueError, match="at least one collective"):
        draw_collectives({})
