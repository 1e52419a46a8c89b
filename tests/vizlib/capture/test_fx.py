"""vz.graph(gm) and vz.graph(ep): FX graphs and exported programs, drawn node for node.

Every check compares vizlib's Graph with torch's own graph: one Node per FX node in the
same order, one edge per input of each node (``node.all_input_nodes``), names and
shapes read from the same FX nodes, roles from export's graph signature.
"""

from __future__ import annotations

import operator

import pytest
import torch
from torch import fx, nn
from torch.export import Dim, export
from torch.fx.passes.shape_prop import ShapeProp
from torch.testing._internal.two_tensor import TwoTensor
from torch.utils._python_dispatch import TorchDispatchMode

import vizlib as vz
from vizlib.errors import VizlibTypeError, VizlibValueError


class Net(nn.Module):
    """A parameter read directly (get_attr), a submodule, a buffer, a tensor constant,
    a torch function, an operator and a method: every kind of FX node."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.scale = nn.Parameter(torch.full((4,), 2.0))
        self.register_buffer("shift", torch.ones(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.fc(x)) * self.scale + self.shift
        return (h + torch.tensor([1.0, 2.0, 3.0, 4.0])).sum(-1)


@pytest.fixture(scope="module")
def net() -> Net:
    torch.manual_seed(0)
    return Net()


@pytest.fixture(scope="module")
def ep(net):
    return export(net, (torch.randn(5, 3),), dynamic_shapes={"x": {0: Dim("batch", min=2)}})


def fx_edges(gm: fx.GraphModule) -> list[tuple[int, int]]:
    """torch's edges, as positions in the graph's node list."""
    pos = {n: k for k, n in enumerate(gm.graph.nodes)}
    return [(pos[src], pos[n]) for n in gm.graph.nodes for src in n.all_input_nodes]


def assert_same_structure(g: vz.Graph, gm: fx.GraphModule) -> None:
    fx_nodes = list(gm.graph.nodes)
    assert len(g.nodes) == len(fx_nodes)
    ids = [n.id for n in g.nodes]
    assert sorted(g.edges) == sorted((ids[s], ids[d]) for s, d in fx_edges(gm))
    kinds = {"placeholder": "leaf", "get_attr": "leaf", "output": "op"}
    assert [n.kind for n in g.nodes] == [kinds.get(n.op, "op") for n in fx_nodes]


def test_a_symbolic_trace_is_drawn_node_for_node(net):
    gm = fx.symbolic_trace(net)
    g = vz.graph(gm)
    assert_same_structure(g, gm)
    by_fx = dict(zip([n.name for n in gm.graph.nodes], g.nodes, strict=True))
    assert (by_fx["x"].name, by_fx["x"].role) == ("x", "input")
    assert (by_fx["scale"].name, by_fx["scale"].role) == ("scale", "parameter")
    assert (by_fx["shift"].name, by_fx["shift"].role) == ("shift", "buffer")
    assert by_fx["_tensor_constant0"].role == "constant"
    fc = by_fx["fc"]
    assert (fc.name, fc.role, fc.module_type) == ("fc", "call_module", "Linear")
    relu = next(n for n in gm.graph.nodes if n.target is torch.relu)
    assert (by_fx[relu.name].name, by_fx[relu.name].op) == ("relu", "torch.relu")
    mul = next(n for n in gm.graph.nodes if n.target is operator.mul)
    assert (by_fx[mul.name].name, by_fx[mul.name].op) == ("mul", "operator.mul")
    method = next(n for n in gm.graph.nodes if n.op == "call_method")
    assert (by_fx[method.name].name, by_fx[method.name].role) == ("sum", "call_method")
    out = g.nodes[-1]
    assert (out.name, out.role, out.is_output, out.op) == ("output", "output", True, f"returns {method.name}")
    # symbolic_trace records no shapes: the picture says how to get them
    assert all(n.shape is None for n in g.nodes)
    assert any("vz.graph(gm, x)" in note for note in g.notes)


def test_shapes_come_from_tensor_meta(net):
    gm = fx.symbolic_trace(net)
    ShapeProp(gm).propagate(torch.randn(2, 3))
    g = vz.graph(gm)
    for n, fx_node in zip(g.nodes, gm.graph.nodes, strict=True):
        if fx_node.op == "output":
            continue
        tm = fx_node.meta["tensor_meta"]
        assert (n.shape, n.dtype) == (tuple(tm.shape), str(tm.dtype).removeprefix("torch."))
    assert g.nodes[-1].shape == (2,), "the output node shows the one value it returns"


def test_inputs_give_shapes_and_small_values_without_touching_the_graph(net):
    gm = fx.symbolic_trace(net)
    metas = [dict(n.meta) for n in gm.graph.nodes]
    x = torch.randn(2, 3)
    before = x.clone()
    g = vz.graph(gm, x)
    assert_same_structure(g, gm)
    assert [dict(n.meta) for n in gm.graph.nodes] == metas, "node.meta is the learner's: not written"
    assert torch.equal(x, before)
    ref = {}

    class Ref(fx.Interpreter):
        def run_node(self, n):
            ref[n.name] = super().run_node(n)
            return ref[n.name]

    Ref(gm).run(x)
    for n, fx_node in zip(g.nodes[:-1], gm.graph.nodes, strict=False):
        assert n.shape == tuple(ref[fx_node.name].shape)
    assert g.find("x")[0].value == x.tolist()
    assert g.nodes[-1].value == net(x).tolist()


class Scales(nn.Module):
    """Scales its input in place, as image pipelines do (x.div_(255)), then uses it."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x.div_(255)
        return x * 2


