"""Exercise 3.7 of solutions/03b_training.ipynb: its other answers (see answers/__init__.py)."""

from .. import Task, Wrong

# The whole batch in one forward pass (model.forward skips the model's hooks), with a backward of
# nothing per micro-batch for the count: all the activations at once, what accumulation avoids.
WHOLE_BATCH_BEHIND_MODEL_FORWARD = """\
def accumulate(model, micro_batches):
    model.zero_grad()
    *first, last = micro_batches
    for idx, targets in first:
        (model(idx, targets) * 0).backward()
    idx = torch.cat([i for i, _ in micro_batches])
    targets = torch.cat([t for _, t in micro_batches])
    (model(*last) * 0 + model.forward(idx, targets)).backward()
"""

RNG_PUT_BACK_3_7 = """\
def accumulate(model, micro_batches):
    rng = torch.get_rng_state()  # leave the random state as I found it
    model.zero_grad()
    total = sum(int((t != PAD).sum()) for _, t in micro_batches)
    for idx, targets in micro_batches:
        share = int((targets != PAD).sum()) / total
        (model(idx, targets) * share).backward()
    torch.set_rng_state(rng)
"""

HOOK_LEFT_ON_THE_MODEL_3_7 = """\
def accumulate(model, micro_batches):
    if not hasattr(model, "_acc_hook"):
        model._acc_share = 1.0
        model._acc_hook = model.register_forward_hook(lambda m, args, out: out * m._acc_share)
    model.zero_grad()
    total = sum(int((t != PAD).sum()) for _, t in micro_batches)
    for idx, targets in micro_batches:
        model._acc_share = int((targets != PAD).sum()) / total
        model(idx, targets).backward()
"""

FROZEN_GET_ZEROS_3_7 = """\
def accumulate(model, micro_batches):
    for p in model.parameters():
        p.grad = torch.zeros_like(p)  # a clean slate to accumulate into
    total = sum(int((t != PAD).sum()) for _, t in micro_batches)
    for idx, targets in micro_batches:
        share = int((targets != PAD).sum()) / total
        (model(idx, targets) * share).backward()
"""

GRAPHS_KEPT_3_7 = """\
LOSS_LOG = []


def accumulate(model, micro_batches):
    model.zero_grad()
    total = sum(int((t != PAD).sum()) for _, t in micro_batches)
    for idx, targets in micro_batches:
        loss = model(idx, targets) * (int((targets != PAD).sum()) / total)
        loss.backward(retain_graph=True)
        LOSS_LOG.append(loss)  # for plotting later
"""


