"""vizlib at GPU scale, checked on the CPU: what a recording costs the device.

On a GPU every read of a number waits for the device, so a recording must read its
statistics in a few transfers, not one per op (counted here with a dispatch mode and
``Tensor.tolist``); its statistics must make no full-size copies, so that its peak
memory stays that of a plain step (measured here with malloc's live bytes, where torch
keeps CPU tensors); and a model too big to run at all can still be drawn from the meta
device. The timings that go with these are in bench/bench_scale.py.
"""

import math

import pytest
import torch

import vizlib as vz
from bench.llama import LlamaConfig, meta_llama
from bench.probes import HostReads, PeakMemory, count_host_reads
from coursekit.models import GPTConfig, make_gpt
from vizlib.capture import reductions, summary
from vizlib.capture.backward import SavedForBackward
from vizlib.capture.summary import Summaries, stats

from .test_batched import DispatchedOps


def small_gpt(n_layer: int, width: int = 32, batch: int = 2):
    return make_gpt(GPTConfig(n_layer=n_layer, n_embd=width, n_head=2, block_size=32, vocab=256), batch=batch)


def test_a_recording_reads_its_numbers_in_a_few_transfers_whatever_its_size():
    """2 layers or 8, the same few reads: every op's statistics wait on the device until
    the end (before, each op read its own: dozens per layer)."""
    counts, ops = {}, {}
    for n_layer in (2, 8):
        model, batch = small_gpt(n_layer)
        vz.graph(model, *batch)  # warm-up: first-call imports
        graphs = []
        counts[n_layer] = count_host_reads(
            lambda m=model, b=batch, out=graphs: out.append(vz.graph(m, *b, max_nodes=None))
        )
        ops[n_layer] = sum(n.value_stats is not None and n.grad_stats is not None for n in graphs[0].nodes)
    assert ops[8] > 3 * ops[2] > 100, "the bigger model must summarise many more tensors"
    assert counts[8] == counts[2] <= 8, counts


def test_the_count_sees_a_read_per_op():
    """The counter itself: one ``item`` per op is seen as one read per op."""
    x = torch.randn(10)
    assert count_host_reads(lambda: [x.sum().item() for _ in range(7)]) == 7
    assert count_host_reads(lambda: [x.tolist() for _ in range(3)]) == 3


def test_a_cast_that_stays_on_its_device_is_not_a_read():
    """``.to(dtype)`` of a tensor off the CPU (meta here, a GPU's alike) stays on its device;
    ``.to("cpu")`` and ``.cpu()`` are reads."""
    x, y = torch.randn(10, device="meta"), torch.randn(10)
    assert count_host_reads(lambda: (x.to(torch.float64), x.double(), x.to("meta"), y.double())) == 0
    for read in (lambda: x.to("cpu"), x.cpu, lambda: x.to("cpu", torch.float64)):
        with HostReads() as reads, pytest.raises(NotImplementedError):  # (meta has no values to bring)
            read()
        assert reads.count == 1


@pytest.mark.parametrize(
    "n_layer, max_nodes, gpu_path",
    [(1, 150, False), (4, 30, False), (4, 30, True)],
    ids=["every op", "folded", "folded, on a GPU's path"],
)
def test_a_recording_needs_no_more_memory_than_a_plain_step(monkeypatch, n_layer, max_nodes, gpu_path):
    """Peak memory above the model's own, recording vs forward + backward: within 1.1x.

    The activations (about 20 MiB here) dwarf what a recording keeps of its own (its
    records and the few numbers per tensor, about 1 MiB), as they do in any real model;
    half precision's float32 pieces are bounded by the test below. Folded, most modules
    run unwatched and most backward nodes have no hook of vizlib's: what they saved is
    let go of all the same (backward.SavedForBackward). On a GPU's path (the CPU made to
    take it), big values wait as copies to be reduced a batch at a time, and gradients
    are held for one multi-tensor norm: what waits grows with what was read, so a model
    this small waits for little.
    """
    if gpu_path:
        monkeypatch.setitem(summary._BY_MOMENTS, "cpu", True)
        monkeypatch.setitem(summary._BY_FOREACH, "cpu", True)
        monkeypatch.setitem(summary._BATCHED, "cpu", reductions.FLOAT64_UP_TO)
    torch.manual_seed(0)
    model, batch = small_gpt(n_layer, width=256, batch=16)

    def plain():
        torch.autograd.grad(model(*batch), list(model.parameters()))

    def record():
        vz.graph(model, *batch, max_nodes=max_nodes)

    plain(), record()  # warm-up: the first calls allocate once-only things
    peaks = {}
    for name, fn in (("plain", plain), ("recording", record)):
        with PeakMemory() as m:
            fn()
        peaks[name] = m.extra
    assert peaks["plain"] > 1 << 20, peaks
    assert peaks["recording"] <= 1.1 * peaks["plain"], peaks


