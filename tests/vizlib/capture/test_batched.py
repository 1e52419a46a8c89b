"""Small tensors' statistics are reduced together, a batch at a time, and come out as
torch computes them one by one.

A recording sees tens of thousands of small tensors (a loop's steps, a model's biases);
``Summaries`` copies each small piece once and reduces a whole batch with segment
reductions. Checked here against torch's own float64 reductions, against the per-piece
path (``reductions.piece_row``) the batch replaces, for NaN, infinities, integers, half precision,
empty, expanded and strided tensors, and across many batches.
"""

import math

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import vizlib as vz
from bench.probes import count_host_reads
from vizlib.capture import reductions, summary
from vizlib.capture.summary import Summaries

nan, inf = math.nan, math.inf


def reference(t: torch.Tensor) -> dict[str, float]:
    """What torch says, in float64."""
    x = t.double()
    lo, hi = torch.aminmax(x.reshape(-1))
    return {
        "numel": t.numel(),
        "mean": x.mean().item(),
        "std": x.std(correction=0).item(),
        "norm": torch.linalg.vector_norm(x).item(),
        "min": lo.item(),
        "max": hi.item(),
    }


def same(a: float | None, b: float | None, rel: float = 1e-12) -> bool:
    if a is None or b is None:
        return a is b
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return math.isclose(a, b, rel_tol=rel, abs_tol=rel)


def summarised(tensors: list[torch.Tensor], gradient: bool = False) -> list:
    m = Summaries()
    pending = [m.stats(t, gradient) for t in tensors]
    m.fetch()
    return [m.result(p) for p in pending]


def mixed(seed: int = 0) -> list[torch.Tensor]:
    """Sizes from 1 to past the batch limit, layouts and dtypes of every kind."""
    g = torch.Generator().manual_seed(seed)
    out = [torch.randn(k, generator=g) * 3 + 1 for k in (1, 2, 7, 16, 17, 100, 1000, 1024, 1025, 5000)]
    out += [torch.randn(6, 8, generator=g).t(), torch.randn(10, 12, generator=g)[::2, 1::3]]
    out += [torch.tensor([2.0, -1.0]).expand(5, 2), torch.randn(3, 1, generator=g).expand(3, 4)]
    out += [torch.randn(40, generator=g).half(), torch.randn(40, generator=g).bfloat16()]
    out += [torch.arange(-5, 30), torch.randint(-1000, 1000, (300,), generator=g, dtype=torch.int32)]
    out += [torch.tensor([True, False, True]), torch.tensor(4.5), 500 + 0.01 * torch.randn(900, generator=g)]
    return out


def test_batched_statistics_are_torchs_own():
    """Float64 to the last few bits where read as float64; big float32 pieces (5,000
    elements here) are read as float32."""
    tensors = mixed()
    for t, st in zip(tensors, summarised(tensors), strict=True):
        rel = 1e-9 if t.numel() <= reductions.FLOAT64_UP_TO else 1e-5
        for name, want in reference(t).items():
            assert same(getattr(st, name), want, rel), (t.dtype, tuple(t.shape), name, getattr(st, name), want)
    for t, st in zip(tensors, summarised(tensors, gradient=True), strict=True):
        rel = 1e-9 if t.numel() <= reductions.FLOAT64_UP_TO else 1e-5
        assert st.numel == t.numel() and same(st.norm, reference(t)["norm"], rel), (t.dtype, t.shape)
        assert (st.mean, st.std, st.min, st.max) == (None, None, None, None)


SPECIAL = {
    "nan": [1.0, nan, 3.0],
    "only nan": [nan],
    "inf": [1.0, inf, 2.0],
    "minus inf": [-inf, 0.5],
    "both infinities": [inf, -inf],
    "nan and inf": [inf, nan],
}


@pytest.mark.parametrize("case", SPECIAL)
def test_nan_and_infinities_read_as_the_per_piece_path_reads_them(monkeypatch, case):
    """The batch gives what ``reductions.piece_row`` (one piece at a time, ``aminmax``) gives: NaN in the
    min and max of a tensor that holds one, an infinite norm beside infinities."""
    tensors = [torch.tensor(SPECIAL[case]), torch.tensor(SPECIAL[case]).half(), torch.randn(5)]
    batched = summarised(tensors) + summarised(tensors, gradient=True)
    monkeypatch.setattr(summary, "_BATCHED", {"cpu": 0})  # every piece on its own
    alone = summarised(tensors) + summarised(tensors, gradient=True)
    for b, a in zip(batched, alone, strict=True):
        for name in ("numel", "mean", "std", "norm", "min", "max"):
            assert same(getattr(b, name), getattr(a, name)), (case, name, b, a)
    want = reference(tensors[0])
    for name in ("mean", "std", "norm", "min", "max"):  # +inf beside -inf: a NaN mean, an infinite norm
        assert same(getattr(batched[0], name), want[name]), (case, name, batched[0], want)
    values = batched[0]
    if any(math.isnan(v) for v in SPECIAL[case]):
        assert math.isnan(values.min) and math.isnan(values.max) and not values.finite
    else:
        assert (values.min, values.max) == (min(SPECIAL[case]), max(SPECIAL[case])) and not values.finite


