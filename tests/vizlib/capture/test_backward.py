"""What backward did: the order the engine ran the nodes in, and what was saved for it."""

import gc
import weakref

import pytest
import torch
from torch import nn

import vizlib as vz

from .. import autograd_ref


def chain(x, w, b):
    h = torch.tanh(x @ w + b)
    return (h * h.sigmoid()).sum() + x.exp().mean()


def inputs():
    return torch.linspace(-1, 1, 6).reshape(2, 3), torch.linspace(0.5, -0.5, 12).reshape(3, 4), torch.ones(4)


def assert_valid_order(g):
    """A permutation of the nodes; each runs after every node that consumes its output."""
    order = g.backward_order
    assert sorted(order) == sorted(n.id for n in g.nodes), "every node exactly once"
    at = {node_id: k for k, node_id in enumerate(order)}
    for src, dst in g.edges:
        assert at[src] > at[dst], f"{g.node(src).name} ran before its consumer {g.node(dst).name}"
    assert g.node(order[0]).is_output


def test_backward_order_respects_dependencies():
    g = vz.graph(chain, *inputs())
    assert_valid_order(g)
    leaves = [n.id for n in g.nodes if n.kind == "leaf"]
    assert set(g.backward_order[-1:]) <= set(leaves), "the last thing to finish is a leaf's gradient"


def test_backward_order_with_shared_nodes_and_two_outputs():
    def f(x):
        h = x.exp()
        return (h * x).sum(), h.sin().sum()

    assert_valid_order(vz.graph(f, torch.tensor([0.1, 0.2])))


def test_backward_order_of_a_model():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 5), nn.LayerNorm(5), nn.GELU(), nn.Linear(5, 1))
    assert_valid_order(vz.graph(lambda x: model(x).sum(), torch.ones(2, 3), params=model))


def manual_saved_bytes(fn, *args) -> int:
    """Bytes autograd saved while running fn, counting each storage once."""
    storages = {}

    def pack(t):
        s = t.untyped_storage()
        storages[(s.data_ptr(), s.nbytes())] = s.nbytes()
        return t

    leaves = [a.detach().clone().requires_grad_(True) for a in args]
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn(*leaves)
    assert out.requires_grad
    return sum(storages.values())


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad


def custom(x, w, b):
    return Square.apply(x @ w).sum()


def in_place(x, w, b):
    h = x @ w
    h.mul_(2)
    h[0] = b.exp()
    return h.sigmoid().sum()


@pytest.mark.parametrize("show_saved", [False, True])
@pytest.mark.parametrize("fn", [chain, custom, in_place])
def test_saved_bytes_equal_a_count_made_with_saved_tensor_hooks(fn, show_saved):
    expected = manual_saved_bytes(fn, *inputs())
    assert expected > 0
    assert vz.graph(fn, *inputs(), show_saved=show_saved).saved_bytes == expected


def test_a_storage_saved_twice_counts_once():
    x = torch.ones(5)
    g = vz.graph(lambda x: (x * x).sum(), x, show_saved=True)  # MulBackward0 saves self and other: x, x
    assert g.saved_bytes == 5 * 4
    (mul,) = g.find("MulBackward0")
    assert len(mul.saved) == 2 and {s.shape for s in mul.saved} == {(5,)}
    assert all(s.bytes == 20 and s.dtype == "float32" for s in mul.saved)


def test_saved_bytes_of_a_model_and_per_node_details(dot_json):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    x = torch.randn(4, 8)
    f = lambda x: model(x).sum()  # noqa: E731
    g = vz.graph(f, x, params=model, show_saved=True)
    assert g.saved_bytes == manual_saved_bytes(f, x)
    assert sum(n.saved_bytes for n in g.nodes) >= g.saved_bytes
    relu = g.find("ReluBackward0")[0]
    assert [s.shape for s in relu.saved] == [(4, 16)] and relu.saved_bytes == 4 * 16 * 4
    assert g.show_saved
    drawn, _ = dot_json(g.to_dot())
    extra = [a for name, a in drawn.items() if not name.startswith("n")]
    assert len(extra) == sum(len(n.saved) for n in g.nodes), "show_saved=True draws each saved tensor"
    assert any("256 B" in a["label"] and "4×16" in a["label"] for a in extra)
    plain, _ = dot_json(vz.graph(f, x, params=model).to_dot())
    assert set(plain) == {f"n{n.id}" for n in g.nodes}, "without show_saved: only the graph's nodes"


def test_saved_tensors_are_described_the_same_recorded_and_post_hoc():
    """One computation, one description of what it saved, whichever way it was captured."""
    x, w, b = (t.requires_grad_() for t in inputs())
    recorded = vz.graph(chain, x, w, b, show_saved=True)
    posthoc = vz.graph(chain(x, w, b), params={"x": x, "w": w, "b": b}, show_saved=True)

    def saved(g):
        return sorted((n.name, sorted(map(repr, n.saved)), n.saved_bytes) for n in g.nodes)

    assert saved(recorded) == saved(posthoc)


