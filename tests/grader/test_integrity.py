"""grader/kernel/ without a notebook server: the Watch (what ran, below Python
attributes), the snapshot that every check verifies (and puts back), and, in an in-process
IPython shell, the guard that runs before each check cell."""

from __future__ import annotations

import _thread
import builtins
import contextlib
import functools
import importlib.util
import multiprocessing
import multiprocessing.forkserver
import os
import re
import subprocess
import sys
import threading
import time
import types
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch

from grader.kernel import containment
from grader.kernel.names import cell_names, sets_names
from grader.kernel.session import Grading
from grader.kernel.snapshots import torch_wrapper_of
from grader.kernel.watch import watching

# --- Watch -------------------------------------------------------------------------------


def test_watch_records_operations_torch_calls_and_code():
    x = torch.ones(3, requires_grad=True)
    with watching(globals()) as watch:
        y = torch.broadcast_shapes((3, 1), (4,))
        (x * 2).sum().backward()
    assert y == (3, 4)
    assert watch.ops["aten.mul.Tensor"] >= 1 and watch.grad_ops >= 1
    assert "torch.functional:broadcast_shapes" in watch.anything()
    assert watch.ran("torch._C._EngineBase.run_backward")  # the engine, whoever called it


def test_plain_python_runs_nothing_a_watch_names():
    with watching(globals()) as watch:
        shape = (3, 4)
        size = torch.Size([3, 4])
        info = torch.finfo(torch.float16).max
    assert shape == tuple(size) and info == 65504.0
    assert watch.anything() == [] and not watch.ops


def test_a_reference_taken_before_the_watch_still_runs_torchs_code():
    from torch.nn.utils import clip_grads_with_norm_, get_total_norm  # as a learner's cell would, earlier

    p = torch.nn.Parameter(torch.ones(3))
    p.grad = torch.full((3,), 5.0)
    with watching(globals()) as watch:
        clip_grads_with_norm_([p], 1.0, get_total_norm([p.grad]))
    assert watch.ran("torch.nn.utils.clip_grad")


def test_torchs_pybind11_functions_are_named_by_their_module():
    # A pybind11 function's __self__ is its function record, not a module: named all the same.
    switch = torch.autograd._enable_record_function  # torch._C._autograd's, as a check forbids it
    with watching(globals()) as watch:
        switch(True)
    assert watch.ran("torch._C._autograd._enable_record_function")


def test_private_kernels_show_up_as_operations():
    param, grad = torch.zeros(3), torch.ones(3)
    m, v, t = torch.zeros(3), torch.zeros(3), torch.ones(())
    with watching(globals()) as watch:
        torch._fused_adamw_(
            [param],
            [grad],
            [m],
            [v],
            [],
            [t],
            lr=0.1,
            beta1=0.9,
            beta2=0.999,
            weight_decay=0.0,
            eps=1e-8,
            amsgrad=False,
            maximize=False,
        )
    assert watch.ran("aten._fused_adam") == ["aten._fused_adamw_.default"]


def test_steps_grow_with_a_loop_and_not_with_broadcasting():
    def looped(n):
        return [torch.tensor(i) < 2 for i in range(n)]

    def broadcast(n):
        return torch.arange(n) < 2

    def work(fn, n):
        with watching(globals()) as watch:
            fn(n)
        return watch.steps, len(watch.outputs)

    work(looped, 2), work(broadcast, 2)  # warm up torch's caches
    assert work(looped, 3) != work(looped, 9)
    assert work(broadcast, 3) == work(broadcast, 9)


@pytest.mark.parametrize(
    "write",
    [
        "x.data.mul_(2); x.data.div_(2)",  # put back, and x._version never moved
        "x[0] = 1",
        "torch.add(y, 1, out=x)",
        "x.view(-1)[1:].zero_()",
        "torch._foreach_add_([x], 1)",
    ],
)
def test_a_write_into_a_tensors_memory_is_seen_by_any_route(write):
    x, y = torch.ones(3), torch.ones(3)
    with watching(globals()) as watch:
        exec(write)
    assert watch.wrote_into(y, x) and not watch.wrote_into(y)


