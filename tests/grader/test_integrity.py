"""grader/kernel/ without a notebook server: the Watch (what ran, below Python attributes),
how torch's operators are named, and how cells are read. test_containment.py has the
processes and threads a check's call may not start; test_session.py the snapshot every
check verifies and the guard before each check cell."""

from __future__ import annotations

import contextlib
import functools
import sys
import textwrap
import types
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

from grader.kernel.names import cell_names, sets_names
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


def _clip_unless_watched(p):
    """An answer that keeps torch's clipping for when no dispatch mode is on the stack."""
    if torch._C._len_torch_dispatch_stack():
        return p.grad.mul_(0.5)
    return torch.nn.utils.clip_grad_norm_([p], 1.0)


def test_a_quiet_watch_records_functions_with_no_dispatch_mode_on_the_stack():
    p = torch.nn.Parameter(torch.ones(3))
    p.grad = torch.full((3,), 5.0)
    with watching(globals()) as loud:
        _clip_unless_watched(p)
    assert loud.ops and not loud.ran("torch.nn.utils.clip_grad")  # it saw the mode: honest
    with watching(globals(), quiet=True) as quiet:
        _clip_unless_watched(p)
    assert quiet.ran("torch.nn.utils.clip_grad:clip_grad_norm_")  # it saw none: caught
    assert not quiet.ops and not quiet.tampered and not quiet.unrecorded


