"""Further wrong answers to exercise 3.5 of solutions/03_modules.ipynb, after those of task_3_5.py."""

from .. import Wrong
from .shared import ADAMW_STEP

WRONG: list[Wrong] = []

WRONG.extend(
    [
        Wrong(
            "betas, eps and weight_decay kept in state from the first call (lr taken from each call).",
            hint="With betas, eps and weight_decay changed",
            code="""\
def adamw_step(param, grad, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    beta1, beta2 = betas
    if not state:
        state["t"] = 0
        state["m"] = torch.zeros_like(param)
        state["v"] = torch.zeros_like(param)
        state["hp"] = (betas, eps, weight_decay)
    state["t"] += 1
    t, m, v = state["t"], state["m"], state["v"]
    (beta1, beta2), eps, weight_decay = state["hp"]
    param.mul_(1 - lr * weight_decay)
    m.mul_(beta1).add_(grad, alpha=1 - beta1)
    v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    m_hat = m / (1 - beta1**t)
    v_hat = v / (1 - beta2**t)
    param.sub_(lr * m_hat / (v_hat.sqrt() + eps))
""",
        ),
        Wrong(
            "weight_decay kept in state from the first call.",
            hint="With betas, eps and weight_decay changed",
            code="""\
def adamw_step(param, grad, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    beta1, beta2 = betas
    if not state:
        state["t"] = 0
        state["m"] = torch.zeros_like(param)
        state["v"] = torch.zeros_like(param)
        state["wd"] = weight_decay
    state["t"] += 1
    t, m, v = state["t"], state["m"], state["v"]
    param.mul_(1 - lr * state["wd"])
    m.mul_(beta1).add_(grad, alpha=1 - beta1)
    v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    m_hat = m / (1 - beta1**t)
    v_hat = v / (1 - beta2**t)
    param.sub_(lr * m_hat / (v_hat.sqrt() + eps))
""",
        ),
    ]
)

WRONG.extend(
    [
        Wrong(
            (
                "The update made on param.flatten(): for a param that is not contiguous (a transpose) a "
                "copy, param itself unchanged."
            ),
            hint="For a param that is not contiguous",
            code="""\
def adamw_step(param, grad, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    beta1, beta2 = betas
    if not state:
        state["t"] = 0
        state["m"] = torch.zeros_like(param)
        state["v"] = torch.zeros_like(param)
    state["t"] += 1
    t, m, v = state["t"], state["m"], state["v"]
    p = param.flatten()
    g = grad.flatten()
    mf, vf = m.flatten(), v.flatten()
    p.mul_(1 - lr * weight_decay)
    mf.mul_(beta1).add_(g, alpha=1 - beta1)
    vf.mul_(beta2).addcmul_(g, g, value=1 - beta2)
    p.sub_(lr * (mf / (1 - beta1**t)) / ((vf / (1 - beta2**t)).sqrt() + eps))
""",
        ),
    ]
)

WRONG.append(
    Wrong(
        "The gradient cleaned with nan_to_num: a diverging run's NaN and inf steps are taken as "
        "finite ones, and the run hides that it diverged.",
        hint="a NaN and an inf in the gradient",
        code=ADAMW_STEP.replace(
            "    beta1, beta2 = betas\n", "    beta1, beta2 = betas\n    grad = torch.nan_to_num(grad)\n"
        ),
    )
)


# A sixth red team's wrong answers: a 0-d param, an update in an unwatched thread.
WRONG.extend(
    [
        Wrong(
            ("param[:] = new: raises for a 0-d param (a learned scalar), which torch.optim.AdamW updates."),
            hint="For a 0-d param",
            code="""\
def adamw_step(param, grad, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    beta1, beta2 = betas
    if not state:
        state["t"] = 0
        state["m"] = torch.zeros_like(param)
        state["v"] = torch.zeros_like(param)
    state["t"] += 1
    t, m, v = state["t"], state["m"], state["v"]
    m.mul_(beta1).add_(grad, alpha=1 - beta1)
    v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    m_hat = m / (1 - beta1**t)
    v_hat = v / (1 - beta2**t)
    new = param * (1 - lr * weight_decay) - lr * m_hat / (v_hat.sqrt() + eps)
    param[:] = new
""",
        ),
        Wrong(
            (
                "torch.optim.AdamW run in the kernel's IOPub thread (started before the grader's setup), param "
                "updated there."
            ),
            hint="not with torch.optim's Adam or AdamW",
            code="""\
import threading as _threading


def _in_io(fn, *args):
    loop = get_ipython().kernel.iopub_thread.io_loop
    done, box = _threading.Event(), []

    def run():
        try:
            box.append(fn(*args))
        except BaseException as e:
            box.append(e)
        done.set()

    loop.add_callback(run)
    done.wait(30)
    return box[0]


def _adam_real(param, grad, state, lr, betas, eps, weight_decay):
    if "opt" not in state:
        state["p"] = torch.nn.Parameter(param.detach().clone())
        state["opt"] = torch.optim.AdamW(
            [state["p"]], lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=False
        )
    g = state["opt"].param_groups[0]
    g.update(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
    state["p"].grad = grad.clone()
    state["opt"].step()
    with torch.no_grad():
        param.copy_(state["p"])
    st = state["opt"].state[state["p"]]
    state["m"], state["v"] = st["exp_avg"], st["exp_avg_sq"]


def adamw_step(param, grad, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
    r = _in_io(_adam_real, param, grad, state, lr, betas, eps, weight_decay)
    if isinstance(r, BaseException):
        raise r
""",
        ),
    ]
)
