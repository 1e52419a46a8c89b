"""torch's process-wide switches, as every check expects them: no mode left active, no
saved-tensor hooks, autograd recording (and not in inference mode), Dynamo's default stance,
subnormal numbers kept (not flushed to 0), float32 by default, no autocast, and the kernels of
torch's operators as torch registered them."""

from __future__ import annotations

import gc
import re
import sys
from collections.abc import Callable
from typing import Any

import torch

AUTOCAST_DEVICES = ("cpu", "cuda", "xpu", "mps", "hpu", "mtia", "maia", "xla", "ipu")
# Inference mode is a guard object's, held by whatever entered it: ``inference_mode().__enter__()``
# never left keeps it on for good. A guard of our own turning it off, kept here for the rest of
# the process (dropping it would turn it back on), is the only way back.
_INFERENCE_OFF: list[object] = []


def clear_modes() -> list[str]:
    """Pop every TorchFunctionMode, TorchDispatchMode and saved_tensors_hooks an answer left
    active, and leave inference mode; one line per kind found, naming it."""
    found = []
    if torch._C._len_torch_function_stack():
        while torch._C._len_torch_function_stack():
            torch._C._pop_torch_function_stack()
        found.append("torch's function dispatch (a TorchFunctionMode left active)")
    if torch._C._len_torch_dispatch_stack():
        while torch._C._len_torch_dispatch_stack():
            torch.utils._python_dispatch._pop_mode()
        found.append("torch's operator dispatch (a TorchDispatchMode left active)")
    if torch._C._autograd._top_saved_tensors_default_hooks(True) is not None:
        while torch._C._autograd._top_saved_tensors_default_hooks(True) is not None:
            torch._C._autograd._pop_saved_tensors_default_hooks()
        found.append("autograd's saved tensors (saved_tensors_hooks left active)")
    if torch.is_inference_mode_enabled():
        _INFERENCE_OFF.append(torch._C._InferenceMode(False))
        found.append("autograd's recording (torch.inference_mode() entered and never left)")
    return found + _default_stance() + _denormals_kept()


# A float32 subnormal: 0 where the CPU flushes subnormals (torch.set_flush_denormal(True)).
_SUBNORMAL = 2.0**-130


def _denormals_kept() -> list[str]:
    """Subnormal numbers put back where an answer switched the CPU to flush them to 0
    (``torch.set_flush_denormal(True)``, a process-wide switch with no getter: asked by
    computing with one): every later float32 or float64 computation rounds differently."""
    with torch.no_grad():
        flushed = bool((torch.tensor(_SUBNORMAL) * 1.0) == 0)
    if not flushed:
        return []
    torch.set_flush_denormal(False)
    return ["the CPU's subnormal numbers (torch.set_flush_denormal(True) flushes them to 0)"]


def _default_stance() -> list[str]:
    """Dynamo's stance put back to the default where an answer left another in force
    (``torch.compiler.set_stance("eager_on_recompile")``: no later check compiles again)."""
    eval_frame = sys.modules.get("torch._dynamo.eval_frame")
    stance_class = getattr(eval_frame, "DynamoStance", None)
    if eval_frame is None or stance_class is None:  # Dynamo not imported yet: nothing set it
        return []
    stance = getattr(eval_frame, "_stance", None)
    default = stance_class()
    if type(stance) is stance_class and stance == default:
        return []
    eval_frame._stance = default  # type: ignore[attr-defined]
    named = getattr(stance, "stance", stance)
    return [f"Dynamo's compile stance (torch.compiler.set_stance({named!r}) never undone: a with block undoes it)"]


Setting = tuple[str, Callable[[], object], Callable[[Any], object]]


def _set_anomaly(value: tuple[bool, bool]) -> None:
    torch.set_anomaly_enabled(*value)


def _set_deterministic(value: tuple[bool, bool]) -> None:
    torch.use_deterministic_algorithms(value[0], warn_only=value[1])


# The legacy getters (torch.get_float32_matmul_precision, cudnn.allow_tf32) raise a RuntimeError
# once the newer API (torch.backends.cuda.matmul.fp32_precision = "tf32", PyTorch 2.9 on, the
# one torch's deprecation warning recommends) has set a value they cannot express: read so,
# and put back by the legacy setter and then the newer API's own values.
_MIXED = "set through both the old and the new TF32 API"


def _fp32_pairs(*pairs: tuple[str, str]) -> tuple[tuple[str, str], ...]:
    """The (backend, op) pairs of torch.backends' ``fp32_precision`` that this torch has."""
    found = []
    for pair in pairs:
        try:
            torch._C._get_fp32_precision_getter(*pair)
        except (AttributeError, RuntimeError):
            continue
        found.append(pair)
    return tuple(found)


