"""Other answers to the exercises of solutions/04_amp.ipynb (see answers/__init__.py)."""

import textwrap

from . import Task, Wrong

# 4.1's right limits (overflow halfway to the next step above max, underflow at half the
# smallest subnormal): each wrong answer gets one or both of them wrong.
CAST_LIMITS_START = """\
def cast_limits(dtype):
    fi = torch.finfo(dtype)
"""
CAST_LIMITS = (
    CAST_LIMITS_START
    + """\
    step_at_max = 2.0 ** math.floor(math.log2(fi.max)) * fi.eps
    return fi.max + step_at_max / 2, fi.smallest_normal * fi.eps / 2
"""
)
FINFO_MAX_AND_TINY = CAST_LIMITS_START + "    return fi.max, fi.tiny\n"
UNDERFLOW_AT_SMALLEST_SUBNORMAL = CAST_LIMITS.replace("fi.smallest_normal * fi.eps / 2", "fi.smallest_normal * fi.eps")
OVERFLOW_AT_NEXT_POWER_OF_TWO = CAST_LIMITS.replace(
    "    step_at_max = 2.0 ** math.floor(math.log2(fi.max)) * fi.eps\n    return fi.max + step_at_max / 2,",
    "    return 2.0 ** (math.floor(math.log2(fi.max)) + 1),",
)

# The limits found by searching float32's bit patterns (bisection, one cast per try): right,
# but the task asks to compute them from finfo.
SEARCHED_LIMITS = """\
def cast_limits(dtype):
    def first(lo, hi, holds):                  # the smallest bit pattern in [lo, hi] where holds() is true
        while lo < hi:
            mid = (lo + hi) // 2
            if holds(torch.tensor(mid, dtype=torch.int32).view(torch.float32)):
                hi = mid
            else:
                lo = mid + 1
        return lo

    def as_float(bits):
        return torch.tensor(bits, dtype=torch.int32).view(torch.float32).item()

    top = torch.tensor(torch.finfo(dtype).max, dtype=torch.float32).view(torch.int32).item()
    over = first(top, 0x7F800000, lambda x: bool(torch.isinf(x.to(dtype))))
    under = first(0, 0x7F800000, lambda x: x.to(dtype).item() != 0) - 1
    return as_float(over), as_float(under)
"""

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

# Lines of 4.4's and 4.6's right steps that their wrong answers move.
UNSCALE = "    scaler.unscale_(optimizer)\n"
CLIP = "    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)\n"
STEP_AND_UPDATE = "    scaler.step(optimizer)\n    scaler.update()\n"

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
AUTOCAST_CPU = 'torch.autocast("cpu", '
AMP_ON_THE_CPU_ONLY = AMP_STEP.replace("torch.autocast(x.device.type, ", AUTOCAST_CPU)

