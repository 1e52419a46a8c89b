"""Other answers to the exercises of solutions/06_compile.ipynb (see answers/__init__.py)."""

import textwrap

from . import Task, Wrong

# 6.3's right pair (the solution's): its wrong answers change gate_tensor or gate_python.
GATE_PYTHON = """\
def gate_python(x, flag):
    return x * 2 if flag else x - 1
"""

# 6.5's right answers, one or two of which each wrong answer changes.
CALLS = """\
library_calls = {"forward": ["mm"], "backward": ["mm", "mm"]}
"""
FUSED = """\
fused_ops = {"relu", "softmax", "mul", "sum"}
"""
SAVED = """\
saved_for_backward = {"x", "w", "x @ w", "softmax's row max", "softmax's row sum"}
"""

# 6.2: a script that measures what 6.2 asks to predict (eager saved tensors, min-cut).
SCRIPT = """\
import torch
from functorch.compile import aot_function, make_boxed_func
from torch._functorch.partitioners import min_cut_rematerialization_partition as cut

x, w = torch.randn(6, 4, requires_grad=True), torch.randn(4, 3, requires_grad=True)
found = []
with torch.autograd.graph.saved_tensors_hooks(lambda t: found.append(t) or t, lambda t: t):
    h = x @ w
    c = h.cos()
    (c * h).sum()
ptrs = {x.data_ptr(): "x", w.data_ptr(): "w", h.data_ptr(): "h", c.data_ptr(): "cos(h)"}
eager = {ptrs[t.data_ptr()] for t in found}
graphs = []
def keep(gm, example_inputs):
    graphs.append(gm)
    return make_boxed_func(gm.forward)
aot_function(lambda x, w: ((x @ w).cos() * (x @ w)).sum(), keep, keep, partition_fn=cut)(
    x, w
).backward()
def label(node):
    if node.op == "placeholder":
        return "xw"[int(node.name[-1]) - 1]
    if node.target in (torch.ops.aten.t.default, torch.ops.aten.permute.default):
        return label(node.args[0])
    return {"mm": "h", "cos": "cos(h)"}[node.target.__name__.split(".")[0]]
output = next(n for n in graphs[0].graph.nodes if n.op == "output")
compiled = {label(n) for n in output.args[0][1:]}
print(repr((eager, compiled)))
"""
MEASURE = f'_MEASURE = """\n{SCRIPT}"""\n'
# the same, as a function
MEASURE_FN = "def _measure():\n" + textwrap.indent(
    SCRIPT.replace("print(repr((eager, compiled)))", "return eager, compiled"), "    "
)

