"""Exercise 3.9 of solutions/03b_training.ipynb: its other answers (see answers/__init__.py)."""

from .. import Task, Wrong
from . import task_3_9_more

# 3.9's pair as the solution had it until a red team (2026-11-29) found it wrong (LOADED_AS_IS
# below: the optimizer trains the checkpoint's own tensors): the wrong answers change one thing
# in it, and each fails before that is checked.
SAVE_AND_LOAD = """\
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
"""

REFERENCES_NOT_COPIES = SAVE_AND_LOAD.replace("    return copy.deepcopy({\n", "    return ({\n")

WITHOUT_OPTIMIZER = SAVE_AND_LOAD.replace('        "optimizer": optimizer.state_dict(),\n', "").replace(
    '    optimizer.load_state_dict(state["optimizer"])\n', ""
)

WITHOUT_SCHEDULER = SAVE_AND_LOAD.replace('        "scheduler": scheduler.state_dict(),\n', "").replace(
    '    scheduler.load_state_dict(state["scheduler"])\n', ""
)

WITHOUT_RNG = SAVE_AND_LOAD.replace('        "rng": torch.get_rng_state(),\n', "").replace(
    '    torch.set_rng_state(state["rng"])\n', ""
)

INITIAL_SEED_SAVED = SAVE_AND_LOAD.replace('"rng": torch.get_rng_state()', '"seed": torch.initial_seed()').replace(
    'torch.set_rng_state(state["rng"])', 'torch.manual_seed(state["seed"])'
)

FRESH_SEED_DRAWN = SAVE_AND_LOAD.replace('"rng": torch.get_rng_state()', '"seed": torch.seed()').replace(
    'torch.set_rng_state(state["rng"])', 'torch.manual_seed(state["seed"])'
)

# Only the parameters saved, loaded with strict=False: BatchNorm's running statistics (buffers) are lost.
PARAMETERS_ONLY = SAVE_AND_LOAD.replace(
    '"model": model.state_dict()', '"model": dict(model.named_parameters())'
).replace('model.load_state_dict(state["model"])', 'model.load_state_dict(state["model"], strict=False)')

# model.eval() "to take a clean snapshot": the run goes on with dropout off.
EVAL_WHILE_SAVING = SAVE_AND_LOAD.replace(
    "def save_state(model, optimizer, scheduler):\n", "def save_state(model, optimizer, scheduler):\n    model.eval()\n"
)

# The loaded model put in eval mode: the resumed run trains without dropout.
EVAL_AFTER_LOADING = SAVE_AND_LOAD.replace(
    '    model.load_state_dict(state["model"])\n', '    model.load_state_dict(state["model"])\n    model.eval()\n'
)

# load_state pops what it loads: the same checkpoint cannot be loaded twice.
CONSUMES_THE_DICT = SAVE_AND_LOAD.replace('(state["model"])', '(state.pop("model"))').replace(
    '(state["optimizer"])', '(state.pop("optimizer"))'
)

# The state kept in this process, the dict a key to it: torch.save then writes a key, nothing else.
KEY_ONLY = """\
_SAVED = {}


def save_state(model, optimizer, scheduler):
    key = len(_SAVED)
    _SAVED[key] = copy.deepcopy({
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "rng": torch.get_rng_state(),
    })
    return {"key": key}


def load_state(state, model, optimizer, scheduler):
    saved = _SAVED[state["key"]]
    model.load_state_dict(saved["model"])
    optimizer.load_state_dict(saved["optimizer"])
    scheduler.load_state_dict(saved["scheduler"])
    torch.set_rng_state(saved["rng"])
"""


# Part of the state kept in this process, the dict holding the rest and a key to it.
def _kept_in_a_global(parts: tuple[str, ...]) -> str:
    return (
        """\
_SAVED = {}


def save_state(model, optimizer, scheduler):
    key = len(_SAVED)
    full = copy.deepcopy({
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "rng": torch.get_rng_state(),
    })
    _SAVED[key] = {name: full.pop(name) for name in PARTS}
    full["key"] = key
    return full


def load_state(state, model, optimizer, scheduler):
    saved = dict(state)
    saved.update(_SAVED[state["key"]])
    model.load_state_dict(saved["model"])
    optimizer.load_state_dict(saved["optimizer"])
    scheduler.load_state_dict(saved["scheduler"])
    torch.set_rng_state(saved["rng"])
"""
    ).replace("PARTS", repr(parts))


