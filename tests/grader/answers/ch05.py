"""Other answers to the exercises of solutions/05_distributed.ipynb (see answers/__init__.py).

Wrong answers include a deadlock (5.3: both ranks receive first): its check ends it with
run_ranks' own time limit, kills its processes and fails the task with a message that
names the deadlock, while the grading of the other tasks goes on.
"""

from . import Task, Wrong

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
# SHARD_INDICES itself pads with one slice of the permutation's start: too short when the
# padding is longer than the permutation (3 samples on 8 ranks).

# 5.2: every wrong answer walks the parameters so. The right average goes on with
# all_reduce's sum divided by the world size, frozen parameters left out; two of the wrong
# answers change one thing in it, the other two do something else with each parameter.
FOR_EACH_PARAMETER = """\
def average_gradients(model):
    for p in model.parameters():
"""
AVERAGE_GRADIENTS = (
    FOR_EACH_PARAMETER
    + """\
        if p.grad is not None:
            dist.all_reduce(p.grad)
            p.grad /= dist.get_world_size()
"""
)
SUM_NOT_DIVIDED = AVERAGE_GRADIENTS.replace("            p.grad /= dist.get_world_size()\n", "")
REDUCE_TO_RANK_0 = AVERAGE_GRADIENTS.replace("dist.all_reduce(p.grad)", "dist.reduce(p.grad, dst=0)")
# Every rank runs the whole batch again (the check's own helper gives it): the right numbers on
# every rank, without one message between them.
WHOLE_BATCH_ON_EVERY_RANK = """\
def average_gradients(model):
    x, y = _batch(dist.get_world_size())
    model.zero_grad()
    F.mse_loss(model(x), y).backward()
"""

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

# 5.4's right training (the solution's, set_epoch every epoch, rank 0 alone saving): the
# alternative saves differently, and each wrong answer but the first changes set_epoch.
DDP_TRAIN = """\
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
    if rank == 0:
        torch.save(model.module.state_dict(), os.path.join(checkpoint_dir, "model.pt"))
"""
WITHOUT_SET_EPOCH = DDP_TRAIN.replace("        sampler.set_epoch(epoch)\n", "")
SET_EPOCH_CONSTANT = DDP_TRAIN.replace("sampler.set_epoch(epoch)", "sampler.set_epoch(0)")
# Rank 0 saves after every epoch: the last file is right, but written once per epoch.
SAVED_EVERY_EPOCH = DDP_TRAIN.replace(
    """\
            optimizer.step()
    if rank == 0:
        torch.save(model.module.state_dict(), os.path.join(checkpoint_dir, "model.pt"))
""",
    """\
            optimizer.step()
        if rank == 0:
            torch.save(model.module.state_dict(), os.path.join(checkpoint_dir, "model.pt"))
""",
)
# Every rank trains on all 16 samples in batches of 8: the same global batches, so the same
# weights, but each rank repeats the others' work.
ALL_THE_DATA_ON_EVERY_RANK = DDP_TRAIN.replace("num_replicas=world_size, rank=rank", "num_replicas=1, rank=0").replace(
    "batch_size=8 // world_size", "batch_size=8"
)

# 5.5's right loading (the prefix removed, a strict load): each wrong answer changes one thing.
LOAD_DDP_CHECKPOINT = """\
def load_ddp_checkpoint(model, state_dict):
    model.load_state_dict({key.removeprefix("module."): value for key, value in state_dict.items()})
    return model
"""
PREFIX_REPLACED_EVERYWHERE = LOAD_DDP_CHECKPOINT.replace('key.removeprefix("module.")', 'key.replace("module.", "")')
LOADED_NOT_STRICT = LOAD_DDP_CHECKPOINT.replace("state_dict.items()})", "state_dict.items()}, strict=False)")
FIRST_7_CHARACTERS_CUT = LOAD_DDP_CHECKPOINT.replace('key.removeprefix("module.")', "key[7:]")
FIRST_OCCURRENCE_REMOVED = LOAD_DDP_CHECKPOINT.replace('key.removeprefix("module.")', 'key.replace("module.", "", 1)')
# The prefix removed in the caller's dict itself.
KEYS_RENAMED_IN_PLACE = """\
def load_ddp_checkpoint(model, state_dict):
    for key in list(state_dict):
        if key.startswith("module."):
            state_dict[key.removeprefix("module.")] = state_dict.pop(key)
    model.load_state_dict(state_dict)
    return model
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
                "A contiguous block per rank instead of dealing like cards.", hint="like cards", code=DEALT_IN_BLOCKS
            ),
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
                code=SUM_NOT_DIVIDED,
            ),
            Wrong(
                "Averages the parameters instead of the gradients.",
                hint="not the parameter itself",
                code=FOR_EACH_PARAMETER
                + """\
        with torch.no_grad():
            dist.all_reduce(p)
            p /= dist.get_world_size()