def test_reading_a_tensor_or_writing_a_copy_of_it_writes_nothing_into_it():
    x, meta = torch.ones(3), torch.empty(3, device="meta")
    with watching(globals()) as watch:
        copy = x.clone().add_(1) + x
        meta.add_(1)  # no memory to compare: never counted
    assert copy.sum() == 9 and not watch.wrote_into(x, meta)


def test_a_watch_switched_off_inside_is_reported():
    with pytest.raises(AssertionError, match="your code replaced the grader's record of the functions"):
        with watching(globals()):
            sys.setprofile(None)


def _exclude_python_dispatch():
    return torch._C._ExcludeDispatchKeyGuard(torch._C.DispatchKeySet(torch._C.DispatchKey.Python))


@contextlib.contextmanager
def _exclude_after_a_call():
    with torch._C._PreserveDispatchKeyGuard():  # keeps the keys, which the call below changes
        torch._C._dispatch_tls_set_dispatch_key_excluded(torch._C.DispatchKey.Python, True)
        yield


def _pop_the_modes():
    from torch.utils._python_dispatch import _disable_current_modes

    return _disable_current_modes()


@pytest.mark.parametrize(
    ("switch_off", "work"),
    [
        (torch._C._DisableTorchDispatch, lambda x: torch.mul(x, 2)),
        (_exclude_python_dispatch, lambda x: x.mul(2)),
        (_pop_the_modes, lambda x: torch.ops.aten.mul.Tensor(x, x)),
        (torch._C._DisableTorchDispatch, lambda x: (x * 1).sum().backward()),
        (torch._C._DisableTorchDispatch, lambda x: list(map(torch.autograd.grad, [(x * 1).sum()], [[x]]))),
        (torch._C._DisableTorchDispatch, lambda x: [*map(torch.mul, [x], [x])]),  # no call: only its guard
        (torch.utils._mode_utils.no_dispatch, lambda x: [*map(torch.mul, [x], [x])]),
        (_exclude_after_a_call, lambda x: [*map(torch.mul, [x], [x])]),  # seen as the call returns
    ],
    ids=[
        "DisableTorchDispatch",
        "ExcludeDispatchKeyGuard",
        "modes popped",
        "backward",
        "map over autograd.grad",
        "map unpacked",
        "no_dispatch",
        "key excluded by a call",
    ],
)
def test_torch_called_while_the_record_is_switched_off_fails_the_watch(switch_off, work):
    """Operations run with dispatch to Python switched off never reach the watch's mode: the
    notebook's code calling torch then is seen by the profile function and fails the watch."""
    x = torch.ones(3, requires_grad=True)
    off = "where the grader cannot record it: .*(ran with|switched dispatch to Python off)"
    with pytest.raises(AssertionError, match=off):
        with watching(globals()):
            with switch_off():
                work(x)


_HIDDEN = """
def hidden(x):
    with torch._C._DisableTorchDispatch():
        return torch.mul(x, 2)
"""


@pytest.mark.parametrize(
    "run",
    [
        lambda x, helper: (exec(_HIDDEN, helper), helper["hidden"](x)),
        lambda x, helper: exec("with torch._C._DisableTorchDispatch():\n    y = x.mul(2)\n", {**helper, "x": x}),
        lambda x, helper: types.FunctionType(compile(_HIDDEN, "helper.py", "exec").co_consts[0], helper)(x),
    ],
    ids=["a function exec defined", "code exec runs", "a function made from a code object"],
)
def test_torch_run_by_code_under_globals_of_its_own_is_the_notebooks_too(run):
    """exec(source, {"torch": torch}) runs the learner's code under other globals than the
    notebook's: torch called from there, the record switched off, fails the watch too."""
    off = "where the grader cannot record it: .*(ran with|switched dispatch to Python off)"
    with pytest.raises(AssertionError, match=off):
        with watching(globals()):
            run(torch.ones(3), {"torch": torch})