# The optimizer's state and the generator's from the last save_state, in a global.
LAST_SAVE_IN_A_GLOBAL = """\
def save_state(model, optimizer, scheduler):
    global _LAST
    _LAST = copy.deepcopy({"optimizer": optimizer.state_dict(), "rng": torch.get_rng_state()})
    return copy.deepcopy({"model": model.state_dict(), "scheduler": scheduler.state_dict()})


def load_state(state, model, optimizer, scheduler):
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(_LAST["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(_LAST["rng"])
"""

_LOADED = '    model.load_state_dict(state["model"])\n'

_RNG_SET = '    torch.set_rng_state(state["rng"])\n'

SAVE_CLEARS_GRADIENTS_3_9 = SAVE_AND_LOAD.replace(
    "    return copy.deepcopy({\n",
    "    optimizer.zero_grad()  # a clean snapshot, no stale gradients\n    return copy.deepcopy({\n",
)

LOAD_FLATTENS_MODES_3_9 = SAVE_AND_LOAD.replace(
    _LOADED, "    was = model.training\n    model.eval()\n" + _LOADED
).replace(_RNG_SET, _RNG_SET + "    model.train(was)\n")

LOAD_UNFREEZES_3_9 = SAVE_AND_LOAD.replace(
    _LOADED, _LOADED + "    model.requires_grad_(True)  # make sure the resumed model trains\n"
)


TASK = Task(
    # Tensors cloned one by one, the optimizer's dict deep-copied, torch.random's functions.
    alternative="""\
def save_state(model, optimizer, scheduler):
    weights = {name: t.detach().clone() for name, t in model.state_dict().items()}
    return dict(
        weights=weights,
        optim=copy.deepcopy(optimizer.state_dict()),
        sched=dict(scheduler.state_dict()),
        generator=torch.random.get_rng_state(),
    )


def load_state(state, model, optimizer, scheduler):
    torch.random.set_rng_state(state["generator"])
    scheduler.load_state_dict(state["sched"])
    optimizer.load_state_dict(copy.deepcopy(state["optim"]))
    model.load_state_dict(state["weights"])
""",
    wrong=[
        Wrong("The state dicts themselves, not copies.", hint="Return copies", code=REFERENCES_NOT_COPIES),
        Wrong("The optimizer's state left out.", hint="AdamW's moments", code=WITHOUT_OPTIMIZER),
        Wrong("The scheduler left out.", hint="the learning rate restarts", code=WITHOUT_SCHEDULER),
        Wrong("The random number generator left out.", hint="torch.get_rng_state()", code=WITHOUT_RNG),
        Wrong(
            "torch.initial_seed() saved and re-seeded: the generator restarts instead of going on.",
            hint="draws other masks",
            code=INITIAL_SEED_SAVED,
        ),
        Wrong(
            "torch.seed() reseeds the generator while saving.",
            hint="must not change the run",
            code=FRESH_SEED_DRAWN,
        ),
        Wrong(
            "Only the parameters saved: BatchNorm's running statistics are lost on resume.",
            hint="buffers",
            code=PARAMETERS_ONLY,
        ),
        Wrong("save_state leaves the model in eval mode.", hint="training mode", code=EVAL_WHILE_SAVING),
        Wrong("load_state leaves the model in eval mode.", hint="training mode", code=EVAL_AFTER_LOADING),
        Wrong("load_state pops the entries it loads.", hint="changed the dict it was given", code=CONSUMES_THE_DICT),
        Wrong(
            "The state kept in this process, the dict only a key to it.",
            hint="from the dict it was given",
            code=KEY_ONLY,
        ),
        Wrong(
            "The optimizer's state kept in a global, the dict only a key to it.",
            hint="the optimizer's moments",
            code=_kept_in_a_global(("optimizer",)),
        ),
        Wrong(
            "The generator's state kept in a global, the dict only a key to it.",
            hint="the random state",
            code=_kept_in_a_global(("rng",)),
        ),
        Wrong(
            "The scheduler's state kept in a global, the dict only a key to it.",
            hint="the scheduler's step",
            code=_kept_in_a_global(("scheduler",)),
        ),
        Wrong(
            "The optimizer's and generator's states of the last save_state, in a global.",
            hint="from the dict it was given",
            code=LAST_SAVE_IN_A_GLOBAL,
        ),
        Wrong(
            "load_state puts the model into training mode, whatever mode it was in.",
            hint="leave the mode as it is",
            code=SAVE_AND_LOAD.replace(
                '    torch.set_rng_state(state["rng"])\n',
                '    torch.set_rng_state(state["rng"])\n    model.train()\n',
            ),
        ),
        Wrong(
            "Weights saved as float32 whatever their dtype: a float64 run does not resume to the bit.",
            hint="For a float64 model",
            code=SAVE_AND_LOAD.replace(
                '"model": model.state_dict(),',
                '"model": {k: (v.float() if v.is_floating_point() else v) for k, v in model.state_dict().items()},',
            ),
        ),
        Wrong(
            "One dict kept and updated by every save_state: a later save overwrites an earlier checkpoint.",
            hint="A second save_state, 6 steps later",
            code=SAVE_AND_LOAD.replace(
                "def save_state(model, optimizer, scheduler):\n    return copy.deepcopy({\n",
                "_CHECKPOINT = {}\n\n\ndef save_state(model, optimizer, scheduler):\n"
                "    _CHECKPOINT.update(copy.deepcopy({\n",
            ).replace(
                '        "rng": torch.get_rng_state(),\n    })\n',
                '        "rng": torch.get_rng_state(),\n    }))\n    return _CHECKPOINT\n',
            ),
        ),
        Wrong(
            "save_state clears the gradients: saving between backward and step changes the run",
            hint="save_state changed",
            code=SAVE_CLEARS_GRADIENTS_3_9,
        ),
        Wrong(
            (
                "load_state loads in eval mode then model.train(was): a frozen BatchNorm/dropout submodule's "
                "mode flattened"
            ),
            hint="load_state changed",
            code=LOAD_FLATTENS_MODES_3_9,
        ),
        Wrong(
            "load_state calls model.requires_grad_(True): frozen parameters unfrozen on resume",
            hint="load_state changed",
            code=LOAD_UNFREEZES_3_9,
        ),
    ],
)