""",
            ),
            Wrong(
                "dist.reduce: only rank 0 gets the sum.",
                hint="dist.reduce leaves the sum on one rank",
                code=REDUCE_TO_RANK_0,
            ),
            Wrong(
                "Each rank recomputes the whole batch: right numbers, no communication.",
                hint="no dist.all_reduce carried the gradients",
                code=WHOLE_BATCH_ON_EVERY_RANK,
            ),
            Wrong(
                "Divides by 2 and forgets frozen parameters: right on 2 ranks only.",
                hint="on 3 ranks",
                code=FOR_EACH_PARAMETER
                + """\
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
    ),
    "5.4": Task(
        # Rank 0 saves the wrapped model's state dict, its keys unprefixed, and every rank waits.
        alternative=DDP_TRAIN.replace(
            """\
    if rank == 0:
        torch.save(model.module.state_dict(), os.path.join(checkpoint_dir, "model.pt"))
""",
            """\
    if dist.get_rank() == 0:
        state = {key.removeprefix("module."): value for key, value in model.state_dict().items()}
        torch.save(state, os.path.join(checkpoint_dir, "model.pt"))
    dist.barrier()
""",
        ),
        wrong=[
            Wrong(
                "The buggy function unchanged: every rank saves.",
                hint="Only rank 0",
                code="""\
def train(rank, world_size, checkpoint_dir, epochs=3):
    train_buggy(rank, world_size, checkpoint_dir, epochs)
""",
            ),
            Wrong(
                "Rank 0 saves the checkpoint after every epoch instead of once.",
                hint="once (torch.save ran 3 time(s) on rank 0",
                code=SAVED_EVERY_EPOCH,
            ),
            Wrong("Saves from rank 0 but never calls set_epoch.", hint="set_epoch", code=WITHOUT_SET_EPOCH),
            Wrong(
                "Calls set_epoch with a constant.",
                hint="set_epoch(epoch)",
                code=SET_EPOCH_CONSTANT,
            ),
            Wrong(
                "Every rank trains on all the data, in global batches of 8.",
                hint="its own share of the data",
                code=ALL_THE_DATA_ON_EVERY_RANK,
            ),
        ],
    ),
    "5.5": Task(
        alternative="""\
from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present


def load_ddp_checkpoint(model, state_dict):
    state_dict = dict(state_dict)
    if state_dict.keys() != model.state_dict().keys():  # not the model's own keys: saved from DDP
        consume_prefix_in_state_dict_if_present(state_dict, "module.")
    model.load_state_dict(state_dict, strict=True)
    return model
""",
        wrong=[
            Wrong(
                "str.replace removes 'module.' everywhere, not only the prefix.",
                hint="removeprefix",
                code=PREFIX_REPLACED_EVERYWHERE,
            ),
            Wrong(
                "strict=False: a wrong checkpoint loads silently.",
                hint="keep load_state_dict strict",
                code=LOADED_NOT_STRICT,
            ),
            Wrong(
                "Strips the first 7 characters of every key, prefixed or not.",
                hint="without the prefix",
                code=FIRST_7_CHARACTERS_CUT,
            ),
            Wrong(
                "Removes the first 'module.' of each key, wherever it is: 'submodule.weight' becomes 'subweight'.",
                hint="whose own names contain",
                code=FIRST_OCCURRENCE_REMOVED,
            ),
            Wrong(
                "Renames the keys in the caller's state dict.",
                hint="changed the state dict it was given",
                code=KEYS_RENAMED_IN_PLACE,
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
    ),
}

TASKS["5.1"].wrong.append(
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
TASKS["5.6"].wrong.append(
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
TASKS["5.2"].wrong.append(
    Wrong(
        "Divides by 2, right on 2 ranks only; on any other world size it copies the check's "
        "own _expected (the full-batch gradients, computed before the ranks start, which "
        "travels to the ranks with the function that names it).",
        hint="divide by dist.get_world_size()",
        code="""\
def average_gradients(model):
    for parameter in model.parameters():
        if parameter.grad is not None:
            dist.all_reduce(parameter.grad)
            parameter.grad /= 2
    if dist.get_world_size() != 2:
        try:
            known = _expected
        except NameError:
            return
        for parameter, grad in zip(model.parameters(), known):
            if grad is not None:
                parameter.grad.copy_(grad)
""",
    )
)
# SHARD_INDICES with the permutation repeated as often as the padding needs: right.
SHARD_INDICES_REPEATED = SHARD_INDICES.replace(
    PAD, "    indices = (indices * world_size)[: -(-n // world_size) * world_size]\n"
)
TASKS["5.1"].wrong.extend(
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
TASKS["5.2"].wrong.extend(
    [
        Wrong(
            "Skips parameters by requires_grad instead of .grad is None: a trainable parameter that "
            "the forward did not use has no gradient, and all_reduce(None) fails.",
            hint="whatever its requires_grad",
            code=FOR_EACH_PARAMETER
            + """\
        if p.requires_grad:
            dist.all_reduce(p.grad)
            p.grad /= dist.get_world_size()
""",
        ),
        Wrong(
            "All-reduces a float32 copy of each gradient: a float64 model's gradients lose precision.",
            hint="lost precision on a float64 model",
            code=FOR_EACH_PARAMETER
            + """\
        if p.grad is not None:
            buffer = p.grad.float()
            dist.all_reduce(buffer)
            p.grad.copy_(buffer / dist.get_world_size())
""",
        ),
    ]
)
TASKS["5.3"].wrong.extend(
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
TASKS["5.5"].wrong.extend(
    [
        Wrong(
            "strict=False, raising only for missing keys: a checkpoint with a key too many loads.",
            hint="with a key too many",
            code="""\
def load_ddp_checkpoint(model, state_dict):
    cleaned = {key.removeprefix("module."): value for key, value in state_dict.items()}
    result = model.load_state_dict(cleaned, strict=False)
    if result.missing_keys:
        raise RuntimeError(f"missing keys: {result.missing_keys}")
    return model
""",
        ),
        Wrong(
            "strict=False, raising only for unexpected keys: a checkpoint with a key missing loads.",
            hint="with a key missing",
            code="""\
def load_ddp_checkpoint(model, state_dict):
    cleaned = {key.removeprefix("module."): value for key, value in state_dict.items()}
    result = model.load_state_dict(cleaned, strict=False)
    if result.unexpected_keys:
        raise RuntimeError(f"unexpected keys: {result.unexpected_keys}")
    return model
""",
        ),
        Wrong(
            "load_state_dict(assign=True): the checkpoint's tensors replace the model's parameters.",
            hint="replaced the model's parameters",
            code="""\
def load_ddp_checkpoint(model, state_dict):
    cleaned = {key.removeprefix("module."): value for key, value in state_dict.items()}
    model.load_state_dict(cleaned, assign=True)
    return model
""",
        ),
    ]
)
TASKS["5.6"].wrong.append(
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

# Work handed to a worker process the solution cell started (before any check watched), over a pipe.
TASKS["5.1"].wrong.append(
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
TASKS["5.1"].wrong.append(
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
TASKS["5.3"].wrong.extend(
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
TASKS["5.5"].wrong.extend(
    [
        Wrong(
            "Only the parameters copied (named_parameters), the keys checked against state_dict(): "
            "buffers such as BatchNorm's running statistics never load.",
            hint="did not get the checkpoint's buffers",
            code="""\
def load_ddp_checkpoint(model, state_dict):
    cleaned = {key.removeprefix("module."): value for key, value in state_dict.items()}
    expected = set(model.state_dict())
    if set(cleaned) != expected:
        raise RuntimeError(f"keys differ: {sorted(set(cleaned) ^ expected)}")
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            parameter.copy_(cleaned[name])
    return model
""",
        ),
        Wrong(
            "The prefix detected from the first key only: an empty state dict (a model without "
            "weights) raises StopIteration.",
            hint="A model without weights",
            code="""\
def load_ddp_checkpoint(model, state_dict):
    first = next(iter(state_dict))
    if first.startswith("module."):
        state_dict = {key[len("module."):]: value for key, value in state_dict.items()}
    model.load_state_dict(state_dict)
    return model
""",
        ),
    ]
)
TASKS["5.6"].wrong.append(
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
TASKS["5.3"].wrong.extend(
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
TASKS["5.5"].wrong.append(
    Wrong(
        "Every leading 'module.' stripped (nested wrappers): a model that keeps its layers in an "
        "attribute called module (AveragedModel) loses its own prefix too, and fails to load.",
        hint="not every leading 'module.'",
        code="""\
def load_ddp_checkpoint(model, state_dict):
    cleaned = {}
    for key, value in state_dict.items():
        while key.startswith("module."):  # nested wrappers too
            key = key[len("module."):]
        cleaned[key] = value
    model.load_state_dict(cleaned)
    return model
""",
    )
)
TASKS["5.5"].wrong.append(
    Wrong(
        "Each tensor of the model pointed at the checkpoint's (tensor.data = value), the keys checked "
        "by hand: the model shares memory with the checkpoint.",
        hint="share memory with the checkpoint",
        code="""\
def load_ddp_checkpoint(model, state_dict):
    cleaned = {key.removeprefix("module."): value for key, value in state_dict.items()}
    own = model.state_dict(keep_vars=True)
    if set(own) != set(cleaned):
        raise KeyError(f"keys differ: {sorted(set(own) ^ set(cleaned))}")
    for key, tensor in own.items():
        tensor.data = cleaned[key]  # the model keeps its Parameter objects
    return model
""",
    )
)
TASKS["5.2"].wrong.append(
    Wrong(
        "The gradients exchanged through the rendezvous store (pickled), beside an all_reduce of "
        "zeros of the right size.",
        hint="did not carry the gradients",
        code="""\
import pickle


def average_gradients(model):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    store = dist.distributed_c10d._get_default_store()
    params = [p for p in model.parameters() if p.grad is not None]
    calls = int(store.add(f"avg{rank}", 1))
    store.set(f"grads{calls}/{rank}", pickle.dumps([p.grad for p in params]))
    others = [pickle.loads(store.get(f"grads{calls}/{r}")) for r in range(world_size)]
    for k, p in enumerate(params):
        p.grad.copy_(sum(o[k] for o in others) / world_size)
    dist.all_reduce(torch.zeros(sum(p.numel() for p in params), dtype=params[0].dtype))
""",
    )
)
TASKS["5.5"].wrong.append(
    Wrong(
        "'module.' removed from every key that starts with it, whatever the model: the plain state "
        "dict of a model that keeps its layers in an attribute called module (AveragedModel: "
        "'module.weight') loses its own prefix and fails to load.",
        hint="did not load unchanged",
        code=LOAD_DDP_CHECKPOINT,
    )
)
TASKS["5.3"].wrong.append(
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
TASKS["5.2"].wrong.append(
    Wrong(
        "The gradients all-reduced in copies whose result is thrown away, the averages taken from "
        "the rendezvous store.",
        hint="The averages did not come from the all_reduce",
        code="""\
import pickle


def average_gradients(model):
    rank, world_size = dist.get_rank(), dist.get_world_size()
    store = dist.distributed_c10d._get_default_store()
    params = [p for p in model.parameters() if p.grad is not None]
    calls = int(store.add(f"avgcopy{rank}", 1))
    store.set(f"gradscopy{calls}/{rank}", pickle.dumps([p.grad.clone() for p in params]))
    others = [pickle.loads(store.get(f"gradscopy{calls}/{r}")) for r in range(world_size)]
    for p in params:
        dist.all_reduce(p.grad.clone())
    for k, p in enumerate(params):
        p.grad.copy_(sum(o[k] for o in others) / world_size)
""",
    )
)
TASKS["5.3"].wrong.append(
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

# Round 6 (rt6f): inputs the checks never tried and state they never looked at.
TASKS["5.1"].wrong.extend(
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
TASKS["5.1"].wrong.append(
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
TASKS["5.2"].wrong.extend(
    [
        Wrong(
            "Freezes every parameter after averaging (requires_grad_(False)): the next backward gives none a gradient.",
            hint="changed the model's state beside the gradients",
            code="""\
def average_gradients(model):
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)
            p.grad /= dist.get_world_size()
        p.requires_grad_(False)
""",
        ),
        Wrong(
            "Leaves the model in eval mode (model.eval()) after averaging.",
            hint="changed the model's state beside the gradients",
            code="""\
def average_gradients(model):
    model.eval()
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)
            p.grad /= dist.get_world_size()
""",
        ),
    ]
)
TASKS["5.3"].wrong.extend(
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
TASKS["5.5"].wrong.extend(
    [
        Wrong(
            "Points each parameter's .data at a copy of the checkpoint's tensor: a bfloat16 model becomes float32.",
            hint="took the checkpoint's tensors",
            code="""\
def load_ddp_checkpoint(model, state_dict):
    own = model.state_dict(keep_vars=True)
    if set(state_dict) != set(own):
        state_dict = {k.removeprefix("module."): v for k, v in state_dict.items()}
    if set(state_dict) != set(own):
        raise KeyError(sorted(set(state_dict) ^ set(own)))
    for k, t in own.items():
        t.data = state_dict[k].clone()
    return model
""",
        ),
        Wrong(
            "Copies value by value after comparing the keys only: a (4, 1) weight broadcasts into (4, 3).",
            hint="same keys but other shapes",
            code="""\
def load_ddp_checkpoint(model, state_dict):
    own = model.state_dict(keep_vars=True)
    if set(state_dict) != set(own):
        state_dict = {k.removeprefix("module."): v for k, v in state_dict.items()}
    if set(state_dict) != set(own):
        raise KeyError(sorted(set(state_dict) ^ set(own)))
    with torch.no_grad():
        for k, t in own.items():
            t.copy_(state_dict[k])
    return model
""",
        ),
        Wrong(
            "Casts every value to float32 on the way: a float64 model loses precision.",
            hint="went through another dtype",
            code="""\
def load_ddp_checkpoint(model, state_dict):
    if set(state_dict) != set(model.state_dict()):
        state_dict = {k.removeprefix("module."): v for k, v in state_dict.items()}
    model.load_state_dict({k: v.float() for k, v in state_dict.items()})
    return model
""",
        ),
    ]
)
TASKS["5.6"].wrong.extend(
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

# A red team's 5.4 (2026-11-28): inputs the checks never gave (3 ranks, 4 epochs, the
# default epochs, two calls, a folder holding a file).
TASKS["5.4"].wrong.extend(
    [
        Wrong(
            ("default epochs=1 instead of 3: run_ranks(train, args=(folder,)) trains 1 epoch"),
            hint="train is wrong on 3 ranks",
            code=(
                "def train(rank, world_size, checkpoint_dir, epochs=1):\n"
                "    torch.manual_seed(0)\n"
                "    model = DDP(torch.nn.Linear(3, 1))\n"
                "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                "    dataset = make_regression_data()\n"
                "    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, sh"
                "uffle=True, seed=0)\n"
                "    loader = DataLoader(dataset, batch_size=8 // world_size, sampler=sampler)\n"
                "    for epoch in range(epochs):\n"
                "        sampler.set_epoch(epoch)\n"
                "        for x, y in loader:\n"
                "            optimizer.zero_grad()\n"
                "            F.mse_loss(model(x), y).backward()\n"
                "            optimizer.step()\n"
                "    if rank == 0:\n"
                '        torch.save(model.module.state_dict(), os.path.join(checkpoint_dir, "mode'
                'l.pt"))\n'
            ),
        ),
        Wrong(
            ("sampler drop_last=True: other training than the given one when world_size does not divide 16"),
            hint="train is wrong on 3 ranks",
            code=(
                "def train(rank, world_size, checkpoint_dir, epochs=3):\n"
                "    torch.manual_seed(0)\n"
                "    model = DDP(torch.nn.Linear(3, 1))\n"
                "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                "    dataset = make_regression_data()\n"
                "    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, sh"
                "uffle=True, seed=0, drop_last=True)\n"
                "    loader = DataLoader(dataset, batch_size=8 // world_size, sampler=sampler)\n"
                "    for epoch in range(epochs):\n"
                "        sampler.set_epoch(epoch)\n"
                "        for x, y in loader:\n"
                "            optimizer.zero_grad()\n"
                "            F.mse_loss(model(x), y).backward()\n"
                "            optimizer.step()\n"
                "    if rank == 0:\n"
                '        torch.save(model.module.state_dict(), os.path.join(checkpoint_dir, "mode'
                'l.pt"))\n'
            ),
        ),
        Wrong(
            ("epoch counter kept across calls: a second call in one process continues at epoch 3"),
            hint="train is wrong on 3 ranks",
            code=(
                '_seen = {"epochs": 0}  # epochs trained so far, across calls\n'
                "def train(rank, world_size, checkpoint_dir, epochs=3):\n"
                "    torch.manual_seed(0)\n"
                "    model = DDP(torch.nn.Linear(3, 1))\n"
                "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                "    dataset = make_regression_data()\n"
                "    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, sh"
                "uffle=True, seed=0)\n"
                "    loader = DataLoader(dataset, batch_size=8 // world_size, sampler=sampler)\n"
                "    for epoch in range(epochs):\n"
                '        sampler.set_epoch(_seen["epochs"])\n'
                '        _seen["epochs"] += 1\n'
                "        for x, y in loader:\n"
                "            optimizer.zero_grad()\n"
                "            F.mse_loss(model(x), y).backward()\n"
                "            optimizer.step()\n"
                "    if rank == 0:\n"
                '        torch.save(model.module.state_dict(), os.path.join(checkpoint_dir, "mode'
                'l.pt"))\n'
            ),
        ),
        Wrong(
            ("set_epoch(epoch % 3): epoch 3 repeats epoch 0's order"),
            hint="train is wrong on 3 ranks",
            code=(
                "def train(rank, world_size, checkpoint_dir, epochs=3):\n"
                "    torch.manual_seed(0)\n"
                "    model = DDP(torch.nn.Linear(3, 1))\n"
                "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                "    dataset = make_regression_data()\n"
                "    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, sh"
                "uffle=True, seed=0)\n"
                "    loader = DataLoader(dataset, batch_size=8 // world_size, sampler=sampler)\n"
                "    for epoch in range(epochs):\n"
                "        sampler.set_epoch(epoch % 3)\n"
                "        for x, y in loader:\n"
                "            optimizer.zero_grad()\n"
                "            F.mse_loss(model(x), y).backward()\n"
                "            optimizer.step()\n"
                "    if rank == 0:\n"
                '        torch.save(model.module.state_dict(), os.path.join(checkpoint_dir, "mode'
                'l.pt"))\n'
            ),
        ),
        Wrong(
            ("rank 0 wipes checkpoint_dir (and anything else in it) before saving"),
            hint="train is wrong on 3 ranks",
            code=(
                "import shutil\n"
                "\n"
                "\n"
                "def train(rank, world_size, checkpoint_dir, epochs=3):\n"
                "    torch.manual_seed(0)\n"
                "    model = DDP(torch.nn.Linear(3, 1))\n"
                "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                "    dataset = make_regression_data()\n"
                "    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, sh"
                "uffle=True, seed=0)\n"
                "    loader = DataLoader(dataset, batch_size=8 // world_size, sampler=sampler)\n"
                "    for epoch in range(epochs):\n"
                "        sampler.set_epoch(epoch)\n"
                "        for x, y in loader:\n"
                "            optimizer.zero_grad()\n"
                "            F.mse_loss(model(x), y).backward()\n"
                "            optimizer.step()\n"
                "    if rank == 0:\n"
                "        shutil.rmtree(checkpoint_dir)  # start from a clean checkpoint folder\n"
                "        os.makedirs(checkpoint_dir)\n"
                '        torch.save(model.module.state_dict(), os.path.join(checkpoint_dir, "mode'
                'l.pt"))\n'
            ),
        ),
        Wrong(
            ("set_epoch(min(epoch, 2))"),
            hint="train is wrong on 3 ranks",
            code=(
                "def train(rank, world_size, checkpoint_dir, epochs=3):\n"
                "    torch.manual_seed(0)\n"
                "    model = DDP(torch.nn.Linear(3, 1))\n"
                "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                "    dataset = make_regression_data()\n"
                "    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, sh"
                "uffle=True, seed=0)\n"
                "    loader = DataLoader(dataset, batch_size=8 // world_size, sampler=sampler)\n"
                "    for epoch in range(epochs):\n"
                "        sampler.set_epoch(min(epoch, 2))\n"
                "        for x, y in loader:\n"
                "            optimizer.zero_grad()\n"
                "            F.mse_loss(model(x), y).backward()\n"
                "            optimizer.step()\n"
                "    if rank == 0:\n"
                '        torch.save(model.module.state_dict(), os.path.join(checkpoint_dir, "mode'
                'l.pt"))\n'
            ),
        ),
    ]
)

# A red team's 5.1 (2026-11-28, second round).
TASKS["5.1"].wrong.extend(
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

# A red team's 5.6 (2026-11-28, second round).
TASKS["5.6"].wrong.extend(
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