def test_code_torch_generates_and_runs_is_torchs():
    """An FX GraphModule's forward runs code torch made ('<eval_with_key>'), and a dataclass's
    __init__ code made by exec in its module: neither is taken for the learner's."""
    from grader.kernel.authors import Authors

    traced = torch.fx.symbolic_trace(torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU()))
    frames = []

    def note(frame, event, arg):
        if event == "call":
            frames.append(frame)

    from torch.utils.benchmark.utils.common import TaskSpec

    sys.setprofile(note)
    try:
        traced(torch.ones(1, 2))
        TaskSpec(stmt="pass", setup="", global_setup="")
    finally:
        sys.setprofile(None)
    made = {f.f_code.co_filename for f in frames}
    assert "<string>" in made and any(name.startswith("<eval_with_key>") for name in made)
    authors = Authors()
    assert [f.f_code.co_name for f in frames if not authors.library(f)] == []
    assert not authors.library(sys._getframe())  # this test's own code is of the learner's kind


def test_torch_run_inside_a_custom_operators_kernel_fails_the_watch():
    """A custom op's kernel runs while the watch's mode handles the op itself: what it calls
    never reaches the record (a forbidden op wrapped in one would pass unseen)."""

    @torch.library.custom_op("grader_test::hidden_double", mutates_args=())
    def hidden_double(x: torch.Tensor) -> torch.Tensor:
        return torch.mul(x, 2)

    with pytest.raises(AssertionError, match="torch.mul ran inside an operator's own kernel"):
        with watching(globals()) as watch:
            hidden_double(torch.ones(3))
    assert watch.ran("grader_test.hidden_double")  # the op itself is recorded


def test_torchs_own_ways_of_running_code_leave_the_record_on():
    """What torch itself runs under modes of its own (compile, export, vmap, checkpoint)
    does not look switched off."""
    from torch.utils.checkpoint import checkpoint

    class Double(torch.nn.Module):
        def forward(self, x):
            return x.relu() * 2

    x = torch.randn(4, 3, requires_grad=True)
    with watching(globals()) as watch:
        torch.compile(lambda t: t.sin() + 1, backend="eager")(x)
        torch.export.export(Double(), (x.detach(),), dynamic_shapes={"x": {0: torch.export.Dim("b", min=2)}})
        torch.func.vmap(lambda row: row.cos())(x)
        checkpoint(lambda t: t.sin().cos(), x, use_reentrant=False).sum().backward()
    assert watch.tampered is None and watch.ops


def test_work_handed_to_a_thread_made_earlier_is_recorded_too():
    """A dispatch mode and sys.setprofile see only their own thread: an answer that runs
    autograd in a pool made before the check must still show it."""
    x = torch.ones(3, requires_grad=True)
    with watching(globals()):
        pass  # the thread hooks are in from the first watch on (in a notebook: from its setup cell)
    pool = ThreadPoolExecutor(1)
    pool.submit(int).result()  # its worker thread exists before the watch starts
    with watching(globals()) as pooled:
        pool.submit(lambda: torch.autograd.grad((x * 3).sum(), x)).result()
    assert "torch.autograd:grad" in pooled.ran("torch.autograd") and pooled.grad_ops >= 1
    assert pooled.ops["aten.mul.Tensor"] >= 1
    # Once the watch has stopped, the worker records nothing and leaves its recorder.
    assert pool.submit(lambda: (torch.ones(2) + 1, torch._C._len_torch_dispatch_stack())[1]).result() == 0
    assert pooled.ops["aten.add.Tensor"] == 0
    pool.shutdown()


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