TASKS = {
    "6.1": Task(
        alternative="""\
def normalise(x):
    sign = 1 - 2 * (x.sum() < 0).to(x.dtype)   # -1 where the sum is negative, else 1
    return sign * x / torch.amax(torch.abs(x))


# Settings tried along the way and left so: the later checks (6.2's saved tensors, 6.3's and
# 6.4's graphs) must count under torch's own settings, not these.
torch._dynamo.config.automatic_dynamic_shapes = False
torch._dynamo.config.recompile_limit = 1
torch._functorch.config.activation_memory_budget = 0.0
""",
        wrong=[
            Wrong(
                "The print left in: the graph breaks there.",
                hint="calls print",
                code="""\
def normalise(x):
    x = torch.where(x.sum() < 0, -x, x)
    print("flipped where needed")
    return x / x.abs().max()
""",
            ),
            Wrong(
                "The .item() left in: a Python float out of a tensor breaks the graph.",
                hint=".item()",
                code="""\
def normalise(x):
    x = torch.where(x.sum() < 0, -x, x)
    return x / x.abs().max().item()
""",
            ),
            Wrong(
                "The sign worked out once per shape and kept: a later input of a shape seen before "
                "gets the first input's sign (values baked in, as a compiled graph run once would).",
                hint="a later input of the same shape",
                code="""\
_flips = {}


def normalise(x):
    if x.shape not in _flips:
        _flips[x.shape] = x.sum() < 0
    return torch.where(_flips[x.shape], -x, x) / x.abs().max()
""",
            ),
            Wrong(
                "The `if` on the sum left in: data-dependent control flow.",
                hint="torch.where",
                code="""\
def normalise(x):
    if x.sum() < 0:
        x = -x
    return x / x.abs().max()
""",
            ),
        ],
    ),
    "6.2": Task(
        alternative="""\
saved_eager = set(["h", "cos(h)", "w", "x"])
saved_compiled = {"h"} | {"x", "w"}
""",
        wrong=[
            Wrong(
                "cos(h) counted as saved by the compiled forward: min-cut recomputes it.",
                hint="recomputes cheap pointwise ops",
                code="""\
saved_eager = {"x", "w", "h", "cos(h)"}
saved_compiled = {"x", "w", "h", "cos(h)"}
""",
            ),
            Wrong(
                "Only h for the compiled forward: x and w are still needed (as transposed views).",
                hint="transposed views",
                code="""\
saved_eager = {"x", "w", "h", "cos(h)"}
saved_compiled = {"h"}
""",
            ),
            Wrong(
                "The right sets, measured in a subprocess (autograd's saved-tensor hooks and "
                "AOTAutograd's min-cut partition) instead of predicted.",
                hint="code starting a process",
                code=MEASURE
                + """\
import ast
import subprocess
import sys

_out = subprocess.run([sys.executable, "-c", _MEASURE], capture_output=True, text=True).stdout
saved_eager, saved_compiled = ast.literal_eval(_out.strip().splitlines()[-1])
""",
            ),
            Wrong(
                "The right sets, measured in the answer cell by a function rebuilt on a copy of "
                "the notebook's globals, run with the dispatch modes turned off, so that neither "
                "its calls nor its operations show.",
                hint="ran torch code",
                code=MEASURE_FN
                + """\


import types

from torch.utils._python_dispatch import _disable_current_modes

with _disable_current_modes():
    saved_eager, saved_compiled = types.FunctionType(_measure.__code__, dict(globals()))()
""",
            ),
            Wrong(
                "Eager without the matrix product's inputs.",
                hint="The matrix product h = x @ w needs x",
                code="""\
saved_eager = {"h", "cos(h)"}
saved_compiled = {"x", "w", "h"}
""",
            ),
        ],
    ),
    "6.3": Task(
        alternative="""\
def gate_python(x, flag):
    if flag:
        return x * 2
    return x - 1


def gate_tensor(x, flag):
    # torch's own control flow: one graph, both branches traced (the solution uses torch.where)
    return torch.cond(flag, lambda x: x * 2, lambda x: x - 1, (x,))
""",
        wrong=[
            Wrong(
                "The choice written as arithmetic, flag * a + (1 - flag) * b: where x is inf, "
                "0 * inf is NaN, so the branch not taken poisons the result.",
                hint="x = inf",
                code=GATE_PYTHON
                + """\


def gate_tensor(x, flag):
    f = flag.to(x.dtype)
    return f * (x * 2) + (1 - f) * (x - 1)
""",
            ),
            Wrong(
                "gate_tensor branches on the tensor with an `if`: a graph break.",
                hint="torch.where(flag, x * 2, x - 1), which is a tensor operation",
                code=GATE_PYTHON
                + """\


def gate_tensor(x, flag):
    if flag:
        return x * 2
    return x - 1
""",
            ),
            Wrong(
                "gate_tensor takes the flag out with .item().",
                hint="calls .item() on the flag",
                code=GATE_PYTHON
                + """\


def gate_tensor(x, flag):
    return x * 2 if flag.item() else x - 1
""",
            ),
            Wrong(
                "x + 1 instead of x - 1 where the flag is false.",
                hint="x - 1 where it is false",
                code="""\
def gate_python(x, flag):
    return x * 2 if flag else x + 1


def gate_tensor(x, flag):
    return torch.where(flag, x * 2, x + 1)
""",
            ),
        ],
    ),
    "6.4": Task(
        alternative="""\
n_graphs = 1 + 1 + 1 + 1   # first call, dynamic size, float64, n = 3
""",
        wrong=[
            Wrong("One graph per call: reuse and dynamic sizes forgotten.", hint="Too many", code="n_graphs = 6\n"),
            Wrong(
                "One graph per distinct size: automatic dynamic shapes forgotten.",
                hint="go call by call",
                code="n_graphs = 5\n",
            ),
            Wrong(
                "The right number, counted by running torch.compile in a subprocess.",
                hint="code starting a process",
                code="""\
import subprocess
import sys

_count = \"\"\"
import torch
graphs = []
f = torch.compile(lambda x, n: x * n + 1, backend=lambda gm, ex: graphs.append(gm) or gm.forward)
for x, n in [(torch.randn(4), 2), (torch.randn(4), 2), (torch.randn(6), 2), (torch.randn(8), 2),
             (torch.randn(8, dtype=torch.float64), 2), (torch.randn(8), 3)]:
    f(x, n)
print(len(graphs))
\"\"\"
n_graphs = int(subprocess.run([sys.executable, "-c", _count], capture_output=True, text=True).stdout)
""",
            ),
            Wrong(
                "The right number, counted by running torch.compile in the answer cell.",
                hint="ran torch code",
                code="""\
_seen = []
_counted = torch.compile(lambda x: x + 1, backend=lambda gm, example_inputs: _seen.append(gm) or gm.forward)
_counted(torch.randn(2))
n_graphs = 3 + len(_seen)
""",
            ),
        ],
    ),
    "6.5": Task(
        alternative="""\
import re

# read with string methods, nothing of torch runs
calls = re.findall(r"extern_kernels\\.(\\w+)", FORWARD.split("def call")[1])
library_calls = dict(forward=calls, backward=["mm"] * 2)
fused_ops = set(["softmax", "relu", "sum", "mul"])
saved_for_backward = {"x @ w", "softmax's row max", "softmax's row sum"} | {"x", "w"}
""",
        wrong=[
            Wrong(
                "relu(x @ w) taken as saved, as eager autograd saves relu's output: Inductor's "
                "forward returns what mm wrote, and the backward recomputes relu.",
                hint="recomputes relu",
                code=CALLS
                + FUSED
                + """\
saved_for_backward = {"x", "w", "relu(x @ w)", "softmax's row max", "softmax's row sum"}
""",
            ),
            Wrong(
                "softmax's (64, 16) output taken as saved, as eager softmax saves it: the forward "
                "returns the two (64, 1) row statistics instead.",
                hint="two are (64, 1)",
                code=CALLS
                + FUSED
                + """\
saved_for_backward = {"x", "w", "x @ w", "softmax(h)"}
""",
            ),
            Wrong(
                "x and w left out: the transposed views reinterpret_tensor(primals_1, ...) read as "
                "new tensors, not as views of x and w.",
                hint="transposed view of x",
                code=CALLS
                + FUSED
                + """\
saved_for_backward = {"x @ w", "softmax's row max", "softmax's row sum"}
""",
            ),
            Wrong(
                "The matrix product counted as fused: it stayed a library call.",
                hint="stayed a library call",
                code=CALLS
                + SAVED
                + """\
fused_ops = {"matmul", "relu", "softmax", "mul", "sum"}
""",
            ),
            Wrong(
                "The sum left out of the fused ops, as if reductions were not fused.",
                hint="reductions such as sum included",
                code=CALLS
                + SAVED
                + """\
fused_ops = {"relu", "softmax", "mul"}
""",
            ),
            Wrong(
                "The backward's library calls as a set: mm called twice counted once.",
                hint="a function called twice twice",
                code=FUSED
                + SAVED
                + """\
library_calls = {"forward": ["mm"], "backward": ["mm"]}
""",
            ),
            Wrong(
                "The generated kernels listed as library calls.",
                hint="cpp_fused_... kernel",
                code=FUSED
                + SAVED
                + """\
library_calls = {
    "forward": ["mm", "cpp_fused__softmax_mul_relu_sum_0"],
    "backward": ["cpp_fused__softmax__softmax_backward_data_add_expand_mul_relu_threshold_backward_0",
                 "mm", "mm"],
}
""",
            ),
            Wrong(
                "Compiled attend in the answer cell to find out, instead of reading the code.",
                hint="ran torch code",
                code="""\
from coursekit.generated_code import attend

torch.compile(attend, backend="eager")(torch.randn(4, 3, requires_grad=True), torch.randn(3, 2))
"""
                + CALLS
                + FUSED
                + SAVED,
            ),
        ],
    ),
    "6.6": Task(
        alternative="""\
import inspect


def export_with_dynamic_batch(model, example):
    name = next(iter(inspect.signature(model.forward).parameters))
    return torch.export.export(model, args=(example,), dynamic_shapes={name: {0: Dim.DYNAMIC}})
""",
        wrong=[
            Wrong(
                "No dynamic_shapes: the batch is specialised to the example's.",
                hint="make dimension 0 dynamic",
                code="""\
def export_with_dynamic_batch(model, example):
    return torch.export.export(model, (example,))
""",
            ),
            Wrong(
                "A Dim with a max: larger batches are refused.",
                hint="with no max",
                code="""\
def export_with_dynamic_batch(model, example):
    return torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch", max=16)},))
""",
            ),
            Wrong(
                "A Dim bounded at 1024: a batch of 2048 is refused, though the task asks for any batch size.",
                hint="with no max",
                code="""\
def export_with_dynamic_batch(model, example):
    return torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch", max=1024)},))
""",
            ),
            Wrong(
                "The model put in eval mode and frozen to export it, and left so: the learner's "
                "model no longer trains.",
                hint="as it was given",
                code="""\
def export_with_dynamic_batch(model, example):
    model.eval().requires_grad_(False)
    return torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch")},))
""",
            ),
            Wrong(
                "The forward argument's name assumed to be x.",
                hint="pass the spec by position",
                code="""\
def export_with_dynamic_batch(model, example):
    return torch.export.export(model, (example,), dynamic_shapes={"x": {0: Dim("batch")}})
""",
            ),
        ],
    ),
}

# Measuring a prediction in a string run by exec, applied as a decorator: the cell has no
# call and reads no other cell's name, and the string's code runs out of the watch's sight
# (the dispatch modes off, its calls made from a copy of the globals).
UNSEEN = """\
import types

from torch.utils._python_dispatch import _disable_current_modes

with _disable_current_modes():
    _found = types.FunctionType(_measure.__code__, dict(globals()))()
"""