TASK.wrong.append(
    Wrong(
        "save_state calls model.eval() then model.train(): a model in eval mode (or a frozen "
        "BatchNorm) comes back in training mode.",
        hint="save_state changed the train or eval mode",
        code=SAVE_AND_LOAD.replace(
            "    return copy.deepcopy({\n", "    model.eval()\n    state = copy.deepcopy({\n"
        ).replace("    })\n", "    })\n    model.train()\n    return state\n", 1),
    )
)


# A hole found by a red team: frozen weights left out of the checkpoint.
TASK.wrong.extend(
    [
        Wrong(
            (
                "Frozen parameters are left out of the saved weights and loaded with strict=False: a fresh model "
                "keeps its own frozen weights."
            ),
            hint="With a frozen layer",
            code="""\
def save_state(model, optimizer, scheduler):
    # frozen weights never change during the run: leave them out, the checkpoint is smaller
    frozen = {name for name, p in model.named_parameters() if not p.requires_grad}
    weights = {k: v for k, v in model.state_dict().items() if k not in frozen}
    return copy.deepcopy(
        {
            "model": weights,
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "rng": torch.get_rng_state(),
        }
    )


def load_state(state, model, optimizer, scheduler):
    model.load_state_dict(state["model"], strict=False)
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["rng"])
""",
        ),
    ]
)


TASK.wrong.extend(task_3_9_more.WRONG)

# A red team's (2026-11-29): the checkpoint's optimizer state loaded as it is. The optimizer keeps
# those very tensors as its state and trains them in place, so the checkpoint changes as the
# resumed run goes on, and loading it again resumes elsewhere.
TASK.wrong.append(
    Wrong(
        "The optimizer's state loaded from the checkpoint without a copy: a second load resumes elsewhere.",
        hint="One checkpoint loaded twice",
        code=SAVE_AND_LOAD,
    )
)


