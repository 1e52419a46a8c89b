"""Exercise 2.7 of solutions/02_autograd.ipynb: its other answers (see answers/__init__.py)."""

from .. import Task, Wrong

# 2.7's right answer (the solution's): each wrong answer changes one line of it.
FIXED_LOSS = """\
culprit = "sigmoid"


def fixed_loss(x):
    y = torch.sigmoid(x)
    y = y * 2
    return (y * x).sum()
"""

STILL_IN_PLACE = FIXED_LOSS.replace("    y = y * 2\n", "    y *= 2\n")

# The in-place op kept, its error hidden: every tensor autograd saves is copied when saved.
ERROR_HIDDEN_BY_HOOKS = FIXED_LOSS.replace(
    "    y = torch.sigmoid(x)\n    y = y * 2\n    return (y * x).sum()\n",
    """\
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
        y = torch.sigmoid(x)
        y.mul_(2)
        return (y * x).sum()
""",
)

CULPRIT_NAMES_THE_OP = FIXED_LOSS.replace(
    'culprit = "sigmoid"', 'culprit = "mul_, which overwrote the output of sigmoid"'
)


TASK = Task(
    alternative="""\
culprit = "Sigmoid"


def fixed_loss(x):
    y = torch.sigmoid(x).clone()
    y.mul_(2)
    return (y * x).sum()
""",
    wrong=[
        Wrong(
            "`*=` is still an in-place operation on sigmoid's saved output.",
            hint="in-place",
            code=STILL_IN_PLACE,
        ),
        Wrong(
            "A culprit that only mentions sigmoid, naming the in-place op.",
            hint="culprit is wrong",
            code=CULPRIT_NAMES_THE_OP,
        ),
        Wrong(
            "mul_ kept, its error hidden by saved_tensors_hooks that copy what autograd saves.",
            hint="hides the in-place change",
            code=ERROR_HIDDEN_BY_HOOKS,
        ),
        # In place through .data: the version counter never sees it, the saved output is doubled.
        Wrong(
            "mul_ done on y.data: backward no longer complains, but sigmoid's saved output is doubled.",
            hint="wrong gradient",
            code=FIXED_LOSS.replace("    y = y * 2\n", "    y.data.mul_(2)\n"),
        ),
        Wrong(
            "sigmoid written as exp(x) / (1 + exp(x)): nan for x = 100.",
            hint="inf / inf = nan",
            code=FIXED_LOSS.replace("    y = torch.sigmoid(x)\n", "    e = torch.exp(x)\n    y = e / (1 + e)\n"),
        ),
        Wrong(
            "Computed in float32 whatever x's dtype.",
            hint="x's dtype",
            code=FIXED_LOSS.replace("torch.sigmoid(x)", "torch.sigmoid(x.float())").replace(
                "(y * x).sum()", "(y * x.float()).sum()"
            ),
        ),
        Wrong(
            "mul_ kept, its error hidden by a reentrant checkpoint that recomputes sigmoid.",
            hint="checkpoint recomputes",
            code=FIXED_LOSS.replace(
                "    y = torch.sigmoid(x)\n    y = y * 2\n",
                """\
    y = torch.utils.checkpoint.checkpoint(torch.sigmoid, x, use_reentrant=True)
    y.mul_(2)
""",
            ),
        ),
        Wrong(
            "Computed in float32 and cast back: a float64 x loses precision, and 1e300 overflows.",
            hint="no .float()",
            code="""\
culprit = "sigmoid"


def fixed_loss(x):
    x32 = x.float()
    y = torch.sigmoid(x32)
    y = y * 2
    return (y * x32).sum().to(x.dtype)
""",
        ),
        Wrong(
            "The in-place mul_ kept, the error hidden by torch.func.functionalize.",
            hint="functionalize",
            code="""\
culprit = "sigmoid"
def fixed_loss(x):
    def broken(x):
        y = torch.sigmoid(x)
        y.mul_(2)
        return (y * x).sum()
    return torch.func.functionalize(broken)(x)
""",
        ),
    ],
)