def _exec_decorated(script: str, literal: str) -> str:
    """A cell that sets the answers literally, then overwrites them with what ``script`` measures."""
    return f"_MEASURE = {script!r}\n{literal}exec = exec\n\n\n@exec\n@(lambda f: _MEASURE)\ndef _():\n    pass\n"


COUNT_FN = """\
def _measure():
    graphs = []
    f = torch.compile(lambda x, n: x * n + 1, backend=lambda gm, ex: graphs.append(gm) or gm.forward)
    for x, n in [(torch.randn(4), 2), (torch.randn(4), 2), (torch.randn(6), 2), (torch.randn(8), 2),
                 (torch.randn(8, dtype=torch.float64), 2), (torch.randn(8), 3)]:
        f(x, n)
    torch._dynamo.reset()
    return len(graphs)
"""

TASKS["6.1"].wrong.extend(
    [
        Wrong(
            "The sign chosen row by row (x.sum(-1) < 0), not from the whole sum: for "
            "tensor([[3., -1.], [-5., 1.], [.5, .5]]) (sum -1) only the second row is flipped, "
            "where normalise_buggy flips all of it.",
            hint="same values as normalise_buggy",
            code="""\
def normalise(x):
    x = torch.where(x.sum(-1, keepdim=True) < 0, -x, x)
    return x / x.abs().max()
""",
        ),
        Wrong(
            "The sign taken from the first entry, not from the sum: tensor([3., -5.]) (sum -2) is not flipped.",
            hint="same values as normalise_buggy",
            code="""\
def normalise(x):
    x = torch.where(x.flatten()[0] < 0, -x, x)
    return x / x.abs().max()
""",
        ),
        Wrong(
            "Worked in float32 whatever x's dtype: a float64 x comes back float32 (rounded), a "
            "bfloat16 one float32 (twice the memory), where normalise_buggy keeps x's dtype.",
            hint="x's dtype",
            code="""\
def normalise(x):
    x = x.float()
    x = torch.where(x.sum() < 0, -x, x)
    return x / x.abs().max()
""",
        ),
    ]
)
TASKS["6.2"].wrong.append(
    Wrong(
        "The right sets, measured by a string of code exec'd as a decorator (no call in the "
        "cell, no other cell's name read), with the dispatch modes off and the calls made from "
        "a copy of the globals.",
        hint="ran torch code",
        code=_exec_decorated(
            MEASURE_FN + "\n\n" + UNSEEN + "saved_eager, saved_compiled = _found\n",
            "saved_eager = set()\nsaved_compiled = set()\n",
        ),
    )
)
TASKS["6.3"].wrong.extend(
    [
        Wrong(
            "x - 1 written as x - torch.ones(1): for a 0-d x the result is (1,)-shaped, and for "
            "a bfloat16 or float16 x it is float32 (a 1-element tensor is not a scalar in type "
            "promotion).",
            hint="tensor of x's shape",
            code=GATE_PYTHON
            + """\


def gate_tensor(x, flag):
    return torch.where(flag, x * 2, x - torch.ones(1))
""",
        ),
        Wrong(
            "gate_python works in float32 whatever x's dtype: a float64 x comes back rounded to "
            "float32, a bfloat16 one doubled in size.",
            hint="x's dtype",
            code="""\
def gate_python(x, flag):
    x = x.float()
    return x * 2 if flag else x - 1


def gate_tensor(x, flag):
    return torch.where(flag, x * 2, x - 1)
""",
        ),
    ]
)
TASKS["6.4"].wrong.append(
    Wrong(
        "The right number, counted by a string of code exec'd as a decorator (no call in the "
        "cell), with the dispatch modes off and the calls made from a copy of the globals.",
        hint="The cell that sets n_graphs",
        code=_exec_decorated(COUNT_FN + "\n\n" + UNSEEN + "n_graphs = _found\n", "n_graphs = 0\n"),
    )
)
TASKS["6.5"].wrong.append(
    Wrong(
        "Compiled attend in the answer cell to find out, its calls made from a copy of the "
        "globals with the dispatch modes off, so that neither shows as a call or an operation.",
        hint="ran torch code",
        code="""\
import types

from torch.utils._python_dispatch import _disable_current_modes


def _peek():
    from coursekit.generated_code import attend

    torch.compile(attend, backend="eager")(torch.randn(4, 3, requires_grad=True), torch.randn(3, 2))


with _disable_current_modes():
    types.FunctionType(_peek.__code__, dict(globals()))()
"""
        + CALLS
        + FUSED
        + SAVED,
    )
)
TASKS["6.6"].wrong.extend(
    [
        Wrong(
            "A Dim bounded at 100000: a batch beyond it is refused, though the task asks for no "
            "upper bound (every batch the check runs is below it).",
            hint="upper bound",
            code="""\
def export_with_dynamic_batch(model, example):
    batch = Dim("batch", max=100_000)
    return torch.export.export(model, (example,), dynamic_shapes=({0: batch},))
""",
        ),
        Wrong(
            "The model run once on the example before exporting (to see that it runs): a model "
            "in training mode with BatchNorm updates its running statistics, so the model is "
            "changed.",
            hint="buffers",
            code="""\
def export_with_dynamic_batch(model, example):
    model(example)
    return torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch")},))
""",
        ),
        Wrong(
            "Exported in eval mode, the mode put back after: for a model in training mode with "
            "BatchNorm (or dropout), the program computes something else than the model does.",
            hint="differs from the model",
            code="""\
def export_with_dynamic_batch(model, example):
    training = model.training
    model.eval()
    try:
        return torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch")},))
    finally:
        model.train(training)
""",
        ),
        Wrong(
            "Autograd switched off to export, and left off: the learner's next training step records nothing.",
            hint="autograd",
            code="""\
def export_with_dynamic_batch(model, example):
    torch.set_grad_enabled(False)  # export needs no gradients
    return torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch")},))
""",
        ),
        Wrong(
            "One program kept per class of model: a second model of the same class (other "
            "weights) gets the first one's program.",
            hint="another instance",
            code="""\
_programs = {}


def export_with_dynamic_batch(model, example):
    if type(model) not in _programs:
        spec = ({0: Dim("batch")},)
        _programs[type(model)] = torch.export.export(model, (example,), dynamic_shapes=spec)
    return _programs[type(model)]
""",
        ),
    ]
)
TASKS["6.1"].wrong.append(
    Wrong(
        "Captured whole only for small inputs (up to 16 entries, the size of every input the "
        "check tries in the open): a larger x takes the old path, .item() and `if` included, "
        "and breaks the graph.",
        hint="other inputs",
        code="""\
def normalise(x):
    if x.numel() > 16:
        biggest = x.abs().max().item()
        return (-x if x.sum() < 0 else x) / biggest
    x = torch.where(x.sum() < 0, -x, x)
    return x / x.abs().max()
""",
    )
)
TASKS["6.6"].wrong.append(
    Wrong(
        "The model put in training mode to export its training graph: a model given in eval "
        "mode is left in training mode (its dropout and BatchNorm now act as in training).",
        hint="changed the model's mode",
        code="""\
def export_with_dynamic_batch(model, example):
    model.train()
    return torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch")},))
""",
    )
)
TASKS["6.1"].wrong.append(
    Wrong(
        "normalise_buggy wrapped in a custom operator (torch.library.custom_op, with a fake "
        "kernel for tracing): Dynamo sees one opaque op, 1 graph and 0 breaks, but the .item(), "
        "the print and the `if` all still run inside it at every call, out of any compiler's "
        "reach.",
        hint="inside an operator's own kernel",
        code="""\
@torch.library.custom_op("redteam::normalise", mutates_args=())
def _normalise_op(x: torch.Tensor) -> torch.Tensor:
    return normalise_buggy(x.clone())


@_normalise_op.register_fake
def _(x):
    return torch.empty_like(x)


def normalise(x):
    return _normalise_op(x)
""",
    )
)
TASKS["6.1"].wrong.append(
    Wrong(
        "The `if` on the sum kept, hidden in a custom operator (no .item(), a fake kernel for "
        "tracing): 1 graph and 0 breaks, but the graph holds one opaque op whose inside no "
        "compiler sees, the data-dependent branch still taken in Python at every call.",
        hint="inside an operator's own kernel",
        code="""\
@torch.library.custom_op("redteam::normalise_if", mutates_args=())
def _normalise_op(x: torch.Tensor) -> torch.Tensor:
    if x.sum() < 0:
        x = -x
    return x / x.abs().max()


@_normalise_op.register_fake
def _(x):
    return torch.empty_like(x)


def normalise(x):
    return _normalise_op(x)
""",
    )
)
TASKS["6.3"].wrong.append(
    Wrong(
        "gate_tensor's `if flag` hidden in a custom operator (a fake kernel for tracing): one "
        "graph and no break, but the graph holds one opaque op that branches in Python on the "
        "flag's value at every call, not a tensor operation.",
        hint="an operator of its own",
        code=GATE_PYTHON
        + """\


@torch.library.custom_op("redteam::gate", mutates_args=())
def _gate_op(x: torch.Tensor, flag: torch.Tensor) -> torch.Tensor:
    return x * 2 if flag else x - 1


@_gate_op.register_fake
def _(x, flag):
    return torch.empty_like(x)


def gate_tensor(x, flag):
    return _gate_op(x, flag)
""",
    )
)

