"""Run a function on several ranks, from a notebook: CPU processes joined by gloo, started
by a fork server, with the function sent by value.

The chapter's small demos and the exercises' checks run a function defined in a cell on
2 (or 4) real processes. The usual ways to do that break in a notebook:

- ``torch.multiprocessing.spawn`` (and multiprocessing's "spawn" start method) starts a
  fresh interpreter and sends it the function *by name*, ``__main__.f``, to import. A
  notebook's ``__main__`` cannot be imported, so a function defined in a cell fails with
  "Can't get attribute 'f' on <module '__main__'>"; every rank also pays the import of
  torch, seconds for a three-line demo (torchrun, see launch.py, is the same for scripts).
- forking the kernel copies it, function and all, but a fork of a process that has used
  CUDA cannot use CUDA ("Cannot re-initialize CUDA in forked subprocess"), and on a
  machine with a GPU autograd starts its device threads at the first backward, after
  which no forked child may run backward ("Unable to handle autograd's threading in
  combination with fork-based multiprocessing"). On a GPU machine, forking the kernel
  cannot work, whatever the cells do.

So the kernel never forks. multiprocessing's *fork server* is a clean Python started once,
the first time ranks are needed, that imports torch (and what DDP and FSDP import, which
takes seconds) and then never runs anything else: it never touches CUDA, never runs
backward, holds no thread. Each rank is a fork of *that* process, so it starts in a
fraction of a second with torch already imported. The function and its arguments travel
by value, pickled by cloudpickle, which sends the code of functions and classes defined in
the notebook with the globals they use (functions of importable modules travel by name). A
rank also gets the kernel's environment variables, working folder and ``sys.path`` as they
are at the call; nothing else of the kernel (torch's seed and settings start afresh, as in
any new process).

The ranks are CPU processes joined by gloo, on a GPU machine too: the GPUs are hidden from
the server and the ranks (``CUDA_VISIBLE_DEVICES=""``). Several ranks on one GPU would
share it, and FSDP would put every rank's shards on it; hidden, a cell gives the same
result on a laptop and on a GPU server. GPU code runs as a script under torchrun
(launch.py), one GPU per rank.

What else is arranged here:

- a rank writes its output to a file of its own, shown afterwards rank by rank, and leaves
  with os._exit;
- nothing is left behind: when a rank fails, when time is up (a deadlock), or when the
  cell is interrupted, every rank is killed and reaped, and one LaunchError says which
  rank and why. A rank also stops by itself if the kernel dies (its pipe to the kernel
  closes) or, stuck in a collective, when gloo's own time limit runs out (set to twice
  ``timeout`` and more, so that it never beats run_ranks' own and blurs its message).
  The fork server and multiprocessing's resource tracker stay, idle, for the next call
  (``helper_processes`` names them), and end with the kernel.
"""

from __future__ import annotations

import multiprocessing as mp
import multiprocessing.forkserver
import os
import pickle
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from datetime import timedelta
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any, cast

import cloudpickle
import psutil
import torch
import torch.distributed as dist

from coursekit.launch import TAIL, LaunchError

RELEASE = "release"  # what the parent sends each rank once every rank has returned
# What the fork server imports once, so that no rank imports it again: torch, and what DDP
# (torch._dynamo, about 800 modules) and FSDP import the first time a process builds one.
PRELOAD = ["torch", "torch.distributed", "torch._dynamo", "torch.nn.parallel", "torch.distributed.fsdp"]
# gloo's words when the rank at the other end of a connection has gone ("Connection closed by
# peer", or "Read error ...: Connection reset by peer" when it died mid-message): a consequence
# of another rank's failure, reported only if no rank says what went wrong within PEER_GRACE s.
CLOSED_BY_PEER = ("closed by peer", "reset by peer")
PEER_GRACE = 2.0
CPU_ONLY = {"CUDA_VISIBLE_DEVICES": ""}  # the environment that hides every GPU from a process
# The command lines of multiprocessing's own helpers, which outlive a call by design.
HELPERS = ("from multiprocessing.forkserver import main", "from multiprocessing.resource_tracker import main")


