"""Exercise 6.3 of solutions/06_compile.ipynb: its other answers (see answers/__init__.py).

Its further wrong answers are in task_6_3_more.py.
"""

from .. import Task, Wrong
from . import task_6_3_more
from .shared import GATE_PYTHON

TASK = Task(
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
)

TASK.wrong.extend(
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

TASK.wrong.append(
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

TASK.wrong.extend(
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

TASK.wrong.extend(
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

TASK.wrong.extend(task_6_3_more.WRONG)
# Right, written otherwise: x scaled and shifted by the flag made x's dtype (one formula, no 0 * inf),
# tensor methods, and the aten operators called by name.
TASK.other_right.extend(
    [
        GATE_PYTHON
        + """\


def gate_tensor(x, flag):
    return x * (1 + flag).to(x.dtype) - (~flag).to(x.dtype)
""",
        """\
def gate_python(x, flag):
    if flag:
        return x.mul(2)
    return x.sub(1)


def gate_tensor(x, flag):
    return (x * 2).where(flag, x - 1)
""",
        GATE_PYTHON
        + """\


def gate_tensor(x, flag):
    aten = torch.ops.aten
    return aten.where.self(flag, aten.mul.Tensor(x, 2), aten.sub.Tensor(x, 1))
""",
    ]
)
