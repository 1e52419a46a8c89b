"""Exercise 2.9 of solutions/02_autograd.ipynb: its other answers (see answers/__init__.py)."""

from .. import Task, Wrong

# 2.9's right answer (the solution's): each wrong answer changes one of its functions.
NO_GRAD_AND_DETACH = """\
def predict(model, xs):
    with torch.no_grad():
        return model(xs)


def stop_grad_loss(w):
    pred = 3 * w
    target = (w * w).detach()
    return (pred - target) ** 2
"""

TARGET_IN_THE_GRAPH = NO_GRAD_AND_DETACH.replace("(w * w).detach()", "w * w")

# Recording switched off and then on again: a caller that had it off finds it on.
GRAD_MODE_SWITCHED_BACK_ON = NO_GRAD_AND_DETACH.replace(
    "    with torch.no_grad():\n        return model(xs)\n",
    """\
    torch.set_grad_enabled(False)
    out = model(xs)
    torch.set_grad_enabled(True)
    return out
""",
)

DETACHED_AFTER_RECORDING = NO_GRAD_AND_DETACH.replace(
    "    with torch.no_grad():\n        return model(xs)\n", "    return model(xs).detach()\n"
)


TASK = Task(
    alternative="""\
def predict(model, xs):
    with torch.inference_mode():
        return model(xs)


def stop_grad_loss(w):
    with torch.no_grad():
        target = w * w
    return (3 * w - target) ** 2
""",
    wrong=[
        Wrong(
            "The target left in the graph: the gradient also flows through it.",
            hint=".detach()",
            code=TARGET_IN_THE_GRAPH,
        ),
        Wrong(
            "predict detaches after a recorded forward.",
            hint="without recording",
            code=DETACHED_AFTER_RECORDING,
        ),
        Wrong(
            "predict switches recording off, then on: not back to what the caller had.",
            hint="as it found it",
            code=GRAD_MODE_SWITCHED_BACK_ON,
        ),
        Wrong(
            "Only one factor of the target detached: the gradient still flows through the other.",
            hint=".detach()",
            code=NO_GRAD_AND_DETACH.replace("(w * w).detach()", "w.detach() * w"),
        ),
        # The caller's model comes back in eval mode: its dropout is off for the next training step.
        Wrong(
            "predict switches the model to eval mode and leaves it there.",
            hint="training mode",
            code=NO_GRAD_AND_DETACH.replace(
                "    with torch.no_grad():\n        return model(xs)\n",
                "    model.eval()\n    with torch.no_grad():\n        return model(xs)\n",
            ),
        ),
        # An eval-mode model (as the caller had it) comes back in training mode.
        Wrong(
            "predict switches to eval mode, then model.train(): not the mode the caller had.",
            hint="changed the modules' train/eval modes",
            code=NO_GRAD_AND_DETACH.replace(
                "    with torch.no_grad():\n        return model(xs)\n",
                """\
    model.eval()
    with torch.no_grad():
        out = model(xs)
    model.train()
    return out
""",
            ),
        ),
        Wrong(
            "predict puts back the top module's mode only: a submodule in eval mode ends in training mode.",
            hint="changed the modules' train/eval modes",
            code=NO_GRAD_AND_DETACH.replace(
                "    with torch.no_grad():\n        return model(xs)\n",
                """\
    was = model.training
    model.eval()
    with torch.no_grad():
        out = model(xs)
    model.train(was)
    return out
""",
            ),
        ),
        Wrong(
            "predict freezes the parameters and leaves them frozen.",
            hint="changed the parameters' requires_grad",
            code=NO_GRAD_AND_DETACH.replace(
                "    with torch.no_grad():\n", "    model.requires_grad_(False)\n    with torch.no_grad():\n"
            ),
        ),
        Wrong(
            "stop_grad_loss switches w.requires_grad off and on: only a leaf's can be switched.",
            hint="not a leaf",
            code=NO_GRAD_AND_DETACH.replace(
                "    target = (w * w).detach()\n",
                "    w.requires_grad_(False)\n    target = w * w\n    w.requires_grad_(True)\n",
            ),
        ),
        Wrong(
            "predict caches its outputs by (id(model), id(xs)): stale once the model changes.",
            hint="outputs of the old weights",
            code="_cache = {}\n\n\n"
            + NO_GRAD_AND_DETACH.replace(
                "    with torch.no_grad():\n        return model(xs)\n",
                """\
    key = (id(model), id(xs))
    if key not in _cache:
        with torch.no_grad():
            _cache[key] = model(xs)
    return _cache[key]
""",
            ),
        ),
        Wrong(
            "predict calls model.zero_grad(): the caller's accumulated gradients are wiped.",
            hint="changed the parameters' .grad",
            code="""\
def predict(model, xs):
    model.zero_grad()
    with torch.no_grad():
        return model(xs)


def stop_grad_loss(w):
    pred = 3 * w
    target = (w * w).detach()
    return (pred - target) ** 2
""",
        ),
        Wrong(
            "predict runs the forward in eval mode and puts every module's mode back: eval outputs, not model(xs).",
            hint="in the mode the caller left it in",
            code="""\
def predict(model, xs):
    modes = [m.training for m in model.modules()]
    model.eval()
    try:
        with torch.no_grad():
            return model(xs)
    finally:
        for m, mode in zip(model.modules(), modes):
            m.training = mode


def stop_grad_loss(w):
    pred = 3 * w
    target = (w * w).detach()
    return (pred - target) ** 2
""",
        ),
        Wrong(
            "predict switches recording off and on by hand, without try/finally: left off if the model raises.",
            hint="even on an error",
            code="""\
def predict(model, xs):
    previous = torch.is_grad_enabled()
    torch.set_grad_enabled(False)
    out = model(xs)
    torch.set_grad_enabled(previous)
    return out


def stop_grad_loss(w):
    pred = 3 * w
    target = (w * w).detach()
    return (pred - target) ** 2
""",
        ),
        Wrong(
            "The target made anew with torch.tensor(w.item() ** 2): float32 whatever w's dtype.",
            hint="in w's dtype",
            code="""\
def predict(model, xs):
    with torch.no_grad():
        return model(xs)
def stop_grad_loss(w):
    pred = 3 * w
    target = torch.tensor(w.item() ** 2)
    return (pred - target) ** 2
""",
        ),
        Wrong(
            "The target computed in float32: a float64 w is rounded.",
            hint="in w's dtype",
            code="""\
def predict(model, xs):
    with torch.no_grad():
        return model(xs)
def stop_grad_loss(w):
    pred = 3 * w
    target = w.detach().float() ** 2
    return (pred - target) ** 2
""",
        ),
    ],
)


