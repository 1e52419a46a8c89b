"""Other answers to the exercises of solutions/03_modules.ipynb (see answers/__init__.py)."""

from . import Task, Wrong

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

# 3.2's right loop (the solution's): its later wrong answers change one thing in it.
TRAIN_WITH_VALIDATION = """\
def train_with_validation(model, train_batches, val_batch, lr=0.05):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    val_losses = []
    for x, y in train_batches:
        model.train()
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
        model.eval()
        with torch.no_grad():
            val_losses.append(F.mse_loss(model(val_batch[0]), val_batch[1]).item())
    return val_losses
"""

# model.train() after each validation instead of before each step: the first step runs in
# whatever mode the model came in.
TRAIN_MODE_AFTER_VALIDATION = TRAIN_WITH_VALIDATION.replace("        model.train()\n", "").replace(
    "    return val_losses\n", "        model.train()\n    return val_losses\n"
)

# Adam instead of SGD, and the given buggy loop redefined to match, so that the check's
# reference (which runs the buggy loop's steps) trains the same way.
ADAM_AND_THE_REFERENCE_REDEFINED = (
    TRAIN_WITH_VALIDATION.replace("torch.optim.SGD", "torch.optim.Adam")
    + """\


train_with_validation_buggy = train_with_validation
"""
)

# 3.5's right step (the solution's): a wrong answer changes the order of its m and v updates
# to scale grad in place.
ADAMW_STEP = """\
def adamw_step(param, grad, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    beta1, beta2 = betas
    if not state:
        state.update(t=0, m=torch.zeros_like(param), v=torch.zeros_like(param))
    state["t"] += 1
    t, m, v = state["t"], state["m"], state["v"]
    param.mul_(1 - lr * weight_decay)
    m.mul_(beta1).add_(grad, alpha=1 - beta1)
    v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    param.sub_(lr * (m / (1 - beta1 ** t)) / ((v / (1 - beta2 ** t)).sqrt() + eps))
"""

GRAD_SCALED_IN_PLACE = ADAMW_STEP.replace(
    """\
    m.mul_(beta1).add_(grad, alpha=1 - beta1)
    v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
""",
    """\
    v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    m.mul_(beta1).add_(grad.mul_(1 - beta1))
""",
)

# 3.3's right module (the solution's): its wrong answers change one thing in it.
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

# 3.4's right attention (the solution's): its wrong answers change one thing in it.
CAUSAL_ATTENTION = """\
def causal_attention(q, k, v):
    T, head_dim = q.size(-2), q.size(-1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(head_dim)
    future = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
    scores = scores.masked_fill(future, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
"""
SCORES_NOT_SCALED = CAUSAL_ATTENTION.replace(" / math.sqrt(head_dim)", "")
SCALED_BY_HEAD_DIM = CAUSAL_ATTENTION.replace("math.sqrt(head_dim)", "head_dim")
DIAGONAL_MASKED = CAUSAL_ATTENTION.replace(".triu(1)", ".triu(0)")
NO_MASK = CAUSAL_ATTENTION.replace('    scores = scores.masked_fill(future, float("-inf"))\n', "")
SOFTMAX_OVER_QUERIES = CAUSAL_ATTENTION.replace("torch.softmax(scores, dim=-1)", "torch.softmax(scores, dim=-2)")
MASKED_AFTER_SOFTMAX = CAUSAL_ATTENTION.replace(
    '    scores = scores.masked_fill(future, float("-inf"))\n    return torch.softmax(scores, dim=-1) @ v\n',
    "    weights = torch.softmax(scores, dim=-1).masked_fill(future, 0.0)\n"
    "    return weights / weights.sum(dim=-1, keepdim=True) @ v\n",
)
FIXED_LENGTH = CAUSAL_ATTENTION.replace("torch.ones(T, T,", "torch.ones(5, 5,")
SDPA = """\
def causal_attention(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)
"""
# An additive float32 mask: bf16 scores come out float32 (and v is cast to match).
ADDITIVE_FLOAT32_MASK = CAUSAL_ATTENTION.replace(
    """    scores = scores.masked_fill(future, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
""",
    """    mask = torch.zeros(T, T, device=q.device).masked_fill(future, float("-inf"))
    weights = torch.softmax(scores + mask, dim=-1)
    return weights @ v.to(weights.dtype)
""",
)
# -1e9 instead of -inf: a past score below -1e9 loses to a masked future one.
MINUS_1E9 = CAUSAL_ATTENTION.replace('float("-inf")', "-1e9")
SDPA_IN_A_THREAD = """\
import threading


def causal_attention(q, k, v):
    out = []
    worker = threading.Thread(
        target=lambda: out.append(F.scaled_dot_product_attention(q, k, v, is_causal=True))
    )
    worker.start()
    worker.join()
    return out[0]
"""
# Batch and heads merged with .view: fails on the transposed q, k, v that split_heads gives.
HEADS_MERGED_WITH_VIEW = """\
def causal_attention(q, k, v):
    B, H, T, d = q.shape
    q2, k2, v2 = (t.view(B * H, T, d) for t in (q, k, v))
    scores = torch.bmm(q2, k2.transpose(1, 2)) / math.sqrt(d)
    future = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
    weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
    return torch.bmm(weights, v2).view(B, H, T, d)
"""
FLEX_ATTENTION = """\
from torch.nn.attention.flex_attention import create_block_mask, flex_attention


def causal_attention(q, k, v):
    T = q.size(-2)
    mask = create_block_mask(lambda b, h, i, j: j <= i, None, None, T, T, device=str(q.device))
    return flex_attention(q, k, v, block_mask=mask)
"""
ATEN_SDPA_MATH = """\
def causal_attention(q, k, v):
    return torch.ops.aten._scaled_dot_product_attention_math(q, k, v, is_causal=True)[0]
"""

