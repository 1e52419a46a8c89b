"""Exercise 3.1 of solutions/03_modules.ipynb: its other answers (see answers/__init__.py)."""

from .. import Task, Wrong

# 3.1's right module (the solution's): each of its later wrong answers changes one method.
STANDARDIZE = """\
class Standardize(nn.Module):
    def __init__(self, n_features):
        super().__init__()
        self.register_buffer("mean", torch.zeros(n_features))
        self.register_buffer("std", torch.ones(n_features))

    @torch.no_grad()
    def fit(self, x):
        self.mean.copy_(x.mean(dim=0))
        self.std.copy_(x.std(dim=0))

    def forward(self, x):
        return (x - self.mean) / self.std
"""

FORWARD_IN_PLACE = STANDARDIZE.replace("return (x - self.mean) / self.std", "return x.sub_(self.mean).div_(self.std)")

FIT_MAKES_PARAMETERS = STANDARDIZE.replace(
    """\
        self.mean.copy_(x.mean(dim=0))
        self.std.copy_(x.std(dim=0))
""",
    """\
        self.mean = nn.Parameter(x.mean(dim=0), requires_grad=False)
        self.std = nn.Parameter(x.std(dim=0), requires_grad=False)
""",
)


TASK = Task(
    alternative="""\
class Standardize(nn.Module):
    def __init__(self, n_features):
        super().__init__()
        self.register_buffer("mean", torch.zeros(n_features))
        self.register_buffer("std", torch.ones(n_features))

    def fit(self, x):
        self.mean = x.mean(0).detach()   # a tensor assigned to a buffer's name replaces the buffer
        self.std = x.std(0).detach()

    def forward(self, x):
        return x.sub(self.mean).div(self.std)
""",
    wrong=[
        Wrong(
            "Plain tensor attributes: not buffers, not in state_dict.",
            hint="register_buffer",
            code="""\
class Standardize(nn.Module):
    def __init__(self, n_features):
        super().__init__()
        self.mean = torch.zeros(n_features)
        self.std = torch.ones(n_features)

    def fit(self, x):
        self.mean = x.mean(dim=0)
        self.std = x.std(dim=0)

    def forward(self, x):
        return (x - self.mean) / self.std
""",
        ),
        Wrong(
            "Parameters that do not require grad: still parameters, an optimizer would get them.",
            hint="not nn.Parameter",
            code="""\
class Standardize(nn.Module):
    def __init__(self, n_features):
        super().__init__()
        self.mean = nn.Parameter(torch.zeros(n_features), requires_grad=False)
        self.std = nn.Parameter(torch.ones(n_features), requires_grad=False)

    def fit(self, x):
        self.mean.copy_(x.mean(dim=0))
        self.std.copy_(x.std(dim=0))

    def forward(self, x):
        return (x - self.mean) / self.std
""",
        ),
        Wrong(
            "Non-persistent buffers: left out of the state dict.",
            hint="persistent=False",
            code="""\
class Standardize(nn.Module):
    def __init__(self, n_features):
        super().__init__()
        self.register_buffer("mean", torch.zeros(n_features), persistent=False)
        self.register_buffer("std", torch.ones(n_features), persistent=False)

    @torch.no_grad()
    def fit(self, x):
        self.mean.copy_(x.mean(dim=0))
        self.std.copy_(x.std(dim=0))

    def forward(self, x):
        return (x - self.mean) / self.std
""",
        ),
        Wrong(
            "fit keeps the statistics in other attributes: the buffers never change.",
            hint="fresh Standardize(3)",
            code="""\
class Standardize(nn.Module):
    def __init__(self, n_features):
        super().__init__()
        self.register_buffer("mean", torch.zeros(n_features))
        self.register_buffer("std", torch.ones(n_features))

    def fit(self, x):
        self.fitted = (x.mean(dim=0), x.std(dim=0))

    def forward(self, x):
        mean, std = getattr(self, "fitted", (self.mean, self.std))
        return (x - mean) / std
""",
        ),
        Wrong(
            "forward standardises the caller's batch in place.",
            hint="overwrote the batch it was given",
            code=FORWARD_IN_PLACE,
        ),
        Wrong(
            "fit replaces the buffers by parameters (that do not require grad).",
            hint="must still be buffers",
            code=FIT_MAKES_PARAMETERS,
        ),
        Wrong(
            "The population standard deviation, not x.std(dim=0).",
            hint="x.std(dim=0)",
            code="""\
class Standardize(nn.Module):
    def __init__(self, n_features):
        super().__init__()
        self.register_buffer("mean", torch.zeros(n_features))
        self.register_buffer("std", torch.ones(n_features))

    @torch.no_grad()
    def fit(self, x):
        self.mean.copy_(x.mean(dim=0))
        self.std.copy_(x.std(dim=0, correction=0))

    def forward(self, x):
        return (x - self.mean) / self.std
""",
        ),
        Wrong(
            "fit adds to and multiplies the buffers: right only on the first fit of a fresh module.",
            hint="each fit replaces the statistics",
            code=STANDARDIZE.replace("self.mean.copy_(x.mean(dim=0))", "self.mean.add_(x.mean(dim=0))").replace(
                "self.std.copy_(x.std(dim=0))", "self.std.mul_(x.std(dim=0))"
            ),
        ),
        Wrong(
            "std clamped to at least 1e-3: a feature with a tiny std is not standardised.",
            hint="no floor or eps",
            code=STANDARDIZE.replace("x.std(dim=0))", "x.std(dim=0).clamp_min(1e-3))"),
        ),
        Wrong(
            "fit without no_grad: a batch that requires grad puts the buffers in its graph.",
            hint="inside its autograd graph",
            code=STANDARDIZE.replace("    @torch.no_grad()\n", ""),
        ),
        Wrong(
            "std floored at 1e-7: a feature with std below it is not standardised.",
            hint="no floor or eps",
            code=STANDARDIZE.replace("x.std(dim=0))", "x.std(dim=0).clamp_min(1e-7))"),
        ),
        Wrong(
            "1e-10 added to std in forward: a feature with a tiny std is not standardised.",
            hint="no floor or eps",
            code=STANDARDIZE.replace("/ self.std", "/ (self.std + 1e-10)"),
        ),
        Wrong(
            "Statistics computed in float32 whatever x's dtype: a float64 module gets rounded ones.",
            hint="no .float()",
            code=STANDARDIZE.replace("x.mean(dim=0))", "x.float().mean(dim=0))").replace(
                "x.std(dim=0))", "x.float().std(dim=0))"
            ),
        ),
        Wrong(
            "forward under no_grad: no gradient reaches the layers before it.",
            hint="forward cut the gradient",
            code=STANDARDIZE.replace("    def forward", "    @torch.no_grad()\n    def forward"),
        ),
        Wrong(
            "forward detaches its input: no gradient reaches the layers before it.",
            hint="forward cut the gradient",
            code=STANDARDIZE.replace("(x - self.mean)", "(x.detach() - self.mean)"),
        ),
        Wrong(
            "Buffers shared by every instance with the same n_features.",
            hint="share their statistics",
            code="""\
_SHARED = {}
class Standardize(nn.Module):
    def __init__(self, n_features):
        super().__init__()
        if n_features not in _SHARED:
            _SHARED[n_features] = (torch.zeros(n_features), torch.ones(n_features))
        m, s = _SHARED[n_features]
        m.zero_(); s.fill_(1.0)
        self.register_buffer("mean", m)
        self.register_buffer("std", s)
    @torch.no_grad()
    def fit(self, x):
        self.mean.copy_(x.mean(dim=0)); self.std.copy_(x.std(dim=0))
    def forward(self, x):
        return (x - self.mean) / self.std
""",
        ),
        Wrong(
            "Std as sqrt(var): underflows for tiny spreads.",
            hint="underflows float32",
            code="""\
class Standardize(nn.Module):
    def __init__(self, n_features):
        super().__init__()
        self.register_buffer("mean", torch.zeros(n_features))
        self.register_buffer("std", torch.ones(n_features))
    @torch.no_grad()
    def fit(self, x):
        v, m = torch.var_mean(x, dim=0)
        self.mean.copy_(m); self.std.copy_(v.sqrt())
    def forward(self, x):
        return (x - self.mean) / self.std
""",
        ),
        Wrong(
            "forward multiplies by 1 / std: inf for a float32 feature whose std is subnormal (1e-40).",
            hint="overflows float32 (1e40",
            code=STANDARDIZE.replace(
                "return (x - self.mean) / self.std", "return (x - self.mean) * self.std.reciprocal()"
            ),
        ),
        Wrong(
            "forward as x / std - mean / std: float32 cancellation for a large mean and a small spread.",
            hint="subtract first, then divide",
            code=STANDARDIZE.replace("return (x - self.mean) / self.std", "return x / self.std - self.mean / self.std"),
        ),
    ],
)

