"""Exercise 3.3 of solutions/03_modules.ipynb: its other answers (see answers/__init__.py).

Its further wrong answers are in task_3_3_more.py.
"""

from .. import Task, Wrong
from . import task_3_3_more

# 3.3's module as the solution was, its mask drawn in x's dtype: right but for a small p in bfloat16
# or float16 (the check's last case). Its wrong answers change one thing in it.
MY_DROPOUT = """\
class MyDropout(nn.Module):
    def __init__(self, p=0.5):
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"dropout probability must be between 0 and 1, got {p}")
        self.p = p

    def forward(self, x):
        if not self.training or self.p == 0:
            return x
        if self.p == 1:
            return torch.zeros_like(x)
        keep = torch.rand_like(x) >= self.p
        return x * keep / (1 - self.p)
"""

NOT_SCALED = MY_DROPOUT.replace("return x * keep / (1 - self.p)", "return x * keep")

SCALED_BY_KEEP_PROBABILITY = MY_DROPOUT.replace("return x * keep / (1 - self.p)", "return x * keep * (1 - self.p)")

KEEPS_WITH_PROBABILITY_P = MY_DROPOUT.replace("torch.rand_like(x) >= self.p", "torch.rand_like(x) < self.p")

ALWAYS_DROPS = MY_DROPOUT.replace("if not self.training or self.p == 0:", "if self.p == 0:")

OWN_FLAG = MY_DROPOUT.replace("        self.p = p\n", "        self.p = p\n        self.dropping = True\n").replace(
    "if not self.training or self.p == 0:", "if not self.dropping or self.p == 0:"
)

IN_PLACE = MY_DROPOUT.replace("return x * keep / (1 - self.p)", "return x.mul_(keep).div_(1 - self.p)")

DIVIDES_BY_ZERO = MY_DROPOUT.replace("        if self.p == 1:\n            return torch.zeros_like(x)\n", "")

NO_CHECK_OF_P = MY_DROPOUT.replace(
    "        if not 0 <= p <= 1:\n"
    '            raise ValueError(f"dropout probability must be between 0 and 1, got {p}")\n',
    "",
)

F_DROPOUT = """\
class MyDropout(nn.Module):
    def __init__(self, p=0.5):
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"p must be in [0, 1], got {p}")
        self.p = p

    def forward(self, x):
        return F.dropout(x, self.p, self.training)
"""

# A mask of float32 numbers times a bf16 input: bf16 * float32 promotes the output to float32.
MASK_OF_FLOAT32 = MY_DROPOUT.replace(
    "        keep = torch.rand_like(x) >= self.p\n        return x * keep / (1 - self.p)\n",
    "        scale = (torch.rand(x.shape, device=x.device) >= self.p).float() / (1 - self.p)\n"
    "        return x * scale\n",
)

# A generator of its own, seeded once: every MyDropout draws the same masks, whatever torch.manual_seed says.
OWN_GENERATOR = MY_DROPOUT.replace(
    "        self.p = p\n", "        self.p = p\n        self.gen = torch.Generator().manual_seed(0)\n"
).replace("torch.rand_like(x) >= self.p", "torch.rand(x.shape, generator=self.gen, dtype=x.dtype) >= self.p")

# One mask value per feature, shared by every row: the fraction of zeros is p, but not element by element.
MASK_PER_FEATURE = MY_DROPOUT.replace(
    "torch.rand_like(x) >= self.p", "torch.rand(x.shape[-1], device=x.device, dtype=x.dtype) >= self.p"
)

# Exactly round(p * n) elements dropped, at random places: the fraction is p, but not element by element.
FIXED_COUNT = MY_DROPOUT.replace(
    "        keep = torch.rand_like(x) >= self.p\n",
    """\
        n = x.numel()
        keep = torch.ones(n, dtype=torch.bool, device=x.device)
        dropped = torch.randperm(n, device=x.device)[: round(self.p * n)]
        keep[dropped] = False
        keep = keep.view(x.shape)
""",
)

# The mask drawn on the CPU whatever x's device: fails for a tensor on a GPU.
CPU_MASK = MY_DROPOUT.replace("torch.rand_like(x) >= self.p", "torch.rand(x.shape, dtype=x.dtype) >= self.p")