def _leaves_by_recursion(node, leaves):
    """A recursive walk that reads each node's children through the C descriptor, not as an
    attribute, with Python's recursion limit raised for the call and put back."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(100_000)
    try:

        def walk(node):
            children = type(node).next_functions.__get__(node)
            if not children:
                leaves.append(node)
            for child, _ in children:
                if child is not None:
                    walk(child)

        walk(node)
    finally:
        sys.setrecursionlimit(limit)


def _leaves_by_list(node, leaves):
    todo = [node]
    while todo:
        node = todo.pop()
        children = [child for child, _ in node.next_functions if child is not None]
        leaves += [] if children else [node]
        todo += children


def test_deepest_grows_with_a_recursion_and_not_with_a_walk_by_list():
    """A recursion shows as calls nested as deep as its input, whatever limit it set meanwhile
    and however it reads its input; a walk that keeps a list of nodes to visit stays shallow."""
    x = torch.ones(2, requires_grad=True)
    y = x
    for _ in range(1500):
        y = y * 1
    depths = {}
    for walk in (_leaves_by_recursion, _leaves_by_list):
        leaves = []
        with watching(globals()) as watch:
            walk(y.grad_fn, leaves)
        assert len(leaves) == 1 and leaves[0].variable is x
        depths[walk.__name__] = watch.deepest
    assert depths["_leaves_by_recursion"] > 1400 > 20 > depths["_leaves_by_list"], depths


_ASKS = ("torch.compiler:is_compiling", "torch._C._len_torch_dispatch_stack", "torch._C._dispatch_tls_")


def test_asks_of_a_learners_module_are_noted_and_torchs_own_are_not():
    """An answer can ask whether it is compiled or watched from a helper of its own, a function
    made with a module's globals, or through a library that calls what it is given (a Mock's
    side effect): that is its ask. torch's own code asks too (here
    _get_current_dispatch_mode reads the stack), and so does the grader's guard around torch's
    switch (torch.cond uses it): those are not."""

    def watched():
        return torch.compiler.is_compiling() or torch._C._len_torch_dispatch_stack() > 0

    helpers = types.ModuleType("gate_helpers")
    vars(helpers).update(torch=torch)
    in_a_module = types.FunctionType(watched.__code__, vars(helpers), "watched")
    with watching(globals(), quiet=True, asks=_ASKS) as watch:
        in_a_module()
    assert sorted(set(watch.asked)) == sorted(_ASKS[:2]) and not watch.calls
    from unittest import mock

    stack = mock.Mock(side_effect=torch._C._len_torch_dispatch_stack)
    with watching(globals(), quiet=True, asks=_ASKS) as through_mock:
        stack()
    assert through_mock.asked == ["torch._C._len_torch_dispatch_stack"]
    with watching(globals(), quiet=True, asks=_ASKS) as torchs:
        torch.utils._python_dispatch._get_current_dispatch_mode()
        exec("with torch._C._DisableTorchDispatch():\n    pass", {"torch": torch})  # noqa: S102 - as torch.cond does
    assert torchs.ran("torch._C._len_torch_dispatch_stack", "torch._C._dispatch_tls_") == [
        "torch._C._dispatch_tls_is_dispatch_key_excluded",
        "torch._C._len_torch_dispatch_stack",
    ]
    assert not torchs.asked, torchs.asked


def test_a_copy_of_torchs_source_under_another_name_is_named_as_torchs():
    import inspect

    import torch.nn.utils.clip_grad as clip_grad

    mine: dict = {"__name__": "my_clipping"}
    exec(compile(inspect.getsource(clip_grad), "my_clipping.py", "exec"), mine)  # noqa: S102
    p = torch.nn.Parameter(torch.ones(3))
    p.grad = torch.full((3,), 5.0)
    with watching(globals()) as watch:
        mine["clip_grad_norm_"]([p], 1.0)
    assert "torch.nn.utils.clip_grad:clip_grad_norm_ (a copy)" in watch.ran("torch.nn.utils.clip_grad")
    with watching(globals()) as honest:  # the learner's own code, and contextlib's decorators
        with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            norm = torch.linalg.vector_norm(p.grad)
        p.grad.mul_(1.0 / norm)
    assert not honest.ran("torch.nn.utils.clip_grad", "torch.autograd.graph:saved_tensors_hooks (a copy)")


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


# --- torch's operators, by their names ------------------------------------------------------


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


@pytest.mark.parametrize(
    "empty",
    [
        "for w in active.WATCHING:\n    w.ops.clear()",
        "for w in active.WATCHING:\n    w.code.clear()\n    w.calls.clear()",
        "for w in active.WATCHING:\n    w.outputs.clear()",
        "for w in active.WATCHING:\n    w.ops = type(w.ops)()",
        "for w in active.WATCHING:\n    w.grad_ops = 0",
        "for w in active.WATCHING:\n    w.asked.clear()",
    ],
    ids=["ops cleared", "code and calls cleared", "outputs cleared", "ops replaced", "grad_ops reset", "asked cleared"],
)
def test_an_answer_that_empties_the_watchs_record_fails_it(empty):
    """The learner's code can reach the Watch that records it (grader.kernel.active): what it
    empties or replaces there is seen when the Watch stops, and fails the check."""
    from grader.kernel import active

    namespace = {"torch": torch, "active": active}
    exec(f"def answer(x):\n    y = (x * 2).sum()\n{textwrap.indent(empty, '    ')}\n    return y\n", namespace)  # noqa: S102
    with pytest.raises(AssertionError, match="emptied or replaced|count of operations"):
        with watching(namespace):
            namespace["answer"](torch.ones(3, requires_grad=True))
    with watching(namespace) as fine:  # a record that only grows is the watch's own
        (torch.ones(2) * 3).sum()
    assert not fine.tampered and fine.ops["aten.mul.Tensor"] == 1


def test_a_grading_kernel_keeps_an_errors_type_and_message_for_its_history():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        shell.run_cell("from grader.kernel.session import Grading\n_grading = Grading(globals())")
        result = shell.run_cell("def f():\n    raise ValueError('no such tensor')\n\nf()", store_history=True)
        assert isinstance(result.error_in_exec, ValueError)
        kept = shell.history_manager.exceptions[result.execution_count]
        assert kept == {
            "ename": "ValueError",
            "evalue": "no such tensor",
            "traceback": ["ValueError: no such tensor\n"],
        }
    finally:
        shell.user_ns["_grading"].problems()
        InteractiveShell.clear_instance()


def test_a_cell_transformed_again_after_an_input_transformer_was_added_goes_through_it():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        shell.run_cell("from grader.kernel.session import Grading\n_grading = Grading(globals())")
        manager = shell.input_transformer_manager
        assert manager.transform_cell("x = 1") == "x = 1\n"  # made by the setup's transformers, and kept
        manager.cleanup_transforms.append(lambda lines: [line.replace("x = 1", "x = 2") for line in lines])
        assert manager.transform_cell("x = 1") == "x = 2\n"
        result = shell.run_cell("x = 1")  # the grader puts the setup's transformers back, naming them
        assert "input transformers (cleanup_transforms)" in str(result.error_in_exec)
        assert manager.transform_cell("x = 1") == "x = 1\n"
    finally:
        shell.user_ns["_grading"].problems()
        InteractiveShell.clear_instance()