def run_ranks(
    fn: Callable[..., Any], world_size: int = 2, *, args: tuple = (), timeout: float = 30.0, show_output: bool = True
) -> list[Any]:
    """Run ``fn(rank, world_size, *args)`` on ``world_size`` processes that share a gloo
    process group (``torch.distributed`` is initialised in each, so ``dist.all_reduce``
    and friends just work); return what each rank returned, in rank order.

    ``fn`` and ``args`` are sent to the ranks by value (cloudpickle): a function or class
    defined in a notebook cell works, with the globals it uses as they are now.

    Ranks stay alive until all have returned, so a rank that finishes early never pulls
    the connection from under one that is still talking to it. What each rank printed is
    shown afterwards, rank by rank, every line marked ``[rank r]`` (``show_output``).

    Raises LaunchError when a rank raises or dies (the others are stopped at once) or when
    not every rank has returned after ``timeout`` seconds: a deadlock, since these
    functions are small.
    """
    if not callable(fn):
        raise TypeError(f"run_ranks runs a function: fn(rank, world_size, ...), not {type(fn).__name__}")
    if not (isinstance(world_size, int) and world_size >= 1):
        raise ValueError(f"world_size must be a positive int, not {world_size!r}")
    payload = _pickled(fn, args)
    context = _fork_server()
    with tempfile.TemporaryDirectory(prefix="ranks-") as folder:
        pipes = [context.Pipe() for _ in range(world_size)]
        logs = [Path(folder, f"rank{rank}.log") for rank in range(world_size)]
        where = _Surroundings({**os.environ, **CPU_ONLY}, os.getcwd())
        processes = []
        try:
            for rank, (_, child_end) in enumerate(pipes):
                process = context.Process(
                    target=_rank_main,
                    name=f"rank {rank}",
                    daemon=True,
                    args=(payload, rank, world_size, where, Path(folder, "store"), logs[rank], child_end, timeout),
                )
                process.start()
                processes.append(process)
                child_end.close()  # the rank has its own copy: the kernel's death now closes its pipe
            results = _collect(fn, [parent_end for parent_end, _ in pipes], processes, logs, timeout)
            for parent_end, _ in pipes:
                parent_end.send(RELEASE)
            for process in processes:
                process.join(timeout)
        finally:
            _stop(processes)
        if show_output:
            for rank, log in enumerate(logs):
                for line in log.read_text(errors="replace").splitlines():
                    print(f"[rank {rank}] {line}")
    return results


def run_ranks_for_check(fn: Callable[..., Any], what: str, world_size: int = 2, timeout: float = 10.0) -> list[Any]:
    """``run_ranks`` for an exercise's check cell: the ranks' output is not shown, and a
    failure or a deadlock of the learner's function ``what`` becomes an AssertionError that
    says, in the learner's terms, what happened (the check then fails with it). A check's
    ranks run a few small tensors through an answer: well under a second on a busy machine,
    so ``timeout`` is taken as a deadlock and costs a deadlocked answer no more than that."""
    try:
        return run_ranks(fn, world_size, timeout=timeout, show_output=False)
    except LaunchError as error:
        if error.reason == "timeout":
            raise AssertionError(
                f"{what} did not finish within {timeout:g} s on {world_size} ranks: a deadlock. Some rank "
                "waits for a message or a collective that never comes. With gloo a blocking dist.send "
                "returns only once the matching dist.recv has taken the data, so two ranks that both send "
                "first (or both recv first) wait for each other forever: order the calls, or use "
                "dist.isend/dist.irecv."
            ) from None
        raise AssertionError(f"{what} failed on {world_size} ranks: {str(error).splitlines()[0]}") from None


def helper_processes(process: psutil.Process | None = None) -> list[psutil.Process]:
    """The processes that run_ranks leaves running on purpose below ``process`` (this one
    by default): multiprocessing's fork server and its resource tracker, idle until the
    next call. Every other process below the kernel, a rank (a child of the fork server,
    with the same command line) above all, would be a leftover."""
    found = []
    for child in (process or psutil.Process()).children():
        try:
            if any(helper in " ".join(child.cmdline()) for helper in HELPERS):
                found.append(child)
        except (psutil.NoSuchProcess, psutil.ZombieProcess):  # it ended while we looked
            continue
    return found


