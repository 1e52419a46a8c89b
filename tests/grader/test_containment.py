"""What a check's call may not start: a process (fork, multiprocessing, subprocess, a C
function that forks) or a thread, started while a check watches, or earlier and still
running; and what the course's own processes and torch's threads may do."""

from __future__ import annotations

import _thread
import importlib.util
import multiprocessing
import multiprocessing.forkserver
import os
import subprocess
import sys
import threading
import time
import types
from pathlib import Path

import pytest
import torch

from grader.kernel import containment
from grader.kernel.watch import watching


def _grad_in_child():
    x = torch.ones(3, requires_grad=True)
    torch.autograd.grad((x * 2).sum(), x)


def _start_thread():
    threading.Thread(target=_grad_in_child).start()


def _fork():
    if os.fork() == 0:
        _grad_in_child()
        os._exit(0)


def _multiprocessing(method):
    def start():
        process = multiprocessing.get_context(method).Process(target=_grad_in_child)
        process.start()
        process.join()

    return start


def _subprocess():
    subprocess.run([sys.executable, "-c", "import torch"], check=False)


def _fork_through_ctypes():
    import ctypes

    try:
        if ctypes.CDLL(None).fork() == 0:  # refused at the lookup: fork is never called
            _grad_in_child()
            os._exit(0)
    finally:
        containment.C_LOOKED_UP.clear()  # this process goes on testing


@pytest.mark.parametrize(
    "start, what",
    [
        (_start_thread, "a thread"),
        (_fork, r"a process \(os.fork\)"),
        (_multiprocessing("fork"), r"a process \(os.fork\)"),
        (_multiprocessing("spawn"), r"a process \(subprocess or multiprocessing\)"),
        (_multiprocessing("forkserver"), r"a connection to another process \(a socket: a fork server, a pool\)"),
        (_subprocess, r"a process \(subprocess\)"),
        (_fork_through_ctypes, r"a process or a thread through ctypes \(fork\)"),
    ],
    ids=["thread", "os.fork", "multiprocessing-fork", "multiprocessing-spawn", "forkserver", "subprocess", "ctypes"],
)
def test_a_process_or_thread_started_while_a_check_watches_fails_it(noted_starts, start, what):
    """Work handed to another process or a new thread would run out of the Watch's sight:
    the start is refused at the source, and the Watch fails even if the answer caught the
    refusal and went on."""

    def answer():
        try:
            start()
        except PermissionError as refusal:
            assert "the grader stopped your code from starting" in str(refusal)
        return torch.ones(1)

    if "fork server" in what:  # started earlier (run_ranks starts one): a process is only asked for
        multiprocessing.forkserver.ensure_running()
    before = threading.active_count()
    with pytest.raises(AssertionError, match=f"your code started ({what}) while the check ran: do the work"):
        with watching(globals()):
            answer()
    assert threading.active_count() == before  # nothing was started


@pytest.fixture
def noted_starts():
    """containment.NOTEBOOK_STARTS as this test makes it: processes other tests in this pytest
    process started (a browser, say) are theirs, not a notebook's."""
    containment.NOTEBOOK_STARTS.clear()
    yield containment.NOTEBOOK_STARTS
    containment.NOTEBOOK_STARTS.clear()


def _sleeping_worker(method):
    def start():
        worker = multiprocessing.get_context(method).Process(target=time.sleep, args=(60,), daemon=True)
        worker.start()
        return worker.kill, worker.join

    return start


def _sleeping_program():
    program = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    return program.kill, program.wait


@pytest.mark.parametrize(
    "start",
    [_sleeping_worker("fork"), _sleeping_worker("forkserver"), _sleeping_program],
    ids=["fork", "forkserver", "subprocess"],
)
def test_a_process_started_in_an_earlier_cell_that_still_runs_fails_every_watch(noted_starts, start):
    """A worker started before the check (in the solution cell, where nothing is refused) can
    be handed the check's work over a pipe and do it out of sight: while it runs, every Watch
    fails; once it has ended, none does."""
    with watching(globals()):
        pass  # the hooks are in, as after the setup cell
    if "forkserver" in start.__qualname__:
        multiprocessing.forkserver.ensure_running()
    stop, wait = start()
    try:
        assert noted_starts
        with pytest.raises(
            AssertionError, match=r"your code started a process in an earlier cell that still runs \(pid \d+"
        ):
            with watching(globals()):
                torch.ones(1) + 1
    finally:
        stop()
        wait()
    with watching(globals()):
        torch.ones(1) + 1
    assert noted_starts == []  # nothing lingers: the start is forgotten, later Watches list no process


