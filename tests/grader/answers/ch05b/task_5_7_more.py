"""Further wrong answers to exercise 5.7 of solutions/05b_distributed_at_scale.ipynb, after those of task_5_7.py."""

from .. import Wrong

WRONG: list[Wrong] = []


# Round 5: a last bucket of parameters of 0 bytes, the lists a call returns, the recursion limit,
# torch's own assignment reached through map(), globals, names or a worker thread, and the caps by
# name.
WRONG.extend(
    [
        Wrong(
            (
                "The last bucket kept only if it holds bytes (if size:, not if bucket:): parameters of 0 bytes at "
                "the start of the model, walked last, are left out of every bucket (DDP makes [[2], [1], [0]] for "
                "[0, 8, 8] and caps of 8 bytes)."
            ),
            hint="predict_buckets is wrong for ([0, 8, 8], 8, 8)",
            code="""\
def predict_buckets(param_bytes, bucket_cap_bytes=25 * 2**20, first_bucket_cap_bytes=2**20):
    buckets, bucket, size, cap = [], [], 0, first_bucket_cap_bytes
    for index in reversed(range(len(param_bytes))):
        bucket.append(index)
        size += param_bytes[index]
        if size >= cap:
            buckets.append(bucket)
            bucket, size, cap = [], 0, bucket_cap_bytes
    if size:
        buckets.append(bucket)
    return buckets
""",
        ),
        Wrong(
            (
                "The buckets kept in a cache keyed by the sizes and caps, the cache's own lists handed out: a "
                "caller that edits the buckets it got (pops, clears) changes what the next call returns."
            ),
            hint="changed the lists an earlier call returned",
            code="""\
_known = {}


def predict_buckets(param_bytes, bucket_cap_bytes=25 * 2**20, first_bucket_cap_bytes=2**20):
    key = (tuple(param_bytes), bucket_cap_bytes, first_bucket_cap_bytes)
    if key not in _known:
        buckets, bucket, size, cap = [], [], 0, first_bucket_cap_bytes
        for index in reversed(range(len(param_bytes))):
            bucket.append(index)
            size += param_bytes[index]
            if size >= cap:
                buckets.append(bucket)
                bucket, size, cap = [], 0, bucket_cap_bytes
        if bucket:
            buckets.append(bucket)
        _known[key] = buckets
    return _known[key]
""",
        ),
        Wrong(
            (
                "A recursive walk made to fit by raising Python's recursion limit for the whole kernel, and "
                "leaving it raised."
            ),
            hint="changed Python's recursion limit",
            code="""\
import sys


def predict_buckets(param_bytes, bucket_cap_bytes=25 * 2**20, first_bucket_cap_bytes=2**20):
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 2 * len(param_bytes) + 1000))

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
            (
                "torch's own dist._compute_bucket_assignment_by_size called through map() (C calling C, which "
                "Python's profile function does not see), on tensors made with torch.frombuffer (no operation "
                "reaches the dispatcher)."
            ),
            hint="ran torch or NumPy code",
            code="""\
_nothing = torch.empty(0, dtype=torch.uint8)


def _as_tensor(n):
    return torch.frombuffer(bytearray(n), dtype=torch.uint8) if n else _nothing


def predict_buckets(param_bytes, bucket_cap_bytes=25 * 2**20, first_bucket_cap_bytes=2**20):
    order = list(reversed(range(len(param_bytes))))
    tensors = list(map(_as_tensor, [param_bytes[i] for i in order]))
    caps = [first_bucket_cap_bytes, bucket_cap_bytes]
    found, _ = next(map(dist._compute_bucket_assignment_by_size, [tensors], [caps]))
    return [[order[i] for i in b] for b in found]
""",
        ),
        Wrong(
            (
                "torch's own assignment and torch.frombuffer taken into globals in the solution cell (a partial), "
                "both called through map(): no torch function is called from Python during the call."
            ),
            hint="predict_buckets reaches torch or NumPy",
            code="""\
import functools

_nothing = torch.empty(0, dtype=torch.uint8)
_as_bytes = functools.partial(torch.frombuffer, dtype=torch.uint8)
_assign = dist._compute_bucket_assignment_by_size


def predict_buckets(param_bytes, bucket_cap_bytes=25 * 2**20, first_bucket_cap_bytes=2**20):
    order = list(reversed(range(len(param_bytes))))
    tensors = [next(map(_as_bytes, [bytearray(param_bytes[i])])) if param_bytes[i] else _nothing for i in order]
    found, _ = next(map(_assign, [tensors], [[first_bucket_cap_bytes, bucket_cap_bytes]]))
    return [[order[i] for i in b] for b in found]
""",
        ),
        Wrong(
            (
                "torch reached by name at run time (sys.modules, getattr with the function's name), frombuffer "
                "and torch's own assignment called through map()."
            ),
            hint="predict_buckets reaches torch or NumPy",
            code="""\
import functools
import sys


def predict_buckets(param_bytes, bucket_cap_bytes=25 * 2**20, first_bucket_cap_bytes=2**20):
    d = sys.modules["torch.distributed"]
    t = sys.modules["torch"]
    order = list(reversed(range(len(param_bytes))))
    part = functools.partial(t.frombuffer, dtype=t.uint8)
    make = lambda n: next(map(part, [bytearray(n)])) if n else t.empty(0, dtype=t.uint8)
    tensors = [make(param_bytes[i]) for i in order]
    caps = [first_bucket_cap_bytes, bucket_cap_bytes]
    found, _ = next(map(getattr(d, "_compute_bucket_assignment_by_size"), [tensors], [caps]))
    return [[order[i] for i in b] for b in found]
""",
        ),
        Wrong(
            (
                "Parameters renamed (cap, first_cap): right called by position, a TypeError for a caller that "
                "names the caps as the task's signature does."
            ),
            hint="predict_buckets called with its arguments by name",
            code="""\
def predict_buckets(param_bytes, cap=25 * 2**20, first_cap=2**20):
    cap_rest = cap
    buckets, bucket, size, cap = [], [], 0, first_cap
    for index in reversed(range(len(param_bytes))):
        bucket.append(index)
        size += param_bytes[index]
        if size >= cap:
            buckets.append(bucket)
            bucket, size, cap = [], 0, cap_rest
    if bucket:
        buckets.append(bucket)
    return buckets
""",
        ),
        Wrong(
            (
                "torch's own assignment run by a worker thread the solution cell started (through map(), which no "
                "profile function sees), the call handing it the sizes over a queue."
            ),
            hint="in a copy of this process where no other thread runs",
            code="""\
import functools
import queue
import threading

_requests, _replies = queue.Queue(), queue.Queue()


def _bucket_worker():
    import torch as _t
    import torch.distributed as _d

    part = functools.partial(_t.frombuffer, dtype=_t.uint8)
    assign = _d._compute_bucket_assignment_by_size
    empty = _t.empty(0, dtype=_t.uint8)
    while True:
        sizes, caps = _requests.get()
        tensors = [next(map(part, [bytearray(n)])) if n else empty for n in sizes]
        found, _ = next(map(assign, [tensors], [caps]))
        _replies.put(found)


threading.Thread(target=_bucket_worker, daemon=True).start()


def predict_buckets(param_bytes, bucket_cap_bytes=25 * 2**20, first_bucket_cap_bytes=2**20):
    order = list(reversed(range(len(param_bytes))))
    _requests.put(([param_bytes[i] for i in order], [first_bucket_cap_bytes, bucket_cap_bytes]))
    return [[order[i] for i in b] for b in _replies.get()]
""",
        ),
    ]
)


# Round 5: torch reached through the builtins of a function made by exec.
WRONG.extend(
    [
        Wrong(
            (
                "torch's own assignment and torch.frombuffer put in the __builtins__ of a function made by exec, "
                "called through map(): the names its code uses are in no global."
            ),
            hint="predict_buckets reaches torch or NumPy",
            code="""\
import functools

_source = '''
def predict_buckets(param_bytes, bucket_cap_bytes=25 * 2**20, first_bucket_cap_bytes=2**20):
    order = list(reversed(range(len(param_bytes))))
    sizes = [param_bytes[i] for i in order]
    tensors = [next(map(AS_BYTES, [bytearray(n)])) if n else NOTHING for n in sizes]
    found, _ = next(map(ASSIGN, [tensors], [[first_bucket_cap_bytes, bucket_cap_bytes]]))
    return [[order[i] for i in b] for b in found]
'''
_space = {"__builtins__": {
    "list": list, "reversed": reversed, "range": range, "len": len, "next": next, "map": map,
    "bytearray": bytearray,
    "AS_BYTES": functools.partial(torch.frombuffer, dtype=torch.uint8),
    "NOTHING": torch.empty(0, dtype=torch.uint8),
    "ASSIGN": dist._compute_bucket_assignment_by_size,
}}
exec(_source, _space)
predict_buckets = _space["predict_buckets"]
""",
        ),
    ]
)
