"""Exercise 2.3 of solutions/02_autograd.ipynb: its other answers (see answers/__init__.py)."""

from .. import Task, Wrong

# 2.3's right loop (zero_grad once per step, each micro-batch weighted by its share of the
# batch). Its first wrong answer calls the given buggy loop; the others change one thing in
# this one, or (the whole batch at once) keep only its start.
TRAIN_STEP_START = """\
def train(model, xs, ys, micro_batch=2, steps=10, lr=0.1):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
"""

MICRO_BATCH_TRAIN = (
    TRAIN_STEP_START
    + """\
        step_loss = 0.0
        for xb, yb in zip(xs.split(micro_batch), ys.split(micro_batch)):
            loss = ((model(xb) - yb) ** 2).mean() * len(xb) / len(xs)
            loss.backward()
            step_loss += loss.item()
        opt.step()
        losses.append(step_loss)
    return losses
"""
)

NO_ZERO_GRAD = MICRO_BATCH_TRAIN.replace("        opt.zero_grad()\n", "")

# zero_grad after each step instead of before: the first step adds to whatever .grad held.
ZERO_GRAD_AFTER_THE_STEP = NO_ZERO_GRAD.replace("        opt.step()\n", "        opt.step()\n        opt.zero_grad()\n")

WHOLE_BATCH_AT_ONCE = (
    TRAIN_STEP_START
    + """\
        loss = ((model(xs) - ys) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses
"""
)

EQUAL_WEIGHTS = MICRO_BATCH_TRAIN.replace(
    """\
        step_loss = 0.0
        for xb, yb in zip(xs.split(micro_batch), ys.split(micro_batch)):
            loss = ((model(xb) - yb) ** 2).mean() * len(xb) / len(xs)
""",
    """\
        pieces = list(zip(xs.split(micro_batch), ys.split(micro_batch)))
        step_loss = 0.0
        for xb, yb in pieces:
            loss = ((model(xb) - yb) ** 2).mean() / len(pieces)
""",
)


