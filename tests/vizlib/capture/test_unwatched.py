"""Modules a folded picture cannot open run with the function mode off (capture/unwatched.py).

What the mode would have noted of their ops comes from autograd's numbering of the nodes
instead; test_drawn.py holds every picture equal, number for number and byte for byte, to
the one every op watched would give. These tests hold the rest of the contract: fewer
torch calls seen, nothing of the user's changed, errors and threads, memory.
"""

from __future__ import annotations

import threading

import pytest
import torch
import torch.utils.checkpoint
from torch import nn

import vizlib as vz
from coursekit.models import GPTConfig, make_gpt
from vizlib.capture.record import ForwardRecorder
from vizlib.errors import VizlibValueError

from .test_drawn import assert_same_picture


def tiny_gpt(n_layer: int = 6):
    return make_gpt(GPTConfig(n_layer=n_layer, n_embd=16, n_head=2, block_size=8, vocab=32), batch=2)


def calls_seen(fn, monkeypatch) -> int:
    """How many torch calls the recorder's function mode saw while ``fn`` ran."""
    seen = [0]
    original = ForwardRecorder.__torch_function__

    def counted(self, *args, **kwargs):
        seen[0] += 1
        return original(self, *args, **kwargs)

    monkeypatch.setattr(ForwardRecorder, "__torch_function__", counted)
    fn()
    monkeypatch.undo()
    return seen[0]


def test_a_folded_gpt_is_recorded_seeing_a_fraction_of_its_torch_calls(monkeypatch):
    """Once ``blocks.0`` has run, the blocks to come are known too many to draw their
    insides: from ``blocks.1`` on, their attention and MLP run unwatched."""
    model, batch = tiny_gpt(12)
    every_op = calls_seen(lambda: vz.graph(model, *batch, max_nodes=None), monkeypatch)
    folded = calls_seen(lambda: vz.graph(model, *batch), monkeypatch)
    assert folded < every_op / 4, (folded, every_op)
    assert_same_picture(model, *batch)
    assert torch._C._len_torch_function_stack() == 0


