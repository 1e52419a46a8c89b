"""What an outside user's code does that the course's never does, drawn as PyTorch runs it:
a saved tensor changed in place (refused, as torch refuses it, not drawn with wrong
gradients), hooks the caller set up or switched off, lazy modules, a default device that
is not the CPU, results in their own classes, and the errors torch would give in words
that say what vizlib has to do with them."""

from __future__ import annotations

import copy
import dataclasses
import re
import subprocess
import sys
import types
import warnings
from collections import OrderedDict

import pytest
import torch
from torch import nn
from torch.nn.attention.flex_attention import flex_attention
from torch.utils.checkpoint import checkpoint

import vizlib as vz
from vizlib.errors import VizlibValueError


def _exp_then_changed(a: torch.Tensor) -> torch.Tensor:
    y = a.exp()
    z = y * a  # saves y (and exp saved it as its result)
    y.add_(1)
    return z.sum()


def _clone_then_changed(a: torch.Tensor) -> torch.Tensor:
    y = a.clone()
    z = y.sin()  # saves y
    y.mul_(2)
    return (z + y).sum()


class _InPlaceAfterSigmoid(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(3, 3), nn.Sigmoid(), nn.ReLU(inplace=True), nn.Linear(3, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x).sum()  # the ReLU changes the sigmoid's saved result


CHANGED_AFTER_SAVED = {
    "exp's result": (_exp_then_changed, "MulBackward0"),
    "a clone sin saved": (_clone_then_changed, "SinBackward0"),
    "a sigmoid's result under an in-place ReLU": (_InPlaceAfterSigmoid(), "SigmoidBackward0"),
}


@pytest.mark.parametrize("fn, node", CHANGED_AFTER_SAVED.values(), ids=CHANGED_AFTER_SAVED)
def test_a_saved_tensor_changed_in_place_is_refused_as_torch_refuses_it(fn, node):
    x = torch.tensor([[0.5, 1.0, 2.0]])
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        plain = x.clone().requires_grad_()
        fn(plain).backward()  # what PyTorch itself says
    with pytest.raises(VizlibValueError, match=f"saved for backward for {node} was changed in place"):
        vz.graph(fn, x)


def test_in_place_changes_autograd_allows_still_draw_with_torchs_gradients():
    def f(a: torch.Tensor) -> torch.Tensor:
        y = a * 2  # a product by a number saves nothing
        y.add_(1)
        h = torch.relu(a @ torch.ones(3, 3))  # relu saves its result, which nothing changes
        return (y * y).sum() + h.sum()

    x = torch.tensor([0.5, 1.0, 2.0])
    plain = x.clone().requires_grad_()
    f(plain).backward()
    assert vz.graph(f, x).find("a")[0].grad == pytest.approx(plain.grad.tolist())


def test_the_callers_disabled_saved_tensor_hooks_are_respected():
    with torch.autograd.graph.disable_saved_tensors_hooks("this library forbids saved-tensor hooks"):
        g = vz.graph(lambda x: (x * x).sum(), torch.tensor([1.0, 2.0]), show_saved=True)
    assert g.find("x")[0].grad == [2.0, 4.0] and g.saved_bytes == 8


def test_leaves_with_a_multi_grad_hook_draw_and_keep_their_grad():
    a, b = torch.tensor([1.0, 2.0], requires_grad=True), torch.tensor([3.0, 4.0], requires_grad=True)
    torch.autograd.graph.register_multi_grad_hook((a, b), lambda grads: None)
    g = vz.graph(lambda a, b: (a * b).sum(), a, b)
    assert g.find("a")[0].grad == [3.0, 4.0] and g.find("b")[0].grad == [1.0, 2.0]
    assert a.grad is None and b.grad is None


def test_lazy_modules_side_by_side_draw_with_the_shapes_their_first_call_gives():
    torch.manual_seed(0)
    model = nn.Sequential(nn.LazyLinear(3), nn.ReLU(), nn.LazyLinear(1))
    g = vz.graph(model, torch.ones(2, 5), grad_output=torch.ones(2, 1))
    assert g.module_specs["0"].params == (("weight", (3, 5)), ("bias", (3,)))
    assert g.module_specs["2"].params == (("weight", (1, 3)), ("bias", (1,)))
    x = torch.ones(2, 5, requires_grad=True)
    model(x).sum().backward()
    assert torch.allclose(torch.tensor(g.find("input")[0].grad), x.grad)


def test_a_default_device_other_than_the_cpu_leaves_vizlibs_own_tensors_on_the_cpu():
    with torch.device("meta"):  # torch.set_default_device for a block
        small = vz.graph(lambda a: (a * 2).sum(), torch.ones(3, device="cpu"))
        big = vz.graph(lambda a: (a * 2).sum(), torch.ones(3000, device="cpu"))
    assert small.find("a")[0].grad == [2.0, 2.0, 2.0]
    assert big.find("a")[0].grad_stats.norm == pytest.approx(2.0 * 3000**0.5)


@dataclasses.dataclass
class _Output:
    loss: torch.Tensor
    note: str = "a dataclass of the user's"


class _ModelOutput(OrderedDict):
    """Shaped like Hugging Face's ModelOutput, which torch's pytree does not know."""

    def __getattr__(self, name: str) -> object:
        return self[name]


@pytest.mark.parametrize("wrap", [_Output, lambda loss: _ModelOutput(loss=loss)], ids=["dataclass", "mapping"])
def test_a_result_in_the_users_own_class_draws_the_tensors_inside_it(wrap):
    g = vz.graph(lambda x: wrap((x**2).sum()), torch.tensor([1.0, 2.0]))
    assert g.find("x")[0].grad == [2.0, 4.0]


def test_an_in_place_change_of_a_view_of_an_input_is_refused_in_the_users_terms():
    with pytest.raises(VizlibValueError, match="changes its input x in place"):
        vz.graph(lambda x: (x[1:3].mul_(2), x.sum())[1], torch.ones(4))


def test_an_op_made_in_place_by_its_inplace_flag_leaves_the_users_tensor_as_it_was():
    """``F.relu(t, inplace=True)`` and ``nn.ReLU(inplace=True)`` reach the recorder as ``relu``
    with a flag, and torch runs ``relu_`` out of its sight: a tensor of the user's they changed
    stayed changed after the drawing, and an input vizlib copied got autograd's words about a
    leaf. Both are now seen as the in-place ops they are."""
    mask = torch.tensor([-1.0, 2.0])
    scale = torch.tensor([-3.0, 4.0])

    def f(x: torch.Tensor) -> torch.Tensor:
        nn.functional.relu(mask, inplace=True)
        nn.Hardtanh(0.0, 1.0, inplace=True)(scale)
        return (x * mask * scale).sum()

    g = vz.graph(f, torch.ones(2))
    assert g.find("x")[0].grad == [0.0, 2.0]  # drawn as it ran: with the masks clipped
    assert mask.tolist() == [-1.0, 2.0] and scale.tolist() == [-3.0, 4.0]
    assert mask._version == 0 and scale._version == 0
    with pytest.raises(VizlibValueError, match=r"changes its input x in place.*x = relu\(x\) rather than"):
        vz.graph(lambda x: nn.functional.relu(x, inplace=True).sum(), torch.ones(2))


def test_an_in_place_dropout_that_drops_nothing_is_not_refused():
    """``inplace=True`` on a dropout in eval mode (``nn.Dropout(0.1, inplace=True)`` of a model
    in eval mode) or with ``p=0`` writes nothing: torch hands the input back as it is, so the
    call runs, and vizlib drew it rather than refusing it as an in-place change of the input."""
    model = nn.Sequential(nn.Dropout(0.1, inplace=True), nn.Linear(3, 1)).eval()
    x = torch.ones(2, 3)
    g = vz.graph(model, x, grad_output=torch.ones(2, 1))
    assert g.nodes and x.tolist() == [[1.0] * 3] * 2
    g = vz.graph(lambda x: nn.functional.dropout(x, 0.0, inplace=True).sum(), torch.ones(2))
    assert g.find("x")[0].grad == [1.0, 1.0]
    with pytest.raises(VizlibValueError, match="changes its input x in place"):
        vz.graph(lambda x: nn.functional.dropout(x, 0.5, inplace=True).sum(), torch.ones(2))


class _Doubles(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        x.mul_(2)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g: torch.Tensor) -> torch.Tensor:
        return 2 * g


def test_a_custom_function_that_changes_its_input_in_place_gets_vizlibs_words():
    with pytest.raises(VizlibValueError, match=r"changes its input x in place.*x = x.clone\(\)") as info:
        vz.graph(lambda x: _Doubles.apply(x).sum(), torch.tensor([1.0, 2.0]))
    assert "leaf Variable" in str(info.value.__cause__)  # torch's own words are kept, as the cause
    assert vz.graph(lambda x: _Doubles.apply(x.clone()).sum(), torch.tensor([1.0, 2.0])).find("x")[0].grad == [2, 2]


def test_the_users_own_leaf_changed_in_place_keeps_torchs_error():
    lin = nn.Linear(4, 1)

    def f(x: torch.Tensor) -> torch.Tensor:
        lin.weight.add_(1)  # the learner's slip (no torch.no_grad()): plain PyTorch refuses it too
        return lin(x).sum()

    with pytest.raises(RuntimeError, match="leaf Variable that requires grad") as info:
        vz.graph(f, torch.randn(3, 4))
    assert not isinstance(info.value, vz.VizlibError)


def test_a_model_made_under_inference_mode_gets_the_way_out():
    with torch.inference_mode():
        model = nn.Linear(3, 1)
    with pytest.raises(VizlibValueError, match=r"inference_mode\(\)") as info:
        vz.graph(model, torch.ones(2, 3), grad_output=torch.ones(2, 1))
    advice = str(info.value)
    model.load_state_dict({k: v.clone() for k, v in model.state_dict().items()}, assign=True)  # what it says
    assert "load_state_dict" in advice and vz.graph(model, torch.ones(2, 3), grad_output=torch.ones(2, 1))


def test_an_input_whose_own_graph_was_freed_before_the_call_is_named():
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    h = (w * w).exp()
    h.sum().backward()  # frees what exp and mul saved
    with pytest.raises(VizlibValueError, match="in the graph that made one of the inputs"):
        vz.graph(lambda h: (h * 2).sum(), h)
    assert vz.graph(lambda h: (h * 2).sum(), h.detach()).find("h")[0].grad == [2.0, 2.0]  # the way out it gives


def _lossy_pack(t: torch.Tensor) -> torch.Tensor:
    return t.to(torch.float16)


def _lossy_unpack(t: torch.Tensor) -> torch.Tensor:
    return t.to(torch.float32)


def test_the_callers_own_saved_tensor_hooks_around_the_call_still_run():
    """vizlib's hooks would hide the caller's: theirs run inside vizlib's, and the gradient
    is the one torch gives under the same hooks (here lossy ones, to tell them apart)."""
    x = torch.tensor([0.1234567, 1.7654321, 2.333333])

    def f(a: torch.Tensor) -> torch.Tensor:
        return (a.sin() * a).sum()

    packed = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or _lossy_pack(t), _lossy_unpack):
        g = vz.graph(f, x)
        plain = x.clone().requires_grad_()
        f(plain).backward()
    assert len(packed) == 2 * 3  # sin and the product save 3 tensors; drawing and the plain run each
    assert g.find("a")[0].grad == plain.grad.tolist()
    exact = x.clone().requires_grad_()
    f(exact).backward()
    assert g.find("a")[0].grad != exact.grad.tolist()  # the hooks made a difference, and it was kept