class _Surroundings:
    """What a rank takes over from the kernel at the call: its environment variables and
    working folder (the fork server has those of its own start)."""

    def __init__(self, environ: dict[str, str], cwd: str) -> None:
        self.environ = environ
        self.cwd = cwd

    def enter(self) -> None:
        os.environ.clear()
        os.environ.update(self.environ)
        try:
            os.chdir(self.cwd)
        except OSError:  # the kernel's folder is gone: the rank runs where the server started
            pass


def _pickled(fn: Callable[..., Any], args: tuple) -> bytes:
    """fn and args by value; a clear error, in the kernel, for what cannot travel."""
    try:
        return cloudpickle.dumps((fn, args))
    except Exception as error:  # noqa: BLE001 - any pickling failure is reported the same way
        name = getattr(fn, "__name__", "the function")
        raise LaunchError(
            f"{name} (or its arguments) cannot be sent to the ranks: {type(error).__name__}: {error}. "
            "run_ranks sends the function, the globals it uses and its arguments to each rank by value; "
            "an open file, a lock, a generator or a live process group cannot travel. Create such objects "
            "inside the function, on each rank.",
            reason="failed",
        ) from None


def _fork_server() -> Any:
    """multiprocessing's forkserver context, its server running, started (if it is not) with
    the GPUs hidden and PRELOAD imported (a server already running keeps what it has)."""
    mp.set_forkserver_preload(PRELOAD)
    saved = {name: os.environ.get(name) for name in CPU_ONLY}
    os.environ.update(CPU_ONLY)  # the server is started with this process's environment
    try:
        multiprocessing.forkserver.ensure_running()
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name)
            else:
                os.environ[name] = value
    return mp.get_context("forkserver")


def _rank_main(
    payload: bytes,
    rank: int,
    world_size: int,
    where: _Surroundings,
    store: Path,
    log: Path,
    conn: Connection,
    timeout: float,
) -> None:
    """One rank, in a fork of the fork server: output to its own file, the kernel's
    surroundings, join the group, run fn, send back what it returned (or the error), wait
    to be released."""
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115 - lives as long as the rank
    sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
    where.enter()
    torch.set_num_threads(1)  # ranks share the machine's cores
    try:
        fn, args = pickle.loads(payload)
        dist.init_process_group(
            "gloo",
            init_method=store.as_uri(),
            rank=rank,
            world_size=world_size,
            timeout=timedelta(seconds=2 * timeout + 10),
        )
        outcome = ("returned", fn(rank, world_size, *args))
    except BaseException as error:  # noqa: BLE001 - reported to the parent, which raises
        # The traceback from fn down (this frame is of no interest to whoever reads it).
        here = error.__traceback__  # never None for a caught exception
        traceback.print_exception(type(error), error, here.tb_next if here is not None else None)
        outcome = ("raised", f"{type(error).__name__}: {error}".strip())
    sys.stdout.flush()
    sys.stderr.flush()
    try:  # plain pickle: multiprocessing's would share tensors through this exiting process
        message = pickle.dumps(outcome)
    except Exception as error:  # noqa: BLE001 - a return value that cannot be pickled
        message = pickle.dumps(("raised", f"its return value could not be sent back: {error}"))
    try:
        conn.send_bytes(message)
    except BrokenPipeError:
        os._exit(1)  # the kernel is gone: nobody to report to
    conn.poll(timeout)  # the parent's release, or its death (end of file), or time up
    os._exit(0)


