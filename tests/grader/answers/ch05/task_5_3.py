"""Exercise 5.3 of solutions/05_distributed.ipynb: its other answers (see answers/__init__.py).

Its further wrong answers are in task_5_3_more.py.
"""

from .. import Task, Wrong
from . import task_5_3_more

# 5.3's exchange with the one other rank: right on 2 ranks only (its last wrong answer), and
# the other two-rank answers change one thing in it.
SWAP_WITH_THE_OTHER_RANK = """\
def all_reduce_by_hand(tensor):
    other = 1 - dist.get_rank()
    incoming = torch.empty_like(tensor)
    requests = [dist.isend(tensor, dst=other), dist.irecv(incoming, src=other)]
    for request in requests:
        request.wait()
    tensor += incoming
"""

BOTH_RECEIVE_FIRST = SWAP_WITH_THE_OTHER_RANK.replace(
    """\
    requests = [dist.isend(tensor, dst=other), dist.irecv(incoming, src=other)]
    for request in requests:
        request.wait()
""",
    """\
    dist.recv(incoming, src=other)
    dist.send(tensor, dst=other)
""",
)

SUM_RETURNED = SWAP_WITH_THE_OTHER_RANK.replace("    tensor += incoming\n", "    return tensor + incoming\n")

# A functional collective never goes through the process group's Python methods.
FUNCTIONAL_ALL_REDUCE = """\
import torch.distributed._functional_collectives as functional


def all_reduce_by_hand(tensor):
    tensor.copy_(functional.all_reduce(tensor, "sum", dist.group.WORLD))
"""


TASK = Task(
    alternative="""\
def all_reduce_by_hand(tensor):
    # The chapter's ring: reduce-scatter, then all-gather, with isend/irecv.
    rank, n = dist.get_rank(), dist.get_world_size()
    flat = tensor.view(-1)
    chunks = list(flat.tensor_split(n))
    right, left = (rank + 1) % n, (rank - 1) % n
    for phase in ("reduce-scatter", "all-gather"):
        for step in range(n - 1):
            if phase == "reduce-scatter":
                out, into = (rank - step) % n, (rank - step - 1) % n
            else:
                out, into = (rank + 1 - step) % n, (rank - step) % n
            incoming = torch.empty_like(chunks[into])
            requests = [dist.isend(chunks[out].contiguous(), dst=right), dist.irecv(incoming, src=left)]
            for request in requests:
                request.wait()
            if phase == "reduce-scatter":
                chunks[into].add_(incoming)
            else:
                chunks[into].copy_(incoming)
""",
    wrong=[
        Wrong(
            "Uses the collective it is meant to replace.",
            hint="used a collective",
            code="""\
def all_reduce_by_hand(tensor):
    dist.all_reduce(tensor)
""",
        ),
        Wrong(
            "Both ranks receive first: a deadlock, ended by run_ranks' time limit.",
            hint="a deadlock",
            code=BOTH_RECEIVE_FIRST,
        ),
        Wrong(
            "Returns a new tensor instead of writing into the one given.",
            hint="in place",
            code=SUM_RETURNED,
        ),
        Wrong(
            "Swaps with the one other rank: right on 2 ranks only.",
            hint="any world size",
            code=SWAP_WITH_THE_OTHER_RANK,
        ),
        Wrong(
            "A functional all_reduce: a collective that no process group method sees.",
            hint="used a collective",
            code=FUNCTIONAL_ALL_REDUCE,
        ),
    ],
)

