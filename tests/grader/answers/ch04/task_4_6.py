"""Exercise 4.6 of solutions/04_amp.ipynb: its other answers (see answers/__init__.py)."""

import textwrap

from .. import Task, Wrong
from .shared import AUTOCAST_CPU, CLIP, FP16_FOR_FLOATS_ONLY, UNSCALE

STEP_AND_UPDATE = "    scaler.step(optimizer)\n    scaler.update()\n"


def in_the_loop(lines: str) -> str:
    """Lines of 4.6's step moved into its loop over the micro-batches (one level deeper)."""
    return textwrap.indent(lines, "    ")


# 4.6's right step (unscale_, clip and step once, after all the micro-batches): each wrong
# answer moves some of those lines into the loop over the micro-batches.
ACCUMULATION_STEP = """\
def accumulation_step(model, optimizer, scaler, batches, max_norm=1.0):
    optimizer.zero_grad()
    for x, y in batches:
        with torch.autocast(x.device.type, dtype=torch.float16):
            loss = F.mse_loss(model(x), y) / len(batches)
        scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(optimizer)
    scaler.update()
"""

UNSCALE_AND_CLIP_PER_MICRO_BATCH = ACCUMULATION_STEP.replace(UNSCALE + CLIP, in_the_loop(UNSCALE + CLIP))

CLIP_PER_MICRO_BATCH = ACCUMULATION_STEP.replace(UNSCALE + CLIP, in_the_loop(CLIP) + UNSCALE)

STEP_PER_MICRO_BATCH = ACCUMULATION_STEP.replace(
    UNSCALE + CLIP + STEP_AND_UPDATE, in_the_loop(UNSCALE + CLIP + STEP_AND_UPDATE)
)

ACCUMULATION_ON_THE_CPU_ONLY = ACCUMULATION_STEP.replace("torch.autocast(x.device.type, ", AUTOCAST_CPU)

ACCUMULATION_WITHOUT_ZERO_GRAD = ACCUMULATION_STEP.replace("    optimizer.zero_grad()\n", "")

SKIPPED_BY_HAND_4_6 = ACCUMULATION_STEP.replace(
    "        scaler.scale(loss).backward()\n",
    "        if not torch.isfinite(loss):\n"
    "            optimizer.zero_grad()\n"
    "            scaler.update(scaler.get_scale() * 0.5)\n"
    "            return\n"
    "        scaler.scale(loss).backward()\n",
)

AUTOCAST_FOR_FLOATS_ONLY_4_6 = ACCUMULATION_STEP.replace("dtype=torch.float16)", FP16_FOR_FLOATS_ONLY)

X_HALVED_BY_HAND_4_6 = ACCUMULATION_STEP.replace("model(x)", "model(x.half())")

NAN_TO_NUM_4_6 = ACCUMULATION_STEP.replace(
    "    for x, y in batches:\n", "    for x, y in batches:\n        x, y = torch.nan_to_num(x), torch.nan_to_num(y)\n"
)


TASK = Task(
    alternative="""\
def accumulation_step(model, optimizer, scaler, batches, max_norm=1.0):
    optimizer.zero_grad()
    for i, (x, y) in enumerate(batches):
        with torch.autocast(device_type=x.device.type, dtype=torch.float16):
            out = model(x)
            loss = F.mse_loss(out, y) / len(batches)
        scaler.scale(loss).backward()
        if i == len(batches) - 1:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(optimizer)
    scaler.update()
""",
    wrong=[
        Wrong(
            "The buggy function unchanged: unscale_ after every micro-batch.",
            hint="still raises",
            code=UNSCALE_AND_CLIP_PER_MICRO_BATCH,
        ),
        Wrong(
            "Clipping each micro-batch's scaled gradients; unscale_ once at the end.",
            hint="clip once",
            code=CLIP_PER_MICRO_BATCH,
        ),
        Wrong(
            "One optimizer step per micro-batch.",
            hint="one optimizer step for all micro-batches",
            code=STEP_PER_MICRO_BATCH,
        ),
        Wrong(
            'autocast("cpu") written out: wrong for micro-batches on any other device.',
            hint="for its device type",
            code=ACCUMULATION_ON_THE_CPU_ONLY,
        ),
        Wrong(
            "No zero_grad: the first step's gradients add to the second's.",
            hint="After a second step",
            code=ACCUMULATION_WITHOUT_ZERO_GRAD,
        ),
        Wrong(
            "model.train() at the start: a frozen (eval) BatchNorm is switched to training mode.",
            hint="leaves each module in the mode",
            code="""\
def accumulation_step(model, optimizer, scaler, batches, max_norm=1.0):
    model.train()
    optimizer.zero_grad()
    for x, y in batches:
        with torch.autocast(x.device.type, dtype=torch.float16):
            loss = F.mse_loss(model(x), y) / len(batches)
        scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(optimizer)
    scaler.update()
""",
        ),
        Wrong(
            ("non-finite loss skipped by hand (zero_grad + scaler.update(scale/2)): growth count not restarted"),
            hint="not 512.0",
            code=SKIPPED_BY_HAND_4_6,
        ),
        Wrong(
            "autocast only for floating x (enabled=x.is_floating_point())",
            hint="For integer inputs",
            code=AUTOCAST_FOR_FLOATS_ONLY_4_6,
        ),
        Wrong(
            "micro-batch x cast to fp16 by hand (model(x.half()))",
            hint="not as it came",
            code=X_HALVED_BY_HAND_4_6,
        ),
        Wrong(
            "x and y through torch.nan_to_num: NaN micro-batches trained on, not skipped",
            hint="not 512.0",
            code=NAN_TO_NUM_4_6,
        ),
    ],
)