def _collect(
    fn: Callable[..., Any], conns: list[Connection], processes: Sequence[BaseProcess], logs: list[Path], timeout: float
) -> list[Any]:
    """Every rank's return value; LaunchError on the first failure or at the deadline."""
    name = getattr(fn, "__name__", "the function")
    deadline = time.monotonic() + timeout
    waiting = dict(zip(conns, range(len(conns)), strict=True))  # connection -> its rank
    results: dict[int, Any] = {}
    while waiting:
        left = deadline - time.monotonic()
        if left <= 0:
            late = sorted(waiting.values())
            done = sorted(results)
            names = " and ".join(f"rank {r}" for r in late)
            finished = f" ({', '.join(f'rank {r}' for r in done)} returned)" if done else ""
            quoted = "".join(f"\n  last lines of rank {r}:\n{_tail(logs[r])}" for r in late if _tail(logs[r]))
            raise LaunchError(
                f"{name} on {len(conns)} ranks did not finish within {timeout:g} s: {names} still running"
                f"{finished}. A deadlock: a rank waits for a message or a collective that never comes. "
                "Every rank must call the same collectives in the same order, and every recv needs a "
                f"matching send. The ranks were stopped.{quoted}",
                reason="timeout",
                ranks=late,
            )
        for ready in wait(list(waiting), timeout=left):
            # wait() returns some of the objects it was given (typeshed types them as any
            # connection, socket or file descriptor), so these are the ranks' Connections.
            conn = cast(Connection, ready)
            rank = waiting.pop(conn)
            kind, value = _receive(conn)
            if kind == "returned":
                results[rank] = value
                continue
            if kind == "raised" and _cut_off(value):
                # The rank that failed first closed this one's connection: its own report is
                # usually moments away, and it is the one that says what went wrong.
                rank, kind, value = _first_cause(waiting) or (rank, kind, value)
            raise _failure(name, rank, kind, value, processes, logs)
    return [results[rank] for rank in range(len(conns))]


def _cut_off(message: str) -> bool:
    """Whether a rank's error says only that another rank went away."""
    return any(words in message for words in CLOSED_BY_PEER)


def _receive(conn: Connection) -> tuple[str, Any]:
    """What a rank sent: ("returned", value), ("raised", message), or ("died", None) when its
    pipe closed without a word."""
    try:
        kind, value = pickle.loads(conn.recv_bytes())
    except EOFError:
        return "died", None
    return kind, value


def _first_cause(waiting: dict[Connection, int]) -> tuple[int, str, Any] | None:
    """Within PEER_GRACE seconds, a rank (of those still awaited) that died or raised an error
    of its own, not a closed connection: (rank, kind, value); None if none did."""
    deadline = time.monotonic() + PEER_GRACE
    while waiting and (left := deadline - time.monotonic()) > 0:
        for ready in wait(list(waiting), timeout=left):
            conn = cast(Connection, ready)
            rank = waiting.pop(conn)
            kind, value = _receive(conn)
            if kind == "died" or (kind == "raised" and not _cut_off(value)):
                return rank, kind, value
    return None


def _failure(
    name: str, rank: int, kind: str, value: Any, processes: Sequence[BaseProcess], logs: list[Path]
) -> LaunchError:
    """The LaunchError for a rank that died or raised."""
    if kind == "died":
        processes[rank].join(1)
        code = processes[rank].exitcode
        how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited (code {code})"
        return LaunchError(
            f"rank {rank} died while running {name}: its process {how} without "
            f"returning. The other ranks were stopped.{_quote(logs[rank])}",
            reason="failed",
            ranks=[rank],
        )
    hint = (
        ' (a rank that fails makes the ranks talking to it fail too, with "Connection closed by peer" '
        'or "reset by peer": look for the first error)'
        if _cut_off(value)
        else ""
    )
    return LaunchError(
        f"rank {rank} raised {value}{hint}. The other ranks were stopped.{_quote(logs[rank])}",
        reason="failed",
        ranks=[rank],
    )


def _tail(log: Path) -> str:
    lines = log.read_text(errors="replace").splitlines() if log.exists() else []
    return "\n".join("    " + line for line in lines[-TAIL:])


def _quote(log: Path) -> str:
    tail = _tail(log)
    return f"\n  its last lines:\n{tail}" if tail else ""


def _stop(processes: Sequence[BaseProcess]) -> None:
    """Kill the ranks still alive and reap every one: no orphan, no zombie."""
    for process in processes:
        if process.is_alive():
            process.kill()
    for process in processes:
        process.join()