TASK = Task(
    alternative="""\
def train(model, xs, ys, micro_batch=2, steps=10, lr=0.1):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        for p in model.parameters():
            p.grad = None
        total = 0.0
        for start in range(0, len(xs), micro_batch):
            xb, yb = xs[start:start + micro_batch], ys[start:start + micro_batch]
            part = torch.nn.functional.mse_loss(model(xb), yb, reduction="sum") / ys.numel()
            part.backward()
            total += part.item()
        opt.step()
        losses.append(total)
    return losses
""",
    wrong=[
        Wrong(
            "Every micro-batch's forward first, under saved_tensors_hooks of its own that "
            "keep the check's count of saved activations from seeing them, then the "
            "backward passes: all the micro-batches' activations held at once.",
            hint="saved_tensors_hooks of its own",
            code=TRAIN_STEP_START
            + """\
        with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            parts = [
                ((model(xb) - yb) ** 2).mean() * len(xb) / len(xs)
                for xb, yb in zip(xs.split(micro_batch), ys.split(micro_batch))
            ]
        for loss in parts:
            loss.backward()
        opt.step()
        losses.append(sum(loss.item() for loss in parts))
    return losses
""",
        ),
        Wrong(
            "The buggy loop as given: zero_grad between micro-batches.",
            hint="once per step",
            code="""\
def train(model, xs, ys, micro_batch=2, steps=10, lr=0.1):
    return train_buggy(model, xs, ys, micro_batch, steps, lr)
""",
        ),
        Wrong(
            "No zero_grad at all: gradients pile up across steps.",
            hint="once per step",
            code=NO_ZERO_GRAD,
        ),
        Wrong(
            "zero_grad after each step: the first step uses the gradients the model came with.",
            hint="came with old gradients",
            code=ZERO_GRAD_AFTER_THE_STEP,
        ),
        Wrong(
            "The whole batch at once: right numbers, but not in micro-batches.",
            hint="micro-batches of",
            code=WHOLE_BATCH_AT_ONCE,
        ),
        # Right when the micro-batches are equal, wrong when the last one is smaller.
        Wrong(
            "Each micro-batch weighted by 1 / (number of micro-batches).",
            hint="len(xb) / len(xs)",
            code=EQUAL_WEIGHTS,
        ),
        # Right gradients; the loss reported as the plain mean of the micro-batches' means.
        Wrong(
            "The returned loss averages the micro-batches' means: right only when they are equal.",
            hint="where the whole batch's losses are",
            code=MICRO_BATCH_TRAIN.replace(
                "            step_loss += loss.item()\n",
                "            step_loss += ((model(xb) - yb) ** 2).mean().item() * micro_batch / len(xs)\n",
            ),
        ),
        Wrong(
            "The last, shorter micro-batch dropped: its examples never count.",
            hint="the last one has 1 example",
            code=MICRO_BATCH_TRAIN.replace(
                "        for xb, yb in zip(xs.split(micro_batch), ys.split(micro_batch)):\n",
                """\
        whole = len(xs) // micro_batch * micro_batch
        for xb, yb in zip(xs[:whole].split(micro_batch), ys[:whole].split(micro_batch)):
""",
            ).replace("* len(xb) / len(xs)", "* len(xb) / whole"),
        ),
        Wrong(
            "Micro-batches of 2 whatever micro_batch is.",
            hint="Split by the micro_batch argument",
            code=MICRO_BATCH_TRAIN.replace("xs.split(micro_batch), ys.split(micro_batch)", "xs.split(2), ys.split(2)"),
        ),
        Wrong(
            "Always 4 micro-batches (chunk(4)), whatever micro_batch is.",
            hint="Split by the micro_batch argument",
            code=MICRO_BATCH_TRAIN.replace("xs.split(micro_batch), ys.split(micro_batch)", "xs.chunk(4), ys.chunk(4)"),
        ),
        # Right for one output: the sum over a micro-batch's elements / len(xs) is the mean only then.
        Wrong(
            "Squared errors summed and divided by len(xs): twice the mean for 2 outputs.",
            hint="model with 2 outputs",
            code=MICRO_BATCH_TRAIN.replace(
                "((model(xb) - yb) ** 2).mean() * len(xb) / len(xs)", "((model(xb) - yb) ** 2).sum() / len(xs)"
            ),
        ),
        Wrong(
            "The whole batch through model.forward (no hooks), backward in slices of micro_batch.",
            hint="examples at once",
            code=TRAIN_STEP_START
            + """\
        sq = (model.forward(xs) - ys) ** 2
        step_loss = 0.0
        for part in sq.split(micro_batch):
            loss = part.mean() * len(part) / len(xs)
            loss.backward(retain_graph=True)
            step_loss += loss.item()
        opt.step()
        losses.append(step_loss)
    return losses
""",
        ),
        Wrong(
            "model.eval() first: the model is left in eval mode.",
            hint="left the model in eval mode",
            code=MICRO_BATCH_TRAIN.replace(
                "    opt = torch.optim.SGD(", "    model.eval()\n    opt = torch.optim.SGD("
            ),
        ),
        Wrong(
            "The squares summed and divided by len(xs) * ys.shape[-1]: not the mean for 3-D outputs.",
            hint="whatever the shape",
            code="""\
def train(model, xs, ys, micro_batch=2, steps=10, lr=0.1):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        step_loss = 0.0
        for xb, yb in zip(xs.split(micro_batch), ys.split(micro_batch)):
            loss = ((model(xb) - yb) ** 2).sum() / (len(xs) * ys.shape[-1])
            loss.backward()
            step_loss += loss.item()
        opt.step()
        losses.append(step_loss)
    return losses
""",
        ),
        Wrong(
            "Every micro-batch's forward run first, then their backward passes: all the graphs kept at once.",
            hint="kept the graphs of",
            code="""\
def train(model, xs, ys, micro_batch=2, steps=10, lr=0.1):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        pieces = [((model(xb) - yb) ** 2).mean() * len(xb) / len(xs)
                  for xb, yb in zip(xs.split(micro_batch), ys.split(micro_batch))]
        for loss in pieces:
            loss.backward()
        opt.step()
        losses.append(sum(l.item() for l in pieces))
    return losses
""",
        ),
        Wrong(
            "Gradients zeroed with p.grad.zero_(): a fresh model has no .grad yet (AttributeError).",
            hint="fresh float64 model",
            code="""\
def train(model, xs, ys, micro_batch=2, steps=10, lr=0.1):
    losses = []
    for _ in range(steps):
        for p in model.parameters():
            p.grad.zero_()
        step_loss = 0.0
        for xb, yb in zip(xs.split(micro_batch), ys.split(micro_batch)):
            loss = ((model(xb) - yb) ** 2).mean() * len(xb) / len(xs)
            loss.backward()
            step_loss += loss.item()
        with torch.no_grad():
            for p in model.parameters():
                p -= lr * p.grad
        losses.append(step_loss)
    return losses
""",
        ),
        Wrong(
            "Micro-batches cast to float32: a float64 model fails.",
            hint="fresh float64 model",
            code="""\
def train(model, xs, ys, micro_batch=2, steps=10, lr=0.1):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        step_loss = 0.0
        for xb, yb in zip(xs.split(micro_batch), ys.split(micro_batch)):
            xb, yb = xb.float(), yb.float()
            loss = ((model(xb) - yb) ** 2).mean() * len(xb) / len(xs)
            loss.backward()
            step_loss += loss.item()
        opt.step()
        losses.append(step_loss)
    return losses
""",
        ),
        Wrong(
            "A hand-written update p -= lr * p.grad for every parameter: a frozen one has no .grad (TypeError).",
            hint="fresh float64 model",
            code="""\
def train(model, xs, ys, micro_batch=2, steps=10, lr=0.1):
    losses = []
    for _ in range(steps):
        model.zero_grad()
        step_loss = 0.0
        for xb, yb in zip(xs.split(micro_batch), ys.split(micro_batch)):
            loss = ((model(xb) - yb) ** 2).mean() * len(xb) / len(xs)
            loss.backward()
            step_loss += loss.item()
        with torch.no_grad():
            for p in model.parameters():
                p -= lr * p.grad
        losses.append(step_loss)
    return losses
""",
        ),
        Wrong(
            "A small weight decay in the optimizer: not plain SGD.",
            hint="fresh float64 model",
            code="""\
def train(model, xs, ys, micro_batch=2, steps=10, lr=0.1):
    opt = torch.optim.SGD(model.parameters(), lr=lr, weight_decay=1e-6)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        step_loss = 0.0
        for xb, yb in zip(xs.split(micro_batch), ys.split(micro_batch)):
            loss = ((model(xb) - yb) ** 2).mean() * len(xb) / len(xs)
            loss.backward()
            step_loss += loss.item()
        opt.step()
        losses.append(step_loss)
    return losses
""",
        ),
        Wrong(
            "backward(retain_graph=True): each micro-batch's graph kept through the next one's forward.",
            hint="kept the graphs of",
            code=MICRO_BATCH_TRAIN.replace("loss.backward()", "loss.backward(retain_graph=True)"),
        ),
    ],
)


