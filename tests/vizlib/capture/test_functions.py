"""vz.graph(fn, ...) records exactly what autograd computed, on every kind of function.

Each test runs a function through vizlib and, on fresh copies of the same inputs, through
autograd itself (``autograd_ref.check``, see conftest.py): every node, edge, forward value
and gradient of vizlib's graph must be autograd's own.
"""

import math
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

import vizlib as vz
from vizlib.capture.summary import stats

from .. import autograd_ref


def one(g, name):
    """The single node called ``name``."""
    found = g.find(name)
    assert len(found) == 1, f"{name!r}: {[n.name for n in g.nodes]}"
    return found[0]


def test_scalar_function_names_values_and_grads():
    def f(x, w, b):
        return x * w + b

    g, _ = autograd_ref.check(f, 2.0, 3.0, 1.0)
    x, w, b = one(g, "x"), one(g, "w"), one(g, "b")
    assert (x.kind, x.value, x.grad) == ("leaf", 2.0, 3.0)
    assert (w.value, w.grad, b.value, b.grad) == (3.0, 2.0, 1.0, 1.0)
    assert all(isinstance(n.value, float) for n in (x, w, b)), "0-d tensors are plain floats"
    mul, add = one(g, "MulBackward0"), one(g, "AddBackward0")
    assert (mul.kind, mul.op, mul.value, mul.grad) == ("op", "mul", 6.0, 1.0)
    assert (add.op, add.value, add.grad, add.is_output) == ("add", 7.0, 1.0, True)
    assert not mul.is_output and x.shape == () and x.dtype == "float32"
    assert sorted(g.edges) == sorted([(x.id, mul.id), (w.id, mul.id), (mul.id, add.id), (b.id, add.id)])


def test_small_tensors_are_nested_lists_big_ones_statistics():
    def f(small, big):
        return (small.sin() * 2).sum() + (big * big).mean()

    small = torch.linspace(-1, 1, 16).reshape(4, 4)
    big = torch.linspace(-2, 2, 17)
    g, _ = autograd_ref.check(f, small, big)
    s, b = one(g, "small"), one(g, "big")
    assert s.value == small.tolist() and isinstance(s.grad, list) and len(s.grad) == 4
    assert b.value is None and b.grad is None
    assert b.value_stats.numel == 17 and b.grad_stats.numel == 17
    assert math.isclose(b.grad_stats.norm, (2 * big / 17).norm().item(), rel_tol=1e-5)


def test_statistics_of_big_tensors_are_accurate():
    """A tooltip's mean/std/min/max/norm must hold for data far from zero too (e.g. 1 + noise)."""
    x = 1 + 1e-3 * torch.linspace(-1, 1, 101)
    node = vz.graph(lambda x: x.sum(), x).find("x")[0]
    st, ref = node.value_stats, x.double()
    assert st.mean == pytest.approx(ref.mean().item(), rel=1e-6)
    assert st.min == pytest.approx(ref.min().item()) and st.max == pytest.approx(ref.max().item())
    assert st.norm == pytest.approx(ref.norm().item(), rel=1e-6)
    assert st.std == pytest.approx(ref.std(correction=0).item(), rel=1e-3)