TASK.wrong.extend(
    [
        Wrong(
            "The tensors exchanged through the rendezvous store (pickled), no message carrying them.",
            hint="did not travel in point-to-point messages",
            code="""\
import pickle


def all_reduce_by_hand(tensor):
    store = dist.distributed_c10d._get_default_store()
    rank, world_size = dist.get_rank(), dist.get_world_size()
    all_reduce_by_hand.calls = getattr(all_reduce_by_hand, "calls", 0) + 1
    key = f"byhand{all_reduce_by_hand.calls}"
    store.set(f"{key}/{rank}", pickle.dumps(tensor.clone()))
    total = torch.zeros_like(tensor)
    for other in range(world_size):
        total += pickle.loads(store.get(f"{key}/{other}"))
    tensor.copy_(total)
""",
        ),
        Wrong(
            "The tensors exchanged through files, with barriers in between: no message carries them.",
            hint="did not travel in point-to-point messages",
            code="""\
def all_reduce_by_hand(tensor):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    all_reduce_by_hand.calls = getattr(all_reduce_by_hand, "calls", 0) + 1
    base = os.path.join(tempfile.gettempdir(), f"byhand_{os.getppid()}_{all_reduce_by_hand.calls}")
    torch.save(tensor.clone(), f"{base}_{rank}.pt")
    dist.barrier()
    total = sum(torch.load(f"{base}_{other}.pt") for other in range(world_size))
    dist.barrier()
    os.remove(f"{base}_{rank}.pt")
    tensor.copy_(total)
""",
        ),
        Wrong(
            "The messages carry a float32 copy: an int64 tensor's sum is rounded.",
            hint="keep the tensor's dtype all the way",
            code="""\
def all_reduce_by_hand(tensor):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    buffer = tensor.detach().to(torch.float32).contiguous()
    if rank == 0:
        incoming = torch.empty_like(buffer)
        for other in range(1, world_size):
            dist.recv(incoming, src=other)
            buffer += incoming
        for other in range(1, world_size):
            dist.send(buffer, dst=other)
    else:
        dist.send(buffer, dst=0)
        dist.recv(buffer, src=0)
    tensor.copy_(buffer)
""",
        ),
        Wrong(
            "The ring splits the tensor along dim 0: a 0-d tensor has none.",
            hint="a 0-d tensor too",
            code="""\
def all_reduce_by_hand(tensor):
    rank, n = dist.get_rank(), dist.get_world_size()
    chunks = list(tensor.tensor_split(n, dim=0))
    right, left = (rank + 1) % n, (rank - 1) % n
    for phase in ("reduce-scatter", "all-gather"):
        for step in range(n - 1):
            if phase == "reduce-scatter":
                out, into = (rank - step) % n, (rank - step - 1) % n
            else:
                out, into = (rank + 1 - step) % n, (rank - step) % n
            incoming = torch.empty_like(chunks[into])
            requests = [dist.isend(chunks[out].contiguous(), dst=right), dist.irecv(incoming, src=left)]
            for request in requests:
                request.wait()
            if phase == "reduce-scatter":
                chunks[into].add_(incoming)
            else:
                chunks[into].copy_(incoming)
""",
        ),
        Wrong(
            "Rank 0 receives into torch.empty(tensor.shape), float32 whatever the tensor's dtype.",
            hint="torch.empty_like(tensor)",
            code="""\
def all_reduce_by_hand(tensor):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        for other in range(1, world_size):
            incoming = torch.empty(tensor.shape)
            dist.recv(incoming, src=other)
            tensor += incoming
        for other in range(1, world_size):
            dist.send(tensor, dst=other)
    else:
        dist.send(tensor, dst=0)
        dist.recv(tensor, src=0)
""",
        ),
    ]
)

TASK.wrong.extend(
    [
        Wrong(
            "The messages carry float64 copies: an int64 sum past 2**53 is rounded.",
            hint="2**56 + 1 becomes 2**56",
            code="""\
def all_reduce_by_hand(tensor):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        total = tensor.double()
        incoming = torch.empty(tensor.shape, dtype=torch.float64)
        for other in range(1, world_size):
            dist.recv(incoming, src=other)
            total += incoming
        for other in range(1, world_size):
            dist.send(total, dst=other)
        tensor.copy_(total)
    else:
        dist.send(tensor.double(), dst=0)
        buffer = torch.empty(tensor.shape, dtype=torch.float64)
        dist.recv(buffer, src=0)
        tensor.copy_(buffer)
""",
        ),
        Wrong(
            "The messages keep the tensor's dtype, but rank 0 adds an int64 tensor up in float64.",
            hint="2**56 + 1 becomes 2**56",
            code="""\
def all_reduce_by_hand(tensor):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        total = tensor.to(torch.float64) if tensor.dtype == torch.int64 else tensor.clone()
        incoming = torch.empty_like(tensor)
        for other in range(1, world_size):
            dist.recv(incoming, src=other)
            total += incoming
        tensor.copy_(total)
        for other in range(1, world_size):
            dist.send(tensor, dst=other)
    else:
        dist.send(tensor, dst=0)
        dist.recv(tensor, src=0)
""",
        ),
    ]
)