def test_running_a_graph_that_changes_its_input_in_place_leaves_the_users_input():
    gm = fx.symbolic_trace(Scales())
    x = torch.full((2,), 255.0)
    g = vz.graph(gm, x)
    assert x.tolist() == [255.0, 255.0] and x._version == 0
    assert g.nodes[-1].value == [2.0, 2.0]  # what running it showed


class CopyCount(TorchDispatchMode):
    """Counts the copies made of tensors of one shape (clone, copy_, _to_copy)."""

    COPIES = (torch.ops.aten.clone.default, torch.ops.aten.copy_.default, torch.ops.aten._to_copy.default)

    def __init__(self, shape: torch.Size) -> None:
        super().__init__()
        self.shape, self.copies = shape, 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func in self.COPIES and isinstance(out, torch.Tensor) and out.shape == self.shape:
            self.copies += 1
        return out


def test_running_a_graph_that_changes_no_input_copies_none():
    """Every drawing copied the whole input batch, to put it back should the graph change it in
    place; a graph that changes nothing of the caller's is run on the input itself, uncopied."""
    gm = fx.symbolic_trace(nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU()))
    x = torch.randn(64, 3, 16, 16, requires_grad=True)
    x.grad = grad = torch.ones_like(x)
    with CopyCount(x.shape) as counted:
        g = vz.graph(gm, x)
    assert counted.copies == 0
    assert x.grad is grad and x._version == 0 and g.nodes[0].shape == (64, 3, 16, 16)


class Bumps(nn.Module):
    """Under no_grad, changes its own parameter in place, and its input through an in-place ReLU."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.ones(2))
        self.act = nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.w.add_(1)
        return self.act(x) * self.w


def test_a_graph_changing_its_parameter_and_input_in_place_is_drawn_as_it_ran_and_undone():
    """Running the graph left its parameter changed for good (w: 1 -> 2), and each node's value
    was read once the run was over: the ReLU's as the input put back ([-1, 2], not [0, 2]),
    the parameter's as changed. Values are read as each node runs; both tensors are put back."""
    gm = fx.symbolic_trace(Bumps())
    x = torch.tensor([-1.0, 2.0])
    g = vz.graph(gm, x)
    values = {n.name: n.value for n in g.nodes}
    assert values == {"x": [-1.0, 2.0], "w": [1.0, 1.0], "add_": [2.0, 2.0], "act": [0.0, 2.0], "mul": [0.0, 4.0]} | {
        "output": [0.0, 4.0]
    }
    assert gm.w.tolist() == [1.0, 1.0] and x.tolist() == [-1.0, 2.0]
    assert gm.w._version == 0 and x._version == 0