# Red team (round 4): hostile answers to the checks hardened in round 3; each that passed is marked so.
TASK.wrong.extend(
    [
        Wrong(
            (
                "model.load_state_dict(..., assign=True): the checkpoint's tensors replace the parameters "
                "the optimizer holds."
            ),
            hint="not the ones the optimizer steps",
            code="""\
def save_state(model, optimizer, scheduler):
    return copy.deepcopy({
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "rng": torch.get_rng_state(),
    })


def load_state(state, model, optimizer, scheduler):
    model.load_state_dict(state["model"], assign=True)
    optimizer.load_state_dict(copy.deepcopy(state["optimizer"]))
    scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["rng"])
""",
        ),
        Wrong(
            ("The optimizer's state loaded from a shallow copy (copy.copy): its tensors are the checkpoint's."),
            hint="One checkpoint loaded twice resumes two different runs",
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
    optimizer.load_state_dict(copy.copy(state["optimizer"]))
    scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["rng"])
""",
        ),
        Wrong(
            "The optimizer's state 'copied' with detach(), which shares the memory.",
            hint="One checkpoint loaded twice resumes two different runs",
            code="""\
def save_state(model, optimizer, scheduler):
    return copy.deepcopy({
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "rng": torch.get_rng_state(),
    })


def _fresh(value):
    # the checkpoint's tensors "copied" (detach() shares their memory)
    if isinstance(value, torch.Tensor):
        return value.detach()
    if isinstance(value, dict):
        return {k: _fresh(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_fresh(v) for v in value]
    return value


def load_state(state, model, optimizer, scheduler):
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(_fresh(state["optimizer"]))
    scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["rng"])
""",
        ),
        Wrong(
            "The optimizer's state 'copied' with .to(its own device), which returns the tensor itself.",
            hint="One checkpoint loaded twice resumes two different runs",
            code="""\
def save_state(model, optimizer, scheduler):
    return copy.deepcopy({
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "rng": torch.get_rng_state(),
    })


def _fresh(value):
    # the checkpoint's tensors "copied" (.to() of the same device shares their memory)
    if isinstance(value, torch.Tensor):
        return value.to(value.device)
    if isinstance(value, dict):
        return {k: _fresh(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_fresh(v) for v in value]
    return value


def load_state(state, model, optimizer, scheduler):
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(_fresh(state["optimizer"]))
    scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["rng"])
""",
        ),
        Wrong(
            ("Only the moment buffers copied: AdamW's step tensors (changed in place) are the checkpoint's."),
            hint="One checkpoint loaded twice resumes two different runs",
            code="""\
def save_state(model, optimizer, scheduler):
    return copy.deepcopy({
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "rng": torch.get_rng_state(),
    })


def _copied(optimizer_state):
    # the moment buffers copied (training changes them in place); the rest as it is
    state = {
        k: {n: (t.clone() if n.startswith("exp_avg") else t) for n, t in s.items()}
        for k, s in optimizer_state["state"].items()
    }
    return {"state": state, "param_groups": optimizer_state["param_groups"]}


def load_state(state, model, optimizer, scheduler):
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(_copied(state["optimizer"]))
    scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["rng"])
""",
        ),
        Wrong(
            "Only tensors of one or more dimensions copied: the 0-d step tensors are the checkpoint's.",
            hint="One checkpoint loaded twice resumes two different runs",
            code="""\
def save_state(model, optimizer, scheduler):
    return copy.deepcopy({
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "rng": torch.get_rng_state(),
    })


def _copied(optimizer_state):
    # tensors of one or more dimensions copied (training changes them in place); the rest as it is
    state = {
        k: {n: (t.clone() if t.dim() > 0 else t) for n, t in s.items()}
        for k, s in optimizer_state["state"].items()
    }
    return {"state": state, "param_groups": optimizer_state["param_groups"]}


def load_state(state, model, optimizer, scheduler):
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(_copied(state["optimizer"]))
    scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["rng"])
""",
        ),
        Wrong(
            "load_state sets torch's default dtype to the weights' dtype, never undone.",
            hint="changed torch's default dtype",
            code="""\
def save_state(model, optimizer, scheduler):
    return copy.deepcopy({
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "rng": torch.get_rng_state(),
    })


def load_state(state, model, optimizer, scheduler):
    torch.set_default_dtype(next(iter(state["model"].values())).dtype)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(copy.deepcopy(state["optimizer"]))
    scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["rng"])
""",
        ),
        Wrong(
            "A random number drawn after the generator is restored.",
            hint="random number generator is not where it was",
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
    optimizer.load_state_dict(copy.deepcopy(state["optimizer"]))
    scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["rng"])
    torch.rand(1)  # the generator checked
""",
        ),
    ]
)