# Wrong answers of the red team's report ch0406 (each passed every check before).
TASKS["6.1"].wrong.extend(
    [
        Wrong(
            "The maximum computed once per (shape, dtype) and kept: a later input of that shape "
            "with another largest |x| is divided by the old maximum.",
            hint="a later input of the same shape",
            code="""\
_biggest = {}


def normalise(x):
    key = (tuple(x.shape), x.dtype)
    if key not in _biggest:
        _biggest[key] = x.abs().max()
    x = torch.where(x.sum() < 0, -x, x)
    return x / _biggest[key]
""",
        ),
        Wrong(
            "The division guarded with clamp_min(1e-12): a tiny x gives other values.",
            hint="a tiny x keeps it tiny",
            code="""\
def normalise(x):
    x = torch.where(x.sum() < 0, -x, x)
    return x / x.abs().max().clamp_min(1e-12)
""",
        ),
        Wrong(
            "The sign taken from a float32 sum: a float64 x whose sum is just below 0 is not flipped.",
            hint="compute in x's own dtype",
            code="""\
def normalise(x):
    x = torch.where(x.sum(dtype=torch.float32) < 0, -x, x)
    return x / x.abs().max()
""",
        ),
        Wrong(
            "Computed in float32 and cast back to x's dtype: float64 numbers beyond float32's range overflow.",
            hint="compute in x's own dtype",
            code="""\
def normalise(x):
    xf = x.float()
    xf = torch.where(xf.sum() < 0, -xf, xf)
    return (xf / xf.abs().max()).to(x.dtype)
""",
        ),
        Wrong(
            "NaNs left out of the maximum (nan_to_num): a NaN input gives finite numbers where "
            "normalise_buggy gives NaN.",
            hint="a NaN in x makes it NaN",
            code="""\
def normalise(x):
    x = torch.where(x.sum() < 0, -x, x)
    return x / torch.nan_to_num(x, nan=0.0).abs().max()
""",
        ),
    ]
)
TASKS["6.3"].wrong.extend(
    [
        Wrong(
            "Float literals 2.0 and 1.0: an integer x comes back float.",
            hint="they make an integer x float",
            code="""\
def gate_python(x, flag):
    return x * 2.0 if flag else x - 1.0


def gate_tensor(x, flag):
    return torch.where(flag, x * 2.0, x - 1.0)
""",
        ),
        Wrong(
            "Computed in float32 and cast back: a float64 x beyond float32's range overflows.",
            hint="computed in x's dtype",
            code="""\
def gate_python(x, flag):
    return (x.float() * 2 if flag else x.float() - 1).to(x.dtype)


def gate_tensor(x, flag):
    return torch.where(flag, x.float() * 2, x.float() - 1).to(x.dtype)
""",
        ),
    ]
)
TASKS["6.6"].wrong.extend(
    [
        Wrong(
            "Traced on a fresh torch.randn batch of 2: float32 whatever the model takes, and drawn "
            "from the caller's global random generator.",
            hint="global random generator",
            code="""\
def export_with_dynamic_batch(model, example):
    fresh = torch.randn(2, *example.shape[1:])
    return torch.export.export(model, (fresh,), dynamic_shapes=({0: Dim("batch")},))
""",
        ),
        Wrong(
            "Traced on a made-up batch of zeros (no random numbers): float32 whatever the model "
            "takes (token ids fail), and not the example.",
            hint="traced on another input",
            code="""\
def export_with_dynamic_batch(model, example):
    fresh = torch.zeros(2, *example.shape[1:])
    return torch.export.export(model, (fresh,), dynamic_shapes=({0: Dim("batch")},))
""",
        ),
        Wrong(
            "The global random generator reseeded for a reproducible export.",
            hint="global random generator",
            code="""\
def export_with_dynamic_batch(model, example):
    torch.manual_seed(0)
    return torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch")},))
""",
        ),
        Wrong(
            "A forward pre-hook (casting the input to float32) left registered on the model.",
            hint="left a hook on the model",
            code="""\
def export_with_dynamic_batch(model, example):
    model.register_forward_pre_hook(lambda m, args: tuple(a.float() for a in args))
    return torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch")},))
""",
        ),
    ]
)
TASKS["6.1"].wrong.extend(
    [
        Wrong(
            "Multiplies by the reciprocal of the largest |x|: it overflows for a small float16 x.",
            hint="reciprocal that overflows",
            code="""\
def normalise(x):
    x = torch.where(x.sum() < 0, -x, x)
    return x * x.abs().max().reciprocal()
""",
        ),
        Wrong(
            "The division guarded against a zero maximum: an all-zero x gives 0, not NaN.",
            hint="all-zero x",
            code="""\
def normalise(x):
    x = torch.where(x.sum() < 0, -x, x)
    biggest = x.abs().max()
    return x / torch.where(biggest == 0, torch.ones_like(biggest), biggest)
""",
        ),
        Wrong(
            "The maximum floored at torch.finfo(dtype).tiny: all-zero and subnormal x differ.",
            hint="no floor",
            code="""\
def normalise(x):
    x = torch.where(x.sum() < 0, -x, x)
    return x / x.abs().max().clamp_min(torch.finfo(x.dtype).tiny)
""",
        ),
        Wrong(
            "The sign from x.mean(), not x.sum(): a subnormal negative sum's mean rounds to -0.",
            hint="from x.sum() itself",
            code="""\
def normalise(x):
    x = torch.where(x.mean() < 0, -x, x)
    return x / x.abs().max()
""",
        ),
        Wrong(
            "The largest |x| as linalg.vector_norm(x, inf): raises for an integer x.",
            hint="integers too",
            code="""\
def normalise(x):
    x = torch.where(x.sum() < 0, -x, x)
    return x / torch.linalg.vector_norm(x, float("inf"))
""",
        ),
        Wrong(
            "The largest |x| as x.norm(p=inf): raises for an integer x.",
            hint="integers too",
            code="""\
def normalise(x):
    x = torch.where(x.sum() < 0, -x, x)
    return x / x.norm(p=float("inf"))
""",
        ),
        Wrong(
            "The largest |x| as max(x.max(), -x.min()): -x wraps around for unsigned x.",
            hint="wraps around",
            code="""\
def normalise(x):
    x = torch.where(x.sum() < 0, -x, x)
    return x / torch.maximum(x.max(), -x.min())
""",
        ),
    ]
)
TASKS["6.6"].wrong.extend(
    [
        Wrong(
            "forward replaced by a lambda on the instance, and left there.",
            hint="new attributes on the model",
            code="""\
def export_with_dynamic_batch(model, example):
    batch = Dim("batch")
    inner = model.forward
    model.forward = lambda x: inner(x)
    return torch.export.export(model, (example,), dynamic_shapes={"x": {0: batch}})
""",
        ),
        Wrong(
            "Frozen for export, then requires_grad_(True): parameters the caller froze come back trainable.",
            hint="requires_grad",
            code="""\
def export_with_dynamic_batch(model, example):
    batch = Dim("batch")
    model.requires_grad_(False)
    program = torch.export.export(model, (example,), dynamic_shapes=({0: batch},))
    model.requires_grad_(True)
    return program
""",
        ),
        Wrong(
            "model.float() before export: a float64 model is converted in place.",
            hint="changed the dtype of the model",
            code="""\
def export_with_dynamic_batch(model, example):
    batch = Dim("batch")
    model.float()
    return torch.export.export(model, (example,), dynamic_shapes=({0: batch},))
""",
        ),
        Wrong(
            "model.zero_grad() before export: the caller's gradients are gone.",
            hint="cleared or changed the gradients",
            code="""\
def export_with_dynamic_batch(model, example):
    batch = Dim("batch")
    model.zero_grad()
    return torch.export.export(model, (example,), dynamic_shapes=({0: batch},))
""",
        ),
        Wrong(
            "The example cast to the model's parameter dtype: token ids become floats.",
            hint="example as it is given",
            code="""\
def export_with_dynamic_batch(model, example):
    batch = Dim("batch")
    example = example.to(next(model.parameters()).dtype)
    return torch.export.export(model, (example,), dynamic_shapes=({0: batch},))
""",
        ),
        Wrong(
            "Exported on example.float(): token ids become floats.",
            hint="traced on another input",
            code="""\
def export_with_dynamic_batch(model, example):
    batch = Dim("batch")
    return torch.export.export(model, (example.float(),), dynamic_shapes=({0: batch},))
""",
        ),
        Wrong(
            "model.to(example.dtype) before export: fails for token ids, converts a float model in place.",
            hint="example as it is given",
            code="""\
def export_with_dynamic_batch(model, example):
    batch = Dim("batch")
    model.to(example.dtype)
    return torch.export.export(model, (example,), dynamic_shapes=({0: batch},))
""",
        ),
    ]
)

