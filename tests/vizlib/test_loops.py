"""Loops without modules fold so that max_nodes holds: ops repeated in a row become one box
("mul → tanh", loop ×300), the loop's inputs and shared weights stay outside with their
gradients, and no fold draws a cycle."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import vizlib as vz

from .graph_checks import acyclic


def shared_weight_loop(steps):
    def f(x, w):
        for _ in range(steps):
            x = torch.tanh(x * w)
        return x.sum()

    return f


def test_a_loop_reusing_one_weight_fits_max_nodes_and_keeps_the_weights_gradient():
    x, w = torch.tensor([0.5, -0.2, 0.1]), torch.tensor([1.1, 0.9, -1.2])
    f = shared_weight_loop(300)
    g = vz.graph(f, x, w)
    assert len(g.nodes) <= 150 and acyclic(g)
    (box,) = [n for n in g.nodes if n.repeats > 1]
    assert (box.name, box.module_type, box.repeats) == ("mul → tanh", "loop", 300)
    ww = w.clone().requires_grad_(True)
    (expected,) = torch.autograd.grad(f(x, ww), ww)
    assert g.find("w")[0].grad == pytest.approx(expected.tolist())
    assert "loop" in repr(g) and "ops repeated in a row" in " ".join(g.notes)


@pytest.mark.parametrize("max_nodes", [10, 150])
def test_max_nodes_holds_for_a_loop_over_a_module(max_nodes):
    torch.manual_seed(0)
    cell = nn.Linear(3, 3)

    def f(x):
        for _ in range(100):
            x = cell(x).tanh()
        return x.sum()

    g = vz.graph(f, torch.randn(3), max_nodes=max_nodes)
    assert len(g.nodes) <= max_nodes and acyclic(g)
    assert [n.repeats for n in g.nodes if n.kind == "module"] == [100]


def test_a_loop_of_loops_fits():
    def f(x, w):
        for _ in range(40):
            for _ in range(10):
                x = torch.sin(x * w)
            x = x / x.norm()
        return x.sum()

    g = vz.graph(f, torch.tensor([0.3, 0.2]), torch.tensor([1.0, 0.5]))
    assert len(g.nodes) <= 150 and acyclic(g)


def test_two_loops_side_by_side_fold_without_a_cycle():
    def f(x, y, w):
        for _ in range(120):
            x = torch.tanh(x * w)
            y = torch.sin(y + w)
        return (x * y).sum()

    g = vz.graph(f, torch.ones(2), torch.ones(2), torch.tensor([0.5, 0.25]), max_nodes=30)
    assert len(g.nodes) <= 30 and acyclic(g)
    assert g.find("w") and g.find("w")[0].grad is not None


def test_per_step_weights_go_inside_the_box():
    ws = [torch.full((2,), 0.1 * k) for k in range(200)]

    def f(x, ws):
        for w in ws:
            x = torch.tanh(x * w)
        return x.sum()

    g = vz.graph(f, torch.ones(2), ws)
    assert len(g.nodes) <= 150 and acyclic(g)
    # the loop's input stays outside, with its gradient: only the first turn uses it, and no
    # other turn has the like of it (it was drawn inside, as if it were the first turn's weight)
    assert [(n.kind, n.name) for n in g.nodes] == [("leaf", "x"), ("module", "mul → tanh"), ("op", "SumBackward0")]
    assert g.find("x")[0].grad_stats is not None


def test_the_loops_input_stays_outside_even_shaped_like_each_turns_own_weight():
    """x and each ws[k] are 2 x 2, all feeding the turn's matmul: each turn has one weight of
    its own, the first turn two such leaves, and the first of them, x, stays out."""
    torch.manual_seed(0)
    ws = [torch.randn(2, 2) for _ in range(200)]

    def f(x, ws):
        for w in ws:
            x = torch.tanh(x @ w)
        return x.sum()

    g = vz.graph(f, torch.randn(2, 2), ws)
    assert [(n.kind, n.name) for n in g.nodes] == [("leaf", "x"), ("module", "matmul → tanh"), ("op", "SumBackward0")]


@pytest.mark.parametrize("reached", ["closure", "argument", "ModuleList"])
def test_a_loop_over_a_list_of_modules_folds_into_one_box(reached):
    """``for layer in layers: x = torch.tanh(layer(x))``: each turn runs another module of the
    list (``layers.0``, ``layers.1``, ...), of one class and shapes. Their boxes were steps
    of no loop, told apart by name, and 200 of them drew 400 nodes past max_nodes=150."""
    torch.manual_seed(0)
    modules = [nn.Linear(4, 4) for _ in range(200)]
    layers: object = nn.ModuleList(modules) if reached == "ModuleList" else modules

    def f(x, blocks=None):
        for layer in layers if blocks is None else blocks:
            x = torch.tanh(layer(x))
        return x.sum()

    if reached == "argument":
        g, name = vz.graph(f, torch.randn(2, 4), layers), "blocks"
    else:
        g, name = vz.graph(f, torch.randn(2, 4)), "layers"
    assert len(g.nodes) <= 150 and acyclic(g), [n.name for n in g.nodes][:10]
    assert sorted((n.kind, n.name, n.repeats) for n in g.nodes) == [
        ("leaf", "x", 1),
        ("module", f"{name}.0-199 → tanh", 200),
        ("op", "SumBackward0", 1),
    ]


def test_a_loop_over_modules_of_other_shapes_does_not_fold_them_together():
    """Two lists' modules alternating, of other shapes: not one step of a loop."""
    torch.manual_seed(0)
    wide = [nn.Linear(4, 4) for _ in range(100)]
    narrow = [nn.Linear(4, 4, bias=False) for _ in range(100)]

    def f(x):
        for a, b in zip(wide, narrow, strict=True):
            x = torch.tanh(b(a(x)))
        return x.sum()

    g = vz.graph(f, torch.randn(2, 4))
    (box,) = [n for n in g.nodes if n.kind == "module"]
    assert (box.name, box.repeats) == ("wide.0-99 → narrow.0-99 → tanh", 100)


def test_a_graph_without_repeats_or_modules_says_why_it_is_not_smaller():
    def f(x):
        ops = [torch.sin, torch.cos, torch.exp, torch.tanh, torch.sigmoid, torch.relu, torch.abs, torch.neg]
        for op in ops:
            x = op(x)
        return x.sum()

    g = vz.graph(f, torch.ones(2), max_nodes=3)
    assert "nothing could be collapsed" in " ".join(g.notes)


def test_a_long_chain_that_never_loops_is_not_folded_a_pair_at_a_time(monkeypatch):
    """A chain of 3,000 ops in no repeating order has only chance repeats (``sin, sin``):
    folding each would save a node or two per reading of the whole graph. It is left whole,
    after a look, and says why."""
    import random

    from vizlib import transform

    rng = random.Random(0)
    ops = [torch.sin, torch.cos, torch.tanh, torch.sigmoid, torch.exp, torch.log1p, lambda t: t * 1.01]
    chain = [rng.choice(ops) for _ in range(3000)]

    def f(x):
        for op in chain:
            x = op(x)
        return x.sum()

    looks = []
    best_repeat = transform._best_repeat
    monkeypatch.setattr(transform, "_best_repeat", lambda g: looks.append(1) or best_repeat(g))
    g = vz.graph(f, torch.tensor([0.5, 0.25]))
    assert len(looks) <= 2 and len(g.nodes) == 3002  # (one look each: the plan of the numbers, the picture)
    assert "no run of ops repeats enough to draw as a loop" in " ".join(g.notes)
