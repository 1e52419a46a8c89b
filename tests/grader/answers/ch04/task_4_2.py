"""Exercise 4.2 of solutions/04_amp.ipynb: its other answers (see answers/__init__.py)."""

from .. import Task, Wrong

# 4.2's right answer (updates in an fp32 master copy, returned as fp16): each wrong answer
# but the first (which has no master copy at all) changes one thing in it.
MASTER_SGD = """\
lr_lost = 1e-3


def master_sgd(w16, grads, lr):
    master = w16.float()
    for grad in grads:
        master -= lr * grad.float()
    return master.half()
"""

MASTER_RETURNED_IN_FP32 = MASTER_SGD.replace("    return master.half()\n", "    return master\n")

LR_THAT_FP16_KEEPS = MASTER_SGD.replace("lr_lost = 1e-3", "lr_lost = 0.1")

W16_OVERWRITTEN = MASTER_SGD.replace("    return master.half()\n", "        w16.copy_(master)\n    return w16\n")

GRADS_SCALED_IN_PLACE = MASTER_SGD.replace("master -= lr * grad.float()", "master -= grad.mul_(lr).float()")

GRADS_MADE_FLOAT32_4_2 = MASTER_SGD.replace(
    "        master -= lr * grad.float()\n", "        grad.data = grad.data.float()\n        master -= lr * grad\n"
)

W16_MADE_FLOAT32_4_2 = MASTER_SGD.replace(
    "    master = w16.float()\n", "    w16.data = w16.data.float()\n    master = w16.clone()\n"
)

NOT_FINITE_SKIPPED_4_2 = MASTER_SGD.replace(
    "        master -= lr * grad.float()\n",
    "        g = grad.float()\n        master -= lr * torch.where(torch.isfinite(g), g, torch.zeros_like(g))\n",
)

CLAMPED_TO_FP16_4_2 = MASTER_SGD.replace(
    "    return master.half()\n",
    "    fmax = torch.finfo(torch.float16).max\n    return master.clamp(-fmax, fmax).half()\n",
)

SLICE_OF_A_SCALAR_4_2 = MASTER_SGD.replace("master -= lr", "master[:] -= lr")

ALIAS_WHEN_NO_GRADS_4_2 = MASTER_SGD.replace(
    "    master = w16.float()\n", "    if not grads:\n        return w16.detach()\n    master = w16.float()\n"
)