def test_a_recording_inside_a_recorded_call_keeps_its_tensors_to_itself():
    def f(x: torch.Tensor) -> torch.Tensor:
        inner.append(vz.graph(lambda z: (z * z * z).sum(), x.detach(), show_saved=True))
        return (x * x).sum()

    inner: list = []
    outer = vz.graph(f, torch.tensor([1.0, 2.0]), show_saved=True)
    assert outer.saved_bytes == 8 and inner[0].saved_bytes == 16


def test_complex_tensors_get_the_norms_of_their_values_and_gradients():
    torch.manual_seed(0)
    x = torch.randn(3, dtype=torch.complex64)

    def f(w: torch.Tensor) -> torch.Tensor:
        return (w * x).abs().sum()

    w = torch.randn(3, dtype=torch.complex64)
    leaf = vz.graph(f, w).find("w")[0]
    plain = w.clone().requires_grad_()
    f(plain).backward()
    assert leaf.value_stats.norm == pytest.approx(w.abs().norm().item(), rel=1e-6)
    assert leaf.grad_stats.norm == pytest.approx(plain.grad.abs().norm().item(), rel=1e-6)
    assert "w: shape [3], norm" in repr(vz.graph(f, w))


def test_post_accumulate_grad_hooks_do_not_run_in_vizlibs_backward():
    """An optimizer in backward (a hook that steps and clears ``.grad``) runs on the user's
    backward, not on vizlib's: not through ``autograd.grad``, nor through the ``backward()``
    a multi-grad hook or a reentrant checkpoint needs."""
    model = nn.Linear(2, 1)
    ran = []

    def step_in_backward(p: torch.Tensor) -> None:
        ran.append(p)
        with torch.no_grad():
            p.add_(p.grad, alpha=-0.1)
        p.grad = None

    for p in model.parameters():
        p.register_post_accumulate_grad_hook(step_in_backward)
    weights = [p.detach().clone() for p in model.parameters()]
    x = torch.ones(3, 2, requires_grad=True)
    torch.autograd.graph.register_multi_grad_hook([x, model.weight], lambda grads: None)
    g = vz.graph(lambda x: model(x).sum(), x, params=model)
    vz.graph(lambda x: checkpoint(model, x, use_reentrant=True).sum(), torch.ones(3, 2), params=model)
    assert not ran and all(torch.equal(p, w) for p, w in zip(model.parameters(), weights, strict=True))
    assert g.find("weight")[0].grad == [[3.0, 3.0]]
    model(x).sum().backward()
    assert len(ran) == 2  # the hooks are still there for the user's own backward


