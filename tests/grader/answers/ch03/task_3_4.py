"""Exercise 3.4 of solutions/03_modules.ipynb: its other answers (see answers/__init__.py)."""

from .. import Task, Wrong

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


TASK = Task(
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
        Wrong("A loop over the batch, stacked: fails for a batch of 0.", hint="any batch", code=LOOP_OVER_THE_BATCH),
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
)

TASK.wrong.extend(
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

TASK.wrong.extend(
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


# Red team: a long sequence, longer than a mask made once at a fixed size.
TASK.wrong.extend(
    [
        Wrong(
            ("The mask made once at a block size of 256 and sliced: a sequence longer than 256 raises."),
            hint="For a sequence of T = 1100 positions",
            code="""\
_MASK = torch.ones(256, 256, dtype=torch.bool).triu(1)
def causal_attention(q, k, v):
    T, head_dim = q.size(-2), q.size(-1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(head_dim)
    scores = scores.masked_fill(_MASK[:T, :T].to(q.device), float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
""",
        ),
    ]
)


# A sixth red team's wrong answers: clamped scores, unwatched threads and callbacks.
TASK.wrong.extend(
    [
        Wrong(
            ("Scores clamped to at least -1e4 before the mask: past scores beyond it become equal."),
            hint="no clamp or cap",
            code="""\
def causal_attention(q, k, v):
    T, head_dim = q.size(-2), q.size(-1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(head_dim)
    future = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
    scores = scores.clamp(min=-1e4)
    scores = scores.masked_fill(future, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
""",
        ),
        Wrong(
            (
                "The math SDPA in TorchScript, with torch._C._autograd._clear_callbacks() removing the profiler's "
                "callbacks first."
            ),
            hint="switched torch's profiler",
            code="""\
@torch.jit.script
def _ts_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return torch.ops.aten._scaled_dot_product_attention_math(q, k, v, None, 0.0, True)[0]


def causal_attention(q, k, v):
    torch._C._autograd._clear_callbacks()
    return _ts_attention(q, k, v)
""",
        ),
        Wrong(
            (
                "SDPA forward and backward run in the kernel's IOPub thread (started before the grader's setup), "
                "inside an autograd.Function."
            ),
            hint="called scaled_dot_product_attention",
            code="""\
import threading as _threading


def _in_io(fn, *args):
    loop = get_ipython().kernel.iopub_thread.io_loop
    done, box = _threading.Event(), []

    def run():
        try:
            box.append(fn(*args))
        except BaseException as e:
            box.append(e)
        done.set()

    loop.add_callback(run)
    done.wait(30)
    return box[0]


class _A(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v):
        ctx.save_for_backward(q, k, v)
        return _in_io(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))

    @staticmethod
    def backward(ctx, g):
        q, k, v = ctx.saved_tensors
        def run():
            with torch.enable_grad():
                qq, kk, vv = (t.detach().requires_grad_() for t in (q, k, v))
                o = F.scaled_dot_product_attention(qq, kk, vv, is_causal=True)
                return torch.autograd.grad(o, (qq, kk, vv), g)
        return _in_io(run)


def causal_attention(q, k, v):
    return _A.apply(q, k, v)
""",
        ),
    ]
)


# scaled_dot_product_attention only when no dispatch mode is on the stack, as in a plain
# training loop.
TASK.wrong.append(
    Wrong(
        "F.scaled_dot_product_attention unless a dispatch mode (the grader's) is on the stack.",
        hint="called a ready-made attention when no dispatch mode was on the stack",
        code="""\
from torch.utils._python_dispatch import _get_current_dispatch_mode_stack


def causal_attention(q, k, v):
    if not _get_current_dispatch_mode_stack():
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)  # plain runs: fused, faster
    T, head_dim = q.size(-2), q.size(-1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(head_dim)
    future = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
    return torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1) @ v
""",
    )
)


# Red team (round 3): accepted before its check was added. Every check called causal_attention with
# tensors of its own, never the same ones after a change.
TASK.wrong.append(
    Wrong(
        "Outputs cached by the ids of q, k and v, the tensors kept: the same tensors written into "
        "in place (a reused buffer, a KV cache) get the attention of their old values.",
        hint="a cache keyed by id()",
        code="""\
_cache = {}


def causal_attention(q, k, v):
    key = (id(q), id(k), id(v))
    if key in _cache and all(a is b for a, b in zip(_cache[key][0], (q, k, v))):
        return _cache[key][1]
    T, head_dim = q.size(-2), q.size(-1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(head_dim)
    future = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
    scores = scores.masked_fill(future, float("-inf"))
    out = torch.softmax(scores, dim=-1) @ v
    _cache[key] = ((q, k, v), out)
    return out
""",
    )
)


# Red team (round 4): hostile answers to the checks hardened in round 3; each that passed is marked so.
TASK.wrong.extend(
    [
        Wrong(
            (
                "Outputs cached by (id, _version) of q, k, v: values written through .data keep the "
                "version. Passed before."
            ),
            hint="a cache keyed by id() and ._version",
            code="""\
_cache = {}


def causal_attention(q, k, v):
    key = tuple((id(t), t._version) for t in (q, k, v))
    hit = _cache.get(key)
    if hit is not None and all(a is b for a, b in zip(hit[0], (q, k, v))):
        return hit[1]
    T, head_dim = q.size(-2), q.size(-1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(head_dim)
    future = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
    out = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1) @ v
    _cache[key] = ((q, k, v), out)
    return out
""",
        ),
        Wrong(
            ("The CPU flash attention by aten's name, torch.ops.aten._scaled_dot_product_flash_attention_for_cpu."),
            hint="called scaled_dot_product_attention, flex_attention or MultiheadAttention",
            code="""\
def causal_attention(q, k, v):
    return torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default(q, k, v, 0.0, True)[0]
""",
        ),
        Wrong(
            "SDPA through torch._C._nn.scaled_dot_product_attention.",
            hint="called scaled_dot_product_attention, flex_attention or MultiheadAttention",
            code="""\
def causal_attention(q, k, v):
    return torch._C._nn.scaled_dot_product_attention(q, k, v, is_causal=True)
""",
        ),
        Wrong(
            "flex_attention with a causal score_mod.",
            hint="called scaled_dot_product_attention, flex_attention or MultiheadAttention",
            code="""\
from torch.nn.attention.flex_attention import flex_attention


def causal_attention(q, k, v):
    return flex_attention(q, k, v, score_mod=lambda s, b, h, i, j: torch.where(j <= i, s, float("-inf")))
""",
        ),
        Wrong(
            "q, k, v flattened with .view for bmm: fails for non-contiguous inputs.",
            hint="not contiguous",
            code="""\
def causal_attention(q, k, v):
    B, H, T, D = q.shape
    q3, k3, v3 = q.view(B * H, T, D), k.view(B * H, T, D), v.view(B * H, T, D)
    scores = torch.bmm(q3, k3.transpose(1, 2)) / math.sqrt(D)
    future = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
    scores = scores.masked_fill(future, float("-inf"))
    return torch.bmm(torch.softmax(scores, dim=-1), v3).view(B, H, T, D)
""",
        ),
        Wrong(
            "q scaled through .data in place and scaled back.",
            hint="changed q, k or v in place",
            code="""\
def causal_attention(q, k, v):
    T, head_dim = q.size(-2), q.size(-1)
    with torch.no_grad():
        q.data.mul_(1 / math.sqrt(head_dim))  # scale once, in place: no extra (T, T) division
    scores = q @ k.transpose(-2, -1)
    with torch.no_grad():
        q.data.mul_(math.sqrt(head_dim))  # and back
    future = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
    scores = scores.masked_fill(future, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
""",
        ),
        Wrong(
            "SDPA by aten's name, torch.ops.aten.scaled_dot_product_attention.",
            hint="called scaled_dot_product_attention, flex_attention or MultiheadAttention",
            code="""\
def causal_attention(q, k, v):
    return torch.ops.aten.scaled_dot_product_attention.default(q, k, v, None, 0.0, True)
""",
        ),
        Wrong(
            "torch.set_default_dtype(q.dtype) inside, never undone.",
            hint="torch's default dtype",
            code="""\
def causal_attention(q, k, v):
    torch.set_default_dtype(q.dtype)
    T, head_dim = q.size(-2), q.size(-1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(head_dim)
    future = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
    scores = scores.masked_fill(future, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
""",
        ),
        Wrong(
            ("Without recording, the output written into a buffer kept from call to call (out=). Passed before."),
            hint="a buffer kept from call to call",
            code="""\
_buffers = {}


def causal_attention(q, k, v):
    T, head_dim = q.size(-2), q.size(-1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(head_dim)
    future = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
    weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
    if torch.is_grad_enabled() and (weights.requires_grad or v.requires_grad):
        return weights @ v
    key = (q.shape[:-1] + v.shape[-1:], q.dtype, q.device)
    out = _buffers.setdefault(key, torch.empty(key[0], dtype=q.dtype, device=q.device))
    return torch.matmul(weights, v, out=out)
""",
        ),
    ]
)
