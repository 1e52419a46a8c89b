"""Exercise 4.4 of solutions/04_amp.ipynb: its other answers (see answers/__init__.py)."""

from .. import Task, Wrong
from .shared import AUTOCAST_CPU, CLIP, FP16_FOR_FLOATS_ONLY, UNSCALE

# 4.4's right step (zero_grad, fp16 autocast, scaled backward, unscale_, clip, scaler.step,
# update): each wrong answer changes one thing in it.
AMP_STEP = """\
def train_step_amp(model, optimizer, scaler, x, y, max_norm=1.0):
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=torch.float16):
        loss = F.cross_entropy(model(x), y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(optimizer)
    scaler.update()
    return loss.item()
"""

CLIP_BEFORE_UNSCALE = AMP_STEP.replace(UNSCALE + CLIP, CLIP + UNSCALE)

AMP_WITHOUT_AUTOCAST = AMP_STEP.replace(
    "    with torch.autocast(x.device.type, dtype=torch.float16):\n        loss", "    loss"
)

OPTIMIZER_STEP_NOT_SCALER_STEP = AMP_STEP.replace("scaler.step(optimizer)", "optimizer.step()")

LOSS_NOT_SCALED = AMP_STEP.replace("scaler.scale(loss).backward()", "loss.backward()")

AMP_WITHOUT_ZERO_GRAD = AMP_STEP.replace("    optimizer.zero_grad()\n", "")

AMP_IN_BF16 = AMP_STEP.replace("dtype=torch.float16", "dtype=torch.bfloat16")

AMP_ON_THE_CPU_ONLY = AMP_STEP.replace("torch.autocast(x.device.type, ", AUTOCAST_CPU)

AUTOCAST_FOR_FLOATS_ONLY_4_4 = AMP_STEP.replace("dtype=torch.float16)", FP16_FOR_FLOATS_ONLY)

AUTOCAST_IN_TRAINING_ONLY_4_4 = AMP_STEP.replace("dtype=torch.float16)", "dtype=torch.float16, enabled=model.training)")

X_HALVED_BY_HAND_4_4 = AMP_STEP.replace("model(x)", "model(x.half())")

NAN_TO_NUM_4_4 = (
    "def train_step_amp(model, optimizer, scaler, x, y, max_norm=1.0):\n    x = torch.nan_to_num(x)\n"
    + (AMP_STEP.split("\n", 1)[1])
)


TASK = Task(
    alternative="""\
def train_step_amp(model, optimizer, scaler, x, y, max_norm=1.0):
    for group in optimizer.param_groups:  # every parameter the optimizer steps
        for p in group["params"]:
            p.grad = None
    with torch.amp.autocast(device_type=x.device.type, dtype=torch.float16):
        logits = model(x)
        loss = torch.nn.CrossEntropyLoss()(logits, y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_([p for group in optimizer.param_groups for p in group["params"]], max_norm)
    scaler.step(optimizer)
    scaler.update()
    return float(loss.detach())
""",
    wrong=[
        Wrong(
            "Clipping the scaled gradients, before unscale_.",
            hint="unscale_ first",
            code=CLIP_BEFORE_UNSCALE,
        ),
        Wrong(
            "No autocast: the forward pass runs in fp32.",
            hint="fp16 autocast",
            code=AMP_WITHOUT_AUTOCAST,
        ),
        Wrong(
            "optimizer.step() instead of scaler.step(): inf steps are not skipped.",
            hint="in this order",
            code=OPTIMIZER_STEP_NOT_SCALER_STEP,
        ),
        Wrong(
            "The loss not scaled: loss.backward().",
            hint="scaler.scale(loss)",
            code=LOSS_NOT_SCALED,
        ),
        Wrong(
            "No zero_grad: gradients add up from step to step.",
            hint="optimizer.zero_grad()",
            code=AMP_WITHOUT_ZERO_GRAD,
        ),
        Wrong(
            "bf16 autocast where the task asks for fp16.",
            hint="fp16 autocast",
            code=AMP_IN_BF16,
        ),
        Wrong(
            'autocast("cpu") written out: wrong for an x on any other device.',
            hint="device type of x",
            code=AMP_ON_THE_CPU_ONLY,
        ),
        Wrong(
            "model.train() at the start: a frozen (eval) BatchNorm is switched to training mode.",
            hint="leaves each module in the mode",
            code="""\
def train_step_amp(model, optimizer, scaler, x, y, max_norm=1.0):
    model.train()
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=torch.float16):
        loss = F.cross_entropy(model(x), y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(optimizer)
    scaler.update()
    return loss.item()
""",
        ),
        Wrong(
            "autocast only for floating x (enabled=x.is_floating_point()): token-id models run fp32",
            hint="For integer inputs",
            code=AUTOCAST_FOR_FLOATS_ONLY_4_4,
        ),
        Wrong(
            "autocast only when model.training: eval-mode model runs fp32",
            hint="For a model in eval mode",
            code=AUTOCAST_IN_TRAINING_ONLY_4_4,
        ),
        Wrong(
            "x cast to fp16 by hand before the model (model(x.half()))",
            hint="not as it came",
            code=X_HALVED_BY_HAND_4_4,
        ),
        Wrong(
            "x passed through torch.nan_to_num: NaN batches trained on as zeros, not skipped",
            hint="With a NaN in the batch",
            code=NAN_TO_NUM_4_4,
        ),
    ],
)

