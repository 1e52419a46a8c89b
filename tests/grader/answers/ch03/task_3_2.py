"""Exercise 3.2 of solutions/03_modules.ipynb: its other answers (see answers/__init__.py)."""

from .. import Task, Wrong

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


TASK = Task(
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
        Wrong(
            "Default lr 0.01 instead of the signature's 0.05.",
            hint="lr=0.05)",
            code=TRAIN_WITH_VALIDATION.replace("lr=0.05):", "lr=0.01):"),
        ),
        Wrong(
            "zero_grad after the step: gradients the model came with enter the first step.",
            hint="opt.zero_grad() before each backward",
            code=TRAIN_WITH_VALIDATION.replace("        opt.zero_grad()\n", "").replace(
                "        opt.step()\n", "        opt.step()\n        opt.zero_grad()\n"
            ),
        ),
        Wrong(
            "Gradient-norm clipping at 5 added: other steps when the gradients are large.",
            hint="without clipping",
            code=TRAIN_WITH_VALIDATION.replace(
                "        opt.step()\n",
                "        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)\n        opt.step()\n",
            ),
        ),
        Wrong(
            "Validation by requires_grad_(False) then requires_grad_(True): frozen parameters unfrozen.",
            hint="leave requires_grad as you found it",
            code=TRAIN_WITH_VALIDATION.replace(
                "        with torch.no_grad():\n            val_losses",
                "        model.requires_grad_(False)\n        if True:\n            val_losses",
            ).replace("    return val_losses", "        model.requires_grad_(True)\n    return val_losses"),
        ),
        Wrong(
            "model.requires_grad_(True) at the start: frozen parameters unfrozen and trained.",
            hint="leave requires_grad as you found it",
            code=TRAIN_WITH_VALIDATION.replace(
                "    opt = torch.optim.SGD", "    model.requires_grad_(True)\n    opt = torch.optim.SGD"
            ),
        ),
        Wrong(
            "Mode set on top module + nn.Dropout/nn.BatchNorm1d only.",
            hint="neither nn.Dropout nor nn.BatchNorm1d",
            code="""\
def _set(model, mode):
    model.training = mode
    for m in model.modules():
        if isinstance(m, (nn.Dropout, nn.BatchNorm1d)):
            m.training = mode
def train_with_validation(model, train_batches, val_batch, lr=0.05):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    val_losses = []
    for x, y in train_batches:
        _set(model, True)
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
        _set(model, False)
        with torch.no_grad():
            val_losses.append(F.mse_loss(model(val_batch[0]), val_batch[1]).item())
    return val_losses
""",
        ),
        Wrong(
            "Old grads cleared only for trainable params; SGD over all: frozen param with stale grad stepped.",
            hint="entered SGD's",
            code="""\
def train_with_validation(model, train_batches, val_batch, lr=0.05):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    val_losses = []
    for x, y in train_batches:
        model.train()
        for p in model.parameters():
            if p.requires_grad:
                p.grad = None
        F.mse_loss(model(x), y).backward()
        opt.step()
        model.eval()
        with torch.no_grad():
            val_losses.append(F.mse_loss(model(val_batch[0]), val_batch[1]).item())
    return val_losses
""",
        ),
        Wrong(
            "The mode written by hand (module.training = flag): a submodule's own train() is bypassed.",
            hint="which call every submodule's own train()",
            code="""\
def _set_mode(model, flag):
    for m in model.modules():
        m.training = flag


def train_with_validation(model, train_batches, val_batch, lr=0.05):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    val_losses = []
    for x, y in train_batches:
        _set_mode(model, True)
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
        _set_mode(model, False)
        with torch.no_grad():
            val_losses.append(F.mse_loss(model(val_batch[0]), val_batch[1]).item())
    return val_losses
""",
        ),
        Wrong(
            "train_batches indexed by position: fails for a DataLoader or a generator.",
            hint="given as a generator",
            code=TRAIN_WITH_VALIDATION.replace(
                "    for x, y in train_batches:\n",
                "    for i in range(len(train_batches)):\n        x, y = train_batches[i]\n",
            ),
        ),
    ],
)

TASK.wrong.extend(
    [
        Wrong(
            (
                "model.train() only when model.training is False: a model that comes in training mode "
                "with a submodule in eval mode trains its first step with that submodule in eval mode."
            ),
            hint="whatever mode the model seems to be in",
            code="""\
def train_with_validation(model, train_batches, val_batch, lr=0.05):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    val_losses = []
    for x, y in train_batches:
        if not model.training:
            model.train()
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
        model.eval()
        with torch.no_grad():
            val_losses.append(F.mse_loss(model(val_batch[0]), val_batch[1]).item())
    return val_losses
""",
        ),
    ]
)

# A red team's 3.2 (2026-11-28, second round).
TASK.wrong.extend(
    [
        Wrong(
            (
                "train_batches read into a list up front: a streaming/random generator's draws no"
                " longer interleave with the steps"
            ),
            hint="train_with_validation takes other steps than the buggy",
            code=(
                "def train_with_validation(model, train_batches, val_batch, lr=0.05):\n"
                "    train_batches = list(train_batches)  # read the iterable once, up front\n"
                "    opt = torch.optim.SGD(model.parameters(), lr=lr)\n"
                "    val_losses = []\n"
                "    for x, y in train_batches:\n"
                "        model.train()\n"
                "        opt.zero_grad()\n"
                "        F.mse_loss(model(x), y).backward()\n"
                "        opt.step()\n"
                "        model.eval()\n"
                "        with torch.no_grad():\n"
                "            val_losses.append(F.mse_loss(model(val_batch[0]), val_batch[1]).item"
                "())\n"
                "    return val_losses\n"
            ),
        ),
        Wrong(
            ("non-finite steps skipped: not the buggy loop's steps on a batch with inf/nan"),
            hint="train_with_validation takes other steps than the buggy",
            code=(
                "def train_with_validation(model, train_batches, val_batch, lr=0.05):\n"
                "    opt = torch.optim.SGD(model.parameters(), lr=lr)\n"
                "    val_losses = []\n"
                "    for x, y in train_batches:\n"
                "        model.train()\n"
                "        opt.zero_grad()\n"
                "        loss = F.mse_loss(model(x), y)\n"
                "        if torch.isfinite(loss):  # a bad batch must not wreck the weights\n"
                "            loss.backward()\n"
                "            opt.step()\n"
                "        model.eval()\n"
                "        with torch.no_grad():\n"
                "            val_losses.append(F.mse_loss(model(val_batch[0]), val_batch[1]).item"
                "())\n"
                "    return val_losses\n"
            ),
        ),
    ]
)


# Red team: lr given by position, as the signature allows.
TASK.wrong.extend(
    [
        Wrong(
            ("lr keyword-only: a call with lr by position raises."),
            hint="Called with lr by position",
            code="""\
def train_with_validation(model, train_batches, val_batch, *, lr=0.05):
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
""",
        ),
    ]
)
