"""Other answers to the exercises of solutions/06_compile.ipynb (see answers/__init__.py)."""

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

TASKS = {
    "6.1": Task(
        alternative="""\
def normalise(x):
    sign = 1 - 2 * (x.sum() < 0).to(x.dtype)   # -1 where the sum is negative, else 1
    return sign * x / torch.amax(torch.abs(x))
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
    f = flag.to(x.dtype)
    return f * (x * 2) + (1 - f) * (x - 1)
""",
        wrong=[
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
