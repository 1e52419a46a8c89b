"""course/ddp_train.py, the script chapter 05 launches, under real torchrun (2 gloo ranks),
and alone in one process: DDP on 2 ranks ends with the weights of one process training on
the full global batches."""

import ast
import importlib.util
import subprocess
import sys

import pytest
import torch

from coursekit.launch import LaunchError, torchrun
from harness.paths import COURSE

SCRIPT = COURSE / "ddp_train.py"


def load_script():
    spec = importlib.util.spec_from_file_location("ddp_train", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The script on 2 ranks under torchrun, and alone: (torchrun's output, the lone run's
    output, the two checkpoints)."""
    ddp_dir, single_dir = tmp_path_factory.mktemp("ddp"), tmp_path_factory.mktemp("single")
    ddp_output = torchrun(SCRIPT, "--checkpoint-dir", str(ddp_dir), "--backend", "gloo", nproc=2, echo=False)
    single = subprocess.run(
        [sys.executable, str(SCRIPT), "--checkpoint-dir", str(single_dir)],
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    )
    load = lambda folder: torch.load(folder / "checkpoint.pt", weights_only=True)  # noqa: E731
    return ddp_output, single.stdout, load(ddp_dir), load(single_dir)


def lines_with(output: str, text: str) -> list[str]:
    return [line.removeprefix("[default0]:") for line in output.splitlines() if text in line]


def test_ddp_ends_with_the_weights_of_one_process_on_the_full_batch(runs):
    ddp_output, single_output, ddp, single = runs
    assert sorted(ddp["model"]) == sorted(single["model"]) == ["bias", "weight"]  # no "module." prefix
    for name in single["model"]:
        torch.testing.assert_close(ddp["model"][name], single["model"][name])
    assert not torch.equal(ddp["model"]["weight"], load_script().make_model().weight.detach())  # it trained
    assert lines_with(ddp_output, "mean loss") == lines_with(single_output, "mean loss")
    assert len(lines_with(ddp_output, "mean loss")) == 3


def test_only_rank_0_prints_and_saves_and_every_rank_reloads(runs):
    ddp_output = runs[0]
    assert all(line.startswith("[default0]:") for line in ddp_output.splitlines())
    assert lines_with(ddp_output, "saved") == ["rank 0 saved checkpoint.pt: ['bias', 'weight']"]
    assert lines_with(ddp_output, "loaded") == [
        f"rank {r} loaded checkpoint.pt: equal to its own replica: True" for r in range(2)
    ]
    assert lines_with(ddp_output, "environment") == [
        f"rank {r}'s environment: RANK={r} LOCAL_RANK={r} WORLD_SIZE=2 GROUP_RANK=0 LOCAL_WORLD_SIZE=2 "
        "MASTER_ADDR=localhost"
        for r in range(2)
    ]


def test_the_sampler_deals_disjoint_halves_reshuffled_every_epoch(runs):
    shares = {}
    for line in lines_with(runs[0], "gets samples"):
        where, samples = line.split(" gets samples ")
        shares[where] = ast.literal_eval(samples)
    epochs = [[shares[f"epoch {e}: rank {r}"] for r in range(2)] for e in range(3)]
    for rank0, rank1 in epochs:
        assert len(rank0) == len(rank1) == 8 and sorted(rank0 + rank1) == list(range(16))
    assert epochs[0] != epochs[1] != epochs[2]  # set_epoch: a new shuffle each epoch


def test_the_all_reduce_averages_the_ranks_gradients(runs):
    values = {}
    for line in lines_with(runs[0], "the all-reduce, rank"):
        where, numbers = line.strip().split(": ")
        values[where] = torch.tensor(ast.literal_eval(numbers))
    before = [values[f"before the all-reduce, rank {r}"] for r in range(2)]
    after = [values[f"after  the all-reduce, rank {r}"] for r in range(2)]
    assert not torch.allclose(before[0], before[1])
    assert torch.equal(after[0], after[1])
    torch.testing.assert_close(after[0], (before[0] + before[1]) / 2, atol=1e-4, rtol=0)


def test_alone_it_trains_in_one_process_without_a_group():
    module = load_script()
    assert module.setup("auto") == (0, 1, torch.device("cpu"))


def test_a_global_batch_the_ranks_cannot_share_is_a_clear_error(tmp_path):
    with pytest.raises(LaunchError, match="--global-batch 7 must be a multiple of the world size 2") as caught:
        torchrun(SCRIPT, "--checkpoint-dir", str(tmp_path), "--global-batch", "7", "--backend", "gloo", echo=False)
    assert caught.value.reason == "failed"
