"""Drawing changes nothing of the user's, on every entry point and every side path: buffers
of every module the call reaches (through a closure too), ``.grad`` of retained non-leaf
tensors, the generators a call draws from, and torch's, Python's and NumPy's random states."""

from __future__ import annotations

import random
import warnings

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
import torch
from torch import nn
from torch.testing._internal.two_tensor import TwoTensor

import vizlib as vz


def bn_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))


def state_of(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in model.state_dict().items()}


def assert_unchanged(model: nn.Module, before: dict[str, torch.Tensor]) -> None:
    after = model.state_dict()
    changed = [k for k, v in before.items() if not torch.equal(v, after[k])]
    assert not changed, f"changed by drawing: {changed}"


def random_states() -> tuple:
    return torch.get_rng_state(), random.getstate(), np.random.get_state()[1].copy()


def assert_same_random(before: tuple) -> None:
    torch_state, py_state, np_state = random_states()
    assert torch.equal(before[0], torch_state), "torch's random state advanced"
    assert before[1] == py_state, "Python's random state advanced"
    assert np.array_equal(before[2], np_state), "NumPy's random state advanced"


def draws_from_everything(gen: torch.Generator):
    """A function that draws from a generator, torch's, Python's and NumPy's random state."""

    def f(x):
        noise = torch.rand(x.shape, generator=gen) + torch.rand(x.shape)
        return (x * noise * random.random() * float(np.random.rand())).sum()

    return f


# ---------------------------------------------------------------- vz.graph


def test_graph_of_a_closure_over_a_model_keeps_its_batchnorm_statistics():
    model, x = bn_model(), torch.randn(5, 3)
    before = state_of(model)
    g = vz.graph(lambda i: model(i).pow(2).sum(), x)
    assert g.find("1.weight") and any("1" in n.modules for n in g.nodes), "the BatchNorm ran, named from the closure"
    assert_unchanged(model, before)


def test_graph_keeps_the_grad_of_a_retained_non_leaf():
    a = torch.randn(3, requires_grad=True)
    h = a * 2
    h.retain_grad()
    g = vz.graph(lambda h: (h * h).sum(), h)
    assert h.grad is None and a.grad is None
    assert g.find("SumBackward0"), "the graph itself was drawn"


def test_graph_keeps_an_existing_grad_of_a_retained_non_leaf():
    a = torch.randn(3, requires_grad=True)
    h = a * 2
    h.retain_grad()
    (h * 3).sum().backward(retain_graph=True)
    grad = h.grad
    vz.graph(lambda h: (h * h).sum(), h)
    assert h.grad is grad and torch.equal(grad, torch.full((3,), 3.0))


def test_graph_puts_back_requires_grad_that_the_call_switched():
    """A call that freezes a layer (``requires_grad_(False)``) or makes a tensor of its own
    closure require grad left the flags switched after the drawing, and a later training
    step updated what the user had frozen, or not."""
    model = bn_model()
    scale = torch.tensor([2.0, 3.0, 4.0])

    def f(x: torch.Tensor) -> torch.Tensor:
        model[0].requires_grad_(False)
        scale.requires_grad_(True)
        return (model(x * scale) ** 2).sum()

    g = vz.graph(f, torch.ones(2, 3))
    assert g.find("scale")[0].grad is not None and not g.find("0.weight")  # drawn as the call ran
    assert all(p.requires_grad for p in model.parameters()) and not scale.requires_grad
    assert scale.grad is None and all(p.grad is None for p in model.parameters())


def test_graph_keeps_generators_and_random_states():
    gen = torch.Generator().manual_seed(1)
    gen_state = gen.get_state()
    before = random_states()
    vz.graph(draws_from_everything(gen), torch.ones(3))
    assert torch.equal(gen.get_state(), gen_state), "the user's generator advanced"
    assert_same_random(before)