@pytest.mark.parametrize("case", SPECIAL)
def test_an_accelerators_two_kernel_reduction_reads_nan_and_infinities_as_the_cpu_does(monkeypatch, case):
    """On a GPU a big piece of a value is reduced by ``reductions.moments`` (var_mean and
    aminmax), alone or in a batch of its shape: NaN, infinities of one sign and of both give
    the statistics ``piece_row`` gives."""
    big = torch.tensor(SPECIAL[case] * 2000)
    tensors = [big, big.half(), big.double(), torch.randn(5000), big.clone()]
    by_piece = summarised(tensors)
    monkeypatch.setitem(summary._BY_MOMENTS, "cpu", True)
    # (all but the first wait: the half one and the last in one batch)
    monkeypatch.setattr(summary, "_WAITING_SHARE", 1)
    by_moments = summarised(tensors)
    for t, m, p in zip(tensors, by_moments, by_piece, strict=True):
        want = reference(t)
        for name in ("numel", "mean", "std", "norm", "min", "max"):
            assert same(getattr(m, name), getattr(p, name), rel=1e-5), (case, name, m, p)
            assert same(getattr(m, name), want[name], rel=1e-5), (case, name, m, want)


def test_an_accelerators_two_kernel_reduction_gives_torchs_statistics(monkeypatch):
    """Every dtype, layout and size of ``mixed`` (and pieces of a tensor bigger than a piece),
    through ``moments`` where a CPU would use ``piece_row``: torch's float64 numbers, to
    float32's precision; data far from zero keeps its spread (var_mean centres as it goes)."""
    monkeypatch.setitem(summary._BY_MOMENTS, "cpu", True)
    monkeypatch.setitem(summary._PIECE, "cpu", 3000)
    g = torch.Generator().manual_seed(3)
    tensors = mixed() + [1000 + 0.01 * torch.randn(20000, generator=g), torch.randn(90, 100, generator=g).t()]
    tensors += [torch.randint(-9, 9, (7000,), generator=g, dtype=torch.int8), torch.randn(6000, generator=g).bfloat16()]
    for t, st in zip(tensors, summarised(tensors), strict=True):
        for name, want in reference(t).items():
            assert same(getattr(st, name), want, 1e-5), (t.dtype, tuple(t.shape), name, getattr(st, name), want)


def test_an_accelerators_big_values_of_one_shape_cost_one_copy_each_and_two_reductions_a_batch(monkeypatch):
    """What a GPU's host pays for big values: a copy each, and one var_mean and one aminmax
    per batch of values of one shape (each of which costs a GPU's host several launches'
    time), not one of each per value. (The first value, read before any other, is
    reduced alone: what may wait grows with what has been read.)"""
    monkeypatch.setitem(summary._BY_MOMENTS, "cpu", True)
    monkeypatch.setattr(summary, "_WAITING_SHARE", 1)
    tensors = [torch.randn(5000) for _ in range(50)]
    m = Summaries()
    with DispatchedOps() as ops:
        pending = [m.stats(t) for t in tensors]
        m.fetch()
    kernels = [name.split(".")[0] for name in ops.names if not name.startswith(("detach.", "view.", "select."))]
    assert kernels.count("var_mean") == 2 and kernels.count("aminmax") == 2, sorted(set(kernels))
    assert kernels.count("_to_copy") == 49 and len(kernels) <= 49 + 12, sorted(kernels)
    for t, p in zip(tensors, pending, strict=True):
        want = reference(t)
        for name in ("numel", "mean", "std", "norm", "min", "max"):
            assert same(getattr(m.result(p), name), want[name], 1e-5), (name, m.result(p), want)


