"""Run a function on several ranks, from a notebook: forked CPU processes joined by gloo.

The chapter's small demos and the exercises' checks run a function defined in a cell on
2 (or 4) real processes. The usual ways to do that break in a notebook:

- ``torch.multiprocessing.spawn`` (and multiprocessing's "spawn" start method) starts a
  fresh interpreter that imports the function by name from ``__main__``. A script's
  ``__main__`` is re-imported, so its top-level code runs again in every child (hence
  ``if __name__ == "__main__":``); a notebook's cannot be imported at all, so a function
  defined in a cell fails with "Can't get attribute 'f' on <module '__main__'>".
- torchrun starts fresh interpreters too: right for a script (see launch.py), but every
  rank pays the import of torch, seconds for a three-line demo.

A forked child is a copy of the kernel: the function, and everything it uses, is already
there; nothing is imported and the function is never pickled (only return values travel
back, pickled). What fork costs, and how it is paid here:

- a child cannot use CUDA once its parent has initialised it ("Cannot re-initialize CUDA
  in forked subprocess"), so run_ranks is CPU-only (gloo) and refuses to fork from a
  process where CUDA is initialised;
- the child copies a busy process whose other threads are not copied: it runs torch with
  one thread, writes its output to a file of its own instead of the kernel's streams
  (shown afterwards, rank by rank), and leaves with os._exit, never running the
  kernel's exit handlers;
- nothing is left behind: when a rank fails, when time is up (a deadlock), or when the
  cell is interrupted, every rank is killed and reaped, and one LaunchError says which
  rank and why. A rank also stops by itself if the kernel dies (its pipe to the kernel
  closes) or, stuck in a collective, when gloo's own time limit runs out (set to twice
  ``timeout`` and more, so that it never beats run_ranks' own and blurs its message).
"""

from __future__ import annotations

import multiprocessing as mp
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

import torch
import torch.distributed as dist

from coursekit.launch import TAIL, LaunchError

RELEASE = "release"  # what the parent sends each rank once every rank has returned


def run_ranks(
    fn: Callable[..., Any], world_size: int = 2, *, args: tuple = (), timeout: float = 30.0, show_output: bool = True
) -> list[Any]:
    """Run ``fn(rank, world_size, *args)`` on ``world_size`` forked processes that share a
    gloo process group (``torch.distributed`` is initialised in each, so ``dist.all_reduce``
    and friends just work); return what each rank returned, in rank order.

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
    if torch.cuda.is_initialized():
        raise LaunchError(
            'CUDA is initialised in this process, and a forked process cannot use it ("Cannot re-initialize '
            'CUDA in forked subprocess"). run_ranks is for CPU code with gloo; run GPU code as a script '
            "under torchrun (coursekit.launch.torchrun), whose ranks are fresh processes.",
            reason="failed",
        )
    _import_once_for_every_rank()
    context = mp.get_context("fork")
    with tempfile.TemporaryDirectory(prefix="ranks-") as folder:
        pipes = [context.Pipe() for _ in range(world_size)]
        logs = [Path(folder, f"rank{rank}.log") for rank in range(world_size)]
        processes = []
        try:
            for rank in range(world_size):
                process = context.Process(
                    target=_rank_main,
                    name=f"rank {rank}",
                    daemon=True,
                    args=(fn, rank, world_size, args, Path(folder, "store"), logs[rank], pipes, timeout),
                )
                process.start()
                processes.append(process)
            for _, child_end in pipes:
                child_end.close()
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


def _import_once_for_every_rank() -> None:
    """What a forked rank imports dies with it, so every rank of every run would import it
    again. DDP imports torch._dynamo (about 800 modules: seconds) the first time a process
    builds one; imported here, in the parent, once, every rank inherits it."""
    import torch._dynamo  # noqa: F401


def _rank_main(
    fn: Callable[..., Any],
    rank: int,
    world_size: int,
    args: tuple,
    store: Path,
    log: Path,
    pipes: list[tuple[Connection, Connection]],
    timeout: float,
) -> None:
    """One rank, in the forked child: output to its own file, join the group, run fn,
    send back what it returned (or the error), wait to be released."""
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    sys.stdout = open(1, "w", buffering=1, closefd=False)  # not the kernel's streams
    sys.stderr = open(2, "w", buffering=1, closefd=False)
    conn = pipes[rank][1]
    for other, (parent_end, child_end) in enumerate(pipes):  # so that each pipe has one child end:
        parent_end.close()  # the kernel's death closes this rank's pipe
        if other != rank:
            child_end.close()
    torch.set_num_threads(1)
    try:
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
            try:
                kind, value = pickle.loads(conn.recv_bytes())
            except EOFError:
                processes[rank].join(1)
                code = processes[rank].exitcode
                how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited (code {code})"
                raise LaunchError(
                    f"rank {rank} died while running {name}: its process {how} without "
                    f"returning. The other ranks were stopped.{_quote(logs[rank])}",
                    reason="failed",
                    ranks=[rank],
                ) from None
            if kind == "raised":
                hint = (
                    ' (a rank that fails makes the ranks talking to it fail too, with "Connection '
                    'closed by peer": look for the first error)'
                    if "closed by peer" in value
                    else ""
                )
                raise LaunchError(
                    f"rank {rank} raised {value}{hint}. The other ranks were stopped.{_quote(logs[rank])}",
                    reason="failed",
                    ranks=[rank],
                )
            results[rank] = value
    return [results[rank] for rank in range(len(conns))]


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