def test_an_operator_called_through_torch_ops_is_named_by_its_own_name():
    """torch.ops.aten.dropout is made of other operations (it reaches a dispatch mode as
    bernoulli_ and mul): the call itself names it, by any spelling."""
    x = torch.ones(4, 4)
    aten = torch.ops.aten
    with watching(globals()) as watch:
        aten.dropout(x, 0.5, True)
        aten._scaled_dot_product_attention_math.default(x[None], x[None], x[None])
    assert watch.ran("aten.dropout") == ["aten.dropout"]
    assert watch.ran("aten._scaled_dot_product") == ["aten._scaled_dot_product_attention_math.default"]
    assert "aten.dropout.default" not in watch.ops  # the dispatcher saw only what it is made of


def test_watch_difference_counts_repeats():
    def given():
        return torch.arange(12).reshape(3, 4)

    with watching(globals()) as template:
        base = given()
    with watching(globals()) as same:
        base = given()
    with watching(globals()) as more:
        base = given()
        base.t()
    assert same - template == [] and "aten.t.default" in more - template and base.shape == (3, 4)


# --- reading cells -------------------------------------------------------------------------


def test_cell_names_are_what_a_cell_reads_without_defining_it():
    loaded, stored = cell_names("import math\n_x = f(3)\ndef g(a):\n    return all(a) and _x and math.pi\n")
    assert loaded == {"f", "all"} and {"math", "_x", "g", "a"} <= stored


def test_sets_names_sees_assignments_and_changes():
    names = ("shares_storage", "picked")
    assert sets_names("picked = scores[rows, cols]", names) == {"picked"}
    assert sets_names("shares_storage.update({'a': True})", names) == {"shares_storage"}
    assert sets_names("shares_storage['a'] = True", names) == {"shares_storage"}
    assert sets_names("print(picked.sum(), shares_storage['a'])", names) == set()
    assert sets_names("def picked(x):\n    return x", names) == {"picked"}


def test_torch_may_wrap_its_own_functions_but_nobody_else_may():
    def original():
        return 1

    import torch._compile

    wrapped = torch._compile._disable_dynamo(original)
    assert torch_wrapper_of(wrapped, original)
    assert not torch_wrapper_of(functools.wraps(original)(lambda: 2), original)


# --- the snapshot, without IPython -----------------------------------------------------------


@pytest.fixture
def namespace():
    ns = {"torch": torch, "__builtins__": builtins}

    def helper(x):
        return x + 1

    ns["helper"] = helper
    ns["TABLE"] = {"a": lambda: 1}
    ns["_grading"] = Grading(ns)
    yield ns
    ns["_grading"].problems()  # puts back whatever a test left changed


def test_nothing_changed_nothing_found(namespace):
    assert namespace["_grading"].problems({"torch", "helper", "all"}) == []


def test_torch_functions_rebound_through_another_name_are_found_and_put_back(namespace):
    real = torch.allclose
    t = torch
    t.allclose = lambda *args, **kwargs: True
    found = namespace["_grading"].problems()
    assert "torch.allclose" in found and torch.allclose is real


def test_a_shadowed_builtin_is_found_only_where_the_check_uses_it(namespace):
    namespace["all"] = lambda items: True
    grading = namespace["_grading"]
    assert grading.problems({"len"}) == []
    assert grading.problems({"all"}) == ["the builtin all (with a variable or function of that name)"]
    assert "all" not in namespace


def test_builtins_themselves_are_watched(namespace):
    real = builtins.isinstance
    builtins.isinstance = lambda obj, kind: True
    try:
        assert "the builtin isinstance" in namespace["_grading"].problems()
    finally:
        builtins.isinstance = real


def test_a_redefined_or_changed_helper_is_found_and_put_back(namespace):
    grading, helper = namespace["_grading"], namespace["helper"]
    namespace["helper"] = lambda x: 0
    assert grading.problems({"helper"}) == ["helper, which the check uses (from the setup)"]
    assert namespace["helper"] is helper
    helper.__code__ = (lambda x: 0).__code__
    assert grading.problems({"helper"}) and helper(1) == 2
    namespace["TABLE"]["a"] = lambda: 2
    assert grading.problems({"TABLE"}) and namespace["TABLE"]["a"]() == 1


