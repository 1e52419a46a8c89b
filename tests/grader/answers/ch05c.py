"""Other answers to the exercises of solutions/05c_memory_at_scale.ipynb (see
answers/__init__.py)."""

from . import Task, Wrong

# 5.8's right count, stage by stage: each wrong answer changes one stage or the shard.
ZERO_BYTES = """\
def zero_bytes_per_rank(n_params, world_size, stage):
    shard = -(-n_params // world_size)
    if stage == 0:
        return 16 * n_params
    if stage == 1:
        return 4 * n_params + 12 * shard
    if stage == 2:
        return 2 * n_params + 14 * shard
    return 16 * shard
"""
STAGE_1_SHARDS_THE_WEIGHTS = ZERO_BYTES.replace("4 * n_params + 12 * shard", "2 * n_params + 14 * shard")
# Adam's m and v counted, the fp32 master weights forgotten: 12 bytes a parameter.
WITHOUT_MASTER_WEIGHTS = (
    ZERO_BYTES.replace("16 * n_params", "12 * n_params")
    .replace("12 * shard", "8 * shard")
    .replace("14 * shard", "10 * shard")
    .replace("16 * shard", "12 * shard")
)
SHARD_ROUNDED_DOWN = ZERO_BYTES.replace("-(-n_params // world_size)", "n_params // world_size")
SHARD_AS_A_FLOAT = ZERO_BYTES.replace("-(-n_params // world_size)", "n_params / world_size")

# 5.10: dcp.load into the model's own tensors is right; each wrong answer loads otherwise.
TORCH_LOAD_OF_ONE_FILE = """\
def load_unsharded(folder, model):
    model.load_state_dict(torch.load(os.path.join(folder, "__0_0.distcp"), weights_only=True))
    return model
"""
LOADED_INTO_A_COPY = """\
def load_unsharded(folder, model):
    state = {key: value.clone() for key, value in model.state_dict().items()}
    dcp.load(state, checkpoint_id=folder)
    return model
"""
PROCESS_GROUP_LEFT_BEHIND = """\
def load_unsharded(folder, model):
    if not dist.is_initialized():
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    dcp.load(model.state_dict(), checkpoint_id=folder)
    return model
"""
PARAMETERS_REPLACED = """\
def load_unsharded(folder, model):
    state = {key: torch.empty_like(value) for key, value in model.state_dict().items()}
    dcp.load(state, checkpoint_id=folder)
    model.load_state_dict(state, assign=True)
    return model
"""

TASKS = {
    "5.8": Task(
        alternative="""\
def zero_bytes_per_rank(n_params, world_size, stage):
    per_rank = (n_params + world_size - 1) // world_size
    sizes = [("optimizer state", 12), ("gradients", 2), ("weights", 2)]
    total = 0
    for k, (part, size) in enumerate(sizes):
        total += size * (per_rank if k < stage else n_params)
    return total
""",
        wrong=[
            Wrong(
                "Stage 1 shards the fp16 weights along with the optimizer state.",
                hint="Stage 1 shards only the optimizer state",
                code=STAGE_1_SHARDS_THE_WEIGHTS,
            ),
            Wrong(
                "Forgets Adam's fp32 master weights: 12 bytes per parameter instead of 16.",
                hint="a master copy of the weights",
                code=WITHOUT_MASTER_WEIGHTS,
            ),
            Wrong(
                "Rounds the shard down: the padding forgotten.",
                hint="round n_params / world_size up",
                code=SHARD_ROUNDED_DOWN,
            ),
            Wrong(
                "Divides with /: a float.",
                hint="must return a Python int",
                code=SHARD_AS_A_FLOAT,
            ),
        ],
    ),
    "5.10": Task(
        # DCP's own converter to a torch.save file, then an ordinary load.
        alternative="""\
from torch.distributed.checkpoint.format_utils import dcp_to_torch_save


def load_unsharded(folder, model):
    with tempfile.TemporaryDirectory() as scratch:
        path = os.path.join(scratch, "model.pt")
        dcp_to_torch_save(folder, path)
        model.load_state_dict(torch.load(path, weights_only=True))
    return model
""",
        wrong=[
            Wrong(
                "torch.load of one rank's .distcp file.",
                hint="load_unsharded used torch.load",
                code=TORCH_LOAD_OF_ONE_FILE,
            ),
            Wrong(
                "dcp.load into a copy of the state dict, never loaded into the model.",
                hint="does not hold the checkpoint's weights",
                code=LOADED_INTO_A_COPY,
            ),
            Wrong(
                "Starts a 1-rank process group and leaves it.",
                hint="left a process group behind",
                code=PROCESS_GROUP_LEFT_BEHIND,
            ),
            Wrong(
                "load_state_dict(assign=True): new tensors replace the model's parameters.",
                hint="replaced by new tensors",
                code=PARAMETERS_REPLACED,
            ),
        ],
    ),
}

