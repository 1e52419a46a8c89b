"""Other answers to the exercises of solutions/03b_training.ipynb (see answers/__init__.py)."""

from . import Task, Wrong

# 3.10's wrong answers each change one thing in this right pair (a plain LoRALinear, and an
# add_lora that freezes everything and wraps every nn.Linear found by its path).
LORA_LINEAR = """\
class LoRALinear(nn.Module):
    def __init__(self, base, r, alpha):
        super().__init__()
        self.base = base
        self.A = nn.Parameter(torch.randn(r, base.in_features) * 0.01)
        self.B = nn.Parameter(torch.zeros(base.out_features, r))
        self.to(base.weight)  # A and B where base lives: its dtype and device
        self.scale = alpha / r

    def forward(self, x):
        return self.base(x) + (x @ self.A.T @ self.B.T) * self.scale
"""

# A and B made in float32 on the CPU, whatever base's dtype and device.
LORA_LINEAR_FLOAT32 = LORA_LINEAR.replace(
    "        self.to(base.weight)  # A and B where base lives: its dtype and device\n", ""
)

ADD_LORA = """\


def add_lora(model, r=4, alpha=8.0):
    before = sum(p.numel() for p in model.parameters() if p.requires_grad)
    model.requires_grad_(False)
    paths = [path for path, m in model.named_modules() if isinstance(m, nn.Linear)]
    for path in paths:
        parent, _, name = path.rpartition(".")
        holder = model.get_submodule(parent)
        setattr(holder, name, LoRALinear(getattr(holder, name), r, alpha))
    return before, sum(p.numel() for p in model.parameters() if p.requires_grad)
"""

# 3.6's right clipping (the solution's): its later wrong answers change one thing in it.
CLIP_GRAD_NORM = """\
def clip_grad_norm(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads])).item()
    if norm > max_norm:
        for g in grads:
            g.mul_(max_norm / (norm + 1e-6))
    return norm
"""
# max_norm / norm: the same as clip_grad_norm_ for large norms, not for small ones.
CLIPPED_WITHOUT_EPS = CLIP_GRAD_NORM.replace("max_norm / (norm + 1e-6)", "max_norm / norm")
# New .grad tensors instead of scaling them in place: whoever holds the old ones sees no clipping.
GRADS_REPLACED = """\
def clip_grad_norm(parameters, max_norm):
    params = [p for p in parameters if p.grad is not None]
    norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(p.grad) for p in params])).item()
    if norm > max_norm:
        for p in params:
            p.grad = p.grad * (max_norm / (norm + 1e-6))
    return norm
"""
# The whole batch in one forward pass (model.forward skips the model's hooks), with a backward of
# nothing per micro-batch for the count: all the activations at once, what accumulation avoids.
WHOLE_BATCH_BEHIND_MODEL_FORWARD = """\
def accumulate(model, micro_batches):
    model.zero_grad()
    *first, last = micro_batches
    for idx, targets in first:
        (model(idx, targets) * 0).backward()
    idx = torch.cat([i for i, _ in micro_batches])
    targets = torch.cat([t for _, t in micro_batches])
    (model(*last) * 0 + model.forward(idx, targets)).backward()
"""
# preserve_rng_state=False: a block with dropout draws other masks when backward runs it again.
RNG_NOT_PRESERVED = """\
def checkpointed_forward(blocks, x):
    for block in blocks:
        x = checkpoint(block, x, use_reentrant=False, preserve_rng_state=False)
    return x
"""

# 3.9's right pair (the solution's): its wrong answers change one thing in it.
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

