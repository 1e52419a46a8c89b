"""Exercise 5.5 of solutions/05_distributed.ipynb: its other answers (see answers/__init__.py)."""

from .. import Task, Wrong

# 5.5's right loading (the prefix removed, a strict load): each wrong answer changes one thing.
LOAD_DDP_CHECKPOINT = """\
def load_ddp_checkpoint(model, state_dict):
    model.load_state_dict({key.removeprefix("module."): value for key, value in state_dict.items()})
    return model
"""

PREFIX_REPLACED_EVERYWHERE = LOAD_DDP_CHECKPOINT.replace('key.removeprefix("module.")', 'key.replace("module.", "")')

LOADED_NOT_STRICT = LOAD_DDP_CHECKPOINT.replace("state_dict.items()})", "state_dict.items()}, strict=False)")

FIRST_7_CHARACTERS_CUT = LOAD_DDP_CHECKPOINT.replace('key.removeprefix("module.")', "key[7:]")

FIRST_OCCURRENCE_REMOVED = LOAD_DDP_CHECKPOINT.replace('key.removeprefix("module.")', 'key.replace("module.", "", 1)')

# The prefix removed in the caller's dict itself.
KEYS_RENAMED_IN_PLACE = """\
def load_ddp_checkpoint(model, state_dict):
    for key in list(state_dict):
        if key.startswith("module."):
            state_dict[key.removeprefix("module.")] = state_dict.pop(key)
    model.load_state_dict(state_dict)
    return model
"""


TASK = Task(
    alternative="""\
from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present


def load_ddp_checkpoint(model, state_dict):
    state_dict = dict(state_dict)
    if state_dict.keys() != model.state_dict().keys():  # not the model's own keys: saved from DDP
        consume_prefix_in_state_dict_if_present(state_dict, "module.")
    model.load_state_dict(state_dict, strict=True)
    return model
""",
    wrong=[
        Wrong(
            "str.replace removes 'module.' everywhere, not only the prefix.",
            hint="removeprefix",
            code=PREFIX_REPLACED_EVERYWHERE,
        ),
        Wrong(
            "strict=False: a wrong checkpoint loads silently.",
            hint="keep load_state_dict strict",
            code=LOADED_NOT_STRICT,
        ),
        Wrong(
            "Strips the first 7 characters of every key, prefixed or not.",
            hint="without the prefix",
            code=FIRST_7_CHARACTERS_CUT,
        ),
        Wrong(
            "Removes the first 'module.' of each key, wherever it is: 'submodule.weight' becomes 'subweight'.",
            hint="whose own names contain",
            code=FIRST_OCCURRENCE_REMOVED,
        ),
        Wrong(
            "Renames the keys in the caller's state dict.",
            hint="changed the state dict it was given",
            code=KEYS_RENAMED_IN_PLACE,
        ),
    ],
)

TASK.wrong.extend(
    [
        Wrong(
            "strict=False, raising only for missing keys: a checkpoint with a key too many loads.",
            hint="with a key too many",
            code="""\
def load_ddp_checkpoint(model, state_dict):
    cleaned = {key.removeprefix("module."): value for key, value in state_dict.items()}
    result = model.load_state_dict(cleaned, strict=False)
    if result.missing_keys:
        raise RuntimeError(f"missing keys: {result.missing_keys}")
    return model
""",
        ),
        Wrong(
            "strict=False, raising only for unexpected keys: a checkpoint with a key missing loads.",
            hint="with a key missing",
            code="""\
def load_ddp_checkpoint(model, state_dict):
    cleaned = {key.removeprefix("module."): value for key, value in state_dict.items()}
    result = model.load_state_dict(cleaned, strict=False)
    if result.unexpected_keys:
        raise RuntimeError(f"unexpected keys: {result.unexpected_keys}")
    return model
""",
        ),
        Wrong(
            "load_state_dict(assign=True): the checkpoint's tensors replace the model's parameters.",
            hint="replaced the model's parameters",
            code="""\
def load_ddp_checkpoint(model, state_dict):
    cleaned = {key.removeprefix("module."): value for key, value in state_dict.items()}
    model.load_state_dict(cleaned, assign=True)
    return model
""",
        ),
    ]
)

