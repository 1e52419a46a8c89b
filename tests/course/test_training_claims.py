"""The claims chapter 03b makes about checkpointing, resuming and initialisation, held to torch.

The chapter's cells print the evidence; these tests hold each claim to the installed torch
on its own, so that a torch upgrade that changes one fails here by name, not as a changed
number somewhere in a notebook's output.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from itertools import islice

import pytest
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint
from torch.utils.data import DataLoader, TensorDataset

from coursekit.models import GPT, GPTConfig

PEAK, FLOOR = 3e-3, 3e-4


def test_use_reentrant_left_out_is_still_true() -> None:
    layer = nn.Linear(4, 4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = checkpoint(layer, torch.randn(2, 4))  # an input that needs no grad
    assert "current default" in str(caught[0].message)
    assert not out.requires_grad  # the reentrant variant's pitfall, as with use_reentrant=True
    assert checkpoint(layer, torch.randn(2, 4), use_reentrant=False).requires_grad


def test_preserve_rng_state_replays_the_dropout_mask() -> None:
    torch.manual_seed(0)
    block = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5), nn.Linear(8, 8))
    x = torch.randn(4, 8, requires_grad=True)

    def gradients(run) -> list[torch.Tensor]:
        block.zero_grad()
        torch.manual_seed(1)
        run(x).sum().backward()
        return [p.grad.clone() for p in block.parameters()]

    plain = gradients(block)
    for preserve, equal in ((True, True), (False, False)):
        got = gradients(lambda t, keep=preserve: checkpoint(block, t, use_reentrant=False, preserve_rng_state=keep))
        assert all(torch.equal(a, b) for a, b in zip(plain, got, strict=True)) is equal


@pytest.fixture
def one_thread() -> Iterator[None]:
    """One thread per op, as in the chapter: these tensors are small, and threads only contend."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.usefixtures("one_thread")
def test_default_init_blocks_make_two_thirds_of_the_final_variance() -> None:
    torch.manual_seed(0)
    deep = GPT(GPTConfig(n_layer=48, n_embd=128, n_head=4, block_size=32, vocab=64))
    stream, branches = {}, []
    deep.blocks[0].register_forward_pre_hook(lambda m, args: stream.update(start=args[0]))
    deep.blocks[-1].register_forward_hook(lambda m, args, out: stream.update(end=out))
    for block in deep.blocks:
        for branch in (block.attn, block.mlp):
            branch.register_forward_hook(lambda m, args, out: branches.append(out.var().item()))
    idx = torch.randint(0, 64, (8, 32), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        deep(idx, idx)
    final, embeddings = stream["end"].var().item(), stream["start"].var().item()
    assert 0.30 < embeddings / final < 0.40  # "two thirds" from the 96 branches
    assert 40 < embeddings / (sum(branches) / len(branches)) < 60  # "about 50 times less"


def _warmup_cosine(optimizer: torch.optim.Optimizer) -> torch.optim.lr_scheduler.LRScheduler:
    warm = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.01, total_iters=5)
    cosine = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=35, eta_min=FLOOR)
    return torch.optim.lr_scheduler.SequentialLR(optimizer, [warm, cosine], milestones=[5])


def _run() -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LRScheduler]:
    optimizer = torch.optim.AdamW(nn.Linear(2, 2).parameters(), lr=PEAK)
    return optimizer, _warmup_cosine(optimizer)


def _lrs(optimizer, scheduler, steps: int) -> list[float]:
    lrs = []
    for _ in range(steps):
        lrs.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return lrs


def test_resuming_without_the_scheduler_or_optimizer_state_sends_the_lr_astray() -> None:
    optimizer, scheduler = _run()
    _lrs(optimizer, scheduler, 20)
    saved = optimizer.state_dict(), scheduler.state_dict()
    expected = _lrs(optimizer, scheduler, 20)

    optimizer, scheduler = _run()
    optimizer.load_state_dict(saved[0])  # the scheduler's state left out
    lrs = _lrs(optimizer, scheduler, 20)
    assert lrs[0] == expected[0] and 50 < max(lrs) / PEAK < 55  # climbs to 52x the peak...
    assert lrs[5] == PEAK  # ...then jumps to the peak at the warm-up's end

    optimizer, scheduler = _run()
    scheduler.load_state_dict(saved[1])  # the optimizer's state left out
    lrs = _lrs(optimizer, scheduler, 20)
    assert abs(lrs[0] - PEAK * 0.01) < 1e-12 and expected[0] / lrs[0] > 60
    assert max(lrs) < FLOOR and abs(optimizer.param_groups[0]["lr"] - FLOOR) < 1e-12


def test_a_shuffling_loader_resumes_mid_epoch_only_from_the_epoch_start() -> None:
    examples = TensorDataset(torch.arange(12))

    def loader(generator: torch.Generator) -> DataLoader:
        return DataLoader(examples, batch_size=3, shuffle=True, generator=generator)

    generator = torch.Generator().manual_seed(0)
    shuffled = loader(generator)
    epoch_start = generator.get_state()
    epoch = iter(shuffled)
    done = [b.tolist() for (b,) in islice(epoch, 2)]
    mid_epoch = generator.get_state()
    rest = [b.tolist() for (b,) in epoch]
    from_mid = [b.tolist() for (b,) in loader(torch.Generator().set_state(mid_epoch))]
    assert from_mid[:2] != rest and len(from_mid) == 4  # a new shuffle, not the rest
    skipped = islice(loader(torch.Generator().set_state(epoch_start)), len(done), None)
    assert [b.tolist() for (b,) in skipped] == rest
