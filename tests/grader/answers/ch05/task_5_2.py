"""Exercise 5.2 of solutions/05_distributed.ipynb: its other answers (see answers/__init__.py)."""

from .. import Task, Wrong

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


TASK = Task(
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
)

TASK.wrong.append(
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

TASK.wrong.extend(
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

TASK.wrong.append(
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

TASK.wrong.append(
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

TASK.wrong.extend(
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


# A fourth red team's wrong answers (a rank whose gradients are zeros, a submodule in eval
# mode, a bfloat16 model).
TASK.wrong.extend(
    [
        Wrong(
            (
                "Skips a gradient that is all zeros on this rank (nothing to average, it says): the rank "
                "that skips issues one all_reduce fewer, and the other ranks wait for it forever."
            ),
            hint="rank 0's gradients were all zeros",
            code="""\
def average_gradients(model):
    world_size = dist.get_world_size()
    for p in model.parameters():
        # nothing to average where the gradient is all zeros: save the communication
        if p.grad is not None and bool(p.grad.any()):
            dist.all_reduce(p.grad)
            p.grad /= world_size
""",
        ),
        Wrong(
            (
                "Sets the model to eval mode while averaging, then back with model.train(was_training): "
                "train(True) also switches on a submodule its owner had left in eval mode."
            ),
            hint="or of one of its modules",
            code="""\
def average_gradients(model):
    was_training = model.training
    model.eval()
    world_size = dist.get_world_size()
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)
            p.grad /= world_size
    model.train(was_training)
""",
        ),
        Wrong(
            (
                "All-reduces a float32 copy of a bfloat16 or half gradient and assigns it to .grad: a .grad "
                "cannot take another dtype than its parameter's, so a bfloat16 model raises."
            ),
            hint="a bfloat16 model",
            code="""\
def average_gradients(model):
    world_size = dist.get_world_size()
    for p in model.parameters():
        if p.grad is not None:
            wide = p.grad if p.grad.dtype == torch.float64 else p.grad.float()
            dist.all_reduce(wide)
            p.grad = wide / world_size
""",
        ),
    ]
)


# An eighth red team's wrong answer.
TASK.wrong.extend(
    [
        Wrong(
            (
                "Skips a parameter whose requires_grad is False even where it holds a .grad (frozen after the "
                "backward): its gradient stays different on every rank."
            ),
            hint="a bias frozen after the backward",
            code="""\
def average_gradients(model):
    world_size = dist.get_world_size()
    for parameter in model.parameters():
        if parameter.requires_grad and parameter.grad is not None:
            dist.all_reduce(parameter.grad)
            parameter.grad /= world_size
""",
        ),
    ]
)


# A ninth red team's wrong answers: inputs outside the easy corner, state across calls, ops by another name.
TASK.wrong.extend(
    [
        Wrong(
            (
                "One flat buffer in the first gradient's dtype: on a model with a float32 layer and a float64 "
                "layer, the float64 gradients are averaged in float32 and lose their precision."
            ),
            hint="layers have different dtypes",
            code="""\
def average_gradients(model):
    world_size = dist.get_world_size()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    if not grads:
        return
    flat = torch.empty(sum(g.numel() for g in grads), dtype=grads[0].dtype)
    offset = 0
    for g in grads:
        flat[offset : offset + g.numel()].copy_(g.reshape(-1))
        offset += g.numel()
    dist.all_reduce(flat)
    flat /= world_size
    offset = 0
    for g in grads:
        g.copy_(flat[offset : offset + g.numel()].view_as(g))
        offset += g.numel()
""",
        ),
        Wrong(
            (
                "Divides with p.grad[:] = ...: a 0-d parameter (a learnable scale) has no dim to slice, and the "
                "call raises IndexError."
            ),
            hint="0-d parameter",
            code="""\
def average_gradients(model):
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)
            p.grad[:] = p.grad / dist.get_world_size()
""",
        ),
        Wrong(
            (
                "Keeps the .grad tensors of the first call (a bucket built once per model): after "
                "model.zero_grad() the next backward makes new .grad tensors, and the second step's gradients are "
                "never averaged."
            ),
            hint="second step",
            code="""\
_buckets = {}


def average_gradients(model):
    if id(model) not in _buckets:  # the bucket, built once (the model kept, so its id stays its own)
        _buckets[id(model)] = (model, [p.grad for p in model.parameters() if p.grad is not None])
    for g in _buckets[id(model)][1]:
        dist.all_reduce(g)
        g /= dist.get_world_size()
""",
        ),
    ]
)
