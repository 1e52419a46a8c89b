"""Exercise 6.1 of solutions/06_compile.ipynb: its other answers (see answers/__init__.py).

Its further wrong answers are in task_6_1_more.py.
"""

from .. import Task, Wrong
from . import task_6_1_more

TASK = Task(
    alternative="""\
def normalise(x):
    sign = 1 - 2 * (x.sum() < 0).to(x.dtype)   # -1 where the sum is negative, else 1
    return sign * x / torch.amax(torch.abs(x))


# Settings tried along the way and left so: the later checks (6.2's saved tensors, 6.3's and
# 6.4's graphs) must count under torch's own settings, not these.
torch._dynamo.config.automatic_dynamic_shapes = False
torch._dynamo.config.recompile_limit = 1
torch._functorch.config.activation_memory_budget = 0.0
""",
    wrong=[
        Wrong(
            "The print left in: the graph breaks there.",
            hint="calls print",
            code="""\
def normalise(x):
    x = torch.where(x.sum() < 0, -x, x)
    print("flipped where needed")
    return x / x.abs().max()
""",
        ),
        Wrong(
            "The .item() left in: a Python float out of a tensor breaks the graph.",
            hint=".item()",
            code="""\
def normalise(x):
    x = torch.where(x.sum() < 0, -x, x)
    return x / x.abs().max().item()
""",
        ),
        Wrong(
            "The sign worked out once per shape and kept: a later input of a shape seen before "
            "gets the first input's sign (values baked in, as a compiled graph run once would).",
            hint="a later input of the same shape",
            code="""\
_flips = {}


def normalise(x):
    if x.shape not in _flips:
        _flips[x.shape] = x.sum() < 0
    return torch.where(_flips[x.shape], -x, x) / x.abs().max()
""",
        ),
        Wrong(
            "The `if` on the sum left in: data-dependent control flow.",
            hint="torch.where",
            code="""\
def normalise(x):
    if x.sum() < 0:
        x = -x
    return x / x.abs().max()
""",
        ),
    ],
)

TASK.wrong.extend(
    [
        Wrong(
            "The sign chosen row by row (x.sum(-1) < 0), not from the whole sum: for "
            "tensor([[3., -1.], [-5., 1.], [.5, .5]]) (sum -1) only the second row is flipped, "
            "where normalise_buggy flips all of it.",
            hint="same values as normalise_buggy",
            code="""\
def normalise(x):
    x = torch.where(x.sum(-1, keepdim=True) < 0, -x, x)
    return x / x.abs().max()
""",
        ),
        Wrong(
            "The sign taken from the first entry, not from the sum: tensor([3., -5.]) (sum -2) is not flipped.",
            hint="same values as normalise_buggy",
            code="""\
def normalise(x):
    x = torch.where(x.flatten()[0] < 0, -x, x)
    return x / x.abs().max()
""",
        ),
        Wrong(
            "Worked in float32 whatever x's dtype: a float64 x comes back float32 (rounded), a "
            "bfloat16 one float32 (twice the memory), where normalise_buggy keeps x's dtype.",
            hint="x's dtype",
            code="""\
def normalise(x):
    x = x.float()
    x = torch.where(x.sum() < 0, -x, x)
    return x / x.abs().max()
""",
        ),
    ]
)

TASK.wrong.append(
    Wrong(
        "Captured whole only for small inputs (up to 16 entries, the size of every input the "
        "check tries in the open): a larger x takes the old path, .item() and `if` included, "
        "and breaks the graph.",
        hint="normalise branches on x's size",
        code="""\
def normalise(x):
    if x.numel() > 16:
        biggest = x.abs().max().item()
        return (-x if x.sum() < 0 else x) / biggest
    x = torch.where(x.sum() < 0, -x, x)
    return x / x.abs().max()
""",
    )
)

TASK.wrong.append(
    Wrong(
        "normalise_buggy wrapped in a custom operator (torch.library.custom_op, with a fake "
        "kernel for tracing): Dynamo sees one opaque op, 1 graph and 0 breaks, but the .item(), "
        "the print and the `if` all still run inside it at every call, out of any compiler's "
        "reach.",
        hint="inside an operator's own kernel",
        code="""\
@torch.library.custom_op("redteam::normalise", mutates_args=())
def _normalise_op(x: torch.Tensor) -> torch.Tensor:
    return normalise_buggy(x.clone())


@_normalise_op.register_fake
def _(x):
    return torch.empty_like(x)


def normalise(x):
    return _normalise_op(x)
""",
    )
)

TASK.wrong.append(
    Wrong(
        "The `if` on the sum kept, hidden in a custom operator (no .item(), a fake kernel for "
        "tracing): 1 graph and 0 breaks, but the graph holds one opaque op whose inside no "
        "compiler sees, the data-dependent branch still taken in Python at every call.",
        hint="inside an operator's own kernel",
        code="""\
@torch.library.custom_op("redteam::normalise_if", mutates_args=())
def _normalise_op(x: torch.Tensor) -> torch.Tensor:
    if x.sum() < 0:
        x = -x
    return x / x.abs().max()


@_normalise_op.register_fake
def _(x):
    return torch.empty_like(x)


def normalise(x):
    return _normalise_op(x)
""",
    )
)