# Red team: frozen parameters with old gradients, and the model's own modes.
TASK.wrong.extend(
    [
        Wrong(
            (
                "Clears only the .grad of parameters that require grad: a frozen parameter with an old .grad is "
                "moved by SGD."
            ),
            hint="that came with an old .grad: SGD steps every parameter",
            code="""\
def train(model, xs, ys, micro_batch=2, steps=10, lr=0.1):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        for p in model.parameters():  # clear the gradients of what we train
            if p.requires_grad:
                p.grad = None
        step_loss = 0.0
        for xb, yb in zip(xs.split(micro_batch), ys.split(micro_batch)):
            loss = ((model(xb) - yb) ** 2).mean() * len(xb) / len(xs)
            loss.backward()
            step_loss += loss.item()
        opt.step()
        losses.append(step_loss)
    return losses
""",
        ),
        Wrong(
            ("Runs the forward passes in eval mode (put back after): dropout off while training."),
            hint="with its Dropout in eval mode",
            code="""\
def train(model, xs, ys, micro_batch=2, steps=10, lr=0.1):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    model.eval()  # deterministic forward passes while accumulating
    try:
        for _ in range(steps):
            opt.zero_grad()
            step_loss = 0.0
            for xb, yb in zip(xs.split(micro_batch), ys.split(micro_batch)):
                loss = ((model(xb) - yb) ** 2).mean() * len(xb) / len(xs)
                loss.backward()
                step_loss += loss.item()
            opt.step()
            losses.append(step_loss)
    finally:
        model.train()
    return losses
""",
        ),
        Wrong(
            ("model.train() at the start: a frozen (eval-mode) BatchNorm is switched to training mode."),
            hint="a BatchNorm the caller had frozen",
            code="""\
def train(model, xs, ys, micro_batch=2, steps=10, lr=0.1):
    model.train()  # make sure we are in training mode
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        step_loss = 0.0
        for xb, yb in zip(xs.split(micro_batch), ys.split(micro_batch)):
            loss = ((model(xb) - yb) ** 2).mean() * len(xb) / len(xs)
            loss.backward()
            step_loss += loss.item()
        opt.step()
        losses.append(step_loss)
    return losses
""",
        ),
    ]
)