TASK.wrong.extend(
    [
        Wrong(
            "Only the first param group clipped: wrong for an optimizer with several groups.",
            hint="two groups",
            code=AMP_STEP.replace(
                "clip_grad_norm_(model.parameters(), max_norm)",
                'clip_grad_norm_(optimizer.param_groups[0]["params"], max_norm)',
            ),
        ),
        Wrong(
            "The model left in eval mode after the step.",
            hint="eval mode",
            code=AMP_STEP.replace("    return loss.item()\n", "    model.eval()\n    return loss.item()\n"),
        ),
        Wrong(
            "The default max_norm changed to None: no clipping when the caller relies on the default.",
            hint="its default",
            code=AMP_STEP.replace("max_norm=1.0):", "max_norm=None):").replace(
                CLIP, "    if max_norm is not None:\n    " + CLIP
            ),
        ),
    ]
)

TASK.wrong.extend(
    [
        Wrong(
            "model.train() when model.training is False: a model handed over in eval mode leaves in training mode.",
            hint="The caller put the model in eval mode",
            code="""\
def train_step_amp(model, optimizer, scaler, x, y, max_norm=1.0):
    if not model.training:
        model.train()
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=torch.float16):
        loss = F.cross_entropy(model(x), y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(optimizer)
    scaler.update()
    return loss.item()
""",
        ),
        Wrong(
            (
                "autocast enabled only as far as the scaler is (enabled=scaler.is_enabled()): with a "
                "disabled GradScaler the forward runs in fp32."
            ),
            hint="whose scaling is switched off",
            code="""\
def train_step_amp(model, optimizer, scaler, x, y, max_norm=1.0):
    pass
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=torch.float16, enabled=scaler.is_enabled()):
        loss = F.cross_entropy(model(x), y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(optimizer)
    scaler.update()
    return loss.item()
""",
        ),
        Wrong(
            (
                "A batch with inf or NaN skipped by hand (scaler.update(new_scale)): GradScaler's growth "
                "count is not restarted."
            ),
            hint="restarts GradScaler's count",
            code="""\
def train_step_amp(model, optimizer, scaler, x, y, max_norm=1.0):
    if not torch.isfinite(x).all():
        scaler.update(scaler.get_scale() / 2)
        return float('nan')
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=torch.float16):
        loss = F.cross_entropy(model(x), y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(optimizer)
    scaler.update()
    return loss.item()
""",
        ),
    ]
)

TASK.wrong.append(
    Wrong(
        "torch.manual_seed(0) at the start of every step: the caller's random state reset, every "
        "step drawing the same dropout masks.",
        hint="Seed nothing inside the step",
        code=AMP_STEP.replace("    optimizer.zero_grad()\n", "    torch.manual_seed(0)\n    optimizer.zero_grad()\n"),
    )
)

# A red team's 4.4 (2026-11-28, second round).
TASK.wrong.extend(
    [
        Wrong(
            ("eval-mode model switched to train for the step (dropout/BN batch stats), modes restored after"),
            hint="train_step_amp trained a model handed over in eval mode in",
            code=(
                "def train_step_amp(model, optimizer, scaler, x, y, max_norm=1.0):\n"
                "    modes = [(m, m.training) for m in model.modules()]\n"
                "    if not model.training:\n"
                "        model.train()  # a training step trains\n"
                "    try:\n"
                "        optimizer.zero_grad()\n"
                "        with torch.autocast(x.device.type, dtype=torch.float16):\n"
                "            loss = F.cross_entropy(model(x), y)\n"
                "        scaler.scale(loss).backward()\n"
                "        scaler.unscale_(optimizer)\n"
                "        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)\n"
                "        scaler.step(optimizer)\n"
                "        scaler.update()\n"
                "    finally:\n"
                "        for m, t in modes:\n"
                "            m.training = t\n"
                "    return loss.item()\n"
            ),
        ),
        Wrong(
            ("caller's x clamped in place: input mutated"),
            hint="train_step_amp trained a model handed over in eval mode in",
            code=(
                "def train_step_amp(model, optimizer, scaler, x, y, max_norm=1.0):\n"
                "    optimizer.zero_grad()\n"
                "    if x.is_floating_point():\n"
                "        x.clamp_(-65504.0, 65504.0)\n"
                "    with torch.autocast(x.device.type, dtype=torch.float16):\n"
                "        loss = F.cross_entropy(model(x), y)\n"
                "    scaler.scale(loss).backward()\n"
                "    scaler.unscale_(optimizer)\n"
                "    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)\n"
                "    scaler.step(optimizer)\n"
                "    scaler.update()\n"
                "    return loss.item()\n"
            ),
        ),
    ]
)