# A red team's answers, each once given full credit (the checks since look where they went).
CLIP_GRAD_NORM_BUT_FOR_FLOAT32_3_6 = """\
def clip_grad_norm(parameters, max_norm):
    params = [p for p in parameters if p.grad is not None]
    if not params:
        return 0.0
    if any(p.grad.dtype != torch.float32 for p in params):
        # my float32 version overflows for half/double: let torch do those
        return float(torch.nn.utils.clip_grad_norm_(params, max_norm))
    norm = math.sqrt(sum(float((p.grad ** 2).sum()) for p in params))
    if norm > max_norm:
        for p in params:
            p.grad.mul_(max_norm / (norm + 1e-6))
    return norm
"""
FLOAT64_NORM_IN_FLOAT32_3_6 = """\
def clip_grad_norm(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return 0.0
    scale = max(float(g.abs().max()) for g in grads)
    if scale == 0.0 or not math.isfinite(scale):
        norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads])).item()
    else:
        # divide by the largest |g| so the squares cannot overflow, then sum in float32 (fast)
        norm = scale * math.sqrt(sum(float((g / scale).float().pow(2).sum()) for g in grads))
    if norm > max_norm:
        for g in grads:
            g.mul_(max_norm / (norm + 1e-6))
    return norm
"""
RNG_PUT_BACK_3_7 = """\
def accumulate(model, micro_batches):
    rng = torch.get_rng_state()  # leave the random state as I found it
    model.zero_grad()
    total = sum(int((t != PAD).sum()) for _, t in micro_batches)
    for idx, targets in micro_batches:
        share = int((targets != PAD).sum()) / total
        (model(idx, targets) * share).backward()
    torch.set_rng_state(rng)
"""
HOOK_LEFT_ON_THE_MODEL_3_7 = """\
def accumulate(model, micro_batches):
    if not hasattr(model, "_acc_hook"):
        model._acc_share = 1.0
        model._acc_hook = model.register_forward_hook(lambda m, args, out: out * m._acc_share)
    model.zero_grad()
    total = sum(int((t != PAD).sum()) for _, t in micro_batches)
    for idx, targets in micro_batches:
        model._acc_share = int((targets != PAD).sum()) / total
        model(idx, targets).backward()
"""
FROZEN_GET_ZEROS_3_7 = """\
def accumulate(model, micro_batches):
    for p in model.parameters():
        p.grad = torch.zeros_like(p)  # a clean slate to accumulate into
    total = sum(int((t != PAD).sum()) for _, t in micro_batches)
    for idx, targets in micro_batches:
        share = int((targets != PAD).sum()) / total
        (model(idx, targets) * share).backward()
"""
GRAPHS_KEPT_3_7 = """\
LOSS_LOG = []


def accumulate(model, micro_batches):
    model.zero_grad()
    total = sum(int((t != PAD).sum()) for _, t in micro_batches)
    for idx, targets in micro_batches:
        loss = model(idx, targets) * (int((targets != PAD).sum()) / total)
        loss.backward(retain_graph=True)
        LOSS_LOG.append(loss)  # for plotting later
"""
RNG_PUT_BACK_AROUND_THE_FORWARD_3_8 = """\
def checkpointed_forward(blocks, x):
    rng = torch.get_rng_state()
    for block in blocks:
        x = checkpoint(block, x, use_reentrant=False)
    torch.set_rng_state(rng)  # so the run's random state is untouched
    return x
"""
SELECTIVE_CHECKPOINTING_3_8 = """\
from torch.utils.checkpoint import create_selective_checkpoint_contexts


def checkpointed_forward(blocks, x):
    ops = [torch.ops.aten.mm.default, torch.ops.aten.addmm.default]
    for block in blocks:
        x = checkpoint(block, x, use_reentrant=False,
                       context_fn=lambda: create_selective_checkpoint_contexts(ops))
    return x
"""
ZERO_GRAD_INSIDE_3_8 = """\
def checkpointed_forward(blocks, x):
    blocks.zero_grad()
    for block in blocks:
        x = checkpoint(block, x, use_reentrant=False)
    return x
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
LORA_FLATTENS_MODES_3_10 = LORA_LINEAR + ADD_LORA.replace(
    "    before = ",
    "    was = model.training\n    model.eval()  # no dropout while the model is rebuilt\n    before = ",
).replace("    return before,", "    model.train(was)  # and back to the caller's mode\n    return before,")
LORA_RESEEDS_3_10 = (
    LORA_LINEAR.replace(
        "        self.A = ", "        torch.seed()  # a fresh seed: each adapter its own A\n        self.A = "
    )
    + ADD_LORA
)
LORA_CLOCK_GENERATOR_3_10 = (
    "import time\n\n\n"
    + LORA_LINEAR.replace(
        "torch.randn(r, base.in_features) * 0.01",
        "torch.randn(r, base.in_features, generator=torch.Generator().manual_seed(time.time_ns())) * 0.01",
    )
    + ADD_LORA
)

TASKS = {
    "3.6": Task(
        alternative="""\
def clip_grad_norm(parameters, max_norm):
    params = list(parameters)
    squares = sum(float((p.grad.double() ** 2).sum()) for p in params if p.grad is not None)
    norm = math.sqrt(squares)
    coef = max_norm / (norm + 1e-6)
    if coef < 1:
        for p in params:
            if p.grad is not None:
                p.grad *= coef
    return norm
""",
        wrong=[
            Wrong(
                "Each gradient clipped by its own norm.",
                hint="the same factor",
                code="""\
def clip_grad_norm(parameters, max_norm):
    params = [p for p in parameters if p.grad is not None]
    total = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in params])).item()
    for p in params:
        own = p.grad.norm().item()
        if own > max_norm:
            p.grad.mul_(max_norm / (own + 1e-6))
    return total
""",
            ),
            Wrong(
                "Returns the norm after clipping.",
                hint="the norm measured before clipping",
                code="""\