class Scales(nn.Module):
    """Adds a tensor it is handed; the last one doubles that tensor in place first (the
    caller's, not one the call made). Added, not multiplied by: a product saves it for
    backward, and autograd refuses a backward through a saved tensor changed since."""

    def __init__(self, doubles: bool) -> None:
        super().__init__()
        self.doubles = doubles

    def forward(self, x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        if self.doubles:
            scale.mul_(2)
        return x + scale


class Outer(nn.Module):
    """Once ``scales.0`` has run, ``scales.1`` to ``scales.5`` are expected to be too many to
    open in a picture of 4 nodes: they run unwatched, ``scales.5`` changing the tensor it
    adds: the one the call was handed (passed on by keyword: a module's pre-hook
    sees no keywords), or, given ``own``, one the model holds (passed on by position)."""

    def __init__(self, own: torch.Tensor | None = None) -> None:
        super().__init__()
        self.inner = nn.Sequential(nn.Linear(4, 4), nn.Tanh())
        self.scales = nn.ModuleList([Scales(doubles=k == 5) for k in range(6)])
        self.own = own  # (a plain attribute: not a buffer, which UserState keeps anyway)

    def forward(self, x: torch.Tensor, scale: torch.Tensor | None = None) -> torch.Tensor:
        x = self.inner(x)
        for s in self.scales:
            x = s(x, scale=scale) if self.own is None else s(x, self.own)
        return x.sum()


class Keyword(nn.Module):
    """``Outer`` called with ``scale`` by keyword."""

    def __init__(self) -> None:
        super().__init__()
        self.outer = Outer()

    def forward(self, x: torch.Tensor, *, scale: torch.Tensor) -> torch.Tensor:
        return self.outer(x, scale=scale)


@pytest.mark.parametrize("how", ["handed", "handed by keyword", "whole model unwatched", "the model's own"])
def test_what_a_module_run_unwatched_changes_in_place_of_the_callers_is_put_back(how):
    x, scale = torch.randn(3, 4), torch.ones(4, dtype=torch.int64)  # (no copy of it requires grad)
    if how == "handed":
        g = vz.graph(Outer(), x, scale, max_nodes=4)
    elif how == "the model's own":
        g = vz.graph(Outer(own=scale), x, max_nodes=4)
    else:
        g = vz.graph(Keyword(), x, scale=scale, **({"max_nodes": 4} if how == "handed by keyword" else {"depth": 0}))
    assert any(n.kind == "module" for n in g.nodes), "the picture is folded: the modules ran unwatched"
    assert torch.equal(scale, torch.ones(4, dtype=torch.int64)), scale


class Raises(nn.Module):
    def __init__(self, error: BaseException) -> None:
        super().__init__()
        self.error = error

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise self.error


class Deep(nn.Module):
    def __init__(self, last: nn.Module) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([nn.Sequential(nn.Linear(4, 4), nn.Tanh()) for _ in range(8)])
        self.last = nn.Sequential(nn.Linear(4, 4), last)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for b in self.blocks:
            x = b(x)
        return self.last(x).sum()


def refuse(module: nn.Module, args: object) -> None:
    raise ValueError("the model's own error")


@pytest.mark.parametrize("where", ["forward", "pre-hook", "interrupted"])
def test_an_error_inside_a_module_run_unwatched_leaves_torch_as_it_was(where):
    """Raised in the forward or in the module's own pre-hook, after vizlib's took the
    function mode off; or a KeyboardInterrupt (the notebook's stop button), for which
    PyTorch runs no module hook after the call."""
    error = KeyboardInterrupt() if where == "interrupted" else ValueError("the model's own error")
    last = nn.Tanh() if where == "pre-hook" else Raises(error)
    if where == "pre-hook":
        last.register_forward_pre_hook(refuse)
    with pytest.raises(type(error)):
        vz.graph(Deep(last), torch.randn(2, 4), max_nodes=5)
    assert torch._C._len_torch_function_stack() == 0
    g = vz.graph(Deep(nn.Tanh()), torch.randn(2, 4), max_nodes=5)  # and the next drawing works
    assert len(g.nodes) <= 5


class AddsInPlace(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.add_(1)


class Nested(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.pre = nn.ModuleList([nn.Sequential(nn.Linear(3, 3), nn.Tanh()) for _ in range(6)])
        self.deep = nn.Sequential(nn.Sequential(AddsInPlace()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x
        for p in self.pre:
            y = p(y)
        return (self.deep(x) * y).sum()


def test_an_in_place_change_of_an_input_deep_in_a_folded_model_gets_vizlibs_words():
    with pytest.raises(VizlibValueError, match="changes its input x in place"):
        vz.graph(Nested(), torch.randn(2, 3), max_nodes=4)


def test_backward_again_through_a_stashed_result_of_a_folded_model_says_why():
    model, batch = tiny_gpt(4)
    stash = []

    class Stashing(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, idx, targets):
            loss = self.model(idx, targets)
            stash.append(loss)
            return loss

    g = vz.graph(Stashing(), *batch)
    assert any(n.kind == "module" for n in g.nodes)
    with pytest.raises(RuntimeError, match="already ran backward through this graph"):
        stash[0].backward()


def test_threads_drawing_folded_models_at_once_get_the_pictures_of_one_thread():
    models = [tiny_gpt(4), tiny_gpt(6)]
    alone = [vz.graph(m, *b) for m, b in models]
    drawn: dict[int, list] = {0: [], 1: []}
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def draw(k: int) -> None:
        try:
            start.wait()
            for _ in range(5):
                drawn[k].append(vz.graph(models[k][0], *models[k][1]))
        except BaseException as err:  # noqa: BLE001 - reported below, on the test's thread
            errors.append(err)

    threads = [threading.Thread(target=draw, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for k in (0, 1):
        expected = [(n.id, n.name, n.modules, n.saved_bytes, n.value_stats) for n in alone[k].nodes]
        for g in drawn[k]:
            assert [(n.id, n.name, n.modules, n.saved_bytes, n.value_stats) for n in g.nodes] == expected
            assert g.backward_order == alone[k].backward_order


class NormBlock(nn.Module):
    """A layer, then a BatchNorm in training mode (its running statistics change)."""

    def __init__(self) -> None:
        super().__init__()
        self.layer, self.norm = nn.Linear(4, 4), nn.BatchNorm1d(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.norm(self.layer(x)))


class KeywordBlock(nn.Module):
    """Called with keywords only, as Hugging Face's layers are."""

    def __init__(self) -> None:
        super().__init__()
        self.layer, self.inner = nn.Linear(4, 4), nn.Sequential(nn.Linear(4, 4), nn.Tanh())

    def forward(self, *, hidden_states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.inner(self.layer(hidden_states)) * mask


class FunctionalBlock(nn.Module):
    """Its layer called through torch.func.functional_call."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.func.functional_call(self.layer, dict(self.layer.named_parameters()), (x,)).tanh()


class Users(nn.Module):
    """Eight residual blocks of one kind, run as a user's model runs them."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind
        make = {"keywords": KeywordBlock, "functional_call": lambda: nn.Sequential(FunctionalBlock(), nn.Linear(4, 4))}
        self.blocks = nn.ModuleList(make.get(kind, NormBlock)() for _ in range(8))

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            if self.kind == "keywords":
                h = block(hidden_states=x, mask=mask)
            elif self.kind == "checkpoint":
                h = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
            else:
                h = block(x)
            x = h + x
        return x.sum()


class Looped(nn.Module):
    """A cell called 20 times after six layers, as an RNN's is."""

    def __init__(self) -> None:
        super().__init__()
        self.pre = nn.ModuleList(nn.Linear(4, 4) for _ in range(6))
        self.cell = nn.Linear(4, 4)

    def forward(self, xs: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        h = torch.zeros(4)
        for layer in self.pre:
            h = torch.tanh(layer(h))
        for x in xs:
            h = torch.tanh(self.cell(h) + x)
        return (h * mask).sum()


@pytest.mark.parametrize("kind", ["batchnorm", "checkpoint", "keywords", "functional_call", "a cell in a loop"])
@pytest.mark.parametrize("max_nodes", [6, 30])
def test_users_models_folded_get_the_picture_every_op_watched_gives(kind, max_nodes, monkeypatch):
    """Models as users write them, folded enough that modules run unwatched: the picture
    every op watched would give (test_drawn's comparison), and the model as it was."""
    torch.manual_seed(0)
    model = Looped() if kind == "a cell in a loop" else Users(kind)
    x = torch.randn(20, 4) if kind == "a cell in a loop" else torch.randn(5, 4)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    assert_same_picture(model, x, torch.ones(4), max_nodes=max_nodes)
    assert all(torch.equal(state[k], v) for k, v in model.state_dict().items())
    assert calls_seen(lambda: vz.graph(model, x, torch.ones(4), max_nodes=6), monkeypatch) < calls_seen(
        lambda: vz.graph(model, x, torch.ones(4), max_nodes=None), monkeypatch
    ), "some modules ran unwatched"