LAYOUTS = {
    "transposed": lambda: torch.randn(64, 48).t(),  # how matmul's weight gradients arrive
    "permuted": lambda: torch.randn(3, 4, 5).permute(2, 0, 1),
    "strided": lambda: torch.randn(10, 12)[::2, 1::3],
    "expanded": lambda: torch.randn(4, 1).expand(4, 6),  # the gradient of a sum, for one
    "float16": lambda: torch.randn(50).half(),
    "far from zero": lambda: 500 + 0.01 * torch.randn(200),
    "beyond float32 squares": lambda: torch.tensor([3e20, -1e20, 2.0]),
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_statistics_hold_for_any_memory_layout_and_range(layout):
    """Statistics read tensors in memory order without copying; the numbers must not care."""
    torch.manual_seed(0)
    t = LAYOUTS[layout]()
    st, ref = stats(t), t.double()
    assert st.numel == t.numel() and st.finite
    assert st.min == ref.min().item() and st.max == ref.max().item()
    assert st.norm == pytest.approx(ref.norm().item(), rel=1e-5)
    assert st.mean == pytest.approx(ref.mean().item(), rel=1e-5, abs=1e-6 * ref.abs().max().item())
    assert st.std == pytest.approx(ref.std(correction=0).item(), rel=1e-3)


def test_keyword_arguments_and_tensors_without_requires_grad():
    def f(x, w):
        return (x @ w).tanh().sum()

    x = torch.arange(6.0).reshape(2, 3) / 6
    w = torch.ones(3, 2)
    g, _ = autograd_ref.check(f, x, w=w)
    assert one(g, "x").shape == (2, 3) and one(g, "w").shape == (3, 2)


def test_a_numpy_float_argument_is_a_leaf_like_a_python_float():
    """np.float64 is a Python float, np.float32 is not: both are numbers a learner differentiates."""
    for w in (0.5, np.float64(0.5), np.float32(0.5)):
        g = vz.graph(lambda x, w: (x * w).sum(), torch.ones(2), w)
        assert one(g, "w").kind == "leaf" and one(g, "w").grad == 2.0, type(w)


@pytest.mark.parametrize(
    "number, in_float32", [(1e300, "inf"), (-1e300, "-inf"), (1e-300, "0"), (1e-40, "9.999946e-41")]
)
def test_a_number_float32_cannot_hold_reaches_the_function_as_given_and_the_picture_says_so(number, in_float32):
    """As float32 it would be inf, 0 or a subnormal with few digits, without a word."""
    seen = []

    def f(x):
        seen.append((x.item(), x.dtype))
        return x * 2

    g = vz.graph(f, number)
    assert seen == [(number, torch.float64)]
    assert one(g, "x").value == number and one(g, "x").dtype == "float64" and one(g, "x").grad == 2.0
    assert g.notes == [
        f"x={number!r} (float32: {in_float32}): beyond what float32, torch's default dtype, holds, "
        "so handed to the function as float64, as given."
    ]


@pytest.mark.parametrize("number", [0.5, -3e38, 1e-30, 0.0, float("inf")], ids=repr)
def test_a_number_float32_holds_stays_float32(number):
    g = vz.graph(lambda x: x * 2, number)
    assert one(g, "x").dtype == "float32" and not g.notes


def test_a_call_that_sets_the_default_dtype_gets_no_note_on_its_numbers():
    """Its 2.0 went in as float32, which holds it: the note of numbers handed over as float64
    is about the default dtype they were made under, not the one the call leaves."""

    def f(x, s):
        torch.set_default_dtype(torch.float64)
        return (x * s).sum()

    try:
        g = vz.graph(f, torch.ones(3), 2.0)
        joint = vz.joint_graph(f, torch.ones(3), 2.0)
    finally:
        torch.set_default_dtype(torch.float32)
    assert one(g, "s").dtype == "float32" and not g.notes and not joint.notes


def test_float_tensors_inside_list_and_dict_arguments_become_leaves():
    """A list or dict of plain float tensors is as common an input as a tensor (e.g. a batch)."""

    def f(xs, named):
        return (xs[0] * xs[1] + named["bias"]).sum()

    xs = [torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0])]
    g = vz.graph(f, xs, {"bias": torch.tensor([0.5, 0.5])})
    assert one(g, "xs[0]").grad == [3.0, 4.0] and one(g, "xs[1]").grad == [1.0, 2.0]
    assert one(g, "named['bias']").grad == [1.0, 1.0]
    assert all(not t.requires_grad for t in xs)


def test_closure_tensor_that_requires_grad_is_a_leaf_with_its_gradient():
    scale = torch.tensor(1.5, requires_grad=True)

    def f(x):
        return (x * scale).exp()

    g = vz.graph(f, 0.5)
    leaves = [n for n in g.nodes if n.kind == "leaf"]
    other = [n for n in leaves if n.name != "x"]
    assert len(leaves) == 2 and len(other) == 1
    assert other[0].value == 1.5
    assert other[0].grad == pytest.approx(0.5 * math.exp(0.75), rel=1e-6)
    assert scale.grad is None


@pytest.mark.parametrize("x, ops", [(1.0, {"MulBackward0"}), (-1.0, {"ExpBackward0"})])
def test_control_flow_gives_a_different_graph_per_call(x, ops):
    def f(x):
        if x > 0:
            return x * x
        return x.exp()

    g, _ = autograd_ref.check(f, x)
    assert {n.name for n in g.nodes if n.kind == "op"} == ops