DROPOUT_IN_A_THREAD = F_DROPOUT.replace(
    "        return F.dropout(x, self.p, self.training)\n",
    """\
        import threading

        out = []
        worker = threading.Thread(target=lambda: out.append(F.dropout(x, self.p, self.training)))
        worker.start()
        worker.join()
        return out[0]
""",
)

ATEN_DROPOUT = F_DROPOUT.replace(
    "F.dropout(x, self.p, self.training)", "torch.ops.aten.dropout(x, self.p, self.training)"
)

VF_DROPOUT = F_DROPOUT.replace("F.dropout(x, self.p, self.training)", "torch._VF.dropout(x, self.p, self.training)")

# TorchScript calls aten::dropout from C++: no Python function of torch runs, and the dispatch
# mode sees only what dropout is made of (bernoulli_, div_, mul).
TS_DROPOUT = """\
@torch.jit.script
def _ts_dropout(x: torch.Tensor, p: float, train: bool) -> torch.Tensor:
    return torch.nn.functional.dropout(x, p, train)


class MyDropout(nn.Module):
    def __init__(self, p=0.5):
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"p must be in [0, 1], got {p}")
        self.p = p

    def forward(self, x):
        return _ts_dropout(x, float(self.p), self.training)
"""

# The same, with torch's record of operator calls switched off around it.
TS_DROPOUT_UNRECORDED = TS_DROPOUT.replace(
    "        return _ts_dropout(x, float(self.p), self.training)\n",
    "        torch.autograd._enable_record_function(False)\n"
    "        try:\n"
    "            return _ts_dropout(x, float(self.p), self.training)\n"
    "        finally:\n"
    "            torch.autograd._enable_record_function(True)\n",
)

# aten.dropout's composite kernel reached by redispatch: no OpOverload.__call__, no aten.dropout.
REDISPATCHED_DROPOUT = F_DROPOUT.replace(
    "        return F.dropout(x, self.p, self.training)\n",
    "        if not self.training:\n"
    "            return x\n"
    "        keys = torch._C.DispatchKeySet(torch._C.DispatchKey.CPU)\n"
    "        return torch.ops.aten.dropout.default.redispatch(keys, x, float(self.p), True)\n",
)

# x.view(-1): raises for an input that is not contiguous (x.t(), x[:, ::2]).
FLATTENED_WITH_VIEW = MY_DROPOUT.replace(
    "        keep = torch.rand_like(x) >= self.p\n        return x * keep / (1 - self.p)\n",
    "        flat = x.view(-1)\n"
    "        keep = torch.rand_like(flat) >= self.p\n"
    "        return (flat * keep / (1 - self.p)).view(x.shape)\n",
)

# A mask over the last two dimensions, shared by every element of a batch of 3-d inputs
# (a (3, 5, 7) input drops the same (5, 7) positions in all 3).
MASK_OF_THE_LAST_TWO_DIMS = MY_DROPOUT.replace(
    "torch.rand_like(x) >= self.p",
    "torch.rand(x.shape[-2:] if x.ndim > 1 else x.shape, device=x.device, dtype=x.dtype) >= self.p",
)

# Rows drawn in pairs: each pair of rows shares its mask (half the randomness).
MASK_PER_PAIR_OF_ROWS = MY_DROPOUT.replace(
    "        keep = torch.rand_like(x) >= self.p\n",
    "        n = x.shape[0]\n"
    "        keep = torch.rand(((n + 1) // 2, *x.shape[1:]), device=x.device, dtype=x.dtype) >= self.p\n"
    "        keep = keep.repeat_interleave(2, 0)[:n]\n",
)

# Four masks per shape, drawn once and reused in turn: a new mask at every call, but not a fresh one.
FOUR_MASKS_IN_TURN = MY_DROPOUT.replace(
    "        self.p = p\n", "        self.p = p\n        self.masks = {}\n        self.calls = 0\n"
).replace(
    "        keep = torch.rand_like(x) >= self.p\n",
    "        self.calls += 1\n"
    "        key = (x.shape, x.dtype, x.device, self.calls % 4)\n"
    "        if key not in self.masks:\n"
    "            self.masks[key] = torch.rand_like(x) >= self.p\n"
    "        keep = self.masks[key]\n",
)