def clip_grad_norm(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    norm = torch.linalg.vector_norm(torch.stack([g.norm() for g in grads])).item()
    if norm > max_norm:
        for g in grads:
            g.mul_(max_norm / (norm + 1e-6))
    return torch.linalg.vector_norm(torch.stack([g.norm() for g in grads])).item()
""",
            ),
            Wrong(
                "Reads the parameters generator twice: the second loop clips nothing.",
                hint="generator",
                code="""\
def clip_grad_norm(parameters, max_norm):
    norm = math.sqrt(sum(float(p.grad.pow(2).sum()) for p in parameters if p.grad is not None))
    if norm > max_norm:
        for p in parameters:
            if p.grad is not None:
                p.grad.mul_(max_norm / (norm + 1e-6))
    return norm
""",
            ),
            Wrong(
                "Always rescales, also scaling small gradients up.",
                hint="leave the gradients as they are",
                code="""\
def clip_grad_norm(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    norm = torch.linalg.vector_norm(torch.stack([g.norm() for g in grads])).item()
    for g in grads:
        g.mul_(max_norm / (norm + 1e-6))
    return norm
""",
            ),
            Wrong(
                "Calls torch's clip_grad_norm_.",
                hint="without torch.nn.utils' clipping",
                code="""\
def clip_grad_norm(parameters, max_norm):
    return torch.nn.utils.clip_grad_norm_(parameters, max_norm).item()
""",
            ),
            Wrong(
                "torch's clipping functions, through references taken before the check.",
                hint="without torch.nn.utils' clipping",
                code="""\
from torch.nn.utils import clip_grads_with_norm_, get_total_norm


def clip_grad_norm(parameters, max_norm):
    params = [p for p in parameters if p.grad is not None]
    norm = get_total_norm([p.grad for p in params])
    if norm > max_norm:
        clip_grads_with_norm_(params, max_norm, norm)
    return norm.item()
""",
            ),
            Wrong(
                "Crashes on a frozen parameter's None gradient.",
                hint="whose .grad is None",
                code="""\
def clip_grad_norm(parameters, max_norm):
    params = list(parameters)
    norm = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in params])).item()
    if norm > max_norm:
        for p in params:
            p.grad.mul_(max_norm / (norm + 1e-6))
    return norm
""",
            ),
            # Right in float32; in float16 the squares of gradients above 256 overflow to inf.
            Wrong(
                "The squares summed in the gradients' own dtype: inf for float16 gradients above 256.",
                hint="overflows",
                code="""\
