"""Other answers to the exercises of solutions/05b_distributed_at_scale.ipynb (see
answers/__init__.py)."""

from . import Task, Wrong

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

# 5.9's right accumulation (no_sync around all but the last micro-batch, each loss / k).
ACCUMULATE = """\
def accumulate(ddp, micro_batches, loss_fn):
    k = len(micro_batches)
    *first, last = micro_batches
    with ddp.no_sync():
        for x, y in first:
            (loss_fn(ddp(x), y) / k).backward()
    x, y = last
    (loss_fn(ddp(x), y) / k).backward()
"""
WITHOUT_NO_SYNC = """\
def accumulate(ddp, micro_batches, loss_fn):
    for x, y in micro_batches:
        (loss_fn(ddp(x), y) / len(micro_batches)).backward()
"""
NO_SYNC_FOR_EVERY_MICRO_BATCH = """\
def accumulate(ddp, micro_batches, loss_fn):
    with ddp.no_sync():
        for x, y in micro_batches:
            (loss_fn(ddp(x), y) / len(micro_batches)).backward()
"""
# DDP reads no_sync in forward: a forward outside it all-reduces whatever its backward does.
NO_SYNC_AROUND_BACKWARD_ONLY = """\
def accumulate(ddp, micro_batches, loss_fn):
    k = len(micro_batches)
    *first, last = micro_batches
    for x, y in first:
        loss = loss_fn(ddp(x), y) / k
        with ddp.no_sync():
            loss.backward()
    x, y = last
    (loss_fn(ddp(x), y) / k).backward()
"""
LOSS_NOT_DIVIDED = ACCUMULATE.replace("(loss_fn(ddp(x), y) / k)", "loss_fn(ddp(x), y)")


# 5.11's right walk (the solution's): its wrong answers change one thing in it.
UNUSED_PARAMETERS = """\
def unused_parameters(model, output):
    reached, seen, todo = set(), set(), [output.grad_fn]
    while todo:
        node = todo.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        if hasattr(node, "variable"):
            reached.add(id(node.variable))
        todo.extend(next_node for next_node, _ in node.next_functions)
    return sorted(
        name for name, p in model.named_parameters() if p.requires_grad and id(p) not in reached
    )
"""
ONE_LEVEL_ONLY = UNUSED_PARAMETERS.replace(
    "        todo.extend(next_node for next_node, _ in node.next_functions)\n",
    "        if node is output.grad_fn:\n            todo.extend(next_node for next_node, _ in node.next_functions)\n",
)
FROZEN_LISTED_TOO = UNUSED_PARAMETERS.replace("if p.requires_grad and id(p) not in reached", "if id(p) not in reached")
COMPARED_BY_VALUE = (
    UNUSED_PARAMETERS.replace("reached, seen, todo = set(),", "reached, seen, todo = [],")
    .replace("reached.add(id(node.variable))", "reached.append(node.variable)")
    .replace("id(p) not in reached", "p not in reached")
)
RECURSIVE_WALK = """\
def unused_parameters(model, output):
    reached = set()

    def walk(node):
        if node is None:
            return
        if hasattr(node, "variable"):
            reached.add(id(node.variable))
        for next_node, _ in node.next_functions:
            walk(next_node)

    walk(output.grad_fn)
    return sorted(
        name for name, p in model.named_parameters() if p.requires_grad and id(p) not in reached
    )
"""
BY_BACKWARD = """\
def unused_parameters(model, output):
    output.sum().backward(retain_graph=True)
    return sorted(n for n, p in model.named_parameters() if p.requires_grad and p.grad is None)
"""
NOT_SORTED = UNUSED_PARAMETERS.replace("    return sorted(\n", "    return list(\n")