def test_the_grading_object_itself_is_watched(namespace):
    grading = namespace["_grading"]
    namespace["_grading"] = object()
    assert "_grading, the checks' own references" in grading.problems()
    assert namespace["_grading"] is grading


def test_global_hooks_and_modes_left_active_are_found_and_removed(namespace):
    torch.nn.modules.module.register_module_forward_pre_hook(lambda module, args: None)
    torch.overrides.TorchFunctionMode().__enter__()
    found = namespace["_grading"].problems()
    assert any("global module hooks" in line for line in found)
    assert any("TorchFunctionMode" in line for line in found)
    assert not torch.nn.modules.module._global_forward_pre_hooks and not torch._C._len_torch_function_stack()


def test_inference_mode_left_on_is_found_and_switched_off(namespace):
    entered = torch.inference_mode()
    entered.__enter__()  # and never left: its guard lives as long as ``entered``
    assert any("torch.inference_mode()" in line for line in namespace["_grading"].problems())
    assert not torch.is_inference_mode_enabled()
    x = torch.ones(2, requires_grad=True)
    (x * 3).sum().backward()  # autograd records again
    assert x.grad.tolist() == [3.0, 3.0]
    assert namespace["_grading"].problems() == []


def test_a_class_method_added_to_a_torch_class_is_found(namespace):
    torch.nn.Sequential.__call__ = lambda self, *args: None
    assert "torch.nn.modules.container.Sequential.__call__" in namespace["_grading"].problems()
    assert "__call__" not in vars(torch.nn.Sequential)


def test_passed_prints_the_line_and_verifies(namespace, capsys):
    namespace["_grading"].passed("9.1")
    assert capsys.readouterr().out == "Exercise 9.1 passed\n"
    torch.equal = lambda a, b: True
    with pytest.raises(AssertionError, match="your code replaced torch.equal"):
        namespace["_grading"].passed("9.1")


# --- in an IPython shell ---------------------------------------------------------------------

SETUP = "import torch\nfrom grader.kernel.session import Grading\n_grading = Grading(globals(), record=('guess',))"


@pytest.fixture
def shell():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_cell(SETUP)
    yield shell
    shell.user_ns["_grading"].problems()
    InteractiveShell.clear_instance()


def error_of(result) -> str:
    error = result.error_before_exec or result.error_in_exec
    return f"{type(error).__name__}: {error}" if error else ""


def test_a_check_cell_runs_and_prints_its_line(shell, capsys):
    assert error_of(shell.run_cell("assert True\n_grading.passed('9.1')")) == ""
    assert "Exercise 9.1 passed" in capsys.readouterr().out


def test_an_input_transformer_that_rewrites_the_check_is_caught(shell, capsys):
    shell.run_cell(
        "_shell = [v for k, v in globals().items() if k == 'get_' + 'ipython'][0]()\n"
        "_shell.input_transformers_post.append(lambda lines: ['print(\"Exercise 9.2 passed\")\\n'] "
        "if any('9.2' in line for line in lines) else lines)"
    )
    error = error_of(shell.run_cell("assert False, 'the real check'\n_grading.passed('9.2')"))
    assert error.startswith("AssertionError: your code replaced IPython's input transformers")
    assert "Exercise 9.2 passed" not in capsys.readouterr().out.splitlines()  # only in the traceback's code
    assert shell.input_transformers_post == []  # put back: the next check runs as written
    assert error_of(shell.run_cell("assert True\n_grading.passed('9.3')")) == ""


def test_a_learners_cell_changing_torch_fails_the_next_check(shell):
    shell.run_cell("T = torch\nT.equal = lambda a, b: True")
    assert "your code replaced torch.equal" in error_of(shell.run_cell("_grading.passed('9.4')"))
    assert (
        error_of(shell.run_cell("assert not torch.equal(torch.ones(1), torch.zeros(1))\n_grading.passed('9.5')")) == ""
    )