def test_posthoc_saved_bytes_match_the_recorded_ones():
    x, w, b = (t.requires_grad_() for t in inputs())
    y = chain(x, w, b)
    assert vz.graph(y, show_saved=True).saved_bytes == manual_saved_bytes(chain, *inputs())


def test_backward_order_of_a_function_that_returns_its_input():
    g = vz.graph(lambda x: x, 2.0)
    (x,) = g.nodes
    assert (x.kind, x.grad, x.is_output) == ("leaf", 1.0, True)
    assert g.backward_order == [x.id], "the leaf received its gradient, so it is in the order"


# ---------------------------------------------------------------- memory during backward


class ProbeBackward(torch.autograd.Function):
    """Identity whose backward, which runs last, notes which watched storages are gone."""

    watched: list = []
    gone: list = []

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        gc.collect()
        ProbeBackward.gone = [ref() is None for ref in ProbeBackward.watched]
        return grad


def exp_chain(x):
    """Each exp saves its output for backward; the chain's only other owner is this frame."""
    h = ProbeBackward.apply(x)
    ProbeBackward.watched = []
    for _ in range(4):
        h = h.exp()
        ProbeBackward.watched.append(weakref.ref(h.untyped_storage()))
    return h.sum()


def test_backward_lets_go_of_saved_tensors_once_their_node_has_run():
    """As a plain backward() does, so drawing a model costs little more memory than training it.

    vizlib needs retain_graph=True (the caller's own graph may feed the call), which on its
    own would keep every saved tensor until the end, as the control shows.
    """
    x = torch.linspace(-1, 1, 1000, requires_grad=True)
    torch.autograd.grad(exp_chain(x), x, retain_graph=True)
    assert ProbeBackward.gone == [False] * 4, "control: retain_graph=True keeps saved tensors alive"

    g = vz.graph(exp_chain, torch.linspace(-1, 1, 1000))
    assert ProbeBackward.gone == [True] * 4
    assert g.saved_bytes == 4 * 1000 * 4 and [n.name for n in g.find("ExpBackward0")[0].saved] == ["result"]


def test_custom_function_may_read_its_saved_tensors_twice():
    class SquareReadingTwice(Square):
        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            (again,) = ctx.saved_tensors
            return grad * (x + again)

    autograd_ref.check(lambda x: SquareReadingTwice.apply(x.sin()).sum(), torch.linspace(0, 1, 5))


def test_the_callers_own_graph_can_still_run_backward():
    """A call may start from a tensor the caller computed: its graph is not freed by vizlib."""
    w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    h = w.exp()  # ExpBackward0 saves its result
    vz.graph(lambda h: (h * h).sum(), h)
    h.sum().backward()
    assert torch.allclose(w.grad, w.exp())


def test_backward_again_through_a_stashed_result_says_why():
    stash = []

    def f(x):
        y = (x.exp() * 2).sum()
        stash.append(y)
        return y

    vz.graph(f, torch.ones(3))
    with pytest.raises(RuntimeError, match="already ran backward through this graph"):
        stash[0].backward()


# ---------------------------------------------------------------- torch.utils.checkpoint


class Checkpointed(nn.Module):
    """Runs its block under torch.utils.checkpoint, counting the block's forward runs."""

    def __init__(self, block: nn.Module):
        super().__init__()
        self.block, self.runs = block, 0
        block.register_forward_pre_hook(lambda module, args: setattr(self, "runs", self.runs + 1))

    def forward(self, x):
        return torch.utils.checkpoint.checkpoint(self.block, x, use_reentrant=False)


def test_saved_bytes_of_checkpointed_blocks_are_their_inputs():
    """Autograd keeps a checkpointed block's input, not what the block's insides save.

    PyTorch 2.11 keeps the input in a node that no result depends on (and packs a 0-byte
    placeholder beside it), 2.12+ keeps it in checkpoint's own frame; the bytes are the same.
    """
    torch.manual_seed(0)
    blocks = [Checkpointed(nn.Sequential(nn.Linear(16, 16), nn.Tanh())) for _ in range(2)]
    model = nn.Sequential(nn.Linear(8, 16), *blocks, nn.Linear(16, 1))
    x = torch.randn(4, 8)
    f = lambda x: model(x).sum()  # noqa: E731
    f32 = 4
    first = (4 * 8 + 16 * 8) * f32  # Linear(8, 16): its input and its weight
    block_inputs = 2 * 4 * 16 * f32
    last = (4 * 16 + 16 * 1) * f32  # Linear(16, 1): its input and its weight
    assert manual_saved_bytes(f, x) == first + block_inputs + last
    for block in blocks:
        block.runs = 0
    g = vz.graph(f, x, params=model, show_saved=True)
    assert g.saved_bytes == first + block_inputs + last
    assert [b.runs for b in blocks] == [2, 2], "each block ran once forward and once recomputed"


def test_what_a_discarded_branch_saved_is_not_counted():
    """The exp node below is freed when the function returns, and what it saved with it."""

    def f(x):
        unused = x.exp()  # noqa: F841
        return (x * x).sum()

    x = torch.ones(5)
    assert vz.graph(f, x).saved_bytes == 5 * 4 < manual_saved_bytes(f, x)