TASK.wrong.extend(task_5_3_more.WRONG)


# An eighth red team's wrong answers.
TASK.wrong.extend(
    [
        Wrong(
            (
                "A chain around the ring: on 1 rank it sends to itself, which gloo refuses, where dist.all_reduce "
                "leaves the tensor as it is."
            ),
            hint="wrong on 1 rank",
            code="""\
def all_reduce_by_hand(tensor):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    nxt, prv = (rank + 1) % world_size, (rank - 1) % world_size
    # pass 1: a running sum goes round the ring, rank 0 -> 1 -> ... -> last -> rank 0
    if rank == 0:
        dist.send(tensor, dst=nxt)
        dist.recv(tensor, src=prv)  # the total
    else:
        incoming = torch.empty_like(tensor)
        dist.recv(incoming, src=prv)
        incoming += tensor
        tensor.copy_(incoming)
        dist.send(tensor, dst=nxt)
    # pass 2: the total goes from rank 0 to ranks 1 .. world_size - 2 (the last one has it)
    if rank == 0:
        if world_size > 2:
            dist.send(tensor, dst=nxt)
    elif rank < world_size - 1:
        dist.recv(tensor, src=prv)
        if rank < world_size - 2:
            dist.send(tensor, dst=nxt)
""",
        ),
    ]
)


# A ninth red team's wrong answers: inputs outside the easy corner, state across calls, ops by another name.
TASK.wrong.extend(
    [
        Wrong(
            (
                "Integer tensors summed by gloo's own allreduce, called on the process group's backend (it "
                "bypasses the dispatcher), with copies exchanged in messages for show: a collective by another "
                "name."
            ),
            hint="used a collective",
            code="""\
def all_reduce_by_hand(tensor):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    if world_size == 1:
        return
    if tensor.is_floating_point():
        if rank == 0:
            incoming = torch.empty_like(tensor)
            for other in range(1, world_size):
                dist.recv(incoming, src=other)
                tensor += incoming
            for other in range(1, world_size):
                dist.send(tensor, dst=other)
        else:
            dist.send(tensor, dst=0)
            dist.recv(tensor, src=0)
        return
    # integers: let gloo add them, and exchange copies so that messages go around
    scratch = tensor.clone()
    dist.group.WORLD._get_backend(torch.device("cpu")).allreduce([tensor]).wait()
    if rank == 0:
        for other in range(1, world_size):
            dist.recv(scratch, src=other)
        for other in range(1, world_size):
            dist.send(scratch, dst=other)
    else:
        dist.send(scratch, dst=0)
        dist.recv(scratch, src=0)
""",
        ),
    ]
)


# A ninth red team's wrong answers, continued: one rank, tied weights.
TASK.wrong.extend(
    [
        Wrong(
            (
                "Calls dist.all_reduce when the world size is 1 (no other rank to send to): a collective all the "
                "same, where the task allows only the four point-to-point calls."
            ),
            hint="even on 1 rank",
            code="""\
def all_reduce_by_hand(tensor):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    if world_size == 1:
        dist.all_reduce(tensor)  # no other rank to send to: the collective does nothing here
        return
    if rank == 0:
        incoming = torch.empty_like(tensor)
        for other in range(1, world_size):
            dist.recv(incoming, src=other)
            tensor += incoming
        for other in range(1, world_size):
            dist.send(tensor, dst=other)
    else:
        dist.send(tensor, dst=0)
        dist.recv(tensor, src=0)
""",
        ),
    ]
)


# dist.all_reduce only when no dispatch mode is on the stack, as in a plain training loop: the
# checks' watched calls see point-to-point messages.
TASK.wrong.append(
    Wrong(
        "dist.all_reduce unless a dispatch mode (the grader's) is on the stack.",
        hint="used a collective when no dispatch mode was on the stack",
        code="""\
def all_reduce_by_hand(tensor):
    if not torch._C._len_torch_dispatch_stack():
        dist.all_reduce(tensor)  # plain runs: gloo's own, faster
        return
    rank, world_size = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        incoming = torch.empty_like(tensor)
        for other in range(1, world_size):
            dist.recv(incoming, src=other)
            tensor += incoming
        for other in range(1, world_size):
            dist.send(tensor, dst=other)
    else:
        dist.send(tensor, dst=0)
        dist.recv(tensor, src=0)
""",
    )
)