def test_loop_with_data_dependent_length():
    def f(x, n):
        y = x
        for _ in range(int(n.item())):
            y = torch.sin(y) * 1.1
        return y.sum()

    g, _ = autograd_ref.check(f, torch.tensor([0.3, 0.7]), torch.tensor(3))
    assert len(g.find("SinBackward0")) == 3
    assert not g.find("n"), "an integer tensor is not a leaf"


class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 3 * x * x * grad


class StraightThrough(torch.autograd.Function):
    """round() forward, identity backward: only autograd knows this 'gradient'."""

    @staticmethod
    def forward(ctx, x):
        return x.round()

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


def test_custom_autograd_functions():
    def f(x):
        return StraightThrough.apply(Cube.apply(x) * 0.5).sum()

    x = torch.tensor([0.5, 1.5, -2.0])
    g, _ = autograd_ref.check(f, x)
    assert one(g, "x").grad == pytest.approx((3 * x * x).tolist()), "autograd's (made-up) backward, not the math"
    cube = one(g, "CubeBackward")
    assert cube.shape == (3,) and cube.value == (x**3).tolist(), "a custom Function's output is a forward value too"
    assert one(g, "StraightThroughBackward").value == (x**3 * 0.5).round().tolist()


def test_in_place_ops():
    def f(x, w):
        h = x * w
        h.add_(1.0)
        h[0] = h[1] * 3
        h[1:].mul_(2)
        h.relu_()
        return h.pow(2).sum()

    g, _ = autograd_ref.check(f, torch.tensor([0.5, -1.0, 2.0, 3.0]), torch.tensor([2.0, 1.0, -1.0, 0.5]))
    assert g.find("ReluBackward0") and g.find("CopySlices")


def test_item_assignment_and_in_place_ops_on_views_keep_their_op_names():
    def f(x, v):
        y = x * 1
        y[0] = v  # Tensor.__setitem__: y's node becomes CopySlices
        y[1:].mul_(3)  # an in-place op on a view rewrites its base's node: CopySlices again
        return y.sum()

    g, _ = autograd_ref.check(f, torch.tensor([1.0, 2.0, 3.0]), torch.tensor(5.0))
    assert [n.op for n in g.find("CopySlices")] == ["setitem", "mul"]


def test_views():
    def f(x):
        a = x.t()[1]  # TBackward0, SelectBackward0
        b = x.view(6)[2:4]  # ViewBackward0, SliceBackward0
        c = x.unsqueeze(0).expand(2, 2, 3).reshape(4, 3)
        return (a * b).sum() + c.diagonal().sum() + x.transpose(0, 1).contiguous().flatten()[-1]

    g, _ = autograd_ref.check(f, torch.arange(6.0).reshape(2, 3))
    for name in ("TBackward0", "SelectBackward0", "ViewBackward0", "SliceBackward0", "ExpandBackward0"):
        assert g.find(name), name


def test_function_returning_a_tuple_backpropagates_from_every_output():
    def f(x, w):
        return (x * w).sum(), (x - w).pow(2).sum()

    g, _ = autograd_ref.check(f, torch.tensor([1.0, 2.0]), torch.tensor([0.5, -1.0]))
    outputs = sorted(n.name for n in g.nodes if n.is_output)
    assert outputs == ["SumBackward0", "SumBackward0"]
    assert one(g, "x").grad == pytest.approx([0.5 + 2 * 0.5, -1.0 + 2 * 3.0])


def test_tuple_result_with_grad_output_per_output():
    def f(x):
        return x * 2, x.sin()

    x = torch.tensor([0.1, 0.2, 0.3])
    grad_output = (torch.tensor([1.0, 0.0, -1.0]), torch.tensor([2.0, 2.0, 2.0]))
    autograd_ref.check(f, x, grad_output=grad_output)


def test_an_input_returned_beside_what_was_made_of_it_is_one_leaf():
    g = vz.graph(lambda x: (x, x * 3), torch.tensor([1.0, 2.0]), grad_output=[torch.full((2,), 7.0), torch.ones(2)])
    x = one(g, "x")
    assert x.is_output and x.grad == [10.0, 10.0]  # 7 as a result, 3 through x * 3
    assert sorted(g.backward_order) == sorted(n.id for n in g.nodes)  # x ran once