TASK.wrong.extend(
    [
        Wrong(
            "Only the parameters copied (named_parameters), the keys checked against state_dict(): "
            "buffers such as BatchNorm's running statistics never load.",
            hint="did not get the checkpoint's buffers",
            code="""\
def load_ddp_checkpoint(model, state_dict):
    cleaned = {key.removeprefix("module."): value for key, value in state_dict.items()}
    expected = set(model.state_dict())
    if set(cleaned) != expected:
        raise RuntimeError(f"keys differ: {sorted(set(cleaned) ^ expected)}")
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            parameter.copy_(cleaned[name])
    return model
""",
        ),
        Wrong(
            "The prefix detected from the first key only: an empty state dict (a model without "
            "weights) raises StopIteration.",
            hint="A model without weights",
            code="""\
def load_ddp_checkpoint(model, state_dict):
    first = next(iter(state_dict))
    if first.startswith("module."):
        state_dict = {key[len("module."):]: value for key, value in state_dict.items()}
    model.load_state_dict(state_dict)
    return model
""",
        ),
    ]
)

TASK.wrong.append(
    Wrong(
        "Every leading 'module.' stripped (nested wrappers): a model that keeps its layers in an "
        "attribute called module (AveragedModel) loses its own prefix too, and fails to load.",
        hint="not every leading 'module.'",
        code="""\
def load_ddp_checkpoint(model, state_dict):
    cleaned = {}
    for key, value in state_dict.items():
        while key.startswith("module."):  # nested wrappers too
            key = key[len("module."):]
        cleaned[key] = value
    model.load_state_dict(cleaned)
    return model
""",
    )
)

TASK.wrong.append(
    Wrong(
        "Each tensor of the model pointed at the checkpoint's (tensor.data = value), the keys checked "
        "by hand: the model shares memory with the checkpoint.",
        hint="share memory with the checkpoint",
        code="""\
def load_ddp_checkpoint(model, state_dict):
    cleaned = {key.removeprefix("module."): value for key, value in state_dict.items()}
    own = model.state_dict(keep_vars=True)
    if set(own) != set(cleaned):
        raise KeyError(f"keys differ: {sorted(set(own) ^ set(cleaned))}")
    for key, tensor in own.items():
        tensor.data = cleaned[key]  # the model keeps its Parameter objects
    return model
""",
    )
)

TASK.wrong.append(
    Wrong(
        "'module.' removed from every key that starts with it, whatever the model: the plain state "
        "dict of a model that keeps its layers in an attribute called module (AveragedModel: "
        "'module.weight') loses its own prefix and fails to load.",
        hint="did not load unchanged",
        code=LOAD_DDP_CHECKPOINT,
    )
)

TASK.wrong.extend(
    [
        Wrong(
            "Points each parameter's .data at a copy of the checkpoint's tensor: a bfloat16 model becomes float32.",
            hint="took the checkpoint's tensors",
            code="""\
def load_ddp_checkpoint(model, state_dict):
    own = model.state_dict(keep_vars=True)
    if set(state_dict) != set(own):
        state_dict = {k.removeprefix("module."): v for k, v in state_dict.items()}
    if set(state_dict) != set(own):
        raise KeyError(sorted(set(state_dict) ^ set(own)))
    for k, t in own.items():
        t.data = state_dict[k].clone()
    return model
""",
        ),
        Wrong(
            "Copies value by value after comparing the keys only: a (4, 1) weight broadcasts into (4, 3).",
            hint="same keys but other shapes",
            code="""\
def load_ddp_checkpoint(model, state_dict):
    own = model.state_dict(keep_vars=True)
    if set(state_dict) != set(own):
        state_dict = {k.removeprefix("module."): v for k, v in state_dict.items()}
    if set(state_dict) != set(own):
        raise KeyError(sorted(set(state_dict) ^ set(own)))
    with torch.no_grad():
        for k, t in own.items():
            t.copy_(state_dict[k])
    return model
""",
        ),
        Wrong(
            "Casts every value to float32 on the way: a float64 model loses precision.",
            hint="went through another dtype",
            code="""\
def load_ddp_checkpoint(model, state_dict):
    if set(state_dict) != set(model.state_dict()):
        state_dict = {k.removeprefix("module."): v for k, v in state_dict.items()}
    model.load_state_dict({k: v.float() for k, v in state_dict.items()})
    return model
""",
        ),
    ]
)