TASKS["5.8"].wrong.append(
    Wrong(
        "The shard rounded up with math.ceil(n_params / world_size): a float division, exact "
        "only up to 2**53 parameters. For 2**53 + 1 parameters on 1 rank it counts 2**53 "
        "(math.ceil(float(2**53 + 1)) is 2**53), a parameter's bytes short.",
        hint="count with integers",
        code="""\
import math


def zero_bytes_per_rank(n_params, world_size, stage):
    shard = math.ceil(n_params / world_size)
    return [16 * n_params, 4 * n_params + 12 * shard, 2 * n_params + 14 * shard, 16 * shard][stage]
""",
    )
)
TASKS["5.10"].wrong.append(
    Wrong(
        "Only the parameters loaded (dcp.load of dict(model.named_parameters())): a model with "
        "buffers (BatchNorm's running statistics, say) keeps its own buffers instead of the "
        "checkpoint's.",
        hint="buffers included",
        code="""\
def load_unsharded(folder, model):
    dcp.load(dict(model.named_parameters()), checkpoint_id=folder)
    return model
""",
    )
)
TASKS["5.10"].wrong.append(
    Wrong(
        "The weights copied from the check's own frames (the state dict it expects, made "
        "before load_unsharded is called), the folder never read: any other checkpoint "
        "loads as nothing.",
        hint="by taking a frame",
        code="""\
import sys


def load_unsharded(folder, model):
    frame = sys._getframe(1)
    while frame is not None and "expected" not in frame.f_locals:
        frame = frame.f_back
    if frame is not None:
        with torch.no_grad():
            for key, value in model.state_dict().items():
                value.copy_(frame.f_locals["expected"][key])
    return model
""",
    )
)
TASKS["5.8"].wrong.extend(
    [
        Wrong(
            "math.ceil(n_params / world_size) except on one rank: still a float division, one "
            "short for 2**54 + 2 parameters on 2 ranks.",
            hint="exact only up to 2**53",
            code="""\
import math


def zero_bytes_per_rank(n_params, world_size, stage):
    shard = n_params if world_size == 1 else int(math.ceil(n_params / world_size))
    return [16 * n_params, 4 * n_params + 12 * shard, 2 * n_params + 14 * shard, 16 * shard][stage]
""",
        ),
        Wrong(
            "Counts in NumPy's int64: 16 bytes for each of 2**60 + 3 parameters wrap around.",
            hint="NumPy's int64 wraps around",
            code="""\
import numpy as np


def zero_bytes_per_rank(n_params, world_size, stage):
    n = np.int64(n_params)
    shard = -(-n // world_size)
    return int([16 * n, 4 * n + 12 * shard, 2 * n + 14 * shard, 16 * shard][stage])
""",
        ),
    ]
)
TASKS["5.10"].wrong.append(
    Wrong(
        "The checkpoint's tensors put in with p.data = ...: the same Parameter objects, but new "
        "memory (and the checkpoint's dtype).",
        hint="keep their numbers in new memory",
        code="""\
from torch.distributed.checkpoint.state_dict_loader import _load_state_dict_from_keys


def load_unsharded(folder, model):
    loaded = _load_state_dict_from_keys(checkpoint_id=folder)
    for name, tensor in model.state_dict(keep_vars=True).items():
        tensor.data = loaded[name]
    return model
""",
    )
)
TASKS["5.8"].wrong.append(
    Wrong(
        "The shard rounded up through Decimal, whose default context keeps 28 digits: for "
        "10**30 + 1 parameters on 3 ranks the shard is rounded.",
        hint="Decimal rounds past its 28 digits",
        code="""\
from decimal import ROUND_CEILING, Decimal


def zero_bytes_per_rank(n_params, world_size, stage):
    shard = int((Decimal(n_params) / Decimal(world_size)).to_integral_value(rounding=ROUND_CEILING))
    return [16 * n_params, 4 * n_params + 12 * shard, 2 * n_params + 14 * shard, 16 * shard][stage]
""",
    )
)
TASKS["5.10"].wrong.append(
    Wrong(
        "The checkpoint never read: the seed parsed from the folder's name and the weights "
        "rebuilt with make_mlp (the buffers filled with the seed).",
        hint="those its files hold",
        code="""\
def load_unsharded(folder, model):
    import os
    import re

    seed = int(re.search(r"(\\d+)$", os.path.basename(folder.rstrip("/"))).group(1))
    linears = [m for m in model if isinstance(m, torch.nn.Linear)]
    sizes = (linears[0].in_features, *(m.out_features for m in linears))
    rebuilt = make_mlp(sizes, seed)
    with torch.no_grad():
        for p, q in zip(model.parameters(), rebuilt.parameters()):
            p.copy_(q)
        for b in model.buffers():
            b.fill_(float(seed))
    return model
""",
    )
)
TASKS["5.10"].wrong.extend(
    [
        Wrong(
            "Every parameter frozen (requires_grad_(False)) so that copy_ into it works, never "
            "unfrozen: the loaded model no longer trains.",
            hint="changed which parameters require a gradient",
            code="""\
from torch.distributed.checkpoint.state_dict_loader import _load_state_dict_from_keys


def load_unsharded(folder, model):
    loaded = _load_state_dict_from_keys(checkpoint_id=folder)
    model.requires_grad_(False)  # so that copy_ into a leaf works
    for key, value in model.state_dict().items():
        value.copy_(loaded[key])
    return model
""",
        ),
        Wrong(
            "The model put in eval mode by the load: a model loaded to go on training runs without its dropout.",
            hint="changed the model's mode",
            code="""\
def load_unsharded(folder, model):
    dcp.load(model.state_dict(), checkpoint_id=folder)
    return model.eval()
""",
        ),
    ]
)
TASKS["5.8"].wrong.append(
    Wrong(
        "The hidden check's own reference called when it is found in the notebook's namespace, "
        "math.ceil(n_params / world_size) (a float, exact only up to 2**53) otherwise.",
        hint="exact only up to 2**53",
        code="""\
import math


def zero_bytes_per_rank(n_params, world_size, stage):
    reference = globals().get("_zero_reference")
    if reference is not None:
        return reference(n_params, world_size, stage)
    shard = math.ceil(n_params / world_size)
    return [16 * n_params, 4 * n_params + 12 * shard, 2 * n_params + 14 * shard, 16 * shard][stage]
""",
    )
)
TASKS["5.10"].wrong.append(
    Wrong(
        "model.float() before dcp.load: a no-op for a float32 model, but a bfloat16 model's "
        "tensors are replaced by float32 copies (new memory, twice the bytes).",
        hint="keep their numbers in new memory",
        code="""\
def load_unsharded(folder, model):
    model.float()
    dcp.load(model.state_dict(), checkpoint_id=folder)
    return model
""",
    )
)
TASKS["5.8"].wrong.append(
    Wrong(
        "A shard of at least one element (max(1, ...)): a model of 0 parameters (all frozen, "
        "say) gets 12, 14 and 16 bytes per rank at stages 1 to 3, where it holds none.",
        hint="zero_bytes_per_rank(0, 4",
        code="""\
def zero_bytes_per_rank(n_params, world_size, stage):
    shard = max(1, -(-n_params // world_size))
    return [16 * n_params, 4 * n_params + 12 * shard, 2 * n_params + 14 * shard, 16 * shard][stage]
""",
    )
)
TASKS["5.10"].wrong.extend(
    [
        Wrong(
            "model.eval() for the load, then model.train(was) with the top module's mode: a layer "
            "the caller had put in the other mode (dropout switched off, say) is switched back.",
            hint="changed the model's mode",
            code="""\
def load_unsharded(folder, model):
    was = model.training
    model.eval()
    dcp.load(model.state_dict(), checkpoint_id=folder)
    model.train(was)
    return model
""",
        ),
        Wrong(
            "model.zero_grad(set_to_none=True) after the load: the gradients the caller had are thrown away.",
            hint="changed the parameters' gradients",
            code="""\
def load_unsharded(folder, model):
    dcp.load(model.state_dict(), checkpoint_id=folder)
    model.zero_grad(set_to_none=True)
    return model
""",
        ),
        Wrong(
            "What a folder held kept in a cache keyed by its path: a folder saved again (a run "
            "that keeps its latest checkpoint in one folder) loads the old weights.",
            hint="A folder saved again holds the new",
            code="""\
_loaded = {}


def load_unsharded(folder, model):
    if folder not in _loaded:
        state = {key: value.clone() for key, value in model.state_dict().items()}
        dcp.load(state, checkpoint_id=folder)
        _loaded[folder] = state
    model.load_state_dict(_loaded[folder])
    return model
""",
        ),
    ]
)