def test_a_tensor_subclass_that_runs_ops_itself_draws_without_numbers():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (MaskedTensor is a prototype: PyTorch says so)
        masked = torch.masked.masked_tensor(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([True, False, True]))
        g = vz.graph(lambda m: (m * 2).sum(), masked.requires_grad_())
    leaf = g.find("m")[0]
    assert leaf.shape == (3,) and leaf.value is None and leaf.value_stats is None and g.backward_order


def test_a_subclass_overriding_torch_function_does_not_see_vizlibs_reads():
    seen = []

    class Logged(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            seen.append(getattr(func, "__name__", str(func)))
            return super().__torch_function__(func, types, args, kwargs or {})

    x = torch.tensor([1.0, 2.0]).as_subclass(Logged)
    g = vz.graph(lambda a: (a * 3).sum(), x)
    assert g.find("a")[0].grad == [3.0, 3.0] and g.find("a")[0].value == [1.0, 2.0]
    assert not {"segment_reduce", "cat", "stack", "tolist"} & set(seen)  # vizlib's own statistics


_COND = """
import torch, vizlib as vz
f = lambda x: torch.cond(x.sum() > 0, lambda x: x.sin(), lambda x: x.cos(), (x,)).sum()
g = vz.graph(f, torch.tensor([0.5, 1.0]))
print([round(v, 6) for v in g.find("x")[0].grad], [n.name for n in g.nodes if n.kind == "op"])
"""


def test_torch_cond_run_eagerly_draws_as_one_node():
    """torch.cond traces its branches, under vizlib's function mode and saved-tensor hooks.
    In a process of its own, which has not imported torch._dynamo before the call: where it
    has, vizlib runs the call under ``torch.compiler.set_stance("force_eager")`` (for the
    compiled modules it may meet), and PyTorch 2.13's cond fails under that stance by itself
    (``TypeError: object of type 'bool' has no len()`` in its backward)."""
    ran = subprocess.run([sys.executable, "-c", _COND], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stdout.strip() == "[0.877583, 0.540302] ['CondAutogradOpBackward', 'SumBackward0']"  # cos(x)


@pytest.mark.parametrize(
    "fn, message",
    [
        (lambda: _generator, "is a generator function"),
        (lambda: _coroutine, "is an async function"),
    ],
    ids=["generator", "async"],
)
def test_a_generator_or_async_function_is_told_what_it_returned(fn, message):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "coroutine was never awaited" after vizlib's words
        with pytest.raises(VizlibValueError, match=message):
            vz.graph(fn(), torch.ones(2))


def _generator(x: torch.Tensor):
    yield (x * 2).sum()


async def _coroutine(x: torch.Tensor) -> torch.Tensor:
    return (x * 2).sum()


def test_a_view_of_an_input_may_be_asked_to_require_grad():
    g = vz.graph(lambda x: (x.view(-1).requires_grad_(), x.requires_grad_(), (x * 2).sum())[-1], torch.ones(2, 2))
    assert g.find("x")[0].grad == [[2.0, 2.0], [2.0, 2.0]]


def test_unpack_hooks_that_use_up_what_they_packed_run_once_each():
    """A hook that keeps a saved tensor on disk deletes it once read, as autograd reads each
    saved tensor once in a backward: drawing must not read it again (to name it)."""
    store: dict[int, torch.Tensor] = {}

    def pack(t: torch.Tensor) -> int:
        store[len(store)] = t.clone()
        return len(store) - 1

    def unpack(key: int) -> torch.Tensor:
        return store.pop(key)  # a second read raises KeyError

    model = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 1))
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        g = vz.graph(lambda x: model(x).sum(), torch.ones(3, 4), params=model)
    assert g.find("0.weight")[0].grad_stats is not None and not store