# Red team (round 2): each was accepted before its check was added.
TASK.wrong.extend(
    [
        Wrong(
            (
                "The optimizer kept per model (by id(model)) from the first call: a second call with another lr steps"
                " with the first call's lr."
            ),
            hint="called a second time on the same model",
            code="""\
_optimizers = {}


def train(model, xs, ys, micro_batch=2, steps=10, lr=0.1):
    opt = _optimizers.get(id(model))
    if opt is None or opt.param_groups[0]["params"][0] is not next(model.parameters()):
        opt = _optimizers[id(model)] = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        step_loss = 0.0
        for xb, yb in zip(xs.split(micro_batch), ys.split(micro_batch)):
            loss = ((model(xb) - yb) ** 2).mean() * len(xb) / len(xs)
            loss.backward()
            step_loss += loss.item()
        opt.step()
        losses.append(step_loss)
    return losses
""",
        ),
    ]
)


# Right with the check's models, which draw no random numbers: a train that seeds torch's global
# generator, or puts its state back, gives every call the same dropout masks.
TASK.wrong.extend(
    [
        Wrong(
            "torch.manual_seed(0) inside train, for reproducible runs: every call draws the same dropout masks.",
            hint="draw the dropout masks from the caller's random state",
            code="""\
def train(model, xs, ys, micro_batch=2, steps=10, lr=0.1):
    torch.manual_seed(0)  # reproducible runs
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        step_loss = 0.0
        for xb, yb in zip(xs.split(micro_batch), ys.split(micro_batch)):
            loss = ((model(xb) - yb) ** 2).mean() * len(xb) / len(xs)
            loss.backward()
            step_loss += loss.item()
        opt.step()
        losses.append(step_loss)
    return losses
""",
        ),
        Wrong(
            "torch's random state saved and put back around the training: the caller's generator never moves on.",
            hint="draw the dropout masks from the caller's random state",
            code="""\
def train(model, xs, ys, micro_batch=2, steps=10, lr=0.1):
    with torch.random.fork_rng():  # leave the caller's random numbers alone
        opt = torch.optim.SGD(model.parameters(), lr=lr)
        losses = []
        for _ in range(steps):
            opt.zero_grad()
            step_loss = 0.0
            for xb, yb in zip(xs.split(micro_batch), ys.split(micro_batch)):
                loss = ((model(xb) - yb) ** 2).mean() * len(xb) / len(xs)
                loss.backward()
                step_loss += loss.item()
            opt.step()
            losses.append(step_loss)
    return losses
""",
        ),
    ]
)


# Red team (round 3): accepted before its check was added. Every check called train with all three
# of micro_batch, steps and lr by name: the signature's defaults and its order went untried.
TASK.wrong.extend(
    [
        Wrong(
            "Default lr 0.01 instead of the signature's 0.1: a call without lr takes ten times smaller steps.",
            hint="Called with its defaults, train(model, xs, ys)",
            code=MICRO_BATCH_TRAIN.replace("lr=0.1):", "lr=0.01):"),
        ),
        Wrong(
            "steps before micro_batch in the signature: a call by position in the task's order takes "
            "micro_batch steps in micro-batches of steps examples.",
            hint="Called by position, train(model, xs, ys, 3, 2, 0.05)",
            code=MICRO_BATCH_TRAIN.replace("micro_batch=2, steps=10, lr=0.1):", "steps=10, micro_batch=2, lr=0.1):"),
        ),
    ]
)


