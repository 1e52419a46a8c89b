"""vizlib never changes the caller's tensors, their .grad, or the autograd state it found."""

import pytest
import torch
import torch.nn.modules.module as module_hooks
from torch import nn

import vizlib as vz


def global_state():
    """Everything a recording might leave behind, as comparable values."""
    return {
        "grad enabled": torch.is_grad_enabled(),
        "torch function modes": torch._C._len_torch_function_stack(),
        "saved tensor hooks": torch._C._autograd._top_saved_tensors_default_hooks(False),
        "module hooks": (
            len(module_hooks._global_forward_pre_hooks),
            len(module_hooks._global_forward_hooks),
            len(module_hooks._global_backward_hooks),
        ),
        "rng": torch.get_rng_state(),
        "anomaly": torch.is_anomaly_enabled(),
    }


def assert_same_state(before, after):
    for key in before:
        same = torch.equal(before[key], after[key]) if key == "rng" else before[key] == after[key]
        assert same, f"{key}: {before[key]} -> {after[key]}"


def fn(x, w, b):
    return (torch.dropout(x, 0.5, True) * w + b).tanh().sum()


def caller_tensors():
    x = torch.tensor([1.0, 2.0, 3.0])  # does not require grad
    w = torch.tensor([0.5, -0.5, 2.0], requires_grad=True)  # .grad stays None
    b = torch.tensor(0.25, requires_grad=True)
    b.grad = torch.tensor(7.0)  # an existing gradient stays as it is
    return x, w, b


def test_caller_tensors_are_unchanged():
    x, w, b = caller_tensors()
    snapshot = [(t.clone(), t._version, t.requires_grad) for t in (x, w, b)]
    before = global_state()
    g = vz.graph(fn, x, w, b)
    assert_same_state(before, global_state())
    for t, (value, version, requires_grad) in zip((x, w, b), snapshot, strict=True):
        assert torch.equal(t, value) and t._version == version and t.requires_grad == requires_grad
    assert x.grad is None and w.grad is None and b.grad.item() == 7.0
    assert g.find("x")[0].grad is not None, "the copy of x got a gradient, x did not"


def test_posthoc_changes_nothing():
    x, w, b = caller_tensors()
    y = fn(x, w, b)
    before = global_state()
    vz.graph(y, params={"w": w, "b": b})
    assert_same_state(before, global_state())
    assert w.grad is None and b.grad.item() == 7.0


def test_state_is_restored_when_the_function_raises():
    x, w, b = caller_tensors()

    def broken(x, w, b):
        nn.Linear(3, 3)(x * w)  # a module call: module hooks are active when it fails
        raise KeyError("learner bug")

    before = global_state()
    with pytest.raises(KeyError):
        vz.graph(broken, x, w, b)
    assert_same_state(before, global_state())
    assert w.grad is None and b.grad.item() == 7.0


@pytest.mark.filterwarnings("ignore:Anomaly Detection has been enabled")
@pytest.mark.parametrize("mode", ["no_grad", "anomaly"])
def test_works_and_restores_under_the_callers_autograd_modes(mode):
    ctx = torch.no_grad() if mode == "no_grad" else torch.autograd.detect_anomaly(check_nan=False)
    x, w, _ = caller_tensors()
    with ctx:
        before = global_state()
        g = vz.graph(lambda x, w: (x * w).sum(), x, w)
        assert_same_state(before, global_state())
    assert g.find("w")[0].grad == x.tolist()


def test_module_buffers_training_flag_and_grads_unchanged_after_error():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Dropout(0.1))
    state = {k: v.clone() for k, v in model.state_dict().items()}

    def bad(x):
        model(x)
        raise RuntimeError("after the forward")

    with pytest.raises(RuntimeError, match="after the forward"):
        vz.graph(bad, torch.randn(5, 3), params=model)
    assert all(torch.equal(state[k], v) for k, v in model.state_dict().items()), "BatchNorm stats changed"
    assert model.training and all(p.grad is None for p in model.parameters())
