"""Nested tensors (torch.nested), which the course never uses: drawn with their ragged
dimension named, their statistics those of their elements, and their memory counted once."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

import vizlib as vz
from vizlib.data import Stats


def nested(layout: torch.layout, *sizes: tuple[int, ...], requires_grad: bool = True) -> torch.Tensor:
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's note that the strided layout is a prototype
        return torch.nested.nested_tensor([torch.randn(s) for s in sizes], layout=layout, requires_grad=requires_grad)


def elements(t: torch.Tensor) -> torch.Tensor:
    """Every element of a nested tensor, in float64 (the reference the statistics must match)."""
    return torch.cat([c.reshape(-1) for c in t.detach().unbind()]).double()


def assert_statistics_of(stats: Stats, t: torch.Tensor) -> None:
    ref = elements(t)
    assert stats.numel == ref.numel()
    assert stats.mean == pytest.approx(ref.mean().item(), rel=1e-6)
    assert stats.std == pytest.approx(ref.std(correction=0).item(), rel=1e-6)
    assert stats.norm == pytest.approx(ref.norm().item(), rel=1e-6)
    assert (stats.min, stats.max) == pytest.approx((ref.min().item(), ref.max().item()))


def test_a_jagged_tensor_is_drawn_with_torchs_name_of_its_ragged_dimension():
    a = nested(torch.jagged, (2, 4), (3, 4))
    g = vz.graph(lambda a: (a * 2).sin().sum(), a)
    leaf, mul, sin = g.find("a")[0], g.find("MulBackward0")[0], g.find("SinBackward0")[0]
    ragged = str(a.shape[1])  # torch's name of it: j1, j2, ... by the order tensors were made
    assert ragged.startswith("j")
    assert leaf.shape == mul.shape == sin.shape == (2, ragged, 4)
    assert_statistics_of(leaf.value_stats, a)
    assert_statistics_of(mul.value_stats, a * 2)
    assert_statistics_of(sin.value_stats, (a * 2).sin())
    grad = torch.autograd.grad((a * 2).sin().sum(), a)[0]
    assert leaf.grad_stats.norm == pytest.approx(elements(grad).norm().item(), rel=1e-6)
    assert leaf.value is None and leaf.grad is None  # its elements read flat are not its value
    assert f"shape [2, {ragged}, 4]" in repr(g)
    assert f"2×{ragged}×4" in g.to_svg()


def test_a_strided_nested_tensor_is_drawn_with_the_range_of_its_ragged_lengths():
    b = nested(torch.strided, (2, 4), (3, 4))

    def f(b):
        return torch.nested.to_padded_tensor((b * 2).sin(), 0.0).sum()

    g = vz.graph(f, b, show_saved=True)
    leaf, sin = g.find("b")[0], g.find("SinBackward0")[0]
    assert leaf.shape == sin.shape == (2, "2..3", 4)
    assert_statistics_of(leaf.value_stats, b)
    assert_statistics_of(sin.value_stats, (b * 2).sin())
    grad = torch.autograd.grad(f(b), b)[0]
    assert leaf.grad_stats.norm == pytest.approx(elements(grad).norm().item(), rel=1e-6)
    # sin saved its input: 20 float32 elements in one buffer, counted once (not once per component)
    assert [s.bytes for s in sin.saved] == [20 * 4]


def test_a_transposed_nested_tensor_reads_each_of_its_elements_once():
    for layout in (torch.jagged, torch.strided):
        t = nested(layout, (2, 4), (3, 4))
        g = vz.graph(lambda t: (t.transpose(1, 2) * 3).values().sum(), t)
        mul = g.find("MulBackward0")[0]
        assert mul.shape[:2] == (2, 4) and isinstance(mul.shape[2], str)
        assert_statistics_of(mul.value_stats, t.transpose(1, 2) * 3)


def test_a_small_nested_tensor_gets_statistics_not_a_flat_value():
    a = nested(torch.jagged, (2,), (3,))  # 5 elements: a plain tensor this small is copied whole
    g = vz.graph(lambda a: (a * a).sum(), a)
    leaf = g.find("a")[0]
    assert leaf.value is None and leaf.grad is None
    assert_statistics_of(leaf.value_stats, a)


def test_a_module_on_a_jagged_batch_is_drawn_folded_and_unfolded_alike():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    a = nested(torch.jagged, (2, 4), (5, 4), requires_grad=False)
    whole = vz.graph(lambda a: model(a).values().sum(), a, max_nodes=None)
    folded = vz.graph(lambda a: model(a).values().sum(), a, depth=0)
    box = next(n for n in folded.nodes if n.kind == "module")
    last = whole.find("LinearBackward0")[-1]
    assert box.shape == last.shape == (2, str(a.shape[1]), 1)
    assert box.value_stats == last.value_stats
    assert_statistics_of(box.value_stats, model(a))


def test_a_nested_result_that_is_not_one_number_gets_advice_that_fits_it():
    a = nested(torch.jagged, (2, 4), (3, 4))
    with pytest.raises(vz.VizlibError) as info:
        vz.graph(lambda a: a * 2, a)
    message = str(info.value)
    assert f"shape [2, {a.shape[1]}, 4]" in message and "grad_output=torch.ones_like(y)" in message
    assert "'" not in message