def test_what_a_node_unpacked_goes_once_the_next_node_unpacks_with_no_hook_at_all():
    """A backward node without a hook of vizlib's lets go of what it unpacked as soon as
    the next node on its thread unpacks (the engine runs a thread's nodes one at a time),
    not only at the next hook or once backward ends."""
    saved, holders = SavedForBackward(), []

    def pack(t):
        holders.append(saved.pack(t, t.grad_fn is None))
        return holders[-1]

    x = torch.randn(4, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, saved.unpack):
        w = x.sin().exp().cos()  # sin saves x, exp its own result, cos exp's result
    assert len(holders) == 3
    saved.in_backward = True
    torch.autograd.grad(w.sum(), x, retain_graph=True)  # cos, then exp, then sin unpack
    assert [h.tensor is None for h in holders] == [False, True, True], (
        "sin's held (its node unpacked last), exp's and cos's let go of"
    )
    saved.all_done()
    assert all(h.tensor is None for h in holders)


def test_statistics_of_a_big_half_precision_tensor_copy_a_piece_not_the_tensor():
    """A bf16 tensor of 16 MiB: reading it as float32 whole would take 32 MiB more."""
    t = torch.randn(1 << 23).bfloat16()
    with PeakMemory() as m:
        st = stats(t)
    assert m.extra < 4 << 20, m.extra
    ref = t.double()
    assert st.mean == pytest.approx(ref.mean().item(), abs=1e-5) and st.max == ref.max().item()
    assert st.std == pytest.approx(ref.std(correction=0).item(), rel=1e-5)