TASK.wrong.extend(
    [
        Wrong(
            "The default max_norm changed to None: no clipping when the caller relies on the default.",
            hint="its default",
            code=ACCUMULATION_STEP.replace("max_norm=1.0):", "max_norm=None):").replace(
                CLIP, "    if max_norm is not None:\n    " + CLIP
            ),
        ),
        Wrong(
            "zero_grad at the end, not the start: gradients already on the model enter the step.",
            hint="already on the model",
            code=ACCUMULATION_STEP.replace("    optimizer.zero_grad()\n", "").replace(
                STEP_AND_UPDATE, STEP_AND_UPDATE + "    optimizer.zero_grad()\n"
            ),
        ),
        Wrong(
            "A non-finite micro-batch dropped (continue) and the step taken on the others, where "
            "GradScaler skips the whole step and halves the scale.",
            hint="skip the whole step",
            code=ACCUMULATION_STEP.replace(
                "        scaler.scale(loss).backward()\n",
                "        if not torch.isfinite(loss):\n            continue\n        scaler.scale(loss).backward()\n",
            ),
        ),
        Wrong(
            "Only the first param group clipped.",
            hint="two groups",
            code=ACCUMULATION_STEP.replace(
                "clip_grad_norm_(model.parameters(), max_norm)",
                'clip_grad_norm_(optimizer.param_groups[0]["params"], max_norm)',
            ),
        ),
    ]
)

TASK.wrong.extend(
    [
        Wrong(
            "Each micro-batch's loss weighted by its share of the samples, not divided by the number of micro-batches.",
            hint="micro-batches of 8 and 3 samples",
            code="""\
def accumulation_step(model, optimizer, scaler, batches, max_norm=1.0):
    total = sum(len(x) for x, _ in batches)
    optimizer.zero_grad()
    for x, y in batches:
        with torch.autocast(x.device.type, dtype=torch.float16):
            loss = F.mse_loss(model(x), y) * (len(x) / total)
        scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(optimizer)
    scaler.update()
""",
        ),
        Wrong(
            "model.train() when model.training is False: a model handed over in eval mode leaves in training mode.",
            hint="The caller put the model in eval mode",
            code="""\
def accumulation_step(model, optimizer, scaler, batches, max_norm=1.0):
    if not model.training:
        model.train()
    optimizer.zero_grad()
    for x, y in batches:
        with torch.autocast(x.device.type, dtype=torch.float16):
            loss = F.mse_loss(model(x), y) / len(batches)
        scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(optimizer)
    scaler.update()
""",
        ),
        Wrong(
            "autocast enabled only as far as the scaler is (enabled=scaler.is_enabled()).",
            hint="whose scaling is switched off",
            code="""\
def accumulation_step(model, optimizer, scaler, batches, max_norm=1.0):
    pass
    optimizer.zero_grad()
    for x, y in batches:
        with torch.autocast(x.device.type, dtype=torch.float16, enabled=scaler.is_enabled()):
            loss = F.mse_loss(model(x), y) / len(batches)
        scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(optimizer)
    scaler.update()
""",
        ),
    ]
)