def _several_outputs(op: str, x: torch.Tensor) -> torch.Tensor:
    if op == "split":
        a, b = x.split([1, 2], dim=1)
        return a.exp().sum() + (b * 3).sum()
    if op == "split_second_only":  # output 0 of SplitBackward0 gets no gradient at all
        _, b = x.split([1, 2], dim=1)
        return (b * 3).sum()
    if op == "unbind":
        a, b = x.unbind(0)
        return (a * b).sum()
    if op == "chunk":
        a, b = x.chunk(2, dim=0)
        return a.exp().sum() - b.sum()
    if op == "max_dim":
        values, idx = x.max(dim=1)
        return (values.exp() * idx).sum()
    if op == "min_dim":
        return x.min(dim=0).values.sin().sum()
    if op == "topk":
        return x.topk(2, dim=1).values.pow(2).sum()
    return torch.sort(x, dim=1).values.cumsum(1).sum()


@pytest.mark.parametrize("op", ["split", "split_second_only", "unbind", "chunk", "max_dim", "min_dim", "topk", "sort"])
def test_ops_with_several_outputs(op):
    def f(x):
        return _several_outputs(op, x)

    autograd_ref.check(f, torch.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]]))


def test_shared_subexpression_grad_is_the_sum_over_its_edges():
    def f(x, w):
        h = x * w  # used by two consumers
        return h.sin().sum() + (h * h).sum()

    x, w = torch.tensor([0.5, -1.0, 2.0]), torch.tensor([1.5, 2.0, 0.25])
    g, _ = autograd_ref.check(f, x, w)
    inputs = {one(g, "x").id, one(g, "w").id}
    (h,) = [n for n in g.find("MulBackward0") if {s for s, d in g.edges if d == n.id} == inputs]
    out_edges = [i for i, (s, _) in enumerate(g.edges) if s == h.id]
    assert len(out_edges) == 3, "h feeds sin once and the product h * h twice"
    hv = x * w
    per_edge = {"SinBackward0": hv.cos(), "MulBackward0": hv}  # d out / d h along each edge
    total = torch.zeros(3)
    for i in out_edges:
        want = per_edge[g.node(g.edges[i][1]).name]
        assert g.edge_grads[i] == pytest.approx(want.norm().item(), rel=1e-5), f"edge {g.edges[i]}"
        total += want
    assert h.grad == pytest.approx(total.tolist(), rel=1e-6)
    assert one(g, "x").grad == pytest.approx((total * w).tolist(), rel=1e-6)


def test_second_order_gradients_inside_the_function():
    def f(x):
        y = (x**3).sum()
        (dy,) = torch.autograd.grad(y, x, create_graph=True)
        return (dy * x).sum()  # sum 3x^3  ->  grad 9x^2

    x = torch.tensor([1.0, -2.0, 0.5])
    g, _ = autograd_ref.check(f, x)
    assert one(g, "x").grad == pytest.approx((9 * x * x).tolist())
    assert x.grad is None


def test_checkpoint_non_reentrant():
    def block(h, w):
        return torch.tanh(h @ w).relu()

    def f(x, w):
        h = checkpoint(block, x, w, use_reentrant=False)
        return checkpoint(block, h, w, use_reentrant=False).sum()

    x = torch.linspace(-1, 1, 6).reshape(2, 3)
    w = torch.linspace(0.5, -0.5, 9).reshape(3, 3)
    g, _ = autograd_ref.check(f, x, w)
    assert len(g.find("TanhBackward0")) == 2


def test_autocast_on_cpu_shows_both_dtypes():
    def f(x, w):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            h = x @ w
        return h.float().pow(2).sum()

    x = torch.linspace(-1, 1, 8).reshape(2, 4)
    w = torch.linspace(1, -1, 12).reshape(4, 3)
    g, _ = autograd_ref.check(f, x, w, rtol=1e-2, atol=1e-2)
    dtypes = {n.dtype for n in g.nodes}
    assert {"float32", "bfloat16"} <= dtypes
    assert one(g, "MmBackward0").dtype == "bfloat16"
    assert one(g, "x").dtype == "float32"