# 4.5's right prediction (the solution's): each wrong answer changes it.
PREDICT_SCALES = """\
def predict_scales(init_scale, growth_interval, bad_steps, n_steps):
    scales, scale, clean = [], float(init_scale), 0
    for step in range(n_steps):
        scales.append(scale)
        if step in bad_steps:
            scale, clean = scale * 0.5, 0
        else:
            clean += 1
            if clean == growth_interval:
                scale, clean = scale * 2.0, 0
    return scales
"""
# A skipped step halves the scale but does not restart the count of clean steps (growth,
# then, comes on every growth_interval-th clean step counted from the start).
COUNT_NOT_RESTARTED = PREDICT_SCALES.replace("scale, clean = scale * 0.5, 0", "scale *= 0.5").replace(
    "if clean == growth_interval:\n                scale, clean = scale * 2.0, 0",
    "if clean % growth_interval == 0:\n                scale *= 2.0",
)
# The scale recorded after the step's update instead of before it.
RECORD = "        scales.append(scale)\n"
SCALE_RECORDED_LATE = PREDICT_SCALES.replace(RECORD, "").replace("    return scales\n", RECORD + "    return scales\n")
# A real GradScaler run on a dummy weight, as the check does: right numbers, nothing predicted.
SCALES_FROM_A_REAL_SCALER = """\
def predict_scales(init_scale, growth_interval, bad_steps, n_steps):
    weight = torch.nn.Parameter(torch.ones(1))
    optimizer = torch.optim.SGD([weight], lr=0.0)
    scaler = torch.amp.GradScaler("cpu", init_scale=init_scale, growth_interval=growth_interval)
    scales = []
    for step in range(n_steps):
        scales.append(scaler.get_scale())
        optimizer.zero_grad()
        scaler.scale((weight * (float("inf") if step in bad_steps else 1.0)).sum()).backward()
        scaler.step(optimizer)
        scaler.update()
    return scales
"""
# A real GradScaler run where the watch cannot see it: in a forked child, or in a thread.
REAL_SCALER_IN = SCALES_FROM_A_REAL_SCALER.replace("def predict_scales(", "def real_scales(")
SCALES_FROM_A_FORKED_SCALER = (
    "import os\nimport pickle\n\n\n"
    + REAL_SCALER_IN
    + """\


def predict_scales(init_scale, growth_interval, bad_steps, n_steps):
    read, write = os.pipe()
    if os.fork() == 0:
        os.write(write, pickle.dumps(real_scales(init_scale, growth_interval, bad_steps, n_steps)))
        os._exit(0)
    os.close(write)
    data = b""
    while chunk := os.read(read, 1 << 16):
        data += chunk
    os.wait()
    return pickle.loads(data)
"""
)
SCALES_FROM_A_SCALER_IN_A_THREAD = (
    "import threading\n\n\n"
    + REAL_SCALER_IN
    + """\


def predict_scales(init_scale, growth_interval, bad_steps, n_steps):
    out = []
    worker = threading.Thread(
        target=lambda: out.extend(real_scales(init_scale, growth_interval, bad_steps, n_steps))
    )
    worker.start()
    worker.join()
    return out
"""
)
# The check's own helper, which it defines before it calls predict_scales.
SCALES_FROM_THE_CHECKS_HELPER = """\
def predict_scales(init_scale, growth_interval, bad_steps, n_steps):
    return _real_scales(init_scale, growth_interval, bad_steps, n_steps)
"""


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

# The limits found by searching the bit patterns, with dispatch to Python switched off (no
# record sees it): the body of two cheats below.
SEARCHED_UNSEEN = """\
    with torch._C._DisableTorchDispatch():
        top = torch.tensor(fi.max, dtype=torch.float32).view(torch.int32).item()
        bits = torch.arange(top, top + (1 << 23), dtype=torch.int32)
        over = bits[torch.isinf(bits.view(torch.float32).to(dtype))][0]
        sub = torch.tensor(fi.smallest_normal * fi.eps, dtype=torch.float32).view(torch.int32).item()
        bits = torch.arange(sub - (1 << 23), sub + 1, dtype=torch.int32)
        under = bits[bits.view(torch.float32).to(dtype) == 0][-1]
        return over.view(torch.float32).item(), under.view(torch.float32).item()
"""
# Measured, not computed, by a helper that exec runs under globals of its own with dispatch to
# Python switched off (a red team's). The grader's scan refuses exec in a solution; run here
# past the scan, the watch fails them too (it follows code under other globals than the notebook's).
SEARCH_IN_AN_EXECED_HELPER = (
    """\
_helper_ns = {"torch": torch}
exec(\"\"\"
def _search(dtype, fi):
"""
    + SEARCHED_UNSEEN
    + """\"\"\", _helper_ns)


def cast_limits(dtype):
    fi = torch.finfo(dtype)
    return _helper_ns["_search"](dtype, fi)
"""
)
KERNEL_IN_AN_EXECED_HELPER = """\
_helper_ns = {"torch": torch}
exec(\"\"\"
def _real(init_scale, growth_interval, bad_steps, n_steps):
    kernel = torch.ops.aten._amp_update_scale_.default._op
    with torch._C._DisableTorchDispatch():
        scale = torch.full((), float(init_scale))
        tracker = torch.zeros((), dtype=torch.int32)
        out = []
        for step in range(n_steps):
            out.append(scale.item())
            found = torch.full((), 1.0 if step in bad_steps else 0.0)
            kernel(scale, tracker, found, 2.0, 0.5, growth_interval)
        return out
\"\"\", _helper_ns)


def predict_scales(init_scale, growth_interval, bad_steps, n_steps):
    return _helper_ns["_real"](init_scale, growth_interval, bad_steps, n_steps)
"""

