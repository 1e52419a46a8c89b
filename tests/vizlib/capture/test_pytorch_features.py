"""PyTorch features the course never uses, drawn (or refused before torch fails) in the
user's terms: torch.func transforms inside the function, reentrant checkpoint, sparse
tensors, torch.compile'd code, an in-place op on an input, joint_graph of a closure,
tensor_layout of a nested tensor, and wrapper subclasses (``_make_wrapper_subclass``)."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn
from torch.testing._internal.two_tensor import TwoTensor
from torch.utils._pytree import tree_map
from torch.utils.checkpoint import checkpoint

import vizlib as vz


def autograd_grad(f, x):
    x = x.detach().clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(f(x), x)
    return grad.tolist()


TRANSFORMS = {
    "grad": lambda x: torch.func.grad(lambda z: z.sin().sum())(x).sum(),
    "vjp": lambda x: torch.func.vjp(lambda z: z.sin(), x)[1](torch.ones(3))[0].sum(),
    "jacrev": lambda x: torch.func.jacrev(lambda z: z.sin())(x).sum(),
    "hessian": lambda x: torch.func.hessian(lambda z: z.sin().sum())(x).sum(),
}


@pytest.mark.parametrize("f", TRANSFORMS.values(), ids=TRANSFORMS)
def test_torch_func_transforms_inside_the_function_draw(f):
    x = torch.tensor([0.5, -1.0, 2.0])
    g = vz.graph(f, x)
    assert g.find("x")[0].grad == pytest.approx(autograd_grad(f, x))
    assert g.backward_order and g.saved_bytes > 0


def test_reentrant_checkpoint_draws_and_keeps_grads():
    lin = nn.Linear(3, 3)
    lin.weight.grad = torch.ones(3, 3)  # the user's own gradient, kept as it is
    grad = lin.weight.grad

    def f(x):
        return checkpoint(lambda z: lin(z).tanh(), x, use_reentrant=True).sum()

    x = torch.tensor([[0.5, -1.0, 2.0]])
    g = vz.graph(f, x)
    assert lin.weight.grad is grad and torch.equal(grad, torch.ones(3, 3))
    reference = x.clone().requires_grad_(True)
    f(reference).backward()  # autograd.grad is what reentrant checkpoint refuses
    assert g.find("x")[0].grad[0] == pytest.approx(reference.grad[0].tolist())
    assert g.find("CheckpointFunctionBackward")
    # The block's linear layer is not drawn, and the picture says why.
    assert not g.find("weight") and any("use_reentrant=False keeps them" in note for note in g.notes)


@pytest.mark.parametrize("to_sparse", [torch.Tensor.to_sparse, torch.Tensor.to_sparse_csr], ids=["coo", "csr"])
def test_sparse_inputs_draw(to_sparse):
    s, w = to_sparse(torch.tensor([[1.0, 0.0], [0.0, 2.0]])), torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    g = vz.graph(lambda s, w: (s @ w).sum(), s, w, show_saved=True)
    assert g.find("w")[0].grad == [[1.0, 1.0], [2.0, 2.0]]
    assert g.saved_bytes > 0


def test_a_sparse_leaf_that_requires_grad_draws():
    s = torch.tensor([[1.0, 0.0], [0.0, 2.0]]).to_sparse().requires_grad_()
    g = vz.graph(lambda s: (s * 2).sum(), s)
    assert g.find("s")[0].value == [[1.0, 0.0], [0.0, 2.0]]


def test_compiled_model_and_function_draw_as_eager_without_warnings():
    torch.manual_seed(0)
    lin = nn.Linear(3, 2)
    x = torch.randn(2, 3)
    eager = vz.graph(lambda x: lin(x).relu().sum(), x)
    compiled_model = torch.compile(lin)
    compiled_fn = torch.compile(lambda x: lin(x).relu().sum())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        by_model = vz.graph(compiled_model, x, grad_output=torch.ones(2, 2))
        by_fn = vz.graph(compiled_fn, x)
        inside = vz.graph(lambda x: compiled_model(x).relu().sum(), x)
    assert by_model.find("weight") and by_model.find("bias"), "the module's own parameter names"
    for g in (by_fn, inside):
        assert [n.name for n in g.nodes if n.kind == "op"] == [n.name for n in eager.nodes if n.kind == "op"]
        assert g.find("x")[0].grad == eager.find("x")[0].grad


@pytest.mark.parametrize("op", ["mul_", "setitem"])
def test_an_in_place_op_on_an_input_is_refused_in_the_users_terms(op):
    def f(x):
        if op == "mul_":
            x.mul_(2)
        else:
            x[0] = 5.0
        return x.sum()

    with pytest.raises(vz.VizlibError, match=r"changes its input x in place.*x = x.clone\(\)") as info:
        vz.graph(f, torch.ones(3))
    assert "leaf Variable" not in str(info.value)
    assert vz.graph(lambda x: f(x.clone()), torch.ones(3)).find("x"), "the advice, followed, draws"


def test_an_in_place_op_on_an_input_under_no_grad_is_the_users_to_make():
    def f(x):
        with torch.no_grad():
            x.clamp_(0, 1)
        return (x * 2).sum()

    assert vz.graph(f, torch.tensor([-1.0, 0.5, 3.0])).find("x")[0].value == [0.0, 0.5, 1.0]


def test_joint_graph_of_a_closure_over_a_model_draws_its_parameters_as_inputs():
    torch.manual_seed(0)
    lin = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    state = {k: v.clone() for k, v in lin.state_dict().items()}
    g = vz.joint_graph(lambda x: lin(x).pow(2).sum(), torch.randn(4, 3))
    roles = {n.name: n.role for n in g.nodes if n.role in ("parameter", "buffer", "input")}
    assert roles["lin.0.weight"] == "parameter" and roles["lin.1.running_mean"] == "buffer"
    assert roles["x"] == "input" and g.saved
    assert all(torch.equal(v, lin.state_dict()[k]) for k, v in state.items())


def test_joint_graph_of_a_closure_over_a_tensor_is_refused():
    c = torch.randn(3)
    with pytest.raises(vz.VizlibError, match="pass it as an argument"):
        vz.joint_graph(lambda x: (x * c).sum(), torch.randn(3))


def test_tensor_layout_of_a_nested_tensor_says_to_draw_its_pieces():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's note that nested tensors are a prototype
        nt = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])
    with pytest.raises(ValueError, match=r"nested tensor.*unbind") as info:
        vz.tensor_layout(nt)
    assert isinstance(info.value, vz.VizlibError)
    assert vz.tensor_layout(*nt.unbind()) is not None


class Wrapped(torch.Tensor):
    """A ``__torch_dispatch__`` wrapper subclass as PyTorch's tutorials write one: its storage
    holds no memory, its values are the tensor it wraps, which it does not declare (it has
    no ``__tensor_flatten__``, unlike TwoTensor)."""

    @staticmethod
    def __new__(cls, elem: torch.Tensor) -> Wrapped:
        return torch.Tensor._make_wrapper_subclass(cls, elem.shape, dtype=elem.dtype, requires_grad=elem.requires_grad)

    def __init__(self, elem: torch.Tensor) -> None:
        self.elem = elem

    __torch_function__ = torch._C._disabled_torch_function_impl

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        unwrap = lambda t: t.elem if isinstance(t, Wrapped) else t  # noqa: E731
        out = func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs or {}))
        return tree_map(lambda t: Wrapped(t) if isinstance(t, torch.Tensor) else t, out)


def inner_values(t: torch.Tensor) -> list[list[float]]:
    return [t.a.tolist(), t.b.tolist()] if isinstance(t, TwoTensor) else [t.elem.tolist()]


# x.exp() saves its result: TwoTensor declares its two inner tensors (3 floats each),
# Wrapped declares none, so no bytes are counted for it.
WRAPPERS = {
    "TwoTensor": (lambda: TwoTensor(torch.tensor([0.5, -1.0, 2.0]), torch.tensor([1.0, 0.0, 3.0])), 2 * 3 * 4),
    "undeclared": (lambda: Wrapped(torch.tensor([0.5, -1.0, 2.0])), 0),
}


@pytest.mark.parametrize(("make", "saved_bytes"), WRAPPERS.values(), ids=WRAPPERS)
def test_wrapper_subclass_tensors_draw_recorded_and_after_the_fact(make, saved_bytes):
    f = lambda x: x.exp().sum()  # noqa: E731
    x = make()
    before = inner_values(x)
    recorded = vz.graph(f, x, show_saved=True)
    assert recorded.find("x") and recorded.find("ExpBackward0")
    assert recorded.saved_bytes == saved_bytes
    assert inner_values(x) == before and not x.requires_grad and x.grad is None
    leaf = make().requires_grad_()
    y = f(leaf)
    posthoc = vz.graph(y, params={"x": leaf}, show_saved=True)
    assert [n.name for n in posthoc.nodes] == [n.name for n in recorded.nodes]
    assert posthoc.saved_bytes == saved_bytes
    y.backward()  # the graph is still the user's to run backward through
    assert type(leaf.grad) is type(leaf)
