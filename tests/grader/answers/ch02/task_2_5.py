"""Exercise 2.5 of solutions/02_autograd.ipynb: its other answers (see answers/__init__.py)."""

from .. import Task, Wrong

# 2.5's right cell (the given f and x0, then a vjp by one backward pass seeded with v, read from
# x.grad, which retain_grad keeps for a non-leaf x too): the alternative builds J from this vjp
# instead, and each wrong answer breaks the vjp.
VJP = """\
def f(x):
    return torch.stack([x[0] * x[1] + x[2], torch.exp(x[1]) * x[2]])


x0 = torch.tensor([1.0, -0.5, 2.0])


def vjp(f, x, v):
    x.grad = None
    x.retain_grad()  # x may be a non-leaf: have backward keep its .grad too
    (v * f(x)).sum().backward()
    return x.grad


J = torch.autograd.functional.jacobian(f, x0)
"""

JACOBIAN_FIRST = VJP.replace(
    "    x.grad = None\n    x.retain_grad()  # x may be a non-leaf: have backward keep its .grad too\n"
    "    (v * f(x)).sum().backward()\n    return x.grad\n",
    "    return v @ torch.autograd.functional.jacobian(f, x)\n",
)

GRAD_NOT_CLEARED = VJP.replace("    x.grad = None\n", "")

SEEDED_WITH_ONES = VJP.replace("(v * f(x)).sum().backward()", "f(x).sum().backward()")


TASK = Task(
    alternative=VJP.replace(
        "J = torch.autograd.functional.jacobian(f, x0)\n",
        """\
rows = [vjp(f, x0.clone().requires_grad_(), one_hot) for one_hot in torch.eye(2)]
J = torch.stack(rows)
""",
    ),
    wrong=[
        Wrong(
            "The whole Jacobian built first: one backward pass per output.",
            hint="ONE backward pass",
            code=JACOBIAN_FIRST,
        ),
        Wrong(
            "Backward seeded with ones, whatever v is.",
            hint="seed backward with v",
            code=SEEDED_WITH_ONES,
        ),
        Wrong(
            "x.grad read after backward without clearing it: a second call returns the sum of both.",
            hint="another result the second time",
            code=GRAD_NOT_CLEARED,
        ),
        # Right for a vector-valued f; a scalar f has a 0-d output and a 0-d v.
        Wrong(
            "v dotted with f(x) before backward: torch.dot fails for a scalar-valued f.",
            hint="scalar-valued f",
            code=VJP.replace("(v * f(x)).sum().backward()", "torch.dot(v, f(x)).backward()"),
        ),
        Wrong(
            "The result flattened: right for a 1-d x, the wrong shape for a 2-d one.",
            hint="x's shape",
            code=VJP.replace("    return x.grad\n", "    return x.grad.flatten()\n"),
        ),
        Wrong(
            "x.grad zeroed in place and returned: the next call overwrites the first result.",
            hint="first result changed",
            code=VJP.replace("    x.grad = None\n", "    if x.grad is not None:\n        x.grad.zero_()\n"),
        ),
        Wrong(
            "The old x.grad subtracted after backward: lost in rounding when it holds 1e8.",
            hint="already holds 1e8s",
            code=VJP.replace("    x.grad = None\n", "    before = 0 if x.grad is None else x.grad.clone()\n").replace(
                "    return x.grad\n", "    return x.grad - before\n"
            ),
        ),
        Wrong(
            "The result read from x.grad after backward: None for an x that is not a leaf.",
            hint="not a leaf",
            code=VJP.replace("    x.retain_grad()  # x may be a non-leaf: have backward keep its .grad too\n", ""),
        ),
        Wrong(
            "The seed v cast to float32: a float64 v and f lose precision.",
            hint="(2, 3) matrix",
            code="""\
def f(x):
    return torch.stack([x[0] * x[1] + x[2], torch.exp(x[1]) * x[2]])
x0 = torch.tensor([1.0, -0.5, 2.0])
def vjp(f, x, v):
    (g,) = torch.autograd.grad(f(x), x, grad_outputs=v.float())
    return g
J = torch.autograd.functional.jacobian(f, x0)
""",
        ),
        Wrong(
            "torch.inner(v, f(x)): a scalar for 0-d and 1-d outputs only.",
            hint="(2, 3) matrix",
            code="""\
def f(x):
    return torch.stack([x[0] * x[1] + x[2], torch.exp(x[1]) * x[2]])
x0 = torch.tensor([1.0, -0.5, 2.0])
def vjp(f, x, v):
    (g,) = torch.autograd.grad(torch.inner(v, f(x)), x)
    return g
J = torch.autograd.functional.jacobian(f, x0)
""",
        ),
    ],
)

