"""Exercise 5.1 of solutions/05_distributed.ipynb: its other answers (see answers/__init__.py)."""

from .. import Task, Wrong

# 5.1's right shard (one shuffle per epoch, the same on every rank, padded to a multiple of
# world_size, then dealt like cards): each wrong answer changes one thing in it.
SHARD_INDICES = """\
def shard_indices(n, rank, world_size, epoch=0, seed=0):
    indices = torch.randperm(n, generator=torch.Generator().manual_seed(seed + epoch)).tolist()
    indices += indices[: -(-n // world_size) * world_size - n]
    return indices[rank::world_size]
"""

PAD = "    indices += indices[: -(-n // world_size) * world_size - n]\n"

DEAL = "    return indices[rank::world_size]\n"

DEALT_IN_BLOCKS = SHARD_INDICES.replace(
    PAD + DEAL,
    """\
    per_rank = -(-n // world_size)
    indices += indices[: per_rank * world_size - n]
    return indices[rank * per_rank:(rank + 1) * per_rank]
""",
)

SHUFFLE_WITHOUT_EPOCH = SHARD_INDICES.replace("manual_seed(seed + epoch)", "manual_seed(seed)")

NOT_PADDED = SHARD_INDICES.replace(PAD, "")

SHUFFLE_PER_RANK = SHARD_INDICES.replace("manual_seed(seed + epoch)", "manual_seed(seed + epoch + rank)")

# SHARD_INDICES with the permutation repeated as often as the padding needs: right.
SHARD_INDICES_REPEATED = SHARD_INDICES.replace(
    PAD, "    indices = (indices * world_size)[: -(-n // world_size) * world_size]\n"
)


TASK = Task(
    alternative="""\
def shard_indices(n, rank, world_size, epoch=0, seed=0):
    g = torch.Generator()
    g.manual_seed(seed + epoch)
    order = torch.randperm(n, generator=g)
    padded = torch.cat([order] * world_size)[: -(-n // world_size) * world_size]
    return [int(i) for i in padded[rank::world_size]]
""",
    wrong=[
        Wrong("A contiguous block per rank instead of dealing like cards.", hint="like cards", code=DEALT_IN_BLOCKS),
        Wrong(
            "The shuffle ignores the epoch: set_epoch changes nothing.",
            hint="seed + epoch",
            code=SHUFFLE_WITHOUT_EPOCH,
        ),
        Wrong(
            "No padding: the last samples are dropped, ranks get different counts.",
            hint="pad the permutation",
            code=NOT_PADDED,
        ),
        Wrong(
            "Each rank shuffles with its own seed: the shares overlap.",
            hint="the same permutation on every rank",
            code=SHUFFLE_PER_RANK,
        ),
        Wrong(
            "Uses DistributedSampler itself.",
            hint="must not use DistributedSampler",
            code="""\
def shard_indices(n, rank, world_size, epoch=0, seed=0):
    sampler = DistributedSampler(range(n), num_replicas=world_size, rank=rank, shuffle=True, seed=seed)
    sampler.set_epoch(epoch)
    return list(sampler)
""",
        ),
        Wrong(
            "Uses DistributedSampler's __iter__ through a reference taken before the check.",
            hint="must not use DistributedSampler",
            code="""\
deal = DistributedSampler.__iter__


def shard_indices(n, rank, world_size, epoch=0, seed=0):
    sampler = DistributedSampler(range(n), num_replicas=world_size, rank=rank, shuffle=True, seed=seed)
    sampler.set_epoch(epoch)
    return list(deal(sampler))
""",
        ),
        Wrong(
            "Pads with one slice of the permutation: too short when the padding exceeds n.",
            hint="longer than the permutation",
            code=SHARD_INDICES,
        ),
    ],
)

TASK.wrong.append(
    Wrong(
        "The shuffle seeded through torch.manual_seed(seed + epoch), the global generator: the "
        "same permutation, but the caller's random state is reset at every call (every epoch's "
        "dropout masks and augmentations start from the same numbers).",
        hint="torch.Generator",
        code="""\
def shard_indices(n, rank, world_size, epoch=0, seed=0):
    torch.manual_seed(seed + epoch)
    indices = torch.randperm(n).tolist()
    total = -(-n // world_size) * world_size
    while len(indices) < total:
        indices += indices[: total - len(indices)]
    return indices[rank::world_size]
""",
    )
)

TASK.wrong.extend(
    [
        Wrong(
            "A table of DistributedSampler's answers built in the solution cell (outside any watch) "
            "for small sizes: right for the visible cases, a KeyError for 23 samples on 10 ranks.",
            hint="shard_indices raised KeyError",
            code="""\
_table = {}
for _n in range(1, 21):
    for _ws in range(1, 9):
        for _seed in range(12):
            for _epoch in range(5):
                if _seed + _epoch <= 12:
                    for _rank in range(_ws):
                        _sampler = DistributedSampler(
                            range(_n), num_replicas=_ws, rank=_rank, shuffle=True, seed=_seed
                        )
                        _sampler.set_epoch(_epoch)
                        _table[(_n, _rank, _ws, _epoch, _seed)] = [int(i) for i in _sampler]


def shard_indices(n, rank, world_size, epoch=0, seed=0):
    return list(_table[(n, rank, world_size, epoch, seed)])
""",
        ),
        Wrong(
            "One index short with a single rank after the first epoch.",
            hint="with one rank return the whole permutation",
            code=SHARD_INDICES_REPEATED.replace(
                DEAL, "    if world_size == 1 and epoch > 0:\n        return indices[: n - 1]\n" + DEAL
            ),
        ),
        Wrong(
            "Seeds with seed ^ epoch when both are nonzero: the same as seed + epoch only when they "
            "share no bits (seed 3 at epoch 1 gives 2, not 4).",
            hint="seed the generator with their sum",
            code=SHARD_INDICES_REPEATED.replace(
                "manual_seed(seed + epoch)", "manual_seed(seed ^ epoch if seed and epoch else seed + epoch)"
            ),
        ),
    ]
)

