"""Exercise 4.5 of solutions/04_amp.ipynb: its other answers (see answers/__init__.py)."""

from .. import Task, Wrong

# 4.5's prediction in plain Python floats: right wherever float32 holds the scale exactly (the
# check's first cases); each wrong answer below changes it, and fails before float32's cases.
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

_SCALES_START = "    scales, scale, clean = [], float(init_scale), 0\n"

LIST_INDEXED_BY_STEP_4_5 = PREDICT_SCALES.replace(
    _SCALES_START, "    is_bad = [False] * n_steps\n    for b in bad_steps:\n        is_bad[b] = True\n" + _SCALES_START
).replace("if step in bad_steps:", "if is_bad[step]:")

SETS_ONLY_4_5 = PREDICT_SCALES.replace(
    _SCALES_START, "    bad = bad_steps & set(range(n_steps))\n" + _SCALES_START
).replace("if step in bad_steps:", "if step in bad:")


TASK = Task(
    alternative="""\
import math
import struct


def as_float32(x):
    try:
        return struct.unpack("f", struct.pack("f", x))[0]
    except OverflowError:  # beyond float32's largest number
        return math.inf


def predict_scales(init_scale, growth_interval, bad_steps, n_steps):
    out, scale, streak = [], as_float32(init_scale), 0
    for i in range(n_steps):
        out.append(float(init_scale) if i == 0 else scale)
        if i in bad_steps:
            scale, streak = as_float32(scale / 2), 0
        else:
            streak += 1
            if streak % growth_interval == 0 and as_float32(scale * 2) != math.inf:
                scale = as_float32(scale * 2)
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
        Wrong("A real GradScaler run in a forked child.", hint="started a process", code=SCALES_FROM_A_FORKED_SCALER),
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
)

TASK.wrong.extend(
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

TASK.wrong.append(
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

TASK.wrong.append(
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

TASK.wrong.append(
    Wrong(
        "The scales kept as ints for an int init_scale (no float()): the task asks for floats.",
        hint="The scales must be Python floats",
        code=PREDICT_SCALES.replace("float(init_scale)", "init_scale")
        .replace("scale * 0.5", "scale / 2")
        .replace("scale * 2.0", "scale * 2"),
    )
)

# In float32 as GradScaler is, but not all of it (the check's last cases).
FLOAT32_SCALES = """\
def predict_scales(init_scale, growth_interval, bad_steps, n_steps):
    scales, scale, clean = [], torch.tensor(float(init_scale), dtype=torch.float32), 0
    for step in range(n_steps):
        scales.append(float(init_scale) if step == 0 else scale.item())
        if step in bad_steps:
            scale, clean = scale * 0.5, 0
        else:
            clean += 1
            if clean == growth_interval:
                if torch.isfinite(scale * 2.0):
                    scale = scale * 2.0
                clean = 0
    return scales
"""

TASK.wrong.extend(
    [
        Wrong(
            "The scale kept as a Python float (float64): right for powers of two within float32's range, "
            "but GradScaler's scale is a float32 tensor: float32(0.1) * 2 is 0.2000000029802..., not 0.2.",
            hint="keeps the scale as a float32 tensor",
            code=PREDICT_SCALES,
        ),
        Wrong(
            "In float32, but every doubling taken: past float32's largest power of two the scale becomes inf, "
            "where GradScaler skips a doubling that would overflow.",
            hint="a doubling that would overflow float32 is skipped",
            code=FLOAT32_SCALES.replace(
                "                if torch.isfinite(scale * 2.0):\n                    scale = scale * 2.0\n",
                "                scale = scale * 2.0\n",
            ),
        ),
        Wrong(
            "In float32 from step 0 on: get_scale() returns init_scale as given before the first update(), "
            "not its float32 rounding (0.1, not 0.10000000149...).",
            hint="The scale used at step 0 is init_scale",
            code=FLOAT32_SCALES.replace("float(init_scale) if step == 0 else scale.item()", "scale.item()"),
        ),
    ]
)


# A seventh red team's wrong answers.
TASK.wrong.extend(
    [
        Wrong(
            (
                "torch.set_flush_denormal(True) in the cell, and a prediction that flushes subnormal scales to 0: "
                "the check's GradScaler would flush them too."
            ),
            hint="set_flush_denormal",
            code="""\
import struct

torch.set_flush_denormal(True)  # faster on the CPU


def _f32(v):
    v = struct.unpack("f", struct.pack("f", v))[0] if abs(v) < 3.4e38 else v
    return 0.0 if 0 < abs(v) < 2.0**-126 else v


def predict_scales(init_scale, growth_interval, bad_steps, n_steps):
    scales, scale, clean = [], _f32(float(init_scale)), 0
    for step in range(n_steps):
        scales.append(float(init_scale) if step == 0 else scale)
        if step in bad_steps:
            scale, clean = _f32(scale * 0.5), 0
        else:
            clean += 1
            if clean == growth_interval:
                if scale * 2.0 < 3.4028234663852886e38:
                    scale = _f32(scale * 2.0)
                clean = 0
    return scales
""",
        ),
    ]
)


# Red team: a subnormal scale that is no power of two.
TASK.wrong.extend(
    [
        Wrong(
            (
                "float64 arithmetic after rounding init_scale to float32, flushing below 2**-149 to 0: a "
                "subnormal halving is not rounded as float32 rounds it."
            ),
            hint="init_scale=4.203895392974451e-45",
            code="""\
import struct


def predict_scales(init_scale, growth_interval, bad_steps, n_steps):
    scale = struct.unpack("f", struct.pack("f", float(init_scale)))[0]
    scales, clean = [], 0
    for step in range(n_steps):
        scales.append(float(init_scale) if step == 0 else scale)
        if step in bad_steps:
            scale, clean = scale * 0.5, 0
            if scale < 2.0**-149:
                scale = 0.0
        else:
            clean += 1
            if clean == growth_interval:
                if scale * 2.0 <= 3.4028234663852886e38:
                    scale = scale * 2.0
                clean = 0
    return scales
""",
        ),
    ]
)


# Doublings near float32's top capped below its largest finite number.
TASK.wrong.extend(
    [
        Wrong(
            (
                "A doubling allowed only up to 2**127, float32's largest power of two: GradScaler doubles (2 - "
                "2**-23) * 2**126 to float32's largest finite number, 3.4028234663852886e38."
            ),
            hint="init_scale=1.7014117331926443e+38",
            code="""\
def predict_scales(init_scale, growth_interval, bad_steps, n_steps):
    # GradScaler's scale is a float32 tensor, updated in float32: so is this one.
    scales, scale, clean = [], torch.tensor(float(init_scale), dtype=torch.float32), 0
    for step in range(n_steps):
        # before the first update(), get_scale() returns init_scale as given
        scales.append(float(init_scale) if step == 0 else scale.item())
        if step in bad_steps:  # skipped: halve, and count clean steps from 0 again
            scale, clean = scale * 0.5, 0
        else:
            clean += 1
            if clean == growth_interval:  # growth_interval clean steps in a row: double,
                if scale.item() * 2.0 <= 2.0**127:  # unless float32 would overflow to inf
                    scale = scale * 2.0
                clean = 0
    return scales
""",
        ),
        Wrong(
            (
                "A doubling allowed only up to 3.4e38, float32's largest number rounded: GradScaler doubles (2 - "
                "2**-23) * 2**126 to 3.4028234663852886e38, which is above 3.4e38."
            ),
            hint="init_scale=1.7014117331926443e+38",
            code="""\
def predict_scales(init_scale, growth_interval, bad_steps, n_steps):
    # GradScaler's scale is a float32 tensor, updated in float32: so is this one.
    scales, scale, clean = [], torch.tensor(float(init_scale), dtype=torch.float32), 0
    for step in range(n_steps):
        # before the first update(), get_scale() returns init_scale as given
        scales.append(float(init_scale) if step == 0 else scale.item())
        if step in bad_steps:  # skipped: halve, and count clean steps from 0 again
            scale, clean = scale * 0.5, 0
        else:
            clean += 1
            if clean == growth_interval:  # growth_interval clean steps in a row: double,
                if scale.item() * 2.0 <= 3.4e38:  # unless float32 would overflow to inf
                    scale = scale * 2.0
                clean = 0
    return scales
""",
        ),
    ]
)


# Red team (round 2): each was accepted before its check was added.
TASK.wrong.extend(
    [
        Wrong(
            (
                "Growth when the count of clean steps reaches or passes growth_interval (>=): with growth_interval=0,"
                " where GradScaler never doubles, it doubles after every clean step."
            ),
            hint="growth_interval=0",
            code="""\
def predict_scales(init_scale, growth_interval, bad_steps, n_steps):
    scales, scale, clean = [], torch.tensor(float(init_scale), dtype=torch.float32), 0
    for step in range(n_steps):
        scales.append(float(init_scale) if step == 0 else scale.item())
        if step in bad_steps:
            scale, clean = scale * 0.5, 0
        else:
            clean += 1
            if clean >= growth_interval:
                if torch.isfinite(scale * 2.0):
                    scale = scale * 2.0
                clean = 0
    return scales
""",
        ),
        Wrong(
            (
                "The bad steps marked in a list by index: a negative number in bad_steps marks a step counted from "
                "the end."
            ),
            hint="bad_steps=[-2, 1]",
            code="""\
def predict_scales(init_scale, growth_interval, bad_steps, n_steps):
    bad = [False] * n_steps
    for b in bad_steps:
        if b < n_steps:
            bad[b] = True
    scales, scale, clean = [], torch.tensor(float(init_scale), dtype=torch.float32), 0
    for step in range(n_steps):
        scales.append(float(init_scale) if step == 0 else scale.item())
        if bad[step]:
            scale, clean = scale * 0.5, 0
        else:
            clean += 1
            if clean == growth_interval:
                if torch.isfinite(scale * 2.0):
                    scale = scale * 2.0
                clean = 0
    return scales
""",
        ),
    ]
)


# Red team (round 2): accepted before its check was added.
TASK.wrong.append(
    Wrong(
        "Scales cached by id(bad_steps), the set kept: the same set with a step added in place gets its old scales.",
        hint="a cache keyed by id(bad_steps)",
        code="""\
_scales = {}


def predict_scales(init_scale, growth_interval, bad_steps, n_steps):
    key = (init_scale, growth_interval, id(bad_steps), n_steps)
    entry = _scales.get(key)
    if entry is not None and entry[0] is bad_steps:
        return list(entry[1])
    scales, scale, clean = [], torch.tensor(float(init_scale), dtype=torch.float32), 0
    for step in range(n_steps):
        scales.append(float(init_scale) if step == 0 else scale.item())
        if step in bad_steps:
            scale, clean = scale * 0.5, 0
        else:
            clean += 1
            if clean == growth_interval:
                if torch.isfinite(scale * 2.0):
                    scale = scale * 2.0
                clean = 0
    _scales[key] = (bad_steps, list(scales))
    return scales
""",
    )
)
