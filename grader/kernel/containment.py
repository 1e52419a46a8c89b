"""While a check watches an answer, the answer's work stays in this process, in sight.

A Watch records one process: a dispatch mode and a profile function in this process's
threads. Work an answer hands to another process (``os.fork``, ``multiprocessing``,
``subprocess``, a fork server reached over a socket) or to a thread the Watch cannot see
would run unrecorded: a forbidden ``autograd.grad`` or ``AdamW`` in a child, its result sent
back. So, while any Watch records in this process:

- starting a process or a thread, or connecting to another process, is refused at the
  source (``PermissionError``) and the Watch fails the task with what was tried. Processes
  are seen by an audit hook (``sys.addaudithook``: once added, no code can remove it),
  spawned programs by a start hook on ``_posixsubprocess.fork_exec`` (not audited in
  Python 3.11), threads by the start hook of threads.py, _thread's own starter (taken from
  the hook's closure or a fresh copy of _thread) by the Watch's profile function, which sees
  every call of a C function from Python code, and a thread that got past both by the threads
  alive when the Watch stops (one started by a C function, e.g. ``map`` over the starter, and
  ended before the Watch stops is not seen: Python 3.11 tells nothing of a thread's start);
- C functions that start a process or a thread (fork, clone, pthread_create...) reached
  through ctypes, which neither os.fork's audit event nor the start hooks see (Python 3.11
  audits no ctypes call, only the lookup of a C function by name): once code looks one up,
  at any time, every Watch from then on fails;
- torch's own C++ functions reached through ctypes (``at::enableRecordFunction``, found by
  its mangled name in libtorch): they can switch off what records the operators that run,
  unseen, so once code looks one up every Watch from then on fails too;
- a thread the notebook started that switched off the grader's profile function
  (``sys.setprofile``, seen by the audit hook at any time) and is still alive fails the
  task too: its work would be out of sight;
- so does a process the notebook's own code started in an earlier cell, outside any Watch,
  that still runs when a Watch starts or stops: a worker forked in the solution cell and
  handed the work over a pipe during the call. The audit hook notes when the notebook's code
  starts a process; a Watch then looks at the kernel's processes started since (psutil),
  leaving out those of torch's compiler and multiprocessing's fork server and resource
  tracker themselves (the course's ranks start through the fork server and end with their call).

torch's compiler starts processes of its own (a C++ compiler, Triton's assembler, worker
pools): those, started below ``torch._inductor``, ``torch._dynamo`` or ``triton``, are
allowed; the code they compile runs in this process.
"""

from __future__ import annotations

import _posixsubprocess
import re
import sys
import threading
import time
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from grader.kernel import active
from grader.kernel.authors import Authors

# Audited events that start a process or reach one, with what a learner is told.
PROCESS_EVENTS = {
    "os.fork": "a process (os.fork)",
    "os.forkpty": "a process (os.forkpty)",
    "os.posix_spawn": "a process (os.posix_spawn)",
    "os.spawn": "a process (os.spawn)",
    "os.exec": "a program (os.exec)",
    "os.system": "a program (os.system)",
    "subprocess.Popen": "a process (subprocess)",
    "socket.connect": "a connection to another process (a socket: a fork server, a pool)",
}
PROFILE_EVENTS = ("sys.setprofile", "sys.settrace")
# C functions that start a process, a program or a thread, as ctypes could call them.
C_STARTERS = (
    *("fork", "vfork", "_Fork", "clone", "clone3", "syscall", "daemon", "system", "popen"),
    *("posix_spawn", "posix_spawnp", "execv", "execve", "execvp", "execvpe", "pthread_create"),
    *("dlsym", "dlvsym", "PyThread_start_new_thread", "PyThread_start_joinable_thread"),
)
# Where torch's compiler starts processes of its own, and the course's packages theirs (run_ranks'
# fork server, torchrun, Graphviz).
COMPILER_PACKAGES = ("torch._inductor", "torch._dynamo", "triton")
COURSE_PACKAGES = ("coursekit", "vizlib", "grader")
# The command lines of the helper processes that do no work of the notebook's: torch's compile
# workers, multiprocessing's fork server (not the workers it forks) and resource tracker.
HELPER_COMMANDS = (
    "torch/_inductor/compile_worker",
    "multiprocessing.forkserver import main",
    "multiprocessing.resource_tracker import main",
)
ADVICE = (
    "do the work in the call itself, in this process: work done in another process or thread is out "
    "of the grader's sight and earns nothing."
)

