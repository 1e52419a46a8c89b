"""What several tasks of solutions/03_modules.ipynb use: right cells their wrong answers change, setups, helpers."""

# 3.5's right step (the solution's): a wrong answer changes the order of its m and v updates
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