# A red team's answers, each once given full credit.
TABLE_KEYED_BY_MAX_4_1 = """\
def cast_limits(dtype):
    fi = torch.finfo(dtype)
    return {
        65504.0: (65520.0, 2.9802322387695312e-08),
        3.3895313892515355e38: (3.3961775292304601e38, 4.591774807899561e-41),
        57344.0: (61440.0, 7.62939453125e-06),
    }[fi.max]
"""
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
_SCALES_START = "    scales, scale, clean = [], float(init_scale), 0\n"
LIST_INDEXED_BY_STEP_4_5 = PREDICT_SCALES.replace(
    _SCALES_START, "    is_bad = [False] * n_steps\n    for b in bad_steps:\n        is_bad[b] = True\n" + _SCALES_START
).replace("if step in bad_steps:", "if is_bad[step]:")
SETS_ONLY_4_5 = PREDICT_SCALES.replace(
    _SCALES_START, "    bad = bad_steps & set(range(n_steps))\n" + _SCALES_START
).replace("if step in bad_steps:", "if step in bad:")

# More of that red team's answers: autocast's conditions and what reaches GradScaler.
FP16_FOR_FLOATS_ONLY = "dtype=torch.float16, enabled=x.is_floating_point())"
AUTOCAST_FOR_FLOATS_ONLY_4_4 = AMP_STEP.replace("dtype=torch.float16)", FP16_FOR_FLOATS_ONLY)
AUTOCAST_IN_TRAINING_ONLY_4_4 = AMP_STEP.replace("dtype=torch.float16)", "dtype=torch.float16, enabled=model.training)")
X_HALVED_BY_HAND_4_4 = AMP_STEP.replace("model(x)", "model(x.half())")
NAN_TO_NUM_4_4 = (
    "def train_step_amp(model, optimizer, scaler, x, y, max_norm=1.0):\n    x = torch.nan_to_num(x)\n"
    + (AMP_STEP.split("\n", 1)[1])
)
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
AUTOCAST_FOR_FLOATS_ONLY_4_7 = (
    BF16_STEP.replace("dtype=torch.bfloat16)", "dtype=torch.bfloat16, enabled=x.is_floating_point())") + WHY
)
X_BF16_BY_HAND_4_7 = BF16_STEP.replace("model(x)", "model(x.bfloat16())") + WHY

