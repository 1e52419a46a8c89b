"""FSDP2 on gloo gives the gradients of one process on the whole batch.

Chapter 05 says FSDP's reduce-scatter averages the ranks' gradients, as DDP's all-reduce
does. gloo's AVG reduction has been silently wrong upstream before, so this holds the
claim to a single-process reference on every parameter, over several optimizer steps,
on 2 and 4 ranks, with uneven shards (3 and 5 rows on 2 ranks, 5 rows on 4)."""

import copy

import pytest
import torch
from torch.distributed.fsdp import fully_shard

from coursekit.ranks import run_ranks

STEPS = 3


def model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3))


def sharded_and_reference(rank: int, world_size: int) -> list[tuple[str, float]]:
    """Train a sharded copy (each rank its share of each batch) and a whole copy (every
    batch, in this process alone) side by side; each step, how far apart each gradient is."""
    reference = model()
    sharded = copy.deepcopy(reference)
    for layer in (sharded[0], sharded[2]):
        fully_shard(layer)
    fully_shard(sharded)
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (sharded, reference)]
    gaps = []
    for step in range(STEPS):
        torch.manual_seed(100 + step)  # the same batch on every rank
        x, y = torch.randn(4 * world_size, 6), torch.randn(4 * world_size, 3)
        mine = slice(4 * rank, 4 * rank + 4)
        torch.nn.functional.mse_loss(sharded(x[mine]), y[mine]).backward()
        torch.nn.functional.mse_loss(reference(x), y).backward()
        for (name, p), q in zip(sharded.named_parameters(), reference.parameters(), strict=True):
            gaps.append((f"step {step} {name}", (p.grad.full_tensor() - q.grad).abs().max().item()))
        for optimizer in optimizers:
            optimizer.step()
            optimizer.zero_grad()
    return gaps


@pytest.mark.parametrize("world_size", [2, 4])
def test_fsdp2_gradients_equal_one_process_on_the_whole_batch(world_size):
    for rank, gaps in enumerate(run_ranks(sharded_and_reference, world_size=world_size)):
        assert len(gaps) == STEPS * 4
        for what, gap in gaps:
            assert gap < 1e-6, f"rank {rank}, {what}: FSDP's gradient is {gap:.2e} off the whole batch's"