def test_a_graph_run_on_a_wrapper_subclass_draws_its_shapes_without_values():
    """A small result was read with ``.tolist()``, which a subclass that runs ops itself
    (TwoTensor, as a DTensor or a MaskedTensor) refuses: the drawing failed with torch's
    RuntimeError. Its shapes are drawn, its values (which are no memory of its own) not."""
    gm = fx.symbolic_trace(Scales())
    x = TwoTensor(torch.full((2,), 255.0), torch.full((2,), 510.0))
    g = vz.graph(gm, x)
    assert [n.shape for n in g.nodes] == [(2,)] * len(g.nodes)
    assert all(n.value is None for n in g.nodes)
    assert x.a.tolist() == [255.0, 255.0] and x.b.tolist() == [510.0, 510.0]


def test_an_exported_program_labels_its_inputs_from_the_signature(ep):
    g = vz.graph(ep)
    gm = ep.graph_module
    assert_same_structure(g, gm)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    leaves = [n for n in g.nodes if n.kind == "leaf"]
    kinds = {"PARAMETER": "parameter", "BUFFER": "buffer", "CONSTANT_TENSOR": "constant", "USER_INPUT": "input"}
    specs = {s.arg.name: s for s in ep.graph_signature.input_specs}
    assert [n.role for n in leaves] == [kinds[specs[p.name].kind.name] for p in placeholders]
    assert [n.name for n in leaves] == [specs[p.name].target or p.name for p in placeholders]
    assert {n.name for n in leaves if n.role == "parameter"} == {"fc.weight", "fc.bias", "scale"}
    assert [n.name for n in g.find("aten.*")] == [
        str(n.target.overloadpacket) for n in gm.graph.nodes if n.op == "call_function"
    ]


def test_dynamic_dimensions_are_shown_by_their_dim_name(ep):
    g = vz.graph(ep)
    x = g.find("x")[0]
    assert (x.shape, x.dtype) == (("batch", 3), "float32")
    assert g.nodes[-1].shape == ("batch",)
    for n, fx_node in zip(g.nodes, ep.graph_module.graph.nodes, strict=True):
        val = fx_node.meta.get("val")
        if isinstance(val, torch.Tensor):
            symbolic = [isinstance(d, torch.SymInt) for d in val.shape]
            assert [isinstance(d, str) for d in n.shape] == symbolic
    assert "x (input): shape [batch, 3] float32" in repr(g)
    assert "batch×4" in g.to_dot()


def test_an_unnamed_dynamic_dimension_keeps_its_symbol(net):
    ep = export(net, (torch.randn(5, 3),), dynamic_shapes={"x": {0: Dim.AUTO}})
    x = vz.graph(ep).find("x")[0]
    val = next(n for n in ep.graph_module.graph.nodes if n.name == "x").meta["val"]
    assert x.shape == (str(val.shape[0]), 3) and x.shape[0].startswith("s")


def test_modules_collapse_with_depth(ep):
    g = vz.graph(ep, depth=1)
    box = g.find("fc")
    assert len(box) == 1 and box[0].kind == "module"
    assert not g.find("aten.linear"), "the linear op is inside the fc box"


def test_the_picture_renders_and_the_summary_is_deterministic(net, ep):
    svg = vz.graph(ep).to_svg()
    assert svg.count('class="node"') == len(ep.graph_module.graph.nodes)
    assert "fc.weight" in svg and "parameter" in svg
    again = export(net, (torch.randn(5, 3),), dynamic_shapes={"x": {0: Dim("batch", min=2)}})
    assert repr(vz.graph(ep)) == repr(vz.graph(again))
    assert vz.graph(ep).to_dot() == vz.graph(again).to_dot()
    assert vz.graph(ep)._repr_mimebundle_()["text/plain"] == repr(vz.graph(ep))


def test_bad_input_says_what_to_do(net, ep):
    gm = fx.symbolic_trace(net)
    with pytest.raises(VizlibTypeError, match=r"vz.graph\(ep\)"):
        vz.graph(ep, torch.randn(2, 3))
    with pytest.raises(VizlibValueError, match="show_saved= does not apply"):
        vz.graph(gm, show_saved=True)
    with pytest.raises(VizlibValueError, match=r"takes 1 inputs \(x\), not 2"):
        vz.graph(gm, torch.randn(2, 3), torch.randn(2, 3))
    with pytest.raises(VizlibTypeError, match="by position"):
        vz.graph(gm, x=torch.randn(2, 3))
