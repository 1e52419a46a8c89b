"""Exercise 5.7 of solutions/05b_distributed_at_scale.ipynb: its other answers (see answers/__init__.py).

Its further wrong answers are in task_5_7_more.py.
"""

from .. import Task, Wrong
from . import task_5_7_more

# 5.7's right buckets (the solution's walk from the last parameter, a bucket closed once it
# reaches its cap): the first three wrong answers change one thing in it.
PREDICT_BUCKETS = """\
def predict_buckets(param_bytes, bucket_cap_bytes=25 * 2**20, first_bucket_cap_bytes=2**20):
    buckets, bucket, size, cap = [], [], 0, first_bucket_cap_bytes
    for index in reversed(range(len(param_bytes))):
        bucket.append(index)
        size += param_bytes[index]
        if size >= cap:
            buckets.append(bucket)
            bucket, size, cap = [], 0, bucket_cap_bytes
    if bucket:
        buckets.append(bucket)
    return buckets
"""

BUCKETS_IN_PARAMETER_ORDER = PREDICT_BUCKETS.replace("reversed(range(len(param_bytes)))", "range(len(param_bytes))")

ONE_CAP_FOR_EVERY_BUCKET = PREDICT_BUCKETS.replace(
    "cap = [], [], 0, first_bucket_cap_bytes", "cap = [], [], 0, bucket_cap_bytes"
)

# The parameter that would cross the cap starts a new bucket instead of closing this one.
CLOSED_BEFORE_THE_CAP = PREDICT_BUCKETS.replace(
    """\
        bucket.append(index)
        size += param_bytes[index]
        if size >= cap:
            buckets.append(bucket)
            bucket, size, cap = [], 0, bucket_cap_bytes
""",
    """\
        if bucket and size + param_bytes[index] > cap:
            buckets.append(bucket)
            bucket, size, cap = [], 0, bucket_cap_bytes
        bucket.append(index)
        size += param_bytes[index]
""",
)

TORCH_BUCKET_ASSIGNMENT = """\
def predict_buckets(param_bytes, bucket_cap_bytes=25 * 2**20, first_bucket_cap_bytes=2**20):
    # torch's own assignment, on empty tensors of those sizes, last parameter first
    tensors = [torch.empty(size // 4) for size in reversed(param_bytes)]
    buckets, _ = dist._compute_bucket_assignment_by_size(
        tensors, [first_bucket_cap_bytes, bucket_cap_bytes]
    )
    return [[len(param_bytes) - 1 - i for i in bucket] for bucket in buckets]
"""

TORCH_BUCKETS_IN_A_CHILD = """\
import os
import pickle


def predict_buckets(param_bytes, bucket_cap_bytes=25 * 2**20, first_bucket_cap_bytes=2**20):
    # torch's own assignment, computed in a forked child and sent back through a pipe
    read, write = os.pipe()
    if os.fork() == 0:
        tensors = [torch.empty(size // 4) for size in reversed(param_bytes)]
        buckets, _ = dist._compute_bucket_assignment_by_size(
            tensors, [first_bucket_cap_bytes, bucket_cap_bytes]
        )
        os.write(write, pickle.dumps([[len(param_bytes) - 1 - i for i in b] for b in buckets]))
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        found = pickle.loads(pipe.read())
    os.wait()
    return found
"""