# Red team (round 4): hostile answers to the checks hardened in round 3; each that passed is marked so.
# other_right: steps=None put to 10 inside (the same defaults, written otherwise).
TASK.wrong.extend(
    [
        Wrong(
            "micro_batch, steps and lr keyword-only (*,): a call by position raises.",
            hint="Called by position",
            code="""\
def train(model, xs, ys, *, micro_batch=2, steps=10, lr=0.1):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        step_loss = 0.0
        for xb, yb in zip(xs.split(micro_batch), ys.split(micro_batch)):
            loss = ((model(xb) - yb) ** 2).mean() * len(xb) / len(xs)
            loss.backward()
            step_loss += loss.item()
        opt.step()
        losses.append(step_loss)
    return losses
""",
        ),
        Wrong(
            "micro_batch=None meaning the whole batch: same losses, but not in micro-batches.",
            hint="Called with its defaults",
            code="""\
def train(model, xs, ys, micro_batch=None, steps=10, lr=0.1):
    micro_batch = micro_batch or len(xs)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        step_loss = 0.0
        for xb, yb in zip(xs.split(micro_batch), ys.split(micro_batch)):
            loss = ((model(xb) - yb) ** 2).mean() * len(xb) / len(xs)
            loss.backward()
            step_loss += loss.item()
        opt.step()
        losses.append(step_loss)
    return losses
""",
        ),
        Wrong(
            "Default micro_batch=4.",
            hint="Called with its defaults",
            code="""\
def train(model, xs, ys, micro_batch=4, steps=10, lr=0.1):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        step_loss = 0.0
        for xb, yb in zip(xs.split(micro_batch), ys.split(micro_batch)):
            loss = ((model(xb) - yb) ** 2).mean() * len(xb) / len(xs)
            loss.backward()
            step_loss += loss.item()
        opt.step()
        losses.append(step_loss)
    return losses
""",
        ),
        Wrong(
            "lr before steps in the signature.",
            hint="Called by position",
            code="""\
def train(model, xs, ys, micro_batch=2, lr=0.1, steps=10):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        step_loss = 0.0
        for xb, yb in zip(xs.split(micro_batch), ys.split(micro_batch)):
            loss = ((model(xb) - yb) ** 2).mean() * len(xb) / len(xs)
            loss.backward()
            step_loss += loss.item()
        opt.step()
        losses.append(step_loss)
    return losses
""",
        ),
        Wrong(
            "torch.use_deterministic_algorithms(True) inside train, left on. Passed before.",
            hint="deterministic algorithms (torch.use_deterministic_algorithms)",
            code="""\
def train(model, xs, ys, micro_batch=2, steps=10, lr=0.1):
    torch.use_deterministic_algorithms(True)  # reproducible accumulation
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        step_loss = 0.0
        for xb, yb in zip(xs.split(micro_batch), ys.split(micro_batch)):
            loss = ((model(xb) - yb) ** 2).mean() * len(xb) / len(xs)
            loss.backward()
            step_loss += loss.item()
        opt.step()
        losses.append(step_loss)
    return losses
""",
        ),
        Wrong(
            "torch.set_num_threads(...) inside train (one thread more), left so. Passed before.",
            hint="the number of threads",
            code="""\
def train(model, xs, ys, micro_batch=2, steps=10, lr=0.1):
    torch.set_num_threads(torch.get_num_threads() + 1)  # one more thread for the micro-batches
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        step_loss = 0.0
        for xb, yb in zip(xs.split(micro_batch), ys.split(micro_batch)):
            loss = ((model(xb) - yb) ** 2).mean() * len(xb) / len(xs)
            loss.backward()
            step_loss += loss.item()
        opt.step()
        losses.append(step_loss)
    return losses
""",
        ),
        Wrong(
            "xs.requires_grad_(True): the caller's data changed. Passed before.",
            hint="train changed xs or ys",
            code="""\
def train(model, xs, ys, micro_batch=2, steps=10, lr=0.1):
    xs.requires_grad_(True)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        step_loss = 0.0
        for xb, yb in zip(xs.split(micro_batch), ys.split(micro_batch)):
            loss = ((model(xb) - yb) ** 2).mean() * len(xb) / len(xs)
            loss.backward()
            step_loss += loss.item()
        opt.step()
        losses.append(step_loss)
    return losses
""",
        ),
        Wrong(
            "lr=None put to 0.01 inside.",
            hint="Called with its defaults",
            code="""\
def train(model, xs, ys, micro_batch=2, steps=10, lr=None):
    lr = lr or 1e-2
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        step_loss = 0.0
        for xb, yb in zip(xs.split(micro_batch), ys.split(micro_batch)):
            loss = ((model(xb) - yb) ** 2).mean() * len(xb) / len(xs)
            loss.backward()
            step_loss += loss.item()
        opt.step()
        losses.append(step_loss)
    return losses
""",
        ),
    ]
)
TASK.other_right.append(
    """\
def train(model, xs, ys, micro_batch=2, steps=None, lr=0.1):
    steps = 10 if steps is None else steps
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        step_loss = 0.0
        for xb, yb in zip(xs.split(micro_batch), ys.split(micro_batch)):
            loss = ((model(xb) - yb) ** 2).mean() * len(xb) / len(xs)
            loss.backward()
            step_loss += loss.item()
        opt.step()
        losses.append(step_loss)
    return losses
"""
)