# Wrong answers of the red team's report rt6b (each passed every check before).
TASK.wrong.extend(
    [
        Wrong(
            (
                "Statistics rebuilt from Python numbers (torch.tensor(x.mean(0).tolist())): a CPU tensor "
                "whatever the module's device."
            ),
            hint="Standardize must work on the device",
            code="""\
class Standardize(nn.Module):
    def __init__(self, n_features):
        super().__init__()
        self.register_buffer("mean", torch.zeros(n_features))
        self.register_buffer("std", torch.ones(n_features))

    @torch.no_grad()
    def fit(self, x):
        self.mean = torch.tensor(x.mean(dim=0).tolist(), dtype=x.dtype)
        self.std = torch.tensor(x.std(dim=0).tolist(), dtype=x.dtype)

    def forward(self, x):
        return (x - self.mean) / self.std
""",
        ),
        Wrong(
            (
                "Statistics promoted to at least float32: a bfloat16 Standardize holds float32 buffers "
                "and returns float32."
            ),
            hint="keep the statistics in the module's",
            code="""\
class Standardize(nn.Module):
    def __init__(self, n_features):
        super().__init__()
        self.register_buffer("mean", torch.zeros(n_features))
        self.register_buffer("std", torch.ones(n_features))

    @torch.no_grad()
    def fit(self, x):
        dt = torch.promote_types(x.dtype, torch.float32)
        self.mean = x.to(dt).mean(dim=0)
        self.std = x.to(dt).std(dim=0)

    def forward(self, x):
        return (x - self.mean) / self.std
""",
        ),
    ]
)

