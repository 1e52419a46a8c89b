"""Further wrong answers to exercise 6.1 of solutions/06_compile.ipynb, after those of task_6_1.py."""

from .. import Wrong

WRONG: list[Wrong] = []

# Round 4: graphs checked on every input the check tries (not only the first), int8 sums that
# wrap around, the model's tensors, hooks and example.
WRONG.extend(
    [
        Wrong(
            "The sign from x.sum(dtype=x.dtype): an int8 x adds up with wrap-around (100 + 100 is "
            "-56), where normalise_buggy's x.sum() adds integers in int64.",
            hint="x.sum(dtype=x.dtype) wraps",
            code="""\
def normalise(x):
    x = torch.where(x.sum(dtype=x.dtype) < 0, -x, x)
    return x / x.abs().max()
""",
        ),
        Wrong(
            "The old `if` kept for integer x: Dynamo breaks the graph for them (only a float32 x was explained).",
            hint="Dynamo does not capture normalise whole",
            code="""\
def normalise(x):
    if not x.is_floating_point():
        if x.sum() < 0:
            x = -x
        return x / x.abs().max()
    x = torch.where(x.sum() < 0, -x, x)
    return x / x.abs().max()
""",
        ),
        Wrong(
            "The old `if` kept for x of 3 dimensions or more: the graph breaks for them.",
            hint="no branch of your own for some dtypes or shapes",
            code="""\
def normalise(x):
    if x.dim() > 2:
        if x.sum() < 0:
            x = -x
        return x / x.abs().max()
    x = torch.where(x.sum() < 0, -x, x)
    return x / x.abs().max()
""",
        ),
        Wrong(
            "Another computation when compiled (torch.compiler.is_compiling()): an integer x is "
            "made float32 first, so int8's -128 no longer wraps around and the result differs.",
            hint="Compiled or not, normalise must run the same code",
            code="""\
def normalise(x):
    if torch.compiler.is_compiling() and not x.is_floating_point():
        x = x.float()
    x = torch.where(x.sum() < 0, -x, x)
    return x / x.abs().max()
""",
        ),
    ]
)

WRONG.append(
    Wrong(
        "The sign from the mean, x.sum() / x.numel(), with denormals flushed to zero in the same "
        "cell: the flush made the subnormal sum 0 for normalise_buggy too, so the mean's rounding "
        "to -0 went unseen; with torch's default, the smallest negative sum is not flipped. The "
        "session now finds the switch itself, and puts subnormals back.",
        hint="torch.set_flush_denormal(True) flushes them to 0",
        code="""\
torch.set_flush_denormal(True)


def normalise(x):
    x = torch.where(x.sum() / x.numel() < 0, -x, x)
    return x / x.abs().max()
""",
    )
)

WRONG.append(
    Wrong(
        "The sum taken over x.view(-1): a transposed (non-contiguous) x cannot be viewed so, and "
        "normalise raises where normalise_buggy takes it.",
        hint="not x.view(-1)",
        code="""\
def normalise(x):
    x = torch.where(x.view(-1).sum() < 0, -x, x)
    return x / x.abs().max()
""",
    )
)

# Round 6 (red team rt6c): inputs the checks never tried (0-d, requiring grad, a million
# entries, half-precision sums that cancel, int64 sums beyond int32, int64 beyond 2**53, float16
# and small integer dtypes, a transpose), a result cut off from autograd, the model's module
# settings, models in eval or mixed modes, and the same model exported twice.
WRONG.extend(
    [
        Wrong(
            "A 0-d x special-cased with .item(): Dynamo breaks the graph for a 0-d x (no 0-d x was tried).",
            hint="still calls .item()",
            code="""\
def normalise(x):
    if x.dim() == 0:
        return torch.where(x < 0, -x, x) / x.abs().item()
    x = torch.where(x.sum() < 0, -x, x)
    return x / x.abs().max()
""",
        ),
        Wrong(
            "The old path (.item() and `if`) kept for x of more than 1000 entries: the graph "
            "breaks for large inputs (the largest input tried had 240).",
            hint="normalise branches on x's size",
            code="""\
def normalise(x):
    if x.numel() > 1000:
        biggest = x.abs().max().item()
        return (-x if x.sum() < 0 else x) / biggest
    x = torch.where(x.sum() < 0, -x, x)
    return x / x.abs().max()
""",
        ),
        Wrong(
            "The old .item() path kept for an x that requires grad: the graph breaks for it.",
            hint="still calls .item()",
            code="""\
def normalise(x):
    if x.requires_grad:
        biggest = x.detach().abs().max().item()
        return torch.where(x.sum() < 0, -x, x) / biggest
    x = torch.where(x.sum() < 0, -x, x)
    return x / x.abs().max()
""",
        ),
        Wrong(
            "bfloat16 and float16 summed in float64 'for accuracy': where x.sum()'s float32 "
            "accumulation cancels to 0 (1e8 - 1 - 1e8), the float64 sum is -1 and flips the sign.",
            hint="compute in x's own dtype",
            code="""\
def normalise(x):
    s = x.double().sum() if x.dtype in (torch.float16, torch.bfloat16) else x.sum()
    x = torch.where(s < 0, -x, x)
    return x / x.abs().max()
""",
        ),
        Wrong(
            "An integer x summed in int32: an int64 sum beyond 2**31 wraps around to a negative "
            "number and flips the sign.",
            hint="adds up in int64",
            code="""\
def normalise(x):
    s = x.sum() if x.is_floating_point() else x.sum(dtype=torch.int32)
    x = torch.where(s < 0, -x, x)
    return x / x.abs().max()
""",
        ),
    ]
)

