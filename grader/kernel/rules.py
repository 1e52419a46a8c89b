"""What the kernel's guard watches and what it tells the learner: the modules, classes,
hooks and IPython methods the checks rely on, in one place so that a newcomer reads the
whole list (and a new thing to watch is added here, nowhere else)."""

from __future__ import annotations

import os

import torch

MISSING = object()  # "no value here": distinct from None, which a name may hold
TORCH_DIR = os.path.dirname(torch.__file__) + os.sep

# What a learner is told after the name of what their code replaced.
ADVICE = (
    "the checks rely on it as the setup left it. Give your own variables and functions names of their own, "
    "and never assign to torch's (or another module's) functions, not even through another name for the "
    "module. The grader has put the original back for the checks that follow."
)

# Builtins that ipykernel itself replaces while a cell runs.
KERNEL_BUILTINS = {"input", "getpass"}
# IPython's names in a kernel's namespace, never kept as a setup's helpers.
IPYTHON_NAMES = {"In", "Out", "get_ipython", "exit", "quit", "open", "_dh", "_ih", "_oh", "_", "__", "___"}

# Modules whose functions, classes and other objects (not their plain data: ints, strings,
# lists, dicts, which change legitimately) the checks rely on; those not imported yet when
# the snapshot is taken are left out.
WATCHED_MODULES = (
    "os",  # and time: the kernel's parent poller thread calls them (kernel_threads.py)
    "time",
    "_thread",
    "_posixsubprocess",
    "threading",
    "math",
    "copy",
    "io",
    "itertools",
    "inspect",
    "textwrap",
    "re",  # the checks that read generated code with it
    "numpy",
    "torch",
    "torch.functional",
    "torch.nn",
    "torch.nn.functional",
    "torch.nn.init",
    "torch.nn.utils",
    "torch.nn.utils.clip_grad",
    "torch.nn.modules.module",
    "torch.nn.parallel",
    "torch.autograd",
    "torch.autograd.graph",
    "torch.autograd.function",
    "torch.autograd.functional",
    "torch.testing",
    "torch.linalg",
    "torch.optim",
    "torch.amp",
    "torch.amp.grad_scaler",
    "torch.amp.autocast_mode",
    "torch.utils.checkpoint",
    "torch.utils.data",
    "torch.overrides",
    "torch.utils._python_dispatch",
    "torch.distributed",
    "torch.distributed.distributed_c10d",
    # What chapter 06's checks compile and partition with: an answer that swapped the min-cut
    # partitioner for the default one made the check's own measurement save what it guessed.
    "torch.export",  # 6.6's check saves and loads the program its answer exports
    "torch._functorch.partitioners",
    "torch._functorch.aot_autograd",
    # and the public modules 6.2's and 6.1's checks call (functorch.compile.aot_function, an
    # answer rebound through another name for the module), Dynamo's own (explain, reset) and the
    # bookkeeping of its automatic dynamic shapes, which 6.4's check counts with
    "functorch.compile",
    "torch.compiler",
    "torch._dynamo",
    "torch._dynamo.pgo",
    "coursekit.ranks",  # run_ranks_for_check: the checks' way to the ranks
    "coursekit.launch",
)
# Packages whose functions a Watch names; the notebook's own code is counted in steps.
WATCHED_PACKAGES = ("torch", "numpy", "coursekit")
# Modules whose classes are watched too (their methods and class attributes).
CLASS_MODULES = (
    "torch.nn",
    "torch.optim",
    "torch.amp",
    "torch.utils.data",
    "torch.nn.parallel",
    # torch's config modules (torch._dynamo.config...): a check copies the config as the setup left
    # it, and puts it back, through their methods
    "torch.utils._config_module",
    # Dynamo's classes that decide when a graph is compiled again (FrameStateSizeEntry: when a
    # size becomes dynamic) and what torch.compile returns; its stance is torch_state.py's
    "torch._dynamo.pgo",
    "torch._dynamo.eval_frame",
)
# Module-level registries of global hooks: a hook there changes every module's forward.
GLOBAL_MODULE_HOOKS = (
    "_global_forward_hooks",
    "_global_forward_pre_hooks",
    "_global_backward_hooks",
    "_global_backward_pre_hooks",
    "_global_forward_hooks_with_kwargs",
    "_global_forward_hooks_always_called",
    "_global_module_registration_hooks",
    "_global_parameter_registration_hooks",
    "_global_buffer_registration_hooks",
)
# Methods that change the container they are called on.
MUTATING_METHODS = {
    "update",
    "setdefault",
    "pop",
    "popitem",
    "clear",
    "append",
    "extend",
    "insert",
    "remove",
    "add",
    "discard",
}
# Methods of IPython's shell that decide what code a cell runs.
SHELL_METHODS = (
    "run_cell",
    "run_cell_async",
    "_run_cell",
    "should_run_async",
    "transform_cell",
    "transform_ast",
    "run_ast_nodes",
    "run_code",
)


def plain_data(value: object) -> bool:
    """Values a module or class may change by itself (counters, caches, settings)."""
    return value is None or isinstance(value, (bool, int, float, str, bytes, list, dict, set, tuple))