def test_a_call_under_save_on_cpu_draws_torchs_gradients_and_saved_bytes():
    model = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 1))
    x = torch.ones(3, 4)
    plain = vz.graph(lambda x: model(x).sum(), x, params=model, show_saved=True)
    with torch.autograd.graph.save_on_cpu():
        g = vz.graph(lambda x: model(x).sum(), x, params=model, show_saved=True)
    assert g.find("0.weight")[0].grad_stats.norm == plain.find("0.weight")[0].grad_stats.norm
    assert g.saved_bytes == plain.saved_bytes > 0


@pytest.mark.skipif(
    not hasattr(torch._C._autograd.SavedTensor, "unpack_hook"),
    reason="this PyTorch's saved tensors do not name their unpack hook (2.11's and 2.13's do)",
)
@pytest.mark.parametrize("hooks", ["save_on_cpu", "saved_tensors_hooks"])
def test_saved_tensor_hooks_inside_the_function_are_said_not_to_be_counted(hooks):
    """The function's own hooks, inside it, hide what autograd saves from vizlib's pack hook:
    the picture read 0 B saved without a word. It says so now, and the gradients are torch's."""
    model = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 1))
    x = torch.ones(3, 4)
    plain = vz.graph(lambda x: model(x).sum(), x, params=model, show_saved=True)
    assert not any("saved-tensor hooks" in note for note in plain.notes)

    def hidden(x):
        inner = (
            torch.autograd.graph.save_on_cpu()
            if hooks == "save_on_cpu"
            else torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t)
        )
        with inner:
            return model(x).sum()

    g = vz.graph(hidden, x, params=model, show_saved=True)
    assert any("function's own saved-tensor hooks" in note and "not counted" in note for note in g.notes), g.notes
    assert g.find("0.weight")[0].grad_stats.norm == plain.find("0.weight")[0].grad_stats.norm