# Noise scaled by x: the same as rand >= p for positive x, reversed (keeps with probability p) for negative x.
NOISE_SCALED_BY_X = MY_DROPOUT.replace("torch.rand_like(x) >= self.p", "x * torch.rand_like(x) >= x * self.p")

# |x| instead of x: right for positive inputs only.
ABSOLUTE_VALUES = MY_DROPOUT.replace("return x * keep / (1 - self.p)", "return x.abs() * keep / (1 - self.p)")

# p must be a float: MyDropout(0) and MyDropout(1) raise, where nn.Dropout(0) and nn.Dropout(1) work.
INT_P_REFUSED = MY_DROPOUT.replace("if not 0 <= p <= 1:", "if not isinstance(p, float) or not 0 <= p <= 1:")

# p kept in a buffer too: a state_dict entry nn.Dropout does not have (its checkpoints no longer load).
P_IN_A_BUFFER = MY_DROPOUT.replace(
    "        self.p = p\n", '        self.register_buffer("prob", torch.tensor(float(p)))\n        self.p = p\n'
)

# 1 / (1 - p) computed once in __init__: a schedule that sets module.p later changes only the mask.
SCALE_FIXED_IN_INIT = MY_DROPOUT.replace(
    "        self.p = p\n", "        self.p = p\n        self.scale = 1 / (1 - p) if p < 1 else 0.0\n"
).replace("return x * keep / (1 - self.p)", "return x * keep * self.scale")


