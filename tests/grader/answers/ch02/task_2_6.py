"""Exercise 2.6 of solutions/02_autograd.ipynb: its other answers (see answers/__init__.py)."""

from .. import Task, Wrong

TASK = Task(
    alternative="""\
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return x.pow(3)

    @staticmethod
    def setup_context(ctx, inputs, output):
        (x,) = inputs
        ctx.save_for_backward(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return 3 * x.square() * grad_output
""",
    wrong=[
        Wrong(
            "dy/dx returned without multiplying by grad_output.",
            hint="grad_output",
            code="""\
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return 3 * x ** 2
""",
        ),
        Wrong(
            "x kept as an attribute of ctx instead of with save_for_backward.",
            hint="saved nothing with ctx.save_for_backward",
            code="""\
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.x = x
        return x ** 3

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * 3 * ctx.x ** 2
""",
        ),
        Wrong(
            "forward computes in float64 for accuracy: a float32 input comes back as float64.",
            hint="dtype",
            code="""\
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.double() ** 3

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return (grad_output * 3 * x.double() ** 2).to(x.dtype)
""",
        ),
        Wrong(
            "The output saved instead of x, x recovered as its cube root: NaN for negative x.",
            hint="gradcheck failed",
            code="""\
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = x**3
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return grad_output * 3 * y ** (2 / 3)
""",
        ),
        Wrong(
            "backward not written by hand: autograd differentiates x ** 3 inside it.",
            hint="runs autograd itself",
            code="""\
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        with torch.enable_grad():
            xx = x.detach().requires_grad_()
            (g,) = torch.autograd.grad(xx**3, xx, grad_output)
        return g
""",
        ),
        Wrong(
            "The output saved as a decoy, x kept on ctx: a change of x in place goes unnoticed.",
            hint="silently used the changed x",
            code="""\
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = x**3
        ctx.save_for_backward(y)
        ctx.x = x
        return y

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * 3 * ctx.x**2
""",
        ),
        Wrong(
            "x recovered from the saved output by a signed cube root: lost where x ** 3 overflows.",
            hint="overflows or underflows",
            code="""\
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = x**3
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        x = y.sign() * y.abs() ** (1 / 3)
        return grad_output * 3 * x**2
""",
        ),
        Wrong(
            "backward by forward-mode autograd (dual numbers): no formula written.",
            hint="forward mode",
            code="""\
import torch.autograd.forward_ad as fwAD


class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        with fwAD.dual_level():
            dual = fwAD.make_dual(x, grad_output)
            return fwAD.unpack_dual(dual**3).tangent
""",
        ),
        Wrong(
            "backward by torch.func.jvp: autograd's forward mode.",
            hint="forward mode",
            code="""\
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        _, tangent = torch.func.jvp(lambda t: t**3, (x,), (grad_output,))
        return tangent
""",
        ),
        Wrong(
            "The derivative worked out by autograd in forward and saved: backward only multiplies.",
            hint="Cube's forward runs autograd",
            code="""\
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        with torch.enable_grad():  # let autograd work out dy/dx while the forward runs
            leaf = x.detach().requires_grad_()
            (slope,) = torch.autograd.grad((leaf**3).sum(), leaf)
        ctx.save_for_backward(slope)
        return x**3

    @staticmethod
    def backward(ctx, grad_output):
        (slope,) = ctx.saved_tensors
        return grad_output * slope
""",
        ),
        Wrong(
            "x kept as a class attribute (save_for_backward called for show): a second use overwrites it.",
            hint="used twice in one graph",
            code="""\
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        Cube.last_input = x.detach().clone()  # a copy of x of its own, safe from in-place changes
        return x**3

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * 3 * Cube.last_input**2
""",
        ),
        Wrong(
            "3 as torch.tensor([3.0]) in backward: a CPU tensor, which fails for an x on another device.",
            hint="'meta' device",
            code="""\
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3
    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * torch.tensor([3.0], dtype=x.dtype) * x**2
""",
        ),
    ],
)


# A sixth red team's wrong answers.
TASK.wrong.extend(
    [
        Wrong(
            (
                "x ** 3.0 in forward: an integer x comes back float32, its big cubes rounded (9007091372906047 "
                "becomes 9007090806816768)."
            ),
            hint="with an integer power",
            code="""\
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3.0

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * 3 * x**2
""",
        ),
    ]
)


# A red team's 2.6 whose backward autograd cannot differentiate.
TASK.wrong.extend(
    [
        Wrong(
            (
                "The formula computed under torch.no_grad() in backward: gradcheck passes, but the gradient of "
                "the gradient is 0, not 6 * x."
            ),
            hint="Cube's backward is not differentiable",
            code="""\
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        with torch.no_grad():  # a formula: nothing to record
            return grad_output * 3 * x**2
""",
        ),
    ]
)