# A red team's 5.10 (2026-11-28, second round).
TASKS["5.10"].wrong.extend(
    [
        Wrong(
            ("values copied through float32 (.float()): a float64 model gets its checkpoint rounded to float32"),
            hint="does not hold the checkpoint's weights",
            code=(
                "\n"
                "from torch.distributed.checkpoint.state_dict_loader import _load_state_dict_from"
                "_keys\n"
                "\n"
                "def load_unsharded(folder, model):\n"
                "    loaded = _load_state_dict_from_keys(checkpoint_id=folder)\n"
                "    with torch.no_grad():\n"
                "        for key, value in model.state_dict().items():\n"
                "            value.copy_(loaded[key].float())  # upcast bf16 checkpoints before c"
                "opying\n"
                "    return model\n"
            ),
        ),
        Wrong(
            (
                "tamper: a 1-rank process group started and left behind, hidden from "
                "dist.is_initialized() by clearing torch's default-group pointer"
            ),
            hint="load_unsharded left a process group behind: dcp.load works",
            code=(
                "\n"
                "def load_unsharded(folder, model):\n"
                "    if not dist.is_initialized():\n"
                '        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_si'
                "ze=1)\n"
                "    dcp.load(model.state_dict(), checkpoint_id=folder)\n"
                "    dist.distributed_c10d._world.default_pg = None\n"
                "    return model\n"
            ),
        ),
    ]
)