def _legacy_and_fp32(
    get: Callable[[], object], put: Callable[[Any], object], pairs: tuple[tuple[str, str], ...]
) -> tuple[Callable[[], object], Callable[[Any], object]]:
    """A setting read as its legacy getter's value (``_MIXED`` where that raises) with the
    newer API's ``pairs``, and put back in that order."""

    def read() -> object:
        try:
            legacy = get()
        except RuntimeError:
            legacy = _MIXED
        return legacy, _precisions(pairs)

    def write(value: tuple[object, tuple[str, ...]]) -> None:
        legacy, precisions = value
        if legacy != _MIXED:
            put(legacy)
        _set_precisions(pairs, precisions)

    return read, write


# Those the legacy setters change too: set_float32_matmul_precision the matrix products',
# cudnn.allow_tf32 cuDNN's convolutions' and recurrent layers'.
_MATMUL_PAIRS = _fp32_pairs(("cuda", "matmul"), ("mkldnn", "matmul"))
_CUDNN_PAIRS = _fp32_pairs(("cuda", "conv"), ("cuda", "rnn"))
# The others, which only the newer API sets (torch.backends.fp32_precision = "tf32" sets its
# backends' values too: put back first, before the ones above).
_OTHER_PAIRS = _fp32_pairs(
    ("generic", "all"), ("cuda", "all"), ("mkldnn", "all"), ("mkldnn", "conv"), ("mkldnn", "rnn")
)


def _precisions(pairs: tuple[tuple[str, str], ...]) -> tuple[str, ...]:
    """The newer API's ``fp32_precision`` of each (backend, op) pair."""
    return tuple(torch._C._get_fp32_precision_getter(*pair) for pair in pairs)


def _set_precisions(pairs: tuple[tuple[str, str], ...], precisions: tuple[str, ...]) -> None:
    for pair, precision in zip(pairs, precisions, strict=True):
        torch._C._set_fp32_precision_setter(*pair, precision)


# torch's process-wide settings, each of which every later computation runs under: one an
# answer leaves changed would decide another task's verdict. (what a learner reads, get, set)
# The default dtype comes first: setting it also swaps torch.Storage, put back with it.
SETTINGS: tuple[Setting, ...] = (
    ("torch's default dtype (torch.set_default_dtype)", torch.get_default_dtype, torch.set_default_dtype),
    (
        "deterministic algorithms (torch.use_deterministic_algorithms)",
        lambda: (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()),
        _set_deterministic,
    ),
    ("the number of threads (torch.set_num_threads)", torch.get_num_threads, torch.set_num_threads),
    (
        "float32 precision of torch.backends (torch.backends.fp32_precision)",
        lambda: _precisions(_OTHER_PAIRS),
        lambda value: _set_precisions(_OTHER_PAIRS, value),
    ),
    (
        # (torch.backends.cuda.matmul.allow_tf32 is the same setting: True is "high")
        "float32 matrix products' precision (torch.set_float32_matmul_precision)",
        *_legacy_and_fp32(torch.get_float32_matmul_precision, torch.set_float32_matmul_precision, _MATMUL_PAIRS),
    ),
    (
        "anomaly detection (torch.autograd.set_detect_anomaly)",
        lambda: (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()),
        _set_anomaly,
    ),
    (
        "cuDNN's benchmark mode (torch.backends.cudnn.benchmark)",
        torch._C._get_cudnn_benchmark,
        torch._C._set_cudnn_benchmark,
    ),
    (
        "cuDNN's deterministic mode (torch.backends.cudnn.deterministic)",
        torch._C._get_cudnn_deterministic,
        torch._C._set_cudnn_deterministic,
    ),
    (
        "cuDNN's TF32 (torch.backends.cudnn.allow_tf32)",
        *_legacy_and_fp32(torch._C._get_cudnn_allow_tf32, torch._C._set_cudnn_allow_tf32, _CUDNN_PAIRS),
    ),
)


def settings() -> list[object]:
    """The value of each of ``SETTINGS`` now."""
    return [get() for _, get, _ in SETTINGS]


def settings_changed(kept: list[object]) -> list[str]:
    """Each of ``SETTINGS`` whose value differs from ``kept`` (``settings()`` taken earlier),
    named, and put back: a setting changed for the rest of the process (``torch.set_num_threads(1)``
    in an answer) is a check's to see, not the next task's."""
    changed = []
    for (what, get, put), value in zip(SETTINGS, kept, strict=True):
        if get() != value:
            put(value)
            changed.append(what)
    return changed