def test_a_checkpointed_block_gets_no_note_of_hidden_saved_tensors():
    model = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 1))
    g = vz.graph(lambda x: checkpoint(model, x, use_reentrant=False).sum(), torch.ones(3, 4))
    assert not any("saved-tensor hooks" in note for note in g.notes)


_DTENSOR = """
import sys, tempfile, torch, torch.distributed as dist, vizlib as vz
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Shard
dist.init_process_group("gloo", init_method="file://" + tempfile.mktemp(), rank=0, world_size=1)
mesh = init_device_mesh("cpu", (1,))
g = vz.graph(lambda x: (DTensor.from_local(x, mesh, [Shard(0)]) * 2).sum().full_tensor(), torch.ones(2, 3))
print(g.find("x")[0].grad)
dist.destroy_process_group()
"""


def test_a_generator_of_tensors_as_input_is_told_to_be_a_list():
    """vizlib cannot make a generator's tensors require grad without running through it first."""
    items = (torch.ones(2) * k for k in range(3))
    with pytest.raises(VizlibValueError, match=re.escape("cannot look into the generator argument")) as err:
        vz.graph(lambda xs: sum(x.sin().sum() for x in xs), items)
    assert "vz.graph(f, list(items))" in str(err.value)
    g = vz.graph(lambda xs: sum(x.sin().sum() for x in xs), [torch.ones(2) * k for k in range(3)])
    assert [n.name for n in g.nodes if n.kind == "leaf"] == ["xs[0]", "xs[1]", "xs[2]"]