def test_graph_keeps_a_tensor_the_function_changes_in_place():
    counter = torch.zeros(3)  # state of the user's, outside any module

    def f(x):
        counter.add_(1)
        return (x * counter).sum()

    vz.graph(f, torch.ones(3))
    assert torch.equal(counter, torch.zeros(3))


def test_graph_keeps_running_statistics_given_to_functional_batch_norm():
    mean, var = torch.zeros(4), torch.ones(4)
    vz.graph(lambda x: nn.functional.batch_norm(x, mean, var, training=True).pow(2).sum(), torch.randn(5, 4))
    assert torch.equal(mean, torch.zeros(4)) and torch.equal(var, torch.ones(4))


def test_a_graph_the_caller_made_before_drawing_still_runs_backward():
    """Putting a buffer back leaves its version counter as it was: the caller's own graph
    saved the running statistics (a batch norm's backward keeps them), and autograd refuses
    a saved tensor whose version moved."""
    model = bn_model().train()
    mean, var, w = torch.zeros(4), torch.ones(4), torch.ones(4, requires_grad=True)
    x = torch.randn(5, 3)
    y = model(x)
    z = nn.functional.batch_norm(torch.randn(5, 4), mean, var, w, training=True)
    vz.graph(model, x, grad_output=torch.ones(5, 4))
    vz.graph(lambda a: nn.functional.batch_norm(a, mean, var, w, training=True).sum(), torch.randn(5, 4))
    (y.sum() + z.sum()).backward()  # raised "modified by an inplace operation" when versions moved
    assert model[0].weight.grad is not None and w.grad is not None


CHANGED_UNDER_ANOTHER_NAME = {
    "x.detach().add_": lambda t: t.detach().add_(1.0),
    "x.data.add_": lambda t: t.data.add_(1.0),
    "a slice of x.detach()": lambda t: t.detach()[1:].mul_(3.0),
    "x.data twice, back and forth": lambda t: (t.data.add_(1.0), t.data.mul_(3.0), t.data.sub_(1.0)),
    "x.float() of a float x": lambda t: t.float().add_(1.0),
    "torch._foreach_add_": lambda t: torch._foreach_add_([t], 1.0),
}


@pytest.mark.parametrize("change", CHANGED_UNDER_ANOTHER_NAME.values(), ids=CHANGED_UNDER_ANOTHER_NAME)
def test_graph_keeps_a_tensor_changed_in_place_through_another_name_for_it(change):
    counter, lin = torch.zeros(3), nn.Linear(3, 1)
    weight = lin.weight.detach().clone()

    def f(x):
        change(counter)
        with torch.no_grad():  # (a parameter that requires grad changes in place only so)
            change(lin.weight)
        return lin(x * counter).sum()

    vz.graph(f, torch.ones(3))
    assert torch.equal(counter, torch.zeros(3)) and torch.equal(lin.weight, weight)


@pytest.mark.parametrize("depth", [None, 0], ids=["watched", "run unwatched"])
def test_graph_keeps_embedding_rows_that_max_norm_rescales(depth):
    """With ``max_norm``, an embedding rescales the rows it looks up in place, inside the
    call where no function mode sees it."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(5, 3, max_norm=0.5), nn.Linear(3, 1))
    bag = nn.EmbeddingBag(5, 3, max_norm=0.5)
    weights = model[0].weight.detach().clone(), bag.weight.detach().clone()
    ids = torch.tensor([[1, 2]])
    vz.graph(model, ids, grad_output=torch.ones(1, 2, 1), depth=depth)
    vz.graph(lambda i: nn.functional.embedding(i, model[0].weight, max_norm=0.5).sum(), ids, params=model)
    vz.graph(lambda i: bag(i).sum(), ids, params=bag)
    assert torch.equal(model[0].weight, weights[0]) and torch.equal(bag.weight, weights[1])
    model(ids)  # what the plain call does: the rows looked up are rescaled
    assert not torch.equal(model[0].weight, weights[0])


def test_graph_keeps_gradients_that_clip_grad_norm_scales_in_place():
    model = nn.Linear(2, 2)
    for p in model.parameters():
        p.grad = torch.full_like(p, 10.0)

    def f(x):
        loss = model(x).sum()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # torch._foreach_mul_ of every .grad
        return loss

    vz.graph(f, torch.ones(3, 2))
    assert all(torch.equal(p.grad, torch.full_like(p, 10.0)) for p in model.parameters())


class _Average(nn.Module):
    """Keeps a running average of its outputs by assigning a new tensor to its buffer."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.register_buffer("average", torch.zeros(2))

    def forward(self, x):
        y = self.lin(x)
        self.average = 0.9 * self.average + 0.1 * y.detach().mean(0)
        return y.sum()


