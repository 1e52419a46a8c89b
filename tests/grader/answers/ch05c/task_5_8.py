"""Exercise 5.8 of solutions/05c_memory_at_scale.ipynb: its other answers (see answers/__init__.py)."""

from .. import Task, Wrong

# 5.8's right count, stage by stage: each wrong answer changes one stage or the shard.
ZERO_BYTES = """\
def zero_bytes_per_rank(n_params, world_size, stage):
    shard = -(-n_params // world_size)
    if stage == 0:
        return 16 * n_params
    if stage == 1:
        return 4 * n_params + 12 * shard
    if stage == 2:
        return 2 * n_params + 14 * shard
    return 16 * shard
"""

STAGE_1_SHARDS_THE_WEIGHTS = ZERO_BYTES.replace("4 * n_params + 12 * shard", "2 * n_params + 14 * shard")

# Adam's m and v counted, the fp32 master weights forgotten: 12 bytes a parameter.
WITHOUT_MASTER_WEIGHTS = (
    ZERO_BYTES.replace("16 * n_params", "12 * n_params")
    .replace("12 * shard", "8 * shard")
    .replace("14 * shard", "10 * shard")
    .replace("16 * shard", "12 * shard")
)

SHARD_ROUNDED_DOWN = ZERO_BYTES.replace("-(-n_params // world_size)", "n_params // world_size")

SHARD_AS_A_FLOAT = ZERO_BYTES.replace("-(-n_params // world_size)", "n_params / world_size")


TASK = Task(
    alternative="""\
def zero_bytes_per_rank(n_params, world_size, stage):
    per_rank = (n_params + world_size - 1) // world_size
    sizes = [("optimizer state", 12), ("gradients", 2), ("weights", 2)]
    total = 0
    for k, (part, size) in enumerate(sizes):
        total += size * (per_rank if k < stage else n_params)
    return total
""",
    wrong=[
        Wrong(
            "Stage 1 shards the fp16 weights along with the optimizer state.",
            hint="Stage 1 shards only the optimizer state",
            code=STAGE_1_SHARDS_THE_WEIGHTS,
        ),
        Wrong(
            "Forgets Adam's fp32 master weights: 12 bytes per parameter instead of 16.",
            hint="a master copy of the weights",
            code=WITHOUT_MASTER_WEIGHTS,
        ),
        Wrong(
            "Rounds the shard down: the padding forgotten.",
            hint="round n_params / world_size up",
            code=SHARD_ROUNDED_DOWN,
        ),
        Wrong(
            "Divides with /: a float.",
            hint="must return a Python int",
            code=SHARD_AS_A_FLOAT,
        ),
    ],
)

TASK.wrong.append(
    Wrong(
        "The shard rounded up with math.ceil(n_params / world_size): a float division, exact "
        "only up to 2**53 parameters. For 2**53 + 1 parameters on 1 rank it counts 2**53 "
        "(math.ceil(float(2**53 + 1)) is 2**53), a parameter's bytes short.",
        hint="count with integers",
        code="""\
import math


def zero_bytes_per_rank(n_params, world_size, stage):
    shard = math.ceil(n_params / world_size)
    return [16 * n_params, 4 * n_params + 12 * shard, 2 * n_params + 14 * shard, 16 * shard][stage]
""",
    )
)

TASK.wrong.extend(
    [
        Wrong(
            "math.ceil(n_params / world_size) except on one rank: still a float division, one "
            "short for 2**54 + 2 parameters on 2 ranks.",
            hint="exact only up to 2**53",
            code="""\
import math


def zero_bytes_per_rank(n_params, world_size, stage):
    shard = n_params if world_size == 1 else int(math.ceil(n_params / world_size))
    return [16 * n_params, 4 * n_params + 12 * shard, 2 * n_params + 14 * shard, 16 * shard][stage]
""",
        ),
        Wrong(
            "Counts in NumPy's int64: 16 bytes for each of 2**60 + 3 parameters wrap around.",
            hint="NumPy's int64 wraps around",
            code="""\
import numpy as np


def zero_bytes_per_rank(n_params, world_size, stage):
    n = np.int64(n_params)
    shard = -(-n // world_size)
    return int([16 * n, 4 * n + 12 * shard, 2 * n + 14 * shard, 16 * shard][stage])
""",
        ),
    ]
)

