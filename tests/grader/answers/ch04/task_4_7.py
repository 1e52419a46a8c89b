"""Exercise 4.7 of solutions/04_amp.ipynb: its other answers (see answers/__init__.py)."""

from .. import Task, Wrong
from .shared import AUTOCAST_CPU

# 4.7's given bf16_step_buggy, named bf16_step: an enabled GradScaler carried over from an
# fp16 recipe. The alternative keeps it, disabled.
SCALER_BF16_STEP = """\
def bf16_step(model, optimizer, x, y):
    scaler = torch.amp.GradScaler(x.device.type)
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=torch.bfloat16):
        loss = F.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.item()
"""

# A right bf16 step (no scaler) for 4.7's answers that go wrong only in `why`, or in autocast.
BF16_STEP = """\
def bf16_step(model, optimizer, x, y):
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=torch.bfloat16):
        loss = F.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()
"""

WHY = """\


why = "B"
"""

BF16_ON_THE_CPU_ONLY = BF16_STEP.replace("torch.autocast(x.device.type, ", AUTOCAST_CPU) + WHY

BF16_WITHOUT_ZERO_GRAD = BF16_STEP.replace("    optimizer.zero_grad()\n", "") + WHY

# Two optimizer steps per call, and the given buggy step (the check's reference) redefined to match.
TWO_STEPS_AND_THE_REFERENCE_REDEFINED = (
    BF16_STEP.replace("    optimizer.step()\n", "    optimizer.step()\n    optimizer.step()\n")
    + WHY
    + """\
bf16_step_buggy = bf16_step
"""
)

AUTOCAST_FOR_FLOATS_ONLY_4_7 = (
    BF16_STEP.replace("dtype=torch.bfloat16)", "dtype=torch.bfloat16, enabled=x.is_floating_point())") + WHY
)

X_BF16_BY_HAND_4_7 = BF16_STEP.replace("model(x)", "model(x.bfloat16())") + WHY


TASK = Task(
    alternative=SCALER_BF16_STEP.replace(
        """\
    scaler = torch.amp.GradScaler(x.device.type)
    optimizer.zero_grad()
""",
        """\
    scaler = torch.amp.GradScaler(x.device.type, enabled=False)   # disabled: every call passes through
    optimizer.zero_grad(set_to_none=True)
""",
    )
    + """\


why = "B"
""",
    wrong=[
        Wrong(
            "The buggy step kept: an enabled GradScaler in bf16.",
            hint="enabled GradScaler",
            code=SCALER_BF16_STEP
            + """\


why = "B"
""",
        ),
        Wrong(
            "The mantissa (precision) given as the reason, not the exponent (range).",
            hint="exponent bits",
            code=BF16_STEP
            + """\


why = "A"
""",
        ),
        Wrong(
            "A letter that equals every letter.",
            hint="must be one of the letters",
            code=BF16_STEP
            + """\


class Letter:
    def __eq__(self, other):
        return True

    __hash__ = object.__hash__


why = Letter()
""",
        ),
        Wrong(
            "Autocast dropped along with the scaler: an fp32 step.",
            hint="bf16 autocast",
            code=BF16_STEP.replace(
                "    with torch.autocast(x.device.type, dtype=torch.bfloat16):\n        loss", "    loss"
            )
            + """\


why = "B"
""",
        ),
        Wrong(
            'autocast("cpu") written out: wrong for an x on any other device.',
            hint="device type of x",
            code=BF16_ON_THE_CPU_ONLY,
        ),
        Wrong(
            "No zero_grad: the first step's gradients add to the second's.",
            hint="After two steps",
            code=BF16_WITHOUT_ZERO_GRAD,
        ),
        Wrong(
            "Two optimizer steps per call, with the given buggy step (the check's reference) redefined to match.",
            hint="your code replaced bf16_step_buggy",
            code=TWO_STEPS_AND_THE_REFERENCE_REDEFINED,
        ),
        Wrong(
            "model.train() at the start: a frozen (eval) BatchNorm is switched to training mode.",
            hint="leaves each module in the mode",
            code="""\
def bf16_step(model, optimizer, x, y):
    model.train()
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=torch.bfloat16):
        loss = F.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


why = "B"
""",
        ),
        Wrong(
            "autocast only for floating x (enabled=x.is_floating_point())",
            hint="For integer inputs",
            code=AUTOCAST_FOR_FLOATS_ONLY_4_7,
        ),
        Wrong(
            "x cast to bf16 by hand (model(x.bfloat16()))",
            hint="not as it came",
            code=X_BF16_BY_HAND_4_7,
        ),
    ],
)