def test_a_process_that_is_ending_when_a_check_ends_fails_nothing(noted_starts):
    """A process of an earlier cell that is ending as a Watch starts (a pool's worker, a killed
    helper: caught while it exits, its command line may already be gone) is given a moment to
    end, not reported as lingering."""
    with watching(globals()):
        pass
    until_input_ends = "import sys, time; print('ready', flush=True); sys.stdin.read(); time.sleep(0.05)"
    program = subprocess.Popen([sys.executable, "-c", until_input_ends], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert program.stdout.readline() == b"ready\n" and noted_starts
        program.stdin.close()  # it ends now, a moment after the Watch starts
        with watching(globals()):
            torch.ones(1) + 1
    finally:
        program.kill()
        program.wait()


def test_a_helper_caught_in_the_middle_of_exec_is_known_by_its_command_line_a_moment_later():
    """A helper (a fork server) caught as it starts, while its command line reads empty, is
    read again within the grace, not reported as lingering; a process still unnamed is."""

    class Starting:  # a psutil.Process whose command line is empty the first time it is read
        pid = 4242

        def __init__(self, later):
            self.reads = [[], later]

        def is_running(self):
            return True

        def status(self):
            return "running"

        def ppid(self):
            return os.getpid()

        def cmdline(self):
            return self.reads.pop(0) if len(self.reads) > 1 else self.reads[0]

    me = types.SimpleNamespace(pid=os.getpid())
    server = Starting([sys.executable, "-c", "from multiprocessing.forkserver import main; main()"])
    unnamed = Starting([])
    found = containment._past_exit_grace([(server, ""), (unnamed, "")], me)
    assert [process for process, _ in found] == [unnamed]


def test_a_process_the_course_starts_is_not_the_notebooks(noted_starts):
    """run_ranks' fork server, torchrun and Graphviz are started by the course's packages: not
    noted, so a helper that outlives its cell fails nothing."""
    with watching(globals()):
        pass
    course = {"__name__": "coursekit.helper"}
    exec(
        "import subprocess, sys\nproc = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])", course
    )
    try:
        assert noted_starts == []
        with watching(globals()):
            torch.ones(1) + 1
    finally:
        course["proc"].kill()
        course["proc"].wait()


def test_a_c_function_that_forks_looked_up_before_the_watch_fails_every_watch_after():
    """ctypes calls are not audited: a reference to fork taken earlier is called unseen, so the
    lookup itself (audited) fails every Watch from then on."""
    import ctypes

    try:
        fork = ctypes.CDLL(None).fork  # as a learner's cell would, before the check
        with pytest.raises(AssertionError, match=r"through ctypes \(fork\) while the check ran"):
            with watching(globals()):
                torch.ones(1) + 1
        assert callable(fork)
    finally:
        containment.C_LOOKED_UP.clear()  # this process goes on testing


def test_torchs_own_cpp_functions_looked_up_through_ctypes_fail_every_watch_after():
    """at::enableRecordFunction(false), called through ctypes, hides operators from torch's
    profiler: the lookup by its mangled name (audited) fails every Watch from then on."""
    import ctypes

    lib = Path(torch.__file__).parent / "lib" / "libtorch_cpu.so"
    try:
        switch = ctypes.CDLL(str(lib))._ZN2at20enableRecordFunctionEb  # not called
        with pytest.raises(AssertionError, match=r"with ctypes \(_ZN2at20enableRecordFunctionEb\)"):
            with watching(globals()):
                torch.ones(1) + 1
        assert callable(switch)
    finally:
        containment.TORCH_LOOKED_UP.clear()  # this process goes on testing
    with watching(globals()):  # a lookup of libc's own functions is nobody's business
        assert ctypes.CDLL(None).strlen(b"abc") == 3
        torch.ones(1) + 1


def _starter_from_the_hooks_closure():
    return _thread.start_new_thread.__closure__[0].cell_contents


def _starter_from_a_fresh_thread_module():
    return importlib.util.module_from_spec(importlib.util.find_spec("_thread")).start_new_thread


@pytest.mark.parametrize("starter", [_starter_from_the_hooks_closure, _starter_from_a_fresh_thread_module])
@pytest.mark.parametrize("inside", ["a function", "code run as a module"])
def test_a_thread_started_by_threads_own_starter_fails_the_check(starter, inside):
    """The start hook wraps _thread's starter; an answer that takes the starter itself (from
    the hook's closure, or from a fresh copy of _thread) starts a thread no Watch sees into,
    which ends before the call returns. The call of the starter is seen, however it was
    reached, and even in code run as a module (which the Watch reads as an import)."""
    with watching(globals()):
        pass  # the thread hooks are in
    start = starter()
    assert not getattr(start, "_grader_hook", False)
    done, box = _thread.allocate_lock(), []

    def work():
        try:
            x = torch.ones(3, requires_grad=True)
            box.append(torch.autograd.grad((x * 2).sum(), x)[0])
        finally:
            done.release()

    def answer():
        done.acquire()
        if inside == "a function":
            start(work, ())
        else:
            exec(compile("start(work, ())", "<answer>", "exec"), {"start": start, "work": work})
        done.acquire()  # the thread has ended
        return box[0]

    with pytest.raises(AssertionError, match=r"your code started a thread \(_thread's own starter"):
        with watching(globals()):
            assert answer().tolist() == [2.0, 2.0, 2.0]


def test_a_thread_that_switches_its_record_off_is_reported():
    """A thread started before the check (a solution cell's worker) that turned its profile
    function off would do the check's work out of sight."""
    with watching(globals()):
        pass  # the thread hooks are in
    go, done = threading.Event(), threading.Event()

    def hidden():
        sys.setprofile(None)
        go.wait()
        torch.ones(2).sum()
        done.set()

    thread = threading.Thread(target=hidden)
    thread.start()
    with pytest.raises(AssertionError, match="a thread that switched off the grader's record"):
        with watching(globals()):
            go.set()
            done.wait()
    thread.join()


@pytest.mark.parametrize(
    "reach",
    [
        "sys._getframe(1)",
        "inspect.currentframe()",
        "next(iter([(lambda: (yield))()])).gi_frame",
        "sys.exc_info()[2].tb_frame if sys.exc_info()[2] else (lambda: (_ for _ in ()).throw(ValueError))",
    ],
    ids=["sys._getframe", "inspect", "a generator's frame", "a traceback's frame"],
)
def test_a_frame_taken_by_the_notebooks_code_while_a_check_watches_is_reported(reach):
    """A frame leads to every variable of the code running it: a check's own lists and
    counters, which an answer could empty. Taking one from the notebook's code while a check
    watches tampers with the check; torch's and Python's own frame reads do not."""
    import inspect  # noqa: F401 - the code below uses it

    code = compile(
        f"def answer():\n    try:\n        raise ValueError\n    except ValueError:\n        return {reach}\n",
        "<the answer's cell>",
        "exec",
    )
    namespace = {"sys": sys, "inspect": inspect}
    exec(code, namespace)  # noqa: S102 - the notebook's code, under globals of its own
    with pytest.raises(AssertionError, match="by taking a frame"):
        with watching(namespace):
            namespace["answer"]()
    with watching(namespace) as clean:
        warnings_module = __import__("warnings")
        with warnings_module.catch_warnings():
            warnings_module.simplefilter("ignore")
            warnings_module.warn("torch and Python read frames of their own")
    assert not clean.tampered, clean.tampered


# --- printing a tensor while a check watches ------------------------------------------------

# What a check looks for in the record: values read into Python, autograd in any form.
_HOST_READS = ("torch.Tensor.tolist", "torch.Tensor.item", "aten._local_scalar_dense", "torch._tensor:Tensor.__iter__")
_AUTOGRAD = ("torch.autograd", "torch._tensor:Tensor.backward", "torch._C._EngineBase.run_backward")


def _answer(x, show):
    """An answer, with its debug output (print, an f-string, repr, a 0-dim tensor's format
    spec) or without."""
    total, leaf = x.sum(), x.float().requires_grad_() * 2
    if show:
        print("x =", x, end="; ")
        print(f"{x!r} {total:.2f}")
        repr(leaf)
    return x * 2


def test_printing_a_tensor_inside_a_watched_call_records_only_its_reads_of_values():
    """Turning a tensor into text asks autograd's forward mode for a dual tensor and runs
    torch's own formatting: none of the answer's work, left out of the record. What it reads
    into Python (``.tolist``, ``.item``) is recorded: an answer could read values so
    (``json.loads(repr(lengths)[7:-1])``), and a check forbidding reads cannot tell it from a
    debug print."""
    x = torch.tensor([3, 1, 4])
    with watching(globals()) as quiet:
        _answer(x, show=False)
    with watching(globals()) as printed:
        _answer(x, show=True)
    assert printed.ran(*_AUTOGRAD) == [] and printed.ran(*_HOST_READS)
    assert set(printed.ops) - set(quiet.ops) == {"aten._local_scalar_dense.default"}


def test_values_read_through_a_tensors_repr_are_recorded():
    """The review's laundering: a mask built from ``repr(lengths)`` parsed as JSON."""
    import json

    lengths = torch.tensor([3, 1, 4])
    with watching(globals()) as watch:
        torch.tensor(json.loads(repr(lengths)[7:-1]))
    assert watch.ran(*_HOST_READS), sorted(watch.code)


class _BackwardInRepr(torch.Tensor):
    """A tensor whose repr runs autograd before torch's printing."""

    def __repr__(self, *, tensor_contents=None):
        leaf = torch.ones(2, requires_grad=True)
        (leaf * 3).sum().backward()
        return super().__repr__(tensor_contents=tensor_contents)


class _GradInTorchFunction(torch.Tensor):
    """A tensor whose __torch_function__ (called by torch's printing, too) runs autograd."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        leaf = torch.ones(2, requires_grad=True)
        torch.autograd.grad((leaf * 3).sum(), leaf)
        return super().__torch_function__(func, types, args, kwargs or {})


@pytest.mark.parametrize(
    "launder, found",
    [
        (lambda: print(torch.ones(2).as_subclass(_BackwardInRepr)), _AUTOGRAD),
        (lambda: print(torch.ones(2).as_subclass(_GradInTorchFunction)), _AUTOGRAD),
        (lambda: torch._tensor_str._str(torch.tensor([3, 1, 4])), _HOST_READS),
        (lambda: torch._tensor_str._Formatter(torch.tensor([3, 1, 4])), _HOST_READS),
    ],
    ids=["subclass-repr", "subclass-torch-function", "tensor-str-directly", "formatter-directly"],
)
def test_work_laundered_through_printing_is_still_recorded(launder, found):
    """Only torch's own printing, entered through a tensor's repr or format, is left out of the
    record: the answer's own code run while a tensor prints (a subclass's __repr__ or
    __torch_function__), and torch's printing functions called directly to read values, are
    recorded as ever."""
    with watching(globals()) as watch:
        launder()
    assert watch.ran(*found), sorted(watch.code)


# --- a process one task leaves running --------------------------------------------------


def test_a_dataloaders_workers_left_running_fail_their_task_in_words_and_are_ended_before_the_next(noted_starts):
    """A DataLoader with persistent workers started in one task's answer keeps forked copies
    of the kernel running: that task's checks fail, naming a DataLoader (not the kernel's
    command line, which is all a forked worker shows); then they are ended, so the next
    task's checks see nothing of them, and the loader itself says its workers are gone."""
    from torch.utils.data import DataLoader

    with watching(globals()):
        pass  # the hooks are in, as after the setup cell
    loader = DataLoader(range(8), batch_size=4, num_workers=2, persistent_workers=True)
    assert [batch.tolist() for batch in loader] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    with pytest.raises(AssertionError, match=r"still runs \(pid \d+: a worker forked .* DataLoader with num_workers>0"):
        with watching(globals()):
            torch.ones(1) + 1
    ended = containment.end_lingering()
    assert len(ended) == 2 and all("DataLoader" in line for line in ended)
    with watching(globals()):
        torch.ones(1) + 1  # the next task
    assert noted_starts == [] and containment.end_lingering() == []
    with pytest.raises(RuntimeError, match="DataLoader worker"):
        list(loader)


def test_reading_a_watch_while_a_kernel_thread_still_records_into_it(monkeypatch):
    """A kernel thread (the copier of file descriptor 1) can still be recording into a Watch
    for a moment after the check's block ends: reading the record then does not raise 'Set
    changed size during iteration'. The thread's addition is played here by the look-up of
    each recorded code's likeness."""
    from grader.kernel import copies

    with watching(globals()) as watch:
        pass
    watch._unnamed.update({_grad_in_child.__code__, _start_thread.__code__})
    likeness = copies._likeness

    def recorded_meanwhile(code):
        watch._unnamed.add(types.FunctionType(compile("pass", "<a thread's>", "exec"), {}).__code__)
        return likeness(code)

    monkeypatch.setattr(copies, "_likeness", recorded_meanwhile)
    assert watch.ran("torch.nn.functional:dropout") == []
