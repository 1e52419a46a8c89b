"""Exercise 6.2 of solutions/06_compile.ipynb: its other answers (see answers/__init__.py)."""

import textwrap

from .. import Task, Wrong
from .shared import UNSEEN, _exec_decorated

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


TASK = Task(
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
)

TASK.wrong.append(
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

TASK.wrong.append(
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

# A red team's 6.2 (2026-11-28): values read back through a format string when the cell runs alone.
TASK.wrong.extend(
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
