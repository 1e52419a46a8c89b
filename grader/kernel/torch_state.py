"""torch's process-wide switches, as every check expects them: no mode left active, no
saved-tensor hooks, autograd recording (and not in inference mode), float32 by default, no
autocast, and autocast's kernels as torch registered them."""

from __future__ import annotations

import gc
import re

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
    return found


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


# The dispatch keys of autocast on the devices a check may use. A kernel registered there by an
# answer (``torch.library.Library("aten", "IMPL").impl("sum", f, "AutocastCPU")``) changes what
# autocast does to that op for every later check: the check's own run of the op included.
AUTOCAST_KEYS = ("AutocastCPU", "AutocastCUDA")


def autocast_kernels() -> dict[str, frozenset[str]]:
    """The operators that have a kernel of their own under each autocast key."""
    found = {}
    for key in AUTOCAST_KEYS:
        try:
            found[key] = frozenset(torch._C._dispatch_get_registrations_for_dispatch_key(key))
        except (AttributeError, RuntimeError):  # a PyTorch without the query, or the key
            continue
    return found


def added_autocast_kernels(before: dict[str, frozenset[str]]) -> list[str]:
    """One line per autocast kernel registered since ``before`` (``autocast_kernels()``); each
    is taken back where a ``torch.library.Library`` made it (a handle of torch's C++ made
    otherwise stays, and fails every later check)."""
    now = autocast_kernels()
    added = [(key, op) for key, ops in now.items() for op in sorted(ops - before.get(key, frozenset()))]
    if added:
        _destroy_libraries({f"{op.replace('::', '/')}/{key}" for key, op in added})
    return [f"autocast's kernel for {op} on {key} (registered with torch.library)" for key, op in added]


# The operators every check compares and reduces with: read from torch's dispatcher itself,
# since torch.library's own list of what it registered forgets an entry when an older library
# of the same kernel is freed (its finalizer takes the name out).
_COMPARED = ("equal", "allclose", "isclose", "eq", "ne", "sub", "abs", "all", "any", "max", "sum")
_KERNEL_LINE = re.compile(r"^(\w+): registered at (\S+?):\d+", re.M)
_COMPILED = (".cpp", ".cc", ".h", ".hpp", ".cu")


def python_kernels() -> frozenset[str]:
    """The kernels of torch's own operators (``aten``) registered from Python with
    ``torch.library`` ("aten/equal/CPU"), as torch.library lists them, and as the dispatcher
    has them for the operators of _COMPARED: an answer's kernel for ``aten::equal`` or
    ``aten::allclose`` would make every comparison of every later check say True. torch
    registers its own at import (and Meta kernels, which compute nothing, are left out)."""
    found = {name for name in getattr(torch.library, "_impls", ()) if name.startswith("aten/")}
    for op in _COMPARED:
        for key, path in _KERNEL_LINE.findall(torch._C._dispatch_dump(f"aten::{op}")):
            if not path.endswith(_COMPILED):
                found.add(f"aten/{op}/{key}")
    return frozenset(name for name in found if not name.endswith("/Meta"))


def added_python_kernels(before: frozenset[str]) -> list[str]:
    """One line per kernel of an ``aten`` operator registered since ``before``, each taken back."""
    added = python_kernels() - before
    if added:
        _destroy_libraries(set(added))
    return [
        f"torch's kernel for aten::{name.split('/')[1]} on {name.split('/')[2]} (registered with torch.library)"
        for name in sorted(added)
    ]


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
