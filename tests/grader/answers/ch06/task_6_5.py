"""Exercise 6.5 of solutions/06_compile.ipynb: its other answers (see answers/__init__.py)."""

from .. import Task, Wrong

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


TASK = Task(
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
)

TASK.wrong.append(
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

# A red team's 6.5 (2026-11-28, second round).
TASK.wrong.extend(
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


# Round 10 (2026-11-28): values of other cells reached through the modules a string tool imports.
TASK.wrong.extend(
    [
        Wrong(
            (
                "The right answers, one read from a value another cell set (where it could have been measured), "
                "through the module re imports: re.enum.sys.modules['__main__']."
            ),
            hint="reaches beyond FORWARD, BACKWARD and the string tools",
            code="""\
import re

_main = re.enum.sys.modules["__main__"]
library_calls = {"forward": ["mm"] * (_main.n_graphs - 3), "backward": ["mm", "mm"]}
fused_ops = {"relu", "softmax", "mul", "sum"}
saved_for_backward = {"x", "w", "x @ w", "softmax's row max", "softmax's row sum"}
""",
        ),
        Wrong(
            ("The same, through re.enum.sys.modules and the grader's session's namespace."),
            hint="reaches beyond FORWARD, BACKWARD and the string tools",
            code="""\
import re

_ns = re.enum.sys.modules["grader.kernel.session"]._SESSION.namespace
library_calls = {"forward": ["mm"] * (_ns["n_graphs"] - 3), "backward": ["mm", "mm"]}
fused_ops = {"relu", "softmax", "mul", "sum"}
saved_for_backward = {"x", "w", "x @ w", "softmax's row max", "softmax's row sum"}
""",
        ),
        Wrong(
            (
                "The same, through a format field: '{0.__globals__[enum].sys...}'.format(re.sub), no attribute "
                "with a double underscore in the code."
            ),
            hint="reaches beyond FORWARD, BACKWARD and the string tools",
            code="""\
import re

_n = int("{0.__globals__[enum].sys.modules[__main__].n_graphs}".format(re.sub))
library_calls = {"forward": ["mm"] * (_n - 3), "backward": ["mm", "mm"]}
fused_ops = {"relu", "softmax", "mul", "sum"}
saved_for_backward = {"x", "w", "x @ w", "softmax's row max", "softmax's row sum"}
""",
        ),
        Wrong(
            ("The same, through collections._sys (one underscore): sys.modules['__main__']."),
            hint="reaches beyond FORWARD, BACKWARD and the string tools",
            code="""\
import collections

_n = collections._sys.modules["__main__"].n_graphs
library_calls = {"forward": ["mm"] * (_n - 3), "backward": ["mm", "mm"]}
fused_ops = {"relu", "softmax", "mul", "sum"}
saved_for_backward = {"x", "w", "x @ w", "softmax's row max", "softmax's row sum"}
""",
        ),
    ]
)


# Round 10: format fields built at run time.
TASK.wrong.extend(
    [
        Wrong(
            ("The same, through a format field built at run time (no '.__' in any constant): str.format on re.sub."),
            hint="reaches beyond FORWARD, BACKWARD and the string tools",
            code="""\
import re

_field = "{0." + "_" * 2 + "globals" + "_" * 2 + "[enum].sys.modules[" + "_" * 2 + "main" + "_" * 2 + "].n_graphs}"
_n = int(_field.format(re.sub))
library_calls = {"forward": ["mm"] * (_n - 3), "backward": ["mm", "mm"]}
fused_ops = {"relu", "softmax", "mul", "sum"}
saved_for_backward = {"x", "w", "x @ w", "softmax's row max", "softmax's row sum"}
""",
        ),
        Wrong(
            ("The same, through string.Formatter().get_field, with the field built at run time."),
            hint="reaches beyond FORWARD, BACKWARD and the string tools",
            code="""\
import re
import string

_field = "0." + "_" * 2 + "globals" + "_" * 2
_globals = string.Formatter().get_field(_field, [re.sub], {})[0]
_n = _globals["enum"].sys.modules["_" * 2 + "main" + "_" * 2].n_graphs
library_calls = {"forward": ["mm"] * (_n - 3), "backward": ["mm", "mm"]}
fused_ops = {"relu", "softmax", "mul", "sum"}
saved_for_backward = {"x", "w", "x @ w", "softmax's row max", "softmax's row sum"}
""",
        ),
    ]
)
