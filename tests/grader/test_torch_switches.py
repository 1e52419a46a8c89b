"""grader/kernel/ without a notebook server: what of torch's compiler and of its process-wide
switches an answer can change for the checks after it, each found, named and put back before
the next check (test_session.py has the rest of the snapshot): functorch.compile's functions,
even through a name for the module taken by assignment, the classes of Dynamo's automatic
dynamic shapes, Dynamo's stance, and the CPU's flushing of subnormal numbers; and what torch
registers itself (torch.func's batching rules) is not taken for the answer's."""

from __future__ import annotations

import builtins
import contextlib
import io
import subprocess
import sys
import textwrap
from pathlib import Path

import functorch.compile
import pytest
import torch
import torch._dynamo

from grader.kernel import torch_state
from grader.kernel.session import Grading

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def grading():
    with contextlib.redirect_stdout(io.StringIO()):  # Dynamo imported whole, as 6's setup does
        torch._dynamo.explain(lambda t: t + 1)(torch.zeros(1))
    torch._dynamo.reset()
    ns = {"torch": torch, "__builtins__": builtins}
    ns["_grading"] = Grading(ns)
    yield ns["_grading"]
    ns["_grading"].problems()  # puts back whatever a test left changed


def test_a_function_of_functorch_compile_rebound_through_an_assigned_name_is_put_back(grading):
    real = functorch.compile.aot_function
    module = functorch.compile  # bound by assignment: no import names it
    module.aot_function = lambda *args, **kwargs: None
    assert "functorch.compile.aot_function" in grading.problems()
    assert functorch.compile.aot_function is real


def test_a_method_of_dynamos_size_bookkeeping_replaced_is_put_back(grading):
    entry = torch._dynamo.pgo.FrameStateSizeEntry
    real = entry.is_size_dynamic
    entry.is_size_dynamic = lambda self, dim: False  # no size would ever become dynamic
    assert "torch._dynamo.pgo.FrameStateSizeEntry.is_size_dynamic" in grading.problems()
    assert entry.is_size_dynamic is real


def _graphs_for_new_sizes() -> int:
    graphs = []
    compiled = torch.compile(lambda x: x + 1, backend=lambda gm, inputs: graphs.append(gm) or gm.forward)
    torch._dynamo.reset()
    for n in (4, 6, 8):
        compiled(torch.ones(n))
    torch._dynamo.reset()
    return len(graphs)


def test_a_stance_left_in_force_is_named_and_the_default_put_back(grading):
    assert _graphs_for_new_sizes() == 2  # a first graph, then one with the size dynamic
    torch.compiler.set_stance("eager_on_recompile")
    assert _graphs_for_new_sizes() < 2  # runs eagerly: 6.4's count would be off
    found = grading.problems()
    assert any("torch.compiler.set_stance('eager_on_recompile')" in line for line in found), found
    assert _graphs_for_new_sizes() == 2
    assert grading.problems() == []


def test_a_stance_set_for_a_with_block_is_gone_after_it(grading):
    with torch.compiler.set_stance("force_eager"):
        assert grading.problems() != []  # in force while the block runs: named, and put back
    assert grading.problems() == []


def test_subnormals_flushed_to_zero_are_found_and_kept_again(grading):
    """torch.set_flush_denormal(True) has no getter; left on, a later check's GradScaler (4.5)
    halves float32 scales to 0 where the real one keeps subnormals."""
    subnormal = torch.tensor(2.0**-130)
    if not torch.set_flush_denormal(True):
        pytest.skip("this CPU has no switch to flush subnormals (x86 with SSE3 has)")
    assert any("set_flush_denormal" in line for line in grading.problems())
    assert (subnormal * 1.0).item() == 2.0**-130
    assert grading.problems() == []


def test_a_kernel_registered_after_reads_that_found_nothing_new_is_still_found(grading):
    from grader.kernel.torch_state import added_kernels, registered_kernels

    before = registered_kernels()
    assert registered_kernels() == before and added_kernels(before) == []  # nothing new, read again
    library = torch.library.Library("aten", "IMPL")
    library.impl("sum", lambda *args, **kwargs: torch.zeros(()), "AutocastCPU")
    assert added_kernels(before) == ["autocast's kernel for aten::sum on AutocastCPU (registered with torch.library)"]
    assert registered_kernels() == before  # taken back