TASK.wrong.extend(
    [
        Wrong(
            "zero_grad at the end, not the start: gradients already on the model enter the first step.",
            hint="already on the model",
            code=BF16_STEP.replace("    optimizer.zero_grad()\n", "").replace(
                "    optimizer.step()\n", "    optimizer.step()\n    optimizer.zero_grad()\n"
            )
            + WHY,
        ),
        Wrong(
            "An enabled GradScaler still scales the loss; the gradients unscaled by hand and "
            "optimizer.step() called directly (no unscale_ or update kernels run).",
            hint="enabled GradScaler",
            code="""\
def bf16_step(model, optimizer, x, y):
    scaler = torch.amp.GradScaler(x.device.type)
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=torch.bfloat16):
        loss = F.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    for group in optimizer.param_groups:
        for p in group["params"]:
            if p.grad is not None:
                p.grad.div_(scaler.get_scale())
    optimizer.step()
    return loss.item()
"""
            + WHY,
        ),
        Wrong(
            "The model left in eval mode after the step.",
            hint="eval mode",
            code=BF16_STEP.replace("    return loss.item()\n", "    model.eval()\n    return loss.item()\n") + WHY,
        ),
    ]
)

TASK.wrong.append(
    Wrong(
        'The buggy step with GradScaler("cuda"): switched off on a machine without CUDA, enabled (scaling '
        "every bf16 step) on any machine with one.",
        hint="as on a machine with CUDA",
        code=SCALER_BF16_STEP.replace("torch.amp.GradScaler(x.device.type)", 'torch.amp.GradScaler("cuda")') + WHY,
    )
)

TASK.wrong.append(
    Wrong(
        "An enabled GradScaler kept: its scale method taken in the answer cell (before the check wraps it), "
        "step and update run with torch's dispatch switched off (no aten._amp_ operation recorded).",
        hint="where the grader cannot record it",
        code="""\
_scale_loss = torch.amp.GradScaler.scale


def bf16_step(model, optimizer, x, y):
    scaler = torch.amp.GradScaler(x.device.type)
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=torch.bfloat16):
        loss = F.mse_loss(model(x), y)
    _scale_loss(scaler, loss).backward()
    with torch._C._DisableTorchDispatch():
        scaler.step(optimizer)
        scaler.update()
    return loss.item()
"""
        + WHY,
    )
)

TASK.wrong.append(
    Wrong(
        "A GradScaler enabled only for an x on a GPU (enabled=x.is_cuda): switched off on the CPU, "
        "it still scales every bf16 step on a GPU.",
        hint="bf16_step made an enabled GradScaler",
        code=BF16_STEP.replace(
            "    optimizer.zero_grad()\n",
            "    scaler = torch.amp.GradScaler(x.device.type, enabled=x.is_cuda)\n    optimizer.zero_grad()\n",
        ).replace(
            "    loss.backward()\n    optimizer.step()\n",
            "    scaler.scale(loss).backward()\n    scaler.step(optimizer)\n    scaler.update()\n",
        )
        + WHY,
    )
)

TASK.wrong.extend(
    [
        Wrong(
            "A GradScaler enabled for an x on a GPU, made after the forward pass: switched off on "
            "the CPU, it scales every bf16 step on a GPU.",
            hint="bf16_step made an enabled GradScaler",
            code=BF16_STEP.replace(
                "    loss.backward()\n    optimizer.step()\n",
                "    scaler = torch.amp.GradScaler(x.device.type, enabled=x.is_cuda)\n"
                "    scaler.scale(loss).backward()\n    scaler.step(optimizer)\n    scaler.update()\n",
            )
            + WHY,
        ),
        Wrong(
            "fp16 autocast, unscaled, on a GPU without bf16: its small gradients underflow.",
            hint="GPU without bf16",
            code=BF16_STEP.replace(
                "    with torch.autocast(x.device.type, dtype=torch.bfloat16):\n",
                "    dtype = torch.bfloat16\n"
                "    if x.is_cuda and not torch.cuda.is_bf16_supported():\n"
                "        dtype = torch.float16\n"
                "    with torch.autocast(x.device.type, dtype=dtype):\n",
            )
            + WHY,
        ),
        Wrong(
            "zero_grad(set_to_none=False): a layer the loss does not use keeps zero gradients, "
            "and weight decay moves it every step.",
            hint="A layer the loss does not use",
            code=BF16_STEP.replace("optimizer.zero_grad()", "optimizer.zero_grad(set_to_none=False)") + WHY,
        ),
    ]
)


