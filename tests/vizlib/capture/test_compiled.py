"""vz.compiled_graphs: one Graph per piece torch.compile captured, with why each ended.

The reference is Dynamo's own account of the same call, ``torch._dynamo.explain``: the
same number of graphs, the same nodes in each, the same graph-break reasons. The
functions are tiny and nothing is compiled to code (vizlib's backend runs the graphs as
they are), so the whole file takes a few seconds, most of it Dynamo tracing.
"""

from __future__ import annotations

import pytest
import torch

import vizlib as vz
from vizlib.errors import VizlibError, VizlibTypeError, VizlibValueError


def two_breaks(x, w):
    y = torch.sin(x) * w
    print("between graphs")  # graph break 1
    z = y.cos() + 1
    if z.sum().item() > 0:  # graph break 2: a tensor's value decides what runs
        z = z * 2
    return z.relu().sum()


@pytest.fixture(scope="module")
def inputs():
    return torch.tensor([0.5, -1.0, 2.0]), torch.tensor([1.0, 2.0, -0.5], requires_grad=True)


@pytest.fixture(scope="module")
def graphs(inputs):
    return vz.compiled_graphs(two_breaks, *inputs)


@pytest.fixture(scope="module")
def explained(inputs, graphs):
    out = torch._dynamo.explain(two_breaks)(*inputs)
    return out.graphs, out.break_reasons


def test_two_graph_breaks_give_three_graphs_like_dynamo_explain(graphs, explained):
    fx_graphs, _ = explained
    assert len(graphs) == len(fx_graphs) == 3
    for g, gm in zip(graphs, fx_graphs, strict=True):
        fx_nodes = list(gm.graph.nodes)
        assert len(g.nodes) == len(fx_nodes)
        assert len(g.edges) == sum(len(n.all_input_nodes) for n in fx_nodes)
        assert [n.role or n.kind for n in g.nodes if n.kind == "op"] == [
            "output" if n.op == "output" else n.op for n in fx_nodes if n.op not in ("placeholder", "get_attr")
        ]


def test_each_graph_says_why_it_ended(graphs, explained):
    _, reasons = explained
    assert [g.break_reason for g in graphs[:2]] == [r.reason.splitlines()[0] for r in reasons]
    assert graphs[-1].break_reason is None
    assert "print" in " ".join(graphs[0].notes) and "item()" in graphs[1].break_reason
    line = two_breaks.__code__.co_firstlineno + 2  # the line of print, in this file
    where = f'the break is at line {line} of two_breaks: print("between graphs")  # graph break 1'
    assert where in graphs[0].notes
    assert graphs[0].title == f"graph 1 of 3 — ended by: {graphs[0].break_reason}"
    assert graphs[2].title == "graph 3 of 3 — ended by: the function's return"
    assert repr(graphs[1]).splitlines()[0] == graphs[1].title


def test_inputs_are_named_and_shaped_from_dynamo(graphs):
    x, w = graphs[0].nodes[:2]
    assert [(n.name, n.role, n.shape, n.dtype) for n in (x, w)] == [
        ("x", "input", (3,), "float32"),
        ("w", "input", (3,), "float32"),
    ]
    assert graphs[1].nodes[0].name == "y", "the second piece starts from what the first computed"
    assert graphs[0].find("sin")[0].op == "torch.sin"


def test_text_is_deterministic_and_the_pictures_render(inputs, graphs):
    again = vz.compiled_graphs(two_breaks, *inputs)
    assert [repr(g) for g in again] == [repr(g) for g in graphs]
    assert [g.to_dot() for g in again] == [g.to_dot() for g in graphs]
    svg = graphs[1].to_svg()
    assert svg.count('class="node"') == len(graphs[1].nodes) and "ended by" in svg


def test_earlier_compiles_do_not_hide_graphs_and_callers_tensors_are_unchanged():
    def bump(x):
        x.add_(1)  # in place: on vizlib's copy, never the caller's tensor
        print("break")
        return x * 2

    x = torch.zeros(2)
    torch.compile(bump, backend="eager")(x.clone())  # cached code that would bypass vizlib's backend
    gs = vz.compiled_graphs(torch.compile(bump, backend="eager"), x)
    assert len(gs) == 2 and torch.equal(x, torch.zeros(2))
    w = torch.ones(2, requires_grad=True)
    vz.compiled_graphs(lambda w: (w * 3).sum(), w)
    assert w.grad is None and w.requires_grad


def test_a_module_shows_its_parameters(capsys):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.ReLU())
    (g,) = vz.compiled_graphs(model, torch.randn(4, 3))
    params = {n.name: n.role for n in g.nodes if n.kind == "leaf"}
    assert params == {"0.weight": "parameter", "0.bias": "parameter", "input": "input"}
    assert capsys.readouterr().err == "", "Dynamo's logs are held back"


def test_bad_input_gets_a_clear_error():
    with pytest.raises(VizlibTypeError, match="function or an nn.Module"):
        vz.compiled_graphs(torch.ones(2))
    with pytest.raises(VizlibValueError, match="captured no graph"):
        vz.compiled_graphs(lambda n: n + 1, 3)
    with pytest.raises(VizlibValueError, match="torch.compile failed on mismatched.*runs on these inputs"):

        def mismatched(a, b):
            return a @ b

        vz.compiled_graphs(mismatched, torch.ones(2, 3), torch.ones(2, 3))


def test_the_functions_own_exception_propagates_unchanged():
    def refuses(x):
        raise KeyError("mine")

    with pytest.raises(KeyError, match="mine") as info:
        vz.compiled_graphs(refuses, torch.ones(2))
    assert not isinstance(info.value, VizlibError)


def _scaled_by_rows(x: torch.Tensor) -> torch.Tensor:
    return (x * x.shape[0]).sum()


def test_sizes_marked_dynamic_and_dynamic_compiles_draw_their_symbols():
    """vizlib copies the caller's tensors (a copy lost ``mark_dynamic``'s mark) and compiles
    the function anew (without the caller's ``dynamic=True``): the graph drawn was the
    specialised one, ``x (5, 3)``, not the one the caller's compiled code runs."""
    x = torch.randn(5, 3)
    torch._dynamo.mark_dynamic(x, 0)
    leaves = [(n.name, n.shape) for n in vz.compiled_graphs(_scaled_by_rows, x)[0].nodes if n.kind == "leaf"]
    (symbol,) = [name for name, shape in leaves if shape is None]
    assert (("x", (symbol, 3)) in leaves) and symbol.startswith("s")
    compiled = torch.compile(_scaled_by_rows, dynamic=True)
    shapes = [n.shape for n in vz.compiled_graphs(compiled, torch.randn(5, 3))[0].nodes if n.name == "x"]
    assert len(shapes) == 1 and all(isinstance(size, str) for size in shapes[0])
    static = [n.shape for n in vz.compiled_graphs(_scaled_by_rows, torch.randn(5, 3))[0].nodes if n.name == "x"]
    assert static == [(5, 3)]
