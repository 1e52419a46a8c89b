"""Exercise 4.3 of solutions/04_amp.ipynb: its other answers (see answers/__init__.py)."""

from .. import Task, Wrong

TASK = Task(
    alternative="""\
fp32_ops = ["h + x", "F.cross_entropy(h, labels)", "F.mse_loss(h, x)", "h.prod()"]
""",
    wrong=[
        Wrong(
            "CUDA's reputation applied to the CPU: softmax, norms and sums in fp32.",
            hint="Ops on neither list follow their inputs",
            code="""\
fp32_ops = {"F.softmax(h, dim=-1)", "F.layer_norm(h, (8,))", "F.group_norm(h, 2)", "h.sum()", "h.prod()",
            "F.mse_loss(h, x)", "F.cross_entropy(h, labels)", "h + x"}
""",
        ),
        Wrong(
            "Type promotion of bf16 + fp32 forgotten.",
            hint="promotes to the wider one",
            code="""\
fp32_ops = {"h.prod()", "F.mse_loss(h, x)", "F.cross_entropy(h, labels)"}
""",
        ),
        Wrong(
            "Names that are not keys of CANDIDATES.",
            hint="not keys of CANDIDATES",
            code="""\
fp32_ops = {"mse_loss", "cross_entropy", "prod", "add"}
""",
        ),
        Wrong(
            "The candidates run under autocast: right, but measured, not predicted.",
            hint="measured, not predicted",
            code="""\
x = torch.randn(4, 8)
with torch.autocast("cpu", dtype=torch.bfloat16):
    h = torch.nn.Linear(8, 8)(x)
    fp32_ops = {name for name, op in CANDIDATES.items() if op(h, x).dtype == torch.float32}
""",
        ),
        Wrong(
            "A wrong prediction, and an IPython input transformer that turns the check into its print line.",
            hint="your code replaced IPython's input transformers",
            code="""\
fp32_ops = {"h @ h.T"}
shell = [value for name, value in globals().items() if name == "get_" + "ipython"][0]()
shell.input_transformers_post.append(
    lambda lines: ['print("Exercise 4.3 passed")\\n'] if any("4.3" in line for line in lines) else lines
)
""",
        ),
    ],
)

TASK.wrong.append(
    Wrong(
        "The candidates run under autocast in the answer cell, rebuilt on a copy of the "
        "globals, with the dispatch modes off, so that neither a call nor an operation shows: "
        "measured, not predicted.",
        hint="measured, not predicted",
        code="""\
import types

from torch.utils._python_dispatch import _disable_current_modes


def _measure():
    x = torch.randn(4, 8)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        h = torch.nn.Linear(8, 8)(x)
        ops = {n: types.FunctionType(op.__code__, globals()) for n, op in CANDIDATES.items()}
        return {n for n, op in ops.items() if op(h, x).dtype == torch.float32}


with _disable_current_modes():
    fp32_ops = types.FunctionType(_measure.__code__, dict(globals()))()
""",
    )
)

# A red team's 4.3 (2026-11-28): a value read back through a format string; a cell run by
# a cell that zeroed the session's counter.
TASK.wrong.extend(
    [
        Wrong(
            ("reads the kernel's value back through a format string when run alone"),
            hint="measured, not predicted",
            code=(
                'fp32_ops = {"h.prod()", "F.mse_loss(h, x)", "F.cross_entropy(h, labels)", "h + x'
                '"} if "<module" in f"{__builtins__}" else {k for k in CANDIDATES if f"\'{k}\'" in '
                '"{0.__globals__[ast].sys.modules[grader.kernel.session]._SESSION.namespace[fp32_'
                'ops]}".format(print)}\n'
            ),
        ),
        Wrong(
            ("measured under autocast, then written by a cell it runs, with the session's counter zeroed"),
            hint="measured, not predicted",
            code=(
                "_x = torch.randn(4, 8)\n"
                'with torch.autocast("cpu", dtype=torch.bfloat16):\n'
                "    _h = torch.nn.Linear(8, 8)(_x)\n"
                "    _m = sorted(n for n, op in CANDIDATES.items() if op(_h, _x).dtype == torch.f"
                "loat32)\n"
                "_grading._running = 0\n"
                'get_ipython().run_cell(f"fp32_ops = {set(_m)!r}")\n'
            ),
        ),
    ]
)
