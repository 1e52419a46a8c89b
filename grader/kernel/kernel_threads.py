"""The kernel's own threads, started before the grader: watched like the threads started after.

threads.py hands every thread started after the setup a profile function that records into
the active Watch. The threads ipykernel and IPython start first run Python that an answer
can reach: ``io_loop.add_callback(fn)`` runs ``fn`` on the IOPub thread (or the Control or
Shell channel thread), a ``write`` put on ``sys.stdout`` runs on the thread that copies
what reaches file descriptor 1, a ``writeout_cache`` put on the history manager runs on
IPython's history thread. Work handed to them would run out of any record. On Python 3.11 a
profile function can only be set from inside the thread it profiles, so each of these
threads is asked, once, through the means its own loop offers, to set threads.py's profile
function itself. (The parent poller and the heartbeat call only os, time and zmq's C code:
nothing there an answer can replace unseen.)
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from functools import partial
from typing import Any

from grader.kernel import containment, threads

_SENTINEL = "\x00"  # one byte written to a watched file descriptor: its copying thread sets its profile
_WAIT = 2.0  # seconds each thread gets to set its profile (each is idle, waiting for work)
_REACHED: list[str] = []  # the threads that set their profile
_ASKED: list[bool] = []  # [True] once they were asked (once per process)


def watch_kernel_threads() -> list[str]:
    """Ask the kernel's own threads to profile themselves with threads.py's profile function;
    return the names of those reached (once per process: later calls return the same list)."""
    if _ASKED:
        return _REACHED
    _ASKED.append(True)
    asked: list[tuple[str, threading.Event]] = []
    for name, ask in _askers():
        done = threading.Event()
        try:
            ask(done)
        except Exception:  # noqa: BLE001, S112 - a kernel without that thread: nothing to watch there
            continue
        asked.append((name, done))
    _REACHED.extend(name for name, done in asked if done.wait(_WAIT))
    return _REACHED


def _profile_this_thread(done: threading.Event) -> None:
    with containment.grader_profile():
        sys.setprofile(threads._in_thread)
    done.set()


def _askers() -> list[tuple[str, Callable[[threading.Event], None]]]:
    """(thread, how to ask it) for each of the running kernel's own Python threads."""
    try:
        from IPython import get_ipython
    except ImportError:
        return []
    shell = get_ipython()
    kernel = getattr(shell, "kernel", None)
    found: list[tuple[str, Callable[[threading.Event], None]]] = []
    loops = [("IOPub", getattr(getattr(kernel, "iopub_thread", None), "io_loop", None))]
    loops += [(t.name, getattr(t, "io_loop", None)) for t in threading.enumerate() if t is not threading.main_thread()]
    for name, loop in loops:
        if loop is not None and callable(getattr(loop, "add_callback", None)):
            found.append((name, partial(_ask_loop, loop)))
    for fd, stream in ((1, sys.stdout), (2, sys.stderr)):
        copier = getattr(stream, "watch_fd_thread", None)
        if isinstance(copier, threading.Thread) and copier.is_alive():
            found.append((copier.name, partial(_ask_copier, fd, stream)))
    history = getattr(getattr(shell, "history_manager", None), "save_thread", None)
    if isinstance(history, threading.Thread) and history.is_alive():
        found.append((history.name, partial(_ask_history, shell.history_manager)))
    return found


def _ask_loop(loop: Any, done: threading.Event) -> None:
    """An event loop's thread (tornado's add_callback may be called from any thread)."""
    loop.add_callback(_profile_this_thread, done)


def _ask_copier(fd: int, stream: Any, done: threading.Event) -> None:
    """The thread that copies what reaches ``fd`` calls ``stream.write``: for one call, a
    ``write`` of the stream's own that sets its profile and drops the one byte sent to wake it."""
    original = stream.write

    def write(text: str) -> Any:
        if _SENTINEL in text and not done.is_set():
            vars(stream).pop("write", None)
            _profile_this_thread(done)
            text = text.replace(_SENTINEL, "", 1)
            if not text:
                return 0
        return original(text)

    stream.write = write
    os.write(fd, _SENTINEL.encode())


def _ask_history(manager: Any, done: threading.Event) -> None:
    """IPython's history thread calls ``manager.writeout_cache`` whenever ``save_flag`` is set:
    for one call, a ``writeout_cache`` of the manager's own that sets its profile first."""
    original = manager.writeout_cache

    def writeout_cache(*args: Any, **kwargs: Any) -> Any:
        if threading.current_thread() is manager.save_thread and not done.is_set():
            vars(manager).pop("writeout_cache", None)
            _profile_this_thread(done)
        return original(*args, **kwargs)

    manager.writeout_cache = writeout_cache
    thread = manager.save_thread
    (getattr(thread, "save_flag", None) or manager.save_flag).set()  # the thread's (IPython 9) or the manager's