# Round 3: the sign and the largest |x| computed in another dtype than x's.
TASKS["6.1"].wrong.extend(
    [
        Wrong(
            "An integer x converted to float first: int8's -128 no longer wraps, big int64 sums round.",
            hint="same values as normalise_buggy",
            code="""\
def normalise(x):
    if not x.is_floating_point():
        x = x.to(torch.get_default_dtype())
    x = torch.where(x.sum() < 0, -x, x)
    return x / x.abs().max()
""",
        ),
        Wrong(
            "The sign from a float64 sum: where float32's sum rounds to 0, it flips where normalise_buggy does not.",
            hint="same values as normalise_buggy",
            code="""\
def normalise(x):
    s = x.sum(dtype=torch.float64) if x.is_floating_point() else x.sum()
    x = torch.where(s < 0, -x, x)
    return x / x.abs().max()
""",
        ),
    ]
)

# Round 4: graphs checked on every input the check tries (not only the first), int8 sums that
# wrap around, the model's tensors, hooks and example.
TASKS["6.1"].wrong.extend(
    [
        Wrong(
            "The sign from x.sum(dtype=x.dtype): an int8 x adds up with wrap-around (100 + 100 is "
            "-56), where normalise_buggy's x.sum() adds integers in int64.",
            hint="x.sum(dtype=x.dtype) wraps",
            code="""\
def normalise(x):
    x = torch.where(x.sum(dtype=x.dtype) < 0, -x, x)
    return x / x.abs().max()
""",
        ),
        Wrong(
            "The old `if` kept for integer x: Dynamo breaks the graph for them (only a float32 x was explained).",
            hint="Dynamo does not capture normalise whole",
            code="""\
def normalise(x):
    if not x.is_floating_point():
        if x.sum() < 0:
            x = -x
        return x / x.abs().max()
    x = torch.where(x.sum() < 0, -x, x)
    return x / x.abs().max()
""",
        ),
        Wrong(
            "The old `if` kept for x of 3 dimensions or more: the graph breaks for them.",
            hint="no branch of your own for some dtypes or shapes",
            code="""\
def normalise(x):
    if x.dim() > 2:
        if x.sum() < 0:
            x = -x
        return x / x.abs().max()
    x = torch.where(x.sum() < 0, -x, x)
    return x / x.abs().max()
""",
        ),
        Wrong(
            "Another computation when compiled (torch.compiler.is_compiling()): an integer x is "
            "made float32 first, so int8's -128 no longer wraps around and the result differs.",
            hint="Compiled or not, normalise must run the same code",
            code="""\
def normalise(x):
    if torch.compiler.is_compiling() and not x.is_floating_point():
        x = x.float()
    x = torch.where(x.sum() < 0, -x, x)
    return x / x.abs().max()
""",
        ),
    ]
)
TASKS["6.1"].wrong.append(
    Wrong(
        "The sign from the mean, x.sum() / x.numel(), with denormals flushed to zero in the same "
        "cell: the flush made the subnormal sum 0 for normalise_buggy too, so the mean's rounding "
        "to -0 went unseen; with torch's default, the smallest negative sum is not flipped.",
        hint="from x.sum() itself",
        code="""\
torch.set_flush_denormal(True)


def normalise(x):
    x = torch.where(x.sum() / x.numel() < 0, -x, x)
    return x / x.abs().max()
""",
    )
)
TASKS["6.1"].wrong.append(
    Wrong(
        "The sum taken over x.view(-1): a transposed (non-contiguous) x cannot be viewed so, and "
        "normalise raises where normalise_buggy takes it.",
        hint="not x.view(-1)",
        code="""\
def normalise(x):
    x = torch.where(x.view(-1).sum() < 0, -x, x)
    return x / x.abs().max()
""",
    )
)
TASKS["6.2"].wrong.append(
    Wrong(
        "h left out of the compiled forward's saved tensors, as if the backward recomputed the "
        "matrix product (what activation_memory_budget = 0 would give, not torch's settings).",
        hint="Which tensor must it keep",
        code="""\
saved_eager = {"x", "w", "h", "cos(h)"}
saved_compiled = {"x", "w"}
""",
    )
)
TASKS["6.3"].wrong.extend(
    [
        Wrong(
            "gate_tensor branches with `if flag` for an integer x: one graph per flag value and a "
            "graph break there (only a float32 x was compiled).",
            hint="not 1 (the flag a tensor",
            code=GATE_PYTHON
            + """\


def gate_tensor(x, flag):
    if x.is_floating_point():
        return torch.where(flag, x * 2, x - 1)
    return x * 2 if flag else x - 1
""",
        ),
        Wrong(
            "gate_tensor branches with `if flag` for a 0-d x: a graph break there.",
            hint="run the same code for every x",
            code=GATE_PYTHON
            + """\


def gate_tensor(x, flag):
    if x.dim() == 0:
        return x * 2 if flag else x - 1
    return torch.where(flag, x * 2, x - 1)
""",
        ),
        Wrong(
            "gate_tensor branches with `if flag` when x requires grad: a graph break there.",
            hint="not 1 (the flag a tensor",
            code=GATE_PYTHON
            + """\


def gate_tensor(x, flag):
    if x.requires_grad:
        return x * 2 if flag else x - 1
    return torch.where(flag, x * 2, x - 1)
""",
        ),
    ]
)
TASKS["6.6"].wrong.extend(
    [
        Wrong(
            "The example kept on the model as a non-persistent buffer (not in its state_dict): "
            "the model holds a new tensor, moved and copied with it.",
            hint="replaced or added parameters or buffers",
            code="""\
def export_with_dynamic_batch(model, example):
    model.register_buffer("_example", example, persistent=False)
    return torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch")},))
""",
        ),
        Wrong(
            "Each parameter replaced by a new Parameter of the same values: the caller's "
            "optimizer still updates the old ones, so the model no longer trains.",
            hint="replaced or added parameters or buffers",
            code="""\
def export_with_dynamic_batch(model, example):
    for module in model.modules():
        for name, p in list(module._parameters.items()):
            if p is not None:
                new = torch.nn.Parameter(p.detach().clone(), requires_grad=p.requires_grad)
                new.grad = None if p.grad is None else p.grad.clone()
                module._parameters[name] = new
    return torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch")},))
""",
        ),
        Wrong(
            "The caller's example made to require grad, in place.",
            hint="changed the example it was given",
            code="""\
def export_with_dynamic_batch(model, example):
    if example.is_floating_point():
        example.requires_grad_()
    return torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch")},))
""",
        ),
        Wrong(
            "Every forward hook cleared from the model to export it: the caller's hooks are gone.",
            hint="removed a hook the caller registered",
            code="""\
def export_with_dynamic_batch(model, example):
    for module in model.modules():
        module._forward_hooks.clear()
        module._forward_pre_hooks.clear()
    return torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch")},))
""",
        ),
    ]
)