def test_a_dtensor_draws_without_its_numbers():
    """A DTensor runs its ops itself (``__torch_dispatch__``), on one process of a gloo group
    here (a process of its own: the group is global)."""
    ran = subprocess.run([sys.executable, "-c", _DTENSOR], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stdout.strip() == "[[2.0, 2.0, 2.0], [2.0, 2.0, 2.0]]"


class _FeatureEncoder(nn.Module):
    """As Hugging Face's Wav2Vec2 feature encoder: in training mode it makes its input's
    features require grad itself."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv1d(1, 2, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x[:, None]
        if self.training:
            h.requires_grad = True
        return self.conv(h)


def test_a_call_that_makes_its_inputs_features_require_grad_is_told_to_pass_it_through_a_closure():
    """vizlib's copy of the input requires grad, so the features are no leaf and torch refuses
    the flag: the message names the way out, which draws."""
    encoder, x = _FeatureEncoder(), torch.randn(2, 16)
    with pytest.raises(VizlibValueError, match=r"sets requires_grad .* copy of x .*vz.graph\(lambda: model\(x\)"):
        vz.graph(lambda x: encoder(x).sum(), x)
    g = vz.graph(lambda: encoder(x).sum(), params=encoder)
    assert g.find("conv.weight") and not x.requires_grad


class _Attend(nn.Module):
    """flex_attention over the inputs as they are, then a projection: a model whose weights come
    after the attention, so that only the inputs could make flex_attention's require grad."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.out = nn.Linear(8, 8)

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        with warnings.catch_warnings():  # (torch's: eager flex_attention is unfused)
            warnings.simplefilter("ignore")
            return self.out(flex_attention(q, k, v))


def test_flex_attention_on_the_cpu_is_told_that_vizlibs_copies_require_grad():
    """Eager flex_attention on the CPU refuses inputs that require grad, and vizlib's copies of
    q, k and v do (the user's do not): the message says so and names the way out, which draws
    the gradients of the weights after the attention."""
    attend, (q, k, v) = _Attend(), torch.randn(3, 1, 2, 4, 8).unbind(0)
    with pytest.raises(VizlibValueError, match=r"flex_attention .* copies of q, k and v .*vz.graph\(lambda: "):
        vz.graph(lambda q, k, v: attend(q, k, v).sum(), q, k, v)
    g = vz.graph(lambda: attend(q, k, v).sum(), params=attend)
    assert g.find("out.weight") and not q.requires_grad


class _Layer:
    """One layer of a key/value cache, as Hugging Face's ``DynamicLayer``: each step's keys
    are concatenated to those before them, a new tensor each time."""

    def __init__(self) -> None:
        self.keys: torch.Tensor | None = None

    def update(self, k: torch.Tensor) -> torch.Tensor:
        self.keys = k if self.keys is None else torch.cat([self.keys, k])
        return self.keys


class _Cache:
    """As ``DynamicCache``: a layer is appended the first time its index is updated."""

    def __init__(self) -> None:
        self.layers: list[_Layer] = []

    def update(self, k: torch.Tensor, index: int) -> torch.Tensor:
        while len(self.layers) <= index:
            self.layers.append(_Layer())
        return self.layers[index].update(k)


def test_a_cache_the_call_grows_is_given_back_as_it_was_and_the_step_draws_again():
    """A decoding step appends to a cache it closes over: drawing it leaves the cache as it was
    (no layer added, the same keys, no tensor of vizlib's graph in it), so the same cell
    draws again; a list the user names keeps what the call puts in it."""
    torch.manual_seed(0)
    proj, cache, stash = nn.Linear(4, 4), _Cache(), []
    cache.update(torch.randn(3, 4), 0)
    before = (list(cache.layers), cache.layers[0].keys)

    def step(x: torch.Tensor) -> torch.Tensor:
        keys = cache.update(proj(x), 0)
        cache.update(proj(x), 1)
        stash.append(keys.shape[0])
        return keys.sum()

    for _ in range(2):
        g = vz.graph(step, torch.randn(1, 4))
        assert g.find("CatBackward0")
        layers, keys = before
        assert cache.layers == layers and cache.layers[0].keys is keys
        assert not cache.layers[0].keys.requires_grad
    assert stash == [4, 4]


class _WithScriptedBlock(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.lin = nn.Linear(3, 3)
        self.block = torch.jit.script(nn.Sequential(nn.Linear(3, 3), nn.ReLU()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.block(self.lin(x))


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch.jit's own, on 2.13
def test_torchscript_modules_draw_and_are_given_back():
    """TorchScript modules keep their parameters in a mapping of their own (no ``.get``): a
    scripted block inside a model, a scripted model and a traced one draw."""
    x = torch.randn(2, 3)
    models = {
        "scripted block": _WithScriptedBlock(),
        "scripted model": torch.jit.script(nn.Sequential(nn.Linear(3, 1))),
        "traced model": torch.jit.trace(nn.Linear(3, 1), x),
    }
    for case, model in models.items():
        before = {k: v.clone() for k, v in model.state_dict().items()}
        g = vz.graph(lambda x, model=model: model(x).sum(), x, params=model)
        leaves = {n.name for n in g.nodes if n.kind == "leaf"}
        assert {name for name, _ in model.named_parameters()} <= leaves, (case, leaves)
        assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items()), case
        assert all(p.grad is None for p in model.parameters()), case


def _scaled(x: torch.Tensor, w: torch.Tensor, scale: float = 2.0) -> torch.Tensor:
    return (x * w * scale).sum()


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch.jit's own, on 2.13
def test_torchscript_functions_name_their_inputs_by_their_schema():
    """A scripted or traced function has no Python signature: its inputs are named as its
    schema names them, as a Python function's are, not ``arg0``."""
    x, w = torch.ones(3), torch.full((3,), 0.5)
    for case, fn in {
        "scripted": torch.jit.script(_scaled),
        "traced": torch.jit.trace(_scaled, (x, w)),
    }.items():
        g = vz.graph(fn, x, w)
        leaves = {n.name: n for n in g.nodes if n.kind == "leaf"}
        assert set(leaves) == {"x", "w"}, (case, set(leaves))
        assert leaves["x"].grad == [1.0, 1.0, 1.0] and leaves["w"].grad == [2.0, 2.0, 2.0], case
    assert {n.name for n in vz.graph(torch.jit.script(_scaled), x, w=w).nodes if n.kind == "leaf"} == {"x", "w"}


def test_a_recorded_amp_step_leaves_the_grad_scaler_as_it_was():
    """GradScaler's update changes its scale and growth tracker in place, by ops of its own
    (``torch._amp_update_scale_``): a drawn step with ``scaler.update()`` gives them back."""
    torch.manual_seed(0)
    model, x, y = nn.Linear(4, 3), torch.randn(8, 4), torch.randint(0, 3, (8,))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=2048.0, growth_interval=1)

    def step(x: torch.Tensor) -> torch.Tensor:
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = nn.functional.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return nn.functional.cross_entropy(model(x), y)

    step(x)
    before = (scaler.get_scale(), scaler._growth_tracker.item(), model.weight.detach().clone())
    vz.graph(step, x, params=model)
    assert (scaler.get_scale(), scaler._growth_tracker.item()) == before[:2] == (4096.0, 0)
    assert torch.equal(model.weight, before[2])


class _Reader:
    """An object holding an iterator and its own count of what it read: put back, the count
    would be out of step with the iterator, which cannot be."""

    def __init__(self) -> None:
        self._it = iter(range(100))
        self.seen = 0
        self.log: list[int] = []

    def next(self) -> int:
        self.seen += 1
        value = next(self._it)
        self.log.append(value)
        return value


class _Config:
    """A config whose unknown attributes raise KeyError, not AttributeError."""

    def __init__(self) -> None:
        self._d = {"scale": 2.0}

    def __getattr__(self, name: str) -> object:
        return self.__dict__["_d"][name]


def test_what_the_guard_leaves_as_the_call_left_it():
    """Only what concerns tensors is put back: a plain number the call changes alone stays
    changed (a counter another thread may advance meanwhile), an object tied to an iterator
    stays in step with it, a stash a callback fills is the user's, and an object answering
    unknown names with a KeyError is read without asking it for them."""
    w, x = torch.randn(3, requires_grad=True), torch.randn(3)
    progress, reader, config, stash = types.SimpleNamespace(step=0), _Reader(), _Config(), []
    probe = types.SimpleNamespace(keep=stash.append)

    def step(x: torch.Tensor) -> torch.Tensor:
        progress.step += 1
        y = x * w * reader.next() * config.scale
        probe.keep(y.shape)
        return y.sum()

    vz.graph(step, x)
    assert progress.step == 1 and stash == [torch.Size([3])]
    assert (reader.seen, reader.log, reader.next()) == (1, [0, 1], 1)


_DIRTY_VIEW = """
import torch, vizlib as vz

class InPlaceDouble(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g * 2

def f(y):
    z = y * 1
    return InPlaceDouble.apply(z[:2]).sum() + z.sum()

print(vz.graph(f, torch.tensor([1.0, 2.0, 3.0, 4.0])).find("y")[0].grad)
"""


def test_a_custom_function_that_marks_a_view_dirty_draws():
    """Torch sets ``_backward_hooks`` on what a Function marked dirty, inside ``apply``, while
    it holds the view's lock: the function mode read that view's ``grad_fn`` there and waited
    for good. In a process of its own, which a hang cannot stop the suite with."""
    ran = subprocess.run([sys.executable, "-c", _DIRTY_VIEW], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stdout.strip() == "[4.0, 4.0, 1.0, 1.0]"


def test_a_padding_row_zeroed_under_no_grad_draws_and_is_given_back():
    """``emb.weight[0].fill_(0)`` under no_grad, ``nn.init.orthogonal_``: a view made under
    no_grad, whose base then changed in place, of which torch refuses to give the
    ``grad_fn`` (vizlib asked, and failed where PyTorch alone runs the call)."""
    torch.manual_seed(0)
    emb, ids = nn.Embedding(5, 3), torch.tensor([0, 1, 2])
    before = emb.weight.detach().clone()

    def zero_padding(ids: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            emb.weight[0].fill_(0.0)
        return emb(ids).sum()

    for f in (zero_padding, lambda ids: (nn.init.orthogonal_(emb.weight), emb(ids).sum())[1]):
        g = vz.graph(f, ids)
        assert g.find("weight") and torch.equal(emb.weight, before)


@pytest.mark.parametrize(
    "init",
    [
        lambda net: nn.init.normal_(net.weight),
        lambda net: nn.init.kaiming_uniform_(net.weight, a=5**0.5),
        lambda net: nn.init.trunc_normal_(net.weight),
        lambda net: net.reset_parameters(),
    ],
)
def test_weights_initialised_anew_inside_the_call_are_given_back(init):
    """``nn.init``'s functions hand torch their tensor by keyword (``tensor=w``): the in-place
    change was not seen as one, and the user's weights stayed re-initialised."""
    torch.manual_seed(0)
    net, x = nn.Linear(3, 2), torch.randn(4, 3)
    before = [p.detach().clone() for p in net.parameters()]
    vz.graph(lambda x: (init(net), net(x).sum())[1], x)
    assert all(torch.equal(p, b) for p, b in zip(net.parameters(), before, strict=True))


class _Exp(torch.autograd.Function):
    @staticmethod
    def forward(ctx: object, x: torch.Tensor) -> torch.Tensor:
        return x.exp()

    @staticmethod
    def backward(ctx: object, g: torch.Tensor) -> torch.Tensor:
        return g


class _MadeOutOfSight(nn.Module):
    """Hands its head what a custom Function, and a reentrant checkpoint, made."""

    def __init__(self) -> None:
        super().__init__()
        self.block, self.head = nn.Sequential(nn.Linear(4, 4), nn.Tanh()), nn.Linear(4, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(_Exp.apply(checkpoint(self.block, x, use_reentrant=True))).sum()


def test_what_a_module_makes_out_of_the_modes_sight_is_its_own_not_its_heads():
    """A custom Function's output, a reentrant checkpoint's, are recorded when first used:
    they went into the box of the module they were handed to, and with it the whole block."""
    torch.manual_seed(0)
    g = vz.graph(_MadeOutOfSight(), torch.randn(8, 4), depth=1)
    assert [n.name for n in g.nodes if n.kind != "leaf"] == [
        "CheckpointFunctionBackward",
        "_ExpBackward",
        "head",
        "SumBackward0",
    ]


def test_a_nan_hunted_with_anomaly_detection_is_drawn_not_raised():
    """Under ``detect_anomaly()``, the NaN a masked ``log(0)`` gives in backward raised torch's
    error out of vizlib's own backward; the picture that shows where it arises is drawn."""
    x = torch.tensor([0.0, 1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (anomaly mode warns that it is on)
        with torch.autograd.detect_anomaly():
            g = vz.graph(lambda x: torch.where(x > 0, x.log(), torch.zeros_like(x)).sum(), x)
            assert torch.is_anomaly_enabled()
    assert [n.name for n in g.nodes if n.nonfinite] == ["x", "LogBackward0"]


def test_what_a_modules_own_forward_hook_computes_is_in_its_box():
    """A forward hook is part of calling the module, as a pre-hook is: its ``o * 2`` goes in the
    module's box, whose output is the hook's, and vizlib's own hook is gone after."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    net[0].register_forward_hook(lambda m, i, o: o * 2)
    x = torch.randn(5, 3)
    g = vz.graph(lambda x: net(x).sum(), x, max_nodes=None)
    assert {n.name: n.module for n in g.nodes if n.name == "MulBackward0"} == {"MulBackward0": "0"}
    box = vz.graph(lambda x: net(x).sum(), x, depth=1).find("0")[0]
    assert box.value_stats.mean == pytest.approx((net[0](x)).mean().item(), rel=1e-5)
    assert len(net[0]._forward_hooks) == 1 and not net[0]._forward_hooks_always_called


class _CallsItself(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(2, 2)

    def forward(self, x: torch.Tensor, depth: int = 2) -> torch.Tensor:
        y = self.lin(x)
        return y if depth == 0 else torch.relu(self(y, depth - 1))


def test_a_module_that_calls_itself_keeps_each_hooks_work_in_its_own_calls_box():
    """vizlib's hook after a module's own hooks ran for every call of the module: the inner
    call's end left the outer call, and the outer hook's ``o * 3`` fell outside every box."""
    torch.manual_seed(0)
    model = _CallsItself()
    model.register_forward_hook(lambda m, a, o: o * 3)
    g = vz.graph(lambda x: (model(x) + 1).sum(), torch.randn(2), max_nodes=None)
    calls = ("_CallsItself", "_CallsItself (call 2)", "_CallsItself (call 3)")
    assert [n.modules for n in g.nodes if n.name == "MulBackward0"] == [calls, calls[:2], calls[:1]]
    assert len(model._forward_hooks) == 1


def test_a_draw_stopped_by_a_keyboard_interrupt_leaves_no_hook_on_the_users_module():
    """torch runs always-called hooks after an Exception, not a KeyboardInterrupt (Jupyter's
    stop button): vizlib's hook stayed on the module, and ``copy.deepcopy(model)`` failed."""

    class Stopped(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            raise KeyboardInterrupt

    model = Stopped()
    model.register_forward_hook(lambda m, a, o: o)
    with pytest.raises(KeyboardInterrupt):
        vz.graph(lambda x: model(x).sum(), torch.randn(2))
    assert len(model._forward_hooks) == 1 and not model._forward_hooks_always_called
    copy.deepcopy(model)


def _quantized(values: list[float]) -> torch.Tensor:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (PyTorch deprecates the quantized dtypes)
        return torch.quantize_per_tensor(torch.tensor(values), 0.5, 0, torch.quint8)


def test_a_quantized_tensor_among_the_inputs_is_drawn_and_refused_in_words():
    """Putting the user's tensors back asked torch where a quantized one lay (``is_set_to``),
    which has no quantized kernel: a NotImplementedError from deep inside vizlib, for a
    drawing that works and for one that should say what to pass."""
    q = _quantized([1.0, 2.0])
    g = vz.graph(lambda x, q: (x * q.dequantize()).sum(), torch.ones(2), q)
    assert g.find("x")[0].grad == [1.0, 2.0]
    assert q.int_repr().tolist() == [2, 4] and q._version == 0
    with pytest.raises(VizlibValueError, match=r"quint8 tensor\) are integers.*q\.dequantize\(\)"):
        vz.graph(lambda q: q.dequantize().sum(), q)