TASK = Task(
    alternative="""\
def predict_buckets(param_bytes, bucket_cap_bytes=25 * 2**20, first_bucket_cap_bytes=2**20):
    buckets = [[]]
    filled = 0
    for i in list(range(len(param_bytes)))[::-1]:
        buckets[-1].append(i)
        filled += param_bytes[i]
        cap = first_bucket_cap_bytes if len(buckets) == 1 else bucket_cap_bytes
        if filled >= cap:
            buckets.append([])
            filled = 0
    return [sorted(b) for b in buckets if b]
""",
    wrong=[
        Wrong(
            "Fills the buckets in parameter order, from the first parameter.",
            hint="the reverse of the parameter order",
            code=BUCKETS_IN_PARAMETER_ORDER,
        ),
        Wrong(
            "One cap for every bucket: the smaller first bucket forgotten.",
            hint="The first bucket is wrong",
            code=ONE_CAP_FOR_EVERY_BUCKET,
        ),
        Wrong(
            "Starts a new bucket for the parameter that would cross the cap.",
            hint="the parameter that crosses the cap stays in that bucket",
            code=CLOSED_BEFORE_THE_CAP,
        ),
        Wrong(
            "Calls torch's own dist._compute_bucket_assignment_by_size.",
            hint="torch's own bucket assignment",
            code=TORCH_BUCKET_ASSIGNMENT,
        ),
        Wrong(
            "torch's own bucket assignment, computed in a forked child where the check's watch does not look.",
            hint="started a process",
            code=TORCH_BUCKETS_IN_A_CHILD,
        ),
    ],
)

TASK.wrong.append(
    Wrong(
        "DDP's buckets read from the check's own frames (the buckets it recorded, passed down "
        "before the prediction is asked for); anything else gets one bucket of all the "
        "parameters, which is wrong as soon as they pass a cap.",
        hint="by taking a frame",
        code="""\
import sys


def predict_buckets(param_bytes, bucket_cap_bytes=25 * 2**20, first_bucket_cap_bytes=2**20):
    frame = sys._getframe(1)
    while frame is not None:
        seen = frame.f_locals
        if "truth" in seen and "cases" in seen:
            for k, (sizes, cap, first) in enumerate(seen["cases"]):
                caps = (25 * 2**20, 2**20) if cap is None else (cap, cap if first is None else first)
                if list(sizes) == list(param_bytes) and caps == (bucket_cap_bytes, first_bucket_cap_bytes):
                    return [list(b) for b in seen["truth"][k]]
        frame = frame.f_back
    return [list(reversed(range(len(param_bytes))))]
""",
    )
)

# Work handed to a worker process the solution cell started (before any check watched), over a pipe.
TASK.wrong.append(
    Wrong(
        "DDP's own bucket assignment run in a worker process the solution cell forked, over a pipe.",
        hint="a process in an earlier cell that still runs",
        code="""\
import multiprocessing as _mp

def _bucket_worker(conn):
    import torch as _t
    import torch.distributed as _d
    while True:
        sizes, cap, first = conn.recv()
        tensors = [_t.empty(s // 4) for s in reversed(sizes)]
        buckets, _ = _d._compute_bucket_assignment_by_size(tensors, [first, cap])
        n = len(sizes)
        conn.send([[n - 1 - i for i in b] for b in buckets])

_bk_parent, _bk_child = _mp.get_context("fork").Pipe()
_bk_proc = _mp.get_context("fork").Process(target=_bucket_worker, args=(_bk_child,), daemon=True)
_bk_proc.start()

def predict_buckets(param_bytes, bucket_cap_bytes=25 * 2**20, first_bucket_cap_bytes=2**20):
    _bk_parent.send((list(param_bytes), bucket_cap_bytes, first_bucket_cap_bytes))
    return [[int(i) for i in b] for b in _bk_parent.recv()]
""",
    )
)

TASK.wrong.extend(
    [
        Wrong(
            "DDP's default caps taken in MB, not MiB (25 * 10**6 and 10**6 bytes): the buckets "
            "close early once a model's parameters pass 1,000,000 bytes.",
            hint="must use DDP's defaults",
            code=PREDICT_BUCKETS.replace(
                "bucket_cap_bytes=25 * 2**20, first_bucket_cap_bytes=2**20",
                "bucket_cap_bytes=25 * 10**6, first_bucket_cap_bytes=10**6",
            ),
        ),
        Wrong(
            "Counts elements of 4 bytes (sizes and caps // 4), not bytes: right for float32, "
            "wrong for a float16 model whose sizes are not multiples of 4.",
            hint="Count in bytes",
            code=PREDICT_BUCKETS.replace(
                "cap = [], [], 0, first_bucket_cap_bytes", "cap = [], [], 0, first_bucket_cap_bytes // 4"
            )
            .replace("size += param_bytes[index]", "size += param_bytes[index] // 4")
            .replace("bucket, size, cap = [], 0, bucket_cap_bytes", "bucket, size, cap = [], 0, bucket_cap_bytes // 4"),
        ),
    ]
)

