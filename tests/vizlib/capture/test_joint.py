"""vz.joint_graph: AOTAutograd's forward and backward graphs, and what the forward saves.

The reference is AOTAutograd itself: the test runs ``aot_function`` with the min-cut
partitioner (the one torch.compile uses) and compilers that keep the two graphs, and
vizlib's picture must hold exactly those graphs, split the same way, with the same
saved values and their bytes read from the forward's own metadata.
"""

from __future__ import annotations

import warnings

import pytest
import torch
from functorch.compile import aot_function, make_boxed_func, min_cut_rematerialization_partition
from torch import nn

import vizlib as vz
from vizlib.errors import VizlibError, VizlibTypeError, VizlibValueError


def step(x, w):
    return (torch.sin(x) * w).relu().sum()


def aot_reference(fn, *args):
    """AOTAutograd's own forward and backward graphs of fn(*args)."""
    kept = {}

    def keep(which):
        def compiler(gm, example_inputs):
            kept[which] = gm
            return make_boxed_func(gm.forward)

        return compiler

    out = aot_function(fn, keep("fw"), keep("bw"), partition_fn=min_cut_rematerialization_partition)(*args)
    torch.autograd.grad(out, [a for a in args if a.requires_grad])
    return kept["fw"], kept["bw"]


@pytest.fixture(scope="module")
def inputs():
    return torch.tensor([0.5, -1.0, 2.0]), torch.tensor([1.0, 2.0, -0.5])


@pytest.fixture(scope="module")
def joint(inputs):
    return vz.joint_graph(step, *inputs)


@pytest.fixture(scope="module")
def reference(inputs):
    return aot_reference(step, *(t.clone().requires_grad_() for t in inputs))


def test_forward_and_backward_are_aotautograds_own_graphs(joint, reference):
    fw, bw = reference
    forward = [n for n in joint.nodes if n.part == "forward"]
    backward = [n for n in joint.nodes if n.part == "backward"]
    assert len(forward) == len(fw.graph.nodes) and len(backward) == len(bw.graph.nodes)
    assert len(joint.nodes) == len(forward) + len(backward)
    fx_edges = sum(len(n.all_input_nodes) for gm in (fw, bw) for n in gm.graph.nodes)
    assert len(joint.edges) == fx_edges + len(joint.saved), "plus one forward -> backward edge per saved value"
    ops = [n.name for n in forward if n.role == "call_function"]
    assert ops == [str(n.target.overloadpacket) for n in fw.graph.nodes if n.op == "call_function"]
    assert [n.name for n in forward if n.kind == "leaf"] == ["x", "w"]


def test_saved_values_are_what_the_partition_saves_with_their_bytes(joint, reference):
    fw, bw = reference
    primal = {"primals_1": "x", "primals_2": "w"}
    saved = [n for n in bw.graph.nodes if n.op == "placeholder" and not n.name.startswith("tangents")]
    assert [s.name for s in joint.saved] == [primal.get(n.name, n.name) for n in saved]
    fw_val = {n.name: n.meta["val"] for n in fw.graph.nodes if "val" in n.meta}
    sizes = [fw_val[n.name].numel() * fw_val[n.name].element_size() for n in saved]
    assert [s.bytes for s in joint.saved] == sizes
    assert joint.saved_bytes == sum(sizes) > 0
    assert [(s.shape, s.dtype) for s in joint.saved] == [(tuple(fw_val[n.name].shape), "float32") for n in saved]
    marked = [n for n in joint.nodes if n.role == "saved"]
    assert [n.saved_bytes for n in marked] == sizes and all(n.part == "backward" for n in marked)
    crossing = [(s, d) for s, d in joint.edges if joint.node(s).part != joint.node(d).part]
    assert sorted(d for _, d in crossing) == sorted(n.id for n in marked)
    assert [n.role for n in joint.nodes if n.part == "backward" and n.kind == "leaf" and n.role != "saved"] == [
        "tangent"
    ]


def test_it_sits_beside_eager_autograds_saved_bytes(inputs, joint):
    eager = vz.graph(step, *inputs, show_saved=True)
    assert eager.saved_bytes > 0 and joint.saved_bytes > 0
    assert "saved for backward: " + ", ".join(s.name for s in joint.saved) in repr(joint)


def test_the_picture_has_two_clusters_and_the_text_is_deterministic(inputs, joint, dot_json):
    dot = joint.to_dot()
    assert "subgraph cluster_forward" in dot and "subgraph cluster_backward" in dot
    nodes, edges = dot_json(dot)
    assert len(edges) == len(joint.edges)
    dashed = [e for _, _, e in edges if e.get("style") == "dashed"]
    assert len(dashed) == len(joint.saved)
    svg = joint.to_svg()
    assert svg.count('class="cluster"') == 2 and "saved · 12 B" in svg
    again = vz.joint_graph(torch.compile(step), *inputs)  # a compiled function is unwrapped
    assert repr(again) == repr(joint) and again.to_dot() == dot


