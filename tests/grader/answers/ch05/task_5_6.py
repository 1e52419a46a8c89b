"""Exercise 5.6 of solutions/05_distributed.ipynb: its other answers (see answers/__init__.py)."""

from .. import Task, Wrong

TASK = Task(
    alternative="""\
def fsdp_local_shape(shape, rank, world_size):
    pieces = torch.empty(shape[0], 0).chunk(world_size)
    rows = pieces[rank].shape[0] if rank < len(pieces) and 0 not in shape else 0
    return tuple([rows, *shape[1:]])
""",
    wrong=[
        Wrong(
            "torch.tensor_split's sizes (4 rows on 3 ranks: 2, 1, 1), not torch.chunk's (2, 2, 0).",
            hint="torch.chunk",
            code="""\
def fsdp_local_shape(shape, rank, world_size):
    rows = shape[0] // world_size + (1 if rank < shape[0] % world_size else 0)
    return (rows, *shape[1:])
""",
        ),
        Wrong(
            "Runs FSDP on processes to measure the shard: nothing predicted.",
            hint="started a connection to another process",
            code="""\
from torch.distributed.fsdp import fully_shard


def fsdp_local_shape(shape, rank, world_size):
    def local(r, size):
        params = torch.nn.ParameterList([torch.nn.Parameter(torch.zeros(shape))])
        fully_shard(params)
        return tuple(params[0].to_local().shape)

    return run_ranks(local, world_size, show_output=False)[rank]
""",
        ),
        Wrong(
            "ceil(rows / world_size) rows per rank, the rest on the last, with no floor at "
            "0: 1 row on 3 ranks gives rank 2 a shard of -1 rows.",
            hint="ranks past the last row get 0 rows",
            code="""\
def fsdp_local_shape(shape, rank, world_size):
    per_rank = -(-shape[0] // world_size)
    return (min(per_rank, shape[0] - rank * per_rank), *shape[1:])
""",
        ),
        Wrong(
            "Splits the last dimension instead of dim 0.",
            hint="Only dim 0 is split",
            code="""\
def fsdp_local_shape(shape, rank, world_size):
    cols = shape[-1]
    per_rank = -(-cols // world_size)
    return (*shape[:-1], max(0, min(per_rank, cols - rank * per_rank)))
""",
        ),
    ],
)

TASK.wrong.append(
    Wrong(
        "The shard read from the check's own frames (the shapes it measured with FSDP before "
        "asking): any other call gets the full shape.",
        hint="by taking a frame",
        code="""\
import sys


def fsdp_local_shape(shape, rank, world_size):
    frame = sys._getframe(1)
    while frame is not None:
        if "expected" in frame.f_locals:
            return tuple(frame.f_locals["expected"])
        frame = frame.f_back
    return tuple(shape)
""",
    )
)

TASK.wrong.append(
    Wrong(
        "Counts the full shards with rows // per_rank: a parameter of 0 rows divides by zero.",
        hint="a parameter with 0 rows has 0 rows on every rank",
        code="""\
def fsdp_local_shape(shape, rank, world_size):
    rows = shape[0]
    per_rank = -(-rows // world_size)
    full = rows // per_rank
    if rank < full:
        mine = per_rank
    elif rank == full:
        mine = rows - full * per_rank
    else:
        mine = 0
    return (mine, *shape[1:])
""",
    )
)

TASK.wrong.append(
    Wrong(
        "Rows per rank by math.ceil(rows / world_size): a float division, one row short for a "
        "meta parameter of 2**53 + 1 rows.",
        hint="exact only up to 2**53",
        code="""\
import math


def fsdp_local_shape(shape, rank, world_size):
    rows = shape[0]
    per_rank = math.ceil(rows / world_size)
    mine = max(0, min(per_rank, rows - rank * per_rank))
    return (mine, *shape[1:])
""",
    )
)

TASK.wrong.extend(
    [
        Wrong(
            "Full pieces, then the remainder for every later rank: 5 rows on 4 ranks give 2, 2, 1, 1 "
            "(6 rows), where torch.chunk gives 2, 2, 1, 0.",
            hint="wrong on 3 or 4 ranks",
            code="""\
def fsdp_local_shape(shape, rank, world_size):
    rows = shape[0]
    if rows == 0:
        return (0, *shape[1:])
    per_rank = -(-rows // world_size)
    return (per_rank if rank < rows // per_rank else rows % per_rank, *shape[1:])
""",
        ),
        Wrong(
            "torch.tensor_split's sizes for huge parameters only (past 2**40 rows).",
            hint="count with integers",
            code="""\
def fsdp_local_shape(shape, rank, world_size):
    rows = shape[0]
    per_rank = -(-rows // world_size)
    mine = max(0, min(per_rank, rows - rank * per_rank))
    if rows > 2**40:
        mine = rows // world_size + (rank < rows % world_size)
    return (mine, *shape[1:])
""",
        ),
    ]
)

# A red team's 5.6 (2026-11-28, second round).
TASK.wrong.extend(
    [
        Wrong(
            ("ceil via float division: wrong for rows > 2**53 e.g. 2**53+3"),
            hint="fsdp_local_shape((9007199254740995,), 0, 2) gave",
            code=(
                "def fsdp_local_shape(shape, rank, world_size):\n"
                "    rows = shape[0]\n"
                "    per_rank = int(rows / world_size) + (rows % world_size != 0)\n"
                "    mine = max(0, min(per_rank, rows - rank * per_rank))\n"
                "    return (mine, *shape[1:])\n"
            ),
        ),
    ]
)


# A red team's finding: torch.chunk's rule where FSDP2 splits nothing.
TASK.wrong.extend(
    [
        Wrong(
            (
                "torch.chunk's pieces for a parameter with no elements, shape (4, 0): FSDP2 gives every rank 0 "
                "rows of it, not 2."
            ),
            hint="for a parameter with no elements",
            code="""\
def fsdp_local_shape(shape, rank, world_size):
    rows = shape[0]
    per_rank = -(-rows // world_size)  # torch.chunk's piece: the ceiling of rows / world_size
    mine = max(0, min(per_rank, rows - rank * per_rank))
    return (mine, *shape[1:])
""",
        ),
    ]
)
