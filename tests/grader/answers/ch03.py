"""Other answers to the exercises of solutions/03_modules.ipynb (see answers/__init__.py)."""

from . import Task, Wrong

# 3.3's wrong answers each change one thing in this right pair (a plain LoRALinear, and an
# add_lora that freezes everything and wraps every nn.Linear found by its path).
LORA_LINEAR = """\
class LoRALinear(nn.Module):
    def __init__(self, base, r, alpha):
        super().__init__()
        self.base = base
        self.A = nn.Parameter(torch.randn(r, base.in_features) * 0.01)
        self.B = nn.Parameter(torch.zeros(base.out_features, r))
        self.scale = alpha / r

    def forward(self, x):
        return self.base(x) + (x @ self.A.T @ self.B.T) * self.scale
"""

ADD_LORA = """\


def add_lora(model, r=4, alpha=8.0):
    before = sum(p.numel() for p in model.parameters() if p.requires_grad)
    model.requires_grad_(False)
    paths = [path for path, m in model.named_modules() if isinstance(m, nn.Linear)]
    for path in paths:
        parent, _, name = path.rpartition(".")
        holder = model.get_submodule(parent)
        setattr(holder, name, LoRALinear(getattr(holder, name), r, alpha))
    return before, sum(p.numel() for p in model.parameters() if p.requires_grad)
"""

# 3.1's right module (the solution's): each of its later wrong answers changes one method.
STANDARDIZE = """\
class Standardize(nn.Module):
    def __init__(self, n_features):
        super().__init__()
        self.register_buffer("mean", torch.zeros(n_features))
        self.register_buffer("std", torch.ones(n_features))

    @torch.no_grad()
    def fit(self, x):
        self.mean.copy_(x.mean(dim=0))
        self.std.copy_(x.std(dim=0))

    def forward(self, x):
        return (x - self.mean) / self.std
"""
FORWARD_IN_PLACE = STANDARDIZE.replace("return (x - self.mean) / self.std", "return x.sub_(self.mean).div_(self.std)")
FIT_MAKES_PARAMETERS = STANDARDIZE.replace(
    """\
        self.mean.copy_(x.mean(dim=0))
        self.std.copy_(x.std(dim=0))
""",
    """\
        self.mean = nn.Parameter(x.mean(dim=0), requires_grad=False)
        self.std = nn.Parameter(x.std(dim=0), requires_grad=False)
""",
)

# 3.2's right loop (the solution's): its later wrong answers change one thing in it.
TRAIN_WITH_VALIDATION = """\
def train_with_validation(model, train_batches, val_batch, lr=0.05):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    val_losses = []
    for x, y in train_batches:
        model.train()
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
        model.eval()
        with torch.no_grad():
            val_losses.append(F.mse_loss(model(val_batch[0]), val_batch[1]).item())
    return val_losses
"""
# model.train() after each validation instead of before each step: the first step runs in
# whatever mode the model came in.
TRAIN_MODE_AFTER_VALIDATION = TRAIN_WITH_VALIDATION.replace("        model.train()\n", "").replace(
    "    return val_losses\n", "        model.train()\n    return val_losses\n"
)
# Adam instead of SGD, and the given buggy loop redefined to match, so that the check's
# reference (which runs the buggy loop's steps) trains the same way.
ADAM_AND_THE_REFERENCE_REDEFINED = (
    TRAIN_WITH_VALIDATION.replace("torch.optim.SGD", "torch.optim.Adam")
    + """\


train_with_validation_buggy = train_with_validation
"""
)

# 3.4's right step (the solution's): a wrong answer changes the order of its m and v updates
# to scale grad in place.
ADAMW_STEP = """\
def adamw_step(param, grad, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    beta1, beta2 = betas
    if not state:
        state.update(t=0, m=torch.zeros_like(param), v=torch.zeros_like(param))
    state["t"] += 1
    t, m, v = state["t"], state["m"], state["v"]
    param.mul_(1 - lr * weight_decay)
    m.mul_(beta1).add_(grad, alpha=1 - beta1)
    v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    param.sub_(lr * (m / (1 - beta1 ** t)) / ((v / (1 - beta2 ** t)).sqrt() + eps))
"""
GRAD_SCALED_IN_PLACE = ADAMW_STEP.replace(
    """\
    m.mul_(beta1).add_(grad, alpha=1 - beta1)
    v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
""",
    """\
    v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    m.mul_(beta1).add_(grad.mul_(1 - beta1))
""",
)

