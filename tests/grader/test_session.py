"""grader/kernel/ without a notebook server: the snapshot that every check verifies (and puts
back), and, in an in-process IPython shell, the session's guard before each check cell and
what it records of the cells that set predictions."""

from __future__ import annotations

import builtins
import re

import pytest
import torch

from grader.kernel.session import Grading
from grader.kernel.watch import watching

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


def test_a_check_that_ran_as_written_once_is_caught_rewritten_later(shell, capsys):
    """The code a check cell should become is kept per source (ShellHooks.expected): a
    transformer added after the check first ran still shows when it runs again."""
    check = "assert 1 + 1 == 3, 'the real check'\n_grading.passed('9.2')"
    assert "the real check" in error_of(shell.run_cell(check))
    shell.run_cell(
        "_shell = [v for k, v in globals().items() if k == 'get_' + 'ipython'][0]()\n"
        "_shell.input_transformers_post.append(lambda lines: [line.replace('3', '2') for line in lines])"
    )
    error = error_of(shell.run_cell(check))
    assert error.startswith("AssertionError: your code replaced IPython's input transformers")
    assert "Exercise 9.2 passed" not in capsys.readouterr().out.splitlines()


def test_a_learners_cell_changing_torch_fails_the_next_check(shell):
    shell.run_cell("T = torch\nT.equal = lambda a, b: True")
    assert "your code replaced torch.equal" in error_of(shell.run_cell("_grading.passed('9.4')"))
    assert (
        error_of(shell.run_cell("assert not torch.equal(torch.ones(1), torch.zeros(1))\n_grading.passed('9.5')")) == ""
    )


def test_a_setting_a_learners_cell_changed_is_put_back_before_the_check_without_a_word(shell):
    """Each check starts from a clean global state: a learner's own cell that sets
    deterministic algorithms or the matmul precision costs no check. What the answer changes
    while its check runs is named at the check's end."""
    shell.run_cell('torch.use_deterministic_algorithms(True)\ntorch.set_float32_matmul_precision("medium")')
    check = (
        "assert not torch.are_deterministic_algorithms_enabled()\n"
        'assert torch.get_float32_matmul_precision() == "highest"\n'
        "_grading.passed('9.8')"
    )
    assert error_of(shell.run_cell(check)) == ""
    error = error_of(shell.run_cell("torch.use_deterministic_algorithms(True)\n_grading.passed('9.9')"))
    assert error.startswith("AssertionError: your code replaced deterministic algorithms"), error
    assert not torch.are_deterministic_algorithms_enabled()


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
        ("guess = (((3 + 1e-20j) * 2 - 1) ** 2 - 25) / 1e-20j == 20", "1e-20j"),  # a complex step
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
        # A generator's frame leads to the caller's globals: the run alone could read the kernel's.
        (
            "def _up():\n    yield _it.gi_frame.f_back\n_it = _up()\nguess = next(_it).f_globals['earlier']",
            "_it.gi_frame",
        ),
        ('guess = ["x"] if "<module" in f"{__builtins__}" else []', "__builtins__"),
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


@pytest.mark.parametrize(
    "hide",
    ["", "_grading._running = 0\n", "import threading\n"],
    ids=["plainly", "the session's counter zeroed first", "from a thread"],
)
def test_a_prediction_set_by_a_cell_another_cell_ran_is_out_of_sight(shell, hide):
    """A cell that does the work (autograd, say) and then runs another cell that only writes
    the numbers down: the record of that inner cell is not all that set them, however the
    running cell hides that it runs it (the session's count of running cells set to 0, the
    inner cell run on a thread)."""
    inner = "get_ipython().run_cell('guess = ' + repr(_x.grad.item()))"
    if hide.startswith("import threading"):
        inner = f"_t = threading.Thread(target=lambda: {inner})\n_t.start()\n_t.join()"
    shell.run_cell("_x = torch.tensor(2.0, requires_grad=True)\n(_x ** 2).backward()\n" + hide + inner)
    grading = shell.user_ns["_grading"]
    assert shell.user_ns["guess"] == 4.0
    inside = "a cell run from inside another cell (get_ipython().run_cell)"
    assert grading.ran_while_setting("guess") == [inside]
    assert grading.prediction_problems(guess=4.0) == [inside]
    shell.run_cell("guess = 4.0")  # written down in a cell of its own: nothing to say
    assert grading.ran_while_setting("guess") == [] and grading.prediction_problems(guess=4.0) == []


def test_a_check_cell_compiles_without_dynamos_guard_timing_and_the_learners_cells_with_it(shell):
    import torch._dynamo.guards as guards

    from grader.kernel import compiles

    probe = guards.profile_guard_manager
    seen = "import torch._dynamo.guards as _g\n_seen = _g.profile_guard_manager"
    # A check cell: Dynamo's probe stands aside while it runs, and is back once it ended.
    assert error_of(shell.run_cell(f"{seen}\n_grading.passed('9.10')")) == ""
    assert shell.user_ns["_seen"] is compiles._untimed
    assert guards.profile_guard_manager is probe
    # The learner's cell: torch as it is.
    assert error_of(shell.run_cell(seen)) == ""
    assert shell.user_ns["_seen"] is probe
    # A check that fails puts it back too, and a compile inside a check still works.
    compile_in_check = (
        f"{seen}\n_r = torch.compile(lambda x: x * 2, backend='eager')(torch.ones(2))\n"
        "assert False, 'no'\n_grading.passed('9.11')"
    )
    assert "no" in error_of(shell.run_cell(compile_in_check))
    assert shell.user_ns["_seen"] is compiles._untimed
    assert guards.profile_guard_manager is probe
    assert shell.user_ns["_r"].tolist() == [2.0, 2.0]