# A C++ function of torch's own (namespaces at, c10, torch), by its mangled name.
TORCH_SYMBOL = re.compile(r"_ZNK?(?:2at|3c10|5torch)\d")

_installed = False
C_LOOKED_UP: list[str] = []  # C_STARTERS that code looked up through ctypes, in order
TORCH_LOOKED_UP: list[str] = []  # torch's C++ functions that code looked up through ctypes, in order
_grader = threading.local()  # .setting: the grader itself is setting a profile function
SWITCHED_OFF: set[int] = set()  # threads whose profile function was changed by the notebook's code
STARTED: set[int] = set()  # live threads that started through the start hook (threads.py)
ESCAPES: list[str] = []  # every escape refused in this process, in order (a check reads its own)
NOTEBOOK_STARTS: list[float] = []  # when (time.time()) the notebook's own code started a process


def install() -> None:
    """Add the audit hook (once per process; it stays for the process's life) and the start
    hook of ``_posixsubprocess.fork_exec``, which subprocess and multiprocessing's spawn use
    and which Python 3.11 does not audit."""
    global _installed
    if not _installed:
        sys.addaudithook(_on_audit)
        _installed = True
    start = _posixsubprocess.fork_exec
    if not getattr(start, "_grader_hook", False):
        _posixsubprocess.fork_exec = _watched_fork_exec(start)


def _watched_fork_exec(start: Callable[..., int]) -> Callable[..., int]:
    def fork_exec(*args: Any) -> int:
        starting("a process (subprocess or multiprocessing)")
        _note_notebook_start()
        return start(*args)

    fork_exec._grader_hook = True  # type: ignore[attr-defined]
    return fork_exec


@contextmanager
def grader_profile() -> Iterator[None]:
    """Around the grader's own sys.setprofile calls, which are not the learner's."""
    _grader.setting = True
    try:
        yield
    finally:
        _grader.setting = False


def starting(what: str) -> None:
    """Refuse to start ``what`` while a Watch records; each Watch then fails its task. (A cell
    recorded for its footprint only notes it: the check reads it there.)"""
    watching = list(active.WATCHING)
    if not watching or _from_compiler():
        return
    _escaped(what)
    if any(watch.refuse for watch in watching):
        raise PermissionError(f"the grader stopped your code from starting {what} while a check runs: {ADVICE}")


def note_unwatched_start() -> None:
    """Fail every Watch: a thread starts that no Watch can see into (_thread's own starter,
    which the grader's hook wraps). A profile function cannot stop the call: raising would
    switch it off."""
    try:
        starting("a thread (_thread's own starter, which the grader's hook wraps)")
    except PermissionError:
        pass


def live_threads() -> set[int]:
    """The threads alive now, by ident."""
    return set(sys._current_frames())


def out_of_sight(before: set[int] | None = None) -> list[str]:
    """What keeps a Watch from seeing everything: live threads that switched off the
    grader's profile function; with ``before`` (the threads alive when the Watch started),
    threads started since without the start hook."""
    alive = live_threads()
    SWITCHED_OFF.intersection_update(alive)
    found = ["a thread that switched off the grader's record (sys.setprofile) and still runs"] if SWITCHED_OFF else []
    found += C_LOOKED_UP[:1]  # the C function may be called any time later, out of sight
    found += lingering_processes()[:1]
    if before is not None and alive - before - STARTED:
        found.append("a thread (started out of the grader's sight)")
    return found


def lingering() -> list[tuple[Any, str]]:
    """The processes (psutil.Process, and its command line) the notebook's code started in
    earlier cells that still run: its fork server's workers included, its helpers
    (HELPER_COMMANDS) left out. When none does, the starts noted so far are forgotten: a
    later start is noted anew, and Watches meanwhile look at no process."""
    if not NOTEBOOK_STARTS:
        return []
    import psutil

    since = min(NOTEBOOK_STARTS) - 1.0  # create_time is rounded to the clock's ticks
    me = psutil.Process()
    found = []
    for child in me.children(recursive=True):
        try:
            if not _still_runs(child) or child.create_time() < since:
                continue
            command = " ".join(child.cmdline())
            if _helper(child, command, me):
                continue
        except psutil.Error:  # gone meanwhile
            continue
        found.append((child, command))
    found = _past_exit_grace(found, me)
    if not found:
        NOTEBOOK_STARTS.clear()
    return found


