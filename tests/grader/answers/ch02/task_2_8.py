"""Exercise 2.8 of solutions/02_autograd.ipynb: its other answers (see answers/__init__.py)."""

from .. import Task, Wrong

# 2.8's right answer (the solution's): its wrong answer leaves out create_graph=True.
SECOND_DERIVATIVE = """\
def derivatives(f, x):
    (d1,) = torch.autograd.grad(f(x), x, create_graph=True)
    (d2,) = torch.autograd.grad(d1, x)
    return d1, d2
"""


TASK = Task(
    alternative="""\
def derivatives(f, x):
    y = f(x)
    d1, = torch.autograd.grad(y, [x], create_graph=True)
    d2, = torch.autograd.grad(d1, [x], create_graph=True)
    return d1, d2
""",
    wrong=[
        Wrong(
            "Without create_graph=True, d1 cannot be differentiated again.",
            hint="create_graph=True",
            code=SECOND_DERIVATIVE.replace(", create_graph=True)", ")"),
        ),
        Wrong(
            "backward twice instead of torch.autograd.grad: the derivatives go through x.grad.",
            hint="filled x.grad",
            code="""\
def derivatives(f, x):
    f(x).backward(create_graph=True)
    d1 = x.grad
    x.grad = None
    d1.backward()
    return d1, x.grad
""",
        ),
        Wrong(
            "d1 returned detached: it is no longer part of a graph.",
            hint="d1 must still be part of a graph",
            code=SECOND_DERIVATIVE.replace("    return d1, d2\n", "    return d1.detach(), d2\n"),
        ),
        Wrong(
            "The example's derivatives written as formulas: right for t**3 + 2*t**2 only.",
            hint="other functions",
            code="""\
def derivatives(f, x):
    d1 = 3 * x**2 + 4 * x
    (d2,) = torch.autograd.grad(d1, x)
    return d1, d2
""",
        ),
        Wrong(
            "backward twice, x.grad set back to None: the caller's x.grad is wiped.",
            hint="changed x.grad",
            code="""\
def derivatives(f, x):
    f(x).backward(create_graph=True)
    d1 = x.grad
    x.grad = None
    d1.backward()
    d2 = x.grad
    x.grad = None
    return d1, d2.detach()
""",
        ),
        Wrong(
            "d2 by a finite difference of autograd's first derivative, not from d1.",
            hint="only an approximation",
            code="""\
def derivatives(f, x):
    (d1,) = torch.autograd.grad(f(x), x, create_graph=True)
    eps = 1e-3
    ts = [(x.detach().double() + s).requires_grad_() for s in (eps, -eps)]
    g = [torch.autograd.grad(f(t), t)[0] for t in ts]
    return d1, ((g[0] - g[1]) / (2 * eps)).to(x.dtype)
""",
        ),
        Wrong(
            "d2 from torch.func.grad(torch.func.grad(f)), not from d1.",
            hint="no torch.func",
            code=SECOND_DERIVATIVE.replace(
                "    (d2,) = torch.autograd.grad(d1, x)\n",
                "    d2 = torch.func.grad(torch.func.grad(f))(x.detach())\n",
            ),
        ),
        Wrong(
            "f evaluated at a float32 copy of x: float64 precision lost.",
            hint="no .float() copy",
            code=SECOND_DERIVATIVE.replace("torch.autograd.grad(f(x), x,", "torch.autograd.grad(f(x.float()), x,"),
        ),
        Wrong(
            "d2 by torch.autograd.backward into x.grad (put back after), beside an unused second grad call.",
            hint="no backward()",
            code="""\
def derivatives(f, x):
    (d1,) = torch.autograd.grad(f(x), x, create_graph=True)
    torch.autograd.grad(f(x), x)  # a second call, for the count
    old = x.grad
    x.grad = None
    torch.autograd.backward(d1, inputs=[x])
    d2 = x.grad
    x.grad = old
    return d1, d2
""",
        ),
        Wrong(
            "x detached and made a new leaf inside: d1's graph does not lead back to x.",
            hint="not part of x's graph",
            code="""\
def derivatives(f, x):
    x = x.detach().requires_grad_()
    (d1,) = torch.autograd.grad(f(x), x, create_graph=True)
    (d2,) = torch.autograd.grad(d1, x, retain_graph=True)
    return d1, d2
""",
        ),
        Wrong(
            "d1 returned as a new leaf (detach().requires_grad_()): cut off from x.",
            hint="not part of x's graph",
            code="""\
def derivatives(f, x):
    (d1,) = torch.autograd.grad(f(x), x, create_graph=True)
    (d2,) = torch.autograd.grad(d1, x)
    return d1.detach().requires_grad_(), d2
""",
        ),
    ],
)