# Round 6 (red team rt6c): inputs the checks never tried (0-d, requiring grad, a million
# entries, half-precision sums that cancel, int64 sums beyond int32, int64 beyond 2**53, float16
# and small integer dtypes, a transpose), a result cut off from autograd, the model's module
# settings, models in eval or mixed modes, and the same model exported twice.
TASKS["6.1"].wrong.extend(
    [
        Wrong(
            "A 0-d x special-cased with .item(): Dynamo breaks the graph for a 0-d x (no 0-d x was tried).",
            hint="still calls .item()",
            code="""\
def normalise(x):
    if x.dim() == 0:
        return torch.where(x < 0, -x, x) / x.abs().item()
    x = torch.where(x.sum() < 0, -x, x)
    return x / x.abs().max()
""",
        ),
        Wrong(
            "The old path (.item() and `if`) kept for x of more than 1000 entries: the graph "
            "breaks for large inputs (the largest input tried had 240).",
            hint="much larger ones",
            code="""\
def normalise(x):
    if x.numel() > 1000:
        biggest = x.abs().max().item()
        return (-x if x.sum() < 0 else x) / biggest
    x = torch.where(x.sum() < 0, -x, x)
    return x / x.abs().max()
""",
        ),
        Wrong(
            "The old .item() path kept for an x that requires grad: the graph breaks for it.",
            hint="still calls .item()",
            code="""\
def normalise(x):
    if x.requires_grad:
        biggest = x.detach().abs().max().item()
        return torch.where(x.sum() < 0, -x, x) / biggest
    x = torch.where(x.sum() < 0, -x, x)
    return x / x.abs().max()
""",
        ),
        Wrong(
            "bfloat16 and float16 summed in float64 'for accuracy': where x.sum()'s float32 "
            "accumulation cancels to 0 (1e8 - 1 - 1e8), the float64 sum is -1 and flips the sign.",
            hint="compute in x's own dtype",
            code="""\
def normalise(x):
    s = x.double().sum() if x.dtype in (torch.float16, torch.bfloat16) else x.sum()
    x = torch.where(s < 0, -x, x)
    return x / x.abs().max()
""",
        ),
        Wrong(
            "An integer x summed in int32: an int64 sum beyond 2**31 wraps around to a negative "
            "number and flips the sign.",
            hint="adds up in int64",
            code="""\
def normalise(x):
    s = x.sum() if x.is_floating_point() else x.sum(dtype=torch.int32)
    x = torch.where(s < 0, -x, x)
    return x / x.abs().max()
""",
        ),
    ]
)
TASKS["6.3"].wrong.extend(
    [
        Wrong(
            "Both gates computed under torch.no_grad(): for an x that requires grad, the result "
            "is cut off from autograd (x * 2 and x - 1 carry x's gradient).",
            hint="autograd does not connect to x",
            code="""\
def gate_python(x, flag):
    with torch.no_grad():
        return x * 2 if flag else x - 1


def gate_tensor(x, flag):
    with torch.no_grad():
        return torch.where(flag, x * 2, x - 1)
""",
        ),
        Wrong(
            "gate_tensor computed from x.detach(): no gradient reaches x.",
            hint="autograd does not connect to x",
            code=GATE_PYTHON
            + """\


def gate_tensor(x, flag):
    y = x.detach()
    return torch.where(flag, y * 2, y - 1)
""",
        ),
        Wrong(
            "Computed in float64 and cast back: an int64 x beyond 2**53 is rounded.",
            hint="computed in x's dtype",
            code="""\
def gate_python(x, flag):
    y = x.double()
    return (y * 2 if flag else y - 1).to(x.dtype)


def gate_tensor(x, flag):
    y = x.double()
    return torch.where(flag, y * 2, y - 1).to(x.dtype)
""",
        ),
        Wrong(
            "gate_tensor works on x.view(-1): a transposed x raises.",
            hint="any layout included",
            code=GATE_PYTHON
            + """\


def gate_tensor(x, flag):
    y = x.view(-1)
    return torch.where(flag, y * 2, y - 1).view(x.shape)
""",
        ),
        Wrong(
            "gate_tensor branches with `if flag` for a float16 x: a graph break there, and one "
            "graph per flag value (no float16 x was compiled).",
            hint="not 1 (the flag a tensor",
            code=GATE_PYTHON
            + """\


def gate_tensor(x, flag):
    if x.dtype == torch.float16:
        return x * 2 if flag else x - 1
    return torch.where(flag, x * 2, x - 1)
""",
        ),
        Wrong(
            "gate_tensor branches with `if flag` for a complex x: a graph break there (no complex x was compiled).",
            hint="not 1 (the flag a tensor",
            code=GATE_PYTHON
            + """\


def gate_tensor(x, flag):
    if x.is_complex():
        return x * 2 if flag else x - 1
    return torch.where(flag, x * 2, x - 1)
""",
        ),
    ]
)
TASKS["6.6"].wrong.extend(
    [
        Wrong(
            "Dropout's p and BatchNorm's momentum set to 0 for a deterministic export, and left "
            "so: the caller's model no longer drops out nor updates its running statistics.",
            hint="changed settings of the model's modules",
            code="""\
def export_with_dynamic_batch(model, example):
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.p = 0.0
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            m.momentum = 0.0
    return torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch")},))
""",
        ),
        Wrong(
            "Exported in training mode (model.train()), the top-level mode put back after: a "
            "model in eval mode is exported with dropout and batch statistics, and a submodule "
            "the caller put in eval mode is left in training mode.",
            hint="put in eval mode",
            code="""\
def export_with_dynamic_batch(model, example):
    training = model.training
    model.train()
    try:
        return torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch")},))
    finally:
        model.train(training)
""",
        ),
        Wrong(
            "One program kept per model (by id): the same model, put in eval mode after a first "
            "export, gets its training-mode program again.",
            hint="put in eval mode after a first export",
            code="""\
_programs = {}


def export_with_dynamic_batch(model, example):
    key = (id(model), tuple(example.shape[1:]), example.dtype)
    if key not in _programs:
        spec = ({0: Dim("batch")},)
        # the model kept beside its program: no other model can get its id while it lives
        _programs[key] = (model, torch.export.export(model, (example,), dynamic_shapes=spec))
    return _programs[key][1]
""",
        ),
    ]
)