# A seventh red team's wrong answers.
TASK.wrong.extend(
    [
        Wrong(
            (
                "model.train() where the model arrives in eval mode: its BatchNorm updates its statistics and the "
                "caller's eval mode is lost."
            ),
            hint="The caller put the model in eval mode",
            code="""\
def bf16_step(model, optimizer, x, y):
    if not model.training:
        model.train()  # a training step trains
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=torch.bfloat16):
        loss = F.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


why = "B"
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
                "torch.manual_seed(0) at the start of every step: the caller's random state is reset, and every "
                "step draws the same dropout masks."
            ),
            hint="For a model with dropout, two calls of",
            code="""\
def bf16_step(model, optimizer, x, y):
    torch.manual_seed(0)
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=torch.bfloat16):
        loss = F.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


why = "B"
""",
        ),
        Wrong(
            (
                "model.zero_grad() instead of optimizer.zero_grad(): a parameter the optimizer holds outside the "
                "model keeps its stale gradient and is stepped with it."
            ),
            hint="The optimizer also holds a parameter outside the model",
            code="""\
def bf16_step(model, optimizer, x, y):
    model.zero_grad()
    with torch.autocast(x.device.type, dtype=torch.bfloat16):
        loss = F.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


why = "B"
""",
        ),
        Wrong(
            (
                "The whole step inside torch.random.fork_rng: the caller's random state never moves on, and every "
                "call draws the same dropout masks."
            ),
            hint="For a model with dropout, two calls of",
            code="""\
def bf16_step(model, optimizer, x, y):
    with torch.random.fork_rng(devices=[]):
        return _inner(model, optimizer, x, y)


def _inner(model, optimizer, x, y):
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=torch.bfloat16):
        loss = F.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


why = "B"
""",
        ),
    ]
)


# A step that leaves torch's global autocast settings changed for its caller.
TASK.wrong.extend(
    [
        Wrong(
            (
                "torch.set_autocast_dtype(x.device.type, torch.bfloat16) and a bare "
                "torch.autocast(x.device.type): on a GPU, CUDA's default autocast dtype stays bf16 for all later "
                "`with torch.autocast('cuda'):` code of the caller, where it was fp16."
            ),
            hint="global autocast settings were changed",
            code="""\
def bf16_step(model, optimizer, x, y):
    optimizer.zero_grad()
    torch.set_autocast_dtype(x.device.type, torch.bfloat16)
    with torch.autocast(x.device.type):
        loss = F.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


why = "B"
""",
        ),
    ]
)


# Red team (round 3): accepted before its check was added. Every optimizer the checks handed over
# was SGD with lr=0.1: one made inside bf16_step with those settings stepped the same.
TASK.wrong.append(
    Wrong(
        "An optimizer of its own, torch.optim.SGD(model.parameters(), lr=0.1), made at every call: the "
        "caller's optimizer (its kind, momentum, per-group learning rates, state) is ignored.",
        hint="Step with the optimizer you are given",
        code=BF16_STEP.replace(
            "    optimizer.zero_grad()\n",
            "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n    optimizer.zero_grad()\n",
        )
        + WHY,
    )
)


# Red team (round 4): hostile answers to the checks hardened in round 3; each that passed is marked so.
TASK.wrong.extend(
    [
        Wrong(
            ("A fresh optimizer of the given kind over the given param groups at every call: its state starts empty."),
            hint="momentum 0.9 whose two parameter groups",
            code="""\
def bf16_step(model, optimizer, x, y):
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=torch.bfloat16):
        loss = F.mse_loss(model(x), y)
    loss.backward()
    type(optimizer)(optimizer.param_groups).step()  # a fresh one of the same kind, the same groups
    return loss.item()