TASK = Task(
    alternative="""\
lr_lost = 0.02   # the update 2e-4 is below 2**-12, half the fp16 gap under 1.0


def master_sgd(w16, grads, lr):
    master = w16.to(torch.float32)
    for g in grads:
        master.sub_(g, alpha=lr)
    return master.to(torch.float16)
""",
    wrong=[
        Wrong(
            "The updates done in fp16: every one is rounded away.",
            hint="Keep an fp32 master copy",
            code="""\
lr_lost = 1e-3


def master_sgd(w16, grads, lr):
    w = w16.clone()
    for grad in grads:
        w -= lr * grad
    return w
""",
        ),
        Wrong(
            "The fp32 master returned as it is, not as the fp16 copy.",
            hint="float16",
            code=MASTER_RETURNED_IN_FP32,
        ),
        Wrong(
            "A learning rate whose update fp16 still keeps.",
            hint="choose a smaller learning rate",
            code=LR_THAT_FP16_KEEPS,
        ),
        Wrong(
            "The caller's fp16 weight overwritten in place.",
            hint="changed w16",
            code=W16_OVERWRITTEN,
        ),
        Wrong(
            "Each gradient scaled by lr in place: the caller's gradients change.",
            hint="changed the gradients it was given",
            code=GRADS_SCALED_IN_PLACE,
        ),
        # bf16 keeps 8 mantissa bits: an update of about 1e-4 at 1.0 is lost there too.
        Wrong(
            "The master copy kept in bfloat16 instead of float32.",
            hint="The weight never moved",
            code="""\
lr_lost = 1e-3


def master_sgd(w16, grads, lr):
    master = w16.to(torch.bfloat16)
    for grad in grads:
        master = master - lr * grad.to(torch.bfloat16)
    return master.half()
""",
        ),
        Wrong(
            "Each update lr * grad rounded through bfloat16 before it reaches the fp32 master.",
            hint="as computed in fp32",
            code="""\
lr_lost = 1e-3


def master_sgd(w16, grads, lr):
    master = w16.float()
    for grad in grads:
        master -= (lr * grad.float()).bfloat16().float()
    return master.half()
""",
        ),
        Wrong(
            "The master rebuilt from Python lists: always a CPU tensor, whatever w16's device.",
            hint="w16's device",
            code="""\
lr_lost = 1e-3


def master_sgd(w16, grads, lr):
    master = torch.tensor(w16.tolist(), dtype=torch.float32)
    for grad in grads:
        master -= lr * torch.tensor(grad.tolist(), dtype=torch.float32)
    return master.half()
""",
        ),
        Wrong(
            "caller's fp16 grads converted to fp32 in place (grad.data = grad.data.float())",
            hint="changed the gradients it was given",
            code=GRADS_MADE_FLOAT32_4_2,
        ),
        Wrong(
            "w16 itself converted to fp32 in place (w16.data = ...)",
            hint="changed w16",
            code=W16_MADE_FLOAT32_4_2,
        ),
        Wrong(
            "non-finite gradient entries skipped (torch.where): not every update applied",
            hint="not [-inf, nan, inf]",
            code=NOT_FINITE_SKIPPED_4_2,
        ),
        Wrong(
            "fp16 copy clamped to fp16's finite range (saturating), not master.half()",
            hint="not [-inf, nan, inf]",
            code=CLAMPED_TO_FP16_4_2,
        ),
        Wrong(
            "master[:] -= ...: fails for a 0-dim (scalar) weight",
            hint="For a 0-dim w16",
            code=SLICE_OF_A_SCALAR_4_2,
        ),
        Wrong(
            "no gradients: returns w16.detach(), an alias of w16",
            hint="shares w16's memory",
            code=ALIAS_WHEN_NO_GRADS_4_2,
        ),
    ],
)

TASK.wrong.append(
    Wrong(
        "lr * grad computed in fp16 (a Python float times an fp16 tensor stays fp16), added to "
        "the fp32 master after: an update below fp16's smallest subnormal (lr=1e-5, grad=1e-3: "
        "1e-8) is rounded to 0 before the master sees it, so small weights never move.",
        hint="lr * grad.float()",
        code="""\
lr_lost = 1e-3


def master_sgd(w16, grads, lr):
    master = w16.float()
    for grad in grads:
        master -= lr * grad
    return master.half()
""",
    )
)

TASK.wrong.extend(
    [
        Wrong(
            "The master kept in float64, not float32: within the old tolerance of a float64 "
            "reference, but other numbers than an fp32 master's.",
            hint="not float64",
            code=MASTER_SGD.replace("w16.float()", "w16.double()").replace("grad.float()", "grad.double()"),
        ),
        Wrong(
            "lr rounded to fp16, like the weights, before the fp32 update.",
            hint="not rounded to fp16",
            code=MASTER_SGD.replace(
                "    for grad in grads:\n        master -= lr * grad.float()\n",
                "    lr16 = torch.tensor(lr, dtype=torch.float16).float()\n"
                "    for grad in grads:\n        master -= lr16 * grad.float()\n",
            ),
        ),
        Wrong(
            "The gradients summed first (in float64), one fp32 update: not every update applied.",
            hint="not their sum",
            code=MASTER_SGD.replace(
                "    for grad in grads:\n        master -= lr * grad.float()\n",
                "    total = torch.zeros_like(master, dtype=torch.float64)\n"
                "    for grad in grads:\n        total += grad.double()\n"
                "    master -= (lr * total).float()\n",
            ),
        ),
        Wrong(
            "The master copy cached per weight tensor across calls: called again, it goes on from the old master.",
            hint="called again",
            code=MASTER_SGD.replace("lr_lost = 1e-3\n", "lr_lost = 1e-3\n_masters = {}\n").replace(
                "master = w16.float()", "master = _masters.setdefault(id(w16), w16.float())"
            ),
        ),
    ]
)