TASKS = {
    "3.1": Task(
        alternative="""\
class Standardize(nn.Module):
    def __init__(self, n_features):
        super().__init__()
        self.register_buffer("mean", torch.zeros(n_features))
        self.register_buffer("std", torch.ones(n_features))

    def fit(self, x):
        self.mean = x.mean(0).detach()   # a tensor assigned to a buffer's name replaces the buffer
        self.std = x.std(0).detach()

    def forward(self, x):
        return x.sub(self.mean).div(self.std)
""",
        wrong=[
            Wrong(
                "Plain tensor attributes: not buffers, not in state_dict.",
                hint="register_buffer",
                code="""\
class Standardize(nn.Module):
    def __init__(self, n_features):
        super().__init__()
        self.mean = torch.zeros(n_features)
        self.std = torch.ones(n_features)

    def fit(self, x):
        self.mean = x.mean(dim=0)
        self.std = x.std(dim=0)

    def forward(self, x):
        return (x - self.mean) / self.std
""",
            ),
            Wrong(
                "Parameters that do not require grad: still parameters, an optimizer would get them.",
                hint="not nn.Parameter",
                code="""\
class Standardize(nn.Module):
    def __init__(self, n_features):
        super().__init__()
        self.mean = nn.Parameter(torch.zeros(n_features), requires_grad=False)
        self.std = nn.Parameter(torch.ones(n_features), requires_grad=False)

    def fit(self, x):
        self.mean.copy_(x.mean(dim=0))
        self.std.copy_(x.std(dim=0))

    def forward(self, x):
        return (x - self.mean) / self.std
""",
            ),
            Wrong(
                "Non-persistent buffers: left out of the state dict.",
                hint="persistent=False",
                code="""\
class Standardize(nn.Module):
    def __init__(self, n_features):
        super().__init__()
        self.register_buffer("mean", torch.zeros(n_features), persistent=False)
        self.register_buffer("std", torch.ones(n_features), persistent=False)

    @torch.no_grad()
    def fit(self, x):
        self.mean.copy_(x.mean(dim=0))
        self.std.copy_(x.std(dim=0))

    def forward(self, x):
        return (x - self.mean) / self.std
""",
            ),
            Wrong(
                "fit keeps the statistics in other attributes: the buffers never change.",
                hint="fresh Standardize(3)",
                code="""\
class Standardize(nn.Module):
    def __init__(self, n_features):
        super().__init__()
        self.register_buffer("mean", torch.zeros(n_features))
        self.register_buffer("std", torch.ones(n_features))

    def fit(self, x):
        self.fitted = (x.mean(dim=0), x.std(dim=0))

    def forward(self, x):
        mean, std = getattr(self, "fitted", (self.mean, self.std))
        return (x - mean) / std
""",
            ),
            Wrong(
                "forward standardises the caller's batch in place.",
                hint="overwrote the batch it was given",
                code=FORWARD_IN_PLACE,
            ),
            Wrong(
                "fit replaces the buffers by parameters (that do not require grad).",
                hint="must still be buffers",
                code=FIT_MAKES_PARAMETERS,
            ),
            Wrong(
                "The population standard deviation, not x.std(dim=0).",
                hint="x.std(dim=0)",
                code="""\
class Standardize(nn.Module):
    def __init__(self, n_features):
        super().__init__()
        self.register_buffer("mean", torch.zeros(n_features))
        self.register_buffer("std", torch.ones(n_features))

    @torch.no_grad()
    def fit(self, x):
        self.mean.copy_(x.mean(dim=0))
        self.std.copy_(x.std(dim=0, correction=0))

    def forward(self, x):
        return (x - self.mean) / self.std
""",
            ),
        ],
    ),
    "3.2": Task(
        alternative="""\
def train_with_validation(model, train_batches, val_batch, lr=0.05):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    val_losses = []
    x_val, y_val = val_batch
    for x, y in train_batches:
        model.train(True)
        loss = F.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        model.train(False)
        with torch.inference_mode():
            val_losses.append(float(F.mse_loss(model(x_val), y_val)))
    return val_losses
""",
        wrong=[
            Wrong(
                "The buggy loop unchanged: eval mode stays on after the first validation.",
                hint="Call model.train() before each training step",
                code="""\
def train_with_validation(model, train_batches, val_batch, lr=0.05):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    val_losses = []
    for x, y in train_batches:
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
        model.eval()
        with torch.no_grad():
            val_losses.append(F.mse_loss(model(val_batch[0]), val_batch[1]).item())
    return val_losses
""",
            ),
            Wrong(
                "model.train() once, before the loop: the second step is in eval mode again.",
                hint="Call model.train() before each training step",
                code="""\
def train_with_validation(model, train_batches, val_batch, lr=0.05):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    val_losses = []
    model.train()
    for x, y in train_batches:
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
        model.eval()
        with torch.no_grad():
            val_losses.append(F.mse_loss(model(val_batch[0]), val_batch[1]).item())
    return val_losses
""",
            ),
            Wrong(
                "model.train() after each validation: the first step runs in the mode the model came in.",
                hint="the model came in eval mode",
                code=TRAIN_MODE_AFTER_VALIDATION,
            ),
            Wrong(
                "Adam instead of SGD, with the given buggy loop redefined to match it.",
                hint="your code replaced train_with_validation_buggy",
                code=ADAM_AND_THE_REFERENCE_REDEFINED,
            ),
            Wrong(
                "model.eval() removed: the validation runs in training mode.",
                hint="measured in eval mode",
                code=TRAIN_WITH_VALIDATION.replace("        model.eval()\n", ""),
            ),
        ],
    ),
    "3.3": Task(
        alternative="""\
class LoRALinear(nn.Module):
    def __init__(self, base, r, alpha):
        super().__init__()
        base.weight.requires_grad_(False)
        if base.bias is not None:
            base.bias.requires_grad_(False)
        self.base = base
        self.A = nn.Parameter(torch.empty(r, base.in_features))
        nn.init.kaiming_uniform_(self.A, a=math.sqrt(5))
        self.B = nn.Parameter(torch.zeros(base.out_features, r))
        self.alpha, self.r = alpha, r

    def forward(self, x):
        return self.base(x) + self.alpha / self.r * F.linear(F.linear(x, self.A), self.B)


def add_lora(model, r=4, alpha=8.0):
    before = sum(p.numel() for p in model.parameters() if p.requires_grad)
    for p in model.parameters():
        p.requires_grad = False

    def wrap(module):
        for name, child in list(module.named_children()):
            if isinstance(child, nn.Linear):
                setattr(module, name, LoRALinear(child, r, alpha))
            else:
                wrap(child)

    wrap(model)
    return before, sum(p.numel() for p in model.parameters() if p.requires_grad)
""",
        wrong=[
            Wrong(
                "Only the model's direct children are wrapped.",
                hint="inside submodules",
                code=LORA_LINEAR
                + """\


def add_lora(model, r=4, alpha=8.0):
    before = sum(p.numel() for p in model.parameters() if p.requires_grad)
    model.requires_grad_(False)
    for name, child in list(model.named_children()):
        if isinstance(child, nn.Linear):
            setattr(model, name, LoRALinear(child, r, alpha))
    return before, sum(p.numel() for p in model.parameters() if p.requires_grad)
""",
            ),
            Wrong(
                "The model is not frozen: the wrapped weights still train.",
                hint="Freeze everything else",
                code=LORA_LINEAR + ADD_LORA.replace("    model.requires_grad_(False)\n", ""),
            ),
            Wrong(
                "B starts random: the model changes the moment LoRA is added.",
                hint="B starts at zeros",
                code=LORA_LINEAR.replace(
                    "torch.zeros(base.out_features, r)", "torch.randn(base.out_features, r) * 0.01"
                )
                + ADD_LORA,
            ),
            Wrong(
                "The scale alpha / r is missing.",
                hint="alpha / r",
                code="""\
class LoRALinear(nn.Module):
    def __init__(self, base, r, alpha):
        super().__init__()
        self.base = base
        self.A = nn.Parameter(torch.randn(r, base.in_features) * 0.01)
        self.B = nn.Parameter(torch.zeros(base.out_features, r))

    def forward(self, x):
        return self.base(x) + x @ self.A.T @ self.B.T
"""
                + ADD_LORA,
            ),
            Wrong(
                "A starts at zeros like B: the layer computes base(x), but LoRA can never learn.",
                hint="could never learn",
                code=LORA_LINEAR.replace("torch.randn(r, base.in_features) * 0.01", "torch.zeros(r, base.in_features)")
                + ADD_LORA,
            ),
            Wrong(
                "Only the wrapped Linears are frozen: the model's other parameters (a LayerNorm) still train.",
                hint="not only the wrapped layers",
                code=LORA_LINEAR.replace(
                    "        self.base = base\n", "        self.base = base.requires_grad_(False)\n"
                )
                + ADD_LORA.replace("    model.requires_grad_(False)\n", ""),
            ),
            Wrong(
                "trainable_before counts every parameter, frozen ones too (caught by the hidden check).",
                hint="excludes what was frozen already",
                code=LORA_LINEAR + ADD_LORA.replace(" if p.requires_grad)\n    model", ")\n    model"),
            ),
        ],
    ),
    "3.4": Task(
        alternative="""\
def adamw_step(param, grad, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    b1, b2 = betas
    state.setdefault("step", 0)
    state.setdefault("exp_avg", torch.zeros_like(param))
    state.setdefault("exp_avg_sq", torch.zeros_like(param))
    state["step"] += 1
    t = state["step"]
    with torch.no_grad():
        param.mul_(1 - lr * weight_decay)
        state["exp_avg"].lerp_(grad, 1 - b1)
        state["exp_avg_sq"].mul_(b2).addcmul_(grad, grad, value=1 - b2)
        denom = (state["exp_avg_sq"].sqrt() / math.sqrt(1 - b2 ** t)).add_(eps)
        param.addcdiv_(state["exp_avg"], denom, value=-lr / (1 - b1 ** t))
""",
        wrong=[
            Wrong(
                "Adam's L2 penalty in the gradient instead of decoupled decay.",
                hint="Adam's L2 penalty",
                code="""\
def adamw_step(param, grad, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    beta1, beta2 = betas
    if not state:
        state.update(t=0, m=torch.zeros_like(param), v=torch.zeros_like(param))
    state["t"] += 1
    t = state["t"]
    g = grad + weight_decay * param
    state["m"] = beta1 * state["m"] + (1 - beta1) * g
    state["v"] = beta2 * state["v"] + (1 - beta2) * g * g
    m_hat = state["m"] / (1 - beta1 ** t)
    v_hat = state["v"] / (1 - beta2 ** t)
    param -= lr * m_hat / (v_hat.sqrt() + eps)
""",
            ),
            Wrong(
                "No bias correction.",
                hint="bias correction",
                code="""\
def adamw_step(param, grad, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    beta1, beta2 = betas
    if not state:
        state.update(m=torch.zeros_like(param), v=torch.zeros_like(param))
    param *= 1 - lr * weight_decay
    state["m"] = beta1 * state["m"] + (1 - beta1) * grad
    state["v"] = beta2 * state["v"] + (1 - beta2) * grad * grad
    param -= lr * state["m"] / (state["v"].sqrt() + eps)
""",
            ),
            Wrong(
                "eps inside the square root (only visible with small gradients).",
                hint="eps goes outside the square root",
                code="""\
def adamw_step(param, grad, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    beta1, beta2 = betas
    if not state:
        state.update(t=0, m=torch.zeros_like(param), v=torch.zeros_like(param))
    state["t"] += 1
    t = state["t"]
    param *= 1 - lr * weight_decay
    state["m"] = beta1 * state["m"] + (1 - beta1) * grad
    state["v"] = beta2 * state["v"] + (1 - beta2) * grad * grad
    m_hat = state["m"] / (1 - beta1 ** t)
    v_hat = state["v"] / (1 - beta2 ** t)
    param -= lr * m_hat / (v_hat + eps).sqrt()
""",
            ),
            Wrong(
                "Weight decay applied to the updated weights, after the Adam step.",
                hint="before the Adam update",
                code="""\
def adamw_step(param, grad, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    beta1, beta2 = betas
    if not state:
        state.update(t=0, m=torch.zeros_like(param), v=torch.zeros_like(param))
    state["t"] += 1
    t = state["t"]
    state["m"] = beta1 * state["m"] + (1 - beta1) * grad
    state["v"] = beta2 * state["v"] + (1 - beta2) * grad * grad
    m_hat = state["m"] / (1 - beta1 ** t)
    v_hat = state["v"] / (1 - beta2 ** t)
    param -= lr * m_hat / (v_hat.sqrt() + eps)
    param *= 1 - lr * weight_decay
""",
            ),
            Wrong(
                "The step count is not kept: t = 1 on every call.",
                hint="t counts the calls",
                code="""\
def adamw_step(param, grad, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    beta1, beta2 = betas
    if not state:
        state.update(m=torch.zeros_like(param), v=torch.zeros_like(param))
    t = 1
    param *= 1 - lr * weight_decay
    state["m"] = beta1 * state["m"] + (1 - beta1) * grad
    state["v"] = beta2 * state["v"] + (1 - beta2) * grad * grad
    m_hat = state["m"] / (1 - beta1 ** t)
    v_hat = state["v"] / (1 - beta2 ** t)
    param -= lr * m_hat / (v_hat.sqrt() + eps)
""",
            ),
            Wrong(
                "torch.optim.AdamW does the work.",
                hint="not with torch.optim",
                code="""\
def adamw_step(param, grad, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    if "opt" not in state:
        state["p"] = nn.Parameter(param.detach().clone())
        state["opt"] = torch.optim.AdamW([state["p"]], lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
    with torch.no_grad():
        state["p"].copy_(param)
    state["p"].grad = grad.clone()
    state["opt"].step()
    with torch.no_grad():
        param.copy_(state["p"])
""",
            ),
            Wrong(
                "torch's fused AdamW kernel does the work.",
                hint="not with torch.optim",
                code="""\
def adamw_step(param, grad, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    if not state:
        state.update(m=torch.zeros_like(param), v=torch.zeros_like(param), t=torch.zeros(()))
    state["t"] += 1
    torch._fused_adamw_([param], [grad], [state["m"]], [state["v"]], [], [state["t"]], lr=lr, beta1=betas[0],
                        beta2=betas[1], weight_decay=weight_decay, eps=eps, amsgrad=False, maximize=False)
""",
            ),
            Wrong(
                "torch.optim's functional adamw, through a reference taken before the check.",
                hint="not with torch.optim",
                code="""\
from torch.optim.adamw import adamw as functional_adamw


def adamw_step(param, grad, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    if not state:
        state.update(m=torch.zeros_like(param), v=torch.zeros_like(param), t=torch.zeros(()))
    functional_adamw([param], [grad], [state["m"]], [state["v"]], [], [state["t"]], foreach=False,
                     amsgrad=False, beta1=betas[0], beta2=betas[1], lr=lr, weight_decay=weight_decay, eps=eps,
                     maximize=False)
""",
            ),
            Wrong(
                "m updated from grad scaled in place: the caller's gradient changes.",
                hint="changed the gradient it was given",
                code=GRAD_SCALED_IN_PLACE,
            ),
            Wrong(
                "param rebound instead of updated in place.",
                hint="in place",
                code="""\
def adamw_step(param, grad, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    beta1, beta2 = betas
    if not state:
        state.update(t=0, m=torch.zeros_like(param), v=torch.zeros_like(param))
    state["t"] += 1
    t = state["t"]
    param = param * (1 - lr * weight_decay)
    state["m"] = beta1 * state["m"] + (1 - beta1) * grad
    state["v"] = beta2 * state["v"] + (1 - beta2) * grad * grad
    m_hat = state["m"] / (1 - beta1 ** t)
    v_hat = state["v"] / (1 - beta2 ** t)
    param = param - lr * m_hat / (v_hat.sqrt() + eps)
    return param
""",
            ),
        ],
    ),
    "3.5": Task(
        alternative="""\
def clip_grad_norm(parameters, max_norm):
    params = list(parameters)
    squares = sum(float((p.grad.double() ** 2).sum()) for p in params if p.grad is not None)
    norm = math.sqrt(squares)
    coef = max_norm / (norm + 1e-6)
    if coef < 1:
        for p in params:
            if p.grad is not None:
                p.grad *= coef
    return norm
""",
        wrong=[
            Wrong(
                "Each gradient clipped by its own norm.",
                hint="the same factor",
                code="""\
def clip_grad_norm(parameters, max_norm):
    params = [p for p in parameters if p.grad is not None]
    total = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in params])).item()
    for p in params:
        own = p.grad.norm().item()
        if own > max_norm:
            p.grad.mul_(max_norm / (own + 1e-6))
    return total
""",
            ),
            Wrong(
                "Returns the norm after clipping.",
                hint="the norm measured before clipping",
                code="""\
def clip_grad_norm(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    norm = torch.linalg.vector_norm(torch.stack([g.norm() for g in grads])).item()
    if norm > max_norm:
        for g in grads:
            g.mul_(max_norm / (norm + 1e-6))
    return torch.linalg.vector_norm(torch.stack([g.norm() for g in grads])).item()
""",
            ),
            Wrong(
                "Reads the parameters generator twice: the second loop clips nothing.",
                hint="generator",
                code="""\
def clip_grad_norm(parameters, max_norm):
    norm = math.sqrt(sum(float(p.grad.pow(2).sum()) for p in parameters if p.grad is not None))
    if norm > max_norm:
        for p in parameters:
            if p.grad is not None:
                p.grad.mul_(max_norm / (norm + 1e-6))
    return norm
""",
            ),
            Wrong(
                "Always rescales, also scaling small gradients up.",
                hint="leave the gradients as they are",
                code="""\
def clip_grad_norm(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    norm = torch.linalg.vector_norm(torch.stack([g.norm() for g in grads])).item()
    for g in grads:
        g.mul_(max_norm / (norm + 1e-6))
    return norm
""",
            ),
            Wrong(
                "Calls torch's clip_grad_norm_.",
                hint="without torch.nn.utils' clipping",
                code="""\
def clip_grad_norm(parameters, max_norm):
    return torch.nn.utils.clip_grad_norm_(parameters, max_norm).item()
""",
            ),
            Wrong(
                "torch's clipping functions, through references taken before the check.",
                hint="without torch.nn.utils' clipping",
                code="""\
from torch.nn.utils import clip_grads_with_norm_, get_total_norm


def clip_grad_norm(parameters, max_norm):
    params = [p for p in parameters if p.grad is not None]
    norm = get_total_norm([p.grad for p in params])
    if norm > max_norm:
        clip_grads_with_norm_(params, max_norm, norm)
    return norm.item()
""",
            ),
            Wrong(
                "Crashes on a frozen parameter's None gradient.",
                hint="whose .grad is None",
                code="""\
def clip_grad_norm(parameters, max_norm):
    params = list(parameters)
    norm = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in params])).item()
    if norm > max_norm:
        for p in params:
            p.grad.mul_(max_norm / (norm + 1e-6))
    return norm
""",
            ),
        ],
    ),
    "3.6": Task(
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
        ],
    ),
    "3.7": Task(
        alternative="""\
def checkpointed_forward(blocks, x):
    h = x
    for i in range(len(blocks)):
        h = torch.utils.checkpoint.checkpoint(lambda t, block=blocks[i]: block(t), h, use_reentrant=False)
    return h
""",
        wrong=[
            Wrong(
                "The plain loop: nothing checkpointed.",
                hint="nothing was checkpointed",
                code="""\
def checkpointed_forward(blocks, x):
    for block in blocks:
        x = block(x)
    return x
""",
            ),
            Wrong(
                "One checkpoint around the whole loop.",
                hint="one checkpoint call per block",
                code="""\
def checkpointed_forward(blocks, x):
    def run_all(h):
        for block in blocks:
            h = block(h)
        return h
    return checkpoint(run_all, x, use_reentrant=False)
""",
            ),
            Wrong(
                "use_reentrant=True with an input that does not require grad: no gradients.",
                hint="use_reentrant=False",
                code="""\
def checkpointed_forward(blocks, x):
    for block in blocks:
        x = checkpoint(block, x, use_reentrant=True)
    return x
""",
            ),
            Wrong(
                "use_reentrant=True made to work by switching on requires_grad of the caller's x.",
                hint="changed its input x",
                code="""\
def checkpointed_forward(blocks, x):
    x.requires_grad_()
    for block in blocks:
        x = checkpoint(block, x, use_reentrant=True)
    return x
""",
            ),
        ],
    ),
}
