"""Launch a script under torchrun from a notebook: output streamed into the cell, a time
limit, no process left behind, and one clear error when it goes wrong.

torchrun starts one fresh Python per rank and puts RANK, LOCAL_RANK, WORLD_SIZE,
MASTER_ADDR and MASTER_PORT in each one's environment. Started from a notebook with a
bare ``subprocess.run``, three things go wrong:

- a rank that waits for a collective another rank never joins hangs the cell forever;
- stopping the cell stops torchrun at best: torchrun starts each rank in a session of
  its own, so the ranks are not in torchrun's process group and outlive it as orphans
  that hold CPU and ports;
- a failure prints the traceback of every rank (the healthy ones too: "Connection closed
  by peer") and torchrun's own, and the line that matters is somewhere in the middle.

``torchrun()`` streams the ranks' lines as they come, stops the whole run on a timeout,
a failure or an interrupt (SIGTERM to torchrun, which stops its ranks and reaps them;
SIGKILL to whatever is left), and raises one ``LaunchError`` naming the rank that failed
first or the ranks still running at the timeout, with their last lines.
"""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO

import psutil

TAIL = 12  # lines of a rank's output quoted in an error
STOP_GRACE = 15.0  # seconds torchrun gets to stop and reap its ranks before SIGKILL
RANK_PREFIX = re.compile(r"^\[\w+?(\d+)\]:")  # torchrun --tee marks each line "[default0]:"
ROOT_CAUSE = re.compile(r"Root Cause.*?rank\s*:\s*(\d+).*?exitcode\s*:\s*(-?\d+)", re.DOTALL)


class LaunchError(RuntimeError):
    """A distributed run failed, hung or could not start. ``reason`` is "failed" or
    "timeout"; ``ranks`` the ranks it blames (the first to fail, or those still running
    at the timeout); the message says what happened and quotes their last lines."""

    def __init__(self, message: str, *, reason: str, ranks: Sequence[int] = ()) -> None:
        super().__init__(message)
        self.reason = reason
        self.ranks = list(ranks)


def torchrun(
    script: str | Path,
    *args: str,
    nproc: int = 2,
    timeout: float = 180.0,
    env: dict[str, str] | None = None,
    echo: bool = True,
) -> str:
    """Run ``torchrun --standalone --nproc-per-node=NPROC script *args`` and return what
    the ranks printed, each line marked with its rank as torchrun marks it
    ("[default0]:..."). With ``echo``, lines are printed as they arrive.

    ``--standalone`` lets torchrun pick a free port itself, so two runs at once never
    collide. ``timeout`` (seconds) bounds the whole run, start-up included: generous,
    because it only has to catch a hang. Raises LaunchError if a rank fails or the run
    outlives ``timeout``; a KeyboardInterrupt (the notebook's stop button) stops every
    process before it propagates.
    """
    script = Path(script)
    if not script.is_file():
        raise FileNotFoundError(f"no script {script} (relative paths start in {Path.cwd().name}/)")
    if not (isinstance(nproc, int) and nproc >= 1):
        raise ValueError(f"nproc must be a positive int, not {nproc!r}")
    env = {**os.environ, **(env or {})}
    env.setdefault("OMP_NUM_THREADS", "1")  # what torchrun would set, minus its warning
    env["PYTHONUNBUFFERED"] = "1"  # lines reach the notebook as they are printed
    with tempfile.TemporaryDirectory(prefix="torchrun-logs-") as logs:
        command = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            f"--nproc-per-node={nproc}",
            "--tee=3",
            f"--log-dir={logs}",
            str(script),
            *map(str, args),
        ]
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True
        )
        lines: list[str] = []
        try:
            _follow(process, lines, time.monotonic() + timeout, echo)
        except _TimedOut:
            running = _ranks_running(process)
            _stop(process)
            raise _timeout_error(script, timeout, running, lines) from None
        except BaseException:
            _stop(process)
            raise
    rank_lines = [line for line in lines if RANK_PREFIX.match(line)]
    if process.returncode != 0:
        raise _failure_error(script, process.returncode, lines)
    return "".join(line + "\n" for line in rank_lines)


class _TimedOut(Exception):
    pass


_MARK = re.compile(r"\[(\w+?)\d+\]:")  # torchrun's mark of a rank's line: "[default0]:", its role and rank


class Rejoined:
    """torchrun's ``--tee`` copies each rank's log a read at a time, marking each read. A rank
    prints a line in two writes (its text, then the newline: PYTHONUNBUFFERED writes each at
    once), so a read between them copies ``[default0]:text`` with no newline, and the next
    one ``[default0]:`` and the newline: the pipe shows ``[default0]:text[default0]:``, or
    another rank's line after ``text``. Each rank's pieces are joined again into its line."""

    def __init__(self) -> None:
        self._pending: dict[str, str] = {}  # a rank's mark -> its line's text read so far

    def lines(self, raw: str) -> list[str]:
        """The whole lines in one line of torchrun's output (none while a rank's is unfinished)."""
        first = _MARK.match(raw)
        if first is None:
            return [raw]  # torchrun's own words
        # marks of the same role only: a rank's own text may hold marks of another ("[rank1]:" in
        # torch's tracebacks)
        same = re.compile(rf"\[{re.escape(first.group(1))}\d+\]:")
        starts = [m.start() for m in same.finditer(raw)]
        pieces = [raw[a:b] for a, b in zip(starts, [*starts[1:], len(raw)], strict=True)]
        whole = []
        for k, piece in enumerate(pieces):
            mark = piece[: same.match(piece).end()]  # type: ignore[union-attr]
            text = self._pending.pop(mark, "") + piece[len(mark) :]
            if k < len(pieces) - 1:  # another mark follows it: its newline has not come yet
                self._pending[mark] = text
            else:
                whole.append(mark + text)
        return whole

    def rest(self) -> list[str]:
        """The unfinished lines, once the output has ended."""
        rest = [mark + text for mark, text in self._pending.items()]
        self._pending.clear()
        return rest