# TorchScript calls the math attention from C++: no OpOverload.__call__ frame, and it is
# composite, so the dispatch mode sees only matmul and softmax.
TS_SDPA_MATH = """\
@torch.jit.script
def _ts_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return torch.ops.aten._scaled_dot_product_attention_math(q, k, v, None, 0.0, True)[0]


def causal_attention(q, k, v):
    return _ts_attention(q, k, v)
"""
TS_SDPA_MATH_UNRECORDED = TS_SDPA_MATH.replace(
    "    return _ts_attention(q, k, v)\n",
    "    getattr(torch.autograd, '_enable_record_' + 'function')(False)\n"
    "    try:\n"
    "        return _ts_attention(q, k, v)\n"
    "    finally:\n"
    "        torch.autograd._enable_record_function(True)\n",
)
# The mask made on the CPU whatever q's device: masked_fill fails for scores on a GPU.
MASK_ON_THE_CPU = CAUSAL_ATTENTION.replace(", device=q.device)", ")")
# One batch element at a time, stacked: torch.stack([]) fails for a batch of 0.
LOOP_OVER_THE_BATCH = """\
def causal_attention(q, k, v):
    outs = []
    for b in range(q.shape[0]):
        T, d = q.size(-2), q.size(-1)
        s = q[b] @ k[b].transpose(-2, -1) / math.sqrt(d)
        s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
        outs.append(torch.softmax(s, dim=-1) @ v[b])
    return torch.stack(outs)
"""