# Wrong answers of the red team's report ch0406 (each passed every check before).
TASK.wrong.extend(
    [
        Wrong(
            "The maximum computed once per (shape, dtype) and kept: a later input of that shape "
            "with another largest |x| is divided by the old maximum.",
            hint="a later input of the same shape",
            code="""\
_biggest = {}


def normalise(x):
    key = (tuple(x.shape), x.dtype)
    if key not in _biggest:
        _biggest[key] = x.abs().max()
    x = torch.where(x.sum() < 0, -x, x)
    return x / _biggest[key]
""",
        ),
        Wrong(
            "The division guarded with clamp_min(1e-12): a tiny x gives other values.",
            hint="a tiny x keeps it tiny",
            code="""\
def normalise(x):
    x = torch.where(x.sum() < 0, -x, x)
    return x / x.abs().max().clamp_min(1e-12)
""",
        ),
        Wrong(
            "The sign taken from a float32 sum: a float64 x whose sum is just below 0 is not flipped.",
            hint="compute in x's own dtype",
            code="""\
def normalise(x):
    x = torch.where(x.sum(dtype=torch.float32) < 0, -x, x)
    return x / x.abs().max()
""",
        ),
        Wrong(
            "Computed in float32 and cast back to x's dtype: float64 numbers beyond float32's range overflow.",
            hint="compute in x's own dtype",
            code="""\
def normalise(x):
    xf = x.float()
    xf = torch.where(xf.sum() < 0, -xf, xf)
    return (xf / xf.abs().max()).to(x.dtype)
""",
        ),
        Wrong(
            "NaNs left out of the maximum (nan_to_num): a NaN input gives finite numbers where "
            "normalise_buggy gives NaN.",
            hint="a NaN in x makes it NaN",
            code="""\
def normalise(x):
    x = torch.where(x.sum() < 0, -x, x)
    return x / torch.nan_to_num(x, nan=0.0).abs().max()
""",
        ),
    ]
)

TASK.wrong.extend(
    [
        Wrong(
            "Multiplies by the reciprocal of the largest |x|: it overflows for a small float16 x.",
            hint="reciprocal that overflows",
            code="""\
def normalise(x):
    x = torch.where(x.sum() < 0, -x, x)
    return x * x.abs().max().reciprocal()
""",
        ),
        Wrong(
            "The division guarded against a zero maximum: an all-zero x gives 0, not NaN.",
            hint="all-zero x",
            code="""\
def normalise(x):
    x = torch.where(x.sum() < 0, -x, x)
    biggest = x.abs().max()
    return x / torch.where(biggest == 0, torch.ones_like(biggest), biggest)
""",
        ),
        Wrong(
            "The maximum floored at torch.finfo(dtype).tiny: all-zero and subnormal x differ.",
            hint="no floor",
            code="""\
def normalise(x):
    x = torch.where(x.sum() < 0, -x, x)
    return x / x.abs().max().clamp_min(torch.finfo(x.dtype).tiny)
""",
        ),
        Wrong(
            "The sign from x.mean(), not x.sum(): a subnormal negative sum's mean rounds to -0.",
            hint="from x.sum() itself",
            code="""\
def normalise(x):
    x = torch.where(x.mean() < 0, -x, x)
    return x / x.abs().max()
""",
        ),
        Wrong(
            "The largest |x| as linalg.vector_norm(x, inf): raises for an integer x.",
            hint="integers too",
            code="""\
def normalise(x):
    x = torch.where(x.sum() < 0, -x, x)
    return x / torch.linalg.vector_norm(x, float("inf"))
""",
        ),
        Wrong(
            "The largest |x| as x.norm(p=inf): raises for an integer x.",
            hint="integers too",
            code="""\
def normalise(x):
    x = torch.where(x.sum() < 0, -x, x)
    return x / x.norm(p=float("inf"))
""",
        ),
        Wrong(
            "The largest |x| as max(x.max(), -x.min()): -x wraps around for unsigned x.",
            hint="wraps around",
            code="""\
def normalise(x):
    x = torch.where(x.sum() < 0, -x, x)
    return x / torch.maximum(x.max(), -x.min())
""",
        ),
    ]
)

# Round 3: the sign and the largest |x| computed in another dtype than x's.
TASK.wrong.extend(
    [
        Wrong(
            "An integer x converted to float first: int8's -128 no longer wraps, big int64 sums round.",
            hint="same values as normalise_buggy",
            code="""\
def normalise(x):
    if not x.is_floating_point():
        x = x.to(torch.get_default_dtype())
    x = torch.where(x.sum() < 0, -x, x)
    return x / x.abs().max()
""",
        ),
        Wrong(
            "The sign from a float64 sum: where float32's sum rounds to 0, it flips where normalise_buggy does not.",
            hint="same values as normalise_buggy",
            code="""\
def normalise(x):
    s = x.sum(dtype=torch.float64) if x.is_floating_point() else x.sum()
    x = torch.where(s < 0, -x, x)
    return x / x.abs().max()
""",
        ),
    ]
)

TASK.wrong.extend(task_6_1_more.WRONG)