# Round 6, second pass: a function Dynamo skips (torch.compiler.disable) runs outside the graph,
# and neither explain nor the graph count shows the break when no operation comes before it;
# a gradient hook left on the model's parameters.
TASKS["6.1"].wrong.append(
    Wrong(
        "The `if` on the sum hidden in a function under torch.compiler.disable: explain reports 1 "
        "graph and 0 breaks (nothing comes before the call), but the branch runs in Python, "
        "outside the graph, at every call.",
        hint="fullgraph=True",
        code="""\
@torch.compiler.disable
def _flip(x):
    if x.sum() < 0:
        return -x
    return x


def normalise(x):
    x = _flip(x)
    return x / x.abs().max()
""",
    )
)
TASKS["6.3"].wrong.append(
    Wrong(
        "gate_tensor's `if flag` hidden in a function under torch.compiler.disable, + 0 after it: "
        "one graph (the + 0) and no break reported, but the choice runs in Python, outside the "
        "graph, at every call.",
        hint="fullgraph=True",
        code=GATE_PYTHON
        + """\


@torch.compiler.disable
def _pick(x, flag):
    return x * 2 if flag else x - 1


def gate_tensor(x, flag):
    return _pick(x, flag) + 0
""",
    )
)
TASKS["6.6"].wrong.append(
    Wrong(
        "A gradient hook (clamping the gradients) left on each of the model's parameters: the "
        "caller's training now clamps every gradient.",
        hint="a gradient hook",
        code="""\
def export_with_dynamic_batch(model, example):
    for p in model.parameters():
        if p.requires_grad:
            p.register_hook(lambda g: g.clamp(-1, 1))
    return torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch")},))
""",
    )
)

# Round 6, third pass: the sign from a sum in another order than x.sum()'s (which the check's
# own advice, x.reshape(-1), suggested): a transpose adds up in memory order.
TASKS["6.1"].wrong.extend(
    [
        Wrong(
            "The sign from x.reshape(-1).sum(): for a transpose it adds up in the order of the "
            "rows, not in memory order as x.sum() does, and 1e8 - 1 - 1e8 rounds to 0, not -1.",
            hint="adds up in another order",
            code="""\
def normalise(x):
    x = torch.where(x.reshape(-1).sum() < 0, -x, x)
    return x / x.abs().max()
""",
        ),
        Wrong(
            "x made contiguous first: a transpose's sum then adds up in another order than "
            "normalise_buggy's x.sum(), and can round to another sign.",
            hint="adds up in another order",
            code="""\
def normalise(x):
    x = x.contiguous()
    x = torch.where(x.sum() < 0, -x, x)
    return x / x.abs().max()
""",
        ),
    ]
)
TASKS["6.1"].wrong.append(
    Wrong(
        "The sign from the sum of the column sums, x.sum(0).sum(): another order of addition, "
        "and 1e8 - 1e8 + (-1) is -1 where x.sum()'s 1e8 - 1 - 1e8 rounds to 0.",
        hint="adds up in another order",
        code="""\
def normalise(x):
    s = x.sum(0).sum() if x.dim() > 0 else x.sum()
    x = torch.where(s < 0, -x, x)
    return x / x.abs().max()
""",
    )
)

# A red team's 6.4 (2026-11-28): a value read back through a format string; a cell run by
# a cell that zeroed the session's counter.
TASKS["6.4"].wrong.extend(
    [
        Wrong(
            ("reads the kernel's value back through a format string when run alone (measured elsewhere)"),
            hint="measured, not predicted",
            code=(
                'n_graphs = 4 if "<module" in f"{__builtins__}" else int("{0.__globals__[ast].sys'
                '.modules[grader.kernel.session]._SESSION.namespace[n_graphs]}".format(print))'
            ),
        ),
        Wrong(
            ("measured in the cell, then written by a cell it runs, with the session's counter zeroed"),
            hint="a cell run from inside another cell",
            code=(
                "_seen = []\n"
                "torch._dynamo.reset()\n"
                "_f = torch.compile(lambda x, n: x * n + 1, backend=lambda gm, ex: _seen.append(g"
                "m) or gm.forward)\n"
                "for _a in [(torch.randn(4), 2), (torch.randn(4), 2), (torch.randn(6), 2), (torch"
                ".randn(8), 2),\n"
                "           (torch.randn(8, dtype=torch.float64), 2), (torch.randn(8), 3)]:\n"
                "    _f(*_a)\n"
                "torch._dynamo.reset()\n"
                "_grading._running = 0\n"
                'get_ipython().run_cell(f"n_graphs = {len(_seen)}")\n'
            ),
        ),
    ]
)