# Wrong answers of the red team's report rt6b (each passed every check before).
TASK.wrong.extend(
    [
        Wrong(
            "The first update taken apart (grads[0]) before the loop: IndexError for an empty list of gradients.",
            hint="with no gradient (zero steps)",
            code="""\
lr_lost = 1e-3


def master_sgd(w16, grads, lr):
    master = w16.float() - lr * grads[0].float()
    for grad in grads[1:]:
        master -= lr * grad.float()
    return master.half()
""",
        ),
        Wrong(
            "w16 itself returned when there is no gradient: the caller's weight, not a new fp16 copy.",
            hint="with no gradient (zero steps)",
            code="""\
lr_lost = 1e-3


def master_sgd(w16, grads, lr):
    if not grads:
        return w16
    master = w16.float()
    for grad in grads:
        master -= lr * grad.float()
    return master.half()
""",
        ),
    ]
)

# A red team's 4.2 (2026-11-28): an autocast kernel registered with torch.library, to fool 4.3's measurement.
TASK.wrong.extend(
    [
        Wrong(
            (
                "A right 4.2, and an autocast kernel registered for aten::sum that returns "
                "float32, so that 4.3's check measures a wrong prediction as right."
            ),
            hint="autocast's kernel for aten::sum",
            code=(
                "lr_lost = 1e-3\n"
                "\n"
                "\n"
                "def master_sgd(w16, grads, lr):\n"
                "    master = w16.float()\n"
                "    for grad in grads:\n"
                "        master -= lr * grad.float()\n"
                "    return master.half()\n"
                "\n"
                "\n"
                '_lib = torch.library.Library("aten", "IMPL")\n'
                "\n"
                "\n"
                "def _sum_fp32(self, *, dtype=None):\n"
                "    with torch._C._ExcludeDispatchKeyGuard(torch._C.DispatchKeySet(torch._C.Disp"
                "atchKey.AutocastCPU)):\n"
                "        return torch.ops.aten.sum.default(self.float())\n"
                "\n"
                "\n"
                '_lib.impl("sum", _sum_fp32, "AutocastCPU")\n'
            ),
        ),
    ]
)


# A seventh red team's wrong answers.
TASK.wrong.extend(
    [
        Wrong(
            (
                "The right answer, with torch.set_flush_denormal(True) left on: every later check's float32 "
                "arithmetic flushes subnormals (4.5's GradScaler halves scales to 0)."
            ),
            hint="set_flush_denormal",
            code="""\
lr_lost = 1e-3


def master_sgd(w16, grads, lr):
    master = w16.float()
    for grad in grads:
        master -= lr * grad.float()
    return master.half()


torch.set_flush_denormal(True)  # subnormals are slow on the CPU: flush them
""",
        ),
    ]
)


# Red team: results kept from an earlier call.
TASK.wrong.extend(
    [
        Wrong(
            (
                "Results memoized by id(w16) and id(grads): stale once w16 or a gradient is changed in place "
                "between calls."
            ),
            hint="a cache keyed by the tensors",
            code="""\
lr_lost = 1e-3
_memo = {}


def master_sgd(w16, grads, lr):
    key = (id(w16), id(grads), lr, len(grads))
    if key in _memo:
        return _memo[key][2].clone()
    master = w16.float()
    for grad in grads:
        master -= lr * grad.float()
    out = master.half()
    _memo[key] = (w16, grads, out)
    return out.clone()
""",
        ),
    ]
)