NO_SEEN_SET = """\
def unused_parameters(model, output):
    reached, todo = set(), [output.grad_fn]
    while todo:
        node = todo.pop()
        if node is None:
            continue
        if hasattr(node, "variable"):
            reached.add(id(node.variable))
        todo.extend(next_node for next_node, _ in node.next_functions)
    return sorted(
        name for name, p in model.named_parameters() if p.requires_grad and id(p) not in reached
    )
"""
RECURSION_LIMIT_RAISED = """\
import sys


def unused_parameters(model, output):
    sys.setrecursionlimit(100_000)  # deep models: room for the recursion
    reached, seen = set(), set()

    def walk(node):
        if node is None or node in seen:
            return
        seen.add(node)
        if hasattr(node, "variable"):
            reached.add(id(node.variable))
        for next_node, _ in node.next_functions:
            walk(next_node)

    walk(output.grad_fn)
    return sorted(
        name for name, p in model.named_parameters() if p.requires_grad and id(p) not in reached
    )
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

TASKS = {
    "5.7": Task(
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
    ),
    "5.9": Task(
        alternative="""\
import contextlib


def accumulate(ddp, micro_batches, loss_fn):
    k = len(micro_batches)
    for i, (x, y) in enumerate(micro_batches):
        last = i == k - 1
        with contextlib.nullcontext() if last else ddp.no_sync():
            loss = loss_fn(ddp(x), y) * (1 / k)
            loss.backward()
""",
        wrong=[
            Wrong(
                "No no_sync: DDP all-reduces after every micro-batch, k rounds.",
                hint="where one is enough",
                code=WITHOUT_NO_SYNC,
            ),
            Wrong(
                "no_sync around every micro-batch: nothing is ever all-reduced.",
                hint="DDP all-reduced nothing",
                code=NO_SYNC_FOR_EVERY_MICRO_BATCH,
            ),
            Wrong(
                "no_sync around each backward only: its forward ran outside, k rounds.",
                hint="the forward and the backward",
                code=NO_SYNC_AROUND_BACKWARD_ONLY,
            ),
            Wrong(
                "Each micro-batch's loss not divided by k: gradients k times too large.",
                hint="times too large",
                code=LOSS_NOT_DIVIDED,
            ),
        ],
    ),
    "5.11": Task(
        # Breadth first, with a deque and the nodes themselves as the set of seen ones.
        alternative="""\
from collections import deque


def unused_parameters(model, output):
    found = set()
    queue = deque([output.grad_fn] if output.grad_fn is not None else [])
    seen = set(queue)
    while queue:
        node = queue.popleft()
        leaf = getattr(node, "variable", None)
        if leaf is not None:
            found.add(id(leaf))
        for next_node, _ in node.next_functions:
            if next_node is not None and next_node not in seen:
                seen.add(next_node)
                queue.append(next_node)
    names = []
    for name, parameter in model.named_parameters():
        if parameter.requires_grad and id(parameter) not in found:
            names.append(name)
    names.sort()
    return names
""",
        wrong=[
            Wrong("Looks one step back from the output only.", hint="all the way down", code=ONE_LEVEL_ONLY),
            Wrong("Lists frozen parameters too.", hint="requires_grad=False", code=FROZEN_LISTED_TOO),
            Wrong(
                "Keeps the reached parameters in a list and tests `p not in reached`: tensors compared by value.",
                hint="compare parameters by identity",
                code=COMPARED_BY_VALUE,
            ),
            Wrong("A recursive walk: too deep for Python.", hint="recursion limit", code=RECURSIVE_WALK),
            Wrong("Runs backward and looks for .grad None.", hint="ran backward", code=BY_BACKWARD),
            Wrong("Names in the order of the model, not sorted.", hint="sorted", code=NOT_SORTED),
            Wrong(
                "No set of seen nodes: a node reached by several paths is walked once per path, "
                "2**40 times on a residual network 40 blocks deep.",
                hint="once per path",
                code=NO_SEEN_SET,
            ),
            Wrong(
                "A recursive walk made to fit by raising Python's recursion limit for the whole "
                "kernel, and leaving it raised.",
                hint="changed Python's recursion limit",
                code=RECURSION_LIMIT_RAISED,
            ),
        ],
    ),
}

TASKS["5.7"].wrong.append(
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
TASKS["5.11"].wrong.append(
    Wrong(
        "None skipped only among next_functions, not at the start: an output with no graph "
        "(every path detached, or a forward under torch.no_grad()) has grad_fn None, and the "
        "walk fails on None.next_functions where every parameter is unused.",
        hint="no graph",
        code="""\
