"""run_ranks: a function on real forked processes joined by gloo; failures, deadlocks and
interrupts become one LaunchError, and no process survives any of them."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest
import torch
import torch.distributed as dist

import coursekit.ranks
from coursekit.launch import LaunchError
from coursekit.ranks import run_ranks


def no_children_left() -> bool:
    """No process of ours survives, not even as a zombie (every rank was reaped)."""
    return psutil.Process().children(recursive=True) == []


def running(process: psutil.Process) -> bool:
    """Alive and not a zombie (an orphan stays a zombie until init reaps it)."""
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def sum_of_ranks(rank, world_size):
    print(f"rank {rank} here")
    value = torch.tensor([float(rank)])
    dist.all_reduce(value)
    return os.getpid(), dist.get_rank(), dist.get_world_size(), value.item()


@pytest.mark.parametrize("world_size", [1, 2, 3])
def test_each_rank_is_its_own_process_in_one_group(world_size, capsys):
    results = run_ranks(sum_of_ranks, world_size)
    assert [(rank, size, total) for _, rank, size, total in results] == [
        (r, world_size, float(sum(range(world_size)))) for r in range(world_size)
    ]
    pids = {pid for pid, *_ in results}
    assert len(pids) == world_size and os.getpid() not in pids
    assert capsys.readouterr().out == "".join(f"[rank {r}] rank {r} here\n" for r in range(world_size))
    assert no_children_left()


def test_arguments_reach_every_rank_and_output_can_be_hidden(capsys):
    def scaled(rank, world_size, factor):
        print("not shown")
        return rank * factor

    assert run_ranks(scaled, args=(10,), show_output=False) == [0, 10]
    assert capsys.readouterr().out == ""


def test_the_first_rank_to_raise_is_named_with_its_error_and_traceback():
    def rank1_fails(rank, world_size):
        if rank == 1:
            raise ValueError("bad batch")
        dist.all_reduce(torch.ones(1))  # rank 0 would wait for rank 1 forever

    with pytest.raises(LaunchError) as caught:
        run_ranks(rank1_fails, timeout=60)
    error = caught.value
    assert (error.reason, error.ranks) == ("failed", [1])
    first, *rest = str(error).splitlines()
    assert first == "rank 1 raised ValueError: bad batch. The other ranks were stopped."
    assert "in rank1_fails" in "\n".join(rest) and "_rank_main" not in str(error)
    assert no_children_left()


def test_a_deadlock_ends_at_the_timeout_with_every_rank_stopped():
    def only_rank0_reduces(rank, world_size):
        print(f"rank {rank} started")
        if rank == 0:
            dist.all_reduce(torch.ones(1))

    with pytest.raises(LaunchError) as caught:
        run_ranks(only_rank0_reduces, timeout=5)
    error = caught.value
    assert (error.reason, error.ranks) == ("timeout", [0])
    assert str(error).startswith(
        "only_rank0_reduces on 2 ranks did not finish within 5 s: rank 0 still running (rank 1 returned). A deadlock"
    )
    assert "last lines of rank 0:\n    rank 0 started" in str(error)
    assert no_children_left()


def test_a_rank_that_dies_is_reported_with_its_exit_code():
    def rank0_exits(rank, world_size):
        if rank == 0:
            os._exit(7)
        dist.all_reduce(torch.ones(1))

    with pytest.raises(LaunchError, match=r"rank 0 died while running rank0_exits: its process exited \(code 7\)"):
        run_ranks(rank0_exits, timeout=60)
    assert no_children_left()


def test_a_return_value_that_cannot_be_pickled_is_a_clear_error():
    with pytest.raises(LaunchError, match="its return value could not be sent back"):
        run_ranks(lambda rank, world_size: lambda: rank, timeout=60)
    assert no_children_left()


def test_an_interrupt_stops_every_rank_and_propagates(monkeypatch):
    def interrupted(*args, **kwargs):
        time.sleep(0.5)  # the ranks are running (a deadlock below) when the stop button is hit
        raise KeyboardInterrupt

    monkeypatch.setattr(coursekit.ranks, "wait", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_ranks(lambda rank, world_size: dist.recv(torch.empty(1), src=1 - rank), timeout=60)
    assert no_children_left()


def test_ranks_stop_by_themselves_when_their_parent_dies(tmp_path):
    """A kernel killed outright cannot stop its ranks: each notices its pipe to the kernel
    close (or, stuck in a collective, gloo's own time limit) and exits."""
    marker = tmp_path / "started"
    script = textwrap.dedent(f"""
        import pathlib, torch, torch.distributed as dist
        from coursekit.ranks import run_ranks

        def stuck_or_done(rank, world_size):
            pathlib.Path({str(marker)!r}).touch()
            if rank == 0:
                dist.recv(torch.empty(1), src=1)  # never sent
            return rank

        run_ranks(stuck_or_done, timeout=3)
    """)
    parent = subprocess.Popen([sys.executable, "-c", script])
    try:
        for _ in range(600):
            if marker.exists():
                break
            time.sleep(0.1)
        assert marker.exists(), "the ranks never started"
        ranks = psutil.Process(parent.pid).children()
        parent.send_signal(signal.SIGKILL)
    finally:
        parent.wait()
    assert len(ranks) == 2
    deadline = time.monotonic() + 120  # gloo's own limit here is 2 * 3 + 10 s
    while any(running(p) for p in ranks) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [p.pid for p in ranks if running(p)]


def test_refuses_to_fork_once_cuda_is_initialised(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    with pytest.raises(LaunchError, match="Cannot re-initialize CUDA in forked subprocess"):
        run_ranks(sum_of_ranks)


@pytest.mark.parametrize(
    "fn, world_size, error, message",
    [
        ("not a function", 2, TypeError, "run_ranks runs a function"),
        (sum_of_ranks, 0, ValueError, "world_size must be a positive int"),
        (sum_of_ranks, "2", ValueError, "world_size must be a positive int"),
    ],
)
def test_bad_arguments_are_clear_errors(fn, world_size, error, message):
    with pytest.raises(error, match=message):
        run_ranks(fn, world_size)
