"""torch's process-wide switches, as every check expects them: no mode left active, no
saved-tensor hooks, autograd recording (and not in inference mode), float32 by default, no
autocast."""

from __future__ import annotations

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