def test_an_accelerators_big_value_read_as_it_is_costs_two_reductions_whatever_its_size(monkeypatch):
    """A value bigger than a piece, of float32 or float64 in one block (a logits tensor, an
    embedding's weight), needs no copy to be read: on a GPU it goes to ``moments`` whole, one
    var_mean and one aminmax, not two per piece. Half precision is read through a cast, so
    in pieces, each at most a piece's copy."""
    monkeypatch.setitem(summary._BY_MOMENTS, "cpu", True)
    monkeypatch.setitem(summary._PIECE, "cpu", 3000)
    g = torch.Generator().manual_seed(11)
    cases = {
        "contiguous": torch.randn(30000, generator=g),
        "transposed": torch.randn(120, 250, generator=g, dtype=torch.float64).t(),
        "half": torch.randn(30000, generator=g).half(),
    }
    for case, t in cases.items():
        m = Summaries()
        with DispatchedOps() as ops:
            p = m.stats(t)
            m.fetch()
        kernels = [name.split(".")[0] for name in ops.names]
        reductions_made = 10 if case == "half" else 1  # pieces of 3,000 elements
        assert kernels.count("var_mean") == kernels.count("aminmax") == reductions_made, (case, kernels)
        if case != "half":
            assert "_to_copy" not in kernels and "clone" not in kernels, (case, kernels)
        want = reference(t)
        for name in ("numel", "mean", "std", "norm", "min", "max"):
            assert same(getattr(m.result(p), name), want[name], 1e-5), (case, name, m.result(p), want)


def test_an_accelerators_waiting_values_are_copies_bounded_in_bytes(monkeypatch):
    """Values waiting for their batch's reduction are copies (a value changed in place once
    read keeps the numbers it had: ``relu_``, ``+=``), and all the batches waiting hold at
    most ``_WAITING_BYTES`` together, whatever the mix of lengths."""
    monkeypatch.setitem(summary._BY_MOMENTS, "cpu", True)
    monkeypatch.setattr(summary, "_WAITING_BYTES", 3 * 7000 * 4)
    monkeypatch.setattr(summary, "_WAITING_SHARE", 1)
    g = torch.Generator().manual_seed(7)
    tensors = [torch.randn(k, generator=g) for k in (5000, 6000, 7000) * 10]
    tensors += [torch.randn(30000, generator=g), torch.randn(5000, generator=g).half()]
    wants = [reference(t) for t in tensors]
    m = Summaries()
    most, pending = 0, []
    for t in tensors:
        pending.append(m.stats(t))
        t.zero_()  # changed in place once read
        most = max(most, sum(c.nbytes for copies, _ in m._alike.values() for c in copies))
    m.fetch()
    assert 0 < most <= summary._WAITING_BYTES and not m._alike
    for t, p, want in zip(tensors, pending, wants, strict=True):
        for name in ("numel", "mean", "std", "norm", "min", "max"):
            assert same(getattr(m.result(p), name), want[name], 1e-3), (t.dtype, t.numel(), name)


def test_an_accelerators_held_gradients_give_torchs_norms(monkeypatch):
    """Big float32/float64 gradients held and read by one multi-tensor norm a batch at a
    time, as a GPU reads them: torch's norms, whatever the layout; the other gradients
    (half precision, strided slices, small ones) take their usual paths beside them."""
    monkeypatch.setitem(summary._BY_FOREACH, "cpu", True)
    monkeypatch.setattr(summary, "_HELD_BYTES", 3 * 5000 * 4)
    g = torch.Generator().manual_seed(5)
    tensors = [torch.randn(k, generator=g) * 10 for k in (5000, 4097, 20000, 6000)]
    tensors += [torch.randn(90, 100, generator=g, dtype=torch.float64).t(), torch.randn(70, 1).expand(70, 300)]
    tensors += [torch.randn(9000, generator=g).half(), torch.randn(200, 300, generator=g)[::2], torch.randn(50)]
    tensors += [torch.full((8000,), 3e15), torch.tensor([1.0, inf] * 3000), torch.tensor([nan] * 5000)]
    for t, st in zip(tensors, summarised(tensors, gradient=True), strict=True):
        want = reference(t)["norm"]
        assert same(st.norm, want, 1e-5), (t.dtype, tuple(t.shape), st.norm, want)


def test_held_gradients_cost_one_norm_per_batch_and_stay_bounded(monkeypatch):
    """60 gradients of 5,000 floats, held at most 4 at a time: one multi-tensor norm per
    batch instead of a ``dot`` each, and no gradient held past its batch."""
    monkeypatch.setitem(summary._BY_FOREACH, "cpu", True)
    monkeypatch.setattr(summary, "_HELD_BYTES", 4 * 5000 * 4)
    grads = [torch.randn(5000) for _ in range(60)]
    m = Summaries()
    most = 0
    with DispatchedOps() as ops:
        pending = []
        for t in grads:
            pending.append(m.stats(t, gradient=True))
            most = max(most, sum(len(held) for held in m._held.values()))
        m.fetch()
    kernels = [name.split(".")[0] for name in ops.names if not name.startswith(("detach.", "view."))]
    assert "dot" not in kernels and kernels.count("_foreach_norm") == 15, sorted(set(kernels))
    assert most <= 4 and not m._held
    for t, p in zip(grads, pending, strict=True):
        assert same(m.result(p).norm, torch.linalg.vector_norm(t.double()).item(), 1e-6)


