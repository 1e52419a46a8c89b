"""Exercise 3.5 of solutions/03_modules.ipynb: its other answers (see answers/__init__.py).

Its further wrong answers are in task_3_5_more.py.
"""

from .. import Task, Wrong
from . import task_3_5_more
from .shared import ADAMW_STEP

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


TASK = Task(
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
        # The watch sees one process: AdamW in a forked child, the result sent back.
        Wrong(
            "torch.optim.AdamW run in a forked child, param and state sent back.",
            hint="started a process",
            code="""\
import os
import pickle


def adamw_step(param, grad, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    read, write = os.pipe()
    if os.fork() == 0:
        p = nn.Parameter(param.detach().clone())
        opt = torch.optim.AdamW([p], lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
        if state:
            opt.state[p] = {k: v.clone() if torch.is_tensor(v) else v for k, v in state.items()}
        p.grad = grad.clone()
        opt.step()
        os.write(write, pickle.dumps((p.detach(), dict(opt.state[p]))))
        os._exit(0)
    os.close(write)
    data = b""
    while chunk := os.read(read, 1 << 16):
        data += chunk
    os.wait()
    new, new_state = pickle.loads(data)
    param.copy_(new)
    state.clear()
    state.update(new_state)
""",
        ),
        Wrong(
            "m and v made float32 on the CPU (torch.zeros(param.shape)): imprecise for float64, fails on a GPU.",
            hint="torch.zeros_like(param)",
            code=ADAMW_STEP.replace(
                "m=torch.zeros_like(param), v=torch.zeros_like(param)",
                "m=torch.zeros(param.shape), v=torch.zeros(param.shape)",
            ),
        ),
        Wrong(
            "param updated by param.data = ...: new memory, other views of param keep the old values.",
            hint="gave param new memory",
            code=ADAMW_STEP.replace(
                "    param.mul_(1 - lr * weight_decay)\n", "    new = param * (1 - lr * weight_decay)\n"
            ).replace("    param.sub_(", "    param.data = new - ("),
        ),
        Wrong(
            "The step count kept in a global keyed by id(state): a copy of the state cannot carry on.",
            hint="in the state dict itself",
            code="_adam_steps = {}\n\n\n"
            + ADAMW_STEP.replace(
                "state.update(t=0, m=torch.zeros_like(param), v=torch.zeros_like(param))",
                "state.update(m=torch.zeros_like(param), v=torch.zeros_like(param))\n"
                "        _adam_steps[id(state)] = 0",
            ).replace(
                '    state["t"] += 1\n    t, m, v = state["t"], state["m"], state["v"]',
                '    _adam_steps[id(state)] += 1\n    t, m, v = _adam_steps[id(state)], state["m"], state["v"]',
            ),
        ),
        Wrong(
            "Default lr 1e-2 instead of the signature's 1e-3.",
            hint="keep the signature's defaults",
            code=ADAMW_STEP.replace("lr=1e-3,", "lr=1e-2,"),
        ),
        Wrong(
            "Default eps 1e-7 (Keras's) instead of 1e-8.",
            hint="keep the signature's defaults",
            code=ADAMW_STEP.replace("eps=1e-8,", "eps=1e-7,"),
        ),
        Wrong(
            "m and v always float64: not in param's dtype, twice the memory.",
            hint="in param's dtype",
            code=ADAMW_STEP.replace(
                "m=torch.zeros_like(param), v=torch.zeros_like(param)",
                "m=torch.zeros_like(param, dtype=torch.float64), v=torch.zeros_like(param, dtype=torch.float64)",
            ),
        ),
        Wrong(
            "Bias correction computed in param's dtype: bf16 rounds beta2 to 1.",
            hint="0.999 rounds to 1.0",
            code="""\
def adamw_step(param, grad, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    beta1, beta2 = betas
    if not state:
        state["t"] = 0
        state["m"] = torch.zeros_like(param)
        state["v"] = torch.zeros_like(param)
    state["t"] += 1
    t, m, v = state["t"], state["m"], state["v"]
    b1 = torch.tensor(beta1, dtype=param.dtype, device=param.device)
    b2 = torch.tensor(beta2, dtype=param.dtype, device=param.device)
    param.mul_(1 - lr * weight_decay)
    m.mul_(beta1).add_(grad, alpha=1 - beta1)
    v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    m_hat = m / (1 - b1**t)
    v_hat = v / (1 - b2**t)
    param.sub_(lr * m_hat / (v_hat.sqrt() + eps))
""",
        ),
        Wrong(
            "m and v kept in float32 for a bfloat16 param: not in param's dtype.",
            hint="For a bfloat16 param, the tensors adamw_step keeps in state",
            code=ADAMW_STEP.replace(
                "m=torch.zeros_like(param), v=torch.zeros_like(param)",
                "m=torch.zeros_like(param, dtype=torch.promote_types(param.dtype, torch.float32)), "
                "v=torch.zeros_like(param, dtype=torch.promote_types(param.dtype, torch.float32))",
            ),
        ),
        Wrong(
            "The hyperparameters of the first call kept in state: a learning-rate schedule is ignored.",
            hint="With a learning-rate schedule",
            code=ADAMW_STEP.replace(
                "        state.update(t=0, m=torch.zeros_like(param), v=torch.zeros_like(param))\n",
                "        state.update(t=0, m=torch.zeros_like(param), v=torch.zeros_like(param))\n"
                "        state['hp'] = (lr, eps, weight_decay)\n"
                "    lr, eps, weight_decay = state['hp']\n",
            ),
        ),
        Wrong(
            "torch._fused_adamw_ called with dispatch modes off (_DisableTorchDispatch): the fused kernel.",
            hint="where the grader cannot record it",
            code="""\
def adamw_step(param, grad, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    if not state:
        state.update(t=torch.zeros((), device=param.device), m=torch.zeros_like(param), v=torch.zeros_like(param))
    state["t"] += 1
    with torch._C._DisableTorchDispatch():
        torch._fused_adamw_(
            [param], [grad], [state["m"]], [state["v"]], [], [state["t"]], lr=lr, beta1=betas[0],
            beta2=betas[1], weight_decay=weight_decay, eps=eps, amsgrad=False, maximize=False,
        )
""",
        ),
    ],
)