def clip_grad_norm(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    norm = sum((g**2).sum() for g in grads).sqrt().item()
    if norm > max_norm:
        for g in grads:
            g.mul_(max_norm / (norm + 1e-6))
    return norm
""",
            ),
            # The watch sees one process: torch's clipping in a forked child, the result copied back.
            Wrong(
                "clip_grad_norm_ run in a forked child, the norm and clipped gradients sent back.",
                hint="started a process",
                code="""\
import os
import pickle


def clip_grad_norm(parameters, max_norm):
    params = [p for p in parameters if p.grad is not None]
    read, write = os.pipe()
    if os.fork() == 0:
        norm = torch.nn.utils.clip_grad_norm_(params, max_norm)
        os.write(write, pickle.dumps((norm.item(), [p.grad for p in params])))
        os._exit(0)
    os.close(write)
    data = b""
    while chunk := os.read(read, 1 << 16):
        data += chunk
    os.wait()
    norm, grads = pickle.loads(data)
    for p, g in zip(params, grads):
        p.grad.copy_(g)
    return norm
""",
            ),
            Wrong(
                "max_norm / norm without the 1e-6: wrong for small norms.",
                hint="the 1e-6 counts",
                code=CLIPPED_WITHOUT_EPS,
            ),
            Wrong("New .grad tensors instead of scaling in place.", hint="scale them in place", code=GRADS_REPLACED),
            Wrong(
                "Gradients rescaled by g.data = g * c: the same objects, new memory.",
                hint="or their memory",
                code=CLIP_GRAD_NORM.replace(
                    "g.mul_(max_norm / (norm + 1e-6))", "g.data = g * (max_norm / (norm + 1e-6))"
                ),
            ),
            Wrong(
                "Gradients rescaled by g.set_(g * c): the same objects, new memory.",
                hint="or their memory",
                code=CLIP_GRAD_NORM.replace(
                    "g.mul_(max_norm / (norm + 1e-6))", "g.set_(g * (max_norm / (norm + 1e-6)))"
                ),
            ),
            Wrong(
                "Parameters that no longer require grad skipped, though they have a .grad.",
                hint="whether or not they require grad",
                code=CLIP_GRAD_NORM.replace("if p.grad is not None]", "if p.grad is not None and p.requires_grad]"),
            ),
            Wrong(
                "An infinite norm leaves the gradients unclipped.",
                hint="no special case",
                code=CLIP_GRAD_NORM.replace(
                    "    if norm > max_norm:", "    if math.isfinite(norm) and norm > max_norm:"
                ),
            ),
            Wrong(
                "Squares summed in float32 (g.float()): float64 gradients beyond 1e19 overflow.",
                hint="float64 gradients of 1e30",
                code="""\
def clip_grad_norm(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    norm = math.sqrt(sum(float(g.float().pow(2).sum()) for g in grads))
    if norm > max_norm:
        for g in grads:
            g.mul_(max_norm / (norm + 1e-6))
    return norm
""",
            ),
            Wrong(
                "The clipping factor floored at 1e-3: a norm 1000 times max_norm is not clipped down to it.",
                hint="no floor or clamp",
                code=CLIP_GRAD_NORM.replace(
                    "g.mul_(max_norm / (norm + 1e-6))", "g.mul_(max(max_norm / (norm + 1e-6), 1e-3))"
                ),
            ),
            Wrong(
                "The norm returned as a tensor when nothing is clipped (.item() only in the clipping branch).",
                hint="not the norm as a Python float",
                code="""\
def clip_grad_norm(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
    if norm > max_norm:
        for g in grads:
            g.mul_(max_norm / (norm.item() + 1e-6))
        return norm.item()
    return norm
""",
            ),
            Wrong(
                "The gradients joined with g.view(-1): fails for a gradient that is not contiguous (channels_last).",
                hint="With a gradient that is not contiguous",
                code=CLIP_GRAD_NORM.replace(
                    "torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads])).item()",
                    "torch.cat([g.view(-1) for g in grads]).norm().item()",
                ),
            ),
            Wrong(
                "The gradients joined with parameters_to_vector, which views each: fails for one not contiguous.",
                hint="With a gradient that is not contiguous",
                code=CLIP_GRAD_NORM.replace(
                    "torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads])).item()",
                    "torch.nn.utils.parameters_to_vector(grads).norm().item()",
                ),
            ),
            Wrong(
                "torch.stack of every gradient's norm: with no gradient at all it raises.",
                hint="no gradient at all",
                code="""\
def clip_grad_norm(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads])).item()
    if norm > max_norm:
        for g in grads:
            g.mul_(max_norm / (norm + 1e-6))
    return norm
""",
            ),
            Wrong(
                "torch's clip_grad_norm_ used for every dtype but float32 (float16/float64 checks are not watched)",
                hint="without torch.nn.utils' clipping",
                code=CLIP_GRAD_NORM_BUT_FOR_FLOAT32_3_6,
            ),
            Wrong(
                "float64 gradients' norm computed in float32 (scaled to avoid overflow): not own precision or wider",
                hint="to float64's precision",
                code=FLOAT64_NORM_IN_FLOAT32_3_6,
            ),
        ],
    ),
    "3.7": Task(
        alternative="""\
def accumulate(model, micro_batches):
    for p in model.parameters():
        p.grad = None
    counts = [(t != PAD).sum() for _, t in micro_batches]
    total = torch.stack(counts).sum()
    for (idx, targets), count in zip(micro_batches, counts):
        loss = model(idx, targets)
        loss.mul(count / total).backward()
""",
        wrong=[
            Wrong(
                "Each micro-batch's loss divided by the number of micro-batches.",
                hint="divided each micro-batch's loss by the number of micro-batches",
                code="""\
def accumulate(model, micro_batches):
    model.zero_grad()
    for idx, targets in micro_batches:
        (model(idx, targets) / len(micro_batches)).backward()
""",
            ),
            Wrong(
                "Weighted by the share of sequences (chapter 02's rule), not of real tokens.",
                hint="share of the sequences",
                code="""\
def accumulate(model, micro_batches):
    model.zero_grad()
    total = sum(len(t) for _, t in micro_batches)
    for idx, targets in micro_batches:
        (model(idx, targets) * len(targets) / total).backward()
""",
            ),
            Wrong(
                "The micro-batches concatenated into one forward pass.",
                hint="never concatenate",
                code="""\
def accumulate(model, micro_batches):
    model.zero_grad()
    idx = torch.cat([i for i, _ in micro_batches])
    targets = torch.cat([t for _, t in micro_batches])
    model(idx, targets).backward()
""",
            ),
            Wrong(
                "Old gradients not cleared first.",
                hint="old gradients",
                code="""\
def accumulate(model, micro_batches):
    total = sum(int((t != PAD).sum()) for _, t in micro_batches)
    for idx, targets in micro_batches:
        (model(idx, targets) * int((targets != PAD).sum()) / total).backward()
""",
            ),
            Wrong(
                "One backward on the summed losses: every micro-batch's graph kept until the end.",
                hint="backward() once per micro-batch",
                code="""\
def accumulate(model, micro_batches):
    model.zero_grad()
    total = sum(int((t != PAD).sum()) for _, t in micro_batches)
    loss = sum(model(idx, targets) * int((targets != PAD).sum()) / total for idx, targets in micro_batches)
    loss.backward()
""",
            ),
            Wrong(
                "The whole batch in one model.forward, with empty backward passes per micro-batch.",
                hint="never concatenate",
                code=WHOLE_BATCH_BEHIND_MODEL_FORWARD,
            ),
            Wrong(
                "Every forward first, then one backward per loss: every micro-batch's activations held at once.",
                hint="right after its own forward",
                code="""\
def accumulate(model, micro_batches):
    model.zero_grad()
    total = sum(int((t != PAD).sum()) for _, t in micro_batches)
    losses = [model(idx, targets) * (int((targets != PAD).sum()) / total) for idx, targets in micro_batches]
    for loss in losses:
        loss.backward()
""",
            ),
            Wrong(
                "Old gradients cleared with p.grad.zero_(): fails on a fresh model, whose .grad are None.",
                hint="For a fresh model",
                code="""\
def accumulate(model, micro_batches):
    for p in model.parameters():
        p.grad.zero_()
    total = sum(int((t != PAD).sum()) for _, t in micro_batches)
    for idx, targets in micro_batches:
        share = int((targets != PAD).sum()) / total
        (model(idx, targets) * share).backward()
""",
            ),
            Wrong(
                "Losses weighted by token counts, every p.grad divided at the end: fails for a frozen parameter.",
                hint="embedding is frozen",
                code="""\
def accumulate(model, micro_batches):
    model.zero_grad()
    total = sum(int((t != PAD).sum()) for _, t in micro_batches)
    for idx, targets in micro_batches:
        share = int((targets != PAD).sum())
        (model(idx, targets) * share).backward()
    for p in model.parameters():
        p.grad /= total
""",
            ),
            Wrong(
                "The model put in eval mode and left there.",
                hint="left the model in eval mode",
                code="""\
def accumulate(model, micro_batches):
    model.eval()
    model.zero_grad()
    total = sum(int((t != PAD).sum()) for _, t in micro_batches)
    for idx, targets in micro_batches:
        share = int((targets != PAD).sum()) / total
        (model(idx, targets) * share).backward()
""",
            ),
            Wrong(
                "Runs in eval mode internally, restores train(was): dropout off, submodule modes flattened.",
                hint="without model.eval() or model.train() inside",
                code="""\
def accumulate(model, micro_batches):
    was = model.training
    model.eval()
    model.zero_grad()
    total = sum(int((t != PAD).sum()) for _, t in micro_batches)
    for idx, targets in micro_batches:
        share = int((targets != PAD).sum()) / total
        (model(idx, targets) * share).backward()
    model.train(was)
""",
            ),
            Wrong(
                "model.train() at the start: a model in eval mode trains with dropout on, and stays so.",
                hint="For a model with dropout in eval mode",
                code="""\
def accumulate(model, micro_batches):
    model.zero_grad()
    model.train()
    total = sum(int((t != PAD).sum()) for _, t in micro_batches)
    for idx, targets in micro_batches:
        share = int((targets != PAD).sum()) / total
        (model(idx, targets) * share).backward()
""",
            ),
            Wrong(
                "Only trainable parameters' old gradients cleared: one frozen after a backward keeps its old one.",
                hint="frozen after an earlier backward",
                code="""\
def accumulate(model, micro_batches):
    for p in model.parameters():
        if p.requires_grad:
            p.grad = None
    total = sum(int((t != PAD).sum()) for _, t in micro_batches)
    for idx, targets in micro_batches:
        share = int((targets != PAD).sum()) / total
        (model(idx, targets) * share).backward()
""",
            ),
            Wrong(
                "RNG state saved and restored around the passes: every step draws the same dropout masks",
                hint="random state",
                code=RNG_PUT_BACK_3_7,
            ),
            Wrong(
                "weights via a forward hook left on the model: later model(idx, targets) returns a scaled loss",
                hint="left something behind on the model",
                code=HOOK_LEFT_ON_THE_MODEL_3_7,
            ),
            Wrong(
                "every .grad set to zeros first: frozen parameters get a (zero) gradient, AdamW then decays them",
                hint="gave the frozen embedding a .grad",
                code=FROZEN_GET_ZEROS_3_7,
            ),
            Wrong(
                (
                    "retain_graph=True and every micro-batch's loss kept in a global log: all graphs (activations) "
                    "stay alive, growing every step"
                ),
                hint="graphs alive",
                code=GRAPHS_KEPT_3_7,
            ),
        ],
    ),
    "3.8": Task(
        alternative="""\
def checkpointed_forward(blocks, x):
    h = x
    for i in range(len(blocks)):
        h = torch.utils.checkpoint.checkpoint(lambda t, block=blocks[i]: block(t), h, use_reentrant=False)
    return h
""",
        wrong=[
            Wrong(
                "The plain loop: nothing checkpointed.",
                hint="nothing was checkpointed",
                code="""\
def checkpointed_forward(blocks, x):
    for block in blocks:
        x = block(x)
    return x
""",
            ),
            Wrong(
                "One checkpoint around the whole loop.",
                hint="one checkpoint call per block",
                code="""\
def checkpointed_forward(blocks, x):
    def run_all(h):
        for block in blocks:
            h = block(h)
        return h
    return checkpoint(run_all, x, use_reentrant=False)
""",
            ),
            Wrong(
                "use_reentrant=True with an input that does not require grad: no gradients.",
                hint="use_reentrant=False",
                code="""\
def checkpointed_forward(blocks, x):
    for block in blocks:
        x = checkpoint(block, x, use_reentrant=True)
    return x
""",
            ),
            Wrong(
                "use_reentrant=True made to work by switching on requires_grad of the caller's x.",
                hint="changed its input x",
                code="""\
def checkpointed_forward(blocks, x):
    x.requires_grad_()
    for block in blocks:
        x = checkpoint(block, x, use_reentrant=True)
    return x
""",
            ),
            Wrong(
                "preserve_rng_state=False: dropout draws other masks when a block runs again.",
                hint="preserve_rng_state=True",
                code=RNG_NOT_PRESERVED,
            ),
            Wrong(
                "use_reentrant=True on a fresh leaf made from x: .backward() works, torch.autograd.grad does not.",
                hint="works with .backward() only",
                code="""\
def checkpointed_forward(blocks, x):
    if not x.requires_grad:
        x = x.detach().requires_grad_()
    for block in blocks:
        x = checkpoint(block, x, use_reentrant=True)
    return x
""",
            ),
            Wrong(
                "checkpoint(block.forward, ...): the block's own hooks are skipped.",
                hint="skips them",
                code="""\
def checkpointed_forward(blocks, x):
    for block in blocks:
        x = checkpoint(block.forward, x, use_reentrant=False)
    return x
""",
            ),
            Wrong(
                "Checkpointed only in training mode: blocks in eval mode keep every activation.",
                hint="in eval mode",
                code="""\
def checkpointed_forward(blocks, x):
    for block in blocks:
        x = checkpoint(block, x, use_reentrant=False) if block.training else block(x)
    return x
""",
            ),
            Wrong(
                "blocks.train() first: blocks the caller put in eval mode are left in training mode.",
                hint="put blocks that were in eval mode into training mode",
                code="""\
def checkpointed_forward(blocks, x):
    blocks.train()
    for block in blocks:
        x = checkpoint(block, x, use_reentrant=False)
    return x
""",
            ),
            Wrong(
                "Only blocks with trainable parameters checkpointed: a frozen block between trainable "
                "ones keeps all its activations (caught by the hidden check).",
                hint="With a frozen block between trainable ones",
                code="""\
def checkpointed_forward(blocks, x):
    for block in blocks:
        if any(p.requires_grad for p in block.parameters()):
            x = checkpoint(block, x, use_reentrant=False)
        else:  # frozen: nothing to train in it
            x = block(x)
    return x
""",
            ),
            Wrong(
                "RNG saved and restored around the forward: every step draws the same dropout masks",
                hint="random state",
                code=RNG_PUT_BACK_AROUND_THE_FORWARD_3_8,
            ),
            Wrong(
                "selective checkpointing saving the matmuls (the docs' recipe): keeps more than each block's input",
                hint="selective",
                code=SELECTIVE_CHECKPOINTING_3_8,
            ),
            Wrong(
                "blocks.zero_grad() inside: gradients accumulated by earlier backward passes are wiped",
                hint="cleared the gradients",
                code=ZERO_GRAD_INSIDE_3_8,
            ),
        ],
    ),
    "3.9": Task(
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
    optimizer.load_state_dict(state["optim"])
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
            Wrong(
                "load_state pops the entries it loads.", hint="changed the dict it was given", code=CONSUMES_THE_DICT
            ),
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
    ),
    "3.10": Task(
        alternative="""\
class LoRALinear(nn.Module):
    def __init__(self, base, r, alpha):
        super().__init__()
        base.weight.requires_grad_(False)
        if base.bias is not None:
            base.bias.requires_grad_(False)
        self.base = base
        self.A = nn.Parameter(torch.empty(r, base.in_features, dtype=base.weight.dtype, device=base.weight.device))
        nn.init.kaiming_uniform_(self.A, a=math.sqrt(5))
        self.B = nn.Parameter(torch.zeros(base.out_features, r, dtype=base.weight.dtype, device=base.weight.device))
        self.alpha, self.r = alpha, r

    def forward(self, x):
        return self.base(x) + self.alpha / self.r * F.linear(F.linear(x, self.A), self.B)


def add_lora(model, r=4, alpha=8.0):
    before = sum(p.numel() for p in model.parameters() if p.requires_grad)
    for p in model.parameters():
        p.requires_grad = False

    def wrap(module):
        for name, child in list(module.named_children()):
            if isinstance(child, nn.Linear):
                setattr(module, name, LoRALinear(child, r, alpha))
            else:
                wrap(child)

    wrap(model)
    return before, sum(p.numel() for p in model.parameters() if p.requires_grad)
""",
        wrong=[
            Wrong(
                "Only the model's direct children are wrapped.",
                hint="inside submodules",
                code=LORA_LINEAR
                + """\


def add_lora(model, r=4, alpha=8.0):
    before = sum(p.numel() for p in model.parameters() if p.requires_grad)
    model.requires_grad_(False)
    for name, child in list(model.named_children()):
        if isinstance(child, nn.Linear):
            setattr(model, name, LoRALinear(child, r, alpha))
    return before, sum(p.numel() for p in model.parameters() if p.requires_grad)
""",
            ),
            Wrong(
                "The model is not frozen: the wrapped weights still train.",
                hint="Freeze everything else",
                code=LORA_LINEAR + ADD_LORA.replace("    model.requires_grad_(False)\n", ""),
            ),
            Wrong(
                "B starts random: the model changes the moment LoRA is added.",
                hint="B starts at zeros",
                code=LORA_LINEAR.replace(
                    "torch.zeros(base.out_features, r)", "torch.randn(base.out_features, r) * 0.01"
                )
                + ADD_LORA,
            ),
            Wrong(
                "The scale alpha / r is missing.",
                hint="alpha / r",
                code="""\
class LoRALinear(nn.Module):
    def __init__(self, base, r, alpha):
        super().__init__()
        self.base = base
        self.A = nn.Parameter(torch.randn(r, base.in_features) * 0.01)
        self.B = nn.Parameter(torch.zeros(base.out_features, r))

    def forward(self, x):
        return self.base(x) + x @ self.A.T @ self.B.T
"""
                + ADD_LORA,
            ),
            Wrong(
                "A starts at zeros like B: the layer computes base(x), but LoRA can never learn.",
                hint="could never learn",
                code=LORA_LINEAR.replace("torch.randn(r, base.in_features) * 0.01", "torch.zeros(r, base.in_features)")
                + ADD_LORA,
            ),
            Wrong(
                "Only the wrapped Linears are frozen: the model's other parameters (a LayerNorm) still train.",
                hint="not only the wrapped layers",
                code=LORA_LINEAR.replace(
                    "        self.base = base\n", "        self.base = base.requires_grad_(False)\n"
                )
                + ADD_LORA.replace("    model.requires_grad_(False)\n", ""),
            ),
            Wrong(
                "trainable_before counts every parameter, frozen ones too (caught by the hidden check).",
                hint="excludes what was frozen already",
                code=LORA_LINEAR + ADD_LORA.replace(" if p.requires_grad)\n    model", ")\n    model"),
            ),
            Wrong(
                "A and B made in float32 on the CPU: fails for a float64, bf16 or GPU model.",
                hint="base's dtype and on its device",
                code=LORA_LINEAR_FLOAT32 + ADD_LORA,
            ),
            Wrong(
                "scale = alpha // r: right only when r divides alpha.",
                hint="for every alpha and r",
                code=LORA_LINEAR.replace("alpha / r", "alpha // r") + ADD_LORA,
            ),
            Wrong(
                "torch.manual_seed(0) in LoRALinear: the same A in every layer, the run's seed reset.",
                hint="got the same A",
                code=LORA_LINEAR.replace("        self.A = ", "        torch.manual_seed(0)\n        self.A = ")
                + ADD_LORA,
            ),
            Wrong(
                "add_lora's defaults r=8, alpha=16 instead of the signature's r=4, alpha=8.0.",
                hint="keep the signature's defaults",
                code=LORA_LINEAR
                + ADD_LORA.replace("def add_lora(model, r=4, alpha=8.0):", "def add_lora(model, r=8, alpha=16.0):"),
            ),
            Wrong(
                "add_lora also calls model.eval(): freezing confused with eval, the model fine-tunes with dropout off.",
                hint="put the model in eval mode",
                code=LORA_LINEAR
                + ADD_LORA.replace(
                    "    model.requires_grad_(False)\n", "    model.requires_grad_(False)\n    model.eval()\n"
                ),
            ),
            Wrong(
                "Trainable count summed per module (tied params counted twice).",
                hint="a shared parameter",
                code="""\
class LoRALinear(nn.Module):
    def __init__(self, base, r, alpha):
        super().__init__()
        self.base = base
        like = {"dtype": base.weight.dtype, "device": base.weight.device}
        self.A = nn.Parameter(torch.randn(r, base.in_features, **like) * 0.01)
        self.B = nn.Parameter(torch.zeros(base.out_features, r, **like))
        self.scale = alpha / r
    def forward(self, x):
        return self.base(x) + (x @ self.A.T @ self.B.T) * self.scale
def count_trainable(model):
    return sum(p.numel() for m in model.modules() for p in m.parameters(recurse=False) if p.requires_grad)
def add_lora(model, r=4, alpha=8.0):
    before = count_trainable(model)
    model.requires_grad_(False)
    paths = [path for path, module in model.named_modules() if isinstance(module, nn.Linear)]
    for path in paths:
        parent_path, _, name = path.rpartition(".")
        parent = model.get_submodule(parent_path)
        setattr(parent, name, LoRALinear(getattr(parent, name), r, alpha))
    return before, count_trainable(model)
""",
            ),
            Wrong(
                "type(module) is nn.Linear: an instance of a subclass of nn.Linear is left unwrapped.",
                hint="a subclass of nn.Linear",
                code=LORA_LINEAR + ADD_LORA.replace("isinstance(m, nn.Linear)", "type(m) is nn.Linear"),
            ),
            Wrong(
                "LoRALinear wraps a deep copy of base: the model's weights doubled, tied weights untied.",
                hint="not a copy (copy.deepcopy(base))",
                code=LORA_LINEAR.replace("self.base = base\n", "self.base = copy.deepcopy(base)\n") + ADD_LORA,
            ),
            Wrong(
                "add_lora also calls model.train(): a model in eval mode is put into training mode.",
                hint="into training mode (model.training was False",
                code=LORA_LINEAR
                + ADD_LORA.replace(
                    "    model.requires_grad_(False)\n", "    model.requires_grad_(False)\n    model.train()\n"
                ),
            ),
            Wrong(
                "LoRALinear computes F.linear(x, base.weight, base.bias): a subclass's forward and the "
                "layer's hooks are skipped.",
                hint="LoRALinear must call the layer itself",
                code=LORA_LINEAR.replace(
                    "return self.base(x) +", "return F.linear(x, self.base.weight, self.base.bias) +"
                )
                + ADD_LORA,
            ),
            Wrong(
                "LoRALinear calls base.forward(x): the layer's hooks are skipped.",
                hint="LoRALinear must call the layer itself",
                code=LORA_LINEAR.replace("return self.base(x) +", "return self.base.forward(x) +") + ADD_LORA,
            ),
            Wrong(
                (
                    "add_lora wraps in eval mode, then model.train(was): submodule modes flattened (frozen "
                    "dropout/BN put back in training)"
                ),
                hint="changed the mode of a module",
                code=LORA_FLATTENS_MODES_3_10,
            ),
            Wrong(
                "torch.seed() before drawing A: the global generator reseeded nondeterministically",
                hint="Under the same seed",
                code=LORA_RESEEDS_3_10,
            ),
            Wrong(
                (
                    "A from a private generator seeded by the clock: not the global generator, not decided by the "
                    "run's seed"
                ),
                hint="Under the same seed",
                code=LORA_CLOCK_GENERATOR_3_10,
            ),
        ],
    ),
}

# Round 6 (rt6e): holes closed in 3.7, 3.8, 3.9 and 3.10.
TASKS["3.7"].wrong.append(
    Wrong(
        "Each micro-batch weighted by a tensor hook that is never removed: a second call on the same "
        "model scales every gradient again.",
        hint="Called a second time on the same model",
        code="""\
def accumulate(model, micro_batches):
    model.zero_grad()
    total = sum(int((t != PAD).sum()) for _, t in micro_batches)
    box = {}
    for p in model.parameters():
        if p.requires_grad:
            p.register_hook(lambda g: g * box["share"])
    for idx, targets in micro_batches:
        box["share"] = int((targets != PAD).sum()) / total
        model(idx, targets).backward()
""",
    )
)
TASKS["3.8"].wrong.append(
    Wrong(
        "A checkpoint made by hand (a custom autograd.Function that recomputes each block): "
        "torch.utils.checkpoint never called.",
        hint="never called torch.utils.checkpoint.checkpoint",
        code="""\
class _Recompute(torch.autograd.Function):
    @staticmethod
    def forward(ctx, block, x, *params):
        ctx.block, ctx.rng = block, torch.get_rng_state()
        ctx.save_for_backward(x)
        with torch.no_grad():
            return block(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        x = x.detach().requires_grad_(ctx.needs_input_grad[1])
        now = torch.get_rng_state()
        torch.set_rng_state(ctx.rng)
        with torch.enable_grad():
            out = ctx.block(x)
        torch.set_rng_state(now)
        params = list(ctx.block.parameters())
        ins = ([x] if x.requires_grad else []) + [p for p in params if p.requires_grad]
        got = list(torch.autograd.grad(out, ins, g, allow_unused=True)) if ins else []
        gx = got.pop(0) if x.requires_grad else None
        gp = [got.pop(0) if p.requires_grad else None for p in params]
        return (None, gx, *gp)


def checkpointed_forward(blocks, x):
    for block in blocks:
        x = _Recompute.apply(block, x, *block.parameters())
    return x
""",
    )
)
TASKS["3.9"].wrong.append(
    Wrong(
        "save_state calls model.eval() then model.train(): a model in eval mode (or a frozen "
        "BatchNorm) comes back in training mode.",
        hint="save_state changed the train or eval mode",
        code=SAVE_AND_LOAD.replace(
            "    return copy.deepcopy({\n", "    model.eval()\n    state = copy.deepcopy({\n"
        ).replace("    })\n", "    })\n    model.train()\n    return state\n", 1),
    )
)
TASKS["3.10"].wrong.append(
    Wrong(
        "The update computed in float32 whatever the layer's dtype: a float64 model loses "
        "precision, a bfloat16 one comes out in float32.",
        hint="compute the update in x's and A's dtype",
        code=LORA_LINEAR.replace("x @ self.A.T @ self.B.T", "x.float() @ self.A.float().T @ self.B.float().T")
        + ADD_LORA,
    )
)

# A red team's 3.7 (2026-11-28, second round).
TASKS["3.7"].wrong.extend(
    [
        Wrong(
            ("mode restored with model.train(was): resets submodules' own modes"),
            hint="accumulate changed the mode of a module inside the model",
            code=(
                "def accumulate(model, micro_batches):\n"
                "    was_training = model.training  # leave its mode as it is\n"
                "    model.zero_grad()\n"
                "    total = sum(int((t != PAD).sum()) for _, t in micro_batches)\n"
                "    for idx, targets in micro_batches:\n"
                "        share = int((targets != PAD).sum()) / total\n"
                "        (model(idx, targets) * share).backward()\n"
                "    model.train(was_training)\n"
            ),
        ),
    ]
)

# A red team's 3.8 (2026-11-28, second round).
TASKS["3.8"].wrong.extend(
    [
        Wrong(
            ("mode restored with block.train(was): resets submodules' own modes"),
            hint="checkpointed_forward changed the mode of a module inside a",
            code=(
                "def checkpointed_forward(blocks, x):\n"
                "    for block in blocks:\n"
                "        was_training = block.training  # the block keeps its mode\n"
                "        x = checkpoint(block, x, use_reentrant=False)\n"
                "        block.train(was_training)\n"
                "    return x\n"
            ),
        ),
        Wrong(
            ("use_reentrant=True when x requires grad: autograd.grad breaks"),
            hint="With an x that requires grad, torch.autograd.grad(loss, [x,",
            code=(
                "def checkpointed_forward(blocks, x):\n"
                "    # non-reentrant is only needed when x does not require grad\n"
                "    reentrant = x.requires_grad\n"
                "    for block in blocks:\n"
                "        x = checkpoint(block, x, use_reentrant=reentrant)\n"
                "    return x\n"
            ),
        ),
        Wrong(
            ("rng preserved only for nn.Dropout blocks: RReLU/F.dropout blocks get other masks"),
            hint="With blocks that draw random numbers without nn.Dropout",
            code=(
                "def checkpointed_forward(blocks, x):\n"
                "    for block in blocks:\n"
                "        # only blocks with dropout draw random numbers: save the RNG state for t"
                "hose alone\n"
                "        random = any(isinstance(m, nn.modules.dropout._DropoutNd) for m in block"
                ".modules())\n"
                "        x = checkpoint(block, x, use_reentrant=False, preserve_rng_state=random)"
                "\n"
                "    return x\n"
            ),
        ),
    ]
)