TASK.wrong.extend(
    [
        Wrong(
            "A walk that calls itself once per parameter: past Python's recursion limit for a "
            "model of thousands of parameters.",
            hint="RecursionError",
            code="""\
def predict_buckets(param_bytes, bucket_cap_bytes=25 * 2**20, first_bucket_cap_bytes=2**20):
    def walk(i, cap, bucket, size):
        if i < 0:
            return [bucket] if bucket else []
        bucket = bucket + [i]
        size += param_bytes[i]
        if size >= cap:
            return [bucket] + walk(i - 1, bucket_cap_bytes, [], 0)
        return walk(i - 1, cap, bucket, size)

    return walk(len(param_bytes) - 1, first_bucket_cap_bytes, [], 0)
""",
        ),
        Wrong(
            "The buckets kept in a cache keyed by the sizes alone: the same sizes with other caps "
            "get an earlier call's buckets.",
            hint="the same buckets for the same sizes with other caps",
            code="""\
_cache = {}


def predict_buckets(param_bytes, bucket_cap_bytes=25 * 2**20, first_bucket_cap_bytes=2**20):
    key = tuple(param_bytes)
    if key not in _cache:
        buckets, bucket, size, cap = [], [], 0, first_bucket_cap_bytes
        for index in reversed(range(len(param_bytes))):
            bucket.append(index)
            size += param_bytes[index]
            if size >= cap:
                buckets.append(bucket)
                bucket, size, cap = [], 0, bucket_cap_bytes
        if bucket:
            buckets.append(bucket)
        _cache[key] = buckets
    return [list(b) for b in _cache[key]]
""",
        ),
    ]
)

