"""Messages in the user's terms: options checked before anything runs, and a result with no
graph or no single number explained by what the user did, with advice that can be followed."""

from __future__ import annotations

import dataclasses
import re
from collections import OrderedDict

import numpy as np
import pytest
import torch
from torch import nn

import vizlib as vz


class Counted:
    """A function that counts its calls: an option refused before capture never runs it."""

    def __init__(self):
        self.calls = 0

    def __call__(self, x):
        self.calls += 1
        return (x * 2).sum()


BAD_OPTIONS = {
    "depth=-1": ({"depth": -1}, ValueError, "depth= must be at least 0"),
    "depth='1'": ({"depth": "1"}, TypeError, "depth= must be a whole number"),
    "depth=1.5": ({"depth": 1.5}, TypeError, "depth= must be a whole number"),
    "depth=True": ({"depth": True}, TypeError, "depth= must be a whole number"),
    "max_nodes='10'": ({"max_nodes": "10"}, TypeError, "max_nodes= must be a whole number"),
    "max_nodes=0": ({"max_nodes": 0}, ValueError, "max_nodes= must be at least 1"),
    "show_saved='yes'": ({"show_saved": "yes"}, TypeError, "show_saved= must be True or False"),
}


@pytest.mark.parametrize("options, error, message", BAD_OPTIONS.values(), ids=BAD_OPTIONS)
def test_options_are_checked_before_the_call_runs(options, error, message):
    fn = Counted()
    with pytest.raises(error, match=message) as info:
        vz.graph(fn, torch.ones(3), **options)
    assert isinstance(info.value, vz.VizlibError)
    assert fn.calls == 0, "the call ran before the option was refused"


@pytest.mark.parametrize("options, error, message", BAD_OPTIONS.values(), ids=BAD_OPTIONS)
def test_options_are_checked_for_a_tensor_and_a_compiler_graph_too(options, error, message):
    x = torch.ones(2, requires_grad=True)
    with pytest.raises(error, match=message):
        vz.graph((x * 2).sum(), **options)
    gm = torch.fx.symbolic_trace(nn.Linear(2, 2))
    if "show_saved" not in options:
        with pytest.raises(error, match=message):
            vz.graph(gm, **options)


def test_a_call_under_inference_mode_is_told_to_leave_it():
    with torch.inference_mode(), pytest.raises(vz.VizlibError, match="outside the `with torch.inference_mode"):
        vz.graph(lambda x: (x * 2).sum(), torch.ones(3))


def test_inputs_made_under_inference_mode_are_drawn_from_copies():
    with torch.inference_mode():
        x = torch.ones(3)
    g = vz.graph(lambda x: (x * 2).sum(), x)
    assert g.find("x")[0].grad == [2.0, 2.0, 2.0]


@dataclasses.dataclass
class Batch:
    x: torch.Tensor


def test_tensors_inside_a_dataclass_are_explained():
    with pytest.raises(vz.VizlibError, match="inside the Batch argument") as info:
        vz.graph(lambda b: (b.x * 2).sum(), Batch(torch.ones(3)))
    assert "Return a tensor computed from the inputs" not in str(info.value)


def test_a_numpy_array_input_is_told_to_be_a_tensor_and_the_advice_draws():
    a = np.array([1.0, 2.0])
    with pytest.raises(vz.VizlibError, match=r"NumPy array of shape \[2\].*torch.from_numpy\(a\)"):
        vz.graph(lambda x: (torch.as_tensor(x) * 2).sum(), a)
    g = vz.graph(lambda x: (torch.as_tensor(x) * 2).sum(), torch.from_numpy(a))  # the advice, followed
    assert g.find("x")[0].grad == [2.0, 2.0]


def test_integer_inputs_are_told_to_be_floats():
    with pytest.raises(vz.VizlibError, match=r"integers.*Pass floats: 2.0 rather than 2"):
        vz.graph(lambda a, b: a * b, 2, 3)
    with pytest.raises(vz.VizlibError, match="integers"):
        vz.graph(lambda a: (a * 2).sum(), torch.tensor([1, 2]))


