"""Exercise 3.8 of solutions/03b_training.ipynb: its other answers (see answers/__init__.py)."""

from .. import Task, Wrong

# preserve_rng_state=False: a block with dropout draws other masks when backward runs it again.
RNG_NOT_PRESERVED = """\
def checkpointed_forward(blocks, x):
    for block in blocks:
        x = checkpoint(block, x, use_reentrant=False, preserve_rng_state=False)
    return x
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


TASK = Task(
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
)

TASK.wrong.append(
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

# A red team's 3.8 (2026-11-28, second round).
TASK.wrong.extend(
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


# A fifth red team's wrong answers.
TASK.wrong.extend(
    [
        Wrong(
            (
                "Each block checkpointed with a context_fn whose own dispatch mode keeps every result in the "
                "forward and hands it back in the recompute: nothing is recomputed, every activation kept."
            ),
            hint="matrix products where checkpointing every block runs",
            code="""\
from torch.utils._python_dispatch import TorchDispatchMode

_SKIP = {torch.ops.aten.detach.default, torch.ops.prim.device.default}

class _Keep(TorchDispatchMode):
    # forward: run each op and keep its result; recompute: hand back the kept result
    def __init__(self, store, replay):
        super().__init__()
        self.store, self.replay, self.count = store, replay, {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _SKIP or func.is_view:
            return func(*args, **kwargs)
        k = self.count.get(func, 0)
        self.count[func] = k + 1
        if self.replay and (func, k) in self.store:
            return self.store.pop((func, k))
        out = func(*args, **kwargs)
        if not self.replay:
            self.store[(func, k)] = torch.utils._pytree.tree_map(
                lambda t: t.detach() if isinstance(t, torch.Tensor) else t, out)
        return out

def checkpointed_forward(blocks, x):
    for block in blocks:
        store = {}
        x = checkpoint(block, x, use_reentrant=False,
                       context_fn=lambda store=store: (_Keep(store, False), _Keep(store, True)))
    return x
""",
        ),
    ]
)


# A hole found by a red team: blocks without parameters left out.
TASK.wrong.extend(
    [
        Wrong(
            (
                "Only blocks with parameters are checkpointed: a block of activations (three GELUs) runs plainly "
                "and keeps its activations for backward (caught by the hidden check)."
            ),
            hint="A block without parameters still keeps its activations",
            code="""\
def checkpointed_forward(blocks, x):
    for block in blocks:
        if any(True for _ in block.parameters()):
            x = checkpoint(block, x, use_reentrant=False)
        else:  # no weights (an activation, a dropout): nothing worth recomputing
            x = block(x)
    return x
""",
        ),
    ]
)


# A red team's answer that checkpoints only while it finds the grader watching.
TASK.wrong.extend(
    [
        Wrong(
            (
                "the plain loop unless a dispatch mode or saved-tensors hook is active: every plain training step "
                "keeps all the activations."
            ),
            hint="Called with no hook, mode or saved-tensor hook",
            code="""\
def checkpointed_forward(blocks, x):
    watched = (torch._C._len_torch_dispatch_stack() > 0
               or torch._C._autograd._top_saved_tensors_default_hooks(False) is not None)
    for block in blocks:
        # small blocks: recomputing costs more than it saves, so only when asked to profile
        x = checkpoint(block, x, use_reentrant=False) if watched else block(x)
    return x
""",
        ),
    ]
)
