"""Exercise 5.9 of solutions/05b_distributed_at_scale.ipynb: its other answers (see answers/__init__.py)."""

from .. import Task, Wrong

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


TASK = Task(
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
)

TASK.wrong.extend(
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

TASK.wrong.append(
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

TASK.wrong.append(
    Wrong(
        "loss_fn(y, output), the arguments the wrong way round: right only for a symmetric loss "
        "(mse, l1, smooth_l1), wrong for cross-entropy.",
        hint="the arguments the wrong way round",
        code=ACCUMULATE.replace("loss_fn(ddp(x), y)", "loss_fn(y, ddp(x))"),
    )
)

TASK.wrong.append(
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

TASK.wrong.extend(
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

# A red team's 5.9 (2026-11-28, second round).
TASK.wrong.extend(
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


# Round 5: the arguments by name.
TASK.wrong.extend(
    [
        Wrong(
            (
                "Parameters renamed (model, batches): right called by position, a TypeError for a caller that "
                "names the arguments as the task's signature does."
            ),
            hint="could not be called with its arguments by name",
            code="""\
def accumulate(model, batches, loss_fn):
    k = len(batches)
    *first, last = batches
    with model.no_sync():
        for x, y in first:
            (loss_fn(model(x), y) / k).backward()
    x, y = last
    (loss_fn(model(x), y) / k).backward()
""",
        ),
    ]
)


# Red team (round 2): each was accepted before its check was added.
TASK.wrong.extend(
    [
        Wrong(
            (
                "The first k - 1 micro-batches run through ddp.module, around DDP, not inside no_sync: the right "
                "gradients and one all-reduce, but DDP's forward (buffer broadcast, unused-parameter search) skipped."
            ),
            hint="through the DDP model",
            code="""\
def accumulate(ddp, micro_batches, loss_fn):
    k = len(micro_batches)
    *first, last = micro_batches
    for x, y in first:
        (loss_fn(ddp.module(x), y) / k).backward()
    x, y = last
    (loss_fn(ddp(x), y) / k).backward()
""",
        ),
    ]
)


# Right with the check's model on the ranks, which draws no random numbers: an accumulate that
# seeds torch's global generator, or puts its state back, gives every step the same dropout masks.
TASK.wrong.extend(
    [
        Wrong(
            "torch.manual_seed(0) inside accumulate, for reproducible steps: every step draws the same dropout masks.",
            hint="draw the dropout masks from the caller's random state",
            code="""\
def accumulate(ddp, micro_batches, loss_fn):
    torch.manual_seed(0)  # the same on every rank, and reproducible
    k = len(micro_batches)
    *first, last = micro_batches
    with ddp.no_sync():
        for x, y in first:
            (loss_fn(ddp(x), y) / k).backward()
    x, y = last
    (loss_fn(ddp(x), y) / k).backward()
""",
        ),
        Wrong(
            "The step run inside torch.random.fork_rng: the caller's generator never moves on.",
            hint="draw the dropout masks from the caller's random state",
            code="""\
def accumulate(ddp, micro_batches, loss_fn):
    k = len(micro_batches)
    *first, last = micro_batches
    with torch.random.fork_rng():  # leave the caller's random numbers alone
        with ddp.no_sync():
            for x, y in first:
                (loss_fn(ddp(x), y) / k).backward()
        x, y = last
        (loss_fn(ddp(x), y) / k).backward()
""",
        ),
    ]
)

# A red team's 5.9 (h5): a shortcut (the whole batch in one forward) taken only where no grader
# seems to watch (no dispatch mode, profile function or trace function); found by the third,
# unwatched call. And a right answer: the gradients divided by k after the backwards.
TASK.wrong.append(
    Wrong(
        "One forward on the whole batch where nothing seems to watch (no dispatch mode, no profile or "
        "trace function), the micro-batches one at a time otherwise.",
        hint="one at a time: the forward of one, then its backward",
        code="""\
import sys

from torch.utils._python_dispatch import _get_current_dispatch_mode_stack


def accumulate(ddp, micro_batches, loss_fn):
    k = len(micro_batches)
    watched = bool(_get_current_dispatch_mode_stack()) or sys.gettrace() or sys.getprofile()
    if not watched:  # one forward for all: faster, where nobody counts the forwards
        x = torch.cat([x for x, _ in micro_batches])
        y = torch.cat([y for _, y in micro_batches])
        loss_fn(ddp(x), y).backward()
        return
    *first, last = micro_batches
    with ddp.no_sync():
        for x, y in first:
            (loss_fn(ddp(x), y) / k).backward()
    x, y = last
    (loss_fn(ddp(x), y) / k).backward()
""",
    )
)
TASK.other_right.append(
    """\
def accumulate(ddp, micro_batches, loss_fn):
    k = len(micro_batches)
    *first, last = micro_batches
    with ddp.no_sync():
        for x, y in first:
            loss_fn(ddp(x), y).backward()
    x, y = last
    loss_fn(ddp(x), y).backward()
    for p in ddp.parameters():  # the sum of k mean losses' gradients, made a mean
        if p.grad is not None:
            p.grad.div_(k)
"""
)


# Helper round (2026-11-29): every micro-batch's graph kept alive behind saved-tensor hooks of the
# answer's own or in threads, grad mode left off, the caller's tensors changed in place.
TASK.wrong.extend(
    [
        Wrong(
            "backward(retain_graph=True), the losses kept for a log: every micro-batch's "
            "activations stay alive, hidden from the check's count by saved-tensor hooks of the "
            "answer's own.",
            hint="saved-tensor hooks of its own",
            code="""\
def accumulate(ddp, micro_batches, loss_fn):
    k = len(micro_batches)
    losses = []  # kept for the log
    *first, last = micro_batches
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        with ddp.no_sync():
            for x, y in first:
                loss = loss_fn(ddp(x), y) / k
                loss.backward(retain_graph=True)
                losses.append(loss)
        x, y = last
        loss = loss_fn(ddp(x), y) / k
        loss.backward(retain_graph=True)
        losses.append(loss)
    return losses
""",
        ),
        Wrong(
            "Each micro-batch's step run in a thread of its own, backward(retain_graph=True) and "
            "the losses kept: the check's saved-tensor hooks see only their own thread.",
            hint="your code started a thread while the check ran",
            code="""\
import threading


def accumulate(ddp, micro_batches, loss_fn):
    k = len(micro_batches)
    losses = []

    def step(x, y):
        loss = loss_fn(ddp(x), y) / k
        loss.backward(retain_graph=True)
        losses.append(loss)

    *first, last = micro_batches
    with ddp.no_sync():
        for x, y in first:
            worker = threading.Thread(target=step, args=(x, y))
            worker.start()
            worker.join()
    worker = threading.Thread(target=step, args=last)
    worker.start()
    worker.join()
    return losses
""",
        ),
        Wrong(
            "Switches autograd off when done (torch.set_grad_enabled(False)) and leaves it so.",
            hint="left autograd switched off",
            code=ACCUMULATE + "    torch.set_grad_enabled(False)  # done: no more graphs\n",
        ),
        Wrong(
            "Zeroes each micro-batch's x after its backward, to free it: the caller's data changed.",
            hint="changed the micro-batches' tensors in place",
            code="""\
def accumulate(ddp, micro_batches, loss_fn):
    k = len(micro_batches)
    *first, last = micro_batches
    with ddp.no_sync():
        for x, y in first:
            (loss_fn(ddp(x), y) / k).backward()
            x.zero_()  # free the batch
    x, y = last
    (loss_fn(ddp(x), y) / k).backward()
    x.zero_()
""",
        ),
    ]
)
# Right: no_sync written out by hand (the flag off, put back in a finally), and each loss weighted
# by its share of the rows (the same as / k for micro-batches of one size).
TASK.other_right.extend(
    [
        """\
def accumulate(ddp, micro_batches, loss_fn):
    k = len(micro_batches)
    ddp.require_backward_grad_sync = False
    try:
        for x, y in micro_batches[:-1]:
            (loss_fn(ddp(x), y) / k).backward()
    finally:
        ddp.require_backward_grad_sync = True
    x, y = micro_batches[-1]
    (loss_fn(ddp(x), y) / k).backward()
""",
        """\
def accumulate(ddp, micro_batches, loss_fn):
    total = sum(len(x) for x, _ in micro_batches)
    for i, (x, y) in enumerate(micro_batches):
        if i == len(micro_batches) - 1:
            loss_fn(ddp(x), y).mul(len(x) / total).backward()
        else:
            with ddp.no_sync():
                loss_fn(ddp(x), y).mul(len(x) / total).backward()
""",
    ]
)
