"""Exercise 1.8 of solutions/01_tensors.ipynb: its other answers (see answers/__init__.py)."""

from .. import Task, Wrong

# 1.8's right answer (the solution's): its wrong answers split the heads off in the wrong
# order, or transpose the caller's tensor in place.
HEADS = """\
def split_heads(x, n_heads):
    B, T, C = x.shape
    return x.view(B, T, n_heads, C // n_heads).transpose(1, 2)


def merge_heads(heads):
    B, H, T, hd = heads.shape
    return heads.transpose(1, 2).reshape(B, T, H * hd)
"""


TASK = Task(
    alternative="""\
def split_heads(x, n_heads):
    B, T, C = x.shape
    return x.reshape(B, T, n_heads, C // n_heads).permute(0, 2, 1, 3)


def merge_heads(heads):
    B, H, T, hd = heads.shape
    return heads.permute(0, 2, 1, 3).contiguous().view(B, T, H * hd)
""",
    wrong=[
        Wrong(
            "The right shape straight away, but tokens and heads mixed up.",
            hint="(B, T, H, hd)",
            code=HEADS.replace(
                "x.view(B, T, n_heads, C // n_heads).transpose(1, 2)", "x.reshape(B, n_heads, T, C // n_heads)"
            ),
        ),
        Wrong(
            "merge_heads transposes the caller's tensor in place (transpose_).",
            hint="changed its input",
            code=HEADS.replace("heads.transpose(1, 2).reshape", "heads.transpose_(1, 2).reshape"),
        ),
        Wrong(
            "Tokens and heads mixed up, and torch.equal rebound (through another name).",
            hint="your code replaced torch.equal",
            code=HEADS.replace(
                "x.view(B, T, n_heads, C // n_heads).transpose(1, 2)", "x.reshape(B, n_heads, T, C // n_heads)"
            )
            + """\


t = torch
t.equal = lambda a, b: True
""",
        ),
        # Right for float32 inputs; a float64 or bf16 activation comes back as float32.
        Wrong(
            "split_heads fills a preallocated float32 tensor head by head.",
            hint="dtype",
            code=HEADS.replace(
                "    return x.view(B, T, n_heads, C // n_heads).transpose(1, 2)\n",
                """\
    hd = C // n_heads
    out = torch.empty(B, n_heads, T, hd)
    for h in range(n_heads):
        out[:, h] = x[:, :, h * hd : (h + 1) * hd]
    return out
""",
            ),
        ),
        Wrong(
            "split_heads views x.data: no gradient flows back to x.",
            hint="autograd graph",
            code=HEADS.replace("return x.view(", "return x.data.view("),
        ),
        Wrong(
            "merge_heads reshapes to (B, T, -1): fails for an empty batch.",
            hint="empty batch",
            code=HEADS.replace("reshape(B, T, H * hd)", "reshape(B, T, -1)"),
        ),
        Wrong(
            "split_heads copies into torch.empty(...) made on the CPU: wrong device.",
            hint="input's device",
            code=HEADS.replace(
                "    return x.view(B, T, n_heads, C // n_heads).transpose(1, 2)\n",
                "    out = torch.empty(B, n_heads, T, C // n_heads, dtype=x.dtype)\n"
                "    out.copy_(x.reshape(B, T, n_heads, C // n_heads).transpose(1, 2))\n"
                "    return out\n",
            ),
        ),
        Wrong(
            "merge_heads through NumPy: no graph, CPU only.",
            hint="autograd graph",
            code=HEADS.replace(
                "    return heads.transpose(1, 2).reshape(B, T, H * hd)\n",
                "    if heads.dtype == torch.bfloat16:\n"
                "        return heads.transpose(1, 2).reshape(B, T, H * hd)\n"
                "    return torch.from_numpy(heads.detach().numpy().transpose(0, 2, 1, 3).reshape(B, T, H * hd))\n",
            ),
        ),
        Wrong(
            "split_heads reshapes to (B, T, H, -1): fails for an empty batch.",
            hint="empty batch",
            code=HEADS.replace("x.view(B, T, n_heads, C // n_heads)", "x.reshape(B, T, n_heads, -1)"),
        ),
        Wrong(
            "split_heads makes the caller's x require grad (requires_grad_).",
            hint="requires_grad with",
            code=HEADS.replace(
                "    return x.view(",
                "    if x.is_floating_point() and x.is_leaf:\n        x.requires_grad_()\n    return x.view(",
            ),
        ),
        Wrong(
            "split_heads negates x in place twice under no_grad: its values restored, its version bumped.",
            hint="split_heads wrote into x",
            code="""\
def split_heads(x, n_heads):
    B, T, C = x.shape
    with torch.no_grad():
        x.neg_()
        x.neg_()
    return x.view(B, T, n_heads, C // n_heads).transpose(1, 2)


def merge_heads(heads):
    B, H, T, hd = heads.shape
    return heads.transpose(1, 2).reshape(B, T, H * hd)
""",
        ),
        Wrong(
            "merge_heads multiplies its input by 1 in place: values kept, the input's version bumped.",
            hint="merge_heads wrote into its input",
            code="""\
def split_heads(x, n_heads):
    B, T, C = x.shape
    return x.view(B, T, n_heads, C // n_heads).transpose(1, 2)


def merge_heads(heads):
    B, H, T, hd = heads.shape
    with torch.no_grad():
        heads.mul_(1)
    return heads.transpose(1, 2).reshape(B, T, H * hd)
""",
        ),
    ],
)