TASKS = {
    "3.1": Task(
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
                code=STANDARDIZE.replace(
                    "return (x - self.mean) / self.std", "return x / self.std - self.mean / self.std"
                ),
            ),
        ],
    ),
    "3.2": Task(
        alternative="""\
def train_with_validation(model, train_batches, val_batch, lr=0.05):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    val_losses = []
    x_val, y_val = val_batch
    for x, y in train_batches:
        model.train(True)
        loss = F.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        model.train(False)
        with torch.inference_mode():
            val_losses.append(float(F.mse_loss(model(x_val), y_val)))
    return val_losses
""",
        wrong=[
            Wrong(
                "The buggy loop unchanged: eval mode stays on after the first validation.",
                hint="Call model.train() before each training step",
                code="""\
def train_with_validation(model, train_batches, val_batch, lr=0.05):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    val_losses = []
    for x, y in train_batches:
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
        model.eval()
        with torch.no_grad():
            val_losses.append(F.mse_loss(model(val_batch[0]), val_batch[1]).item())
    return val_losses
""",
            ),
            Wrong(
                "model.train() once, before the loop: the second step is in eval mode again.",
                hint="Call model.train() before each training step",
                code="""\
def train_with_validation(model, train_batches, val_batch, lr=0.05):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    val_losses = []
    model.train()
    for x, y in train_batches:
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
        model.eval()
        with torch.no_grad():
            val_losses.append(F.mse_loss(model(val_batch[0]), val_batch[1]).item())
    return val_losses
""",
            ),
            Wrong(
                "model.train() after each validation: the first step runs in the mode the model came in.",
                hint="the model came in eval mode",
                code=TRAIN_MODE_AFTER_VALIDATION,
            ),
            Wrong(
                "Adam instead of SGD, with the given buggy loop redefined to match it.",
                hint="your code replaced train_with_validation_buggy",
                code=ADAM_AND_THE_REFERENCE_REDEFINED,
            ),
            Wrong(
                "model.eval() removed: the validation runs in training mode.",
                hint="measured in eval mode",
                code=TRAIN_WITH_VALIDATION.replace("        model.eval()\n", ""),
            ),
            Wrong(
                "Default lr 0.01 instead of the signature's 0.05.",
                hint="lr=0.05)",
                code=TRAIN_WITH_VALIDATION.replace("lr=0.05):", "lr=0.01):"),
            ),
            Wrong(
                "zero_grad after the step: gradients the model came with enter the first step.",
                hint="opt.zero_grad() before each backward",
                code=TRAIN_WITH_VALIDATION.replace("        opt.zero_grad()\n", "").replace(
                    "        opt.step()\n", "        opt.step()\n        opt.zero_grad()\n"
                ),
            ),
            Wrong(
                "Gradient-norm clipping at 5 added: other steps when the gradients are large.",
                hint="without clipping",
                code=TRAIN_WITH_VALIDATION.replace(
                    "        opt.step()\n",
                    "        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)\n        opt.step()\n",
                ),
            ),
            Wrong(
                "Validation by requires_grad_(False) then requires_grad_(True): frozen parameters unfrozen.",
                hint="leave requires_grad as you found it",
                code=TRAIN_WITH_VALIDATION.replace(
                    "        with torch.no_grad():\n            val_losses",
                    "        model.requires_grad_(False)\n        if True:\n            val_losses",
                ).replace("    return val_losses", "        model.requires_grad_(True)\n    return val_losses"),
            ),
            Wrong(
                "model.requires_grad_(True) at the start: frozen parameters unfrozen and trained.",
                hint="leave requires_grad as you found it",
                code=TRAIN_WITH_VALIDATION.replace(
                    "    opt = torch.optim.SGD", "    model.requires_grad_(True)\n    opt = torch.optim.SGD"
                ),
            ),
            Wrong(
                "Mode set on top module + nn.Dropout/nn.BatchNorm1d only.",
                hint="neither nn.Dropout nor nn.BatchNorm1d",
                code="""\
def _set(model, mode):
    model.training = mode
    for m in model.modules():
        if isinstance(m, (nn.Dropout, nn.BatchNorm1d)):
            m.training = mode
def train_with_validation(model, train_batches, val_batch, lr=0.05):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    val_losses = []
    for x, y in train_batches:
        _set(model, True)
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
        _set(model, False)
        with torch.no_grad():
            val_losses.append(F.mse_loss(model(val_batch[0]), val_batch[1]).item())
    return val_losses
""",
            ),
            Wrong(
                "Old grads cleared only for trainable params; SGD over all: frozen param with stale grad stepped.",
                hint="entered SGD's",
                code="""\
def train_with_validation(model, train_batches, val_batch, lr=0.05):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    val_losses = []
    for x, y in train_batches:
        model.train()
        for p in model.parameters():
            if p.requires_grad:
                p.grad = None
        F.mse_loss(model(x), y).backward()
        opt.step()
        model.eval()
        with torch.no_grad():
            val_losses.append(F.mse_loss(model(val_batch[0]), val_batch[1]).item())
    return val_losses
""",
            ),
            Wrong(
                "The mode written by hand (module.training = flag): a submodule's own train() is bypassed.",
                hint="which call every submodule's own train()",
                code="""\
def _set_mode(model, flag):
    for m in model.modules():
        m.training = flag


def train_with_validation(model, train_batches, val_batch, lr=0.05):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    val_losses = []
    for x, y in train_batches:
        _set_mode(model, True)
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
        _set_mode(model, False)
        with torch.no_grad():
            val_losses.append(F.mse_loss(model(val_batch[0]), val_batch[1]).item())
    return val_losses
""",
            ),
            Wrong(
                "train_batches indexed by position: fails for a DataLoader or a generator.",
                hint="given as a generator",
                code=TRAIN_WITH_VALIDATION.replace(
                    "    for x, y in train_batches:\n",
                    "    for i in range(len(train_batches)):\n        x, y = train_batches[i]\n",
                ),
            ),
        ],
    ),
    "3.3": Task(
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
            mask = torch.bernoulli(torch.full_like(x, 1 - self.p))
            scale = 0.0 if self.p == 1 else 1 / (1 - self.p)
            return x * mask * scale
        return x
""",
        wrong=[
            Wrong("Survivors not rescaled.", hint="multiplied by 1 / (1 - p)", code=NOT_SCALED),
            Wrong("Survivors scaled by 1 - p.", hint="multiplied by 1 / (1 - p)", code=SCALED_BY_KEEP_PROBABILITY),
            Wrong(
                "Keeps with probability p.", hint="zero each element with probability p", code=KEEPS_WITH_PROBABILITY_P
            ),
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
            Wrong(
                "|x| instead of x: wrong for negative inputs.", hint="multiplied by 1 / (1 - p)", code=ABSOLUTE_VALUES
            ),
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
                    "        import torch._refs.nn.functional as refs\n\n"
                    "        return refs.dropout(x, self.p, True)\n",
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
    ),
    "3.4": Task(
        # The future's scores replaced by -inf with torch.where, the scale as a power.
        alternative="""\
def causal_attention(q, k, v):
    n = q.shape[-2]
    future = torch.ones(n, n, dtype=torch.bool, device=q.device).triu(diagonal=1)
    scores = torch.matmul(q, k.mT) * q.shape[-1] ** -0.5
    weights = F.softmax(torch.where(future, float("-inf"), scores), dim=-1)
    return torch.matmul(weights, v)
""",
        wrong=[
            Wrong("Scores not scaled.", hint="scale the scores by", code=SCORES_NOT_SCALED),
            Wrong("Scaled by head_dim, not its square root.", hint="scale the scores by", code=SCALED_BY_HEAD_DIM),
            Wrong("The diagonal masked too: the first row is all -inf.", hint="diagonal open", code=DIAGONAL_MASKED),
            Wrong("No mask at all.", hint="its future too", code=NO_MASK),
            Wrong("Softmax over the queries.", hint="softmax over the last dimension", code=SOFTMAX_OVER_QUERIES),
            Wrong(
                "Future weights zeroed after the softmax and renormalised: a huge future score wipes the past.",
                hint="before the softmax",
                code=MASKED_AFTER_SOFTMAX,
            ),
            Wrong("A mask built for T = 5 only.", hint="take them from the shapes", code=FIXED_LENGTH),
            Wrong("Calls scaled_dot_product_attention.", hint="called scaled_dot_product_attention", code=SDPA),
            Wrong(
                "An additive float32 mask: bf16 inputs come back as float32.",
                hint="the dtype of the inputs",
                code=ADDITIVE_FLOAT32_MASK,
            ),
            Wrong("-1e9 instead of -inf: leaks when scores go beyond -1e9.", hint="however large", code=MINUS_1E9),
            Wrong("Batch and heads merged with .view.", hint="not contiguous", code=HEADS_MERGED_WITH_VIEW),
            Wrong("flex_attention with a causal block mask.", hint="flex_attention", code=FLEX_ATTENTION),
            Wrong("SDPA in a worker thread.", hint="started a thread", code=SDPA_IN_A_THREAD),
            Wrong(
                "torch.ops.aten._scaled_dot_product_attention_math.",
                hint="called scaled_dot_product_attention",
                code=ATEN_SDPA_MATH,
            ),
            Wrong(
                "The math attention called from TorchScript.",
                hint="called scaled_dot_product_attention",
                code=TS_SDPA_MATH,
            ),
            Wrong(
                "The math attention from TorchScript, torch's record of operator calls switched off.",
                hint="switched torch's profiler",
                code=TS_SDPA_MATH_UNRECORDED,
            ),
            Wrong(
                "The mask made on the CPU: fails for inputs on a GPU.",
                hint="device of its inputs",
                code=MASK_ON_THE_CPU,
            ),
            Wrong(
                "A loop over the batch, stacked: fails for a batch of 0.", hint="any batch", code=LOOP_OVER_THE_BATCH
            ),
            Wrong(
                "torch.finfo(dtype).min instead of -inf: with past scores at -inf, the future wins.",
                hint="still larger than −∞",
                code=CAUSAL_ATTENTION.replace('float("-inf")', "torch.finfo(scores.dtype).min"),
            ),
            Wrong(
                "Past scores of exactly 0 masked too: scores.tril() then every 0 set to -inf.",
                hint="mask by position",
                code=CAUSAL_ATTENTION.replace(
                    '    scores = scores.masked_fill(future, float("-inf"))\n',
                    '    scores = scores.tril()\n    scores = scores.masked_fill(scores == 0, float("-inf"))\n',
                ),
            ),
            Wrong(
                "torch.where(scores.tril() == 0, -inf, scores): past scores of 0 masked.",
                hint="mask by position",
                code=CAUSAL_ATTENTION.replace(
                    '    scores = scores.masked_fill(future, float("-inf"))\n',
                    '    scores = torch.where(scores.tril() == 0, float("-inf"), scores)\n',
                ),
            ),
            Wrong(
                "Q and k clamped to +-1e4 before the product.",
                hint="no clamp, no rescaling",
                code="""\
def causal_attention(q, k, v):
    T, head_dim = q.size(-2), q.size(-1)
    q, k = q.clamp(-1e4, 1e4), k.clamp(-1e4, 1e4)
    scores = q @ k.transpose(-2, -1) / math.sqrt(head_dim)
    future = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
    scores = scores.masked_fill(future, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
""",
            ),
            Wrong(
                "An additive -inf mask: a float16 future score that overflows to +inf becomes NaN (inf - inf).",
                hint="Replace the masked scores",
                code="""\
def causal_attention(q, k, v):
    n = q.shape[-2]
    mask = torch.full((n, n), float("-inf"), dtype=q.dtype, device=q.device).triu(diagonal=1)
    weights = F.softmax(torch.matmul(q, k.mT) * q.shape[-1] ** -0.5 + mask, dim=-1)
    return torch.matmul(weights, v)
""",
            ),
        ],
    ),
    "3.5": Task(
        alternative="""\
def adamw_step(param, grad, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    b1, b2 = betas
    state.setdefault("step", 0)
    state.setdefault("exp_avg", torch.zeros_like(param))
    state.setdefault("exp_avg_sq", torch.zeros_like(param))
    state["step"] += 1
    t = state["step"]
    with torch.no_grad():
        param.mul_(1 - lr * weight_decay)
        state["exp_avg"].lerp_(grad, 1 - b1)
        state["exp_avg_sq"].mul_(b2).addcmul_(grad, grad, value=1 - b2)
        denom = (state["exp_avg_sq"].sqrt() / math.sqrt(1 - b2 ** t)).add_(eps)
        param.addcdiv_(state["exp_avg"], denom, value=-lr / (1 - b1 ** t))
""",
        wrong=[
            Wrong(
                "Adam's L2 penalty in the gradient instead of decoupled decay.",
                hint="Adam's L2 penalty",
                code="""\
def adamw_step(param, grad, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    beta1, beta2 = betas
    if not state:
        state.update(t=0, m=torch.zeros_like(param), v=torch.zeros_like(param))
    state["t"] += 1
    t = state["t"]
    g = grad + weight_decay * param
    state["m"] = beta1 * state["m"] + (1 - beta1) * g
    state["v"] = beta2 * state["v"] + (1 - beta2) * g * g
    m_hat = state["m"] / (1 - beta1 ** t)
    v_hat = state["v"] / (1 - beta2 ** t)
    param -= lr * m_hat / (v_hat.sqrt() + eps)
""",
            ),
            Wrong(
                "No bias correction.",
                hint="bias correction",
                code="""\
def adamw_step(param, grad, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    beta1, beta2 = betas
    if not state:
        state.update(m=torch.zeros_like(param), v=torch.zeros_like(param))
    param *= 1 - lr * weight_decay
    state["m"] = beta1 * state["m"] + (1 - beta1) * grad
    state["v"] = beta2 * state["v"] + (1 - beta2) * grad * grad
    param -= lr * state["m"] / (state["v"].sqrt() + eps)
""",
            ),
            Wrong(
                "eps inside the square root (only visible with small gradients).",
                hint="eps goes outside the square root",
                code="""\
def adamw_step(param, grad, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    beta1, beta2 = betas
    if not state:
        state.update(t=0, m=torch.zeros_like(param), v=torch.zeros_like(param))
    state["t"] += 1
    t = state["t"]
    param *= 1 - lr * weight_decay
    state["m"] = beta1 * state["m"] + (1 - beta1) * grad
    state["v"] = beta2 * state["v"] + (1 - beta2) * grad * grad
    m_hat = state["m"] / (1 - beta1 ** t)
    v_hat = state["v"] / (1 - beta2 ** t)
    param -= lr * m_hat / (v_hat + eps).sqrt()
""",
            ),
            Wrong(
                "Weight decay applied to the updated weights, after the Adam step.",
                hint="before the Adam update",
                code="""\
def adamw_step(param, grad, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    beta1, beta2 = betas
    if not state:
        state.update(t=0, m=torch.zeros_like(param), v=torch.zeros_like(param))
    state["t"] += 1
    t = state["t"]
    state["m"] = beta1 * state["m"] + (1 - beta1) * grad
    state["v"] = beta2 * state["v"] + (1 - beta2) * grad * grad
    m_hat = state["m"] / (1 - beta1 ** t)
    v_hat = state["v"] / (1 - beta2 ** t)
    param -= lr * m_hat / (v_hat.sqrt() + eps)
    param *= 1 - lr * weight_decay
""",
            ),
            Wrong(
                "The step count is not kept: t = 1 on every call.",
                hint="t counts the calls",
                code="""\
def adamw_step(param, grad, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    beta1, beta2 = betas
    if not state:
        state.update(m=torch.zeros_like(param), v=torch.zeros_like(param))
    t = 1
    param *= 1 - lr * weight_decay
    state["m"] = beta1 * state["m"] + (1 - beta1) * grad
    state["v"] = beta2 * state["v"] + (1 - beta2) * grad * grad
    m_hat = state["m"] / (1 - beta1 ** t)
    v_hat = state["v"] / (1 - beta2 ** t)
    param -= lr * m_hat / (v_hat.sqrt() + eps)
""",
            ),
            Wrong(
                "torch.optim.AdamW does the work.",
                hint="not with torch.optim",
                code="""\
def adamw_step(param, grad, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    if "opt" not in state:
        state["p"] = nn.Parameter(param.detach().clone())
        state["opt"] = torch.optim.AdamW([state["p"]], lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
    with torch.no_grad():
        state["p"].copy_(param)
    state["p"].grad = grad.clone()
    state["opt"].step()
    with torch.no_grad():
        param.copy_(state["p"])
""",
            ),
            Wrong(
                "torch's fused AdamW kernel does the work.",
                hint="not with torch.optim",
                code="""\
def adamw_step(param, grad, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    if not state:
        state.update(m=torch.zeros_like(param), v=torch.zeros_like(param), t=torch.zeros(()))
    state["t"] += 1
    torch._fused_adamw_([param], [grad], [state["m"]], [state["v"]], [], [state["t"]], lr=lr, beta1=betas[0],
                        beta2=betas[1], weight_decay=weight_decay, eps=eps, amsgrad=False, maximize=False)
""",
            ),
            Wrong(
                "torch.optim's functional adamw, through a reference taken before the check.",
                hint="not with torch.optim",
                code="""\
from torch.optim.adamw import adamw as functional_adamw


def adamw_step(param, grad, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    if not state:
        state.update(m=torch.zeros_like(param), v=torch.zeros_like(param), t=torch.zeros(()))
    functional_adamw([param], [grad], [state["m"]], [state["v"]], [], [state["t"]], foreach=False,
                     amsgrad=False, beta1=betas[0], beta2=betas[1], lr=lr, weight_decay=weight_decay, eps=eps,
                     maximize=False)
""",
            ),
            Wrong(
                "m updated from grad scaled in place: the caller's gradient changes.",
                hint="changed the gradient it was given",
                code=GRAD_SCALED_IN_PLACE,
            ),
            Wrong(
                "param rebound instead of updated in place.",
                hint="in place",
                code="""\
def adamw_step(param, grad, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    beta1, beta2 = betas
    if not state:
        state.update(t=0, m=torch.zeros_like(param), v=torch.zeros_like(param))
    state["t"] += 1
    t = state["t"]
    param = param * (1 - lr * weight_decay)
    state["m"] = beta1 * state["m"] + (1 - beta1) * grad
    state["v"] = beta2 * state["v"] + (1 - beta2) * grad * grad
    m_hat = state["m"] / (1 - beta1 ** t)
    v_hat = state["v"] / (1 - beta2 ** t)
    param = param - lr * m_hat / (v_hat.sqrt() + eps)
    return param
""",
            ),
            # The watch sees one process: AdamW in a forked child, the result sent back.
            Wrong(
                "torch.optim.AdamW run in a forked child, param and state sent back.",
                hint="started a process",
                code="""\
import os
import pickle


def adamw_step(param, grad, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    read, write = os.pipe()
    if os.fork() == 0:
        p = nn.Parameter(param.detach().clone())
        opt = torch.optim.AdamW([p], lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
        if state:
            opt.state[p] = {k: v.clone() if torch.is_tensor(v) else v for k, v in state.items()}
        p.grad = grad.clone()
        opt.step()
        os.write(write, pickle.dumps((p.detach(), dict(opt.state[p]))))
        os._exit(0)
    os.close(write)
    data = b""
    while chunk := os.read(read, 1 << 16):
        data += chunk
    os.wait()
    new, new_state = pickle.loads(data)
    param.copy_(new)
    state.clear()
    state.update(new_state)
""",
            ),
            Wrong(
                "m and v made float32 on the CPU (torch.zeros(param.shape)): imprecise for float64, fails on a GPU.",
                hint="torch.zeros_like(param)",
                code=ADAMW_STEP.replace(
                    "m=torch.zeros_like(param), v=torch.zeros_like(param)",
                    "m=torch.zeros(param.shape), v=torch.zeros(param.shape)",
                ),
            ),
            Wrong(
                "param updated by param.data = ...: new memory, other views of param keep the old values.",
                hint="gave param new memory",
                code=ADAMW_STEP.replace(
                    "    param.mul_(1 - lr * weight_decay)\n", "    new = param * (1 - lr * weight_decay)\n"
                ).replace("    param.sub_(", "    param.data = new - ("),
            ),
            Wrong(
                "The step count kept in a global keyed by id(state): a copy of the state cannot carry on.",
                hint="in the state dict itself",
                code="_adam_steps = {}\n\n\n"
                + ADAMW_STEP.replace(
                    "state.update(t=0, m=torch.zeros_like(param), v=torch.zeros_like(param))",
                    "state.update(m=torch.zeros_like(param), v=torch.zeros_like(param))\n"
                    "        _adam_steps[id(state)] = 0",
                ).replace(
                    '    state["t"] += 1\n    t, m, v = state["t"], state["m"], state["v"]',
                    '    _adam_steps[id(state)] += 1\n    t, m, v = _adam_steps[id(state)], state["m"], state["v"]',
                ),
            ),
            Wrong(
                "Default lr 1e-2 instead of the signature's 1e-3.",
                hint="keep the signature's defaults",
                code=ADAMW_STEP.replace("lr=1e-3,", "lr=1e-2,"),
            ),
            Wrong(
                "Default eps 1e-7 (Keras's) instead of 1e-8.",
                hint="keep the signature's defaults",
                code=ADAMW_STEP.replace("eps=1e-8,", "eps=1e-7,"),
            ),
            Wrong(
                "m and v always float64: not in param's dtype, twice the memory.",
                hint="in param's dtype",
                code=ADAMW_STEP.replace(
                    "m=torch.zeros_like(param), v=torch.zeros_like(param)",
                    "m=torch.zeros_like(param, dtype=torch.float64), v=torch.zeros_like(param, dtype=torch.float64)",
                ),
            ),
            Wrong(
                "Bias correction computed in param's dtype: bf16 rounds beta2 to 1.",
                hint="0.999 rounds to 1.0",
                code="""\
def adamw_step(param, grad, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    beta1, beta2 = betas
    if not state:
        state["t"] = 0
        state["m"] = torch.zeros_like(param)
        state["v"] = torch.zeros_like(param)
    state["t"] += 1
    t, m, v = state["t"], state["m"], state["v"]
    b1 = torch.tensor(beta1, dtype=param.dtype, device=param.device)
    b2 = torch.tensor(beta2, dtype=param.dtype, device=param.device)
    param.mul_(1 - lr * weight_decay)
    m.mul_(beta1).add_(grad, alpha=1 - beta1)
    v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    m_hat = m / (1 - b1**t)
    v_hat = v / (1 - b2**t)
    param.sub_(lr * m_hat / (v_hat.sqrt() + eps))
""",
            ),
            Wrong(
                "m and v kept in float32 for a bfloat16 param: not in param's dtype.",
                hint="For a bfloat16 param, the tensors adamw_step keeps in state",
                code=ADAMW_STEP.replace(
                    "m=torch.zeros_like(param), v=torch.zeros_like(param)",
                    "m=torch.zeros_like(param, dtype=torch.promote_types(param.dtype, torch.float32)), "
                    "v=torch.zeros_like(param, dtype=torch.promote_types(param.dtype, torch.float32))",
                ),
            ),
            Wrong(
                "The hyperparameters of the first call kept in state: a learning-rate schedule is ignored.",
                hint="With a learning-rate schedule",
                code=ADAMW_STEP.replace(
                    "        state.update(t=0, m=torch.zeros_like(param), v=torch.zeros_like(param))\n",
                    "        state.update(t=0, m=torch.zeros_like(param), v=torch.zeros_like(param))\n"
                    "        state['hp'] = (lr, eps, weight_decay)\n"
                    "    lr, eps, weight_decay = state['hp']\n",
                ),
            ),
            Wrong(
                "torch._fused_adamw_ called with dispatch modes off (_DisableTorchDispatch): the fused kernel.",
                hint="where the grader cannot record it",
                code="""\
def adamw_step(param, grad, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    if not state:
        state.update(t=torch.zeros((), device=param.device), m=torch.zeros_like(param), v=torch.zeros_like(param))
    state["t"] += 1
    with torch._C._DisableTorchDispatch():
        torch._fused_adamw_(
            [param], [grad], [state["m"]], [state["v"]], [], [state["t"]], lr=lr, beta1=betas[0],
            beta2=betas[1], weight_decay=weight_decay, eps=eps, amsgrad=False, maximize=False,
        )
""",
            ),
        ],
    ),
}

# Wrong answers of the red team's report rt6b (each passed every check before).
TASKS["3.1"].wrong.extend(
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
TASKS["3.2"].wrong.extend(
    [
        Wrong(
            (
                "model.train() only when model.training is False: a model that comes in training mode "
                "with a submodule in eval mode trains its first step with that submodule in eval mode."
            ),
            hint="whatever mode the model seems to be in",
            code="""\
def train_with_validation(model, train_batches, val_batch, lr=0.05):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    val_losses = []
    for x, y in train_batches:
        if not model.training:
            model.train()
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
        model.eval()
        with torch.no_grad():
            val_losses.append(F.mse_loss(model(val_batch[0]), val_batch[1]).item())
    return val_losses
""",
        ),
    ]
)
TASKS["3.3"].wrong.extend(
    [
        Wrong(
            "A copy of x in eval mode (x.clone()), not x itself.",
            hint="return x itself, as nn.Dropout does",
            code="""\
class MyDropout(nn.Module):
    def __init__(self, p=0.5):
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"dropout probability must be between 0 and 1, got {p}")
        self.p = p

    def forward(self, x):
        if not self.training:
            return x.clone()
        if self.p == 0:
            return x
        if self.p == 1:
            return torch.zeros_like(x)
        keep = torch.rand_like(x) >= self.p
        return x * keep / (1 - self.p)
""",
        ),
        Wrong(
            "x * 1 in eval mode, not x itself.",
            hint="return x itself, as nn.Dropout does",
            code="""\
class MyDropout(nn.Module):
    def __init__(self, p=0.5):
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"dropout probability must be between 0 and 1, got {p}")
        self.p = p

    def forward(self, x):
        if not self.training:
            return x * 1
        if self.p == 0:
            return x
        if self.p == 1:
            return torch.zeros_like(x)
        keep = torch.rand_like(x) >= self.p
        return x * keep / (1 - self.p)
""",
        ),
    ]
)
TASKS["3.4"].wrong.extend(
    [
        Wrong(
            (
                "Forward by hand in an autograd.Function whose backward runs "
                "F.scaled_dot_product_attention (outside the watched forward)."
            ),
            hint="The backward through causal_attention",
            code="""\
class _Att(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v):
        ctx.save_for_backward(q, k, v)
        T, d = q.size(-2), q.size(-1)
        s = q @ k.transpose(-2, -1) / math.sqrt(d)
        s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
        return torch.softmax(s, dim=-1) @ v

    @staticmethod
    def backward(ctx, g):
        q, k, v = (t.detach().requires_grad_() for t in ctx.saved_tensors)
        with torch.enable_grad():
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return torch.autograd.grad(out, (q, k, v), g)


def causal_attention(q, k, v):
    return _Att.apply(q, k, v)
""",
        ),
    ]
)
TASKS["3.5"].wrong.extend(
    [
        Wrong(
            "betas, eps and weight_decay kept in state from the first call (lr taken from each call).",
            hint="With betas, eps and weight_decay changed",
            code="""\
def adamw_step(param, grad, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    beta1, beta2 = betas
    if not state:
        state["t"] = 0
        state["m"] = torch.zeros_like(param)
        state["v"] = torch.zeros_like(param)
        state["hp"] = (betas, eps, weight_decay)
    state["t"] += 1
    t, m, v = state["t"], state["m"], state["v"]
    (beta1, beta2), eps, weight_decay = state["hp"]
    param.mul_(1 - lr * weight_decay)
    m.mul_(beta1).add_(grad, alpha=1 - beta1)
    v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    m_hat = m / (1 - beta1**t)
    v_hat = v / (1 - beta2**t)
    param.sub_(lr * m_hat / (v_hat.sqrt() + eps))
""",
        ),
        Wrong(
            "weight_decay kept in state from the first call.",
            hint="With betas, eps and weight_decay changed",
            code="""\
def adamw_step(param, grad, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    beta1, beta2 = betas
    if not state:
        state["t"] = 0
        state["m"] = torch.zeros_like(param)
        state["v"] = torch.zeros_like(param)
        state["wd"] = weight_decay
    state["t"] += 1
    t, m, v = state["t"], state["m"], state["v"]
    param.mul_(1 - lr * state["wd"])
    m.mul_(beta1).add_(grad, alpha=1 - beta1)
    v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    m_hat = m / (1 - beta1**t)
    v_hat = v / (1 - beta2**t)
    param.sub_(lr * m_hat / (v_hat.sqrt() + eps))
""",
        ),
    ]
)

TASKS["3.5"].wrong.extend(
    [
        Wrong(
            (
                "The update made on param.flatten(): for a param that is not contiguous (a transpose) a "
                "copy, param itself unchanged."
            ),
            hint="For a param that is not contiguous",
            code="""\
def adamw_step(param, grad, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    beta1, beta2 = betas
    if not state:
        state["t"] = 0
        state["m"] = torch.zeros_like(param)
        state["v"] = torch.zeros_like(param)
    state["t"] += 1
    t, m, v = state["t"], state["m"], state["v"]
    p = param.flatten()
    g = grad.flatten()
    mf, vf = m.flatten(), v.flatten()
    p.mul_(1 - lr * weight_decay)
    mf.mul_(beta1).add_(g, alpha=1 - beta1)
    vf.mul_(beta2).addcmul_(g, g, value=1 - beta2)
    p.sub_(lr * (mf / (1 - beta1**t)) / ((vf / (1 - beta2**t)).sqrt() + eps))
""",
        ),
    ]
)

TASKS["3.1"].wrong.extend(
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
TASKS["3.4"].wrong.extend(
    [
        Wrong(
            "Scores shifted by their row maximum before the softmax (amax): raises for T = 0, an empty sequence.",
            hint="It must work for any batch, heads, T",
            code="""\
def causal_attention(q, k, v):
    T, head_dim = q.size(-2), q.size(-1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(head_dim)
    future = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
    scores = scores.masked_fill(future, float("-inf"))
    scores = scores - scores.amax(dim=-1, keepdim=True).detach()
    return torch.softmax(scores, dim=-1) @ v
""",
        ),
    ]
)

# The statistics computed in float64 and stored in the buffers' dtype: a right answer (as exact or
# more), which an exact comparison of the statistics would refuse.
TASKS["3.1"].other_right.append(
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
TASKS["3.5"].wrong.append(
    Wrong(
        "The gradient cleaned with nan_to_num: a diverging run's NaN and inf steps are taken as "
        "finite ones, and the run hides that it diverged.",
        hint="a NaN and an inf in the gradient",
        code=ADAMW_STEP.replace(
            "    beta1, beta2 = betas\n", "    beta1, beta2 = betas\n    grad = torch.nan_to_num(grad)\n"
        ),
    )
)

# A red team's 3.2 (2026-11-28, second round).
TASKS["3.2"].wrong.extend(
    [
        Wrong(
            (
                "train_batches read into a list up front: a streaming/random generator's draws no"
                " longer interleave with the steps"
            ),
            hint="train_with_validation takes other steps than the buggy",
            code=(
                "def train_with_validation(model, train_batches, val_batch, lr=0.05):\n"
                "    train_batches = list(train_batches)  # read the iterable once, up front\n"
                "    opt = torch.optim.SGD(model.parameters(), lr=lr)\n"
                "    val_losses = []\n"
                "    for x, y in train_batches:\n"
                "        model.train()\n"
                "        opt.zero_grad()\n"
                "        F.mse_loss(model(x), y).backward()\n"
                "        opt.step()\n"
                "        model.eval()\n"
                "        with torch.no_grad():\n"
                "            val_losses.append(F.mse_loss(model(val_batch[0]), val_batch[1]).item"
                "())\n"
                "    return val_losses\n"
            ),
        ),
        Wrong(
            ("non-finite steps skipped: not the buggy loop's steps on a batch with inf/nan"),
            hint="train_with_validation takes other steps than the buggy",
            code=(
                "def train_with_validation(model, train_batches, val_batch, lr=0.05):\n"
                "    opt = torch.optim.SGD(model.parameters(), lr=lr)\n"
                "    val_losses = []\n"
                "    for x, y in train_batches:\n"
                "        model.train()\n"
                "        opt.zero_grad()\n"
                "        loss = F.mse_loss(model(x), y)\n"
                "        if torch.isfinite(loss):  # a bad batch must not wreck the weights\n"
                "            loss.backward()\n"
                "            opt.step()\n"
                "        model.eval()\n"
                "        with torch.no_grad():\n"
                "            val_losses.append(F.mse_loss(model(val_batch[0]), val_batch[1]).item"
                "())\n"
                "    return val_losses\n"
            ),
        ),
    ]
)