def reset_global_state() -> None:
    """Every check starts with autograd recording, float32 by default and no autocast."""
    torch.set_grad_enabled(True)
    torch.set_default_dtype(torch.float32)
    for device in AUTOCAST_DEVICES:
        try:
            if torch.is_autocast_enabled(device):
                torch.set_autocast_enabled(device, False)
        except (RuntimeError, TypeError):
            pass
    torch.clear_autocast_cache()


# Kernels an answer can register for torch's operators with torch.library, each changing what
# every later check computes, the check's own run of the operator included: under autocast's
# keys (``.impl("sum", f, "AutocastCPU")``: what autocast does to sum), and for the operators
# every check compares and reduces with (``.impl("equal", f, "CPU")``: every comparison says
# True). Read from torch's dispatcher itself as well as from torch.library's own list, which
# forgets an entry when an older library of the same kernel is freed (its finalizer takes the
# name out).
AUTOCAST_KEYS = ("AutocastCPU", "AutocastCUDA")
_COMPARED = ("equal", "allclose", "isclose", "eq", "ne", "sub", "abs", "all", "any", "max", "sum")
_KERNEL_LINE = re.compile(r"^(\w+): registered at (\S+?):\d+", re.M)
_COMPILED = (".cpp", ".cc", ".h", ".hpp", ".cu")


def registered_kernels() -> frozenset[str]:
    """The kernels that torch.library or the dispatcher say were registered from Python, as
    "aten/equal/CPU": every ``aten`` one torch.library lists, those of _COMPARED's operators,
    and every operator's kernel under an autocast key (torch registers its own at import;
    Meta kernels, which compute nothing, are left out).

    Asked before and after every check: reading the dispatcher is quick, making names of what
    it says is not, so the names are made again only when what it says has changed."""
    impls = getattr(torch.library, "_impls", ())
    dumps = [torch._C._dispatch_dump(f"aten::{op}") for op in _COMPARED]
    autocast = [_registrations(key) for key in AUTOCAST_KEYS]
    last = _LAST_READ
    if last and last[0] == impls and last[1] == dumps and last[2] == autocast:
        return last[3]
    found = {name for name in impls if name.startswith("aten/")}
    for op, dump in zip(_COMPARED, dumps, strict=True):
        for key, path in _KERNEL_LINE.findall(dump):
            if not path.endswith(_COMPILED):
                found.add(f"aten/{op}/{key}")
    for key, ops in zip(AUTOCAST_KEYS, autocast, strict=True):
        found |= {f"{op.replace('::', '/')}/{key}" for op in ops}
    kernels = frozenset(name for name in found if not name.endswith("/Meta"))
    _LAST_READ[:] = [frozenset(impls), dumps, autocast, kernels]
    return kernels


# What registered_kernels() last read (torch.library's list, the dumps, the autocast keys'
# operators) and the names it made of it.
_LAST_READ: list[Any] = []


def _registrations(key: str) -> list[str]:
    """The operators with a kernel under dispatch key ``key`` ([] where this PyTorch cannot
    say, or has no such key)."""
    try:
        return list(torch._C._dispatch_get_registrations_for_dispatch_key(key))
    except (AttributeError, RuntimeError):
        return []


def added_kernels(before: frozenset[str]) -> list[str]:
    """One line per kernel registered since ``before`` (``registered_kernels()``), each taken
    back where a ``torch.library.Library`` made it (a handle of torch's C++ made otherwise
    stays, and fails every later check)."""
    added = sorted(registered_kernels() - before)
    if added:
        _destroy_libraries(set(added))
    lines = []
    for name in added:
        op, key = "::".join(name.split("/")[:-1]), name.split("/")[-1]
        whose = "autocast's" if key.startswith("Autocast") else "torch's"
        lines.append(f"{whose} kernel for {op} on {key} (registered with torch.library)")
    return lines


def _destroy_libraries(impls: set[str]) -> None:
    """Take back the registrations of every ``torch.library.Library`` that made one of
    ``impls`` ("aten/sum/AutocastCPU"): found among all objects, which is slow, and runs only
    where an answer registered one."""
    library = getattr(torch.library, "Library", None)
    if library is None:
        return
    # type(), not isinstance(): asked its class, a dead weak proxy raises and a deprecated
    # module attribute warns.
    for obj in [obj for obj in gc.get_objects() if issubclass(type(obj), library)]:
        if impls & set(getattr(obj, "_op_impls", ())):
            obj._destroy()
            # its finalizer, once it is freed, takes these names out of torch.library's list:
            # they may be a later library's by then
            obj._op_impls.clear()
