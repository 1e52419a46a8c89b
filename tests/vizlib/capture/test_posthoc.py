"""vz.graph(y) and vz.graph([y1, y2]): walking a graph the learner already has."""

import pytest
import torch
from torch import nn

import vizlib as vz

from .. import autograd_ref


def leaves_and_result():
    x = torch.tensor([1.0, -2.0, 0.5], requires_grad=True)
    w = torch.tensor([0.5, 1.5, -1.0], requires_grad=True)
    y = ((x * w).sin() + x.exp()).sum()
    return x, w, y


def test_posthoc_graph_has_autograd_structure_and_names():
    x, w, _ = leaves_and_result()
    ref = autograd_ref.measure(lambda: ((x * w).sin() + x.exp()).sum(), {"x": x, "w": w})
    y = ((x * w).sin() + x.exp()).sum()
    g = vz.graph(y, params={"x": x, "w": w})
    autograd_ref.assert_same_graph(g, ref, require=False)
    (out,) = [n for n in g.nodes if n.is_output]
    assert out.name == "SumBackward0" and out.value == pytest.approx(y.item())
    assert g.find("MulBackward0")[0].shape == (3,) and g.find("MulBackward0")[0].dtype == "float32"
    assert g.find("x")[0].value == [1.0, -2.0, 0.5]


def test_posthoc_leaves_without_names_are_named_by_shape():
    *_, y = leaves_and_result()
    g = vz.graph(y)
    leaves = [n for n in g.nodes if n.kind == "leaf"]
    assert len(leaves) == 2 and all("3" in n.name for n in leaves)
    assert not any(c in n.name for n in leaves for c in ("0x", "id("))


def test_posthoc_leaves_the_graph_and_grads_untouched():
    x, w, y = leaves_and_result()
    vz.graph(y, show_saved=True)
    assert x.grad is None and w.grad is None
    y.backward()  # the graph is still there for the learner's own backward()
    assert x.grad is not None


def test_posthoc_after_backward_draws_leaf_grads_from_dot_grad():
    x, w, y = leaves_and_result()
    y.backward()
    g = vz.graph(y, params={"x": x, "w": w})
    assert g.find("x")[0].grad == pytest.approx(x.grad.tolist())
    assert g.find("w")[0].grad == pytest.approx(w.grad.tolist())
    g.to_dot()  # still draws


def test_posthoc_after_backward_with_show_saved_raises_a_clear_error():
    *_, y = leaves_and_result()
    y.backward()
    with pytest.raises(vz.VizlibError, match="retain_graph") as info:
        vz.graph(y, show_saved=True)
    assert "freed" in str(info.value) and "backward" in str(info.value)


def test_posthoc_several_results_share_nodes():
    x = torch.tensor([0.5, 1.0], requires_grad=True)
    h = x.exp()
    y1, y2 = (h * 2).sum(), h.sin().mean()
    g = vz.graph([y1, y2], params={"x": x})
    ref = autograd_ref.measure(lambda: (lambda e: ((e * 2).sum(), e.sin().mean()))(x.exp()), {"x": x})
    autograd_ref.assert_same_graph(g, ref, require=False)
    assert len(g.find("ExpBackward0")) == 1
    outs = [n for n in g.nodes if n.is_output]
    assert sorted(n.name for n in outs) == ["MeanBackward0", "SumBackward0"]
    assert sorted(n.value for n in outs) == pytest.approx(sorted([y1.item(), y2.item()]))


def test_posthoc_params_module_names_parameters():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    y = model(torch.ones(2, 3)).sum()
    g = vz.graph(y, params=model)
    assert {n.name for n in g.nodes if n.kind == "leaf"} == {"0.weight", "0.bias", "2.weight", "2.bias"}
    assert all(p.grad is None for p in model.parameters())


def test_posthoc_on_a_leaf_tensor():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    g = vz.graph(x, params={"x": x})
    assert [(n.kind, n.name) for n in g.nodes] == [("leaf", "x")] and g.edges == []


def test_posthoc_a_leaf_result_that_another_result_uses_is_one_node():
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    g = vz.graph([w, (w * 3).sum()], params={"w": w})  # (autograd meets w as itself and as an input of Mul)
    (leaf,) = g.find("w")
    assert leaf.is_output and len(g.nodes) == 3
    assert (leaf.id, g.find("MulBackward0")[0].id) in g.edges


# ---------------------------------------------------------------- torch.utils.checkpoint


def checkpointed_bn_model() -> tuple[nn.Module, list[int]]:
    """A block with a BatchNorm, and a list its first layer's forward hook adds to at each
    run (a recomputation stops once it has what backward needs, before the block's end)."""
    torch.manual_seed(0)
    block = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Tanh())
    runs: list[int] = []
    block[0].register_forward_hook(lambda *_: runs.append(1))
    return block, runs


@pytest.mark.parametrize("show_saved", [False, True])
def test_posthoc_graph_of_a_checkpointed_block_runs_none_of_it(show_saved):
    """Reading what an op inside a non-reentrant checkpoint saved would recompute the block
    (once per tensor read): the user's hooks would run and BatchNorm's statistics move."""
    block, runs = checkpointed_bn_model()
    w = torch.randn(5, 4, requires_grad=True)
    y = (torch.utils.checkpoint.checkpoint(block, torch.randn(5, 3), use_reentrant=False) * w).sum()
    state = {k: v.clone() for k, v in block.state_dict().items()}
    g = vz.graph(y, params=block, show_saved=show_saved)
    assert runs == [1], "the block ran again"
    assert all(torch.equal(v, block.state_dict()[k]) for k, v in state.items())
    assert g.find("1.weight") and g.find("NativeBatchNormBackward0")
    # What is kept: the product's factors (the block's output and w), not the block's insides.
    assert g.saved_bytes == 2 * 5 * 4 * 4
    assert any("torch.utils.checkpoint" in note and "recomputed" in note for note in g.notes)
    y.backward()  # the graph is still the user's to run backward through
    assert runs == [1, 1] and w.grad is not None


def test_posthoc_graph_without_checkpoint_says_nothing_of_it():
    *_, y = leaves_and_result()
    assert not any("checkpoint" in note for note in vz.graph(y, show_saved=True).notes)


def test_posthoc_graph_of_a_checkpointed_block_inside_the_callers_saved_tensor_hooks():
    """Drawn where the caller's saved-tensor hooks are pushed, which torch's
    disable_saved_tensors_hooks refuses to start under."""
    block, runs = checkpointed_bn_model()
    y = torch.utils.checkpoint.checkpoint(block, torch.randn(5, 3), use_reentrant=False).sum()
    with torch.autograd.graph.save_on_cpu():
        g = vz.graph(y, show_saved=True)
    assert runs == [1] and any("torch.utils.checkpoint" in note for note in g.notes)
    assert torch._C._autograd._saved_tensors_hooks_is_enabled()
