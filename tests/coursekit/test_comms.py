"""CollectiveLog records the collectives really issued (by dist.*, DDP's C++ reducer and
FSDP2), with the size of the whole tensor each moves and the ring model's bytes sent."""

import pytest
import torch
import torch.distributed as dist
from torch.distributed.fsdp import fully_shard
from torch.nn.parallel import DistributedDataParallel as DDP

from coursekit.comms import Collective, CollectiveLog
from coursekit.ranks import run_ranks


def logged(rank: int, world_size: int) -> dict[str, list[Collective]]:
    logs = {}
    alone = dist.new_group([0])  # every rank creates it; only rank 0 is in it
    with CollectiveLog() as log:
        t = torch.ones(6)
        t = t * 2 + 1  # ordinary ops are not collectives
        dist.all_reduce(t)
        dist.all_gather([torch.empty(6) for _ in range(world_size)], t)
        dist.all_gather_single(torch.empty(6 * world_size, dtype=torch.float64), t.double())
        dist.reduce_scatter(torch.empty(3), list(torch.ones(6).chunk(world_size)))
        dist.reduce_scatter_single(torch.empty(3, dtype=torch.bfloat16), torch.ones(6, dtype=torch.bfloat16))
        dist.broadcast(t, src=0)
        if rank == 0:
            dist.all_reduce(torch.ones(5), group=alone)
    logs["dist"] = log.calls
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.ReLU(), torch.nn.Linear(6, 2))
    ddp = DDP(model)
    with CollectiveLog() as log:
        ddp(torch.randn(3, 4)).sum().backward()
    logs["ddp"] = log.calls
    for unit in (model[0], model[2], model):
        fully_shard(unit)
    with CollectiveLog() as log:
        model(torch.randn(3, 4)).sum().backward()
    logs["fsdp"] = log.calls
    return logs


@pytest.fixture(scope="module")
def logs() -> list[dict[str, list[Collective]]]:
    return run_ranks(logged, 2)


def test_each_dist_call_is_one_record_with_its_whole_tensor(logs):
    f32, f64, bf16 = torch.float32, torch.float64, torch.bfloat16
    expected = [
        Collective("all_reduce", f32, 24, 2),
        Collective("all_gather", f32, 48, 2),  # the output: both ranks' 6 values
        Collective("all_gather", f64, 96, 2),
        Collective("reduce_scatter", f32, 24, 2),  # the input, before it is cut in two
        Collective("reduce_scatter", bf16, 12, 2),
        Collective("broadcast", f32, 24, 2),
    ]
    assert logs[0]["dist"] == expected + [Collective("all_reduce", f32, 20, 1)]
    assert logs[1]["dist"] == expected


def test_ring_bytes_follow_the_ring_algorithm(logs):
    calls = logs[1]["dist"]
    assert [c.ring_bytes_sent() for c in calls[:5]] == [24.0, 24.0, 48.0, 12.0, 6.0]
    assert Collective("all_reduce", torch.float32, 4000, 4).ring_bytes_sent() == 6000
    with pytest.raises(ValueError, match="no ring model for broadcast"):
        calls[5].ring_bytes_sent()


def test_ddp_all_reduces_every_gradient_once_from_its_reducer(logs):
    parameters = 4 * 6 + 6 + 6 * 2 + 2
    log = logs[0]["ddp"]
    assert [(c.kind, c.nbytes) for c in log] == [("all_reduce", 4 * parameters)]


def test_fsdp_gathers_each_unit_twice_and_reduce_scatters_once(logs):
    log = logs[0]["fsdp"]
    parameters = 4 * 6 + 6 + 6 * 2 + 2
    gathered = sum(c.nbytes for c in log if c.kind == "all_gather")
    scattered = sum(c.nbytes for c in log if c.kind == "reduce_scatter")
    assert [c.kind for c in log].count("all_gather") == 4 and [c.kind for c in log].count("reduce_scatter") == 2
    assert (gathered, scattered) == (2 * 4 * parameters, 4 * parameters)  # no padding: 6 and 2 rows
    assert logs[1]["fsdp"] == log