def test_a_module_shows_parameters_and_nothing_it_has_changes():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU())
    before = {k: v.clone() for k, v in model.state_dict().items()}
    x = torch.randn(5, 3)
    x_before = x.clone()
    g = vz.joint_graph(model, x)
    leaves = {n.name: n.role for n in g.nodes if n.part == "forward" and n.kind == "leaf"}
    assert {k: v for k, v in leaves.items() if v == "parameter"} == dict.fromkeys(
        (name for name, _ in model.named_parameters()), "parameter"
    )
    assert leaves["1.running_mean"] == "buffer" and leaves["input"] == "input"
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items()), "running statistics restored"
    assert all(p.grad is None for p in model.parameters()) and torch.equal(x, x_before) and not x.requires_grad


def test_bad_input_gets_a_clear_error():
    with pytest.raises(VizlibTypeError, match="function or an nn.Module"):
        vz.joint_graph(torch.ones(2))
    with pytest.raises(VizlibValueError, match="no tensor that depends on its inputs"):
        vz.joint_graph(lambda x: torch.zeros(2), torch.ones(2))

    def branches_on_a_value(x):
        return x * 2 if x.sum().item() > 0 else x

    with pytest.raises(VizlibValueError, match="AOTAutograd failed on branches_on_a_value"):
        vz.joint_graph(branches_on_a_value, torch.ones(2))


def test_weights_held_by_a_plain_object_are_refused_with_the_way_to_pass_them():
    # a micrograd-style model: its weights are plain tensors on a plain object
    class TinyMLP:
        def __init__(self):
            self.w = torch.ones(3, requires_grad=True)

    mlp = TinyMLP()
    with pytest.raises(VizlibValueError, match=r"uses the tensors 'mlp' holds.*lambda x, w: \.\.\., x, mlp\.w"):
        vz.joint_graph(lambda x: (mlp.w * x).sum(), torch.ones(3))
    j = vz.joint_graph(lambda x, w: (w * x).sum(), torch.ones(3), mlp.w)  # the advice, followed
    assert [n.name for n in j.nodes][:2] == ["x", "w"]


def test_a_module_passed_as_an_argument_is_refused_with_the_way_to_trace_it():
    """AOTAutograd failed on it with an AssertionError from its tracer."""
    model = nn.Linear(3, 1)
    with pytest.raises(VizlibTypeError, match=r"takes the module 'm' as an argument.*lambda x: f\(m, x\)"):
        vz.joint_graph(lambda m, x: m(x).sum(), model, torch.ones(3))
    j = vz.joint_graph(lambda x: model(x).sum(), torch.ones(3))  # the advice, followed
    assert {n.name for n in j.nodes if n.role == "parameter"} == {"model.weight", "model.bias"}


def test_an_input_made_by_the_callers_own_graph_draws_under_warnings_as_errors():
    """AOTAutograd read the non-leaf input's .grad: torch's warning, which it hides, became
    the learner's error where warnings are errors (``python -W error``, a strict test run)."""
    w = torch.ones(3, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        j = vz.joint_graph(lambda h: (h * h).sum(), w * 2)
    assert [n.name for n in j.nodes if n.role == "input"] == ["h"] and w.grad is None


def test_the_functions_own_exception_propagates_unchanged():
    def refuses(x):
        raise KeyError("mine")

    with pytest.raises(KeyError, match="mine") as info:
        vz.joint_graph(refuses, torch.ones(2))
    assert not isinstance(info.value, VizlibError)


def test_int_and_bool_arguments_are_named_with_their_values():
    """AOTAutograd makes a Python int or bool argument a graph input too: it was drawn as
    ``primals_2 (input): ?``, where a tensor argument gets its parameter's name."""

    def scaled(x: torch.Tensor, n: int, flag: bool, m: int) -> torch.Tensor:
        return (x * n * m).sum() if flag else x.sum()

    g = vz.joint_graph(scaled, torch.ones(4, 3), 3, True, 3)
    inputs = [(n.name, n.value) for n in g.nodes if n.role == "input"]
    assert inputs[0][0] == "x" and inputs[1:] == [("n", 3), ("flag", True), ("m", 3)]


def test_a_number_float32_cannot_hold_is_traced_as_given_and_said():
    g = vz.joint_graph(lambda x, y: x * y, 1e300, torch.ones(2))
    x = next(n for n in g.nodes if n.name == "x")
    assert x.dtype == "float64" and "x=1e+300 (float32: inf)" in g.notes[0] and "x=1e+300" in g.to_dot()
    assert not vz.joint_graph(lambda x, y: x * y, 0.5, torch.ones(2)).notes
