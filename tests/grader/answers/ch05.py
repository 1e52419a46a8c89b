"""Other answers to the exercises of solutions/05_distributed.ipynb (see answers/__init__.py).

Wrong answers include a deadlock (5.3: both ranks receive first): its check ends it with
run_ranks' own time limit, kills its processes and fails the task with a message that
names the deadlock, while the grading of the other tasks goes on.
"""

from . import Task, Wrong

SHARD_CONTIGUOUS = """\
def shard_indices(n, rank, world_size, epoch=0, seed=0):
    indices = torch.randperm(n, generator=torch.Generator().manual_seed(seed + epoch)).tolist()
    per_rank = -(-n // world_size)
    indices += indices[: per_rank * world_size - n]
    return indices[rank * per_rank:(rank + 1) * per_rank]
"""

TRAIN_WITHOUT_SET_EPOCH = """\
def train(rank, world_size, checkpoint_dir, epochs=3):
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(3, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    dataset = make_regression_data()
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=8 // world_size, sampler=sampler)
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            F.mse_loss(model(x), y).backward()
            optimizer.step()
    if rank == 0:
        torch.save(model.module.state_dict(), os.path.join(checkpoint_dir, "model.pt"))
"""

TASKS = {
    "5.1": Task(
        alternative="""\
def shard_indices(n, rank, world_size, epoch=0, seed=0):
    g = torch.Generator()
    g.manual_seed(seed + epoch)
    order = torch.randperm(n, generator=g)
    padded = torch.cat([order] * world_size)[: -(-n // world_size) * world_size]
    return [int(i) for i in padded[rank::world_size]]
""",
        wrong=[
            Wrong(
                "A contiguous block per rank instead of dealing like cards.", hint="like cards", code=SHARD_CONTIGUOUS
            ),
            Wrong(
                "The shuffle ignores the epoch: set_epoch changes nothing.",
                hint="seed + epoch",
                code="""\
def shard_indices(n, rank, world_size, epoch=0, seed=0):
    indices = torch.randperm(n, generator=torch.Generator().manual_seed(seed)).tolist()
    indices += indices[: -(-n // world_size) * world_size - n]
    return indices[rank::world_size]
""",
            ),
            Wrong(
                "No padding: the last samples are dropped, ranks get different counts.",
                hint="pad the permutation",
                code="""\
def shard_indices(n, rank, world_size, epoch=0, seed=0):
    indices = torch.randperm(n, generator=torch.Generator().manual_seed(seed + epoch)).tolist()
    return indices[rank::world_size]
""",
            ),
            Wrong(
                "Each rank shuffles with its own seed: the shares overlap.",
                hint="the same permutation on every rank",
                code="""\
def shard_indices(n, rank, world_size, epoch=0, seed=0):
    indices = torch.randperm(n, generator=torch.Generator().manual_seed(seed + epoch + rank)).tolist()
    indices += indices[: -(-n // world_size) * world_size - n]
    return indices[rank::world_size]
""",
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
        ],
    ),
    "5.2": Task(
        alternative="""\
def average_gradients(model):
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    flat = torch.cat([g.flatten() for g in grads])
    dist.all_reduce(flat, op=dist.ReduceOp.AVG)
    for g, piece in zip(grads, flat.split([g.numel() for g in grads])):
        g.copy_(piece.view_as(g))
""",
        wrong=[
            Wrong(
                "Sums the gradients without dividing by the world size.",
                hint="divide by",
                code="""\
def average_gradients(model):
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)
""",
            ),
            Wrong(
                "Averages the parameters instead of the gradients.",
                hint="not the parameter itself",
                code="""\
def average_gradients(model):
    for p in model.parameters():
        with torch.no_grad():
            dist.all_reduce(p)
            p /= dist.get_world_size()
""",
            ),
            Wrong(
                "dist.reduce: only rank 0 gets the sum.",
                hint="dist.reduce leaves the sum on one rank",
                code="""\
def average_gradients(model):
    for p in model.parameters():
        if p.grad is not None:
            dist.reduce(p.grad, dst=0)
            p.grad /= dist.get_world_size()
""",
            ),
            Wrong(
                "Divides by 2 and forgets frozen parameters: right on 2 ranks only.",
                hint="on 3 ranks",
                code="""\
def average_gradients(model):
    for p in model.parameters():
        dist.all_reduce(p.grad)
        p.grad /= 2
""",
            ),
        ],
    ),
    "5.3": Task(
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
                code="""\
def all_reduce_by_hand(tensor):
    other = 1 - dist.get_rank()
    incoming = torch.empty_like(tensor)
    dist.recv(incoming, src=other)
    dist.send(tensor, dst=other)
    tensor += incoming
""",
            ),
            Wrong(
                "Returns a new tensor instead of writing into the one given.",
                hint="in place",
                code="""\
def all_reduce_by_hand(tensor):
    other = 1 - dist.get_rank()
    incoming = torch.empty_like(tensor)
    requests = [dist.isend(tensor, dst=other), dist.irecv(incoming, src=other)]
    for request in requests:
        request.wait()
    return tensor + incoming
""",
            ),
            Wrong(
                "Swaps with the one other rank: right on 2 ranks only.",
                hint="any world size",
                code="""\
def all_reduce_by_hand(tensor):
    other = 1 - dist.get_rank()
    incoming = torch.empty_like(tensor)
    requests = [dist.isend(tensor, dst=other), dist.irecv(incoming, src=other)]
    for request in requests:
        request.wait()
    tensor += incoming
""",
            ),
        ],
    ),
    "5.4": Task(
        alternative="""\
def train(rank, world_size, checkpoint_dir, epochs=3):
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(3, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    dataset = make_regression_data()
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=8 // world_size, sampler=sampler)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            optimizer.zero_grad()
            F.mse_loss(model(x), y).backward()
            optimizer.step()
    if dist.get_rank() == 0:
        state = {key.removeprefix("module."): value for key, value in model.state_dict().items()}
        torch.save(state, os.path.join(checkpoint_dir, "model.pt"))
    dist.barrier()
""",
        wrong=[
            Wrong(
                "The buggy function unchanged: every rank saves.",
                hint="Only rank 0",
                code="""\
def train(rank, world_size, checkpoint_dir, epochs=3):
    train_buggy(rank, world_size, checkpoint_dir, epochs)
""",
            ),
            Wrong("Saves from rank 0 but never calls set_epoch.", hint="set_epoch", code=TRAIN_WITHOUT_SET_EPOCH),
            Wrong(
                "Calls set_epoch with a constant.",
                hint="set_epoch(epoch)",
                code=TRAIN_WITHOUT_SET_EPOCH.replace(
                    "        for x, y in loader:", "        sampler.set_epoch(0)\n        for x, y in loader:"
                ),
            ),
        ],
    ),
    "5.5": Task(
        alternative="""\
from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present


def load_ddp_checkpoint(model, state_dict):
    state_dict = dict(state_dict)
    consume_prefix_in_state_dict_if_present(state_dict, "module.")
    model.load_state_dict(state_dict, strict=True)
    return model
""",
        wrong=[
            Wrong(
                "str.replace removes 'module.' everywhere, not only the prefix.",
                hint="removeprefix",
                code="""\
def load_ddp_checkpoint(model, state_dict):
    model.load_state_dict({key.replace("module.", ""): value for key, value in state_dict.items()})
    return model
""",
            ),
            Wrong(
                "strict=False: a wrong checkpoint loads silently.",
                hint="keep load_state_dict strict",
                code="""\
def load_ddp_checkpoint(model, state_dict):
    model.load_state_dict({key.removeprefix("module."): value for key, value in state_dict.items()}, strict=False)
    return model
""",
            ),
            Wrong(
                "Strips the first 7 characters of every key, prefixed or not.",
                hint="without the prefix",
                code="""\
def load_ddp_checkpoint(model, state_dict):
    model.load_state_dict({key[7:]: value for key, value in state_dict.items()})
    return model
""",
            ),
        ],
    ),
    "5.6": Task(
        alternative="""\
def fsdp_local_shape(shape, rank, world_size):
    pieces = torch.empty(shape[0], 0).chunk(world_size)
    rows = pieces[rank].shape[0] if rank < len(pieces) else 0
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
    ),
}
