"""Further wrong answers to exercise 5.3 of solutions/05_distributed.ipynb, after those of task_5_3.py."""

from .. import Wrong

WRONG: list[Wrong] = []

WRONG.extend(
    [
        Wrong(
            "The sum built in a tensor of its own, then tensor.data = total: the caller's memory (a "
            "view into DDP's bucket) keeps the old numbers.",
            hint="the buffer never got the sum",
            code="""\
def all_reduce_by_hand(tensor):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        total = tensor.clone()
        incoming = torch.empty_like(tensor)
        for other in range(1, world_size):
            dist.recv(incoming, src=other)
            total = total + incoming
        for other in range(1, world_size):
            dist.send(total, dst=other)
    else:
        dist.send(tensor, dst=0)
        total = torch.empty_like(tensor)
        dist.recv(total, src=0)
    tensor.data = total  # "in place": the same tensor object now holds the sum
""",
        ),
        Wrong(
            "The sum built in a tensor of its own, then tensor.set_(total): the same, by another name.",
            hint="the buffer never got the sum",
            code="""\
def all_reduce_by_hand(tensor):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        total = tensor.clone()
        incoming = torch.empty_like(tensor)
        for other in range(1, world_size):
            dist.recv(incoming, src=other)
            total = total + incoming
        for other in range(1, world_size):
            dist.send(total, dst=other)
    else:
        dist.send(tensor, dst=0)
        total = torch.empty_like(tensor)
        dist.recv(total, src=0)
    tensor.set_(total)  # "in place": the same tensor object now holds the sum
""",
        ),
        Wrong(
            "Rank 0 sends the sum back with dist.isend and never waits: a large tensor never "
            "arrives, and the caller's next in-place change can travel instead.",
            hint="never waited on",
            code="""\
def all_reduce_by_hand(tensor):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        incoming = torch.empty_like(tensor)
        for other in range(1, world_size):
            dist.recv(incoming, src=other)
            tensor += incoming
        for other in range(1, world_size):
            dist.isend(tensor, dst=other)  # non-blocking: no need to wait for each rank in turn
    else:
        dist.send(tensor, dst=0)
        dist.recv(tensor, src=0)
""",
        ),
    ]
)

WRONG.append(
    Wrong(
        "The sums taken from the rendezvous store, beside point-to-point messages of zeros of the right size.",
        hint="The sums did not come from the messages",
        code="""\
import pickle


def all_reduce_by_hand(tensor):
    store = dist.distributed_c10d._get_default_store()
    rank, world_size = dist.get_rank(), dist.get_world_size()
    all_reduce_by_hand.calls = getattr(all_reduce_by_hand, "calls", 0) + 1
    key = f"byhandzeros{all_reduce_by_hand.calls}"
    store.set(f"{key}/{rank}", pickle.dumps(tensor.clone()))
    total = torch.zeros_like(tensor)
    for other in range(world_size):
        total += pickle.loads(store.get(f"{key}/{other}"))
    zeros = torch.zeros_like(tensor)
    if rank == 0:
        for other in range(1, world_size):
            dist.recv(zeros, src=other)
        for other in range(1, world_size):
            dist.send(zeros, dst=other)
    else:
        dist.send(zeros, dst=0)
        dist.recv(zeros, src=0)
    tensor.copy_(total)
""",
    )
)

WRONG.append(
    Wrong(
        "The tensors pickled into dist.send_object_list / dist.recv_object_list, not sent themselves.",
        hint="dist.send_object_list is not one of the four calls",
        code="""\
def all_reduce_by_hand(tensor):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        for other in range(1, world_size):
            box = [None]
            dist.recv_object_list(box, src=other)
            tensor += box[0]
        for other in range(1, world_size):
            dist.send_object_list([tensor.clone()], dst=other)
    else:
        dist.send_object_list([tensor.clone()], dst=0)
        box = [None]
        dist.recv_object_list(box, src=0)
        tensor.copy_(box[0])
""",
    )
)

WRONG.extend(
    [
        Wrong(
            "Every rank sends its tensor to every other and adds up in its own order (its own first): "
            "the ranks' float sums differ in the last bits.",
            hint="the ranks hold different numbers",
            code="""\
def all_reduce_by_hand(tensor):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    mine = tensor.clone()
    others = {r: torch.empty_like(tensor) for r in range(world_size) if r != rank}
    requests = []
    for r in others:
        requests.append(dist.isend(mine, dst=r))
        requests.append(dist.irecv(others[r], src=r))
    for request in requests:
        request.wait()
    for r in sorted(others):
        tensor += others[r]
""",
        ),
        Wrong(
            "The receive buffer is made once per shape and kept: a later tensor of that shape and "
            "another dtype is received into the first one's dtype.",
            hint="is wrong on 3 ranks",
            code="""\
_buffers = {}


def all_reduce_by_hand(tensor):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        incoming = _buffers.setdefault(tuple(tensor.shape), torch.empty_like(tensor))
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