TASK.wrong.extend(
    [
        Wrong(
            "A constant feature's std of 0 replaced by 1 (as scikit-learn's StandardScaler does): not x.std(dim=0).",
            hint="a feature that does not vary has std 0",
            code="""\
class Standardize(nn.Module):
    def __init__(self, n_features):
        super().__init__()
        self.register_buffer("mean", torch.zeros(n_features))
        self.register_buffer("std", torch.ones(n_features))

    @torch.no_grad()
    def fit(self, x):
        std = x.std(dim=0)
        self.mean.copy_(x.mean(dim=0))
        self.std.copy_(torch.where(std == 0, torch.ones_like(std), std))

    def forward(self, x):
        return (x - self.mean) / self.std
""",
        ),
        Wrong(
            "The std floored at the smallest subnormal: a constant feature's std is not 0.",
            hint="a feature that does not vary has std 0",
            code="""\
class Standardize(nn.Module):
    def __init__(self, n_features):
        super().__init__()
        self.register_buffer("mean", torch.zeros(n_features))
        self.register_buffer("std", torch.ones(n_features))

    @torch.no_grad()
    def fit(self, x):
        self.mean.copy_(x.mean(dim=0))
        self.std.copy_(x.std(dim=0).clamp_min(torch.finfo(x.dtype).smallest_normal * torch.finfo(x.dtype).eps))

    def forward(self, x):
        return (x - self.mean) / self.std
""",
        ),
    ]
)

# The statistics computed in float64 and stored in the buffers' dtype: a right answer (as exact or
# more), which an exact comparison of the statistics would refuse.
TASK.other_right.append(
    """\
class Standardize(nn.Module):
    def __init__(self, n_features):
        super().__init__()
        self.register_buffer("mean", torch.zeros(n_features))
        self.register_buffer("std", torch.ones(n_features))

    @torch.no_grad()
    def fit(self, x):
        self.mean.copy_(x.double().mean(dim=0))
        self.std.copy_(x.double().std(dim=0))

    def forward(self, x):
        return (x - self.mean) / self.std
"""
)


# A fifth red team's wrong answers.
TASK.wrong.extend(
    [
        Wrong(
            (
                "The mean as x.sum(dim=0) / x.shape[0]: a float16 sum of 1,000 numbers near 100 overflows to inf, "
                "where x.mean(dim=0) adds up in float32."
            ),
            hint="passes float16's largest number",
            code="""\
class Standardize(nn.Module):
    def __init__(self, n_features):
        super().__init__()
        self.register_buffer("mean", torch.zeros(n_features))
        self.register_buffer("std", torch.ones(n_features))

    @torch.no_grad()
    def fit(self, x):
        self.mean.copy_(x.sum(dim=0) / x.shape[0])
        self.std.copy_(x.std(dim=0))
    def forward(self, x):
        return (x - self.mean) / self.std
""",
        ),
    ]
)


# Red team: forward on inputs of other shapes (one sample, a batch of sequences).
TASK.wrong.extend(
    [
        Wrong(
            (
                "forward broadcasts with mean.unsqueeze(0): an unbatched (n_features,) input comes back of shape "
                "(1, n_features)."
            ),
            hint="For an input of shape (3,)",
            code="""\
class Standardize(nn.Module):
    def __init__(self, n_features):
        super().__init__()
        self.register_buffer("mean", torch.zeros(n_features))
        self.register_buffer("std", torch.ones(n_features))

    @torch.no_grad()
    def fit(self, x):
        self.mean.copy_(x.mean(dim=0))
        self.std.copy_(x.std(dim=0))

    def forward(self, x):
        return (x - self.mean.unsqueeze(0)) / self.std.unsqueeze(0)
""",
        ),
        Wrong(
            (
                "forward expands the buffers to (N, n_features): wrong for an unbatched input, raises for (B, T, "
                "n_features)."
            ),
            hint="For an input of shape (3,)",
            code="""\
class Standardize(nn.Module):
    def __init__(self, n_features):
        super().__init__()
        self.register_buffer("mean", torch.zeros(n_features))
        self.register_buffer("std", torch.ones(n_features))

    @torch.no_grad()
    def fit(self, x):
        self.mean.copy_(x.mean(dim=0))
        self.std.copy_(x.std(dim=0))

    def forward(self, x):
        n = x.shape[0]
        return (x - self.mean.expand(n, -1)) / self.std.expand(n, -1)
""",
        ),
    ]
)
