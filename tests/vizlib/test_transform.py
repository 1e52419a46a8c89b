"""Collapsing a model by depth folds runs of identical blocks into one box ("Block ×6"),
only where that is what the model did, and never draws a cycle."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import vizlib as vz
from coursekit.models import GPTConfig, make_gpt
from vizlib import transform
from vizlib.transform import fold, simplify

from .graph_checks import acyclic

TINY = GPTConfig(n_layer=6, n_embd=16, n_head=2, block_size=4, vocab=20)


def boxes(g) -> list[tuple[str, str | None, int]]:
    return [(n.name, n.module_type, n.repeats) for n in g.nodes if n.kind == "module"]


@pytest.fixture(scope="module")
def gpt():
    model, batch = make_gpt(TINY)
    return model, batch, vz.graph(model, *batch, max_nodes=None)


def test_identical_blocks_fold_into_one_box_with_their_count(gpt):
    model, batch, full = gpt
    g = vz.graph(model, *batch, depth=1)
    assert boxes(g) == [
        ("wte", "Embedding", 1),
        ("wpe", "Embedding", 1),
        ("blocks.0-5", "Block", 6),
        ("ln_f", "LayerNorm", 1),
        ("lm_head", "Linear", 1),
    ]
    (folded,) = [n for n in g.nodes if n.repeats > 1]
    in_blocks = [n for n in full.nodes if len(n.modules) > 1 and n.modules[1].startswith("blocks.")]
    assert folded.members == len(in_blocks), "the box holds every op and parameter of the six blocks"
    assert folded.saved_bytes == sum(n.saved_bytes for n in in_blocks)
    assert acyclic(g) and "blocks.0-5: Block ×6 drawn as one box" in repr(g)
    (out,), (full_out,) = [n for n in g.nodes if n.is_output], [n for n in full.nodes if n.is_output]
    assert out.value == full_out.value


def test_the_folded_box_is_labelled_with_class_and_count(gpt, dot_json):
    model, batch, _ = gpt
    nodes, _ = dot_json(vz.graph(model, *batch, depth=1).to_dot())
    labels = [o["label"] for o in nodes.values() if "label" in o]
    assert any(label.startswith("blocks.0-5\\nBlock ×6, ") for label in labels), labels
    assert any(label.startswith("lm_head\\nLinear, ") for label in labels), labels


def test_a_deeper_depth_opens_the_blocks(gpt):
    model, batch, _ = gpt
    g = vz.graph(model, *batch, depth=2)
    assert all(repeats == 1 for _, _, repeats in boxes(g))
    assert [name for name, _, _ in boxes(g) if name.endswith(".attn")] == [f"blocks.{i}.attn" for i in range(6)]


def test_automatic_collapse_folds_too_and_says_so(gpt):
    model, batch, full = gpt
    g = vz.graph(model, *batch, max_nodes=20)
    assert len(g.nodes) <= 20 < len(full.nodes) and ("blocks.0-5", "Block", 6) in boxes(g)
    assert any("max_nodes=20" in note for note in g.notes)


class Stack(nn.Module):
    """Blocks that differ (widths), that are the same but do not feed each other, and a
    cell called three times in a row."""

    def __init__(self):
        super().__init__()
        self.wide = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 8), nn.Linear(8, 8)])
        self.cell = nn.Linear(8, 8)

    def forward(self, x):
        for layer in self.wide:
            x = layer(x)
        return self.cell(self.cell(self.cell(x))).sum()


def test_only_identical_consecutive_blocks_fold():
    torch.manual_seed(0)
    g = vz.graph(Stack(), torch.ones(1, 4), depth=1)
    assert boxes(g) == [
        ("wide.0", "Linear", 1),
        ("wide.1", "Linear", 1),
        ("wide.2", "Linear", 1),
        ("cell (calls 1-3)", "Linear", 3),
    ]
    assert acyclic(g)


class Mix(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x, extra=0.0):
        return self.lin(x) + extra


class SkipOver(nn.Module):
    """Three identical blocks, each feeding the next, but block 2 also reads block 0's
    output through an op outside the blocks: one box for all three would draw an arrow
    out of the box and back in."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(Mix() for _ in range(3))

    def forward(self, x):
        x0 = self.blocks[0](x)
        x1 = self.blocks[1](x0)
        return self.blocks[2](x1, extra=torch.sin(x0)).sum()


def test_blocks_are_not_folded_where_that_would_draw_a_cycle():
    torch.manual_seed(0)
    g = vz.graph(SkipOver(), torch.ones(1, 3), depth=1)
    assert boxes(g) == [("blocks.0", "Mix", 1), ("blocks.1", "Mix", 1), ("blocks.2", "Mix", 1)] and acyclic(g)


@pytest.mark.parametrize("depth, max_nodes", [(1, 150), (None, 20), (None, 8)])
def test_fold_says_which_node_each_node_is_drawn_as(gpt, depth, max_nodes):
    """``fold`` is ``simplify`` and where every node went: its own id, or its box's."""
    _, _, full = gpt
    small, drawn_as = fold(full, depth, max_nodes)
    assert small == simplify(full, depth, max_nodes)
    assert set(drawn_as) == {n.id for n in full.nodes} and set(drawn_as.values()) == {n.id for n in small.nodes}
    for box in small.nodes:
        inside = [n for n in full.nodes if drawn_as[n.id] == box.id]
        assert box.members == sum(n.members for n in inside) and box.id == min(n.id for n in inside)


