"""The course's training loop does exactly the steps chapter 03b teaches, and prints the same
progress bar on every run (so notebooks that train can be compared by nbval)."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch
from torch import nn

from coursekit.models import GPTConfig, make_gpt
from coursekit.training import evaluate, progress_bar, train

TINY = GPTConfig(n_layer=1, n_embd=16, n_head=2, block_size=8, vocab=20)


class Regression(nn.Module):
    """A model in the course's convention: forward(inputs, targets) returns the loss."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Dropout(0.2), nn.Linear(8, 1))

    def forward(self, x, y):
        return ((self.net(x) - y) ** 2).mean()


def regression_batches(n: int, seed: int = 0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    gen = torch.Generator().manual_seed(seed)
    batches = []
    for _ in range(n):
        x = torch.randn(16, 3, generator=gen)
        batches.append((x, x @ torch.tensor([[1.0], [-2.0], [0.5]]) + 0.3))
    return batches


def reference_loop(model, optimizer, batches, scheduler=None, max_grad_norm=None):
    """The loop written out by hand, as the chapter builds it."""
    model.train()
    losses = []
    for x, y in batches:
        optimizer.zero_grad()
        loss = model(x, y)
        loss.backward()
        if max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        losses.append(loss.item())
    return losses


def make_run(seed=0, lr=0.05):
    torch.manual_seed(seed)
    model = Regression()
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.1, total_iters=5)
    return model, optimizer, scheduler


@pytest.mark.parametrize("max_grad_norm", [None, 0.5])
def test_train_takes_the_same_steps_as_the_hand_written_loop(max_grad_norm, capsys):
    batches = regression_batches(12)
    model, optimizer, scheduler = make_run()
    ref_model, ref_optimizer, ref_scheduler = make_run()
    torch.manual_seed(1)
    history = train(model, optimizer, batches, scheduler=scheduler, max_grad_norm=max_grad_norm)
    torch.manual_seed(1)  # the same dropout masks
    ref_losses = reference_loop(ref_model, ref_optimizer, batches, ref_scheduler, max_grad_norm)
    assert history.loss == ref_losses
    assert all(torch.equal(p, q) for p, q in zip(model.parameters(), ref_model.parameters(), strict=True))
    assert optimizer.param_groups[0]["lr"] == ref_optimizer.param_groups[0]["lr"]


def test_history_records_each_steps_lr_and_the_gradient_norm_before_clipping(capsys):
    batches = regression_batches(6)
    model, optimizer, scheduler = make_run()
    start = copy.deepcopy(model)
    torch.manual_seed(7)
    history = train(model, optimizer, batches, scheduler=scheduler, max_grad_norm=1e-3)
    assert len(history.loss) == len(history.lr) == len(history.grad_norm) == 6
    # LinearLR from 0.1 * lr up to lr over 5 steps: the lr each step used, before scheduler.step().
    assert history.lr == pytest.approx([0.05 * f for f in (0.1, 0.28, 0.46, 0.64, 0.82, 1.0)])
    # The first norm is that of the first batch's gradient, not the clipped 1e-3.
    torch.manual_seed(7)  # the same dropout mask as train's first step
    grads = torch.autograd.grad(start(*batches[0]), list(start.parameters()))
    unclipped = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads])).item()
    assert unclipped > 0.1
    assert history.grad_norm[0] == pytest.approx(unclipped, rel=1e-6)
    assert all(n > 1e-3 for n in history.grad_norm)


def test_a_gpt_learns_and_evaluate_leaves_the_mode_as_it_was(capsys):
    model, (idx, targets) = make_gpt(TINY, batch=4)
    batch = (idx, targets)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    before = evaluate(model, [batch])
    history = train(model, optimizer, [batch] * 30)
    assert history.loss[-1] < 0.5 * history.loss[0]
    assert evaluate(model, [batch]) < before
    for mode in (True, False):
        model.train(mode)
        weights = [p.clone() for p in model.parameters()]
        evaluate(model, [batch, batch])
        assert model.training is mode
        assert all(torch.equal(p, w) for p, w in zip(model.parameters(), weights, strict=True))


def test_evaluate_runs_in_eval_mode_without_a_graph():
    seen = []

    class Probe(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.ones(1))

        def forward(self, x):
            seen.append((self.training, torch.is_grad_enabled()))
            return (self.w * x).sum()

    probe = Probe()
    assert evaluate(probe, [(torch.ones(2),), (torch.full((2,), 3.0),)]) == 4.0
    assert seen == [(False, False), (False, False)]
    with pytest.raises(ValueError, match="at least one batch"):
        evaluate(probe, [])


def test_the_progress_bar_prints_the_same_deterministic_line_every_run(capsys):
    outputs = []
    for _ in range(2):
        model, optimizer, _ = make_run()
        torch.manual_seed(3)
        history = train(model, optimizer, regression_batches(25), desc="fit")
        captured = capsys.readouterr()
        assert captured.err == ""
        outputs.append(captured.out)
    assert outputs[0] == outputs[1]
    # What a terminal (or Jupyter, or nbval) shows: the text after the last carriage return.
    final = outputs[0].split("\r")[-1]
    assert final == f"fit: 100%|██████████| 25/25, loss {history.loss[-1]:.4f}\n"
    # Redrawn every tenth of the way (miniters), not on a timer: at 0, 2, 4, ... 24, then 25/25 on closing.
    assert outputs[0].count("\r") == len(range(0, 25, 2)) + 1
    assert "it/s" not in outputs[0] and "<" not in outputs[0]


def test_progress_bar_over_a_short_list_redraws_every_item(capsys):
    assert list(progress_bar(["a", "b", "c"], "three")) == ["a", "b", "c"]
    out = capsys.readouterr().out
    assert out.split("\r")[-1] == "three: 100%|██████████| 3/3\n"
    assert out.count("\r") == 5  # 0/3, 1/3, 2/3, 3/3, and the final redraw on close


def test_train_warns_about_nothing(capsys):
    model, optimizer, scheduler = make_run()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        train(model, optimizer, regression_batches(3), scheduler=scheduler, max_grad_norm=1.0)


def test_bad_input_gets_a_clear_error(capsys):
    model, optimizer, _ = make_run()
    with pytest.raises(TypeError, match=r"list \(anything with len\(\)\)"):
        train(model, optimizer, iter(regression_batches(2)))

    class Logits(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 2)

        def forward(self, x, y):
            return self.fc(x)

    logits = Logits()
    with pytest.raises(TypeError, match=r"scalar loss.*got \(16, 2\)"):
        train(logits, torch.optim.SGD(logits.parameters(), lr=0.1), regression_batches(1))
