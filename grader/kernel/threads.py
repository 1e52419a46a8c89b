"""Threads: what the notebook's code runs in a thread of its own is recorded too.

A dispatch mode and sys.setprofile see only their own thread, so an answer could run a
forbidden operation in a threading.Thread or a concurrent.futures pool. Every thread
started once the hooks are in (by the first setup cell) runs `_in_thread` as its profile
function: while a Watch records, that thread enters a recorder of its own for it and its
calls go into the same record.
"""

from __future__ import annotations

import _thread
import sys
import threading
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from grader.kernel import active, containment

if TYPE_CHECKING:
    from torch.utils._python_dispatch import TorchDispatchMode

    from grader.kernel.active import Recording

_THREAD = threading.local()  # in another thread: the (watch, recorder) pairs it has entered


def _in_thread(frame: types.FrameType, event: str, arg: Any) -> None:
    """The profile function of the threads started after `install_hooks`."""
    try:
        entered: list[tuple[Recording, TorchDispatchMode]] | None = getattr(_THREAD, "entered", None)
        if not active.WATCHING and not entered:
            return
        if entered is None:
            entered = _THREAD.entered = []
        if not all(watch._active for watch, _ in entered):  # a watch has stopped: leave its recorder
            for watch, mode in reversed(entered):
                if not watch._active and torch.utils._python_dispatch._get_current_dispatch_mode() is mode:
                    mode.__exit__(None, None, None)
            entered[:] = [(watch, mode) for watch, mode in entered if watch._active]
        for watch in active.WATCHING:
            if not watch.quiet and not any(w is watch for w, _ in entered):
                mode = watch.recorder()
                mode.__enter__()
                entered.append((watch, mode))
            if event == "c_call" and arg in (sys.setprofile, sys.settrace):
                watch.tampered = "the grader's record of what runs in other threads (sys.setprofile in a thread)"
            watch._on_event(frame, event, arg)
    except Exception:  # noqa: BLE001, S110 - a profiler that raises is switched off by Python
        pass


def _watched_start(start: Callable[..., int]) -> Callable[..., int]:
    """``_thread.start_new_thread`` whose threads run `_in_thread` as their profile function."""

    def start_new_thread(function: Callable[..., Any], args: tuple, kwargs: dict | None = None) -> int:
        containment.starting("a thread")

        def run(*args: Any, **kwargs: Any) -> Any:
            ident = _thread.get_ident()
            containment.STARTED.add(ident)
            with containment.grader_profile():
                sys.setprofile(_in_thread)
            try:
                return function(*args, **kwargs)
            finally:
                containment.STARTED.discard(ident)

        return start(run, args, kwargs or {})

    start_new_thread._grader_hook = True  # type: ignore[attr-defined]
    return start_new_thread


_HOOK_CODE = _watched_start(_thread.start_new_thread).__code__  # the one frame that may call a starter


# The C functions that start a thread, by their name in _thread.
_STARTERS = {"start_new_thread", "start_new", "start_joinable_thread"}


def starts_unwatched(frame: types.FrameType, func: object) -> bool:
    """Whether a C function called from ``frame`` (a profile function's ``c_call``) is
    _thread's own starter called from anywhere but the start hook: the starter the hook
    wraps, taken from the hook's closure or from a fresh copy of _thread, starts a thread
    that nothing watches. The call is seen however the function was reached."""
    return (
        isinstance(func, types.BuiltinFunctionType)
        and func.__name__ in _STARTERS
        and getattr(func.__self__, "__name__", None) == "_thread"
        and frame.f_code is not _HOOK_CODE
    )


def install_hooks() -> None:
    """Every thread started from now on, by threading (Thread, concurrent.futures) or by
    _thread directly, is watched while a Watch records (once per process)."""
    for owner, name in ((_thread, "start_new_thread"), (_thread, "start_new"), (threading, "_start_new_thread")):
        start = getattr(owner, name, None)
        if start is not None and not getattr(start, "_grader_hook", False):
            setattr(owner, name, _watched_start(start))
