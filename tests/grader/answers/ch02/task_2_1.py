"""Exercise 2.1 of solutions/02_autograd.ipynb: its other answers (see answers/__init__.py)."""

from .. import Task, Wrong
from .shared import IN_AN_UNWATCHED_THREAD

# 2.1's right numbers: each wrong answer gets one part of them wrong.
CHAIN_RULE_NUMBERS = """\
dL_dw, dL_dx, dL_db = 20, 30, 10
dz_da = -4 + 2 * 4
dz_db = 2 * 4
dz_dc = 2 * (-1)
"""

LOCAL_DERIVATIVES_ONLY = CHAIN_RULE_NUMBERS.replace(
    "dL_dw, dL_dx, dL_db = 20, 30, 10\n", "dL_dw = 2\ndL_dx = 3\ndL_db = 1\n"
)

ONE_PATH_FOR_A = CHAIN_RULE_NUMBERS.replace("dz_da = -4 + 2 * 4", "dz_da = 2 * 4")


TASK = Task(
    alternative="""\
w, x, b = 3.0, 2.0, -1.0
dL_dy = 2 * (w * x + b)
dL_dw, dL_dx, dL_db = dL_dy * x, dL_dy * w, dL_dy * 1.0
a, b, c = 2.0, -3.0, 4.0
y = (a + b) * c
dz_da = y + a * c
dz_db = a * c
dz_dc = a * (a + b)
""",
    wrong=[
        Wrong(
            "Only the local derivatives of y, without the outer factor dL/dy = 2y.",
            hint="chain rule",
            code=LOCAL_DERIVATIVES_ONLY,
        ),
        Wrong(
            "Only the path through y for a, which is used twice.",
            hint="two paths",
            code=ONE_PATH_FOR_A,
        ),
        Wrong(
            "The first three numbers computed with autograd in the solution cell, not by hand.",
            hint="not worked out by hand",
            code=CHAIN_RULE_NUMBERS.replace(
                "dL_dw, dL_dx, dL_db = 20, 30, 10\n",
                """\
w_t, x_t, b_t = (torch.tensor(v, requires_grad=True) for v in (3.0, 2.0, -1.0))
((w_t * x_t + b_t) ** 2).backward()
dL_dw, dL_dx, dL_db = w_t.grad, x_t.grad, b_t.grad
""",
            ),
        ),
        # A record of what ran must reach into threads: a thread's dispatch modes and profile are its own.
        Wrong(
            "The first three numbers computed with autograd in a thread of their own, out of the record's sight.",
            hint="starting a thread",
            code=CHAIN_RULE_NUMBERS.replace(
                "dL_dw, dL_dx, dL_db = 20, 30, 10\n",
                """\
import threading

found = []


def work():
    w_t, x_t, b_t = (torch.tensor(v, requires_grad=True) for v in (3.0, 2.0, -1.0))
    ((w_t * x_t + b_t) ** 2).backward()
    found.extend(t.grad.item() for t in (w_t, x_t, b_t))


thread = threading.Thread(target=work)
thread.start()
thread.join()
dL_dw, dL_dx, dL_db = found
""",
            ),
        ),
        Wrong(
            "The first three numbers computed with autograd in a thread started by _thread's own starter.",
            hint="starting a thread",
            code=CHAIN_RULE_NUMBERS.replace(
                "dL_dw, dL_dx, dL_db = 20, 30, 10\n",
                IN_AN_UNWATCHED_THREAD
                + """\
def derivatives():
    w_t, x_t, b_t = (torch.tensor(v, requires_grad=True) for v in (3.0, 2.0, -1.0))
    ((w_t * x_t + b_t) ** 2).backward()
    return [t.grad.item() for t in (w_t, x_t, b_t)]


dL_dw, dL_dx, dL_db = in_a_thread(derivatives)
""",
            ),
        ),
        Wrong(
            "Differentiated by sympy, a computer-algebra system, not by hand.",
            hint="not worked out by hand",
            code="""\
import sympy as sp

w, x, b, a, c = sp.symbols("w x b a c")
L = (w * x + b) ** 2
dL_dw, dL_dx, dL_db = (int(sp.diff(L, v).subs({w: 3, x: 2, b: -1})) for v in (w, x, b))
z = ((a + b) * c) * a
dz_da, dz_db, dz_dc = (int(sp.diff(z, v).subs({a: 2, b: -3, c: 4})) for v in (a, b, c))
""",
        ),
        Wrong(
            "Measured by central finite differences in plain Python.",
            hint="not worked out by hand",
            code="""\
def fd(fn, args, i, eps=1e-4):
    up, down = list(args), list(args)
    up[i] += eps
    down[i] -= eps
    return round((fn(*up) - fn(*down)) / (2 * eps), 6)


dL_dw, dL_dx, dL_db = (fd(lambda w, x, b: (w * x + b) ** 2, (3.0, 2.0, -1.0), i) for i in range(3))
dz_da, dz_db, dz_dc = (fd(lambda a, b, c: ((a + b) * c) * a, (2.0, -3.0, 4.0), i) for i in range(3))
""",
        ),
        Wrong(
            "Forward-mode dual numbers in plain Python.",
            hint="not worked out by hand",
            code="""\
class Dual:
    def __init__(self, v, d=0.0):
        self.v, self.d = v, d

    def __add__(self, o):
        o = o if isinstance(o, Dual) else Dual(o)
        return Dual(self.v + o.v, self.d + o.d)

    def __mul__(self, o):
        o = o if isinstance(o, Dual) else Dual(o)
        return Dual(self.v * o.v, self.d * o.v + self.v * o.d)

    def __pow__(self, n):
        return Dual(self.v**n, n * self.v ** (n - 1) * self.d)


def diff(fn, vs, i):
    return fn(*[Dual(v, 1.0 if k == i else 0.0) for k, v in enumerate(vs)]).d


dL_dw, dL_dx, dL_db = (diff(lambda w, x, b: (w * x + b) ** 2, (3.0, 2.0, -1.0), i) for i in range(3))
dz_da, dz_db, dz_dc = (diff(lambda a, b, c: ((a + b) * c) * a, (2.0, -3.0, 4.0), i) for i in range(3))
""",
        ),
        Wrong(
            "Autograd run in the cell, the numbers written down by a cell it runs itself.",
            hint="run from inside another cell",
            code="""\
_vals = []
for _fn, _vs in (
    (lambda w, x, b: (w * x + b) ** 2, (3.0, 2.0, -1.0)),
    (lambda a, b, c: ((a + b) * c) * a, (2.0, -3.0, 4.0)),
):
    _ts = [torch.tensor(v, requires_grad=True) for v in _vs]
    _fn(*_ts).backward()
    _vals += [t.grad.item() for t in _ts]
get_ipython().run_cell("dL_dw, dL_dx, dL_db, dz_da, dz_db, dz_dc = " + repr(tuple(_vals)))
""",
        ),
        Wrong(
            "A number a little off (20.0000005 for 20): within the old tolerance of 1e-6.",
            hint="dL_dw is wrong",
            code="""\
dL_dw, dL_dx, dL_db = 20.0000005, 30, 10
dz_da = -4 + 2 * 4
dz_db = 2 * 4
dz_dc = 2 * (-1)
""",
        ),
    ],
)