TASK.wrong.append(
    Wrong(
        "The shard rounded up through Decimal, whose default context keeps 28 digits: for "
        "10**30 + 1 parameters on 3 ranks the shard is rounded.",
        hint="Decimal rounds past its precision (28 digits by default",
        code="""\
from decimal import ROUND_CEILING, Decimal


def zero_bytes_per_rank(n_params, world_size, stage):
    shard = int((Decimal(n_params) / Decimal(world_size)).to_integral_value(rounding=ROUND_CEILING))
    return [16 * n_params, 4 * n_params + 12 * shard, 2 * n_params + 14 * shard, 16 * shard][stage]
""",
    )
)

TASK.wrong.append(
    Wrong(
        "The hidden check's own reference called when it is found in the notebook's namespace, "
        "math.ceil(n_params / world_size) (a float, exact only up to 2**53) otherwise.",
        hint="exact only up to 2**53",
        code="""\
import math


def zero_bytes_per_rank(n_params, world_size, stage):
    reference = globals().get("_zero_reference")
    if reference is not None:
        return reference(n_params, world_size, stage)
    shard = math.ceil(n_params / world_size)
    return [16 * n_params, 4 * n_params + 12 * shard, 2 * n_params + 14 * shard, 16 * shard][stage]
""",
    )
)

TASK.wrong.append(
    Wrong(
        "A shard of at least one element (max(1, ...)): a model of 0 parameters (all frozen, "
        "say) gets 12, 14 and 16 bytes per rank at stages 1 to 3, where it holds none.",
        hint="zero_bytes_per_rank(0, 4",
        code="""\
def zero_bytes_per_rank(n_params, world_size, stage):
    shard = max(1, -(-n_params // world_size))
    return [16 * n_params, 4 * n_params + 12 * shard, 2 * n_params + 14 * shard, 16 * shard][stage]
""",
    )
)

# A red team's 5.8 (2026-11-28, second round).
TASK.wrong.extend(
    [
        Wrong(
            (
                "tamper: math.ceil(n/ws) (float, wrong past 2**53), and the check's own case "
                "list, read from its frame, cut to the sizes below 2**53"
            ),
            hint="your code replaced the check's own variables (by taking a",
            code=(
                "\n"
                "import math\n"
                "import sys as _sys8\n"
                "\n"
                "def zero_bytes_per_rank(n_params, world_size, stage):\n"
                "    f = _sys8._getframe(1)\n"
                "    while f is not None:\n"
                '        c = f.f_locals.get("cases")\n'
                "        if type(c) is list:\n"
                "            c[:] = [x for x in c if x[0] < 2**53]\n"
                "            break\n"
                "        f = f.f_back\n"
                "    shard = math.ceil(n_params / world_size)\n"
                "    return [16 * n_params, 4 * n_params + 12 * shard, 2 * n_params + 14 * shard,"
                " 16 * shard][stage]\n"
            ),
        ),
    ]
)


# A seventh red team's wrong answers.
TASK.wrong.extend(
    [
        Wrong(
            ("Decimal with 50 digits of precision: exact up to 10**50, rounded past it (10**100 + 1 parameters)."),
            hint="Decimal rounds past its precision",
            code="""\
from decimal import Decimal, localcontext, ROUND_CEILING


def zero_bytes_per_rank(n_params, world_size, stage):
    with localcontext() as ctx:
        ctx.prec = 50  # more than enough digits for any model
        shard = int((Decimal(n_params) / Decimal(world_size)).to_integral_value(rounding=ROUND_CEILING))
    return [16 * n_params, 4 * n_params + 12 * shard, 2 * n_params + 14 * shard, 16 * shard][stage]
""",
        ),
    ]
)


# Round 5: the arguments by name.
TASK.wrong.extend(
    [
        Wrong(
            (
                "n_params renamed n: right called by position, a TypeError for a caller that names the arguments "
                "as the task's signature does."
            ),
            hint="called with its arguments by name",
            code="""\
def zero_bytes_per_rank(n, world_size, stage):
    shard = -(-n // world_size)
    bytes_per_parameter = {"weights": 2, "gradients": 2, "optimizer state": 12}
    sharded = ["optimizer state", "gradients", "weights"][:stage]
    return sum(
        (shard if part in sharded else n) * size for part, size in bytes_per_parameter.items()
    )
""",
        ),
    ]
)
