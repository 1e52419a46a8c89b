"""One grading run at a time per output: a feedback folder, a report, a gradebook.

Two runs writing pages into one folder at once (two instructors, or one in two terminals)
leave a folder of pages from either run, each replacing the other's, and each run's
"pages of an earlier run" warning names the other's pages. Two runs writing one report or
gradebook (two sections' commands with the same ``--gradebook grades.csv``) leave the
one that ends last, and each keeps the other's as its "earlier" version. So a run holds
a lock on each output from before it grades until that output is written: the folder's
lock file ``.grader-lock`` (``folder_lock``), a file's ``.grades.csv.grader-lock`` beside
it (``file_lock``; beside the file the path leads to, so that ``./grades.csv`` and a link
to it are one lock). A second run stops at once, naming the run that holds it (its pid,
host and start time).

The lock is a file created only where none is (a hard link of a file already written,
so that no run ever reads half a lock), and removed when the run ends, however it ends
short of being killed. A killed run's lock stays behind; the next run on the same host
sees that its process is gone (or that its pid now belongs to a later process) and takes
it over, saying so. A lock of a run on another host cannot be checked from here: it is
refused, with how to remove it once that run is known to be over.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil

from grader.host.errors import GraderError
from grader.host.files import real_path

LOCK_NAME = ".grader-lock"
TRIES = 3  # a lock released or taken over while this run looked at it: look again


@dataclass(frozen=True)
class Holder:
    """The run that holds a lock: enough to find its process, and to tell the instructor."""

    pid: int
    host: str
    started: str  # when the run started, local time, for the instructor
    since: float  # when its process started (psutil): a later process given the same pid differs

    def __str__(self) -> str:
        return f"pid {self.pid} on {self.host}, started {self.started}"

    def gone(self) -> bool:
        """Whether this run has ended: on this host, no process has its pid, or a later one
        does. On another host that cannot be known, and it is taken to be running."""
        if self.host != socket.gethostname():
            return False
        try:
            return abs(psutil.Process(self.pid).create_time() - self.since) > 1.0
        except psutil.NoSuchProcess:
            return True
        except psutil.Error:  # a process of another user: alive
            return False


def this_run() -> Holder:
    return Holder(
        os.getpid(),
        socket.gethostname(),
        time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        psutil.Process().create_time(),
    )


@contextmanager
def folder_lock(folder: Path, option: str = "--feedback") -> Iterator[None]:
    """Hold ``folder``'s lock while the block runs (``option``: how the instructor named the
    folder, for the messages); GraderError at once when another run holds it. A folder made
    only to hold the lock (with its parents) is removed again when the run wrote nothing into it."""
    folder = Path(folder)
    with _held(folder / LOCK_NAME, folder, option, "writing into this folder"):
        yield


@contextmanager
def file_lock(path: Path, option: str) -> Iterator[None]:
    """Hold the lock of the file at ``path`` (a report or gradebook; ``option``: how the
    instructor named it) while the block runs, as folder_lock does a folder's: the lock is
    ``.<name>.grader-lock`` beside the file the path leads to (links followed)."""
    target = real_path(Path(path))
    with _held(target.with_name(f".{target.name}{LOCK_NAME}"), Path(path), option, "writing this file"):
        yield


@contextmanager
def _held(lock: Path, output: Path, option: str, doing: str) -> Iterator[None]:
    """Hold ``lock``, the lock of ``output`` (``doing``: what a run holding it does, for the
    messages), making its folder where it is missing and removing what it made once the
    block has run, where the run wrote nothing into it."""
    made = [where for where in (lock.parent, *lock.parent.absolute().parents) if not where.exists()]
    me = this_run()
    try:
        try:
            lock.parent.mkdir(parents=True, exist_ok=True)
            _acquire(lock, me, f"{option} {output}", doing)
        except OSError as error:
            raise GraderError(f"{option} {output}: cannot lock it ({error.strerror or error}).") from None
        try:
            yield
        finally:
            if _read(lock) == me:  # (never another run's, had someone removed ours by hand)
                lock.unlink(missing_ok=True)
    finally:
        _remove_if_empty(made)


def _remove_if_empty(folders: list[Path]) -> None:
    """Remove ``folders``, the deepest first, as long as each is empty."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:  # not empty (pages written), or gone
            return


def _acquire(lock: Path, me: Holder, output: str, doing: str) -> None:
    """Create ``lock`` for ``me``, taking over a lock whose run is gone; GraderError when a
    live run holds it (``output``: the option and the path it locks, for the messages)."""
    for _ in range(TRIES):
        if _create(lock, me):
            return
        holder = _read(lock)
        if holder is None and lock.exists():
            raise GraderError(
                f"{output}: its lock {lock} is there but names no run (damaged, or written by hand). "
                f"If no grading run is {doing}, remove {lock} and grade again."
            )
        if holder is None:
            continue  # released meanwhile
        if not holder.gone():
            raise GraderError(_busy(lock, holder, output, doing))
        if _take_over(lock, holder):
            print(
                f"note: {output}: took over the lock of a grading run that ended without "
                f"releasing it ({holder}; killed, or its machine restarted)",
                file=sys.stderr,
            )
    raise GraderError(f"{output}: other grading runs keep taking its lock ({lock}); try again.")


def _busy(lock: Path, holder: Holder, output: str, doing: str) -> str:
    elsewhere = holder.host != socket.gethostname()
    other = "another folder" if doing.endswith("folder") else "another file"
    return (
        f"{output}: another grading run is {doing}: {holder} (its lock: {lock}). "
        f"Wait for it to end, or grade into {other}."
        + (
            f" That run is on another machine, so whether it still runs cannot be checked from here: if it is "
            f"over (its machine went down), remove {lock} and grade again."
            if elsewhere
            else ""
        )
    )


def _create(lock: Path, me: Holder) -> bool:
    """Create ``lock`` naming ``me``, whole, where there is none; False where there is."""
    text = json.dumps(asdict(me))
    fd, temp = tempfile.mkstemp(dir=lock.parent, prefix=f"{lock.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
        try:
            os.link(temp, lock)
        except FileExistsError:
            return False
        except OSError:  # a file system without hard links (FAT, some network shares)
            return _create_in_place(lock, text)
        return True
    finally:
        Path(temp).unlink(missing_ok=True)


def _create_in_place(lock: Path, text: str) -> bool:
    try:
        fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.write(text)
    return True


def _read(lock: Path) -> Holder | None:
    """The run ``lock`` names; None when there is no lock, or it names no run."""
    try:
        fields = json.loads(lock.read_text(encoding="utf-8"))
        return Holder(int(fields["pid"]), str(fields["host"]), str(fields["started"]), float(fields["since"]))
    except (OSError, ValueError, TypeError, KeyError):
        return None


def _take_over(lock: Path, holder: Holder) -> bool:
    """Remove the lock of ``holder``, a run that is gone: moved aside first, so that of two
    runs taking it over at once only one removes it, and never a lock a live run made
    meanwhile (put back). Whether this run removed it."""
    aside = lock.with_name(f"{lock.name}.stale-{os.getpid()}")
    try:
        os.replace(lock, aside)
    except FileNotFoundError:
        return False
    if _read(aside) != holder:  # a live run's, made after we looked: put it back
        try:
            os.link(aside, lock)
        except OSError:
            pass
        aside.unlink(missing_ok=True)
        return False
    aside.unlink(missing_ok=True)
    return True