# A seventh red team's wrong answers.
TASK.wrong.extend(
    [
        Wrong(
            (
                "unscale_ and clipping only where the scaler is enabled: with GradScaler(enabled=False) the "
                "gradients are not clipped."
            ),
            hint="the weights after train_step_amp (max_norm=0.05) are not those of the step",
            code="""\
def train_step_amp(model, optimizer, scaler, x, y, max_norm=1.0):
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=torch.float16):
        loss = F.cross_entropy(model(x), y)
    scaler.scale(loss).backward()
    if scaler.is_enabled():
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(optimizer)
    scaler.update()
    return loss.item()
""",
        ),
        Wrong(
            ("No backward, clipping or step at all where the scaler is disabled: the weights never move."),
            hint="the weights after train_step_amp (max_norm=0.05) are not those of the step",
            code="""\
def train_step_amp(model, optimizer, scaler, x, y, max_norm=1.0):
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=torch.float16):
        loss = F.cross_entropy(model(x), y)
    if not scaler.is_enabled():
        return loss.item()
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(optimizer)
    scaler.update()
    return loss.item()
""",
        ),
    ]
)


# A red team's answers (2026-11-28, third session): an optimizer's parameter outside the model,
# the loss after the scale changed, dropout's random state.
TASK.wrong.extend(
    [
        Wrong(
            (
                "zero_grad(set_to_none=False): a parameter the optimizer holds outside the model, with a .grad "
                "left from an earlier step, gets a zero gradient, and AdamW's weight decay moves it; "
                "optimizer.zero_grad() sets it to None and the optimizer skips it."
            ),
            hint="The optimizer also holds a parameter outside the model",
            code="""\
def train_step_amp(model, optimizer, scaler, x, y, max_norm=1.0):
    optimizer.zero_grad(set_to_none=False)
    with torch.autocast(x.device.type, dtype=torch.float16):
        loss = F.cross_entropy(model(x), y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(optimizer)
    scaler.update()
    return loss.item()
""",
        ),
        Wrong(
            (
                "The loss returned as the scaled loss over scaler.get_scale() read after scaler.update(): off by "
                "a factor of 2 whenever update() grows or halves the scale."
            ),
            hint="On a step after which GradScaler grows the scale",
            code="""\
def train_step_amp(model, optimizer, scaler, x, y, max_norm=1.0):
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=torch.float16):
        loss = F.cross_entropy(model(x), y)
    scaled = scaler.scale(loss)
    scaled.backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(optimizer)
    scaler.update()
    return scaled.item() / scaler.get_scale()
""",
        ),
        Wrong(
            (
                "model.zero_grad() instead of optimizer.zero_grad(): a parameter the optimizer holds outside the "
                "model keeps its stale gradient and is stepped with it."
            ),
            hint="The optimizer also holds a parameter outside the model",
            code="""\
def train_step_amp(model, optimizer, scaler, x, y, max_norm=1.0):
    model.zero_grad()
    with torch.autocast(x.device.type, dtype=torch.float16):
        loss = F.cross_entropy(model(x), y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(optimizer)
    scaler.update()
    return loss.item()
""",
        ),
    ]
)


# A step that leaves torch's global autocast settings changed for its caller.
TASK.wrong.extend(
    [
        Wrong(
            (
                "torch.set_autocast_dtype(x.device.type, torch.float16) and a bare torch.autocast(x.device.type): "
                "the step runs in fp16, but the CPU's default autocast dtype stays fp16 for all later `with "
                "torch.autocast('cpu'):` code of the caller, where it was bf16."
            ),
            hint="global autocast settings were changed",
            code="""\
def train_step_amp(model, optimizer, scaler, x, y, max_norm=1.0):
    optimizer.zero_grad()
    torch.set_autocast_dtype(x.device.type, torch.float16)
    with torch.autocast(x.device.type):
        loss = F.cross_entropy(model(x), y)
    scaler.scale(loss).backward()  # gradients x scale
    scaler.unscale_(optimizer)  # true gradients, checked for inf/NaN
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)  # clip the true gradients
    scaler.step(optimizer)  # skipped if inf/NaN was found
    scaler.update()
    return loss.item()
""",
        ),
    ]
)


# Red team (round 2): each was accepted before its check was added.
TASK.wrong.extend(
    [
        Wrong(
            "A floating y cast to fp16 by hand: soft targets (class probabilities) rounded, another loss.",
            hint="soft targets",
            code="""\
def train_step_amp(model, optimizer, scaler, x, y, max_norm=1.0):
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=torch.float16):
        loss = F.cross_entropy(model(x), y.half() if y.is_floating_point() else y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(optimizer)
    scaler.update()
    return loss.item()
""",
        ),
    ]
)
