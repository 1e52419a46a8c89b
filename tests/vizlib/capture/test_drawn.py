"""A recording reads only the numbers its folded picture draws (transform.DrawnNumbers).

Every number a recording reads costs the device kernel launches and the host Python; a
folded picture of a transformer draws a tenth of its nodes. These tests hold the picture
to what it was when every number was read: the same values, statistics, gradients and
edge norms on every drawn node and edge, for models and functions of every shape that
folding meets (module boxes, runs of identical blocks, loops folded without modules, a
module called again and again, outputs of several tensors, ops whose result is never
used), at every depth and with max_nodes alone.
"""

import math

import pytest
import torch
from torch import nn

import vizlib as vz
from coursekit.models import GPTConfig, make_gpt
from vizlib.capture import Summaries, capture
from vizlib.transform import DrawnNumbers, simplify


def every_number_read(target, *args, depth=None, max_nodes=150):
    """The picture as it was before: every node's numbers read, then folded."""
    return simplify(capture(target, args), depth, max_nodes)


def same_number(a, b) -> bool:
    if a is None or b is None:
        return a is b
    if isinstance(a, list):
        return len(a) == len(b) and all(same_number(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return a == pytest.approx(b, rel=1e-5, abs=1e-7)


def same_stats(a, b) -> bool:
    if a is None or b is None:
        return a is b
    return all(same_number(getattr(a, f), getattr(b, f)) for f in ("mean", "std", "norm", "min", "max"))


def assert_same_picture(target, *args, depth=None, max_nodes=150):
    torch.manual_seed(0)
    before = every_number_read(target, *args, depth=depth, max_nodes=max_nodes)
    torch.manual_seed(0)
    now = vz.graph(target, *args, depth=depth, max_nodes=max_nodes)
    assert [(n.id, n.name, n.kind) for n in now.nodes] == [(n.id, n.name, n.kind) for n in before.nodes]
    # What a node says besides its numbers, from records or, where the function mode was
    # off (capture/unwatched.py), from autograd's numbering of the nodes:
    described = ("shape", "dtype", "device", "modules", "module", "saved_bytes", "members", "repeats", "is_output")
    for a, b in zip(now.nodes, before.nodes, strict=True):
        assert [getattr(a, f) for f in described] == [getattr(b, f) for f in described], a.name
    assert now.saved_bytes == before.saved_bytes and now.notes == before.notes
    for a, b in zip(now.nodes, before.nodes, strict=True):
        for field in ("value", "grad"):
            assert same_number(getattr(a, field), getattr(b, field)), (a.name, field)
        for field in ("value_stats", "grad_stats"):
            assert same_stats(getattr(a, field), getattr(b, field)), (a.name, field, getattr(a, field))
    assert now.edges == before.edges
    assert all(same_number(x, y) for x, y in zip(now.edge_grads, before.edge_grads, strict=True))
    assert now.backward_order == before.backward_order
    return now


def tiny_gpt(n_layer: int):
    return make_gpt(GPTConfig(n_layer=n_layer, n_embd=16, n_head=2, block_size=8, vocab=32), batch=2)


@pytest.mark.parametrize("depth", [None, 0, 1, 2, 3])
def test_a_gpt_is_drawn_with_the_numbers_it_had_when_all_were_read(depth):
    model, batch = tiny_gpt(6)
    assert_same_picture(model, *batch, depth=depth)


@pytest.mark.parametrize("max_nodes", [20, 60, 150, 400])
def test_each_max_nodes_picks_its_depth_and_keeps_its_numbers(max_nodes):
    model, batch = tiny_gpt(4)
    assert_same_picture(model, *batch, max_nodes=max_nodes)


def test_a_loop_without_modules_folds_with_its_numbers():
    def loop(x, w):
        for _ in range(80):
            x = x + torch.tanh(x * w)
        return x.sum()

    g = assert_same_picture(loop, torch.randn(5), torch.randn(5))
    assert any(n.repeats > 1 for n in g.nodes)


class Cell(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(6, 6)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.lin(h)) * 0.5 + h


class Unrolled(nn.Module):
    """One cell called again and again, a module returning two tensors, an op whose
    result is never used, and a Sequential's index-named children."""

    def __init__(self) -> None:
        super().__init__()
        self.cell = Cell()
        self.head = nn.Sequential(nn.Linear(6, 6), nn.ReLU(), nn.Linear(6, 6))
        self.split = Split()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(12):
            x = self.cell(x)
            (x * 3).exp()  # never used
        a, b = self.split(self.head(x))
        return (a * b).sum()


class Split(nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x[:, :3].relu(), x[:, 3:].sigmoid()


@pytest.mark.parametrize("depth", [None, 0, 1, 2])
@pytest.mark.parametrize("max_nodes", [10, 40, 150])
def test_repeated_calls_tuples_unused_ops_and_sequentials_keep_their_numbers(depth, max_nodes):
    torch.manual_seed(1)
    assert_same_picture(Unrolled(), torch.randn(3, 6), depth=depth, max_nodes=max_nodes)


class Scaled(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        return self.lin(x * scale)


class HandsItsWeightDown(nn.Module):
    """A parameter of the model used inside a child's box (handed to it as an argument):
    drawn apart from the op that uses it, which is not the first of its box to run in
    backward (the box's Linear is)."""

    def __init__(self) -> None:
        super().__init__()
        self.first, self.mid, self.last = nn.Linear(3, 3), Scaled(), nn.Linear(3, 3)
        self.scale = nn.Parameter(torch.full((3,), 2.0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.last(self.mid(self.first(x), self.scale)).sum()


def test_a_leaf_drawn_apart_from_its_consumer_keeps_its_place_in_backward():
    g = assert_same_picture(HandsItsWeightDown(), torch.randn(2, 3), depth=1)
    order = [g.node(i).name for i in g.backward_order]
    assert order.index("mid") < order.index("scale") < order.index("first"), order


class CheckpointsItsInside(nn.Module):
    """A module that checkpoints its inner layer (as a Hugging Face layer with gradient
    checkpointing on does): run unwatched, it packs its input before its first op, so
    the pack hook gives that input to the node made last, the embedding's."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.utils.checkpoint.checkpoint(self.inner, x, use_reentrant=False)


class EmbedsThenCheckpoints(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed, self.layer, self.head = nn.Embedding(10, 8), CheckpointsItsInside(), nn.Linear(8, 1)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.layer(self.embed(ids))).sum()


@pytest.mark.parametrize("depth", [None, 0, 1, 2])
def test_a_box_shows_the_bytes_its_drawn_node_saved_by_autograds_names(depth):
    """The embedding's box shows its output: that node's bytes are what autograd says it
    saved (the indices), not the checkpoint's input the pack hook gave it."""
    g = assert_same_picture(EmbedsThenCheckpoints(), torch.tensor([[1, 2, 3], [4, 5, 6]]), depth=depth)
    if depth == 1:
        assert g.find("embed")[0].saved_bytes == 6 * 8  # the int64 indices


def test_the_ops_of_a_module_run_unwatched_are_one_node_before_the_picture_folds():
    """Built one node each, the ops of GPT-12's blocks cost the walk's every later step:
    each stretch of them (a module call run unwatched) is one node, counting them all."""
    model, batch = tiny_gpt(12)
    unfolded = capture(model, batch, drawn=DrawnNumbers(None, 150))
    every_op = capture(model, batch)
    assert len(unfolded.nodes) < len(every_op.nodes) / 2, (len(unfolded.nodes), len(every_op.nodes))
    assert sum(n.members for n in unfolded.nodes) == len(every_op.nodes)
    assert sum(n.saved_bytes for n in unfolded.nodes) == sum(n.saved_bytes for n in every_op.nodes)


def test_drawing_every_op_reads_every_number():
    model, batch = tiny_gpt(2)
    g = assert_same_picture(model, *batch, max_nodes=None)
    assert all(n.grad_stats is not None for n in g.nodes if n.kind == "op")


def count_reads(fn) -> int:
    reads = 0
    describe = Summaries.describe

    def counted(self, t, gradient=False):
        nonlocal reads
        reads += 1
        return describe(self, t, gradient)

    Summaries.describe = counted
    try:
        fn()
    finally:
        Summaries.describe = describe
    return reads


def test_a_folded_gpt_reads_a_fraction_of_its_tensors():
    """GPT-12 drawn folded (88 of 760 nodes) read 2,000 tensors' numbers before; the
    bound on what the forward may skip leaves about a block's worth per level unread."""
    model, batch = tiny_gpt(12)
    folded = count_reads(lambda: vz.graph(model, *batch))
    every = count_reads(lambda: vz.graph(model, *batch, max_nodes=None))
    assert every > 1000 and folded < every / 3, (folded, every)


def test_ruling_out_is_only_where_no_depth_fits():
    drawn = DrawnNumbers(None, 5)
    assert all(drawn.op(1) for _ in range(4))  # 4 ops one deep: depth 1 may still fit
    assert drawn.op(1) and not drawn.op(1)  # the 6th: no depth 1 or deeper can fit
    assert drawn.op(0)  # outside any module: always
    drawn.module_entered("blocks")
    assert not drawn.op(2)
    assert not drawn.module_left(1, "blocks", True)
    drawn.module_entered("model")
    assert drawn.module_left(0, "model", True)
    assert DrawnNumbers(1, None).op(1) and not DrawnNumbers(1, None).op(2)
    assert DrawnNumbers(1, None).module_left(1, "x", True) and not DrawnNumbers(1, None).module_left(0, "x", True)
    assert not DrawnNumbers(1, None).module_left(1, "x", False)  # no ops: no box
    assert DrawnNumbers(None, None).op(7) and not DrawnNumbers(None, None).module_left(0, "x", True)


def test_modules_yet_to_run_are_expected_to_do_as_their_twin_does():
    twins = ["blocks.1", "blocks.2", "blocks.3", "blocks.4"]
    drawn = DrawnNumbers(None, 10)
    drawn.module_entered("blocks.0", twins)
    assert drawn.op(2) and drawn.op(2)  # 2 ops two deep and 8 expected of the twins: 10 fit
    assert drawn.module_left(1, "blocks.0", True)
    drawn.module_entered("blocks.1")  # what it was expected to run gives way to what it runs
    assert drawn.op(2) and drawn.op(2)  # 4 and 6 expected
    assert not drawn.op(2)  # 5 and 6
    early = DrawnNumbers(None, 10)
    early.module_entered("blocks.0", twins)
    assert early.op(2) and early.op(2) and not early.op(2), "known while the first block runs"


def test_a_twin_called_inside_its_sibling_is_expected_no_more():
    drawn = DrawnNumbers(None, 10)
    drawn.module_entered("a", ["b"])
    assert drawn.op(2) and drawn.op(2) and drawn.op(2)  # 3 ops, and 3 expected of b
    drawn.module_entered("b")  # b runs inside a: the 3 expected of it are taken back
    assert all(drawn.op(3) for _ in range(7))  # 10 ops two or three deep
    assert not drawn.op(3)


def recordings(fn, monkeypatch) -> int:
    from vizlib.capture.record import ForwardRecorder

    runs = 0
    enter = ForwardRecorder.__enter__

    def counted(self):
        nonlocal runs
        runs += 1
        return enter(self)

    monkeypatch.setattr(ForwardRecorder, "__enter__", counted)
    fn()
    monkeypatch.undo()
    return runs


def test_a_gpt_runs_once(monkeypatch):
    model, batch = tiny_gpt(12)
    assert recordings(lambda: vz.graph(model, *batch), monkeypatch) == 1
    assert recordings(lambda: vz.graph(model, *batch, depth=1), monkeypatch) == 1


def test_results_never_used_can_cost_a_second_run_never_a_number(monkeypatch):
    """Unrolled runs 24 ops whose results are never used, one module deep: counted, they
    rule out depth 1, which max_nodes=10 then draws; the head's output (saved by nothing)
    is gone by then, so the call runs again, reading everything (the picture is checked
    above)."""
    torch.manual_seed(1)
    model, x = Unrolled(), torch.randn(3, 6)
    assert recordings(lambda: vz.graph(model, x, max_nodes=10), monkeypatch) == 2
    assert recordings(lambda: vz.graph(model, x), monkeypatch) == 1


class Saved(nn.Module):
    """Ops whose results are never used come first; then a chain whose every value autograd
    saves (exp its result, mul and sin their inputs, norm its input and result)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(12):
            (x * 3).exp()
        a = x.exp()
        return (a * a).sin().norm()


class SavedByItself(nn.Module):
    """Ops whose results are never used come first; then exp, whose result only exp's own
    node saves (held detached, so no tensor of the forward's is left of it)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(12):
            (x * 3).exp()
        return x.exp().sum()


def test_a_value_passed_over_is_read_from_what_autograd_saved_of_it(monkeypatch):
    x = torch.randn(5)
    assert recordings(lambda: vz.graph(Saved(), x, max_nodes=10), monkeypatch) == 1
    g = assert_same_picture(Saved(), x, max_nodes=10)
    assert len(g.nodes) == 5 and all(n.value is not None for n in g.nodes)


def test_a_value_only_its_own_node_saved_is_read_from_that_node(monkeypatch):
    from vizlib.capture.record import ForwardRecorder

    x = torch.randn(5)
    assert recordings(lambda: vz.graph(SavedByItself(), x, max_nodes=4), monkeypatch) == 1
    asked = []
    saved = ForwardRecorder._saved
    monkeypatch.setattr(ForwardRecorder, "_saved", lambda self: asked.append(1) or saved(self))
    g = assert_same_picture(SavedByItself(), x, max_nodes=4)
    assert asked, "the value was read some other way"
    exp = next(n for n in g.nodes if n.name == "ExpBackward0")
    assert exp.value == pytest.approx(x.exp().tolist())