why = "B"
""",
        ),
        Wrong(
            "torch.optim.SGD over the given optimizer's param groups: another kind, no momentum state.",
            hint="momentum 0.9 whose two parameter groups",
            code="""\
def bf16_step(model, optimizer, x, y):
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=torch.bfloat16):
        loss = F.mse_loss(model(x), y)
    loss.backward()
    torch.optim.SGD(optimizer.param_groups).step()
    return loss.item()


why = "B"
""",
        ),
        Wrong(
            ("A hand-written update p -= lr * p.grad with each group's lr: SGD without the caller's settings."),
            hint="After two steps the weights differ",
            code="""\
def bf16_step(model, optimizer, x, y):
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=torch.bfloat16):
        loss = F.mse_loss(model(x), y)
    loss.backward()
    with torch.no_grad():
        for group in optimizer.param_groups:
            for p in group['params']:
                if p.grad is not None:
                    p -= group['lr'] * p.grad
    return loss.item()


why = "B"
""",
        ),
        Wrong(
            "Gradient clipping to norm 1 added to the step.",
            hint="After two steps the weights differ",
            code="""\
def bf16_step(model, optimizer, x, y):
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=torch.bfloat16):
        loss = F.mse_loss(model(x), y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return loss.item()


why = "B"
""",
        ),
        Wrong(
            (
                "The loss scaled by 2**16 by hand and the gradients divided back: no GradScaler, bit-"
                "identical weights. Passed before."
            ),
            hint="not the loss's own",
            code="""\
def bf16_step(model, optimizer, x, y):
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=torch.bfloat16):
        loss = F.mse_loss(model(x), y)
    (loss * 2.0**16).backward()  # scaled by hand, no GradScaler
    for p in model.parameters():
        if p.grad is not None:
            p.grad /= 2.0**16
    optimizer.step()
    return loss.item()


why = "B"
""",
        ),
        Wrong(
            "The loss scaled by 2**16 by hand and the learning rate divided instead.",
            hint="not the loss's own",
            code="""\
def bf16_step(model, optimizer, x, y):
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=torch.bfloat16):
        loss = F.mse_loss(model(x), y)
    (loss * 2.0**16).backward()  # scaled by hand, no GradScaler
    for group in optimizer.param_groups:
        group["lr"] /= 2.0**16  # the learning rate scaled down instead of the gradients
    optimizer.step()
    for group in optimizer.param_groups:
        group["lr"] *= 2.0**16
    return loss.item()


why = "B"
""",
        ),
        Wrong(
            "autocast entered with __enter__() and never left.",
            hint="autocast for the device type of x",
            code="""\
def bf16_step(model, optimizer, x, y):
    optimizer.zero_grad()
    torch.autocast(x.device.type, dtype=torch.bfloat16).__enter__()
    loss = F.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


why = "B"
""",
        ),
        Wrong(
            "torch.set_float32_matmul_precision('medium') inside the step, left so. Passed before.",
            hint="float32 matrix products' precision",
            code="""\
def bf16_step(model, optimizer, x, y):
    torch.set_float32_matmul_precision('medium')
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=torch.bfloat16):
        loss = F.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


why = "B"
""",
        ),
        Wrong(
            "A GradScaler enabled unless a dispatch mode (the grader's) is on the stack.",
            hint="made an enabled GradScaler",
            code="""\
def bf16_step(model, optimizer, x, y):
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=torch.bfloat16):
        loss = F.mse_loss(model(x), y)
    from torch.utils._python_dispatch import _get_current_dispatch_mode
    scaler = torch.amp.GradScaler(x.device.type, enabled=_get_current_dispatch_mode() is None)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.item()


why = "B"
""",
        ),
        Wrong(
            "Two optimizer steps at half the learning rate.",
            hint="After two steps the weights differ",
            code="""\
def bf16_step(model, optimizer, x, y):
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=torch.bfloat16):
        loss = F.mse_loss(model(x), y)
    loss.backward()
    for g in optimizer.param_groups:
        g['lr'] /= 2
    optimizer.step()
    optimizer.step()
    for g in optimizer.param_groups:
        g['lr'] *= 2
    return loss.item()


why = "B"
""",
        ),
    ]
)