TASK.wrong.extend(task_3_5_more.WRONG)


# A fifth red team's wrong answers.
TASK.wrong.extend(
    [
        Wrong(
            (
                "The step count kept as a tensor in param's dtype: in bfloat16 it stops at 256, and the bias "
                "corrections go wrong from then on."
            ),
            hint="count the steps exactly",
            code="""\
def adamw_step(param, grad, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    beta1, beta2 = betas
    if not state:
        # everything in param's dtype and on its device, the step count too
        state["t"] = torch.zeros((), dtype=param.dtype, device=param.device)
        state["m"] = torch.zeros_like(param)
        state["v"] = torch.zeros_like(param)
    state["t"] += 1
    t, m, v = state["t"].double(), state["m"], state["v"]
    param.mul_(1 - lr * weight_decay)
    m.mul_(beta1).add_(grad, alpha=1 - beta1)
    v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    m_hat = m / (1 - beta1**t)
    v_hat = v / (1 - beta2**t)
    param.sub_(lr * m_hat / (v_hat.sqrt() + eps))
""",
        ),
    ]
)


# Red team: the hyperparameters given by position, in the signature's order.
TASK.wrong.extend(
    [
        Wrong(
            ("betas and eps swapped in the signature: a call by position in the stated order breaks."),
            hint="Called with its hyperparameters by position",
            code="""\
def adamw_step(param, grad, state, lr=1e-3, eps=1e-8, betas=(0.9, 0.999), weight_decay=1e-2):
    beta1, beta2 = betas
    if not state:
        state["t"] = 0
        state["m"] = torch.zeros_like(param)
        state["v"] = torch.zeros_like(param)
    state["t"] += 1
    t, m, v = state["t"], state["m"], state["v"]
    param.mul_(1 - lr * weight_decay)
    m.mul_(beta1).add_(grad, alpha=1 - beta1)
    v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    param.sub_(lr * (m / (1 - beta1**t)) / ((v / (1 - beta2**t)).sqrt() + eps))
""",
        ),
        Wrong(
            ("The hyperparameters keyword-only: a call by position raises."),
            hint="Called with its hyperparameters by position",
            code="""\
def adamw_step(param, grad, state, *, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    beta1, beta2 = betas
    if not state:
        state["t"] = 0
        state["m"] = torch.zeros_like(param)
        state["v"] = torch.zeros_like(param)
    state["t"] += 1
    t, m, v = state["t"], state["m"], state["v"]
    param.mul_(1 - lr * weight_decay)
    m.mul_(beta1).add_(grad, alpha=1 - beta1)
    v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    param.sub_(lr * (m / (1 - beta1**t)) / ((v / (1 - beta2**t)).sqrt() + eps))
""",
        ),
    ]
)


# torch.optim's functional AdamW only when no dispatch mode is on the stack, as in a plain
# training loop.
TASK.wrong.append(
    Wrong(
        "torch.optim's functional adamw unless a dispatch mode (the grader's) is on the stack.",
        hint="used torch.optim when no dispatch mode was on the stack",
        code="""\
from torch.optim.adamw import adamw as functional_adamw


def adamw_step(param, grad, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    beta1, beta2 = betas
    if not state:
        state.update(t=0, m=torch.zeros_like(param), v=torch.zeros_like(param))
    state["t"] += 1
    t, m, v = state["t"], state["m"], state["v"]
    if not torch._C._len_torch_dispatch_stack():  # plain runs: torch's own, tested code
        step = torch.tensor(float(t - 1))
        functional_adamw([param], [grad], [m], [v], [], [step], foreach=False, amsgrad=False, beta1=beta1,
                         beta2=beta2, lr=lr, weight_decay=weight_decay, eps=eps, maximize=False)
        return
    param.mul_(1 - lr * weight_decay)
    m.mul_(beta1).add_(grad, alpha=1 - beta1)
    v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    param.sub_(lr * (m / (1 - beta1**t)) / ((v / (1 - beta2**t)).sqrt() + eps))
""",
    )
)