def unused_parameters(model, output):
    reached, seen, todo = set(), set(), [output.grad_fn]
    while todo:
        node = todo.pop()
        if node in seen:
            continue
        seen.add(node)
        if hasattr(node, "variable"):
            reached.add(id(node.variable))
        todo.extend(n for n, _ in node.next_functions if n is not None)
    return sorted(n for n, p in model.named_parameters() if p.requires_grad and id(p) not in reached)
""",
    )
)
TASKS["5.9"].wrong.extend(
    [
        Wrong(
            "One forward and backward on the micro-batches put back together: the right "
            "gradients and one all-reduce, but the whole batch's activations at once.",
            hint="one at a time",
            code="""\
def accumulate(ddp, micro_batches, loss_fn):
    x = torch.cat([x for x, _ in micro_batches])
    y = torch.cat([y for _, y in micro_batches])
    loss_fn(ddp(x), y).backward()
""",
        ),
        Wrong(
            "Every micro-batch's forward kept alive, then one backward of the summed loss: the "
            "whole batch's activations at once.",
            hint="one at a time",
            code="""\
def accumulate(ddp, micro_batches, loss_fn):
    k = len(micro_batches)
    *first, last = micro_batches
    losses = []
    with ddp.no_sync():
        for x, y in first:
            losses.append(loss_fn(ddp(x), y))
    x, y = last
    losses.append(loss_fn(ddp(x), y))
    (sum(losses) / k).backward()
""",
        ),
    ]
)
TASKS["5.11"].wrong.extend(
    [
        Wrong(
            "Parameters told apart by data_ptr(): every parameter with no elements has 0, so an "
            "unused one passes for a used one.",
            hint="data_ptr() is 0",
            code="""\
def unused_parameters(model, output):
    reached, seen, todo = set(), set(), [output.grad_fn]
    while todo:
        node = todo.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        if hasattr(node, "variable"):
            reached.add(node.variable.data_ptr())
        todo.extend(n for n, _ in node.next_functions)
    return sorted(
        name for name, p in model.named_parameters() if p.requires_grad and p.data_ptr() not in reached
    )
""",
        ),
        Wrong(
            "Names from named_parameters(remove_duplicate=False): an unused weight shared by two "
            "layers is listed under both names.",
            hint="tied weights",
            code="""\
def unused_parameters(model, output):
    reached, seen, todo = set(), set(), [output.grad_fn]
    while todo:
        node = todo.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        if hasattr(node, "variable"):
            reached.add(id(node.variable))
        todo.extend(n for n, _ in node.next_functions)
    return sorted(
        name
        for name, p in model.named_parameters(remove_duplicate=False)
        if p.requires_grad and id(p) not in reached
    )
""",
        ),
    ]
)

# Work handed to a worker process the solution cell started (before any check watched), over a pipe.
TASKS["5.7"].wrong.append(
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
TASKS["5.9"].wrong.append(
    Wrong(
        "no_sync replaced by setting require_backward_grad_sync by hand, False then True: when a "
        "micro-batch's loss_fn raises, the flag stays False and later training never all-reduces.",
        hint="even when a micro-batch raises",
        code="""\
def accumulate(ddp, micro_batches, loss_fn):
    k = len(micro_batches)
    *first, last = micro_batches
    ddp.require_backward_grad_sync = False
    for x, y in first:
        (loss_fn(ddp(x), y) / k).backward()
    ddp.require_backward_grad_sync = True
    x, y = last
    (loss_fn(ddp(x), y) / k).backward()