def test_a_recording_folds_its_graph_once(gpt, monkeypatch):
    """The picture is folded when the recording asks which numbers it draws; the same
    fold, with the numbers put in, is the picture (not a second fold of the graph)."""
    model, batch, _ = gpt
    calls = []
    real = transform.collapse
    monkeypatch.setattr(transform, "collapse", lambda g, *a: calls.append(len(g.nodes)) or real(g, *a))
    g = vz.graph(model, *batch, depth=1)
    assert len(calls) == 1 and boxes(g)[2] == ("blocks.0-5", "Block", 6)


def test_numbers_fold_anew_a_graph_they_did_not_plan(gpt):
    """``DrawnNumbers.picture`` of a graph its ``of`` never saw (the call ran again reading
    every number) is that graph's own fold."""
    _, _, full = gpt
    other = vz.graph(lambda x: (x * 2).sum(), torch.ones(3), max_nodes=None)
    numbers = transform.DrawnNumbers(None, 20)
    numbers.of(other)
    assert numbers.picture(full) == simplify(full, None, 20)


class _DenseBlock(nn.Module):
    """A DenseNet's block: each layer reads every earlier layer's output, concatenated."""

    def __init__(self, layers: int) -> None:
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(4 * (k + 1), 4) for k in range(layers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = [x]
        for layer in self.layers:
            features.append(torch.tanh(layer(torch.cat(features, -1))))
        return torch.cat(features, -1)[..., :4]


def test_a_depth_whose_boxes_fit_but_whose_edges_tangle_is_passed_over():
    """At 2 levels deep, two dense blocks of 14 layers are 94 nodes, within max_nodes=150, but
    303 edges: every layer's box wired to every later one's concatenation, which the eye cannot
    follow (densenet121's picture: 93 boxes, 627 edges). The picture goes one level up, and says why."""
    torch.manual_seed(0)
    net = nn.Sequential(_DenseBlock(14), nn.Linear(4, 4), _DenseBlock(14))
    x = torch.randn(2, 4)
    deep = vz.graph(lambda x: net(x).sum(), x, depth=2)
    assert len(deep.nodes) <= 150 < len(deep.edges) / transform.EDGES_PER_NODE
    g = vz.graph(lambda x: net(x).sum(), x)
    assert [n.name for n in g.nodes if n.kind == "module"] == ["0", "1", "2"]
    assert "(5 nodes; 2 levels deep would draw 303 edges)" in g.notes[-1]
    assert acyclic(g)


def _gru_over_time(steps_of_input: int = 1) -> tuple:
    """A hand-written recurrent loop, ``h = cell(x[t], h)``: each call of the cell is fed by its own
    ``x[t]`` (a select; with ``steps_of_input=2``, ``x[t] * 2`` too), made outside any module."""
    torch.manual_seed(0)
    cell, head = nn.GRUCell(3, 4), nn.Linear(4, 1)

    def f(x: torch.Tensor) -> torch.Tensor:
        h = torch.zeros(2, 4)
        for t in range(x.shape[0]):
            h = cell(x[t] * 2 if steps_of_input == 2 else x[t], h)
        return head(h).sum()

    return f, torch.randn(20, 2, 3)


@pytest.mark.parametrize("steps_of_input, unit", [(1, "getitem"), (2, "getitem → mul")])
def test_the_ops_feeding_each_call_of_a_folded_run_fold_with_it(steps_of_input, unit):
    """The cell's 20 calls are one box; the 20 ``x[t]`` that feed one call each are one box too
    (not 20 nodes side by side: a picture 8,000 points wide at 50 steps), drawn between ``x``
    and the cell, showing the last step's numbers, as a loop box does."""
    f, x = _gru_over_time(steps_of_input)
    g, full = vz.graph(f, x), vz.graph(f, x, max_nodes=None)
    assert boxes(g) == [(unit, "loop", 20), ("cell (calls 1-20)", "GRUCell", 20), ("head", "Linear", 1)]
    assert acyclic(g) and not [n for n in g.nodes if n.kind == "op" and n.name != "SumBackward0"]
    (fed,) = [n for n in g.nodes if n.module_type == "loop"]
    last = [n for n in full.nodes if n.op == unit.split(" → ")[-1]][-1]
    assert (fed.value_stats, fed.grad_stats, fed.shape) == (last.value_stats, last.grad_stats, last.shape)
    assert fed.members == 20 * steps_of_input
    cell = g.find("cell (calls 1-20)")[0].id
    assert {(s, d) for s, d in g.edges if fed.id in (s, d)} == {(g.find("x")[0].id, fed.id), (fed.id, cell)}
    assert g.find("x")[0].grad_stats == full.find("x")[0].grad_stats


def test_ops_feeding_the_calls_of_a_run_unalike_stay_as_they_are():
    """Where the calls are fed by different ops (the first by ``x[0] * 2``, the rest by ``x[t]``),
    no one box stands for them all: they stay as they are."""
    torch.manual_seed(0)
    cell = nn.GRUCell(3, 4)

    def f(x: torch.Tensor) -> torch.Tensor:
        h = torch.zeros(2, 4)
        for t in range(x.shape[0]):
            h = cell(x[t] * 2 if t == 0 else x[t], h)
        return h.sum()

    g = vz.graph(f, torch.randn(20, 2, 3), depth=0)
    assert boxes(g) == [("GRUCell (calls 1-20)", "GRUCell", 20)] and acyclic(g)
    assert [n.name for n in g.nodes if n.kind == "op"].count("SelectBackward0") == 20