TASK = Task(
    # Bernoulli draws of the keep mask, and one scale factor that is 0 for p = 1.
    alternative="""\
class MyDropout(nn.Module):
    def __init__(self, p: float = 0.5):
        if p < 0 or p > 1:
            raise ValueError("p is a probability: it must lie in [0, 1]")
        super().__init__()
        self.p = float(p)

    def forward(self, x):
        if self.training:
            mask = torch.bernoulli(torch.full(x.shape, 1 - self.p, device=x.device)).to(x.dtype)
            scale = 0.0 if self.p == 1 else 1 / (1 - self.p)
            return x * mask * scale
        return x
""",
    wrong=[
        Wrong("Survivors not rescaled.", hint="multiplied by 1 / (1 - p)", code=NOT_SCALED),
        Wrong("Survivors scaled by 1 - p.", hint="multiplied by 1 / (1 - p)", code=SCALED_BY_KEEP_PROBABILITY),
        Wrong("Keeps with probability p.", hint="zero each element with probability p", code=KEEPS_WITH_PROBABILITY_P),
        Wrong("Drops in eval mode too.", hint="check self.training", code=ALWAYS_DROPS),
        Wrong("A flag of its own, which eval() does not set.", hint="self.training", code=OWN_FLAG),
        Wrong("Masks the input in place.", hint="leave x as it is", code=IN_PLACE),
        Wrong("p = 1 divides by zero.", hint="without dividing by 1 - p = 0", code=DIVIDES_BY_ZERO),
        Wrong("No ValueError for p outside [0, 1].", hint="must raise a ValueError", code=NO_CHECK_OF_P),
        Wrong("Calls F.dropout.", hint="ready-made dropout", code=F_DROPOUT),
        Wrong(
            "The mask made float32: a bf16 input comes back as float32.",
            hint="the input's shape and dtype",
            code=MASK_OF_FLOAT32,
        ),
        Wrong(
            "A generator of its own, seeded once: two MyDropout layers draw identical masks.",
            hint="same mask",
            code=OWN_GENERATOR,
        ),
        Wrong("Exactly round(p * n) elements dropped at every call.", hint="on its own", code=FIXED_COUNT),
        Wrong("One mask value per feature, shared by all rows.", hint="on its own", code=MASK_PER_FEATURE),
        Wrong("The mask drawn on the CPU: fails for an input on a GPU.", hint="device of its input", code=CPU_MASK),
        Wrong("F.dropout in a worker thread.", hint="started a thread", code=DROPOUT_IN_A_THREAD),
        Wrong("torch.ops.aten.dropout.", hint="ready-made dropout", code=ATEN_DROPOUT),
        Wrong("torch._VF.dropout.", hint="ready-made dropout", code=VF_DROPOUT),
        Wrong("F.dropout in TorchScript.", hint="ready-made dropout", code=TS_DROPOUT),
        Wrong(
            "F.dropout in TorchScript, torch's record of operator calls switched off around it.",
            hint="switched torch's profiler",
            code=TS_DROPOUT_UNRECORDED,
        ),
        Wrong("aten.dropout reached by redispatch.", hint="ready-made dropout", code=REDISPATCHED_DROPOUT),
        Wrong(
            "x.view(-1): fails for an input that is not contiguous.",
            hint="not contiguous",
            code=FLATTENED_WITH_VIEW,
        ),
        Wrong(
            "One mask over the last two dimensions, shared along the batch of 3-d inputs.",
            hint="independent draws",
            code=MASK_OF_THE_LAST_TWO_DIMS,
        ),
        Wrong("Each pair of rows shares its mask.", hint="independent draws", code=MASK_PER_PAIR_OF_ROWS),
        Wrong("Four masks per shape, reused in turn.", hint="different masks", code=FOUR_MASKS_IN_TURN),
        Wrong(
            "Noise scaled by x: keeps negative elements with probability p.",
            hint="zero each element with probability p",
            code=NOISE_SCALED_BY_X,
        ),
        Wrong("|x| instead of x: wrong for negative inputs.", hint="multiplied by 1 / (1 - p)", code=ABSOLUTE_VALUES),
        Wrong("MyDropout(0) and MyDropout(1) raise for an int p.", hint="ints or floats", code=INT_P_REFUSED),
        Wrong("p kept in a buffer too: a state_dict entry.", hint="not a buffer", code=P_IN_A_BUFFER),
        Wrong(
            "1 / (1 - p) fixed in __init__: module.p set later is half followed.",
            hint="read self.p in forward",
            code=SCALE_FIXED_IN_INIT,
        ),
        Wrong(
            "A mask of at most 65537 draws tiled over the input: elements 65537 apart share their fate.",
            hint="the mask repeats",
            code=MY_DROPOUT.replace(
                "        keep = torch.rand_like(x) >= self.p\n",
                "        n = x.numel()\n"
                "        pool = torch.rand(min(n, 65537), device=x.device, dtype=x.dtype) >= self.p\n"
                "        keep = pool.repeat(-(-n // 65537) if n else 1)[:n].reshape(x.shape)\n",
            ),
        ),
        Wrong(
            "A bare ValueError, with no message that says why.",
            hint="with no message",
            code=MY_DROPOUT.replace(
                'raise ValueError(f"dropout probability must be between 0 and 1, got {p}")', "raise ValueError"
            ),
        ),
        Wrong(
            "Keep decision from randint(100): p rounded to a multiple of 1/100.",
            hint="rounded to a grid",
            code=MY_DROPOUT.replace("torch.rand_like(x) >= self.p", "torch.randint_like(x, 100) >= self.p * 100"),
        ),
        Wrong(
            "Keep decision from random bytes: p rounded to a multiple of 1/256, p = 0.001 drops nothing.",
            hint="rounded to a grid",
            code=MY_DROPOUT.replace(
                "torch.rand_like(x) >= self.p", "torch.randint_like(x, 256) >= round(self.p * 256)"
            ),
        ),
        Wrong(
            "x.detach() in eval mode: no gradient flows through it.",
            hint="not x.detach()",
            code=MY_DROPOUT.replace(
                "        if not self.training or self.p == 0:\n            return x\n",
                "        if not self.training or self.p == 0:\n            return x.detach()\n",
            ),
        ),
        Wrong(
            "Private generator seeded from global RNG at construction: later torch.manual_seed ignored.",
            hint="called twice drew different masks",
            code="""\
class MyDropout(nn.Module):
    def __init__(self, p=0.5):
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"dropout probability must be between 0 and 1, got {p}")
        self.p = p
        self._g = torch.Generator().manual_seed(int(torch.randint(0, 2**62, (1,))))
    def forward(self, x):
        if not self.training or self.p == 0:
            return x
        if self.p == 1:
            return torch.zeros_like(x)
        r = torch.rand(x.shape, generator=self._g).to(x.device)
        keep = r >= self.p
        return x * keep / (1 - self.p)
""",
        ),
        Wrong(
            "No dropout when grad is disabled (training mode under no_grad).",
            hint="did not drop under torch.no_grad()",
            code="""\
class MyDropout(nn.Module):
    def __init__(self, p=0.5):
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"dropout probability must be between 0 and 1, got {p}")
        self.p = p
    def forward(self, x):
        if not self.training or self.p == 0 or not torch.is_grad_enabled():
            return x
        if self.p == 1:
            return torch.zeros_like(x)
        keep = torch.rand_like(x) >= self.p
        return x * keep / (1 - self.p)
""",
        ),
        Wrong(
            "torch._refs' dropout, a ready-made dropout by another name.",
            hint="used a ready-made dropout",
            code=MY_DROPOUT.replace(
                "        keep = torch.rand_like(x) >= self.p\n        return x * keep / (1 - self.p)\n",
                "        import torch._refs.nn.functional as refs\n\n        return refs.dropout(x, self.p, True)\n",
            ),
        ),
        Wrong(
            "torch._decomp's native_dropout, a ready-made dropout by another name.",
            hint="used a ready-made dropout",
            code=MY_DROPOUT.replace(
                "        keep = torch.rand_like(x) >= self.p\n        return x * keep / (1 - self.p)\n",
                "        from torch._decomp import decompositions\n\n"
                "        return decompositions.native_dropout(x, self.p, True)[0]\n",
            ),
        ),
    ],
)