# Red team: a model with parameters that raises.
TASK.wrong.extend(
    [
        Wrong(
            (
                "Freezes the parameters and puts requires_grad back without try/finally: a model that raises "
                "leaves them frozen."
            ),
            hint="when the model raised (inputs of the wrong shape)",
            code="""\
def predict(model, xs):
    flags = [p.requires_grad for p in model.parameters()]
    model.requires_grad_(False)  # nothing to record for: freeze, then put back
    with torch.no_grad():
        out = model(xs)
    for p, flag in zip(model.parameters(), flags):
        p.requires_grad_(flag)
    return out


def stop_grad_loss(w):
    pred = 3 * w
    target = (w * w).detach()
    return (pred - target) ** 2
""",
        ),
    ]
)


# A red team's 2.9 (2026-11-28, third round).
TASK.wrong.extend(
    [
        Wrong(
            (
                "target made constant by target.register_hook(torch.zeros_like) instead of .detach(): backward "
                "looks right, but autograd still differentiates through the target"
            ),
            hint="registers a gradient hook",
            code="""\
def predict(model, xs):
    with torch.no_grad():
        return model(xs)


def stop_grad_loss(w):
    pred = 3 * w
    target = w * w
    if target.requires_grad:
        target.register_hook(torch.zeros_like)  # no gradient through the target
    return (pred - target) ** 2
""",
        ),
    ]
)


# A target cut off by arithmetic, not by detach: right until w * w overflows.
TASK.wrong.extend(
    [
        Wrong(
            (
                "target = t - t + t.detach() with t = w * w: the gradients through t cancel, but for a float16 w "
                "= 300 t is inf and inf - inf makes the loss and the gradient nan, where (w * w).detach() gives "
                "inf and -inf."
            ),
            hint="for a float16 w = 300",
            code="""\
def predict(model, xs):
    with torch.no_grad():
        return model(xs)


def stop_grad_loss(w):
    pred = 3 * w
    t = w * w
    target = t - t + t.detach()
    return (pred - target) ** 2
""",
        ),
        Wrong(
            (
                "target = t + (t.detach() - t), the straight-through pattern: nan as soon as w * w overflows "
                "(float16 w = 300)."
            ),
            hint="for a float16 w = 300",
            code="""\
def predict(model, xs):
    with torch.no_grad():
        return model(xs)


def stop_grad_loss(w):
    pred = 3 * w
    t = w * w
    target = t + (t.detach() - t)
    return (pred - target) ** 2
""",
        ),
    ]
)