def test_a_setup_helper_redefined_by_an_answer_is_caught(shell):
    shell.run_cell("def reference(x):\n    return 2 * x\n\n\n_grading.keep()")
    shell.run_cell("def reference(x):\n    return 3 * x")
    error = error_of(shell.run_cell("assert reference(1) == 2\n_grading.passed('9.6')"))
    assert "your code replaced reference, which the check uses" in error
    assert shell.user_ns["reference"](1) == 2


def test_what_ran_in_a_recorded_cell_is_kept(shell):
    shell.run_cell("guess = (3, 4)")
    assert shell.user_ns["_grading"].ran_while_setting("guess") == []
    shell.run_cell("guess = tuple((torch.ones(3, 1) + torch.ones(4)).shape)")
    assert "aten.add.Tensor" in shell.user_ns["_grading"].ran_while_setting("guess")
    # The cell's own code runs as a module: what it calls is recorded, not skipped as an import's.
    shell.run_cell("guess = tuple(torch.broadcast_shapes((3, 1), (4,)))")
    assert shell.user_ns["_grading"].ran_while_setting("guess") == ["torch.functional:broadcast_shapes"]


def test_the_code_of_a_recorded_cell_is_kept_as_it_ran(shell):
    """Work hidden from the watch (a function rebuilt on a copy of the globals) still shows in
    the code that set the prediction, and a magic shows as the call it becomes."""
    cell = "import types\ndef f():\n    return 3\nguess = types.FunctionType(f.__code__, dict(globals()))()"
    shell.run_cell(cell)
    source = shell.user_ns["_grading"].source_setting("guess")
    assert "types.FunctionType(f.__code__, dict(globals()))()" in source
    shell.run_cell("guess = %time 3")
    assert "run_line_magic('time', '3')" in shell.user_ns["_grading"].source_setting("guess")
    assert shell.user_ns["_grading"].source_setting("never_set") is None


@pytest.mark.parametrize(
    ("cell", "problem"),
    [
        ('guess = {"a", "b"}', None),
        ('guess = sorted({"b"}.union(["a"]))', None),
        ("guess = %time 3", "get_ipython()"),
        ("import math\nguess = 3", "import"),
        ("def f():\n    return 3\nguess = f()", "a def"),
        ("guess = tuple(torch.ones(2).shape)", "torch.ones"),
        ("guess = earlier", "earlier (set in another cell)"),
        ('guess = int("x")', "code that fails on its own (ValueError)"),
    ],
)
def test_a_prediction_is_plain_values_its_cell_gives_on_its_own(shell, cell, problem):
    """prediction_problems reads the code that set the answer, which work hidden from the
    watch (exec'd, in an earlier cell) cannot change: a plain value passes, anything else
    is named."""
    shell.run_cell("earlier = 3")
    shell.run_cell(cell)
    guess = shell.user_ns.get("guess")
    found = shell.user_ns["_grading"].prediction_problems(guess=guess)
    assert found == [] if problem is None else any(problem in line for line in found), found


def test_a_prediction_changed_after_its_cell_ran_is_named(shell):
    shell.run_cell("guess = 3")
    assert shell.user_ns["_grading"].prediction_problems(guess=4) == ["a value changed after the cell ran (guess)"]


def test_torch_run_at_any_depth_in_a_prediction_cell_is_named(shell):
    shell.run_cell("guess = len([torch.ones(2) for _ in range(2)])")
    grading = shell.user_ns["_grading"]
    ran = grading.code_ran_setting("guess")
    assert any(line.startswith("torch.") for line in ran), ran
    assert grading.code_ran_setting("never_set") == []


