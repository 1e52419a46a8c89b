"""Exercise 5.10 of solutions/05c_memory_at_scale.ipynb: its other answers (see answers/__init__.py)."""

from .. import Task, Wrong

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


TASK = Task(
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
)

TASK.wrong.append(
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

TASK.wrong.append(
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

TASK.wrong.append(
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

TASK.wrong.append(
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

TASK.wrong.extend(
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

TASK.wrong.append(
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

TASK.wrong.extend(
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
TASK.wrong.extend(
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

# A red team's 5.10 (2026-11-28, second round).
TASK.wrong.extend(
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


# A seventh red team's wrong answers.
TASK.wrong.extend(
    [
        Wrong(
            ("The checkpoint's folder deleted after loading (a clean-up): the run's latest checkpoint is gone."),
            hint="deleted or changed the checkpoint's folder",
            code="""\
import shutil


def load_unsharded(folder, model):
    state = model.state_dict()
    dcp.load(state, checkpoint_id=folder)
    shutil.rmtree(folder)  # the weights are in the model now: free the disk
    return model
""",
        ),
    ]
)


# Round 5: the arguments by name.
TASK.wrong.extend(
    [
        Wrong(
            (
                "Parameters renamed (path, module): right called by position, a TypeError for a caller that names "
                "the arguments as the task's signature does."
            ),
            hint="load_unsharded(folder=..., model=...) raised TypeError",
            code="""\
def load_unsharded(path, module):
    state = module.state_dict()
    dcp.load(state, checkpoint_id=path)
    return module
""",
        ),
    ]
)

# A red team's 5.10 (h5): torch's global settings left changed by the load.
TASK.wrong.extend(
    [
        Wrong(
            "Gradients switched off for the load with torch.set_grad_enabled(False), never switched back on.",
            hint="left torch's global settings changed: grad mode",
            code="""\
def load_unsharded(folder, model):
    torch.set_grad_enabled(False)  # loading computes no gradients
    dcp.load(model.state_dict(), checkpoint_id=folder)
    return model
""",
        ),
        Wrong(
            "The default dtype set to the checkpoint's for the load, and left so.",
            hint="left torch's global settings changed: torch's default dtype",
            code="""\
def load_unsharded(folder, model):
    torch.set_default_dtype(next(model.parameters()).dtype)
    dcp.load(model.state_dict(), checkpoint_id=folder)
    return model
""",
        ),
    ]
)
TASK.other_right.append(
    """\
def load_unsharded(folder, model):
    with torch.no_grad():  # put back on leaving
        dcp.load(model.state_dict(), checkpoint_id=folder)
    return model
"""
)


# Helper round (2026-11-29): loads kept by the files' times, a process group's variables left in
# the environment, and what else a load must leave as it was.
_KEPT_BY_TIME = """\
_loaded = {}


def load_unsharded(folder, model):
    # a checkpoint is read once: its files' time says whether it changed since
    stamp = STAMP
    if (folder, stamp) not in _loaded:
        state = {k: v.clone() for k, v in model.state_dict().items()}
        dcp.load(state, checkpoint_id=folder)
        _loaded[folder, stamp] = state
    model.load_state_dict(_loaded[folder, stamp])
    return model
"""
TASK.wrong.extend(
    [
        Wrong(
            "The load kept by (folder, the .metadata file's mtime in ns): a folder saved again "
            "with the times its files had (a copy that keeps times, a coarse clock) is not read "
            "again.",
            hint="read it at every call",
            code=_KEPT_BY_TIME.replace("STAMP", 'os.stat(os.path.join(folder, ".metadata")).st_mtime_ns'),
        ),
        Wrong(
            "The load kept by (folder, the .metadata file's mtime in whole seconds): two saves "
            "in one second look the same.",
            hint="read it at every call",
            code=_KEPT_BY_TIME.replace("STAMP", 'int(os.path.getmtime(os.path.join(folder, ".metadata")))'),
        ),
        Wrong(
            "Sets MASTER_ADDR and MASTER_PORT as a launcher would, starts a 1-rank group, ends "
            "it, and leaves the variables set: a group the caller starts later meets there.",
            hint="left environment variables changed",
            code="""\
def load_unsharded(folder, model):
    started = not dist.is_initialized()
    if started:
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = "29517"
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    dcp.load(model.state_dict(), checkpoint_id=folder)
    if started:
        dist.destroy_process_group()
    return model
""",
        ),
        Wrong(
            "Switches grad mode off for the load, and leaves it off.",
            hint="grad mode (torch.set_grad_enabled)",
            code="""\
def load_unsharded(folder, model):
    torch.set_grad_enabled(False)  # loading, not training
    dcp.load(model.state_dict(), checkpoint_id=folder)
    return model
""",
        ),
        Wrong(
            "model.zero_grad() before the load: the caller's gradients are gone.",
            hint="changed the parameters' gradients",
            code="""\
def load_unsharded(folder, model):
    model.zero_grad()  # a fresh start
    dcp.load(model.state_dict(), checkpoint_id=folder)
    return model
""",
        ),
        Wrong(
            "model.requires_grad_(True) after the load: a frozen parameter trains again.",
            hint="changed which parameters require a gradient",
            code="""\
def load_unsharded(folder, model):
    dcp.load(model.state_dict(), checkpoint_id=folder)
    model.requires_grad_(True)
    return model
""",
        ),
        Wrong(
            "Each tensor's .data replaced by the loaded one: the same Parameter objects, new memory.",
            hint="keep their numbers in new memory",
            code="""\
def load_unsharded(folder, model):
    state = {k: torch.empty_like(v) for k, v in model.state_dict().items()}
    dcp.load(state, checkpoint_id=folder)
    for name, tensor in model.state_dict(keep_vars=True).items():
        tensor.data = state[name]
    return model
""",
        ),
        Wrong(
            "Loads into a deep copy, copies it into the model, and returns the copy.",
            hint="must return the model it was given",
            code="""\
import copy


def load_unsharded(folder, model):
    fresh = copy.deepcopy(model)
    dcp.load(fresh.state_dict(), checkpoint_id=folder)
    model.load_state_dict(fresh.state_dict())
    return fresh
""",
        ),
        Wrong(
            "Starts a 1-rank group only where there is none, but ends the default group always: "
            "a caller's own group ended.",
            hint="ended a process group its caller had",
            code="""\
def load_unsharded(folder, model):
    if not dist.is_initialized():
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    dcp.load(model.state_dict(), checkpoint_id=folder)
    dist.destroy_process_group()
    return model
""",
        ),
        Wrong(
            "dcp.load run in a forked process, the values sent back through a pipe.",
            hint="your code started a process (os.fork)",
            code="""\
import pickle


def load_unsharded(folder, model):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            state = {k: v.clone() for k, v in model.state_dict().items()}
            dcp.load(state, checkpoint_id=folder)
            os.write(write, pickle.dumps({k: v.tolist() for k, v in state.items()}))
        finally:
            os._exit(0)
    os.close(write)
    data = b""
    while chunk := os.read(read, 1 << 16):
        data += chunk
    os.close(read)
    os.waitpid(pid, 0)
    values = pickle.loads(data)
    with torch.no_grad():
        for k, v in model.state_dict().items():
            v.copy_(torch.tensor(values[k], dtype=v.dtype))
    return model
""",
        ),
    ]
)
# Right: DCP's reader named and no_dist said, a copy loop under no_grad, and a load kept by a hash
# of the .metadata file (each save writes its own save_id there, so a folder saved again differs).
TASK.other_right.extend(
    [
        """\
from torch.distributed.checkpoint import FileSystemReader


def load_unsharded(folder, model):
    state = model.state_dict()
    dcp.load(state, storage_reader=FileSystemReader(folder), no_dist=True)
    return model
""",
        """\
def load_unsharded(folder, model):
    loaded = {name: torch.zeros_like(t) for name, t in model.state_dict().items()}
    dcp.load(loaded, checkpoint_id=folder)
    with torch.no_grad():
        for name, t in model.state_dict().items():
            t.copy_(loaded[name])
    return model
""",
        """\
import hashlib

_loaded = {}


def load_unsharded(folder, model):
    # the metadata names the checkpoint (each save writes a save_id of its own): load each once
    with open(os.path.join(folder, ".metadata"), "rb") as f:
        key = hashlib.sha256(f.read()).hexdigest()
    if key not in _loaded:
        state = {k: v.clone() for k, v in model.state_dict().items()}
        dcp.load(state, checkpoint_id=folder)
        _loaded[key] = state
    with torch.no_grad():
        for k, v in model.state_dict().items():
            v.copy_(_loaded[key][k])
    return model
""",
    ]
)
# Right: DCP's state-dict API (what its tutorial uses), whose first call imports Dynamo, and
# Dynamo's import names its cache folder in the environment (TORCHINDUCTOR_CACHE_DIR): torch's
# doing, not the answer's.
TASK.other_right.append(
    """\
from torch.distributed.checkpoint.state_dict import get_model_state_dict, set_model_state_dict


def load_unsharded(folder, model):
    state = get_model_state_dict(model)
    dcp.load(state, checkpoint_id=folder)
    set_model_state_dict(model, state)
    return model
"""
)