""",
    )
)
TASKS["5.7"].wrong.extend(
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
TASKS["5.9"].wrong.append(
    Wrong(
        "loss_fn(y, output), the arguments the wrong way round: right only for a symmetric loss "
        "(mse, l1, smooth_l1), wrong for cross-entropy.",
        hint="the arguments the wrong way round",
        code=ACCUMULATE.replace("loss_fn(ddp(x), y)", "loss_fn(y, ddp(x))"),
    )
)
TASKS["5.9"].wrong.append(
    Wrong(
        "Each loss kept in a list and its backward run with retain_graph=True: every micro-batch's "
        "activations stay alive until the call returns, the memory accumulation is there to save.",
        hint="still alive",
        code="""\
def accumulate(ddp, micro_batches, loss_fn):
    k = len(micro_batches)
    *first, last = micro_batches
    losses = []
    with ddp.no_sync():
        for x, y in first:
            losses.append(loss_fn(ddp(x), y) / k)
            losses[-1].backward(retain_graph=True)
    x, y = last
    losses.append(loss_fn(ddp(x), y) / k)
    losses[-1].backward(retain_graph=True)
""",
    )
)
TASKS["5.11"].wrong.append(
    Wrong(
        "autograd's engine run on the output, called from C (map) with torch's record of the "
        "operations switched off (_DisableTorchDispatch): a backward that the watch does not see.",
        hint="where the grader cannot record it",
        code="""\
def unused_parameters(model, output):
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    if output.grad_fn is None or not named:
        return sorted(n for n, _ in named)
    engine = torch.autograd.Variable._execution_engine
    with torch._C._DisableTorchDispatch():
        ones = next(map(torch.ones_like, [output]))
        inputs = tuple(p for _, p in named)
        grads = next(map(engine.run_backward, [(output,)], [(ones,)], [True], [False], [inputs], [True], [False]))
    return sorted(n for (n, _), g in zip(named, grads) if g is None)
""",
    )
)
TASKS["5.7"].wrong.extend(
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
TASKS["5.9"].wrong.extend(
    [
        Wrong(
            "The last micro-batch taken with micro_batches.pop(): the caller's list loses it (a "
            "second call on the same list accumulates k - 1 micro-batches).",
            hint="changed the list micro_batches",
            code="""\
def accumulate(ddp, micro_batches, loss_fn):
    k = len(micro_batches)
    x_last, y_last = micro_batches.pop()
    with ddp.no_sync():
        for x, y in micro_batches:
            (loss_fn(ddp(x), y) / k).backward()
    (loss_fn(ddp(x_last), y_last) / k).backward()
""",
        ),
        Wrong(
            "ddp.train() first: a layer the caller put in eval mode (frozen BatchNorm, dropout off) trains again.",
            hint="changed the mode of the model's layers",
            code="""\
def accumulate(ddp, micro_batches, loss_fn):
    ddp.train()
    k = len(micro_batches)
    *first, last = micro_batches
    with ddp.no_sync():
        for x, y in first:
            (loss_fn(ddp(x), y) / k).backward()
    x, y = last
    (loss_fn(ddp(x), y) / k).backward()
""",
        ),
    ]
)
TASKS["5.11"].wrong.append(
    Wrong(
        "Parameters told apart by (data_ptr(), shape): two parameters with no elements and the "
        "same shape are taken for one.",
        hint="two of them can have the same shape",
        code="""\
def unused_parameters(model, output):
    reached, seen, todo = set(), set(), [output.grad_fn]
    while todo:
        node = todo.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        if hasattr(node, "variable"):
            reached.add((node.variable.data_ptr(), tuple(node.variable.shape)))
        todo.extend(next_node for next_node, _ in node.next_functions)
    return sorted(
        name
        for name, p in model.named_parameters()
        if p.requires_grad and (p.data_ptr(), tuple(p.shape)) not in reached
    )