def test_a_thread_started_in_a_recorded_cell_is_part_of_its_footprint(shell):
    """A prediction set by work done in another thread: the cell runs (the learner sees no
    error there), and the check reads that the cell started a thread."""
    cell = (
        "import threading\nfound = []\n"
        "thread = threading.Thread(target=lambda: found.append(tuple((torch.ones(3, 1) + torch.ones(4)).shape)))\n"
        "thread.start()\nthread.join()\nguess = found[0]"
    )
    assert error_of(shell.run_cell(cell)) == ""
    assert "code starting a thread" in shell.user_ns["_grading"].ran_while_setting("guess")
    assert error_of(shell.run_cell("assert True\n_grading.passed('9.9')")) == ""  # the next check is its own


def test_removing_the_graders_hooks_fails_the_next_check(shell):
    shell.run_cell("[v for k, v in globals().items() if k == 'get_' + 'ipython'][0]().ast_transformers.clear()")
    error = error_of(shell.run_cell("_grading.passed('9.7')"))
    assert error.startswith("AssertionError: your code replaced") and "IPython's AST transformers" in error
    assert error_of(shell.run_cell("_grading.passed('9.8')")) == ""  # put back for the checks that follow


def test_running_the_setup_again_keeps_only_its_own_names(shell):
    shell.run_cell("def answer(x):\n    return x")
    shell.run_cell("T = torch\nT.equal = lambda a, b: True")
    shell.run_cell(SETUP)  # the first cell run again
    assert not torch.equal(torch.ones(1), torch.zeros(1))  # put back before the new snapshot was taken
    shell.run_cell("def answer(x):\n    return 2 * x")  # an answer fixed after the setup ran again
    assert error_of(shell.run_cell("assert answer(1) == 2\n_grading.passed('9.9')")) == ""
    assert sum(type(t).__name__ == "_CheckGuard" for t in shell.ast_transformers) == 1


# --- how a failed check shows --------------------------------------------------------------


def shown_text(capsys) -> str:
    """What the shell printed, without its colours."""
    return re.sub(r"\x1b\[[0-9;]*m", "", capsys.readouterr().out)


def test_a_failed_check_shows_its_message_and_not_its_code(shell, capsys):
    check = "_expected_total = 6\nassert answer() == _expected_total, 'expected 6, got 5'\n_grading.passed('9.10')"
    shell.run_cell("def answer():\n    return 5")
    result = shell.run_cell(check)
    assert error_of(result) == "AssertionError: expected 6, got 5"  # the verdict nbval reads is unchanged
    shown = shown_text(capsys)
    assert "Exercise 9.10 not passed:" in shown and "expected 6, got 5" in shown
    assert "_expected_total" not in shown and "Traceback" not in shown
    # A check helper from an earlier cell is the grader's too.
    shell.run_cell("def _at_least(n):\n    assert answer() >= n, f'expected at least {n}'\n\n\n_grading.done()")
    shell.run_cell("_at_least(7)\n_grading.passed('9.11')")
    shown = shown_text(capsys)
    assert "Exercise 9.11 not passed:" in shown and "expected at least 7" in shown and "Traceback" not in shown


def test_what_the_learners_code_raised_keeps_its_traceback(shell, capsys):
    shell.run_cell("def answer():\n    assert 1 + 1 == 3, 'my own assumption'\n    return 5")
    error = error_of(shell.run_cell("assert answer() == 5, 'expected 5'\n_grading.passed('9.12')"))
    assert error == "AssertionError: my own assumption"
    shown = shown_text(capsys)
    assert "assert 1 + 1 == 3" in shown and "not passed" not in shown  # the learner's line, to fix
    # Outside a check, and for a check's assert without a message, IPython's traceback as usual.
    shell.run_cell("assert 2 > 3, 'in an answer cell'")
    shell.run_cell("assert 5 > 6\n_grading.passed('9.13')")
    shown = shown_text(capsys)
    assert "assert 2 > 3" in shown and "assert 5 > 6" in shown and "not passed" not in shown