# A red team's 5.7 (2026-11-28, second round).
TASK.wrong.extend(
    [
        Wrong(
            (
                "tamper: torch's own dist._compute_bucket_assignment_by_size (forbidden, on "
                "tensors), then the check's Watch scrubbed through grader.kernel.active.WATCHING"
            ),
            hint="predict_buckets raised AssertionError: your code replaced",
            code=(
                "\n"
                "from grader.kernel import active as _act\n"
                "\n"
                "def predict_buckets(param_bytes, bucket_cap_bytes=25 * 2**20, first_bucket_cap_b"
                "ytes=2**20):\n"
                "    n = len(param_bytes)\n"
                "    order = list(reversed(range(n)))\n"
                "    tensors = [torch.empty(param_bytes[i], dtype=torch.uint8) for i in order]\n"
                "    found, _ = dist._compute_bucket_assignment_by_size(\n"
                "        tensors, [first_bucket_cap_bytes, bucket_cap_bytes], [False] * n, order)"
                "\n"
                "    result = [[int(i) for i in b] for b in found]\n"
                "    for w in list(_act.WATCHING):\n"
                "        w.ops.clear(); w.code.clear(); w.calls.clear(); w.collectives.clear(); w"
                ".outputs.clear(); w.written.clear(); w.grad_ops = 0\n"
                "    return result\n"
            ),
        ),
        Wrong(
            (
                "first_bucket_cap_bytes defaults to None = the bucket cap: predict_buckets(sizes,"
                " cap) (2 args) uses cap for the first bucket, not the stated default 2**20"
            ),
            hint="predict_buckets is wrong for ([40, 40, 40, 40, 40], 100):",
            code=(
                "\n"
                "def predict_buckets(param_bytes, bucket_cap_bytes=25 * 2**20, first_bucket_cap_b"
                "ytes=None):\n"
                "    if first_bucket_cap_bytes is None:\n"
                "        first_bucket_cap_bytes = 2**20 if bucket_cap_bytes == 25 * 2**20 else bu"
                "cket_cap_bytes\n"
                "    buckets, bucket, size, cap = [], [], 0, first_bucket_cap_bytes\n"
                "    for index in reversed(range(len(param_bytes))):\n"
                "        bucket.append(index)\n"
                "        size += param_bytes[index]\n"
                "        if size >= cap:\n"
                "            buckets.append(bucket)\n"
                "            bucket, size, cap = [], 0, bucket_cap_bytes\n"
                "    if bucket:\n"
                "        buckets.append(bucket)\n"
                "    return buckets\n"
            ),
        ),
        Wrong(
            ("caps through `x or default`: a cap of 0 bytes is taken as DDP's default"),
            hint="predict_buckets is wrong for ([8, 8, 8], 0, 0): called with",
            code=(
                "\n"
                "def predict_buckets(param_bytes, bucket_cap_bytes=25 * 2**20, first_bucket_cap_b"
                "ytes=2**20):\n"
                "    bucket_cap_bytes = bucket_cap_bytes or 25 * 2**20\n"
                "    first_bucket_cap_bytes = first_bucket_cap_bytes or 2**20\n"
                "    buckets, bucket, size, cap = [], [], 0, first_bucket_cap_bytes\n"
                "    for index in reversed(range(len(param_bytes))):\n"
                "        bucket.append(index)\n"
                "        size += param_bytes[index]\n"
                "        if size >= cap:\n"
                "            buckets.append(bucket)\n"
                "            bucket, size, cap = [], 0, bucket_cap_bytes\n"
                "    if bucket:\n"
                "        buckets.append(bucket)\n"
                "    return buckets\n"
            ),
        ),
        Wrong(
            ("parameters of 0 bytes left out of every bucket (nothing to all-reduce)"),
            hint="predict_buckets is wrong for ([8, 0, 8], 8, 8): called with",
            code=(
                "\n"
                "def predict_buckets(param_bytes, bucket_cap_bytes=25 * 2**20, first_bucket_cap_b"
                "ytes=2**20):\n"
                "    buckets, bucket, size, cap = [], [], 0, first_bucket_cap_bytes\n"
                "    for index in reversed(range(len(param_bytes))):\n"
                "        if param_bytes[index] == 0:\n"
                "            continue\n"
                "        bucket.append(index)\n"
                "        size += param_bytes[index]\n"
                "        if size >= cap:\n"
                "            buckets.append(bucket)\n"
                "            bucket, size, cap = [], 0, bucket_cap_bytes\n"
                "    if bucket:\n"
                "        buckets.append(bucket)\n"
                "    return buckets\n"
            ),
        ),
    ]
)

TASK.wrong.extend(task_5_7_more.WRONG)


# Red team (round 2): each was accepted before its check was added.
TASK.wrong.extend(
    [
        Wrong(
            (
                "The buckets cached by id(param_bytes) and the caps: the same list, its sizes changed in place, gets "
                "the buckets of its old sizes."
            ),
            hint="keyed by id(param_bytes)",
            code="""\
_cache = {}
def predict_buckets(param_bytes, bucket_cap_bytes=25 * 2**20, first_bucket_cap_bytes=2**20):
    key = (id(param_bytes), bucket_cap_bytes, first_bucket_cap_bytes)
    if key in _cache:
        return [list(b) for b in _cache[key]]
    buckets, bucket, size, cap = [], [], 0, first_bucket_cap_bytes
    for index in reversed(range(len(param_bytes))):
        bucket.append(index)
        size += param_bytes[index]
        if size >= cap:
            buckets.append(bucket)
            bucket, size, cap = [], 0, bucket_cap_bytes
    if bucket:
        buckets.append(bucket)
    _cache[key] = [list(b) for b in buckets]
    return buckets
""",
        ),
    ]
)