LAYOUTS = {
    "contiguous": lambda: torch.randn(40, 30),
    "transposed": lambda: torch.randn(64, 48).t(),
    "strided": lambda: torch.randn(30, 40)[::2, 1::3],
    "split part": lambda: torch.randn(6, 10, 12).split(4, dim=2)[1],
    "far from zero": lambda: 500 + 0.01 * torch.randn(2000),
    "float16": lambda: torch.randn(1000).half(),
    "integers": lambda: torch.arange(1000),
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_statistics_read_in_many_pieces_are_those_of_the_whole(monkeypatch, layout):
    """Pieces of 64 elements (a GPU's are millions): combined, the same statistics."""
    torch.manual_seed(0)
    t = LAYOUTS[layout]()
    monkeypatch.setattr(summary, "_PIECE", {"cpu": 64})
    for module in (summary, reductions):  # the one limit, read in both
        monkeypatch.setattr(module, "FLOAT64_UP_TO", 16)  # float32 pieces, as a big tensor's
    st, ref = stats(t), t.double()
    assert st.numel == t.numel()
    assert st.min == ref.min().item() and st.max == ref.max().item()
    assert st.mean == pytest.approx(ref.mean().item(), rel=1e-5, abs=1e-6 * ref.abs().max().item())
    assert st.std == pytest.approx(ref.std(correction=0).item(), rel=1e-4)
    assert st.norm == pytest.approx(ref.norm().item(), rel=1e-5)
    assert stats(t, gradient=True).norm == pytest.approx(ref.norm().item(), rel=1e-5)


def test_a_llama_3_8b_on_the_meta_device_is_drawn_without_values():
    """8 billion parameters, no memory: structure, shapes, dtypes and devices, folded by
    depth; no values, no gradients, and the picture says so (bench_scale times it)."""
    model, batch = meta_llama()
    assert sum(p.numel() for p in model.parameters()) > 8e9
    g = vz.graph(model, *batch)
    (layers,) = [n for n in g.nodes if n.repeats > 1]
    assert layers.repeats == 32 and layers.module_type == "Block"
    c = LlamaConfig()
    assert layers.shape == (1, 16, c.dim) and layers.dtype == "float32"
    assert g.find("output")[0].shape == (1, 16, c.vocab)
    assert {n.device for n in g.nodes} == {"meta"}
    assert all(n.value is None and n.value_stats is None and n.grad is None for n in g.nodes)
    assert g.backward_order == [] and all(e is None for e in g.edge_grads)
    assert any("meta device" in note and "left out" in note for note in g.notes)
    assert "meta device" in g.to_dot() and "device: meta" in g.to_dot()
    assert "meta device" in repr(g)
    opened = vz.graph(model, *batch, depth=2, max_nodes=None)
    assert len(opened.find("layers.*.attention")) == 32 and opened.find("layers.0.feed_forward")


def test_tooltips_name_the_device_beside_shape_and_dtype():
    g = vz.graph(lambda x: (x * 2).sum(), torch.randn(3, 4))
    assert {n.device for n in g.nodes} == {"cpu"}
    assert "shape: 3×4  dtype: float32  device: cpu" in g.to_dot()
    assert not [note for note in g.notes if "device" in note], "one device: nothing to say"


def test_a_graph_on_two_devices_says_where_each_tensor_moved():
    """cpu -> meta (the only second device a CPU machine has): the edge that moved the
    tensor is labelled, each node names its device, and a note says which devices."""

    def f(x):
        return (x.to("meta") * 2).sum()

    x = torch.randn(5)
    for g in (vz.graph(f, x), vz.graph(f(x.requires_grad_()))):
        devices = {n.name: n.device for n in g.nodes}
        assert devices["ToCopyBackward0"] == "meta" and devices["MulBackward0"] == "meta"
        assert "cpu" in devices.values()
        dot = g.to_dot()
        moved = [line for line in dot.splitlines() if "cpu → meta" in line]
        assert len(moved) == 1 and "->" in moved[0], dot
        assert any("2 devices (cpu, meta)" in note for note in g.notes), g.notes
    leaf = next(n for n in vz.graph(f, x).nodes if n.kind == "leaf")
    assert leaf.value_stats is not None and math.isfinite(leaf.value_stats.norm), "the CPU side keeps its values"


def test_a_device_reads_a_tensor_of_one_piece_by_one_copy(monkeypatch):
    """On a GPU every call through PyTorch's dispatcher costs the host some microseconds,
    hundreds of times a recording: a contiguous value of one piece costs one copy, which
    waits to be reduced with the others of its shape (the first value read is reduced
    alone, by ``var_mean`` and ``aminmax``: what may wait grows with what was read); no
    detach (a value that requires grad is read with autograd off); a gradient is held for
    one multi-tensor norm without a call at all. (The CPU is made to take a GPU's path.)"""
    monkeypatch.setitem(summary._BY_MOMENTS, "cpu", True)
    monkeypatch.setitem(summary._BY_FOREACH, "cpu", True)
    monkeypatch.setattr(summary, "_WAITING_SHARE", 1)
    value, grad = torch.randn(64, 1024, requires_grad=True), torch.randn(64, 1024)
    s = Summaries()
    made = torch._C._autograd._get_sequence_nr()
    with DispatchedOps() as calls:
        s.describe(value)
        s.describe(grad, gradient=True)
    assert sorted(calls.names) == ["aminmax.default", "var_mean.correction", "view.default"], calls.names
    another = value.detach() * 2
    with DispatchedOps() as calls:
        s.describe(another)
    assert calls.names == ["_to_copy.default"], calls.names
    assert torch._C._autograd._get_sequence_nr() == made and torch.is_grad_enabled(), "no autograd node was made"
    s.fetch()
    assert s.result(s.stats(value)).mean == pytest.approx(value.double().mean().item(), abs=1e-6)