# An eighth red team's wrong answers.
TASK.wrong.extend(
    [
        Wrong(
            ("The model put in eval mode after loading: a model loaded to go on training runs without its dropout."),
            hint="changed the model's train/eval mode",
            code="""\
def load_ddp_checkpoint(model, state_dict):
    if set(state_dict) != set(model.state_dict()):
        state_dict = {key.removeprefix("module."): value for key, value in state_dict.items()}
    model.load_state_dict(state_dict)
    model.eval()  # loaded weights: ready for inference
    return model
""",
        ),
        Wrong(
            ("The model frozen after loading (requires_grad_(False)): it never trains again."),
            hint="which parameters require grad",
            code="""\
def load_ddp_checkpoint(model, state_dict):
    if set(state_dict) != set(model.state_dict()):
        state_dict = {key.removeprefix("module."): value for key, value in state_dict.items()}
    model.load_state_dict(state_dict)
    model.requires_grad_(False)
    return model
""",
        ),
    ]
)


# A ninth red team's wrong answers: inputs outside the easy corner, state across calls, ops by another name.
TASK.wrong.extend(
    [
        Wrong(
            (
                "Copies each value with value.reshape(p.shape): a checkpoint whose weight has as many elements "
                "but another shape (transposed) loads silently, scrambled."
            ),
            hint="as many elements as the model's but another shape",
            code="""\
def load_ddp_checkpoint(model, state_dict):
    own = model.state_dict()
    if set(state_dict) != set(own):
        state_dict = {k.removeprefix("module."): v for k, v in state_dict.items()}
    if set(state_dict) != set(own):
        raise KeyError(f"keys differ: {sorted(set(state_dict) ^ set(own))}")
    with torch.no_grad():
        for k, v in state_dict.items():
            own[k].copy_(v.reshape(own[k].shape))
    return model
""",
        ),
        Wrong(
            (
                "Parameters copied, but buffers replaced by the checkpoint's tensors (setattr): BatchNorm's "
                "running statistics share memory with the checkpoint and a bfloat16 model's buffers turn float32."
            ),
            hint="BatchNorm buffers of a bfloat16 model",
            code="""\
def load_ddp_checkpoint(model, state_dict):
    own = model.state_dict()
    if set(state_dict) != set(own):
        state_dict = {k.removeprefix("module."): v for k, v in state_dict.items()}
    if set(state_dict) != set(own):
        raise KeyError(f"keys differ: {sorted(set(state_dict) ^ set(own))}")
    for k, v in state_dict.items():
        if own[k].shape != v.shape:
            raise RuntimeError(f"size mismatch for {k}")
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(state_dict[name])
        for name, _ in list(model.named_buffers()):
            owner, _, attr = name.rpartition(".")
            setattr(model.get_submodule(owner), attr, state_dict[name])
    return model
""",
        ),
    ]
)


# A ninth red team's wrong answers, continued: one rank, tied weights.
TASK.wrong.extend(
    [
        Wrong(
            (
                "Matches the checkpoint's keys against named_parameters() and named_buffers(): a model with tied "
                "weights, whose state dict names the shared weight twice, is refused."
            ),
            hint="tied weights",
            code="""\
def load_ddp_checkpoint(model, state_dict):
    own = dict(model.named_parameters()) | dict(model.named_buffers())
    if set(state_dict) != set(own):
        state_dict = {k.removeprefix("module."): v for k, v in state_dict.items()}
    if set(state_dict) != set(own):
        raise KeyError(f"keys differ: {sorted(set(state_dict) ^ set(own))}")
    with torch.no_grad():
        for k, v in state_dict.items():
            if own[k].shape != v.shape:
                raise RuntimeError(f"size mismatch for {k}: {tuple(v.shape)} vs {tuple(own[k].shape)}")
            own[k].copy_(v)
    return model
""",
        ),
    ]
)


# Red team (round 2): accepted before its check was added.
TASK.wrong.append(
    Wrong(
        "The cleaned dict cached by id(state_dict), the dict kept: the same dict updated in place loads old values.",
        hint="a cache keyed by id(state_dict)",
        code="""\
_cleaned = {}


def load_ddp_checkpoint(model, state_dict):
    entry = _cleaned.get(id(state_dict))
    if entry is None or entry[0] is not state_dict:
        if set(state_dict) != set(model.state_dict()):
            cleaned = {k.removeprefix("module."): v.clone() for k, v in state_dict.items()}
        else:
            cleaned = {k: v.clone() for k, v in state_dict.items()}
        entry = _cleaned[id(state_dict)] = (state_dict, cleaned)
    model.load_state_dict(entry[1])
    return model
""",
    )
)