TASKS = {
    "4.1": Task(
        alternative="""\
def cast_limits(dtype):
    fi = torch.finfo(dtype)
    mantissa_bits = round(-math.log2(fi.eps))
    top = math.frexp(fi.max)[1] - 1            # max = 1.11...1 (binary) x 2**top
    overflow_at = math.ldexp(2 - 2.0 ** -(mantissa_bits + 1), top)
    underflow_at = math.ldexp(fi.smallest_normal * fi.eps, -1)
    return overflow_at, underflow_at
""",
        wrong=[
            Wrong(
                "The numbers finfo prints: max does not overflow.",
                hint="halfway",
                code=FINFO_MAX_AND_TINY,
            ),
            Wrong(
                "Underflow at the smallest subnormal, which survives the cast.",
                hint="closer to 0 than",
                code=UNDERFLOW_AT_SMALLEST_SUBNORMAL,
            ),
            Wrong(
                "Overflow at the next power of two: it overflows, but so do smaller numbers.",
                hint="smaller ones overflow too",
                code=OVERFLOW_AT_NEXT_POWER_OF_TWO,
            ),
            Wrong(
                "The limits found by a search (bisection over float32's bit patterns), not computed.",
                hint="searches for the limits",
                code=SEARCHED_LIMITS,
            ),
            Wrong(
                "A search over float32's bit patterns, run by an exec'd helper with dispatch off.",
                hint="where the grader cannot record it",
                code=SEARCH_IN_AN_EXECED_HELPER,
            ),
            Wrong(
                "table of limits keyed by finfo.max: nothing computed",
                hint="not (248.0, 0.0009765625)",
                code=TABLE_KEYED_BY_MAX_4_1,
            ),
        ],
        # Once refused by the check that cast_limits reads torch.finfo (it looked at the code's
        # own names only): the function behind a cache, and finfo given as a default argument.
        other_right=[
            """\
import functools


@functools.lru_cache(maxsize=None)
def cast_limits(dtype):
    fi = torch.finfo(dtype)
    step_at_max = 2.0 ** math.floor(math.log2(fi.max)) * fi.eps
    return fi.max + step_at_max / 2, fi.smallest_normal * fi.eps / 2
""",
            """\
def cast_limits(dtype, info=torch.finfo):
    fi = info(dtype)
    step_at_max = 2.0 ** math.floor(math.log2(fi.max)) * fi.eps
    return fi.max + step_at_max / 2, fi.smallest_normal * fi.eps / 2
""",
        ],
    ),
    "4.2": Task(
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
    ),
    "4.3": Task(
        alternative="""\
fp32_ops = ["h + x", "F.cross_entropy(h, labels)", "F.mse_loss(h, x)", "h.prod()"]
""",
        wrong=[
            Wrong(
                "CUDA's reputation applied to the CPU: softmax, norms and sums in fp32.",
                hint="Ops on neither list follow their inputs",
                code="""\
fp32_ops = {"F.softmax(h, dim=-1)", "F.layer_norm(h, (8,))", "F.group_norm(h, 2)", "h.sum()", "h.prod()",
            "F.mse_loss(h, x)", "F.cross_entropy(h, labels)", "h + x"}
""",
            ),
            Wrong(
                "Type promotion of bf16 + fp32 forgotten.",
                hint="promotes to the wider one",
                code="""\
fp32_ops = {"h.prod()", "F.mse_loss(h, x)", "F.cross_entropy(h, labels)"}
""",
            ),
            Wrong(
                "Names that are not keys of CANDIDATES.",
                hint="not keys of CANDIDATES",
                code="""\
fp32_ops = {"mse_loss", "cross_entropy", "prod", "add"}
""",
            ),
            Wrong(
                "The candidates run under autocast: right, but measured, not predicted.",
                hint="measured, not predicted",
                code="""\
x = torch.randn(4, 8)
with torch.autocast("cpu", dtype=torch.bfloat16):
    h = torch.nn.Linear(8, 8)(x)
    fp32_ops = {name for name, op in CANDIDATES.items() if op(h, x).dtype == torch.float32}
""",
            ),
            Wrong(
                "A wrong prediction, and an IPython input transformer that turns the check into its print line.",
                hint="your code replaced IPython's input transformers",
                code="""\
fp32_ops = {"h @ h.T"}
shell = [value for name, value in globals().items() if name == "get_" + "ipython"][0]()
shell.input_transformers_post.append(
    lambda lines: ['print("Exercise 4.3 passed")\\n'] if any("4.3" in line for line in lines) else lines
)
""",
            ),
        ],
    ),
    "4.4": Task(
        alternative="""\
def train_step_amp(model, optimizer, scaler, x, y, max_norm=1.0):
    for p in model.parameters():
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
    ),
    "4.5": Task(
        alternative="""\
def predict_scales(init_scale, growth_interval, bad_steps, n_steps):
    out, scale, streak = [], init_scale, 0
    for i in range(n_steps):
        out.append(float(scale))
        if i in bad_steps:
            scale, streak = scale / 2, 0
        else:
            streak += 1
            if streak % growth_interval == 0:
                scale *= 2
    return out
""",
        wrong=[
            Wrong(
                "The count of clean steps not restarted after a skipped step.",
                hint="starts counting clean steps from 0",
                code=COUNT_NOT_RESTARTED,
            ),
            Wrong(
                "The scale recorded after update(), one step late.",
                hint="The scale used at step 0 is init_scale",
                code=SCALE_RECORDED_LATE,
            ),
            Wrong(
                "A real GradScaler run instead of a prediction.",
                hint="ran a GradScaler",
                code=SCALES_FROM_A_REAL_SCALER,
            ),
            Wrong(
                "The check's own helper called instead of a prediction.",
                hint="ran a GradScaler",
                code=SCALES_FROM_THE_CHECKS_HELPER,
            ),
            Wrong(
                "A real GradScaler run in a forked child.", hint="started a process", code=SCALES_FROM_A_FORKED_SCALER
            ),
            Wrong("A real GradScaler run in a thread.", hint="started a thread", code=SCALES_FROM_A_SCALER_IN_A_THREAD),
            Wrong(
                "GradScaler's own kernel, run by an exec'd helper with dispatch off: measured.",
                hint="where the grader cannot record it",
                code=KERNEL_IN_AN_EXECED_HELPER,
            ),
            Wrong(
                "is_bad list indexed by bad step: IndexError for a bad step >= n_steps",
                hint="IndexError",
                code=LIST_INDEXED_BY_STEP_4_5,
            ),
            Wrong(
                "bad_steps used with set operators: TypeError for a list/tuple of bad steps",
                hint="bad_steps given as a list",
                code=SETS_ONLY_4_5,
            ),
        ],
    ),
    "4.6": Task(
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
    ),
    "4.7": Task(
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
    ),
}

TASKS["4.1"].wrong.append(
    Wrong(
        "The two pairs looked up in a table (found by casting in a scratch cell), not computed "
        "from torch.finfo(dtype): any other format, torch.float8_e5m2 say, raises a KeyError.",
        hint="float8_e5m2",
        code="""\
def cast_limits(dtype):
    return {
        torch.float16: (65520.0, 2.9802322387695312e-08),
        torch.bfloat16: (3.39617752923046e38, 4.591774807899561e-41),
    }[dtype]
""",
    )
)
TASKS["4.2"].wrong.append(
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
TASKS["4.3"].wrong.append(
    Wrong(
        "The candidates run under autocast in the answer cell, rebuilt on a copy of the "
        "globals, with the dispatch modes off, so that neither a call nor an operation shows: "
        "measured, not predicted.",
        hint="measured, not predicted",
        code="""\
import types

from torch.utils._python_dispatch import _disable_current_modes


def _measure():
    x = torch.randn(4, 8)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        h = torch.nn.Linear(8, 8)(x)
        ops = {n: types.FunctionType(op.__code__, globals()) for n, op in CANDIDATES.items()}
        return {n for n, op in ops.items() if op(h, x).dtype == torch.float32}


with _disable_current_modes():
    fp32_ops = types.FunctionType(_measure.__code__, dict(globals()))()
""",
    )
)

# Wrong answers of the red team's report ch0406 (each passed every check before).
TASKS["4.1"].wrong.extend(
    [
        Wrong(
            "A complete table of the three formats with inf (float8_e5m2 included), not computed "
            "from torch.finfo(dtype): right numbers, but nothing computed.",
            hint="never reads torch.finfo",
            code="""\
def cast_limits(dtype):
    return {
        torch.float16: (65520.0, 2.9802322387695312e-08),
        torch.bfloat16: (3.3961775292304601e38, 4.591774807899561e-41),
        torch.float8_e5m2: (61440.0, 7.62939453125e-06),
    }[dtype]
""",
        ),
        Wrong(
            "The limits searched by bisection when the cell runs (outside the watched call), and "
            "only looked up by cast_limits.",
            hint="searched for the limits when it ran",
            code="""\
def _first(lo, hi, holds):
    while lo < hi:
        mid = (lo + hi) // 2
        if holds(torch.tensor(mid, dtype=torch.int32).view(torch.float32)):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _as_float(bits):
    return torch.tensor(bits, dtype=torch.int32).view(torch.float32).item()


def _search(dtype):
    top = torch.tensor(torch.finfo(dtype).max, dtype=torch.float32).view(torch.int32).item()
    over = _first(top, 0x7F800000, lambda x: bool(torch.isinf(x.to(dtype))))
    under = _first(0, 0x7F800000, lambda x: x.to(dtype).item() != 0) - 1
    return _as_float(over), _as_float(under)


_LIMITS = {d: _search(d) for d in (torch.float16, torch.bfloat16, torch.float8_e5m2)}


def cast_limits(dtype):
    torch.finfo(dtype)
    return _LIMITS[dtype]
""",
        ),
    ]
)
TASKS["4.2"].wrong.extend(
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
TASKS["4.4"].wrong.extend(
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
TASKS["4.5"].wrong.extend(
    [
        Wrong(
            "The scale capped at 2**24 (apex's max_loss_scale): GradScaler has no cap.",
            hint="no largest scale",
            code=PREDICT_SCALES.replace("scale, clean = scale * 2.0, 0", "scale, clean = min(scale * 2.0, 2.0**24), 0"),
        ),
        Wrong(
            "The scale floored at 1.0 (min_loss_scale): GradScaler has no floor.",
            hint="no smallest scale",
            code=PREDICT_SCALES.replace("scale, clean = scale * 0.5, 0", "scale, clean = max(scale * 0.5, 1.0), 0"),
        ),
        Wrong(
            "Integer arithmetic on an int init_scale: 1 halves to 0, not 0.5.",
            hint="halves 1 to 0.5",
            code=PREDICT_SCALES.replace("float(init_scale)", "init_scale")
            .replace("scale * 0.5", "scale // 2")
            .replace("scale * 2.0", "scale * 2"),
        ),
    ]
)
TASKS["4.6"].wrong.extend(
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
TASKS["4.7"].wrong.extend(
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

# Wrong answers of the red team's report rt5a (each passed every check before).
TASKS["4.1"].wrong.append(
    Wrong(
        "A table of the three formats with inf, torch.finfo(dtype) read for show only: the numbers do not "
        "follow finfo (nothing computed from it).",
        hint="only read for show",
        code="""\
def cast_limits(dtype):
    fi = torch.finfo(dtype)
    return {
        torch.float16: (65520.0, 2.9802322387695312e-08),
        torch.bfloat16: (3.3961775292304601e38, 4.591774807899561e-41),
        torch.float8_e5m2: (61440.0, 7.62939453125e-06),
    }[dtype]
""",
    )
)
TASKS["4.5"].wrong.append(
    Wrong(
        "init_scale put in the list before the loop, then n_steps - 1 updates: for n_steps = 0 it returns "
        "[init_scale], where no step uses any scale.",
        hint="with n_steps = 0",
        code="""\
def predict_scales(init_scale, growth_interval, bad_steps, n_steps):
    scales, scale, clean = [float(init_scale)], float(init_scale), 0
    for step in range(n_steps - 1):
        if step in bad_steps:
            scale, clean = scale * 0.5, 0
        else:
            clean += 1
            if clean == growth_interval:
                scale, clean = scale * 2.0, 0
        scales.append(scale)
    return scales
""",
    )
)
TASKS["4.7"].wrong.append(
    Wrong(
        'The buggy step with GradScaler("cuda"): switched off on a machine without CUDA, enabled (scaling '
        "every bf16 step) on any machine with one.",
        hint="as on a machine with CUDA",
        code=SCALER_BF16_STEP.replace("torch.amp.GradScaler(x.device.type)", 'torch.amp.GradScaler("cuda")') + WHY,
    )
)

# 4.1's limits searched over 2**23 float32 candidates, cast all at once, with what records the
# operations switched off: torch's dispatch to Python excluded, or the dispatch modes popped.
SEARCH_UNSEEN = """\
def cast_limits(dtype):
    fi = torch.finfo(dtype)
    with HIDDEN:
        top = torch.tensor(fi.max, dtype=torch.float32).view(torch.int32).item()
        bits = torch.arange(top, top + (1 << 23), dtype=torch.int32)
        over = bits[torch.isinf(bits.view(torch.float32).to(dtype))][0]
        sub = torch.tensor(fi.smallest_normal * fi.eps, dtype=torch.float32).view(torch.int32).item()
        bits = torch.arange(sub - (1 << 23), sub + 1, dtype=torch.int32)
        under = bits[bits.view(torch.float32).to(dtype) == 0][-1]
        return over.view(torch.float32).item(), under.view(torch.float32).item()
"""
TASKS["4.1"].wrong.extend(
    [
        Wrong(
            "The limits searched over 2**23 candidates with torch._C._DisableTorchDispatch(): no operation "
            "reaches the check's record.",
            hint="where the grader cannot record it",
            code=SEARCH_UNSEEN.replace("HIDDEN", "torch._C._DisableTorchDispatch()"),
        ),
        Wrong(
            "The limits searched over 2**23 candidates with the dispatch modes popped (_disable_current_modes).",
            hint="where the grader cannot record it",
            code="from torch.utils._python_dispatch import _disable_current_modes\n\n\n"
            + SEARCH_UNSEEN.replace("HIDDEN", "_disable_current_modes()"),
        ),
    ]
)
TASKS["4.5"].wrong.append(
    Wrong(
        "GradScaler's own update kernel, torch._amp_update_scale_, run step by step with torch's dispatch "
        "switched off (no aten._amp_ operation recorded): the scales measured, not predicted.",
        hint="where the grader cannot record it",
        code="""\
def predict_scales(init_scale, growth_interval, bad_steps, n_steps):
    with torch._C._DisableTorchDispatch():
        scale = torch.full((), float(init_scale))
        tracker = torch.zeros((), dtype=torch.int32)
        scales = []
        for step in range(n_steps):
            scales.append(scale.item())
            found = torch.full((), 1.0 if step in bad_steps else 0.0)
            torch._amp_update_scale_(scale, tracker, found, 2.0, 0.5, growth_interval)
    return scales
""",
    )
)
TASKS["4.7"].wrong.append(
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
TASKS["4.1"].wrong.append(
    Wrong(
        "The limits searched when the cell runs, with torch._C._DisableTorchDispatch() (the cell's record "
        "shows nothing), and only looked up by cast_limits, torch.finfo read for show.",
        hint="only read for show",
        code="""\
def _search(dtype):
    fi = torch.finfo(dtype)
"""
        + SEARCHED_UNSEEN
        + """

_LIMITS = {d: _search(d) for d in (torch.float16, torch.bfloat16, torch.float8_e5m2)}


def cast_limits(dtype):
    fi = torch.finfo(dtype)
    return _LIMITS[dtype]
""",
    )
)

# Wrong answers of the red team's report rt6b (each passed every check before).
TASKS["4.2"].wrong.extend(
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
TASKS["4.4"].wrong.extend(
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
TASKS["4.6"].wrong.extend(
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

# Round 6 (rt6e): ints where the task asks for floats (4.1, 4.5), and a GradScaler enabled on a
# GPU only (4.7).
TASKS["4.1"].wrong.append(
    Wrong(
        "overflow_at returned as an int (int(...)): the task asks for Python floats.",
        hint="nor an int",
        code=CAST_LIMITS.replace("return fi.max + step_at_max / 2,", "return int(fi.max + step_at_max / 2),"),
    )
)
TASKS["4.5"].wrong.append(
    Wrong(
        "The scales kept as ints for an int init_scale (no float()): the task asks for floats.",
        hint="The scales must be Python floats",
        code=PREDICT_SCALES.replace("float(init_scale)", "init_scale")
        .replace("scale * 0.5", "scale / 2")
        .replace("scale * 2.0", "scale * 2"),
    )
)
TASKS["4.7"].wrong.append(
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
TASKS["4.4"].wrong.append(
    Wrong(
        "torch.manual_seed(0) at the start of every step: the caller's random state reset, every "
        "step drawing the same dropout masks.",
        hint="Seed nothing inside the step",
        code=AMP_STEP.replace("    optimizer.zero_grad()\n", "    torch.manual_seed(0)\n    optimizer.zero_grad()\n"),
    )
)
TASKS["4.7"].wrong.extend(
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

# A red team's 4.3 (2026-11-28): a value read back through a format string; a cell run by
# a cell that zeroed the session's counter.
TASKS["4.3"].wrong.extend(
    [
        Wrong(
            ("reads the kernel's value back through a format string when run alone"),
            hint="measured, not predicted",
            code=(
                'fp32_ops = {"h.prod()", "F.mse_loss(h, x)", "F.cross_entropy(h, labels)", "h + x'
                '"} if "<module" in f"{__builtins__}" else {k for k in CANDIDATES if f"\'{k}\'" in '
                '"{0.__globals__[ast].sys.modules[grader.kernel.session]._SESSION.namespace[fp32_'
                'ops]}".format(print)}\n'
            ),
        ),
        Wrong(
            ("measured under autocast, then written by a cell it runs, with the session's counter zeroed"),
            hint="measured, not predicted",
            code=(
                "_x = torch.randn(4, 8)\n"
                'with torch.autocast("cpu", dtype=torch.bfloat16):\n'
                "    _h = torch.nn.Linear(8, 8)(_x)\n"
                "    _m = sorted(n for n, op in CANDIDATES.items() if op(_h, _x).dtype == torch.f"
                "loat32)\n"
                "_grading._running = 0\n"
                'get_ipython().run_cell(f"fp32_ops = {set(_m)!r}")\n'
            ),
        ),
    ]
)

# A red team's 4.2 (2026-11-28): an autocast kernel registered with torch.library, to fool 4.3's measurement.
TASKS["4.2"].wrong.extend(
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

# A red team's 4.4 (2026-11-28, second round).
TASKS["4.4"].wrong.extend(
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

# A red team's 4.6 (2026-11-28, second round).
TASKS["4.6"].wrong.extend(
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