# A red team's 5.8 (2026-11-28, second round).
TASKS["5.8"].wrong.extend(
    [
        Wrong(
            (
                "tamper: math.ceil(n/ws) (float, wrong past 2**53), and the check's own case "
                "list, read from its frame, cut to the sizes below 2**53"
            ),
            hint="your code replaced the check's own variables (by taking a",
            code=(
                "\n"
                "import math\n"
                "import sys as _sys8\n"
                "\n"
                "def zero_bytes_per_rank(n_params, world_size, stage):\n"
                "    f = _sys8._getframe(1)\n"
                "    while f is not None:\n"
                '        c = f.f_locals.get("cases")\n'
                "        if type(c) is list:\n"
                "            c[:] = [x for x in c if x[0] < 2**53]\n"
                "            break\n"
                "        f = f.f_back\n"
                "    shard = math.ceil(n_params / world_size)\n"
                "    return [16 * n_params, 4 * n_params + 12 * shard, 2 * n_params + 14 * shard,"
                " 16 * shard][stage]\n"
            ),
        ),
    ]
)

# A red team's 5.10 (2026-11-28, second round).
TASKS["5.10"].wrong.extend(
    [
        Wrong(
            ("destroys any process group at the end, the caller's own included"),
            hint="ended a process group its caller had",
            code=(
                "\n"
                "def load_unsharded(folder, model):\n"
                "    dcp.load(model.state_dict(), checkpoint_id=folder)\n"
                "    if dist.is_initialized():\n"
                "        dist.destroy_process_group()  # leave none behind\n"
                "    return model\n"
            ),
        ),
    ]
)