TASK.wrong.append(
    Wrong(
        "split_heads through as_strided with the strides of a contiguous x: wrong for the k of qkv.chunk(3, dim=-1).",
        hint="not contiguous too",
        code=HEADS.replace(
            "    return x.view(B, T, n_heads, C // n_heads).transpose(1, 2)\n",
            "    return x.as_strided((B, n_heads, T, C // n_heads), (T * C, C // n_heads, C, 1))\n",
        ),
    )
)

TASK.wrong.extend(
    [
        Wrong(
            "split_heads through float32 and back (x.float() ... .to(x.dtype)): a float64 x rounded, 1e300 made inf.",
            hint="they must come back exactly",
            code=HEADS.replace(
                "    return x.view(B, T, n_heads, C // n_heads).transpose(1, 2)\n",
                "    return x.float().view(B, T, n_heads, C // n_heads).transpose(1, 2).to(x.dtype)\n",
            ),
        ),
        Wrong(
            "merge_heads through float64 and back: an int64 past 2**53 rounded.",
            hint="they must come back exactly",
            code=HEADS.replace(
                "    return heads.transpose(1, 2).reshape(B, T, H * hd)\n",
                "    return heads.transpose(1, 2).double().reshape(B, T, H * hd).to(heads.dtype)\n",
            ),
        ),
    ]
)


# Wrong answers of the red team's report r01 (each passed every check before).
TASK.wrong.extend(
    [
        Wrong(
            (
                "split_heads with as_strided from x's own batch and token strides but a step of 1 along the "
                "channels: wrong for an x whose last axis is not contiguous (a transposed (B, C, T))."
            ),
            hint="strides (60, 1, 5)",
            code="""\
def split_heads(x, n_heads):
    B, T, C = x.shape
    hd = C // n_heads
    return x.as_strided((B, n_heads, T, hd), (x.stride(0), hd, x.stride(1), 1), x.storage_offset())


def merge_heads(heads):
    B, H, T, hd = heads.shape
    return heads.transpose(1, 2).reshape(B, T, H * hd)
""",
        ),
    ]
)


# Red team (round 2): accepted before its check was added.
TASK.wrong.append(
    Wrong(
        "Heads cached (a contiguous copy) by id(x), x kept: the same x changed in place gets its old heads.",
        hint="a cache keyed by id(x)",
        code="""\
_heads_cache = {}


def split_heads(x, n_heads):
    entry = _heads_cache.get((id(x), n_heads))
    if entry is None or entry[0] is not x:
        B, T, C = x.shape
        heads = x.unflatten(-1, (n_heads, C // n_heads)).transpose(1, 2).contiguous()
        entry = _heads_cache[(id(x), n_heads)] = (x, heads)
    return entry[1]


def merge_heads(heads):
    B, H, T, hd = heads.shape
    return heads.transpose(1, 2).reshape(B, T, H * hd)
""",
    )
)
