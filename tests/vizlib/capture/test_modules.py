"""vz.graph(model, batch): parameters by name, module paths, depth= and max_nodes=."""

import copy
import re

import pytest
import torch
from torch import nn

import vizlib as vz

from .. import autograd_ref
from ..graph_checks import acyclic


class Net(nn.Module):
    """Every layer kind the issue names: Embedding, Dropout, MultiheadAttention, LayerNorm, BatchNorm."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 8)
        self.drop = nn.Dropout(0.25)
        self.attn = nn.MultiheadAttention(8, 2, batch_first=True)
        self.ln = nn.LayerNorm(8)
        self.bn = nn.BatchNorm1d(8)
        self.head = nn.Linear(8, 1)

    def forward(self, tokens):
        e = self.drop(self.emb(tokens))
        a, _ = self.attn(e, e, e)
        h = self.ln(a + e)
        h = self.bn(h.transpose(1, 2)).transpose(1, 2)
        return self.head(h).pow(2).mean()


def make_net() -> Net:
    torch.manual_seed(0)
    return Net()


TOKENS = torch.tensor([[1, 2, 3, 4], [4, 3, 2, 9]])


@pytest.mark.parametrize("training", [True, False])
def test_model_values_and_grads_equal_autograd(training):
    net = make_net().train(training)
    g, _ = autograd_ref.check(net, TOKENS, rtol=1e-4, atol=1e-5)
    leaves = {n.name for n in g.nodes if n.kind == "leaf"}
    assert leaves == {name for name, _ in net.named_parameters()}, "parameters by name; int tokens are no leaf"


def test_model_state_is_unchanged():
    """Running stats, the RNG, the training flags and every .grad are as they were."""
    net = make_net().train()
    before = copy.deepcopy(net.state_dict())
    rng = torch.get_rng_state()
    vz.graph(net, TOKENS)
    assert all(torch.equal(before[k], v) for k, v in net.state_dict().items()), "buffers changed"
    assert torch.equal(torch.get_rng_state(), rng), "the RNG advanced"
    assert all(m.training for m in net.modules())
    assert all(p.grad is None for p in net.parameters())
    assert all(p.requires_grad for p in net.parameters())

    net.eval()
    net(TOKENS).backward()
    grads = {k: p.grad.clone() for k, p in net.named_parameters()}
    vz.graph(net, TOKENS)
    assert not any(m.training for m in net.modules())
    assert all(torch.equal(p.grad, grads[k]) for k, p in net.named_parameters()), "existing .grad changed"


def test_dropout_mask_is_the_one_the_caller_would_get():
    """vizlib runs the model on the caller's RNG stream, then puts the stream back."""
    drop = nn.Dropout(0.5)

    def f(x):
        return drop(x).sum()

    torch.manual_seed(3)
    g = vz.graph(f, torch.ones(16))
    torch.manual_seed(3)
    assert g.find("x")[0].grad == drop(torch.ones(16)).tolist(), "d sum(dropout(x)) / dx is the scaled mask"


def test_module_paths_on_ops_and_parameters():
    net = make_net().eval()
    g = vz.graph(net, TOKENS)
    addmm = [n for n in g.nodes if n.kind == "op" and n.module == "head"]
    assert addmm, "the head's ops know their module"
    assert all(n.modules[-1] == "head" and len(n.modules) == 2 for n in addmm)
    ln = g.find("ln.weight")[0]
    assert ln.module == "ln" and ln.kind == "leaf"
    assert {n.module for n in g.nodes if n.kind == "op"} >= {"emb", "attn", "ln", "bn", "head"}


def test_params_names_leaves_of_a_plain_function():
    lin = nn.Linear(3, 2)

    def f(x):
        return lin(x).relu().sum()

    x = torch.linspace(-1, 1, 6).reshape(2, 3)
    g = vz.graph(f, x, params=lin)
    assert {n.name for n in g.nodes if n.kind == "leaf"} == {"x", "weight", "bias"}
    g = vz.graph(f, x, params={"W": lin.weight, "b": lin.bias})
    assert {n.name for n in g.nodes if n.kind == "leaf"} == {"x", "W", "b"}
    xr = x.clone().requires_grad_()
    ref = autograd_ref.measure(lambda: f(xr), {"x": xr, "W": lin.weight, "b": lin.bias})
    autograd_ref.assert_same_graph(g, ref)
    assert lin.weight.grad is None


def mlp(blocks: int) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(*[nn.Sequential(nn.Linear(4, 4), nn.Tanh()) for _ in range(blocks)], nn.Linear(4, 1))


def graph_of(model, x, **options):
    """The graph of model(x).sum(); params= names the parameters and module paths."""
    return vz.graph(lambda x: model(x).sum(), x, params=model, **options)


