"""Exercise 1.5 of solutions/01_tensors.ipynb: its other answers (see answers/__init__.py)."""

from .. import Task, Wrong

# 1.5's given setup: every answer starts with it.
SCORES_SETUP = """\
scores = torch.tensor([[ 0.5, -1.0,  2.0,  0.0, -0.5],
                       [-2.0,  1.5, -0.1,  3.0,  0.2],
                       [ 1.0,  0.0, -3.0, -1.5,  2.5],
                       [-0.3,  0.7,  0.9, -2.2,  1.1]])
rows = torch.tensor([0, 2, 3])
cols = torch.tensor([4, 0, 1])
"""

# 1.5's right answer (the solution's): each wrong answer changes one of its lines.
INDEXING = """\
positives = scores[scores > 0]
clipped = scores.clamp(min=0)
picked = scores[rows, cols]
"""

PICKED_ONE_BY_ONE = INDEXING.replace(
    "picked = scores[rows, cols]", "picked = torch.stack([scores[0, 4], scores[2, 0], scores[3, 1]])"
)

# torch.allclose rebound through another name for torch: every later check would pass.
CLAMPED_THE_WRONG_WAY_AND_ALLCLOSE_REBOUND = (
    INDEXING.replace("scores.clamp(min=0)", "scores.clamp(max=0)")
    + """\
T = torch
T.allclose = lambda *args, **kwargs: True
"""
)

# clipped in float64: equal values, another dtype than scores'.
CLIPPED_IN_FLOAT64 = INDEXING.replace(
    "clipped = scores.clamp(min=0)", "clipped = torch.where(scores < 0, 0, scores.double())"
)

# The indexing expression run for show, picked typed in.
PICKED_TYPED_IN = INDEXING.replace(
    "picked = scores[rows, cols]", "_ = scores[rows, cols]\npicked = torch.tensor([-0.5, 1.0, 0.7])"
)


TASK = Task(
    alternative=SCORES_SETUP
    + """\
positives = scores.masked_select(scores > 0)
clipped = torch.where(scores < 0, torch.zeros_like(scores), scores)
picked = scores.flatten()[rows % scores.shape[0] * scores.shape[1] + cols % scores.shape[1]]
""",
    wrong=[
        Wrong(
            "`clipped = scores` is not a copy: the masked assignment changes scores too.",
            hint="does not copy",
            code=SCORES_SETUP
            + """\
positives = scores[scores > 0]
clipped = scores
clipped[clipped < 0] = 0
picked = scores[rows, cols]
""",
        ),
        Wrong(
            "picked written as three separate picks, not one indexing with rows and cols.",
            hint="one indexing expression",
            code=SCORES_SETUP + PICKED_ONE_BY_ONE,
        ),
        Wrong(
            "Negative entries kept instead of zeroed, and torch.allclose rebound (through another name).",
            hint="your code replaced torch.allclose",
            code=SCORES_SETUP + CLAMPED_THE_WRONG_WAY_AND_ALLCLOSE_REBOUND,
        ),
        Wrong(
            "0.0 counted as positive (>= 0).",
            hint="0.0 is not positive",
            code=SCORES_SETUP + INDEXING.replace("scores[scores > 0]", "scores[scores >= 0]"),
        ),
        Wrong("clipped in float64.", hint="keep scores' dtype", code=SCORES_SETUP + CLIPPED_IN_FLOAT64),
        Wrong(
            "picked typed in, the indexing run for show.",
            hint="do not type the values in",
            code=SCORES_SETUP + PICKED_TYPED_IN,
        ),
        Wrong(
            "clipped = (scores + scores.abs()) / 2: overflows past 1.7e38 and makes nan of -inf.",
            hint="keeps every other one as it is",
            code=SCORES_SETUP + INDEXING.replace("scores.clamp(min=0)", "(scores + scores.abs()) / 2"),
        ),
        Wrong(
            "positives with a tolerance (> 1e-6): tiny positive entries dropped.",
            hint="however small",
            code=SCORES_SETUP + INDEXING.replace("scores[scores > 0]", "scores[scores > 1e-6]"),
        ),
        Wrong(
            "clipped = scores * (scores > 0): -inf times 0 is nan.",
            hint="keeps every other one as it is",
            code=SCORES_SETUP + INDEXING.replace("scores.clamp(min=0)", "scores * (scores > 0)"),
        ),
        Wrong(
            "picked as the diagonal of every combination, scores[rows, cols] run for show.",
            hint="broadcast against each other",
            code=SCORES_SETUP
            + INDEXING.replace(
                "picked = scores[rows, cols]",
                "_ = scores[rows, cols]\npicked = scores[rows][:, cols].diagonal().clone()",
            ),
        ),
        Wrong(
            "picked from a flat index built from scores' strides: wrong for a non-contiguous scores.",
            hint="contiguous or not",
            code=SCORES_SETUP
            + INDEXING.replace(
                "picked = scores[rows, cols]",
                "picked = scores.reshape(-1)[rows * scores.stride(0) + cols * scores.stride(1)]",
            ),
        ),
        Wrong(
            "clipped = torch.where(scores > 0, scores, 0.0): nan (not negative) zeroed too.",
            hint="keeps every other one as it is",
            code=SCORES_SETUP + INDEXING.replace("scores.clamp(min=0)", "torch.where(scores > 0, scores, 0.0)"),
        ),
        Wrong(
            "positives as scores >= finfo.tiny: subnormal positive entries dropped.",
            hint="however small",
            code="""\
scores = torch.tensor(
    [
        [0.5, -1.0, 2.0, 0.0, -0.5],
        [-2.0, 1.5, -0.1, 3.0, 0.2],
        [1.0, 0.0, -3.0, -1.5, 2.5],
        [-0.3, 0.7, 0.9, -2.2, 1.1],
    ]
)
rows = torch.tensor([0, 2, 3])
cols = torch.tensor([4, 0, 1])
positives = scores[scores >= torch.finfo(scores.dtype).tiny]
clipped = scores.clamp(min=0)
picked = scores[rows, cols]
""",
        ),
        Wrong(
            "clipped through float32 (scores.float().clamp(min=0)): float64 scores rounded.",
            hint="float64 here",
            code="""\
scores = torch.tensor(
    [
        [0.5, -1.0, 2.0, 0.0, -0.5],
        [-2.0, 1.5, -0.1, 3.0, 0.2],
        [1.0, 0.0, -3.0, -1.5, 2.5],
        [-0.3, 0.7, 0.9, -2.2, 1.1],
    ]
)
rows = torch.tensor([0, 2, 3])
cols = torch.tensor([4, 0, 1])
positives = scores[scores > 0]
clipped = scores.float().clamp(min=0)
picked = scores[rows, cols]
""",
        ),
    ],
)