def test_a_bfloat16_autocast_inside_the_callers_float16_one_draws():
    """vizlib's own sums ran under the caller's autocast, which refused to join the bfloat16
    tensors the inner one made ("Unexpected floating ScalarType in at::autocast::prioritize")."""

    def f(x, w):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            h = x @ w
        return h.float().pow(2).sum()

    x = torch.linspace(-1, 1, 8).reshape(2, 4)
    w = torch.linspace(1, -1, 12).reshape(4, 3)
    with torch.autocast("cpu", dtype=torch.float16):
        g, _ = autograd_ref.check(f, x, w, rtol=1e-2, atol=1e-2)
        assert torch.is_autocast_enabled("cpu") and torch.get_autocast_dtype("cpu") == torch.float16
    assert one(g, "MmBackward0").dtype == "bfloat16" and one(g, "x").dtype == "float32"


def test_grad_output_for_a_non_scalar_result():
    def f(x):
        return x.sin() * 2

    v = torch.tensor([1.0, -1.0, 0.5])
    g, _ = autograd_ref.check(f, torch.tensor([0.1, 0.2, 0.3]), grad_output=v)
    assert one(g, "MulBackward0").grad == v.tolist()


def test_nan_and_inf_are_recorded_not_hidden():
    def f(x):
        return x.log().sum() + (x / 0.0).sum()

    g, _ = autograd_ref.check(f, torch.tensor([-1.0, 2.0]))
    log = one(g, "LogBackward0")
    assert math.isnan(log.value[0]) and log.nonfinite
    div = one(g, "DivBackward0")
    assert math.isinf(div.value[1]) and div.nonfinite
    x = one(g, "x")
    assert x.value == [-1.0, 2.0] and math.isinf(x.grad[1]) and x.nonfinite


def test_op_names_and_module_free_paths():
    def f(x, w):
        return F.softmax(torch.matmul(x, w), dim=-1).mean()

    g = vz.graph(f, torch.ones(2, 3), torch.ones(3, 4))
    ops = {n.name: n.op for n in g.nodes if n.kind == "op"}
    assert ops["SoftmaxBackward0"] == "softmax"
    assert ops["MeanBackward0"] == "mean"
    assert all(n.module is None and n.modules == () for n in g.nodes)


def test_same_computation_gives_equal_graphs():
    def f(x, w):
        return (x @ w).relu().sum()

    x, w = torch.linspace(-1, 1, 6).reshape(2, 3), torch.linspace(1, 2, 3)
    assert vz.graph(f, x, w) == vz.graph(f, x, w)


def test_graph_holds_no_tensors_or_autograd_nodes():
    def f(x):
        return x.exp().sum()

    g = vz.graph(f, torch.ones(100), show_saved=True)

    def scan(obj, path):
        assert not type(obj).__module__.startswith("torch"), f"{path} is a {type(obj)}"
        if isinstance(obj, (list, tuple, set)):
            for i, item in enumerate(obj):
                scan(item, f"{path}[{i}]")
        elif isinstance(obj, dict):
            for k, item in obj.items():
                scan(item, f"{path}[{k!r}]")
        elif hasattr(obj, "__dict__"):
            for k, item in vars(obj).items():
                scan(item, f"{path}.{k}")

    scan(g, "g")


def test_complex_values_inside_and_as_inputs_print_no_warning():
    """vizlib's own bookkeeping (edge gradient norms) must not warn about casting complex
    gradients to real: the learner would read a warning they did not cause."""

    def through_complex(x):
        z = torch.polar(x, 0.5 * x)  # |z| = x, so the result is sum(x^2)
        return (z * z.conj()).real.sum()

    def of_complex(z):
        return (z * z).abs().sum()

    z = torch.tensor([1 + 2j, 3 - 1j])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = vz.graph(through_complex, torch.tensor([1.0, 2.0]))
        h = vz.graph(of_complex, z)
        h.to_dot()
    assert g.find("x")[0].grad == pytest.approx([2.0, 4.0])
    assert all(e is not None and math.isfinite(e) for e in g.edge_grads)
    (leaf,) = h.find("z")
    assert leaf.dtype == "complex64" and "z: shape [2]" in repr(h)
    assert z.grad is None and not z.requires_grad, "the caller's complex tensor is left alone"