# A red team's 2.1 (2026-11-28, second round).
TASK.wrong.extend(
    [
        Wrong(
            ("dL_dw off by 1e-10: 20.0000000001, not 20 (tolerance 1e-9)"),
            hint="dL_dw is wrong. Use the chain rule: dL/dy = 2y comes first,",
            code=(
                "dL_dw = 20.0000000001\n"
                "dL_dx = 10 * 3\n"
                "dL_db = 10 * 1\n"
                "dz_da = -4 + 2 * 4\n"
                "dz_db = 2 * 4\n"
                "dz_dc = 2 * (-1)\n"
            ),
        ),
    ]
)


# A red team's answer (2026-11-28, third session): within the old tolerance of 1e-12.
TASK.wrong.extend(
    [
        Wrong(
            (
                "dL_dw = 20.0000000000009: 9e-13 off the exact 20, inside a tolerance of 1e-12; the gradients are "
                "integers, which a float holds exactly."
            ),
            hint="dL_dw is wrong",
            code="""\
dL_dw = 20.0000000000009
dL_dx = 10 * 3
dL_db = 10 * 1
dz_da = -4 + 2 * 4
dz_db = 2 * 4
dz_dc = 2 * (-1)
""",
        ),
    ]
)


# A red team's 2.1 that measures the derivatives with imaginary numbers.
TASK.wrong.extend(
    [
        Wrong(
            (
                "Complex-step differentiation written as plain arithmetic (Im f(x + ih) / h), each derivative "
                "then picked from candidate integers by a set comprehension: measured, not worked out."
            ),
            hint="the cell that sets them uses 1j",
            code="""\
# derivatives by complex-step differentiation, read off by matching against candidate integers
h = 2.0 ** -30
D = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
K = [s * (10 * t + u) for s in [1, -1] for t in D for u in D]
gw = ((((3 + h * 1j) * 2 + -1) ** 2) - (((3 - h * 1j) * 2 + -1) ** 2)) / (2j * h)
gx = (((3 * (2 + h * 1j) + -1) ** 2) - ((3 * (2 - h * 1j) + -1) ** 2)) / (2j * h)
gb = (((3 * 2 + (-1 + h * 1j)) ** 2) - ((3 * 2 + (-1 - h * 1j)) ** 2)) / (2j * h)
ga = ((((2 + h * 1j) + -3) * 4 * (2 + h * 1j)) - (((2 - h * 1j) + -3) * 4 * (2 - h * 1j))) / (2j * h)
gbb = (((2 + (-3 + h * 1j)) * 4 * 2) - ((2 + (-3 - h * 1j)) * 4 * 2)) / (2j * h)
gc = (((2 + -3) * (4 + h * 1j) * 2) - ((2 + -3) * (4 - h * 1j) * 2)) / (2j * h)
(dL_dw,) = {k for k in K if k == gw}
(dL_dx,) = {k for k in K if k == gx}
(dL_db,) = {k for k in K if k == gb}
(dz_da,) = {k for k in K if k == ga}
(dz_db,) = {k for k in K if k == gbb}
(dz_dc,) = {k for k in K if k == gc}
""",
        ),
    ]
)