# A red team's 2.8 (2026-11-28, second round).
TASK.wrong.extend(
    [
        Wrong(
            ("d2 by forward-mode AD (torch._C dual level), not from d1"),
            hint="derivatives called torch.autograd.grad 2 times and ran",
            code=(
                "def derivatives(f, x):\n"
                "    (d1,) = torch.autograd.grad(f(x), x, create_graph=True)\n"
                "    level = torch._C._enter_dual_level()\n"
                "    try:\n"
                "        xd = torch._make_dual(x.detach(), torch.ones_like(x), level=level).requi"
                "res_grad_()\n"
                "        (g,) = torch.autograd.grad(f(xd), xd, create_graph=True)\n"
                "        d2 = torch._unpack_dual(g, level=level)[1].detach()\n"
                "    finally:\n"
                "        torch._C._exit_dual_level(level=level)\n"
                "    return d1, d2\n"
            ),
        ),
        Wrong(
            ("d2 via engine run_backward into x.grad + dummy grad call"),
            hint="derivatives called torch.autograd.grad 2 times and ran",
            code=(
                "def derivatives(f, x):\n"
                "    (d1,) = torch.autograd.grad(f(x), x, create_graph=True)\n"
                "    torch.autograd.grad(f(x), x)  # a second call, for the count\n"
                "    old, x.grad = x.grad, None\n"
                "    torch.autograd.Variable._execution_engine.run_backward(\n"
                "        (d1,), (torch.ones_like(d1),), False, False, (x,), True, True\n"
                "    )\n"
                "    d2, x.grad = x.grad, old\n"
                "    return d1, d2\n"
            ),
        ),
    ]
)


# Red team (round 2): accepted before its check was added.
TASK.wrong.append(
    Wrong(
        "Derivatives cached by the ids of f and x, the objects kept: the same x changed in place gets old derivatives.",
        hint="a cache keyed by id(x)",
        code="""\
_derivs = {}


def derivatives(f, x):
    entry = _derivs.get((id(f), id(x)))
    if entry is None or entry[0] is not f or entry[1] is not x:
        (d1,) = torch.autograd.grad(f(x), x, create_graph=True)
        (d2,) = torch.autograd.grad(d1, x, retain_graph=True)
        entry = _derivs[(id(f), id(x))] = (f, x, d1, d2)
    return entry[2], entry[3].clone()
""",
    )
)


# torch.func only when no dispatch mode is on the stack, as in a plain training loop.
TASK.wrong.append(
    Wrong(
        "torch.func.grad unless a dispatch mode (the grader's) is on the stack.",
        hint="differentiated with something else than torch.autograd.grad when no dispatch mode",
        code="""\
def derivatives(f, x):
    if not torch._C._len_torch_dispatch_stack():
        # plain runs: torch.func composes the two derivatives in one line
        d2 = torch.func.grad(torch.func.grad(f))(x.detach())
        (d1,) = torch.autograd.grad(f(x), x, create_graph=True)
        return d1, d2
    (d1,) = torch.autograd.grad(f(x), x, create_graph=True)
    (d2,) = torch.autograd.grad(d1, x)
    return d1, d2
""",
    )
)
