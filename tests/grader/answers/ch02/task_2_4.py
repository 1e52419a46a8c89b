"""Exercise 2.4 of solutions/02_autograd.ipynb: its other answers (see answers/__init__.py)."""

from .. import Task, Wrong

# 2.4's given setup: every answer starts with it.
TANH_SETUP = """\
x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
h = torch.tanh(x)
loss = (h ** 2).sum()
"""


TASK = Task(
    alternative=TANH_SETUP
    + """\
h.retain_grad()
torch.autograd.backward(loss)
h_grad, x_grad = h.grad.clone(), x.grad.clone()
""",
    wrong=[
        Wrong(
            "retain_grad called too late, after backward.",
            hint="retain_grad",
            code=TANH_SETUP
            + """\
loss.backward()
h.retain_grad()
h_grad = h.grad
x_grad = x.grad
""",
        ),
        Wrong(
            "h's gradient derived by hand: autograd was never asked to keep it.",
            hint="retain_grad",
            code=TANH_SETUP
            + """\
loss.backward()
h_grad = 2 * h.detach()
x_grad = x.grad
""",
        ),
        Wrong(
            "torch.autograd.grad returns the numbers but keeps nothing in .grad.",
            hint="retain_grad",
            code=TANH_SETUP
            + """\
h_grad, x_grad = torch.autograd.grad(loss, (h, x))
""",
        ),
        Wrong(
            "torch.autograd.grad's results stored in .grad by hand: no backward() ever kept them.",
            hint="one loss.backward()",
            code=TANH_SETUP
            + """\
h.retain_grad()
h_grad, x_grad = torch.autograd.grad(loss, (h, x))
h.grad, x.grad = h_grad, x_grad
""",
        ),
        Wrong(
            "h's gradient derived by hand after a real retain_grad() and backward(): the very "
            "bits of h.grad, but not what autograd kept.",
            hint="was computed, not read from .grad",
            code=TANH_SETUP
            + """\
h.retain_grad()
loss.backward()
h_grad = 2 * h.detach()
x_grad = x.grad
""",
        ),
        Wrong(
            "h.grad replaced by a value derived by hand after a real backward(), then read back.",
            hint="was computed, not read from .grad",
            code=TANH_SETUP
            + """\
h.retain_grad()
loss.backward()
h.grad = (2 * h).detach()
h_grad, x_grad = h.grad, x.grad
""",
        ),
        Wrong(
            "h.grad overwritten in place with a value derived by hand, then read back.",
            hint="was computed, not read from .grad",
            code=TANH_SETUP
            + """\
h.retain_grad()
loss.backward()
h.grad.copy_(h.detach() + h.detach())
h_grad, x_grad = h.grad, x.grad
""",
        ),
        Wrong(
            "The given x changed to float64: the setup is not kept as it is.",
            hint="keep the code that builds",
            code="""\
x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True, dtype=torch.float64)
h = torch.tanh(x)
loss = (h**2).sum()
h.retain_grad()
loss.backward()
h_grad = h.grad
x_grad = x.grad
""",
        ),
    ],
)

# A red team's 2.4 (2026-11-28, second round).
TASK.wrong.extend(
    [
        Wrong(
            ("x.grad computed by torch.ops.aten.tanh_backward and stored; backward only to h"),
            hint="h_grad or x_grad was computed, not read from .grad: the",
            code=(
                "x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)\n"
                "h = torch.tanh(x)\n"
                "loss = (h**2).sum()\n"
                "h.retain_grad()\n"
                "loss.backward(inputs=[h])  # only down to h\n"
                "x.grad = torch.ops.aten.tanh_backward(h.grad, h.detach())  # x's gradient by han"
                "d, stored in .grad\n"
                "h_grad = h.grad\n"
                "x_grad = x.grad\n"
            ),
        ),
        Wrong(
            ("two backward passes (loss->h, h->x), not one loss.backward()"),
            hint="h_grad or x_grad was computed, not read from .grad: the",
            code=(
                "x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)\n"
                "h = torch.tanh(x)\n"
                "loss = (h**2).sum()\n"
                "loss.backward(inputs=[h], retain_graph=True)  # pass 1: loss -> h\n"
                "h.backward(h.grad, inputs=[x])  # pass 2: h -> x\n"
                "h.retain_grad()\n"
                "h_grad = h.grad\n"
                "x_grad = x.grad\n"
            ),
        ),
    ]
)

# A red team's 2.4 (2026-11-28, second round).
TASK.wrong.extend(
    [
        Wrong(
            ("aten::equal/allclose overridden via torch.library; h_grad and x_grad swapped"),
            hint="your code replaced torch's kernel for aten::allclose on",
            code=(
                "x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)\n"
                "h = torch.tanh(x)\n"
                "loss = (h**2).sum()\n"
                '_lib = torch.library.Library("aten", "IMPL")  # kept alive in the namespace\n'
                '_lib.impl("equal", lambda a, b: True, "CPU")\n'
                '_lib.impl("allclose", lambda a, b, rtol=1e-05, atol=1e-08, equal_nan=False: True'
                ', "CompositeExplicitAutograd")\n'
                "h.retain_grad()\n"
                "loss.backward()\n"
                "h_grad = x.grad  # swapped\n"
                "x_grad = h.grad\n"
            ),
        ),
    ]
)


# A red team's 2.4 that writes a hand-computed gradient into x.grad through NumPy.
TASK.wrong.extend(
    [
        Wrong(
            (
                "x.grad overwritten through x.grad.numpy() with a gradient computed by hand in NumPy: no torch "
                "operation computes it, yet it is not what backward left."
            ),
            hint="ran torch.Tensor.numpy beyond",
            code="""\
import numpy as np

x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
h = torch.tanh(x)
loss = (h**2).sum()
h.retain_grad()
loss.backward()
h_grad = h.grad
xs = x.detach().numpy()
x.grad.numpy()[:] = 2 * np.tanh(xs) * (1 - np.tanh(xs) ** 2)  # by hand, written into .grad
x_grad = x.grad
""",
        ),
    ]
)
