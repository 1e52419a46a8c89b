"""A recording reduces each piece of memory once (``Summaries``), and never gives a stale answer.

The statistics of a tensor are read in memory order, so every view of the same elements
must get the very numbers a fresh ``stats`` call gives, to the last bit; memory changed in
place, or freed and reused by a new tensor, must be read anew.
"""

import collections
import itertools
import random

import pytest
import torch
from torch.utils._pytree import tree_leaves

import vizlib as vz
from vizlib.capture import layout
from vizlib.capture.record import _tensors
from vizlib.capture.summary import Summaries, stats


def read(m: Summaries, pending):
    """What ``pending`` holds once ``m`` has brought its numbers to the host."""
    m.fetch()
    return m.result(pending)


VIEWS = {
    "itself": lambda t: t,
    "reshaped": lambda t: t.reshape(4, -1),
    "transposed": lambda t: t.t(),
    "permuted": lambda t: t.reshape(2, 3, 8).permute(2, 0, 1),
    "detached": lambda t: t.detach(),
}


@pytest.mark.parametrize("view", VIEWS)
def test_a_view_of_summarised_memory_gets_the_first_result_to_the_bit(view):
    t = torch.randn(6, 8) * 3 + 1
    m = Summaries()
    first = m.stats(t, gradient=True)
    again = m.stats(VIEWS[view](t), gradient=True)
    assert again is first, "summarised twice"
    assert read(m, again) == stats(VIEWS[view](t), gradient=True)


def test_a_change_in_place_is_summarised_anew():
    t = torch.randn(100)
    m = Summaries()
    before = m.stats(t)
    t.mul_(2)
    assert read(m, m.stats(t)) == stats(t) != read(m, before)


def test_memory_freed_and_reused_by_a_new_tensor_is_summarised_anew():
    """Same address, same size, version 0 again: only the storage's identity tells them apart."""
    m, seen, reused = Summaries(), set(), 0
    for k in range(20):
        t = torch.full((1000,), float(k))
        where = (id(t.untyped_storage()), t.data_ptr())
        reused += where in seen
        seen.add(where)
        assert read(m, m.stats(t)) == stats(t), f"tensor {k} got an earlier tensor's statistics"
        del t
    if not reused:
        pytest.skip("the allocator never handed the same memory out twice here")


def test_different_elements_of_one_storage_are_told_apart():
    base = torch.randn(10, 12)
    parts = [base, base[::2], base[1::2], base[:, :6], base[:5], base[2:7, 3:9], base.t()[::3]]
    m = Summaries()
    for p in parts + parts:
        assert read(m, m.stats(p)) == stats(p)


def test_an_expanded_tensor_and_its_distinct_elements_are_kept_apart():
    """The gradient of a sum is one number expanded: n = 6 there, n = 1 in the number itself."""
    one = torch.tensor([2.0])
    m = Summaries()
    assert read(m, m.stats(one.expand(6))) == stats(one.expand(6))
    assert read(m, m.stats(one)) == stats(one)
    assert read(m, m.stats(one)).numel == 1 and read(m, m.stats(one.expand(6))).numel == 6


def test_a_value_and_a_gradient_over_the_same_memory_are_kept_apart():
    t = torch.randn(50)
    m = Summaries()
    assert read(m, m.stats(t, gradient=True)) == stats(t, gradient=True)
    assert read(m, m.stats(t)) == stats(t) and read(m, m.stats(t)).min is not None


def test_a_gradient_is_summarised_by_its_norm_alone():
    g = torch.randn(40, 30) * 1e-3
    st = stats(g, gradient=True)
    assert (st.mean, st.std, st.min, st.max) == (None, None, None, None) and st.numel == 1200
    assert st.norm == pytest.approx(g.double().norm().item(), rel=1e-6)
    assert not stats(torch.tensor([1.0, float("nan")] * 10), gradient=True).finite
    assert not stats(torch.tensor([1.0, -float("inf")] * 10), gradient=True).finite
    big = torch.full((20,), 1e20)  # its squares overflow float32: summed again in float64
    assert stats(big, gradient=True).norm == pytest.approx(1e20 * 20**0.5, rel=1e-6)