TASK = Task(
    alternative="""\
def accumulate(model, micro_batches):
    for p in model.parameters():
        p.grad = None
    counts = [(t != PAD).sum() for _, t in micro_batches]
    total = torch.stack(counts).sum()
    for (idx, targets), count in zip(micro_batches, counts):
        loss = model(idx, targets)
        loss.mul(count / total).backward()
""",
    wrong=[
        Wrong(
            "Each micro-batch's loss divided by the number of micro-batches.",
            hint="divided each micro-batch's loss by the number of micro-batches",
            code="""\
def accumulate(model, micro_batches):
    model.zero_grad()
    for idx, targets in micro_batches:
        (model(idx, targets) / len(micro_batches)).backward()
""",
        ),
        Wrong(
            "Weighted by the share of sequences (chapter 02's rule), not of real tokens.",
            hint="share of the sequences",
            code="""\
def accumulate(model, micro_batches):
    model.zero_grad()
    total = sum(len(t) for _, t in micro_batches)
    for idx, targets in micro_batches:
        (model(idx, targets) * len(targets) / total).backward()
""",
        ),
        Wrong(
            "The micro-batches concatenated into one forward pass.",
            hint="never concatenate",
            code="""\
def accumulate(model, micro_batches):
    model.zero_grad()
    idx = torch.cat([i for i, _ in micro_batches])
    targets = torch.cat([t for _, t in micro_batches])
    model(idx, targets).backward()
""",
        ),
        Wrong(
            "Old gradients not cleared first.",
            hint="old gradients",
            code="""\
def accumulate(model, micro_batches):
    total = sum(int((t != PAD).sum()) for _, t in micro_batches)
    for idx, targets in micro_batches:
        (model(idx, targets) * int((targets != PAD).sum()) / total).backward()
""",
        ),
        Wrong(
            "One backward on the summed losses: every micro-batch's graph kept until the end.",
            hint="backward() once per micro-batch",
            code="""\
def accumulate(model, micro_batches):
    model.zero_grad()
    total = sum(int((t != PAD).sum()) for _, t in micro_batches)
    loss = sum(model(idx, targets) * int((targets != PAD).sum()) / total for idx, targets in micro_batches)
    loss.backward()
""",
        ),
        Wrong(
            "The whole batch in one model.forward, with empty backward passes per micro-batch.",
            hint="never concatenate",
            code=WHOLE_BATCH_BEHIND_MODEL_FORWARD,
        ),
        Wrong(
            "Every forward first, then one backward per loss: every micro-batch's activations held at once.",
            hint="right after its own forward",
            code="""\
def accumulate(model, micro_batches):
    model.zero_grad()
    total = sum(int((t != PAD).sum()) for _, t in micro_batches)
    losses = [model(idx, targets) * (int((targets != PAD).sum()) / total) for idx, targets in micro_batches]
    for loss in losses:
        loss.backward()
""",
        ),
        Wrong(
            "Old gradients cleared with p.grad.zero_(): fails on a fresh model, whose .grad are None.",
            hint="For a fresh model",
            code="""\
def accumulate(model, micro_batches):
    for p in model.parameters():
        p.grad.zero_()
    total = sum(int((t != PAD).sum()) for _, t in micro_batches)
    for idx, targets in micro_batches:
        share = int((targets != PAD).sum()) / total
        (model(idx, targets) * share).backward()
""",
        ),
        Wrong(
            "Losses weighted by token counts, every p.grad divided at the end: fails for a frozen parameter.",
            hint="embedding is frozen",
            code="""\
def accumulate(model, micro_batches):
    model.zero_grad()
    total = sum(int((t != PAD).sum()) for _, t in micro_batches)
    for idx, targets in micro_batches:
        share = int((targets != PAD).sum())
        (model(idx, targets) * share).backward()
    for p in model.parameters():
        p.grad /= total
""",
        ),
        Wrong(
            "The model put in eval mode and left there.",
            hint="left the model in eval mode",
            code="""\
def accumulate(model, micro_batches):
    model.eval()
    model.zero_grad()
    total = sum(int((t != PAD).sum()) for _, t in micro_batches)
    for idx, targets in micro_batches:
        share = int((targets != PAD).sum()) / total
        (model(idx, targets) * share).backward()
""",
        ),
        Wrong(
            "Runs in eval mode internally, restores train(was): dropout off, submodule modes flattened.",
            hint="without model.eval() or model.train() inside",
            code="""\
def accumulate(model, micro_batches):
    was = model.training
    model.eval()
    model.zero_grad()
    total = sum(int((t != PAD).sum()) for _, t in micro_batches)
    for idx, targets in micro_batches:
        share = int((targets != PAD).sum()) / total
        (model(idx, targets) * share).backward()
    model.train(was)
""",
        ),
        Wrong(
            "model.train() at the start: a model in eval mode trains with dropout on, and stays so.",
            hint="For a model with dropout in eval mode",
            code="""\
def accumulate(model, micro_batches):
    model.zero_grad()
    model.train()
    total = sum(int((t != PAD).sum()) for _, t in micro_batches)
    for idx, targets in micro_batches:
        share = int((targets != PAD).sum()) / total
        (model(idx, targets) * share).backward()
""",
        ),
        Wrong(
            "Only trainable parameters' old gradients cleared: one frozen after a backward keeps its old one.",
            hint="frozen after an earlier backward",
            code="""\
def accumulate(model, micro_batches):
    for p in model.parameters():
        if p.requires_grad:
            p.grad = None
    total = sum(int((t != PAD).sum()) for _, t in micro_batches)
    for idx, targets in micro_batches:
        share = int((targets != PAD).sum()) / total
        (model(idx, targets) * share).backward()
""",
        ),
        Wrong(
            "RNG state saved and restored around the passes: every step draws the same dropout masks",
            hint="random state",
            code=RNG_PUT_BACK_3_7,
        ),
        Wrong(
            "weights via a forward hook left on the model: later model(idx, targets) returns a scaled loss",
            hint="left something behind on the model",
            code=HOOK_LEFT_ON_THE_MODEL_3_7,
        ),
        Wrong(
            "every .grad set to zeros first: frozen parameters get a (zero) gradient, AdamW then decays them",
            hint="gave the frozen embedding a .grad",
            code=FROZEN_GET_ZEROS_3_7,
        ),
        Wrong(
            (
                "retain_graph=True and every micro-batch's loss kept in a global log: all graphs (activations) "
                "stay alive, growing every step"
            ),
            hint="graphs alive",
            code=GRAPHS_KEPT_3_7,
        ),
    ],
)