def test_torch_funcs_first_vmap_is_not_taken_for_the_answers_kernels():
    """jacrev's first vmap registers torch's own batching rules with torch.library (once per
    process, so in a fresh one): a right answer using it must not fail as if it had replaced
    torch's kernels, nor lose torch the rules for a later vmap."""
    script = textwrap.dedent(
        """
        import builtins, torch
        from grader.kernel.session import Grading
        ns = {"torch": torch, "__builtins__": builtins}
        grading = ns["_grading"] = Grading(ns)
        f = lambda x: torch.stack([x[0] * x[1], x[1].exp()])
        torch.func.jacrev(f)(torch.tensor([1.0, 2.0]))
        print(grading.problems())
        print(torch.func.vmap(torch.outer)(torch.ones(3, 2), torch.ones(3, 4)).shape)
        """
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.splitlines() == ["[]", "torch.Size([3, 2, 4])"]


def test_a_default_dtype_left_changed_is_named_as_such_and_put_back(grading):
    """torch.set_default_dtype(torch.float64) also swaps torch.Storage: what is named is the
    default dtype (the answer's change), not the class it swapped, and float32 is back."""
    torch.set_default_dtype(torch.float64)
    found = grading.problems()
    assert any("default dtype" in line for line in found), found
    assert not any("Storage" in line for line in found), found
    assert torch.get_default_dtype() == torch.float32
    assert grading.problems() == []


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda: torch.use_deterministic_algorithms(True), "deterministic algorithms"),
        (lambda: torch.use_deterministic_algorithms(False, warn_only=True), "deterministic algorithms"),
        (lambda: torch.set_num_threads(torch.get_num_threads() + 1), "the number of threads"),
        (lambda: torch.set_float32_matmul_precision("medium"), "float32 matrix products' precision"),
        (lambda: torch.autograd.set_detect_anomaly(True), "anomaly detection"),
        (lambda: torch.autograd.set_detect_anomaly(False, check_nan=False), "anomaly detection"),
        (lambda: setattr(torch.backends.cudnn, "benchmark", True), "cuDNN's benchmark mode"),
        (lambda: setattr(torch.backends.cudnn, "deterministic", True), "cuDNN's deterministic mode"),
        (lambda: setattr(torch.backends.cuda.matmul, "allow_tf32", True), "float32 matrix products' precision"),
        # the newer TF32 API (PyTorch 2.9 on), after which torch.get_float32_matmul_precision() and
        # cudnn.allow_tf32 raise a RuntimeError ("a mix of the legacy and new APIs")
        (lambda: setattr(torch.backends.cuda.matmul, "fp32_precision", "tf32"), "float32 matrix products' precision"),
        (lambda: setattr(torch.backends.mkldnn.matmul, "fp32_precision", "bf16"), "float32 matrix products' precision"),
        (lambda: setattr(torch.backends.cudnn.conv, "fp32_precision", "ieee"), "cuDNN's TF32"),
        (lambda: setattr(torch.backends.mkldnn.conv, "fp32_precision", "tf32"), "precision of torch.backends"),
    ],
)
def test_a_process_wide_setting_left_changed_is_named_and_put_back(grading, change, named):
    """One answer's torch.use_deterministic_algorithms(True) (or thread count, matmul
    precision...) would decide the verdicts of every later task: each check ends by finding
    it, naming it, and putting the setup's value back."""
    before = [get() for _, get, _ in torch_state.SETTINGS]
    change()
    found = grading.problems()
    assert len(found) == 1 and named in found[0] and "left changed" in found[0], found
    assert [get() for _, get, _ in torch_state.SETTINGS] == before
    assert grading.problems() == []


def test_a_setting_a_later_setup_cell_makes_is_the_checks_own(grading):
    """A setup cell after the first (``_grading.keep()``) may set what its checks rely on."""
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(threads + 1)
        grading.keep()
        assert grading.problems() == []
        assert grading.settings_changed() == []
    finally:
        torch.set_num_threads(threads)
        grading.keep()