def test_a_recording_with_held_gradients_draws_the_same_numbers(monkeypatch):
    """A whole recording (an MLP's gradients, edge norms and a parameter's TBackward seen
    twice) with gradients held as on a GPU: the numbers of the usual path."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(300, 200), torch.nn.Tanh(), torch.nn.Linear(200, 100))
    x = torch.randn(64, 300)

    def numbers() -> list:
        g = vz.graph(lambda x: model(x).square().mean(), x, params=model, max_nodes=None)
        return [(n.name, n.grad_stats and n.grad_stats.norm) for n in g.nodes] + list(g.edge_grads)

    usual = numbers()
    monkeypatch.setitem(summary._BY_FOREACH, "cpu", True)
    monkeypatch.setattr(summary, "_HELD_BYTES", 100_000)
    held = numbers()
    assert len(held) == len(usual)
    for a, b in zip(held, usual, strict=True):
        if isinstance(a, tuple):
            assert a[0] == b[0] and same(a[1], b[1], 1e-5), (a, b)
        else:
            assert same(a, b, 1e-5), (a, b)


def test_a_recording_whose_values_wait_for_their_batch_draws_the_same_numbers(monkeypatch):
    """A whole recording with big values copied to wait for ``moments``, as on a GPU, a few
    at a time: the numbers of the usual path, though the model changes its values in place
    right after they are read (an in-place ReLU on a linear layer's output, a residual
    ``+=``), in the ways autograd allows: no node saved what changes."""

    class Residual(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = torch.nn.Sequential(torch.nn.Linear(300, 300), torch.nn.ReLU(inplace=True))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            out = x * 1.0  # (a product by a number saves nothing for backward)
            out += self.inner(x)
            return out

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(300, 300), *[Residual() for _ in range(3)], torch.nn.Linear(300, 10))
    x = torch.randn(64, 300)

    def numbers() -> list:
        g = vz.graph(lambda x: model(x).square().mean(), x, params=model, max_nodes=None)
        return [(n.name, n.value_stats and (n.value_stats.mean, n.value_stats.std, n.value_stats.min)) for n in g.nodes]

    usual = numbers()
    monkeypatch.setitem(summary._BY_MOMENTS, "cpu", True)
    monkeypatch.setattr(summary, "_WAITING_BYTES", 3 * 64 * 300 * 4)
    monkeypatch.setattr(summary, "_WAITING_SHARE", 1)
    waited = numbers()
    assert len(waited) == len(usual) and sum(b is not None for _, b in usual) > 10
    for (name, a), (other, b) in zip(waited, usual, strict=True):
        assert name == other and (a is None) == (b is None), (name, other)
        if a is not None:
            assert all(same(u, v, 1e-5) for u, v in zip(a, b, strict=True)), (name, a, b)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (run on a GPU machine)")
def test_on_a_gpu_every_path_gives_torchs_statistics(monkeypatch):
    """Small pieces batched, big values by ``moments`` (alone, and copied to wait in batches
    of their shape), big gradients held for one multi-tensor norm, on the GPU."""
    monkeypatch.setattr(summary, "_WAITING_SHARE", 1)  # (what was read lets the next wait)
    tensors = [t.cuda() for t in mixed()] + [torch.tensor(SPECIAL[case] * 3000).cuda() for case in SPECIAL]
    tensors.append(1000 + 0.01 * torch.randn(300000, device="cuda"))
    tensors += [t.cuda() for t in (torch.randn(64, 300), torch.randn(64, 300).half(), torch.randn(300, 64).t())]
    for gradient in (False, True):
        for t, st in zip(tensors, summarised(tensors, gradient), strict=True):
            want = reference(t.cpu())
            for name in ("numel", "norm") if gradient else want:
                assert same(getattr(st, name), want[name], 1e-5), (t.dtype, tuple(t.shape), name, st, want)


def test_many_batches_each_bounded(monkeypatch):
    """A batch is reduced once it holds _BATCH_ELEMENTS: what waits stays bounded, and
    pieces in different batches come out the same."""
    monkeypatch.setattr(summary, "_BATCH_ELEMENTS", 64)
    reduced = []
    reduce = Summaries._reduce

    def counting(self, key):
        reduced.append(self._batches[key].elements)
        return reduce(self, key)

    monkeypatch.setattr(Summaries, "_reduce", counting)
    g = torch.Generator().manual_seed(1)
    tensors = [torch.randn(int(k), generator=g) for k in torch.randint(1, 40, (500,), generator=g)]
    for t, st in zip(tensors, summarised(tensors), strict=True):
        ref = reference(t)
        assert all(same(getattr(st, k), v, rel=1e-9) for k, v in ref.items()), (t.numel(), st, ref)
    assert len(reduced) > 100 and max(reduced) < 64 + 40, reduced


class DispatchedOps(TorchDispatchMode):
    """The ops that reach the dispatcher's backends while it is on."""

    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(func.__name__)
        return func(*args, **(kwargs or {}))