def test_an_integer_result_is_told_it_has_no_gradient_whatever_it_came_from():
    with pytest.raises(vz.VizlibError, match=r"returned int64 tensors only.*x.max\(\) rather than x.argmax\(\)"):
        vz.graph(lambda x: x.argmax(), torch.randn(3))
    with pytest.raises(vz.VizlibError, match="returned bool tensors only"):
        vz.graph(lambda x: x > 0, torch.randn(3))
    with pytest.raises(vz.VizlibError, match="does not depend on any tensor requiring grad") as info:
        vz.graph(lambda x: (x > 0, x.detach()), torch.randn(3))  # a float beside it: detached, not integer
    assert "tensors only" not in str(info.value)


class TinyLM(nn.Module):
    """A language model's shape: token ids in, logits out."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.embed, self.head = nn.Embedding(10, 4), nn.Linear(4, 10)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.embed(ids))


def generate(lm: TinyLM, ids: torch.Tensor) -> torch.Tensor:
    """Greedy decoding, as ``model.generate`` does it: under no_grad, token ids out."""
    with torch.no_grad():
        return torch.cat([ids, lm(ids)[:, -1:].argmax(-1)], dim=1)


def test_a_model_on_token_ids_is_told_why_it_has_no_graph_not_to_pass_floats():
    """Token ids are integers, but a model's parameters are its leaves: the reason is what
    the call did with them (generated ids, a frozen model, a forward under no_grad), and
    floats would break its embedding."""
    lm, ids = TinyLM(), torch.tensor([[1, 2, 3]])
    frozen = TinyLM().requires_grad_(False)

    def under_no_grad(ids: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return lm(ids).sum()

    cases = {
        "generated ids": (lambda ids: generate(lm, ids), r"returned int64 tensors only \(token ids"),
        "a frozen model": (lambda ids: frozen(ids).sum(), r"Every parameter .* is frozen .*requires_grad_\(True\)"),
        "no_grad inside": (under_no_grad, r"torch.no_grad\(\) \(model.generate\(\) runs so\)"),
    }
    for case, (fn, message) in cases.items():
        with pytest.raises(vz.VizlibError, match=message) as info:
            vz.graph(fn, ids)
        assert "Pass floats" not in str(info.value), case


def test_a_models_output_drawn_after_the_fact_is_told_where_its_number_is():
    """A model's output object (a dict of its loss and logits, as Hugging Face's) is no tensor:
    the message names the number in it, and what it suggests draws."""
    lm, ids = TinyLM(), torch.tensor([[1, 2, 3]])
    logits = lm(ids)
    out = {"logits": logits, "loss": logits.logsumexp(-1).mean()}
    with pytest.raises(vz.VizlibError, match=r"got dict\. It holds tensors: vz.graph\(out\['loss'\]\)"):
        vz.graph(out)
    assert vz.graph(out["loss"]).find("LogsumexpBackward0")


def test_the_suggested_grad_output_for_several_results_works():
    torch.manual_seed(0)
    gru, x = nn.GRU(3, 4), torch.randn(2, 1, 3)
    with pytest.raises(vz.VizlibError, match="one tensor per result tensor") as info:
        vz.graph(gru, x)
    suggested = str(info.value).split("(grad_output=", 1)[1].split("), or", 1)[0]
    g = vz.graph(gru, x, grad_output=eval(suggested, {"torch": torch}))  # the advice, followed as written
    assert len([n for n in g.nodes if n.is_output]) == 2


class LossAndLogits(nn.Module):
    """Returns what a Hugging Face model returns given labels: its loss beside its logits."""

    def __init__(self) -> None:
        super().__init__()
        self.head = nn.Linear(3, 4)

    def forward(self, x: torch.Tensor, labels: torch.Tensor) -> dict[str, torch.Tensor]:
        logits = self.head(x)
        return {"loss": nn.functional.cross_entropy(logits, labels), "logits": logits}


def test_a_result_holding_its_loss_beside_other_tensors_names_the_loss_to_draw():
    torch.manual_seed(0)
    model, x, labels = LossAndLogits(), torch.randn(2, 3), torch.tensor([0, 3])
    with pytest.raises(vz.VizlibError, match=r"the result's \['loss'\] is one") as info:
        vz.graph(model, x, labels=labels)
    message = str(info.value)
    suggested = message.split("(grad_output=", 1)[1].split("), or", 1)[0]
    assert suggested == "[torch.ones(()), torch.ones(2, 4)]", "a 0-d result's ones are torch.ones(()), which runs"
    assert vz.graph(model, x, labels=labels, grad_output=eval(suggested, {"torch": torch})).nodes
    drawn = message.split("vz.graph(", 1)[1].split(", ...", 1)[0]
    assert drawn == "lambda *a, **kw: model(*a, **kw)['loss']"
    g = vz.graph(eval(drawn, {"model": model}), x, labels=labels, params=model)  # the advice, followed as written
    assert g.find("head.weight")[0].grad is not None


def test_a_function_returning_a_tuple_is_told_which_item_is_a_single_number():
    def step(w):
        y = w * 2
        return y, y.sum()

    with pytest.raises(vz.VizlibError, match=r"the result's \[1\] is one") as info:
        vz.graph(step, torch.ones(3))
    assert "vz.graph(lambda *a, **kw: step(*a, **kw)[1], ...)" in str(info.value)


@dataclasses.dataclass
class LossAndLogitsOutput:
    """What a research codebase's model returns: its own dataclass, which torch's pytree does
    not know and which cannot be indexed (``out[0]`` raises TypeError)."""

    logits: torch.Tensor
    loss: torch.Tensor


class OutputDict(OrderedDict):
    """A result class made from a mapping (Hugging Face's ModelOutput is one): by key, not ``[0]``."""


@pytest.mark.parametrize(
    ("wrap", "part"),
    [
        (lambda logits, loss: LossAndLogitsOutput(logits, loss), ".loss"),
        (lambda logits, loss: OutputDict(logits=logits, loss=loss), "['loss']"),
    ],
    ids=["dataclass", "mapping"],
)
def test_a_result_in_the_users_own_class_is_told_to_draw_its_loss_by_name(wrap, part):
    def forward(x):
        return wrap(x * 2, (x * 3).sum())

    with pytest.raises(vz.VizlibError, match=rf"the result's {re.escape(part)} is one") as info:
        vz.graph(forward, torch.ones(3))
    drawn = str(info.value).split("vz.graph(", 1)[1].split(", ...", 1)[0]
    assert drawn == f"lambda *a, **kw: forward(*a, **kw){part}"
    g = vz.graph(eval(drawn, {"forward": forward}), torch.ones(3))  # the advice, followed as written
    assert [n.grad for n in g.nodes if n.kind == "leaf"] == [[3.0, 3.0, 3.0]]


class Segmenter(nn.Module):
    """Returns what torchvision's segmentation models return: a dict of maps, no number."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.out, self.aux = nn.Conv2d(3, 4, 1), nn.Conv2d(3, 4, 1)

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"out": self.out(x), "aux": self.aux(x)}


def test_a_result_of_maps_by_name_is_told_to_draw_the_sum_of_one_and_the_advice_draws():
    model, x = Segmenter(), torch.randn(1, 3, 4, 4)
    with pytest.raises(vz.VizlibError, match=r"the sum of the result's \['out'\] is one") as info:
        vz.graph(model, x)
    drawn = str(info.value).split("vz.graph(", 1)[1].split(", ...", 1)[0]
    assert drawn == "lambda *a, **kw: model(*a, **kw)['out'].sum()"
    g = vz.graph(eval(drawn, {"model": model}), x, params=model)  # the advice, followed as written
    assert g.find("out.weight")[0].grad is not None


def test_a_training_step_returning_the_loss_it_backpropagated_is_told_to_draw_its_loss_alone():
    torch.manual_seed(0)
    model, x = nn.Linear(4, 2), torch.randn(8, 4)

    def train_step(x: torch.Tensor) -> torch.Tensor:
        loss = model(x).square().mean()
        loss.backward()
        return loss

    with pytest.raises(vz.VizlibError, match=r"freed by an earlier backward\(\) inside the call") as info:
        vz.graph(train_step, x, params=model)
    assert "show_saved" not in str(info.value) and "forward and loss alone" in str(info.value)


def test_the_suggested_grad_output_for_one_result_works():
    with pytest.raises(vz.VizlibError, match="grad_output=") as info:
        vz.graph(lambda x: x * 2, torch.ones(2, 3))
    suggested = str(info.value).split("(e.g. grad_output=", 1)[1].split("), or", 1)[0]
    assert vz.graph(lambda x: x * 2, torch.ones(2, 3), grad_output=eval(suggested, {"torch": torch})).nodes


def test_explore_of_a_non_scalar_function_does_not_suggest_grad_output():
    with pytest.raises(vz.VizlibError, match=r"returns a single number.*\.sum\(\)") as info:
        vz.explore(lambda x: torch.stack([torch.tensor(x), torch.tensor(x) * 2]) * x, x=1.0)
    assert "grad_output" not in str(info.value)
