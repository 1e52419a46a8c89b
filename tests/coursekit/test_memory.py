"""bytes_by_role counts the memory behind a model's and an optimizer's tensors: each
storage once, a DTensor by its local shard, FSDP's padding included."""

import pytest
import torch
from torch.distributed.fsdp import fully_shard

from coursekit.memory import bytes_by_role, local, storage_bytes
from coursekit.ranks import run_ranks

F32, BF16 = torch.float32, torch.bfloat16


def stepped(dtype: torch.dtype = F32) -> tuple[torch.nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2)).to(dtype)
    optimizer = torch.optim.AdamW(model.parameters())
    model(torch.randn(4, 3, dtype=dtype)).sum().backward()
    optimizer.step()
    return model, optimizer


def test_adamw_holds_weights_gradients_two_moments_and_one_step_per_tensor():
    model, optimizer = stepped()
    elements = 3 * 5 + 5 + 5 * 2 + 2
    assert bytes_by_role(model, optimizer) == {
        ("parameters", F32): 4 * elements,
        ("gradients", F32): 4 * elements,
        ("exp_avg", F32): 4 * elements,
        ("exp_avg_sq", F32): 4 * elements,
        ("step", F32): 4 * 4,  # one float32 per parameter tensor, not per element
    }


def test_roles_are_split_by_dtype_and_absent_gradients_are_left_out():
    model, _ = stepped(BF16)
    model.zero_grad()  # set_to_none: no gradient tensors any more
    assert bytes_by_role(model) == {("parameters", BF16): 2 * 32}


def test_views_of_one_storage_count_once_and_empty_tensors_count_nothing():
    block = torch.zeros(10)
    assert storage_bytes([block, block[2:5], block.view(2, 5), torch.zeros(0)]) == 40
    assert storage_bytes([torch.zeros(3), torch.zeros(3, dtype=BF16)]) == 12 + 6
    sliced = torch.zeros(8)[:2]  # a view keeps its whole block alive
    assert storage_bytes([sliced]) == 32 and local(sliced) is sliced


def shards_of_a_three_row_layer(rank: int, world_size: int) -> dict:
    torch.manual_seed(0)
    layer = torch.nn.Linear(4, 3)
    fully_shard(layer)
    optimizer = torch.optim.AdamW(layer.parameters())
    layer(torch.randn(2, 4)).sum().backward()
    optimizer.step()
    return bytes_by_role(layer, optimizer)


def test_fsdp_shards_are_counted_locally_with_their_padding():
    rank0, rank1 = run_ranks(shards_of_a_three_row_layer, 2)
    # weight rows 2 + 1, bias 2 + 1: rank 1's blocks are padded to rank 0's size
    assert rank0[("parameters", F32)] == rank1[("parameters", F32)] == (2 * 4 + 2) * 4
    # one reduce-scatter output holds the unit's gradients (padded too): counted once
    assert rank0[("gradients", F32)] == rank1[("gradients", F32)] == (2 * 4 + 2) * 4
    # AdamW's moments are allocated for the shard as it is: no padding
    assert (rank0[("exp_avg", F32)], rank1[("exp_avg", F32)]) == ((2 * 4 + 2) * 4, (1 * 4 + 1) * 4)


@pytest.mark.parametrize("dtype", [F32, BF16])
def test_an_optimizer_without_state_adds_nothing(dtype):
    model = torch.nn.Linear(2, 2).to(dtype)
    assert bytes_by_role(model, torch.optim.SGD(model.parameters())) == {("parameters", dtype): 6 * dtype.itemsize}
