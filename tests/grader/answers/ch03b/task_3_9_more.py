"""Further wrong answers to exercise 3.9 of solutions/03b_training.ipynb, after those of task_3_9.py."""

from .. import Wrong

WRONG: list[Wrong] = []


# Round 5: two param groups with their own learning rates, AMSGrad's third moment,
# integer buffers and learning rates that must come from the dict.
WRONG.extend(
    [
        Wrong(
            (
                "One learning rate saved, the first group's, and set on every param group: an optimizer with two "
                "groups of different learning rates resumes with one."
            ),
            hint="each with a learning rate of its own",
            code="""\
def save_state(model, optimizer, scheduler):
    return copy.deepcopy({
        "model": model.state_dict(),
        "moments": optimizer.state_dict()["state"],
        "lr": optimizer.param_groups[0]["lr"],
        "scheduler": scheduler.state_dict(),
        "rng": torch.get_rng_state(),
    })


def load_state(state, model, optimizer, scheduler):
    model.load_state_dict(state["model"])
    optim_state = optimizer.state_dict()
    optimizer.load_state_dict({"state": state["moments"], "param_groups": optim_state["param_groups"]})
    for group in optimizer.param_groups:
        group["lr"] = state["lr"]
    scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["rng"])
""",
        ),
        Wrong(
            (
                "After loading, every group's learning rate is set to the scheduler's first one: a second group "
                "with its own learning rate resumes with the first's."
            ),
            hint="each with a learning rate of its own",
            code="""\
def save_state(model, optimizer, scheduler):
    return copy.deepcopy({
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "rng": torch.get_rng_state(),
    })


def load_state(state, model, optimizer, scheduler):
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["rng"])
    for group in optimizer.param_groups:  # keep the optimizer in step with the schedule
        group["lr"] = scheduler.get_last_lr()[0]
""",
        ),
        Wrong(
            (
                "AdamW's state saved by the names of its default entries (step, exp_avg, exp_avg_sq): with "
                "amsgrad=True, max_exp_avg_sq is lost and the resumed step fails."
            ),
            hint="max_exp_avg_sq",
            code="""\
def save_state(model, optimizer, scheduler):
    opt = optimizer.state_dict()
    moments = {
        i: {k: s[k] for k in ("step", "exp_avg", "exp_avg_sq")} for i, s in opt["state"].items()
    }
    return copy.deepcopy({
        "model": model.state_dict(),
        "optimizer": {"state": moments, "param_groups": opt["param_groups"]},
        "scheduler": scheduler.state_dict(),
        "rng": torch.get_rng_state(),
    })


def load_state(state, model, optimizer, scheduler):
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["rng"])
""",
        ),
        Wrong(
            (
                "The integer buffers (BatchNorm's num_batches_tracked) kept in this process, the dict only a key "
                "to them: in another process they are not there."
            ),
            hint="the model's weights from the dict",
            code="""\
_COUNTERS = {}


def save_state(model, optimizer, scheduler):
    weights = model.state_dict()
    key = len(_COUNTERS)
    _COUNTERS[key] = {k: v.clone() for k, v in weights.items() if not v.is_floating_point()}
    return copy.deepcopy({
        "model": {k: v for k, v in weights.items() if v.is_floating_point()},
        "key": key,
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "rng": torch.get_rng_state(),
    })


def load_state(state, model, optimizer, scheduler):
    model.load_state_dict({**state["model"], **_COUNTERS[state["key"]]})
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["rng"])
""",
        ),
        Wrong(
            (
                "The learning rates kept in this process, the dict only a key to them: in another process they "
                "are not there."
            ),
            hint="the optimizer's learning rates from the dict",
            code="""\
_LRS = {}


def save_state(model, optimizer, scheduler):
    key = len(_LRS)
    _LRS[key] = [group["lr"] for group in optimizer.param_groups]
    return copy.deepcopy({
        "model": model.state_dict(),
        "moments": optimizer.state_dict()["state"],
        "key": key,
        "scheduler": scheduler.state_dict(),
        "rng": torch.get_rng_state(),
    })


def load_state(state, model, optimizer, scheduler):
    model.load_state_dict(state["model"])
    optimizer.load_state_dict({"state": state["moments"], "param_groups": optimizer.state_dict()["param_groups"]})
    for group, lr in zip(optimizer.param_groups, _LRS[state["key"]]):
        group["lr"] = lr
    scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["rng"])
""",
        ),
    ]
)
