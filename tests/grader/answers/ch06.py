"""Other answers to the exercises of solutions/06_compile.ipynb (see answers/__init__.py)."""

from . import Task, Wrong

# 6.3's right pair (the solution's): its wrong answers change gate_tensor or gate_python.
GATE_PYTHON = """\
def gate_python(x, flag):
    return x * 2 if flag else x - 1
"""

# 6.5's right reader for the library calls: wrong answers change how the kernels are found.
LIBRARY = """\
    library = re.findall(r"\\bextern_kernels\\.(\\w+)\\(", code)
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
def read_wrapper(code):
    kernels, library = [], []
    for line in code.splitlines():
        name, sep, rest = line.partition(" = async_compile.")
        if sep and name.isidentifier():
            kernels.append(name)
        for part in line.split("extern_kernels.")[1:]:
            library.append(part.split("(")[0])
    return (kernels, library)
""",
        wrong=[
            Wrong(
                "Every mention of cpp_fused_...: each kernel appears twice, defined and called.",
                hint="list each once",
                code="""\
def read_wrapper(code):
    kernels = re.findall(r"cpp_fused_\\w+", code)
"""
                + LIBRARY
                + """\
    return kernels, library
""",
            ),
            Wrong(
                "Library calls as a set: a function called twice counted once.",
                hint="a function called twice twice",
                code="""\
def read_wrapper(code):
    kernels = re.findall(r"^(\\w+) = async_compile\\.\\w+\\(", code, re.M)
    library = sorted(set(re.findall(r"extern_kernels\\.(\\w+)\\(", code)))
    return kernels, library
""",
            ),
            Wrong(
                "Every line that mentions async_compile taken for a kernel.",
                hint="without the lines that make or wait for async_compile",
                code="""\
def read_wrapper(code):
    kernels = [line.split(" = ")[0].strip() for line in code.splitlines() if "async_compile" in line]
"""
                + LIBRARY
                + """\
    return kernels, library
""",
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