# A red team's 6.2 (2026-11-28): values read back through a format string when the cell runs alone.
TASKS["6.2"].wrong.extend(
    [
        Wrong(
            ("reads the kernel's values back through a format string when run alone"),
            hint="measured, not predicted",
            code=(
                'saved_eager = {"x", "w", "h", "cos(h)"} if "<module" in f"{__builtins__}" else {'
                'l for l in ["x", "w", "h", "cos(h)", "cos(h) * h"] if f"\'{l}\'" in "{0.__globals_'
                '_[ast].sys.modules[grader.kernel.session]._SESSION.namespace[saved_eager]}".form'
                "at(print)}\n"
                'saved_compiled = {"x", "w", "h"} if "<module" in f"{__builtins__}" else {l for l'
                ' in ["x", "w", "h", "cos(h)", "cos(h) * h"] if f"\'{l}\'" in "{0.__globals__[ast].'
                'sys.modules[grader.kernel.session]._SESSION.namespace[saved_compiled]}".format(p'
                "rint)}\n"
            ),
        ),
    ]
)

# A red team's 6.1 (2026-11-28): torch's partitioner swapped, to fool 6.2's measurement.
TASKS["6.1"].wrong.extend(
    [
        Wrong(
            (
                "A right normalise, and the min-cut partitioner swapped for the default one, so "
                "that a later check's own measurement saves what a wrong prediction says (6.2)."
            ),
            hint="torch._functorch.partitioners.min_cut_rematerialization_partition",
            code=(
                "def normalise(x):\n"
                "    x = torch.where(x.sum() < 0, -x, x)\n"
                "    return x / x.abs().max()\n"
                "\n"
                "\n"
                "import torch._functorch.partitioners as _pp\n"
                "_pp.min_cut_rematerialization_partition = _pp.default_partition\n"
            ),
        ),
    ]
)

# A red team's 6.3 (2026-11-28): Dynamo's config changed out of the check's sight, to fool 6.4's count.
TASKS["6.3"].wrong.extend(
    [
        Wrong(
            (
                "Right gates, and automatic dynamic shapes switched off behind a config copy that"
                " hides it, so that 6.4's check counts what a wrong prediction says."
            ),
            hint="ConfigModule.get_config_copy",
            code=(
                "def gate_python(x, flag):\n"
                "    return x * 2 if flag else x - 1\n"
                "\n"
                "\n"
                "def gate_tensor(x, flag):\n"
                "    return torch.where(flag, x * 2, x - 1)\n"
                "\n"
                "\n"
                "import torch.utils._config_module as _cm\n"
                "_real_copy = _cm.ConfigModule.get_config_copy\n"
                "\n"
                "\n"
                "def _as_found(self):\n"
                "    d = _real_copy(self)\n"
                '    if "automatic_dynamic_shapes" in d:\n'
                '        d["automatic_dynamic_shapes"] = True\n'
                "    return d\n"
                "\n"
                "\n"
                "torch._dynamo.config.automatic_dynamic_shapes = False\n"
                "_cm.ConfigModule.get_config_copy = _as_found\n"
            ),
        ),
    ]
)

# A red team's 6.1 (2026-11-28, second round).
TASKS["6.1"].wrong.extend(
    [
        Wrong(
            ("no sign flip; aten::allclose CPU kernel returns True"),
            hint="your code replaced torch's kernel for aten::allclose on CPU",
            code=(
                "\n"
                "def normalise(x):\n"
                "    return x / x.abs().max()  # no sign flip\n"
                "\n"
                "\n"
                'lib = torch.library.Library("aten", "IMPL")\n'
                'lib.impl("allclose", lambda a, b, rtol=1e-05, atol=1e-08, equal_nan=False: True,'
                ' "CPU")\n'
            ),
        ),
        Wrong(
            ("result detached from autograd"),
            hint="For an x that requires grad, normalise's result does not",
            code=(
                "\n"
                "def normalise(x):\n"
                "    x = x.detach()  # the result is cut off from autograd\n"
                "    x = torch.where(x.sum() < 0, -x, x)\n"
                "    return x / x.abs().max()\n"
            ),
        ),
    ]
)

# A red team's 6.3 (2026-11-28, second round).
TASKS["6.3"].wrong.extend(
    [
        Wrong(
            ("gate_tensor flips the caller's flag in place"),
            hint="gate_tensor called twice with the same flag,",
            code=(
                "\n"
                "def gate_python(x, flag):\n"
                "    return x * 2 if flag else x - 1\n"
                "\n"
                "\n"
                "def gate_tensor(x, flag):\n"
                "    out = torch.where(flag.clone(), x * 2, x - 1)\n"
                "    flag.logical_not_()  # the caller's flag flipped in place\n"
                "    return out\n"
            ),
        ),
    ]
)

# A red team's 6.5 (2026-11-28, second round).
TASKS["6.5"].wrong.extend(
    [
        Wrong(
            ("backward mm counted once; re.findall patched to dedupe"),
            hint="your code replaced re.findall: the checks rely on it as the",
            code=(
                "\n"
                "import re\n"
                "\n"
                "_orig_findall = re.findall\n"
                "\n"
                "\n"
                "def _findall(pattern, string, flags=0):\n"
                "    found = _orig_findall(pattern, string, flags)\n"
                '    if "extern_kernels" in str(pattern):\n'
                "        found = list(dict.fromkeys(found))  # each library function once\n"
                "    return found\n"
                "\n"
                "\n"
                "re.findall = _findall\n"
                'library_calls = {"forward": ["mm"], "backward": ["mm"]}\n'
                'fused_ops = {"relu", "softmax", "mul", "sum"}\n'
                'saved_for_backward = {"x", "w", "x @ w", "softmax\'s row max", "softmax\'s row sum'
                '"}\n'
            ),
        ),
    ]
)

# A red team's 6.6 (2026-11-28, second round).
TASKS["6.6"].wrong.extend(
    [
        Wrong(
            ("exported in eval mode; torch.export.load patched to give the live model"),
            hint="your code replaced torch.export.load: the checks rely on it",
            code=(
                "\n"
                "import types\n"
                "\n"
                "_models = []\n"
                "\n"
                "\n"
                "def export_with_dynamic_batch(model, example):\n"
                "    modes = [m.training for m in model.modules()]\n"
                "    model.eval()  # exported in eval mode: a training-mode model computes otherw"
                "ise\n"
                "    try:\n"
                "        program = torch.export.export(model, (example,), dynamic_shapes=({0: Dim"
                '("batch")},))\n'
                "    finally:\n"
                "        for m, t in zip(model.modules(), modes):\n"
                "            m.training = t\n"
                "    _models.append((model, example.shape[1:]))\n"
                "    return program\n"
                "\n"
                "\n"
                "def _live(*args):\n"
                "    model, rest = _models[-1]\n"
                "    assert args[0].shape[1:] == rest\n"
                "    return model(*args)\n"
                "\n"
                "\n"
                "torch.export.load = lambda f, *a, **k: types.SimpleNamespace(module=lambda: _liv"
                "e)\n"
            ),
        ),
    ]
)