# Round 6, second pass: a function Dynamo skips (torch.compiler.disable) runs outside the graph,
# and neither explain nor the graph count shows the break when no operation comes before it;
# a gradient hook left on the model's parameters.
WRONG.append(
    Wrong(
        "The `if` on the sum hidden in a function under torch.compiler.disable: explain reports 1 "
        "graph and 0 breaks (nothing comes before the call), but the branch runs in Python, "
        "outside the graph, at every call.",
        hint="fullgraph=True",
        code="""\
@torch.compiler.disable
def _flip(x):
    if x.sum() < 0:
        return -x
    return x


def normalise(x):
    x = _flip(x)
    return x / x.abs().max()
""",
    )
)

# Round 6, third pass: the sign from a sum in another order than x.sum()'s (which the check's
# own advice, x.reshape(-1), suggested): a transpose adds up in memory order.
WRONG.extend(
    [
        Wrong(
            "The sign from x.reshape(-1).sum(): for a transpose it adds up in the order of the "
            "rows, not in memory order as x.sum() does, and 1e8 - 1 - 1e8 rounds to 0, not -1.",
            hint="adds up in another order",
            code="""\
def normalise(x):
    x = torch.where(x.reshape(-1).sum() < 0, -x, x)
    return x / x.abs().max()
""",
        ),
        Wrong(
            "x made contiguous first: a transpose's sum then adds up in another order than "
            "normalise_buggy's x.sum(), and can round to another sign.",
            hint="adds up in another order",
            code="""\
def normalise(x):
    x = x.contiguous()
    x = torch.where(x.sum() < 0, -x, x)
    return x / x.abs().max()
""",
        ),
    ]
)

WRONG.append(
    Wrong(
        "The sign from the sum of the column sums, x.sum(0).sum(): another order of addition, "
        "and 1e8 - 1e8 + (-1) is -1 where x.sum()'s 1e8 - 1 - 1e8 rounds to 0.",
        hint="adds up in another order",
        code="""\
def normalise(x):
    s = x.sum(0).sum() if x.dim() > 0 else x.sum()
    x = torch.where(s < 0, -x, x)
    return x / x.abs().max()
""",
    )
)

# A red team's 6.1 (2026-11-28): torch's partitioner swapped, to fool 6.2's measurement.
WRONG.extend(
    [
        Wrong(
            (
                "A right normalise, and the min-cut partitioner swapped for the default one, so "
                "that a later check's own measurement saves what a wrong prediction says (6.2)."
            ),
            hint="torch._functorch.partitioners.min_cut_rematerialization_partition",
            code=(
                "def normalise(x):\n"
                "    x = torch.where(x.sum() < 0, -x, x)\n"
                "    return x / x.abs().max()\n"
                "\n"
                "\n"
                "import torch._functorch.partitioners as _pp\n"
                "_pp.min_cut_rematerialization_partition = _pp.default_partition\n"
            ),
        ),
    ]
)

# A red team's 6.1 (2026-11-28, second round).
WRONG.extend(
    [
        Wrong(
            ("no sign flip; aten::allclose CPU kernel returns True"),
            hint="your code replaced torch's kernel for aten::allclose on CPU",
            code=(
                "\n"
                "def normalise(x):\n"
                "    return x / x.abs().max()  # no sign flip\n"
                "\n"
                "\n"
                'lib = torch.library.Library("aten", "IMPL")\n'
                'lib.impl("allclose", lambda a, b, rtol=1e-05, atol=1e-08, equal_nan=False: True,'
                ' "CPU")\n'
            ),
        ),
        Wrong(
            ("result detached from autograd"),
            hint="For an x that requires grad, normalise's result does not",
            code=(
                "\n"
                "def normalise(x):\n"
                "    x = x.detach()  # the result is cut off from autograd\n"
                "    x = torch.where(x.sum() < 0, -x, x)\n"
                "    return x / x.abs().max()\n"
            ),
        ),
    ]
)