""",
    )
)

# A red team's 5.11 (2026-11-28, second round).
TASKS["5.11"].wrong.extend(
    [
        Wrong(
            ("tamper: torch.autograd.grad (forbidden), then the Watch and the check's backward_ran list scrubbed"),
            hint="unused_parameters raised AssertionError: your code replaced",
            code=(
                "\n"
                "import sys as _sys11\n"
                "from grader.kernel import active as _act11\n"
                "\n"
                "def unused_parameters(model, output):\n"
                "    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]\n"
                "    if output.grad_fn is None:\n"
                "        result = sorted(n for n, _ in named)\n"
                "    else:\n"
                "        grads = torch.autograd.grad(output.sum(), [p for _, p in named], allow_u"
                "nused=True, retain_graph=True)\n"
                "        result = sorted(n for (n, _), g in zip(named, grads) if g is None)\n"
                "    for w in list(_act11.WATCHING):\n"
                "        w.ops.clear(); w.code.clear(); w.calls.clear(); w.outputs.clear(); w.wri"
                "tten.clear(); w.grad_ops = 0\n"
                "    f = _sys11._getframe(1)\n"
                '    while f is not None and "backward_ran" not in f.f_locals:\n'
                "        f = f.f_back\n"
                "    if f is not None:\n"
                '        f.f_locals["backward_ran"].clear()\n'
                "    return result\n"
            ),
        ),
    ]
)

# A red team's 5.7 (2026-11-28, second round).
TASKS["5.7"].wrong.extend(
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

# A red team's 5.9 (2026-11-28, second round).
TASKS["5.9"].wrong.extend(
    [
        Wrong(
            (
                "tamper: no no_sync (k rounds of all-reduce), the check's Watch collectives and "
                "its comm hook's list scrubbed before the last micro-batch"
            ),
            hint="emptied or replaced",
            code=(
                "\n"
                "import sys as _sys9\n"
                "from grader.kernel import active as _act9\n"
                "\n"
                "def accumulate(ddp, micro_batches, loss_fn):\n"
                "    k = len(micro_batches)\n"
                "    for j, (x, y) in enumerate(micro_batches):\n"
                "        if j == k - 1:\n"
                "            for w in list(_act9.WATCHING):\n"
                "                w.collectives.clear()\n"
                "            f = _sys9._getframe(1)\n"
                '            while f is not None and "reduced" not in f.f_locals:\n'
                "                f = f.f_back\n"
                "            if f is not None:\n"
                '                f.f_locals["reduced"].clear()\n'
                "        (loss_fn(ddp(x), y) / k).backward()\n"
            ),
        ),
    ]
)

# A red team's 5.11 (2026-11-28, second round).
TASKS["5.11"].wrong.extend(
    [
        Wrong(
            (
                "parameters told apart by (storage, offset, shape, stride), not identity: two "
                "Parameters sharing memory taken for one"
            ),
            hint="unused_parameters is wrong for two parameters that share",
            code=(
                "\n"
                "def unused_parameters(model, output):\n"
                "    def key(t):\n"
                "        return (t.untyped_storage()._cdata, t.storage_offset(), tuple(t.shape), "
                "t.stride())\n"
                "    reached, seen, todo = set(), set(), [output.grad_fn]\n"
                "    while todo:\n"
                "        node = todo.pop()\n"
                "        if node is None or node in seen:\n"
                "            continue\n"
                "        seen.add(node)\n"
                '        if hasattr(node, "variable"):\n'
                "            reached.add(key(node.variable))\n"
                "        todo.extend(n for n, _ in node.next_functions)\n"
                "    return sorted(name for name, p in model.named_parameters() if p.requires_gra"
                "d and key(p) not in reached)\n"
            ),
        ),
    ]
)