@pytest.mark.parametrize(
    ("cell", "problem"),
    [
        ("guess = {'x', 'h'}", None),
        ("guess = set(['x']) | {'h'}", None),
        # What tells the cell it runs again alone, and what reaches back into the kernel from there.
        ("guess = {'x', 'h'} if '<module' in f'{__builtins__}' else set()", "__builtins__"),
        ("guess = {'x', 'h'} if str(print) else set()", "str(print)"),
        (
            "guess = {l for l in ['x', 'h'] if l in '{0.__self__}'.format(print)}",
            "'{0.__self__}'.format(print)",
        ),
        ("guess = {l for l in ['x', 'h'] if l in '{x}'.format_map({'x': 'x h'})}", "'{x}'.format_map({'x': 'x h'})"),
    ],
)
def test_a_prediction_builds_its_value_and_reaches_nothing_else(shell, cell, problem):
    """prediction_problems: a written-down prediction builds its value from literals; a
    dunder name (which tells the cell where it runs) or a format string (whose fields read
    attributes of its arguments, and so any namespace) is named."""
    shell.run_cell(cell)
    grading = shell.user_ns["_grading"]
    found = grading.prediction_problems(guess=shell.user_ns.get("guess"))
    assert found == [] if problem is None else any(problem in line for line in found), found


def test_an_autocast_kernel_an_answer_registers_fails_the_next_check_and_is_taken_back(shell):
    """A kernel registered under autocast's key (torch.library) changes what autocast does to
    that op in every later check, the check's own run included: found, and taken back."""
    shell.run_cell(
        "_lib = torch.library.Library('aten', 'IMPL')\n"
        "def _sum_fp32(self, *, dtype=None):\n"
        "    with torch._C._ExcludeDispatchKeyGuard(torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastCPU)):\n"
        "        return torch.ops.aten.sum.default(self.float())\n"
        "_lib.impl('sum', _sum_fp32, 'AutocastCPU')"
    )
    assert "autocast's kernel for aten::sum on AutocastCPU" in error_of(shell.run_cell("_grading.passed('9.12')"))
    summed = (
        "with torch.autocast('cpu', dtype=torch.bfloat16):\n"
        "    assert torch.ones(2, dtype=torch.bfloat16).sum().dtype == torch.bfloat16\n"
        "_grading.passed('9.13')"
    )
    assert error_of(shell.run_cell(summed)) == ""


def test_a_partitioner_swapped_by_an_answer_fails_the_next_check_and_is_put_back(shell):
    import torch._functorch.partitioners as partitioners

    min_cut = partitioners.min_cut_rematerialization_partition
    shell.run_cell(SETUP)  # a session made once the partitioners are imported watches them
    shell.run_cell(
        "import torch._functorch.partitioners as _pp\n_pp.min_cut_rematerialization_partition = _pp.default_partition"
    )
    error = error_of(shell.run_cell("_grading.passed('9.14')"))
    assert "torch._functorch.partitioners.min_cut_rematerialization_partition" in error
    assert partitioners.min_cut_rematerialization_partition is min_cut


def test_an_answer_that_takes_a_frame_while_a_check_runs_fails_that_check(shell):
    """From a frame an answer reaches the check's own variables (its list of cases, its
    counters) and can change them: taken while a check cell runs, the check fails, watched or
    not; taken in the learner's own cells, nothing is said."""
    shell.run_cell("import sys\ndef answer(n):\n    sys._getframe(1).f_locals['cases'].clear()\n    return n")
    check = "cases = [1, 2]\nfor _c in list(cases):\n    assert answer(_c) == _c\n_grading.passed('9.15')"
    assert "by taking a frame" in error_of(shell.run_cell(check))
    assert error_of(shell.run_cell("answer(3)")) == ""  # the learner's own cell
    assert error_of(shell.run_cell("assert True\n_grading.passed('9.16')")) == ""  # the next check


def test_a_kernel_for_a_compared_operator_fails_every_check_it_is_registered_before(shell):
    """A kernel that makes aten::equal say True would pass every later comparison: found and
    taken back each time, also when the library that registered it first is freed in between
    (torch.library then forgets a later library's registration of the same kernel)."""
    register = "_lib = torch.library.Library('aten', 'IMPL')\n_lib.impl('equal', lambda a, b: True, 'CPU')"
    check = "assert not torch.equal(torch.zeros(1), torch.ones(1))\n_grading.passed('9.17')"
    for _ in range(2):  # the second _lib frees the first
        shell.run_cell(register)
        assert "torch's kernel for aten::equal on CPU" in error_of(shell.run_cell(check))
        assert error_of(shell.run_cell(check)) == ""