TASK.wrong.append(
    Wrong(
        "clipped with a zero of its own, torch.zeros(1): a float32 tensor that promotes bfloat16 scores to float32.",
        hint="bfloat16 here",
        code=SCORES_SETUP + INDEXING.replace("scores.clamp(min=0)", "torch.where(scores < 0, torch.zeros(1), scores)"),
    )
)

# Wrong answers of the red team's report rt6d (each passed every check before).
TASK.wrong.extend(
    [
        Wrong(
            "picked from a flat index built by hand, rows * n_cols + cols: a negative index (-1, the last column) "
            "lands in the row before.",
            hint="may hold negative indices",
            code=SCORES_SETUP
            + INDEXING.replace(
                "picked = scores[rows, cols]", "picked = scores.flatten()[rows * scores.shape[1] + cols]"
            ),
        ),
        Wrong(
            "clipped is scores itself when no entry is negative: not a new tensor, a write into it changes scores.",
            hint="clipped is not a new tensor",
            code=SCORES_SETUP
            + INDEXING.replace(
                "clipped = scores.clamp(min=0)", "clipped = scores.clamp(min=0) if (scores < 0).any() else scores"
            ),
        ),
    ]
)

# Wrong answers of the red team's report r01 (each passed every check before).
TASK.wrong.extend(
    [
        Wrong(
            "An in-place write into scores before clipping (scores[scores.isnan()] = 0): scores changes, and "
            "clipped loses its nan.",
            hint="scores must stay unchanged",
            code=SCORES_SETUP + "scores[scores.isnan()] = 0\n" + INDEXING,
        ),
        Wrong(
            "An in-place write into scores (scores[scores.isinf()] = 0): scores changes, and clipped loses its inf.",
            hint="scores must stay unchanged",
            code=SCORES_SETUP + "scores[scores.isinf()] = 0\n" + INDEXING,
        ),
    ]
)


# Red team (round 2): accepted before its check was added.
TASK.wrong.append(
    Wrong(
        "positives through nonzero().squeeze(): with one positive entry, a 0-d tensor, not a 1-D one.",
        hint="one positive entry",
        code=SCORES_SETUP
        + INDEXING.replace(
            "positives = scores[scores > 0]",
            "flat = scores.flatten()\npositives = flat[torch.nonzero(flat > 0).squeeze()]",
        ),
    )
)