# A red team's 6.1 (ninth round): a sign from a NaN sum, a 0-d int8 x promoted, a size
# threshold, and functorch.compile's aot_function rebound to fool 6.2's measurement.
WRONG.extend(
    [
        Wrong(
            "Flipped unless x.sum() >= 0: where the sum is NaN (finite entries whose partial sums "
            "overflow to inf and -inf), normalise flips x, and normalise_buggy's x.sum() < 0, "
            "False for a NaN, does not.",
            hint="x.sum() is NaN",
            code="""\
def normalise(x):
    x = torch.where(x.sum() >= 0, x, -x)
    return x / x.abs().max()
""",
        ),
        Wrong(
            "The sign an int64 tensor of its own: a 0-d int8 x, tensor(-128), meets a 0-d int64 "
            "sign and becomes int64, where -x wraps around to -128 in int8 (1.0, not -1.0).",
            hint="promotes a 0-d integer x to int64",
            code="""\
def normalise(x):
    sign = torch.where(x.sum() < 0, -1, 1)
    return sign * x / x.abs().max()
""",
        ),
        Wrong(
            "An `if` on the sum for a huge x only (over 2**20 entries): Dynamo breaks the graph "
            "there, and every x the check tries is smaller.",
            hint="normalise branches on x's size",
            code="""\
def normalise(x):
    if x.numel() > 2**20:  # huge: flip only when needed, no second full-size tensor
        if x.sum() < 0:
            x = -x
        return x / x.abs().max()
    x = torch.where(x.sum() < 0, -x, x)
    return x / x.abs().max()
""",
        ),
        Wrong(
            "A right normalise, and functorch.compile.aot_function rebound (the module taken by "
            "assignment, not imported under a name) to force the default partitioner, so that "
            "6.2's check measures what a wrong prediction says.",
            hint="your code replaced functorch.compile.aot_function",
            code="""\
def normalise(x):
    x = torch.where(x.sum() < 0, -x, x)
    return x / x.abs().max()


import functorch.compile
from torch._functorch.partitioners import default_partition as _dp

_fcm = functorch.compile  # bound by assignment, not by an import
_real_aot = _fcm.aot_function


def _aot_default(fn, fw_compiler, bw_compiler=None, partition_fn=None, **kwargs):
    return _real_aot(fn, fw_compiler, bw_compiler, partition_fn=_dp, **kwargs)


_fcm.aot_function = _aot_default
""",
        ),
    ]
)


# Round 10 (2026-11-28): dtypes and ranks not tried before (int32, int16, 5-d), and the
# gradient's values for an x that requires grad.
WRONG.extend(
    [
        Wrong(
            ("int32 only: the maximum taken with .item() (a graph break for int32 x only)"),
            hint="still calls .item()",
            code="""\
def normalise(x):
    if x.dtype == torch.int32:
        biggest = x.abs().max().item()
    else:
        biggest = x.abs().max()
    return torch.where(x.sum() < 0, -x, x) / biggest
""",
        ),
        Wrong(
            ("int16 (not 0-d) only: the maximum with .item()"),
            hint="still calls .item()",
            code="""\
def normalise(x):
    biggest = x.abs().max()
    if x.dtype == torch.int16 and x.dim() > 0:
        biggest = biggest.item()
    return torch.where(x.sum() < 0, -x, x) / biggest
""",
        ),
        Wrong(
            ("5-D and more: the maximum with .item()"),
            hint="still calls .item()",
            code="""\
def normalise(x):
    biggest = x.abs().max()
    if x.dim() >= 5:
        biggest = biggest.item()
    return torch.where(x.sum() < 0, -x, x) / biggest
""",
        ),
        Wrong(
            ("the flipped branch detached: a gradient, but a wrong one"),
            hint="carries a wrong gradient back to x",
            code="""\
def normalise(x):
    return torch.where(x.sum() < 0, -x.detach(), x) / x.abs().max()
""",
        ),
        Wrong(
            ("the numerator detached: only the max carries a gradient"),
            hint="carries a wrong gradient back to x",
            code="""\
def normalise(x):
    flipped = torch.where(x.sum() < 0, -x, x).detach()
    return flipped / x.abs().max()
""",
        ),
    ]
)


# Round 10: a float64 x that requires grad.
WRONG.extend(
    [
        Wrong(
            ("float64 that requires grad: detached (no gradient for it)"),
            hint="does not carry the gradient back to x (the torch.float64",
            code="""\
def normalise(x):
    if x.dtype == torch.float64:
        x = x.detach()
    return torch.where(x.sum() < 0, -x, x) / x.abs().max()
""",
        ),
        Wrong(
            ("an x that requires grad, other than float32: the maximum with .item()"),
            hint="still calls .item()",
            code="""\
def normalise(x):
    biggest = x.abs().max()
    if x.requires_grad and x.dtype != torch.float32:
        biggest = biggest.item()
    return torch.where(x.sum() < 0, -x, x) / biggest
""",
        ),
    ]
)