def test_an_edge_norm_is_the_norm_of_the_gradient_statistics():
    g = torch.randn(30, 40).t()
    m = Summaries()
    assert read(m, m.norm(g)).norm == stats(g, gradient=True).norm == read(m, m.stats(g, gradient=True)).norm
    z = torch.tensor([3 + 4j, 0j])
    assert read(m, m.norm(z)).norm == pytest.approx(5.0), "complex: the norm of the magnitudes"
    assert read(m, m.norm(torch.zeros(0))).norm == 0.0


def test_tensors_without_plain_memory_are_summarised_each_time():
    with torch.inference_mode():
        t = torch.randn(20)
    m = Summaries()
    assert read(m, m.stats(t)) == read(m, m.stats(t)) == stats(t)


def test_dense_means_a_permutation_of_a_contiguous_tensor():
    """``layout.dense`` reads the strides; it must agree with trying the permutation."""

    def permuted_is_contiguous(x):
        return x.permute(sorted(range(x.dim()), key=x.stride, reverse=True)).is_contiguous()

    rng = random.Random(0)
    memory = torch.zeros(3000)
    for _ in range(3000):
        dims = rng.randint(0, 4)
        shape = [rng.choice([1, 1, 2, 3, 4]) for _ in range(dims)]
        strides = [rng.choice([0, 1, 2, 3, 4, 6, 8, 12, 24]) for _ in range(dims)]
        x = memory.as_strided(shape, strides)
        assert layout.dense(x) == permuted_is_contiguous(x), (shape, strides)
    for perm in itertools.permutations(range(4)):
        assert layout.dense(torch.zeros(2, 3, 4, 5).permute(perm))


def test_the_tensors_of_a_call_are_those_pytree_finds_in_its_order():
    a, b, c = torch.ones(1), torch.ones(2), torch.ones(3)
    pair = collections.namedtuple("pair", "x y")
    for tree in [
        ((a, 2, None), {}),
        (([a, b], {"k": c, "j": (b,)}), {"out": a}),
        torch.max(torch.ones(2, 2), dim=0),
        pair(b, [c, 1.5]),
        "text",
    ]:
        assert _tensors(tree) == [t for t in tree_leaves(tree) if isinstance(t, torch.Tensor)]


def test_a_parameter_gradient_is_summarised_once(monkeypatch):
    """Linear's weight gradient reaches TBackward transposed, then the leaf: one memory, read once."""
    reads = []
    compute = Summaries._stats

    def counting(self, x, n, gradient):
        reads.append((x.shape, gradient))
        return compute(self, x, n, gradient)

    monkeypatch.setattr(Summaries, "_stats", counting)
    layer = torch.nn.Linear(5, 3)
    g = vz.graph(lambda x: layer(x).sum(), torch.randn(2, 5), params=layer, max_nodes=None)
    (weight,) = g.find("weight")
    assert weight.grad_stats is not None
    assert len([r for r in reads if r[1] is True and r[0].numel() == 15]) == 1, reads


def test_edge_norms_agree_with_the_gradient_the_edge_delivers():
    """An output used once sends its whole gradient down its one edge: the same norm."""
    model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    g = vz.graph(lambda x: model(x).sum(), torch.randn(4, 6), params=model, max_nodes=None)
    sources = collections.Counter(s for s, _ in g.edges)
    checked = 0
    for (s, _), norm in zip(g.edges, g.edge_grads, strict=True):
        node = g.node(s)
        if sources[s] == 1 and node.grad_stats is not None:
            assert norm == node.grad_stats.norm, node.name
            checked += 1
    assert checked > 5


def test_a_lazy_module_is_described_once_it_has_its_parameters():
    """Module specs are read when the call ends: a LazyLinear has its shapes by then."""

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = torch.nn.LazyLinear(3)

        def forward(self, x):
            return self.body(x).sum()

    g = vz.graph(Net(), torch.randn(2, 5), max_nodes=None)
    assert g.module_specs["body"].params == (("weight", (3, 5)), ("bias", (3,)))