EXIT_GRACE = 0.5  # seconds a process of an earlier cell is given to end before it counts as lingering


def _helper(child: Any, command: str, me: Any) -> bool:
    """Whether ``child`` (a psutil.Process running ``command``) is one of the course's or
    torch's helpers, not a fork server's worker."""
    helper = any(marker in command for marker in HELPER_COMMANDS)
    return helper and not ("forkserver" in command and child.ppid() != me.pid)


def _past_exit_grace(found: list[tuple[Any, str]], me: Any) -> list[tuple[Any, str]]:
    """``found`` less the processes that end within EXIT_GRACE: one caught while it exits (a
    pool's worker, a killed helper: its command line may already be gone, and it is not yet a
    zombie) is no process a later cell could hand work to; and less the helpers caught while
    they start (in the middle of exec, a process's command line reads empty). Polled, never
    waited on: waiting would reap the notebook's own children behind its back."""
    deadline = time.monotonic() + EXIT_GRACE
    while found and time.monotonic() < deadline:
        time.sleep(0.02)
        found = [(process, command or _command(process)) for process, command in found if _still_runs(process)]
        found = [(process, command) for process, command in found if not _helper(process, command, me)]
    return found


def _command(process: Any) -> str:
    """``process``'s command line, '' where it cannot be read (gone, or in the middle of exec)."""
    import psutil

    try:
        return " ".join(process.cmdline())
    except psutil.Error:
        return ""


def _still_runs(process: Any) -> bool:
    """Whether ``process`` (a psutil.Process) still runs: not ended, not a zombie."""
    import psutil

    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def lingering_processes() -> list[str]:
    """``lingering``, each as 'a process in an earlier cell that still runs (pid N: what it is)'."""
    return [
        f"a process in an earlier cell that still runs (pid {p.pid}: {_what(p, command)})" for p, command in lingering()
    ]


FORKED_WORKER = (
    "a worker forked from this notebook's Python: a DataLoader with num_workers>0 (or "
    "persistent_workers=True) or multiprocessing left running"
)


def _what(process: Any, command: str) -> str:
    """What a lingering process is, in words a learner knows: a forked copy of the kernel
    runs the kernel's own command line (python -m ipykernel_launcher -f ...), which names
    nothing the learner wrote; a program started with subprocess is named by its command."""
    import psutil

    try:
        forked = process.cmdline() == psutil.Process().cmdline()
    except psutil.Error:
        forked = False
    return FORKED_WORKER if forked else f"the program {command[:60]!r}"


def end_lingering() -> list[str]:
    """End the processes the notebook's code started that still run (``lingering``), as a
    new task begins: the task whose code left them running has had its checks (which fail
    while they run: work could be handed to them), and no other task loses its points for
    them. Workers of multiprocessing (a DataLoader's) are joined, so that their Process
    objects know they ended; meanwhile SIGCHLD is not handled, so that DataLoader's handler
    does not raise 'worker killed' into the next cell. One line per process ended."""
    import multiprocessing
    import signal

    import psutil

    found = lingering()
    if not found:
        return []
    ended = [f"pid {p.pid}: {_what(p, command)}" for p, command in found]  # read before they end
    workers = {worker.pid: worker for worker in multiprocessing.active_children()}
    previous = _suspend_sigchld(signal.SIG_DFL)
    try:
        for process, _ in found:
            try:
                process.kill()
            except psutil.Error:
                continue
        for process, _ in found:
            if process.pid in workers:
                workers[process.pid].join(timeout=1.0)
    finally:
        if previous is not None:
            _suspend_sigchld(previous)
    NOTEBOOK_STARTS.clear()
    return ended