TASK.wrong.extend(task_3_3_more.WRONG)


# A fifth red team's wrong answers.
TASK.wrong.extend(
    [
        Wrong(
            ("The mask from torch.rand(*x.shape, ...): raises for a 0-d input, which nn.Dropout takes."),
            hint="0-d inputs",
            code="""\
class MyDropout(nn.Module):
    def __init__(self, p=0.5):
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"dropout probability must be between 0 and 1, got {p}")
        self.p = p

    def forward(self, x):
        if not self.training or self.p == 0:
            return x
        if self.p == 1:
            return torch.zeros_like(x)
        keep = torch.rand(*x.shape, dtype=x.dtype, device=x.device) >= self.p
        return x * keep / (1 - self.p)
""",
        ),
    ]
)

# A mask drawn in x's own dtype: too coarse for a small p in bfloat16 and float16.
TASK.wrong.extend(
    [
        Wrong(
            "The uniform numbers drawn in x's dtype, torch.rand_like(x): in bfloat16, p = 0.001 drops about 0.3% of "
            "the elements, three times too many.",
            hint="draw the uniform numbers in float32",
            code=MY_DROPOUT,
        ),
        Wrong(
            "torch.bernoulli(torch.full_like(x, 1 - p)): in bfloat16, 1 - 0.001 rounds to 1, and nothing is dropped.",
            hint="draw the uniform numbers in float32",
            code=MY_DROPOUT.replace(
                "torch.rand_like(x) >= self.p", "torch.bernoulli(torch.full_like(x, 1 - self.p)).bool()"
            ),
        ),
    ]
)


# F.dropout only when no dispatch mode is on the stack, as in a plain training loop.
TASK.wrong.append(
    Wrong(
        "F.dropout unless a dispatch mode (the grader's) is on the stack.",
        hint="used a ready-made dropout when no dispatch mode was on the stack",
        code="""\
class MyDropout(nn.Module):
    def __init__(self, p=0.5):
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"dropout probability must be between 0 and 1, got {p}")
        self.p = p

    def forward(self, x):
        if not torch._C._len_torch_dispatch_stack():
            return F.dropout(x, self.p, self.training)  # plain runs: the fused kernel is faster
        if not self.training or self.p == 0:
            return x
        if self.p == 1:
            return torch.zeros_like(x)
        keep = torch.rand_like(x, dtype=torch.float32) >= self.p
        return x * keep / (1 - self.p)
""",
    )
)