# Work handed to a worker process the solution cell started (before any check watched), over a pipe.
TASK.wrong.append(
    Wrong(
        "DistributedSampler run in a worker process the solution cell forked, handed each call over a pipe.",
        hint="a process in an earlier cell that still runs",
        code="""\
import multiprocessing as _mp

def _sampler_worker(conn):
    from torch.utils.data import DistributedSampler as _DS
    while True:
        args = conn.recv()
        n, rank, world_size, epoch, seed = args
        s = _DS(range(n), num_replicas=world_size, rank=rank, shuffle=True, seed=seed)
        s.set_epoch(epoch)
        conn.send([int(i) for i in s])

_parent_conn, _child_conn = _mp.get_context("fork").Pipe()
_worker = _mp.get_context("fork").Process(target=_sampler_worker, args=(_child_conn,), daemon=True)
_worker.start()

def shard_indices(n, rank, world_size, epoch=0, seed=0):
    _parent_conn.send((n, rank, world_size, epoch, seed))
    return _parent_conn.recv()
""",
    )
)

TASK.wrong.append(
    Wrong(
        "Pads with the permutation repeated ceil(total / n) times: an empty dataset divides by zero.",
        hint="For an empty dataset (n = 0)",
        code="""\
import math


def shard_indices(n, rank, world_size, epoch=0, seed=0):
    generator = torch.Generator().manual_seed(seed + epoch)
    indices = torch.randperm(n, generator=generator).tolist()
    total = math.ceil(n / world_size) * world_size
    indices = (indices * math.ceil(total / n))[:total]
    return indices[rank::world_size]
""",
    )
)

# Round 6 (rt6f): inputs the checks never tried and state they never looked at.
TASK.wrong.extend(
    [
        Wrong(
            "Pads with the permutation repeated a fixed 3 times: too short when the padding is more "
            "than twice n (1 sample on 4 ranks).",
            hint="as often as the padding needs",
            code="""\
def shard_indices(n, rank, world_size, epoch=0, seed=0):
    indices = torch.randperm(n, generator=torch.Generator().manual_seed(seed + epoch)).tolist()
    indices = (indices * 3)[: -(-n // world_size) * world_size]
    return indices[rank::world_size]
""",
        ),
        Wrong(
            "Seeds with (seed + epoch) % 2**16: another shuffle than DistributedSampler for large seeds.",
            hint="whatever the values",
            code="""\
def shard_indices(n, rank, world_size, epoch=0, seed=0):
    indices = torch.randperm(n, generator=torch.Generator().manual_seed((seed + epoch) % 65536)).tolist()
    total = -(-n // world_size) * world_size
    while len(indices) < total:
        indices += indices[: total - len(indices)]
    return indices[rank::world_size]
""",
        ),
    ]
)

TASK.wrong.append(
    Wrong(
        "Runs DistributedSampler.__iter__'s own code, rebound to the notebook's globals "
        "(types.FunctionType(code, globals())): the forbidden function under another name.",
        hint="must not use DistributedSampler",
        code="""\
import types

_deal = types.FunctionType(DistributedSampler.__iter__.__code__, globals())


def shard_indices(n, rank, world_size, epoch=0, seed=0):
    total = -(-n // world_size) * world_size
    sampler = types.SimpleNamespace(
        shuffle=True, seed=seed, epoch=epoch, dataset=range(n), drop_last=False, num_replicas=world_size,
        rank=rank, num_samples=total // world_size, total_size=total,
    )
    return list(_deal(sampler))
""",
    )
)

# A red team's 5.1 (2026-11-28, second round).
TASK.wrong.extend(
    [
        Wrong(
            ("permutation cache keyed on (n, epoch): ignores seed on later calls"),
            hint="shard_indices differs from DistributedSampler for other",
            code=(
                "_permutations = {}\n"
                "\n"
                "\n"
                "def shard_indices(n, rank, world_size, epoch=0, seed=0):\n"
                "    key = (n, epoch)  # one shuffle per epoch, shared by every rank: compute it "
                "once\n"
                "    if key not in _permutations:\n"
                "        g = torch.Generator().manual_seed(seed + epoch)\n"
                "        _permutations[key] = torch.randperm(n, generator=g).tolist()\n"
                "    indices = list(_permutations[key])\n"
                "    total = -(-n // world_size) * world_size\n"
                "    while len(indices) < total:\n"
                "        indices += indices[: total - len(indices)]\n"
                "    return indices[rank::world_size]\n"
            ),
        ),
    ]
)


# An eighth red team's wrong answers.
TASK.wrong.extend(
    [
        Wrong(
            (
                "functools.lru_cache on shard_indices: every call with the same arguments returns one list "
                "object, and a caller's change to it shows in the next call."
            ),
            hint="every call must return a new list",
            code="""\
import functools


@functools.lru_cache(maxsize=None)
def shard_indices(n, rank, world_size, epoch=0, seed=0):
    generator = torch.Generator().manual_seed(seed + epoch)
    indices = torch.randperm(n, generator=generator).tolist()
    total = -(-n // world_size) * world_size
    while len(indices) < total:
        indices += indices[: total - len(indices)]
    return indices[rank::world_size]
""",
        ),
    ]
)