def test_depth_collapses_modules_into_boxes():
    model = mlp(3)
    x = torch.ones(2, 4)
    full = graph_of(model, x)
    assert not [n for n in full.nodes if n.kind == "module"]

    g1 = graph_of(model, x, depth=1)
    boxes = [n for n in g1.nodes if n.kind == "module"]
    # One box per top-level child; the three identical Linear+Tanh blocks fold into one.
    assert [(n.name, n.module_type, n.repeats) for n in boxes] == [("0-2", "Sequential", 3), ("3", "Linear", 1)]
    assert all(n.members > 1 for n in boxes)
    assert len(g1.nodes) < len(full.nodes)
    ids = {n.id for n in g1.nodes}
    assert all(s in ids and d in ids and s != d for s, d in g1.edges)
    assert acyclic(g1)

    g2 = graph_of(model, x, depth=2)
    names = {n.name for n in g2.nodes if n.kind == "module"}
    assert {"0.0", "0.1", "2.0"} <= names and all(re.fullmatch(r"\d+\.\d+|\d+", s) for s in names)
    assert len(g1.nodes) <= len(g2.nodes) <= len(full.nodes)

    g0 = graph_of(model, x, depth=0)
    assert [n.kind for n in g0.nodes].count("module") == 1


class Recurrent(nn.Module):
    """One cell applied three times, with ops of the outer module in between (an RNN unrolled)."""

    def __init__(self):
        super().__init__()
        self.cell = nn.Linear(3, 3)

    def forward(self, x):
        h = x
        for _ in range(3):
            h = self.cell(h).relu() * 0.5
        return h.sum()


def test_a_module_called_three_times_gets_a_box_per_call():
    torch.manual_seed(0)
    g = vz.graph(Recurrent(), torch.ones(1, 3), depth=1)
    boxes = [n for n in g.nodes if n.kind == "module"]
    assert len(boxes) == 3 and all(n.name.startswith("cell") for n in boxes)
    assert acyclic(g), f"one box for three calls makes a cycle: {g.edges}"


def test_backward_order_stays_valid_after_collapsing():
    g = graph_of(mlp(3), torch.ones(2, 4), depth=1)
    at = {node_id: k for k, node_id in enumerate(g.backward_order)}
    assert sorted(at) == sorted(n.id for n in g.nodes)
    assert all(at[s] > at[d] for s, d in g.edges)


def test_depth_keeps_the_output_value_and_input_gradient():
    model = mlp(2)
    x = torch.linspace(-1, 1, 8).reshape(2, 4)
    full, boxed = graph_of(model, x), graph_of(model, x, depth=1)
    for g in (full, boxed):
        (out,) = [n for n in g.nodes if n.is_output]
        assert out.value == pytest.approx(model(x).sum().item(), rel=1e-6)
    assert boxed.find("x")[0].grad == full.find("x")[0].grad


def test_max_nodes_collapses_and_says_so():
    model = mlp(20)
    x = torch.ones(1, 4)
    full = graph_of(model, x, max_nodes=None)
    assert len(full.nodes) > 60 and not full.notes
    g = graph_of(model, x, max_nodes=60)
    assert len(g.nodes) <= 60
    assert [n for n in g.nodes if n.kind == "module"]
    assert g.notes and any("max_nodes" in note for note in g.notes)
    assert all(note in repr(g) for note in g.notes)
    assert not graph_of(model, x, max_nodes=len(full.nodes)).notes


def test_max_nodes_on_a_long_function_without_modules_still_says_so():
    def f(x):
        for _ in range(100):
            x = x.sin()
        return x.sum()

    g = vz.graph(f, torch.ones(2), max_nodes=50)
    assert g.notes, "more than max_nodes nodes and nothing to collapse: the reader is told"
    assert len(g.nodes) <= 50 or any("max_nodes" in n for n in g.notes)


class TiedLM(nn.Module):
    """Weight tying as language models do it: the head is created first, so the shared
    weight is registered as ``head.weight``, but the embedding uses it first."""

    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 10, bias=False)
        self.emb = nn.Embedding(10, 4)
        self.emb.weight = self.head.weight
        self.mix = nn.Linear(4, 4)

    def forward(self, tokens):
        return self.head(torch.tanh(self.mix(self.emb(tokens)))).logsumexp(-1).sum()


@pytest.mark.parametrize("depth", [None, 0, 1, 2])
def test_a_tied_weight_draws_no_cycle(depth):
    g = vz.graph(TiedLM(), torch.tensor([1, 2, 3]), depth=depth)
    assert acyclic(g)
    if depth != 0:  # at depth 0 the whole model is one box
        weight = g.find("head.weight")
        assert len(weight) == 1 and weight[0].kind == "leaf", "the shared weight stays a leaf outside both boxes"