def _read_lines(stdout: IO[str], arrived: queue.Queue[str | None]) -> None:
    """Each whole line of torchrun's output onto ``arrived`` (a rank's pieces joined), then None."""
    rejoined = Rejoined()
    for line in stdout:
        for whole in rejoined.lines(line.rstrip("\n")):
            arrived.put(whole)
    for whole in rejoined.rest():
        arrived.put(whole)
    arrived.put(None)


def _follow(process: subprocess.Popen[str], lines: list[str], deadline: float, echo: bool) -> None:
    """Collect (and echo) torchrun's output until it exits; _TimedOut at the deadline.
    A thread reads the pipe so that this thread can watch the clock, and so that a
    KeyboardInterrupt lands here, where the caller can stop the run."""
    arrived: queue.Queue[str | None] = queue.Queue()
    stdout = process.stdout
    if stdout is None:
        raise ValueError("_follow reads torchrun's output: start it with stdout=subprocess.PIPE")

    threading.Thread(target=_read_lines, args=(stdout, arrived), daemon=True).start()
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise _TimedOut
        try:
            line = arrived.get(timeout=min(left, 0.5))
        except queue.Empty:
            continue
        if line is None:
            break
        lines.append(line)
        if echo and RANK_PREFIX.match(line):
            print(line, flush=True)
    process.wait()


def _ranks_running(process: subprocess.Popen) -> list[int]:
    """The ranks (read from each worker's environment) of torchrun's live workers."""
    ranks: list[int] = []
    try:
        children = psutil.Process(process.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return ranks
    for child in children:
        try:
            rank = child.environ().get("RANK")
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
        if rank is not None and child.status() != psutil.STATUS_ZOMBIE:
            ranks.append(int(rank))
    return sorted(set(ranks))


def _stop(process: subprocess.Popen) -> None:
    """Stop torchrun and every process under it, and reap torchrun.

    SIGTERM first: torchrun forwards it to its ranks and reaps them, so nothing is left
    as a zombie. Whatever is still alive after STOP_GRACE seconds (torchrun itself
    stuck, a rank ignoring SIGTERM) gets SIGKILL. The ranks are found before anything is
    signalled: once torchrun is gone they are no longer its children."""
    try:
        tree = [psutil.Process(process.pid), *psutil.Process(process.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        tree = []
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    _, alive = psutil.wait_procs(tree, timeout=STOP_GRACE)
    for survivor in alive:
        try:
            survivor.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=STOP_GRACE)
    process.wait()


def _tail(lines: list[str], rank: int | None = None) -> str:
    """The last TAIL lines of one rank (rank given) or of torchrun's whole output."""
    if rank is not None:
        lines = [line for line in lines if (m := RANK_PREFIX.match(line)) and int(m.group(1)) == rank]
    return "\n".join("    " + line for line in lines[-TAIL:]) or "    (nothing)"


def _timeout_error(script: Path, timeout: float, running: list[int], lines: list[str]) -> LaunchError:
    if running:
        names = " and ".join(f"rank {r}" for r in running)
        quoted = "\n".join(f"  last lines of rank {r}:\n{_tail(lines, r)}" for r in running)
        what = (
            f"{names} still running. A rank that waits in a collective (or a recv) that another "
            "rank never reaches waits forever: check that every rank runs the same collectives "
            f"in the same order.\n{quoted}"
        )
    else:
        what = f"no rank had started yet; torchrun's last lines:\n{_tail(lines)}"
    return LaunchError(
        f"torchrun {script.name} timed out after {timeout:g} s and was stopped; {what}", reason="timeout", ranks=running
    )


def _failure_error(script: Path, returncode: int, lines: list[str]) -> LaunchError:
    found = ROOT_CAUSE.search("\n".join(lines))
    if found is None:  # torchrun failed before starting its ranks (a bad argument, say)
        return LaunchError(
            f"torchrun {script.name} failed (exit code {returncode}) before any rank ran:\n{_tail(lines)}",
            reason="failed",
        )
    rank, code = int(found.group(1)), int(found.group(2))
    how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
    return LaunchError(
        f"torchrun {script.name} failed: rank {rank} {how}, the first rank to fail "
        f"(the other ranks were stopped). Its last lines:\n{_tail(lines, rank)}",
        reason="failed",
        ranks=[rank],
    )