def test_small_tensors_cost_one_copy_each_and_a_few_reductions_in_all():
    """3,000 tensors of 8 elements: a copy each, then a handful of reductions per batch,
    and one read to the host for all of them."""
    tensors = [torch.randn(8) for _ in range(3000)]
    with DispatchedOps() as ops:
        m = Summaries()
        pending = [m.describe(t) for t in tensors]
        m.fetch()
    reductions = [n for n in ops.names if "segment_reduce" in n or n.startswith(("sum", "aminmax", "dot"))]
    batches = math.ceil(3000 * 8 / summary._BATCH_ELEMENTS)
    assert ops.names.count("clone.default") == 3000, "the value's copy is also the statistics' copy"
    assert 0 < len(reductions) <= 4 * batches, reductions
    again = Summaries()
    for t in tensors:
        again.describe(t)
    assert count_host_reads(again.fetch) <= 2  # float32 values, float64 statistics
    for t, (value, st) in zip(tensors, pending, strict=True):
        assert m.value_of(value) == t.tolist()
        assert same(m.result(st).std, reference(t)["std"], rel=1e-9)


def test_values_of_small_tensors_are_exact_in_their_own_dtype_and_order():
    """The copy that is read as statistics is also the tensor's value: integers stay
    integers (beyond float64's 2**53 too), a transposed tensor reads in its own order."""
    tensors = [
        torch.tensor([2**62 + 1, -3]),
        torch.arange(12, dtype=torch.int16).reshape(3, 4).t(),
        torch.tensor([True, False]),
        torch.tensor([0.1, -0.0]).half(),
        torch.tensor([1e-40, 3.0]).bfloat16(),
        torch.tensor(7),
        torch.zeros(0),
        torch.tensor([1.0, 2.0]).expand(3, 2),
    ]
    m = Summaries()
    pending = [m.describe(t) for t in tensors]
    m.fetch()
    for t, (value, st) in zip(tensors, pending, strict=True):
        got = m.value_of(value)
        assert got == t.tolist() and type(got) is type(t.tolist()), (t, got)
        if t.numel() == 0:
            assert m.result(st) is None
        else:
            assert same(m.result(st).mean, reference(t)["mean"], rel=1e-9), t


def test_a_tensor_changed_in_place_after_it_was_asked_for_keeps_its_first_numbers():
    """The batch holds copies: a later in-place change does not reach a waiting piece."""
    t = torch.tensor([1.0, 2.0, 3.0])
    m = Summaries()
    value, st = m.describe(t)
    t.mul_(10)
    m.fetch()
    assert m.value_of(value) == [1.0, 2.0, 3.0] and m.result(st).max == 3.0


@pytest.mark.parametrize("bound", [1 << 16, 1])
def test_a_small_gradient_asked_for_its_norm_then_its_value_is_copied_once(monkeypatch, bound):
    """An edge asks for a gradient's norm, then the node it reaches for its value: one
    copy serves both, whether its batch was reduced in between (bound 1) or not."""
    monkeypatch.setattr(summary, "_BATCH_ELEMENTS", bound)
    g = torch.randn(2, 3)
    with DispatchedOps() as ops:
        m = Summaries()
        norm = m.norm(g)
        value, st = m.describe(g.view(6), gradient=True)
        m.fetch()
    assert st is norm and ops.names.count("clone.default") == 1, ops.names
    assert m.value_of(value) == g.view(6).tolist()
    assert same(m.result(norm).norm, g.double().norm().item())
    again, _ = m.describe(g, gradient=True)  # after a fetch: copied anew
    m.fetch()
    assert m.value_of(again) == g.tolist()