# A red team's 2.5 (2026-11-28, second round).
TASK.wrong.extend(
    [
        Wrong(
            ("aten::equal/allclose overridden; vjp seeded with ones, J all zeros"),
            hint="your code replaced torch's kernel for aten::allclose on",
            code=(
                "def f(x):\n"
                "    return torch.stack([x[0] * x[1] + x[2], torch.exp(x[1]) * x[2]])\n"
                "\n"
                "\n"
                "x0 = torch.tensor([1.0, -0.5, 2.0])\n"
                '_lib = torch.library.Library("aten", "IMPL")\n'
                '_lib.impl("equal", lambda a, b: True, "CPU")\n'
                '_lib.impl("allclose", lambda a, b, rtol=1e-05, atol=1e-08, equal_nan=False: True'
                ', "CompositeExplicitAutograd")\n'
                "\n"
                "\n"
                "def vjp(f, x, v):\n"
                "    (g,) = torch.autograd.grad(f(x), x, grad_outputs=torch.ones_like(v))  # seed"
                "ed with ones\n"
                "    return g\n"
                "\n"
                "\n"
                "J = torch.zeros(2, 3)\n"
            ),
        ),
    ]
)


# A red team's 2.5 that builds the Jacobian behind a decoy backward pass.
TASK.wrong.extend(
    [
        Wrong(
            (
                "One backward pass seeded with v, thrown away, and the answer taken from the full Jacobian built "
                "column by column in forward mode: what the task rules out."
            ),
            hint="it builds the Jacobian (column by column",
            code="""\
import torch.autograd.forward_ad as fwAD


def vjp(f, x, v):
    y = f(x)
    torch.autograd.grad(y, x, grad_outputs=v)  # the one backward pass, seeded with v
    # ...but the answer comes from the full Jacobian, one forward-mode column per input
    base = x.detach()
    cols = []
    with fwAD.dual_level():
        for i in range(base.numel()):
            tangent = torch.zeros_like(base).reshape(-1)
            tangent[i] = 1
            dual = fwAD.make_dual(base.clone().requires_grad_(), tangent.reshape(base.shape))
            cols.append(fwAD.unpack_dual(f(dual)).tangent.reshape(-1))
    J = torch.stack(cols, 1)  # (outputs, inputs): the Jacobian, built
    return (v.reshape(1, -1) @ J).reshape(x.shape)


def f(x):
    return torch.stack([x[0] * x[1] + x[2], torch.exp(x[1]) * x[2]])


x0 = torch.tensor([1.0, -0.5, 2.0])
J = torch.autograd.functional.jacobian(f, x0)
""",
        ),
    ]
)

# Right: J by torch.func (its first vmap registers torch's own batching rules with torch.library,
# once refused as the answer's kernels).
TASK.other_right.append(
    VJP.replace("J = torch.autograd.functional.jacobian(f, x0)\n", "J = torch.func.jacrev(f)(x0)\n")
)

# Right, if wasteful: f run once to check v's shape, then again for the one backward pass (no
# Jacobian built: refused once checks counted f's runs to 1).
TASK.other_right.append(
    """\
def f(x):
    return torch.stack([x[0] * x[1] + x[2], torch.exp(x[1]) * x[2]])


x0 = torch.tensor([1.0, -0.5, 2.0])


def vjp(f, x, v):
    assert f(x).shape == v.shape, "v must have the shape of f(x)"
    (grad,) = torch.autograd.grad(f(x), x, grad_outputs=v)
    return grad


J = torch.autograd.functional.jacobian(f, x0)
"""
)


# Red team (round 2): accepted before its check was added.
TASK.wrong.append(
    Wrong(
        "Products cached by the ids of f, x and v, the objects kept: the same v changed in place gets its old product.",
        hint="a cache keyed by id(x)",
        code="""\
def f(x):
    return torch.stack([x[0] * x[1] + x[2], torch.exp(x[1]) * x[2]])


x0 = torch.tensor([1.0, -0.5, 2.0])

_products = {}


def vjp(f, x, v):
    key = (id(f), id(x), id(v))
    entry = _products.get(key)
    if entry is None or entry[0] is not f or entry[1] is not x or entry[2] is not v:
        (grad,) = torch.autograd.grad(f(x), x, grad_outputs=v)
        entry = _products[key] = (f, x, v, grad)
    return entry[3].clone()


J = torch.autograd.functional.jacobian(f, x0)
""",
    )
)
