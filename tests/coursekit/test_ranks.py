"""run_ranks: a function on real processes joined by gloo, forked from a clean fork server
(never from the caller) and sent by value; failures, deadlocks and interrupts become one
LaunchError, and no rank survives any of them."""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import nbformat
import psutil
import pytest
import torch
import torch.distributed as dist

import coursekit.ranks
from coursekit.launch import LaunchError
from coursekit.ranks import helper_processes, run_ranks


def no_children_left() -> bool:
    """No rank of ours survives, not even as a zombie (every rank was reaped): what is left
    is multiprocessing's fork server and resource tracker, idle for the next call."""
    helpers = helper_processes()
    return [p for p in psutil.Process().children(recursive=True) if p not in helpers] == []


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

    # 10 s: rank 1 must join the group and return first, and a loaded machine (the test suite's
    # workers beside it) once took more than 5 s to start and join it.
    with pytest.raises(LaunchError) as caught:
        run_ranks(only_rank0_reduces, timeout=10)
    error = caught.value
    assert (error.reason, error.ranks) == ("timeout", [0])
    assert str(error).startswith(
        "only_rank0_reduces on 2 ranks did not finish within 10 s: rank 0 still running (rank 1 returned). A deadlock"
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


@pytest.mark.parametrize(
    "cut_off",
    [
        "Connection closed by peer [127.0.0.1]:1234",
        # gloo's words when the peer died in the middle of a message (seen on a busy machine)
        "[pair.cc:537] Read error [127.0.0.1]:40613: Connection reset by peer",
    ],
)
def test_the_rank_that_failed_first_is_named_not_the_one_it_cut_off(cut_off):
    """A rank whose connection closed because another died reports first, often: the report
    names the rank that died, if it does within the grace."""

    def rank0_dies_late(rank, world_size):
        if rank == 1:
            time.sleep(0.2)
            raise RuntimeError(cut_off)
        time.sleep(0.8)
        os._exit(7)

    with pytest.raises(LaunchError, match=r"^rank 0 died while running rank0_dies_late: its process exited \(code 7\)"):
        run_ranks(rank0_dies_late, timeout=60)
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
        helpers = helper_processes(psutil.Process(parent.pid))
        ranks = [p for p in psutil.Process(parent.pid).children(recursive=True) if p not in helpers]
        parent.send_signal(signal.SIGKILL)
    finally:
        parent.wait()
    assert len(ranks) == 2
    deadline = time.monotonic() + 120  # gloo's own limit here is 2 * 3 + 10 s
    while any(running(p) for p in ranks + helpers) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [p.pid for p in ranks if running(p)]
    assert not [p.cmdline() for p in helpers if running(p)], "multiprocessing's helpers outlived their kernel"


def test_ranks_run_backward_and_ddp_while_the_caller_has_run_backward_and_holds_threads():
    """What breaks a fork of the caller on a GPU machine (autograd's device threads after a
    backward, any thread) does not reach the ranks: they are forks of a clean server."""
    torch.ones(3, requires_grad=True).sum().backward()
    stop = threading.Event()
    busy = threading.Thread(target=stop.wait)
    busy.start()
    try:

        def ddp_step(rank, world_size):
            from torch.nn.parallel import DistributedDataParallel as DDP

            torch.manual_seed(0)
            model = DDP(torch.nn.Linear(2, 1))
            model(torch.full((1, 2), float(rank + 1))).sum().backward()
            return model.module.weight.grad.tolist()

        assert run_ranks(ddp_step, show_output=False) == [[[1.5, 1.5]], [[1.5, 1.5]]]
    finally:
        stop.set()
        busy.join()
    assert no_children_left()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (the CPU half is the test above)")
def test_on_a_gpu_machine_ranks_start_after_the_caller_used_cuda_and_see_no_gpu():
    """A fork of the caller could use neither CUDA nor backward here; the ranks, CPU
    processes by design, see no GPU (the same results as on a laptop)."""
    x = torch.ones(3, device="cuda", requires_grad=True)
    (x * x).sum().backward()  # CUDA initialised, autograd's device threads started

    def backward_on_a_rank(rank, world_size):
        w = torch.full((2,), float(rank + 1), requires_grad=True)
        (w * w).sum().backward()
        dist.all_reduce(w.grad)
        return w.grad.tolist(), torch.cuda.is_available()

    assert run_ranks(backward_on_a_rank, show_output=False) == [([6.0, 6.0], False)] * 2
    assert no_children_left()


def test_ranks_see_no_gpu_and_the_caller_keeps_its_environment(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    seen = run_ranks(lambda rank, world_size: os.environ["CUDA_VISIBLE_DEVICES"], show_output=False)
    assert seen == ["", ""] and os.environ["CUDA_VISIBLE_DEVICES"] == "0"


def test_no_rank_is_a_fork_of_the_caller():
    """A rank's parent is the fork server, and nothing the caller made at run time (a module
    it registered) is in a rank; what the function uses travels with it."""
    sys.modules["made_by_the_caller"] = type(sys)("made_by_the_caller")
    try:
        secret = 41

        def where_am_i(rank, world_size):
            parent = psutil.Process(os.getpid()).parent()
            return parent.pid, " ".join(parent.cmdline()), "made_by_the_caller" in sys.modules, secret + 1

        results = run_ranks(where_am_i, show_output=False)
    finally:
        del sys.modules["made_by_the_caller"]
    (server, command, inherited, answer), *_ = results
    assert {r[0] for r in results} == {server} and server != os.getpid()
    assert "multiprocessing.forkserver" in command
    assert server in [p.pid for p in helper_processes()]
    assert not any(r[2] for r in results) and answer == 42


def test_a_rank_sees_the_callers_environment_and_folder_at_the_call(tmp_path, monkeypatch):
    run_ranks(sum_of_ranks, show_output=False)  # the server is running before the change
    monkeypatch.setenv("SET_AFTER_THE_SERVER_STARTED", "yes")
    monkeypatch.chdir(tmp_path)
    seen = run_ranks(lambda rank, world_size: (os.environ.get("SET_AFTER_THE_SERVER_STARTED"), os.getcwd()))
    assert seen == [("yes", str(tmp_path))] * 2


def test_what_cannot_travel_is_a_clear_error_before_any_rank_starts():
    lock = threading.Lock()
    with pytest.raises(LaunchError, match=r"uses_a_lock \(or its arguments\) cannot be sent to the ranks.*a lock"):

        def uses_a_lock(rank, world_size):
            with lock:
                return rank

        run_ranks(uses_a_lock)
    assert no_children_left()


NOTEBOOK_CELLS = [
    "import os, torch, torch.distributed as dist\nfrom coursekit.ranks import run_ranks\nscale = 3.0",
    # A class and a function defined in cells, a global of the notebook, backward in the
    # kernel first: what pickle (by name) and a fork (after backward) cannot do.
    "class Doubler(torch.nn.Module):\n    def forward(self, x):\n        return 2 * x * scale\n\n"
    "def on_rank(rank, world_size):\n    t = Doubler()(torch.tensor([float(rank + 1)]))\n"
    "    dist.all_reduce(t)\n    return t.item(), os.getppid() != kernel\n\n"
    "kernel = os.getpid()\ntorch.ones(1, requires_grad=True).sum().backward()\n"
    "print(run_ranks(on_rank), pickle_fails)",
]


def test_a_function_and_a_class_defined_in_notebook_cells_run_on_the_ranks(tmp_path):
    from nbclient import NotebookClient

    cells = [
        "import pickle, subprocess, sys\ndef f(): pass\n"
        "pickle_fails = subprocess.run([sys.executable, '-c', 'import pickle, sys; "
        "pickle.loads(sys.stdin.buffer.read())'], input=pickle.dumps(f), capture_output=True).returncode != 0",
        *NOTEBOOK_CELLS,
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    # (coalesced: a busy kernel may send one print's text and its newline as two messages)
    NotebookClient(
        nb, timeout=120, kernel_name="python3", coalesce_streams=True, resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    assert nb.cells[-1].outputs[-1]["text"] == "[(18.0, True), (18.0, True)] True\n"


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