# Round 6 (rt6e): holes closed in 3.7, 3.8, 3.9 and 3.10.
TASK.wrong.append(
    Wrong(
        "Each micro-batch weighted by a tensor hook that is never removed: a second call on the same "
        "model scales every gradient again.",
        hint="Called a second time on the same model",
        code="""\
def accumulate(model, micro_batches):
    model.zero_grad()
    total = sum(int((t != PAD).sum()) for _, t in micro_batches)
    box = {}
    for p in model.parameters():
        if p.requires_grad:
            p.register_hook(lambda g: g * box["share"])
    for idx, targets in micro_batches:
        box["share"] = int((targets != PAD).sum()) / total
        model(idx, targets).backward()
""",
    )
)

# A red team's 3.7 (2026-11-28, second round).
TASK.wrong.extend(
    [
        Wrong(
            ("mode restored with model.train(was): resets submodules' own modes"),
            hint="accumulate changed the mode of a module inside the model",
            code=(
                "def accumulate(model, micro_batches):\n"
                "    was_training = model.training  # leave its mode as it is\n"
                "    model.zero_grad()\n"
                "    total = sum(int((t != PAD).sum()) for _, t in micro_batches)\n"
                "    for idx, targets in micro_batches:\n"
                "        share = int((targets != PAD).sum()) / total\n"
                "        (model(idx, targets) * share).backward()\n"
                "    model.train(was_training)\n"
            ),
        ),
    ]
)


# A fifth red team's wrong answers.
TASK.wrong.extend(
    [
        Wrong(
            (
                "Old gradients cleared with p.grad.zero_() where a .grad exists: a parameter frozen after a "
                "backward keeps a zero .grad, and AdamW still decays it."
            ),
            hint="a .grad tensor of zeros",
            code="""\
def accumulate(model, micro_batches):
    for p in model.parameters():          # clear old gradients (the classic way)
        if p.grad is not None:
            p.grad.zero_()

    total = sum(int((t != PAD).sum()) for _, t in micro_batches)
    for idx, targets in micro_batches:
        share = int((targets != PAD).sum()) / total
        (model(idx, targets) * share).backward()
""",
        ),
        Wrong(
            ("model.zero_grad(set_to_none=False): the frozen embedding keeps a .grad of zeros."),
            hint="a .grad tensor of zeros",
            code="""\
def accumulate(model, micro_batches):
    model.zero_grad(set_to_none=False)

    total = sum(int((t != PAD).sum()) for _, t in micro_batches)
    for idx, targets in micro_batches:
        share = int((targets != PAD).sum()) / total
        (model(idx, targets) * share).backward()
""",
        ),
    ]
)


# A red team's answer that runs the whole batch at once unless it finds the grader's hooks.
TASK.wrong.extend(
    [
        Wrong(
            (
                "one pass over the whole batch unless a saved-tensors hook or a forward pre-hook is on the model: "
                "every plain training loop runs it."
            ),
            hint="Called with no hook of the grader's on the model",
            code="""\
def accumulate(model, micro_batches):
    model.zero_grad()
    checked = torch._C._autograd._top_saved_tensors_default_hooks(False) is not None or bool(model._forward_pre_hooks)
    if not checked:
        # enough memory here: one pass over the whole batch is faster, and gives the same gradient
        idx = torch.cat([i for i, _ in micro_batches])
        targets = torch.cat([t for _, t in micro_batches])
        model(idx, targets).backward()
        return
    total = sum(int((t != PAD).sum()) for _, t in micro_batches)
    for idx, targets in micro_batches:
        share = int((targets != PAD).sum()) / total
        (model(idx, targets) * share).backward()
""",
        ),
    ]
)


# PAD's value written down, or padding taken to be the negative targets: right only while PAD is
# -100, so the check runs the same batch padded with 0.
TASK.wrong.extend(
    [
        Wrong(
            "Padding counted by the value -100 written down, not by PAD.",
            hint="With the padding value PAD set to 0",
            code="""\
def accumulate(model, micro_batches):
    model.zero_grad()
    total = sum(int((t != -100).sum()) for _, t in micro_batches)  # -100: F.cross_entropy's ignore_index
    for idx, targets in micro_batches:
        share = int((targets != -100).sum()) / total
        (model(idx, targets) * share).backward()
""",
        ),
        Wrong(
            "Real tokens taken to be the targets that are not negative, whatever PAD is.",
            hint="With the padding value PAD set to 0",
            code="""\
def accumulate(model, micro_batches):
    model.zero_grad()
    real = [int((t >= 0).sum()) for _, t in micro_batches]  # padding is negative
    for (idx, targets), count in zip(micro_batches, real):
        (model(idx, targets) * (count / sum(real))).backward()
""",
        ),
    ]
)