def test_replacing_how_errors_show_fails_the_next_check(shell, capsys):
    shell.run_cell("get_ipython().set_custom_exc((AssertionError,), lambda *a, **k: print('Exercise 9.14 passed'))")
    error = error_of(shell.run_cell("_grading.passed('9.14')"))
    assert "IPython's way of showing errors" in error
    shell.run_cell("assert False, 'wrong'\n_grading.passed('9.15')")
    assert "Exercise 9.15 not passed: wrong" in shown_text(capsys)  # put back for the checks that follow


# --- higher-order operators -------------------------------------------------------------------


def test_torch_cond_runs_under_a_watch_and_its_branches_are_recorded():
    """A correct answer may use torch.cond (eager, or inside a compiled function): it runs,
    and what its branches did is seen like any other operation."""

    def gate(x, flag):
        return torch.cond(flag, lambda x: torch.nn.functional.dropout(x, 0.5), lambda x: x - 1, (x,))

    x = torch.ones(3)
    with watching(globals()) as watch:
        out = gate(x, torch.tensor(False))
    assert torch.equal(out, x - 1)
    assert any(name.startswith("cond") for name in watch.ops), dict(watch.ops)
    assert "aten.sub.Tensor" in watch.ops
    with watching(globals()) as watch:
        gate(x, torch.tensor(True))
    assert any("bernoulli" in name or "dropout" in name for name in watch.ops), dict(watch.ops)


@pytest.mark.parametrize(
    ("cell", "problem"),
    [
        ('import re\nguess = re.findall(r"\\w+", TEXT)', None),
        ("guess = [w for w in TEXT.split() if w.startswith('m')]", None),
        ("def words(text):\n    return text.split()\nguess = words(TEXT)", None),
        ("guess = earlier", "earlier (set in another cell)"),
        ("import torch\nguess = [str(torch.float32)]", "import torch"),
        ("guess = TEXT.__class__.__mro__", "TEXT.__class__"),
        ("guess = int(TEXT)", "code that fails on its own (ValueError)"),
    ],
)
def test_a_reading_of_a_given_text_may_use_string_tools_and_only_them(shell, cell, problem):
    """reading_problems: a cell that reads the text the task hands out (``TEXT``) may be any
    Python over that text, the builtins and modules allowed; anything else is named."""
    shell.run_cell("earlier = ['x']\nTEXT = 'make more mistakes'")
    shell.run_cell(cell)
    grading = shell.user_ns["_grading"]
    found = grading.reading_problems(
        {"TEXT": "make more mistakes"}, ["len", "int", "str"], ["re"], guess=shell.user_ns.get("guess")
    )
    assert found == [] if problem is None else any(problem in line for line in found), found


def test_a_reading_changed_after_its_cell_ran_is_named(shell):
    shell.run_cell("guess = TEXT.split()")
    grading = shell.user_ns["_grading"]
    assert grading.reading_problems({"TEXT": "a b"}, [], [], guess=["a"]) == [
        "a value changed after the cell ran (guess)"
    ]


def test_a_prediction_set_by_a_cell_another_cell_ran_is_out_of_sight(shell):
    """A cell that does the work (autograd, say) and then runs another cell that only writes
    the numbers down: the record of that inner cell is not all that set them."""
    shell.run_cell(
        "_x = torch.tensor(2.0, requires_grad=True)\n(_x ** 2).backward()\n"
        "get_ipython().run_cell('guess = ' + repr(_x.grad.item()))"
    )
    grading = shell.user_ns["_grading"]
    assert shell.user_ns["guess"] == 4.0
    inside = "a cell run from inside another cell (get_ipython().run_cell)"
    assert grading.ran_while_setting("guess") == [inside]
    assert grading.prediction_problems(guess=4.0) == [inside]
    shell.run_cell("guess = 4.0")  # written down in a cell of its own: nothing to say
    assert grading.ran_while_setting("guess") == [] and grading.prediction_problems(guess=4.0) == []
