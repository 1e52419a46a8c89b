"""Other answers to the exercises of solutions/04_amp.ipynb (see answers/__init__.py)."""

from . import Task, Wrong

# A right bf16 step (no scaler) for 4.7's answers that go wrong only in `why`.
BF16_STEP = """\
def bf16_step(model, optimizer, x, y):
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=torch.bfloat16):
        loss = F.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()
"""

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
                code="""\
def cast_limits(dtype):
    fi = torch.finfo(dtype)
    return fi.max, fi.tiny
""",
            ),
            Wrong(
                "Underflow at the smallest subnormal, which survives the cast.",
                hint="closer to 0 than",
                code="""\
def cast_limits(dtype):
    fi = torch.finfo(dtype)
    step_at_max = 2.0 ** math.floor(math.log2(fi.max)) * fi.eps
    return fi.max + step_at_max / 2, fi.smallest_normal * fi.eps
""",
            ),
            Wrong(
                "Overflow at the next power of two: it overflows, but so do smaller numbers.",
                hint="smaller ones overflow too",
                code="""\
def cast_limits(dtype):
    fi = torch.finfo(dtype)
    return 2.0 ** (math.floor(math.log2(fi.max)) + 1), fi.smallest_normal * fi.eps / 2
""",
            ),
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
                code="""\
lr_lost = 1e-3


def master_sgd(w16, grads, lr):
    master = w16.float()
    for grad in grads:
        master -= lr * grad.float()
    return master
""",
            ),
            Wrong(
                "A learning rate whose update fp16 still keeps.",
                hint="choose a smaller learning rate",
                code="""\
lr_lost = 0.1


def master_sgd(w16, grads, lr):
    master = w16.float()
    for grad in grads:
        master -= lr * grad.float()
    return master.half()
""",
            ),
            Wrong(
                "The caller's fp16 weight overwritten in place.",
                hint="changed w16",
                code="""\
lr_lost = 1e-3


def master_sgd(w16, grads, lr):
    master = w16.float()
    for grad in grads:
        master -= lr * grad.float()
        w16.copy_(master)
    return w16
""",
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
    torch.nn.utils.clip_grad_norm_(optimizer.param_groups[0]["params"], max_norm)
    scaler.step(optimizer)
    scaler.update()
    return float(loss.detach())
""",
        wrong=[
            Wrong(
                "Clipping the scaled gradients, before unscale_.",
                hint="unscale_ first",
                code="""\
def train_step_amp(model, optimizer, scaler, x, y, max_norm=1.0):
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=torch.float16):
        loss = F.cross_entropy(model(x), y)
    scaler.scale(loss).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.unscale_(optimizer)
    scaler.step(optimizer)
    scaler.update()
    return loss.item()
""",
            ),
            Wrong(
                "No autocast: the forward pass runs in fp32.",
                hint="fp16 autocast",
                code="""\
def train_step_amp(model, optimizer, scaler, x, y, max_norm=1.0):
    optimizer.zero_grad()
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
                "optimizer.step() instead of scaler.step(): inf steps are not skipped.",
                hint="in this order",
                code="""\
def train_step_amp(model, optimizer, scaler, x, y, max_norm=1.0):
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=torch.float16):
        loss = F.cross_entropy(model(x), y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    scaler.update()
    return loss.item()
""",
            ),
            Wrong(
                "The loss not scaled: loss.backward().",
                hint="scaler.scale(loss)",
                code="""\
def train_step_amp(model, optimizer, scaler, x, y, max_norm=1.0):
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=torch.float16):
        loss = F.cross_entropy(model(x), y)
    loss.backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(optimizer)
    scaler.update()
    return loss.item()
""",
            ),
            Wrong(
                "No zero_grad: gradients add up from step to step.",
                hint="optimizer.zero_grad()",
                code="""\
def train_step_amp(model, optimizer, scaler, x, y, max_norm=1.0):
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
                "bf16 autocast where the task asks for fp16.",
                hint="fp16 autocast",
                code="""\
def train_step_amp(model, optimizer, scaler, x, y, max_norm=1.0):
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=torch.bfloat16):
        loss = F.cross_entropy(model(x), y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(optimizer)
    scaler.update()
    return loss.item()
""",
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
                code="""\
def predict_scales(init_scale, growth_interval, bad_steps, n_steps):
    scales, scale, clean = [], float(init_scale), 0
    for step in range(n_steps):
        scales.append(scale)
        if step in bad_steps:
            scale *= 0.5
        else:
            clean += 1
            if clean % growth_interval == 0:
                scale *= 2.0
    return scales
""",
            ),
            Wrong(
                "The scale recorded after update(), one step late.",
                hint="The scale used at step 0 is init_scale",
                code="""\
def predict_scales(init_scale, growth_interval, bad_steps, n_steps):
    scales, scale, clean = [], float(init_scale), 0
    for step in range(n_steps):
        if step in bad_steps:
            scale, clean = scale * 0.5, 0
        else:
            clean += 1
            if clean == growth_interval:
                scale, clean = scale * 2.0, 0
        scales.append(scale)
    return scales
""",
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
                code="""\
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
""",
            ),
            Wrong(
                "Clipping each micro-batch's scaled gradients; unscale_ once at the end.",
                hint="clip once",
                code="""\
def accumulation_step(model, optimizer, scaler, batches, max_norm=1.0):
    optimizer.zero_grad()
    for x, y in batches:
        with torch.autocast(x.device.type, dtype=torch.float16):
            loss = F.mse_loss(model(x), y) / len(batches)
        scaler.scale(loss).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.unscale_(optimizer)
    scaler.step(optimizer)
    scaler.update()
""",
            ),
            Wrong(
                "One optimizer step per micro-batch.",
                hint="one optimizer step for all micro-batches",
                code="""\
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
""",
            ),
        ],
    ),
    "4.7": Task(
        alternative="""\
def bf16_step(model, optimizer, x, y):
    scaler = torch.amp.GradScaler(x.device.type, enabled=False)   # disabled: every call passes through
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(x.device.type, dtype=torch.bfloat16):
        loss = F.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.item()


why = "B"
""",
        wrong=[
            Wrong(
                "The buggy step kept: an enabled GradScaler in bf16.",
                hint="enabled GradScaler",
                code="""\
def bf16_step(model, optimizer, x, y):
    scaler = torch.amp.GradScaler(x.device.type)
    optimizer.zero_grad()
    with torch.autocast(x.device.type, dtype=torch.bfloat16):
        loss = F.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.item()


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
                code="""\
def bf16_step(model, optimizer, x, y):
    optimizer.zero_grad()
    loss = F.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


why = "B"
""",
            ),
        ],
    ),
}