def test_graph_puts_back_a_buffer_the_forward_replaced():
    model = _Average()
    before = model.average
    vz.graph(model, torch.ones(3, 2))
    assert model.average is before and torch.equal(before, torch.zeros(2))


class _Counted(nn.Module):
    """Counts its calls in a buffer that is a wrapper subclass (TwoTensor), in place."""

    def __init__(self):
        super().__init__()
        self.register_buffer("calls", TwoTensor(torch.zeros(2), torch.ones(2)))

    def forward(self, x):
        self.calls.add_(1)
        return (x * self.calls).sum()


def test_graph_puts_back_a_wrapper_subclass_buffer_the_forward_changed_in_place():
    model = _Counted()
    vz.graph(model, torch.ones(2))
    assert model.calls.a.tolist() == [0.0, 0.0] and model.calls.b.tolist() == [1.0, 1.0]
    assert model.calls._version == 0


class _PerChannelRange(nn.Module):
    """Keeps the range of each channel it has seen, in buffers that are empty until its first
    call and then resized in place, as a quantization observer does (prepare_qat's)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("min_val", torch.tensor([]))
        self.register_buffer("max_val", torch.tensor([]))

    def forward(self, x):
        lo, hi = torch.aminmax(x.detach(), dim=0)
        self.min_val.resize_(lo.shape)
        self.max_val.resize_(hi.shape)
        self.min_val.copy_(lo)
        self.max_val.copy_(hi)
        return (x * 2).sum()


def test_graph_puts_back_buffers_the_forward_resized_in_place():
    model = _PerChannelRange()
    vz.graph(model, torch.tensor([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]]))
    assert model.min_val.shape == (0,) and model.max_val.shape == (0,)
    buf = torch.tensor([7.0])  # one with values, reached through a closure

    def grows(x):
        buf.resize_(3).fill_(0.0)
        return (x * 2).sum()

    vz.graph(grows, torch.ones(2))
    assert buf.tolist() == [7.0] and buf._version == 0


def test_graph_of_a_manual_update_through_data_puts_back_the_weights():
    model = nn.Linear(3, 1)
    weights = [p.detach().clone() for p in model.parameters()]

    def step(x):
        loss = model(x).pow(2).mean()
        grads = torch.autograd.grad(loss, list(model.parameters()), retain_graph=True)
        for p, g in zip(model.parameters(), grads, strict=True):
            p.data = p.data - 0.1 * g  # (the pre-torch.no_grad() way of a manual SGD step)
        return loss

    vz.graph(step, torch.ones(4, 3))
    assert all(torch.equal(p, w) for p, w in zip(model.parameters(), weights, strict=True))

    def to_half(x):
        model.weight.data = model.weight.data.half()
        return (x * 2).sum()

    vz.graph(to_half, torch.ones(2))
    assert model.weight.dtype == torch.float32 and torch.equal(model.weight, weights[0])


@pytest.mark.parametrize("make", [lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9), torch.optim.Adam])
def test_graph_of_a_training_step_puts_back_the_optimizers_state_and_the_weights(make):
    model = nn.Linear(2, 1)
    opt = make(model.parameters())
    weights = [p.detach().clone() for p in model.parameters()]

    def step(x):
        loss = model(x).pow(2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return model(x).pow(2).sum()

    vz.graph(step, torch.ones(3, 2))
    assert not opt.state and all(torch.equal(p, w) for p, w in zip(model.parameters(), weights, strict=True))
    step(torch.ones(3, 2))  # the optimizer still works as if never drawn
    assert opt.state


def test_graph_of_a_bound_method_keeps_the_models_it_holds():
    class Trainer:
        def __init__(self):
            self.model = bn_model()

        def loss(self, x):
            return self.model(x).pow(2).sum()

    trainer, x = Trainer(), torch.randn(5, 3)
    before = state_of(trainer.model)
    vz.graph(trainer.loss, x)
    assert_unchanged(trainer.model, before)


# ---------------------------------------------------------------- vz.explore and vz.replay


def test_explore_keeps_the_batchnorm_statistics_of_a_model_it_reaches():
    model, x = bn_model(), torch.randn(5, 3)
    before = state_of(model)
    explorer = vz.explore(lambda s: model(x * s).pow(2).sum(), s=1.0)
    slider = explorer.children[0]
    slider.value = slider.value + slider.step  # redraws: the function runs again
    assert_unchanged(model, before)
    assert explorer.graph.find("SumBackward0")


def test_explore_keeps_generators_and_random_states():
    gen = torch.Generator().manual_seed(1)
    gen_state = gen.get_state()
    before = random_states()
    vz.explore(lambda s: draws_from_everything(gen)(torch.ones(3) * s), s=1.0)
    assert torch.equal(gen.get_state(), gen_state)
    assert_same_random(before)


def test_replay_changes_nothing():
    model, x = bn_model(), torch.randn(5, 3)
    g = vz.graph(lambda i: model(i).pow(2).sum(), x)
    before, randoms = state_of(model), random_states()
    player = vz.replay(g)
    player.step_svg(len(g.backward_order))
    assert_unchanged(model, before)
    assert_same_random(randoms)
    assert all(p.grad is None for p in model.parameters())


# ---------------------------------------------------------------- vz.grad_flow


def test_grad_flow_changes_nothing():
    model = bn_model()
    model(torch.randn(5, 3)).pow(2).sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    before, randoms = state_of(model), random_states()
    vz.grad_flow(model)
    assert_unchanged(model, before)
    assert_same_random(randoms)
    assert all(torch.equal(p.grad, g) for p, g in zip(model.parameters(), grads, strict=True))


# ---------------------------------------------------------------- compiler graphs


def test_compiled_graphs_of_a_closure_keeps_batchnorm_statistics_and_random_states():
    model, x = bn_model(), torch.randn(5, 3)
    before, randoms = state_of(model), random_states()
    graphs = vz.compiled_graphs(lambda i: model(i).pow(2).sum(), x)
    assert graphs and graphs[0].nodes
    assert_unchanged(model, before)
    assert_same_random(randoms)


def test_joint_graph_of_a_model_keeps_batchnorm_statistics_and_random_states():
    model, x = bn_model(), torch.randn(5, 3)
    before, randoms = state_of(model), random_states()
    g = vz.joint_graph(model, x)
    assert g.nodes
    assert_unchanged(model, before)
    assert_same_random(randoms)
    assert all(p.grad is None for p in model.parameters())


class Broken(nn.Module):
    """Runs a BatchNorm in training and draws a random number, then fails."""

    def __init__(self):
        super().__init__()
        self.inner = bn_model()

    def forward(self, x):
        random.random()
        self.inner(x)
        raise KeyError("learner bug")


@pytest.mark.parametrize("entry", ["graph", "compiled_graphs", "joint_graph"])
def test_state_is_put_back_when_the_function_raises(entry):
    model, x = Broken(), torch.randn(5, 3)
    before, randoms = state_of(model), random_states()
    with pytest.raises(KeyError):
        getattr(vz, entry)(model, x)
    assert_unchanged(model, before)
    assert_same_random(randoms)


def test_a_non_leaf_input_that_does_not_retain_its_grad_draws_without_a_warning():
    a = torch.randn(3, requires_grad=True)
    h = a * 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = vz.graph(lambda h: (h * h).sum(), h)
    assert g.find("SumBackward0") and a.grad is None


def test_a_weight_a_pre_hook_computes_is_the_users_own_after_a_drawing():
    """Pruning makes ``weight`` a plain attribute its forward pre-hook recomputes (weight_orig
    * weight_mask): after a drawing it is still the tensor the user's last forward made, so
    a penalty on it backpropagates without a new forward."""
    import torch.nn.utils.prune as prune

    torch.manual_seed(0)
    model, x = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 1)), torch.randn(3, 4)
    prune.l1_unstructured(model[0], "weight", amount=0.5)
    model(x)
    before = model[0].weight
    g = vz.graph(lambda x: model(x).sum(), x, params=model)
    assert g.find("0.weight_orig") and model[0].weight is before
    model[0].weight.abs().sum().backward()
    assert model[0].weight_orig.grad is not None


def test_a_drawn_step_that_runs_backward_into_existing_grads_leaves_their_values():
    """Gradient accumulation: the call's own backward adds into the ``.grad`` the user's last
    backward left, in place; after the drawing they hold what they held, as the same tensors."""
    torch.manual_seed(0)
    model, x = nn.Linear(4, 2), torch.randn(8, 4)
    model(x).square().mean().backward()
    grads = [(p.grad, p.grad.clone()) for p in model.parameters()]

    def accumulate(x: torch.Tensor) -> torch.Tensor:
        model(x).square().mean().backward()
        return model(x).square().mean()

    vz.graph(accumulate, x, params=model)
    for p, (grad, values) in zip(model.parameters(), grads, strict=True):
        assert p.grad is grad and torch.equal(p.grad, values)


def test_graph_puts_back_a_tensor_moved_by_data_then_changed_in_place_where_it_moved():
    W = torch.tensor([1.0, 2.0, 3.0])
    memory = W.data_ptr()

    def step(x):
        W.data = W.data * 2  # moved to memory of the call's
        with torch.no_grad():
            W.mul_(3)  # then changed there: those values are not the user's
        return (W * x).sum()

    vz.graph(step, torch.ones(3))
    assert W.tolist() == [1.0, 2.0, 3.0] and W.data_ptr() == memory and W._version == 0


def test_graph_puts_back_tensors_moved_by_set_which_no_function_mode_sees():
    W = torch.tensor([1.0, 2.0, 3.0])  # reached through the closure
    other = torch.arange(6.0)  # the call moves W onto it, then writes through W
    lin = nn.Linear(3, 2)  # a parameter moved under no_grad
    weight, memory, version = lin.weight.detach().clone(), lin.weight.data_ptr(), lin.weight._version

    def step(x):
        W.set_(other)
        W.add_(1)
        with torch.no_grad():
            lin.weight.set_(torch.zeros(2, 3))
        return lin(x).sum()

    vz.graph(step, torch.ones(1, 3))
    assert W.tolist() == [1.0, 2.0, 3.0] and W._version == 0
    assert other.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert lin.weight.data_ptr() == memory and torch.equal(lin.weight, weight) and lin.weight._version == version


def test_graph_puts_back_a_tensor_changed_through_its_data_then_moved():
    W = torch.tensor([1.0, 2.0, 3.0])
    memory = W.data_ptr()

    def step(x):
        W.data.mul_(2)  # in place through the alias x.data, kept as that memory
        W.data = W.data + 1  # W itself moved: put back too
        return (W * x).sum()

    vz.graph(step, torch.ones(3))
    assert W.tolist() == [1.0, 2.0, 3.0] and W.data_ptr() == memory