def _suspend_sigchld(handler: Any) -> Any:
    """Set SIGCHLD's handler, returning the one before (None where this thread cannot:
    only the main thread sets signal handlers)."""
    import signal

    try:
        previous = signal.getsignal(signal.SIGCHLD)
        signal.signal(signal.SIGCHLD, handler)
    except ValueError:
        return None
    return previous


def _note_notebook_start() -> None:
    """Note that the notebook's own code is starting a process where no Watch refuses it (the
    course's packages and torch's compiler start their own)."""
    refused = any(watch.refuse for watch in active.WATCHING)
    if not refused and not _from_packages(COMPILER_PACKAGES + COURSE_PACKAGES):
        NOTEBOOK_STARTS.append(time.time())


def _escaped(what: str) -> None:
    ESCAPES.append(what)
    for watch in list(active.WATCHING):
        watch.escaped.append(what)


def _on_audit(event: str, args: tuple[Any, ...]) -> None:
    if event in PROCESS_EVENTS:
        starting(PROCESS_EVENTS[event])
        _note_notebook_start()
    elif event in ("sys._getframe", "object.__getattr__", "sys._current_frames") and (
        active.WATCHING or active.CHECK[0]
    ):
        _frame_read(event, args)
    elif event == "ctypes.dlsym" and len(args) > 1:
        _looked_up(args[1])
    elif event in PROFILE_EVENTS and not getattr(_grader, "setting", False):
        ident = threading.get_ident()
        if ident in STARTED:  # a thread the notebook started, now out of sight
            SWITCHED_OFF.add(ident)
        for watch in list(active.WATCHING):
            watch.tampered = watch.tampered or "the grader's record of the functions that run (sys.setprofile)"


# Where code gets hold of a frame (and so of every variable of the code running it, a check's
# own included): audited by Python itself, so no answer can go round them.
_FRAME_ATTRIBUTES = frozenset({"gi_frame", "cr_frame", "ag_frame", "tb_frame"})
_FRAME_TAKEN = (
    "by taking a frame (sys._getframe, inspect, a generator's or a traceback's frame), which "
    "reaches the check's own variables"
)
_AUTHORS = Authors()


def _frame_read(event: str, args: tuple[Any, ...]) -> None:
    """The notebook's code took a frame while a check watches it: each watch is tampered with
    (its check's variables are within reach). torch's and Python's own frame reads are theirs."""
    if getattr(_grader, "reading", False) or (
        event == "object.__getattr__" and (len(args) < 2 or args[1] not in _FRAME_ATTRIBUTES)
    ):
        return
    _grader.reading = True
    try:
        caller: types.FrameType | None = sys._getframe(2)  # the code that asked, past this and _on_audit
        while caller is not None and caller.f_globals.get("__name__") == "inspect":  # asked for by inspect
            caller = caller.f_back
        if caller is not None and not _AUTHORS.library(caller):
            if active.CHECK[0] and _FRAME_TAKEN not in active.DURING_CHECK:
                active.DURING_CHECK.append(_FRAME_TAKEN)
            for watch in list(active.WATCHING):
                watch.tampered = watch.tampered or f"the grader's record of what runs, {_FRAME_TAKEN}"
    finally:
        _grader.reading = False


def _looked_up(name: object) -> None:
    """A C function looked up by name through ctypes (its calls are never audited): one that
    starts a process or a thread, or one of torch's own C++ functions, is noted for good."""
    if name in C_STARTERS and not _from_compiler():
        C_LOOKED_UP.append(f"a process or a thread through ctypes ({name})")
        starting(C_LOOKED_UP[-1])
    elif isinstance(name, str) and TORCH_SYMBOL.match(name) and not _from_packages(COMPILER_PACKAGES + COURSE_PACKAGES):
        TORCH_LOOKED_UP.append(name)


def _from_compiler() -> bool:
    """Whether torch's compiler is the one starting a process (its C++ compiler, Triton)."""
    return _from_packages(COMPILER_PACKAGES)


def _from_packages(packages: tuple[str, ...]) -> bool:
    """Whether code of one of ``packages`` is on the stack (this module's own frames aside)."""
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None:
        module = frame.f_globals.get("__name__")
        if frame.f_globals is not globals() and isinstance(module, str) and module.startswith(packages):
            return True
        frame = frame.f_back
    return False
