"""The claims chapters 05, 05b and 05c make about DDP and FSDP2, held to torch on real gloo ranks.

The chapters' cells print the evidence; these tests hold each claim to the installed torch
on its own: when DDP broadcasts buffers, what SyncBatchNorm exchanges, that
find_unused_parameters=True keeps the first buckets, FSDP2's root default and reduce dtype,
set_requires_gradient_sync, and resuming an FSDP run's optimizer through DCP.
"""

from __future__ import annotations

import contextlib
import inspect
from pathlib import Path

import torch
import torch.distributed.checkpoint as dcp
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from torch.nn.modules._functions import SyncBatchNorm
from torch.nn.parallel import DistributedDataParallel as DDP

from coursekit.comms import CollectiveLog
from coursekit.ranks import run_ranks


def mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 32))


def buffer_broadcasts(rank: int, world_size: int) -> list[bool]:
    torch.manual_seed(0)
    ddp = DDP(torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.BatchNorm1d(2)))
    for _ in range(2):
        ddp(torch.randn(4, 2)).sum().backward()
    contexts = [None, ddp.no_sync, ddp.no_sync, None, torch.no_grad, None, None]
    broadcast = []
    for context in contexts:
        with context() if context else contextlib.nullcontext():
            with CollectiveLog() as log:
                out = ddp(torch.randn(4, 2))
            if torch.is_grad_enabled():
                out.sum().backward()
        broadcast.append(any(call.kind == "broadcast" for call in log.calls))
    return broadcast


def test_ddp_skips_the_buffer_broadcast_after_a_no_sync_or_no_grad_forward() -> None:
    # a step, 2 micro-batches in no_sync and the last outside, an evaluation, two steps
    assert run_ranks(buffer_broadcasts, timeout=60)[0] == [True, True, False, False, True, False, True]


def test_sync_batchnorm_all_gathers_mean_invstd_and_count() -> None:
    source = inspect.getsource(SyncBatchNorm.forward)
    assert "combined = torch.cat([mean, invstd, count], dim=0)" in source
    assert "dist.all_gather(combined_list, combined" in source


class HeadDefinedFirst(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.head = torch.nn.Linear(512, 512)
        self.body = torch.nn.Linear(512, 512)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))


def buckets(rank: int, world_size: int) -> dict[bool, list[list[list[str]]]]:
    found = {}
    for walk in (False, True):
        torch.manual_seed(0)
        ddp = DDP(HeadDefinedFirst(), bucket_cap_mb=1, find_unused_parameters=walk)
        names = {p: name for name, p in ddp.module.named_parameters()}
        log: list[list[list[str]]] = []

        def hook(state, bucket, log=log, names=names):
            log[-1].append([names[p] for p in bucket.parameters()])
            return default_hooks.allreduce_hook(None, bucket)

        ddp.register_comm_hook(None, hook)
        for _ in range(3):
            log.append([])
            ddp(torch.randn(4, 512)).sum().backward()
        found[walk] = log
    return found


def test_find_unused_parameters_never_rebuilds_the_buckets() -> None:
    found = run_ranks(buckets, timeout=60, show_output=False)[0]
    assert found[False][1] == [["head.bias", "head.weight"], ["body.bias", "body.weight"]]
    assert found[True][0] == found[True][1] == found[True][2]
    assert found[True][0][0] == ["body.bias"]  # bucket 0 waits for the end of backward


def fsdp_claims(rank: int, world_size: int) -> dict[str, object]:
    claims: dict[str, object] = {}
    for label, options in (("default", {}), ("True", {"reshard_after_forward": True})):
        model = mlp()
        fully_shard(model[0], **options)
        fully_shard(model, **options)  # the root holds layer 2
        with CollectiveLog() as log:
            model(torch.randn(8, 32)).sum().backward()
        claims[label] = [call.kind for call in log.calls].count("all_gather")
    model = mlp()
    for unit in (model[0], model[2], model):
        fully_shard(unit, mp_policy=MixedPrecisionPolicy(param_dtype=torch.bfloat16))
    with CollectiveLog() as log:
        model(torch.randn(8, 32)).sum().backward()
    claims["reduce dtype"] = {call.dtype for call in log.calls if call.kind == "reduce_scatter"}
    model = mlp()
    for unit in (model[0], model[2], model):
        fully_shard(unit)
    with CollectiveLog() as log:
        for i in range(3):
            loss = model(torch.randn(2, 32)).sum()
            model.set_requires_gradient_sync(i == 2)  # read in backward
            loss.backward()
    claims["reduce-scatters"] = [call.kind for call in log.calls].count("reduce_scatter")
    return claims


def test_fsdp2_root_default_reduce_dtype_and_gradient_sync() -> None:
    claims = run_ranks(fsdp_claims, world_size=4, timeout=60)[0]
    assert (claims["default"], claims["True"]) == (3, 4)  # the root is gathered once, not twice
    assert claims["reduce dtype"] == {torch.bfloat16}  # reduce_dtype=None: param_dtype
    assert claims["reduce-scatters"] == 2  # one round, for the 2 units, in the last backward


class TrainingState:
    def __init__(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> None:
        self.model, self.optimizer = model, optimizer

    def state_dict(self) -> dict:
        model_state, optimizer_state = get_state_dict(self.model, self.optimizer)
        return {"model": model_state, "optimizer": optimizer_state}

    def load_state_dict(self, state: dict) -> None:
        set_state_dict(self.model, self.optimizer, model_state_dict=state["model"], optim_state_dict=state["optimizer"])


def resume(rank: int, world_size: int, folder: str) -> bool:
    def build():
        model = mlp()
        for unit in (model[0], model[2], model):
            fully_shard(unit)
        return model, torch.optim.AdamW(model.parameters(), lr=0.1)

    def train(model, optimizer, batches):
        for batch in batches:
            model(batch).sum().backward()
            optimizer.step()
            optimizer.zero_grad()
        return [p.full_tensor() for p in model.parameters()]

    batches = torch.randn(4, 3, 32, generator=torch.Generator().manual_seed(rank))
    model, optimizer = build()
    train(model, optimizer, batches[:2])
    dcp.save({"training": TrainingState(model, optimizer)}, checkpoint_id=folder)
    expected = train(model, optimizer, batches[2:])
    model, optimizer = build()
    dcp.load({"training": TrainingState(model, optimizer)}, checkpoint_id=folder)
    return all(torch.equal(a, b) for a, b in zip(train(model, optimizer, batches[2:]), expected, strict=True))


def test_dcp_resumes_an_fsdp_run_with_its_optimizer_bit_for_bit(tmp_path: Path) -> None:
    assert run_ranks(resume, args=(str(tmp_path / "checkpoint"),), timeout=60) == [True, True]