# A red team's 2.7 (2026-11-28, second round).
TASK.wrong.extend(
    [
        Wrong(
            ("mul_ kept, error hidden by custom Function saving a copy"),
            hint="fixed_loss hides the in-place change from autograd",
            code=(
                'culprit = "sigmoid"\n'
                "\n"
                "\n"
                "class _KeepCopy(torch.autograd.Function):\n"
                "    @staticmethod\n"
                "    def forward(ctx, x):\n"
                "        y = torch.sigmoid(x)\n"
                "        ctx.save_for_backward(y.clone())  # a copy of what backward needs\n"
                "        return y\n"
                "\n"
                "    @staticmethod\n"
                "    def backward(ctx, g):\n"
                "        (s,) = ctx.saved_tensors\n"
                "        return g * s * (1 - s)\n"
                "\n"
                "\n"
                "def fixed_loss(x):\n"
                "    y = _KeepCopy.apply(x)\n"
                "    y.mul_(2)  # the in-place op kept\n"
                "    return (y * x).sum()\n"
            ),
        ),
        Wrong(
            ("mul_ kept, error hidden by custom Function recomputing sigmoid (hand checkpoint)"),
            hint="fixed_loss hides the in-place change from autograd",
            code=(
                'culprit = "sigmoid"\n'
                "\n"
                "\n"
                "class _Recompute(torch.autograd.Function):\n"
                "    @staticmethod\n"
                "    def forward(ctx, x):\n"
                "        ctx.save_for_backward(x)\n"
                "        return torch.sigmoid(x)\n"
                "\n"
                "    @staticmethod\n"
                "    def backward(ctx, g):\n"
                "        (x,) = ctx.saved_tensors\n"
                "        s = torch.sigmoid(x)  # recomputed, as checkpointing does\n"
                "        return g * s * (1 - s)\n"
                "\n"
                "\n"
                "def fixed_loss(x):\n"
                "    y = _Recompute.apply(x)\n"
                "    y.mul_(2)  # the in-place op kept\n"
                "    return (y * x).sum()\n"
            ),
        ),
        Wrong(
            ("sigmoid as silu(x)/x: nan at x == 0"),
            hint="fixed_loss is wrong for a torch.float32 x = [100.0, -100.0,",
            code=(
                'culprit = "sigmoid"\n'
                "\n"
                "\n"
                "def fixed_loss(x):\n"
                "    y = torch.nn.functional.silu(x) / x  # x * sigmoid(x) / x: silu saves x, not"
                " its output\n"
                "    y.mul_(2)\n"
                "    return (y * x).sum()\n"
            ),
        ),
    ]
)


# A sixth red team's wrong answers.
TASK.wrong.extend(
    [
        Wrong(
            (
                "sigmoid rewritten as 0.5 * (1 + tanh(x / 2)): for a large negative x it cancels to 0 (float32 at "
                "-20, float64 below -37), the loss and its gradient with it."
            ),
            hint="loses the small values of a large negative",
            code="""\
culprit = "sigmoid"


def fixed_loss(x):
    y = 0.5 * (1 + torch.tanh(x / 2))
    y = y * 2
    return (y * x).sum()
""",
        ),
    ]
)


# Red team: half-precision inputs computed in another dtype.
TASK.wrong.extend(
    [
        Wrong(
            ("float16 and bfloat16 inputs upcast to float32: the loss comes back in float32."),
            hint="returned a torch.float32 loss",
            code="""\
culprit = "sigmoid"


def fixed_loss(x):
    if x.dtype in (torch.float16, torch.bfloat16):
        x = x.float()  # half precision overflows in the sum: work in float32
    y = torch.sigmoid(x)
    y = y * 2
    return (y * x).sum()
""",
        ),
        Wrong(
            ("Computes in float64 and casts the loss back to x's dtype: not computed in x's dtype."),
            hint="converted x to another dtype",
            code="""\
culprit = "sigmoid"


def fixed_loss(x):
    x64 = x.double()  # extra precision for the loss, then back to x's dtype
    y = torch.sigmoid(x64)
    y = y * 2
    return (y * x64).sum().to(x.dtype)
""",
        ),
    ]
)
