"""Exercise 3.10 of solutions/03b_training.ipynb: its other answers (see answers/__init__.py)."""

from .. import Task, Wrong
from . import task_3_10_more

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


TASK = Task(
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
            code=LORA_LINEAR.replace("torch.zeros(base.out_features, r)", "torch.randn(base.out_features, r) * 0.01")
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
            code=LORA_LINEAR.replace("        self.base = base\n", "        self.base = base.requires_grad_(False)\n")
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
            code=LORA_LINEAR.replace("        self.A = ", "        torch.manual_seed(0)\n        self.A = ") + ADD_LORA,
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
            code=LORA_LINEAR.replace("return self.base(x) +", "return F.linear(x, self.base.weight, self.base.bias) +")
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
            ("A from a private generator seeded by the clock: not the global generator, not decided by the run's seed"),
            hint="Under the same seed",
            code=LORA_CLOCK_GENERATOR_3_10,
        ),
    ],
)

TASK.wrong.append(
    Wrong(
        "The update computed in float32 whatever the layer's dtype: a float64 model loses "
        "precision, a bfloat16 one comes out in float32.",
        hint="compute the update in x's and A's dtype",
        code=LORA_LINEAR.replace("x @ self.A.T @ self.B.T", "x.float() @ self.A.float().T @ self.B.float().T")
        + ADD_LORA,
    )
)


# A fifth red team's wrong answers.
TASK.wrong.extend(
    [
        Wrong(
            ("The adapter's branch computed on x.detach(): no gradient reaches the layers below through it."),
            hint="leaves out the adapter's branch",
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
        return self.base(x) + (x.detach() @ self.A.T @ self.B.T) * self.scale


def count_trainable(model):
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


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
            ("The adapter's branch computed on x.data: no gradient reaches the layers below through it."),
            hint="leaves out the adapter's branch",
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
        return self.base(x) + (x.data @ self.A.T @ self.B.T) * self.scale


def count_trainable(model):
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


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
    ]
)


TASK.wrong.extend(task_3_10_more.WRONG)