# A red team's 4.6 (2026-11-28, second round).
TASK.wrong.extend(
    [
        Wrong(
            ("eval-mode model switched to train for the step, modes restored after"),
            hint="accumulation_step trained a model handed over in eval mode",
            code=(
                "def accumulation_step(model, optimizer, scaler, batches, max_norm=1.0):\n"
                "    modes = [(m, m.training) for m in model.modules()]\n"
                "    if not model.training:\n"
                "        model.train()\n"
                "    try:\n"
                "        optimizer.zero_grad()\n"
                "        for x, y in batches:\n"
                "            with torch.autocast(x.device.type, dtype=torch.float16):\n"
                "                loss = F.mse_loss(model(x), y) / len(batches)\n"
                "            scaler.scale(loss).backward()\n"
                "        scaler.unscale_(optimizer)\n"
                "        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)\n"
                "        scaler.step(optimizer)\n"
                "        scaler.update()\n"
                "    finally:\n"
                "        for m, t in modes:\n"
                "            m.training = t\n"
            ),
        ),
        Wrong(
            ("caller's micro-batch x clamped in place: input mutated"),
            hint="accumulation_step trained a model handed over in eval mode",
            code=(
                "def accumulation_step(model, optimizer, scaler, batches, max_norm=1.0):\n"
                "    optimizer.zero_grad()\n"
                "    for x, y in batches:\n"
                "        if x.is_floating_point():\n"
                "            x.clamp_(-65504.0, 65504.0)\n"
                "        with torch.autocast(x.device.type, dtype=torch.float16):\n"
                "            loss = F.mse_loss(model(x), y) / len(batches)\n"
                "        scaler.scale(loss).backward()\n"
                "    scaler.unscale_(optimizer)\n"
                "    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)\n"
                "    scaler.step(optimizer)\n"
                "    scaler.update()\n"
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
                "accumulated gradients are not clipped."
            ),
            hint="the weights after accumulation_step (max_norm=0.2) are not those of the step",
            code="""\
def accumulation_step(model, optimizer, scaler, batches, max_norm=1.0):
    optimizer.zero_grad()
    for x, y in batches:
        with torch.autocast(x.device.type, dtype=torch.float16):
            loss = F.mse_loss(model(x), y) / len(batches)
        scaler.scale(loss).backward()
    if scaler.is_enabled():
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(optimizer)
    scaler.update()
""",
        ),
        Wrong(
            (
                "Every micro-batch's forward under autocast, then no backward or step where the scaler is "
                "disabled: the weights never move."
            ),
            hint="the weights after accumulation_step (max_norm=0.2) are not those of the step",
            code="""\
def accumulation_step(model, optimizer, scaler, batches, max_norm=1.0):
    optimizer.zero_grad()
    losses = []
    for x, y in batches:
        with torch.autocast(x.device.type, dtype=torch.float16):
            losses.append(F.mse_loss(model(x), y) / len(batches))
    if not scaler.is_enabled():
        return
    for loss in losses:
        scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(optimizer)
    scaler.update()
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
                "left from an earlier step, gets a zero gradient, and AdamW's weight decay moves it."
            ),
            hint="The optimizer also holds a parameter outside the model",
            code="""\
def accumulation_step(model, optimizer, scaler, batches, max_norm=1.0):
    optimizer.zero_grad(set_to_none=False)
    for x, y in batches:
        with torch.autocast(x.device.type, dtype=torch.float16):
            loss = F.mse_loss(model(x), y) / len(batches)
        scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(optimizer)
    scaler.update()
""",
        ),
        Wrong(
            (
                "torch.manual_seed(0) at the start of every step: the caller's random state is reset, and every "
                "step draws the same dropout masks."
            ),
            hint="For a model with dropout, two calls of",
            code="""\
def accumulation_step(model, optimizer, scaler, batches, max_norm=1.0):
    torch.manual_seed(0)
    optimizer.zero_grad()
    for x, y in batches:
        with torch.autocast(x.device.type, dtype=torch.float16):
            loss = F.mse_loss(model(x), y) / len(batches)
        scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(optimizer)
    scaler.update()
""",
        ),
        Wrong(
            (
                "model.zero_grad() instead of optimizer.zero_grad(): a parameter the optimizer holds outside the "
                "model keeps its stale gradient and is stepped with it."
            ),
            hint="The optimizer also holds a parameter outside the model",
            code="""\
def accumulation_step(model, optimizer, scaler, batches, max_norm=1.0):
    model.zero_grad()
    for x, y in batches:
        with torch.autocast(x.device.type, dtype=torch.float16):
            loss = F.mse_loss(model(x), y) / len(batches)
        scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(optimizer)
    scaler.update()
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
                "the CPU's default autocast dtype stays fp16 for all later autocast code of the caller, where it "
                "was bf16."
            ),
            hint="global autocast settings were changed",
            code="""\
def accumulation_step(model, optimizer, scaler, batches, max_norm=1.0):
    optimizer.zero_grad()
    for x, y in batches:
        torch.set_autocast_dtype(x.device.type, torch.float16)
        with torch.autocast(x.device.type):
            loss = F.mse_loss(model(x), y) / len(batches)
        scaler.scale(loss).backward()  # scaled gradients add up: all use the same scale
    scaler.unscale_(optimizer)  # once, when all of them are in
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(optimizer)
    scaler.update()
""",
        ),
    ]
)
