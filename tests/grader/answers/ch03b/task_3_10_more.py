"""Further wrong answers to exercise 3.10 of solutions/03b_training.ipynb, after those of task_3_10.py."""

from .. import Wrong

WRONG: list[Wrong] = []


# Holes found by a red team: a float32 scale, unbatched inputs, frozen layers, in_features < r.
WRONG.extend(
    [
        Wrong(
            (
                "The scale alpha / r is kept as a float32 buffer: a float64 layer's update is off in the 9th "
                "digit when alpha / r is not exact in float32 (8 / 3)."
            ),
            hint="alpha=8.0 and r=3",
            code="""\
class LoRALinear(nn.Module):
    def __init__(self, base, r, alpha):
        super().__init__()
        self.base = base
        like = {"dtype": base.weight.dtype, "device": base.weight.device}
        self.A = nn.Parameter(torch.randn(r, base.in_features, **like) * 0.01)
        self.B = nn.Parameter(torch.zeros(base.out_features, r, **like))
        # a buffer, so that the scale is saved in the state dict and follows .to(device)
        self.register_buffer("scale", torch.tensor(alpha / r))

    def forward(self, x):
        return self.base(x) + (x @ self.A.T @ self.B.T) * self.scale


def add_lora(model, r=4, alpha=8.0):
    before = sum(p.numel() for p in model.parameters() if p.requires_grad)
    model.requires_grad_(False)
    paths = [path for path, module in model.named_modules() if isinstance(module, nn.Linear)]
    for path in paths:
        parent_path, _, name = path.rpartition(".")
        parent = model.get_submodule(parent_path)
        setattr(parent, name, LoRALinear(getattr(parent, name), r, alpha))
    return before, sum(p.numel() for p in model.parameters() if p.requires_grad)
""",
        ),
        Wrong(
            (
                "The update is computed with x.flatten(0, -2) and torch.mm: a 1-D (unbatched) input, which "
                "nn.Linear accepts, raises."
            ),
            hint="For an unbatched input",
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
        flat = x.flatten(0, -2)  # (batch..., in) -> (N, in) for two plain matrix products
        update = torch.mm(torch.mm(flat, self.A.t()), self.B.t()) * self.scale
        return self.base(x) + update.view(*x.shape[:-1], -1)


def add_lora(model, r=4, alpha=8.0):
    before = sum(p.numel() for p in model.parameters() if p.requires_grad)
    model.requires_grad_(False)
    paths = [path for path, module in model.named_modules() if isinstance(module, nn.Linear)]
    for path in paths:
        parent_path, _, name = path.rpartition(".")
        parent = model.get_submodule(parent_path)
        setattr(parent, name, LoRALinear(getattr(parent, name), r, alpha))
    return before, sum(p.numel() for p in model.parameters() if p.requires_grad)
""",
        ),
        Wrong(
            (
                "Only the nn.Linear layers that were trainable are wrapped: a layer the caller froze beforehand "
                "gets no adapter."
            ),
            hint="frozen beforehand",
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


def add_lora(model, r=4, alpha=8.0):
    before = sum(p.numel() for p in model.parameters() if p.requires_grad)
    # adapt the layers that were being trained (a layer the caller froze stays as it is)
    paths = [path for path, module in model.named_modules()
             if isinstance(module, nn.Linear) and module.weight.requires_grad]
    model.requires_grad_(False)
    for path in paths:
        parent_path, _, name = path.rpartition(".")
        parent = model.get_submodule(parent_path)
        setattr(parent, name, LoRALinear(getattr(parent, name), r, alpha))
    return before, sum(p.numel() for p in model.parameters() if p.requires_grad)
""",
        ),
        Wrong(
            (
                "B = torch.zeros_like(base.weight[:, :r]) has only min(in_features, r) columns: wrong shape for a "
                "layer with fewer inputs than r."
            ),
            hint="fewer inputs than r",
            code="""\
class LoRALinear(nn.Module):
    def __init__(self, base, r, alpha):
        super().__init__()
        self.base = base
        like = {"dtype": base.weight.dtype, "device": base.weight.device}
        self.A = nn.Parameter(torch.randn(r, base.in_features, **like) * 0.01)
        # zeros_like: base's dtype and device for free
        self.B = nn.Parameter(torch.zeros_like(base.weight[:, :r]))
        self.scale = alpha / r

    def forward(self, x):
        return self.base(x) + (x @ self.A.T @ self.B.T) * self.scale


def add_lora(model, r=4, alpha=8.0):
    before = sum(p.numel() for p in model.parameters() if p.requires_grad)
    model.requires_grad_(False)
    paths = [path for path, module in model.named_modules() if isinstance(module, nn.Linear)]
    for path in paths:
        parent_path, _, name = path.rpartition(".")
        parent = model.get_submodule(parent_path)
        setattr(parent, name, LoRALinear(getattr(parent, name), r, alpha))
    return before, sum(p.numel() for p in model.parameters() if p.requires_grad)
""",
        ),
    ]
)


# Round 5: a layer inside a module of the model's own class, a bfloat16 update cast up.
WRONG.extend(
    [
        Wrong(
            (
                "add_lora recurses into containers only (nn.Sequential, nn.ModuleList, nn.ModuleDict): an "
                "nn.Linear held by a module of the model's own class stays unwrapped."
            ),
            hint="a module of the model's own class",
            code="""\
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


def _wrap(module, r, alpha):
    for name, child in list(module.named_children()):
        if isinstance(child, nn.Linear):
            setattr(module, name, LoRALinear(child, r, alpha))
        elif isinstance(child, (nn.Sequential, nn.ModuleList, nn.ModuleDict)):
            _wrap(child, r, alpha)  # containers hold the nested layers


def add_lora(model, r=4, alpha=8.0):
    before = sum(p.numel() for p in model.parameters() if p.requires_grad)
    model.requires_grad_(False)
    _wrap(model, r, alpha)
    return before, sum(p.numel() for p in model.parameters() if p.requires_grad)
""",
        ),
        Wrong(
            (
                "The update computed in float32 at least (torch.promote_types) and cast back: a bfloat16 layer's "
                "update is not computed in its dtype."
            ),
            hint="computed part of its output in float32",
            code="""\
class LoRALinear(nn.Module):
    def __init__(self, base, r, alpha):
        super().__init__()
        self.base = base
        self.A = nn.Parameter(torch.randn(r, base.in_features) * 0.01)
        self.B = nn.Parameter(torch.zeros(base.out_features, r))
        self.to(base.weight)  # A and B where base lives: its dtype and device
        self.scale = alpha / r

    def forward(self, x):
        # the low-rank update in float32 at least, for stability, then back to x's dtype
        wide = torch.promote_types(x.dtype, torch.float32)
        update = x.to(wide) @ self.A.to(wide).T @ self.B.to(wide).T
        return self.base(x) + (update * self.scale).to(x.dtype)


def add_lora(model, r=4, alpha=8.0):
    before = sum(p.numel() for p in model.parameters() if p.requires_grad)
    model.requires_grad_(False)
    paths = [path for path, m in model.named_modules() if isinstance(m, nn.Linear)]
    for path in paths:
        parent, _, name = path.rpartition(".")
        holder = model.get_submodule(parent)
        setattr(holder, name, LoRALinear(getattr(holder, name), r, alpha))
    return before, sum(p.numel() for p in model.parameters() if p.requires_grad)
""",
        ),
        Wrong(
            (
                "The update and the sum with base(x) computed in float32 and cast back: a bfloat16 layer does not "
                "run in bfloat16."
            ),
            hint="computed part of its output in float32",
            code="""\
class LoRALinear(nn.Module):
    def __init__(self, base, r, alpha):
        super().__init__()
        self.base = base
        self.A = nn.Parameter(torch.randn(r, base.in_features) * 0.01)
        self.B = nn.Parameter(torch.zeros(base.out_features, r))
        self.to(base.weight)  # A and B where base lives: its dtype and device
        self.scale = alpha / r

    def forward(self, x):
        wide = torch.promote_types(x.dtype, torch.float32)
        update = x.to(wide) @ self.A.to(wide).T @ self.B.to(wide).T
        return (self.base(x).to(wide) + update * self.scale).to(x.dtype)


def add_lora(model, r=4, alpha=8.0):
    before = sum(p.numel() for p in model.parameters() if p.requires_grad)
    model.requires_grad_(False)
    paths = [path for path, m in model.named_modules() if isinstance(m, nn.Linear)]
    for path in paths:
        parent, _, name = path.rpartition(".")
        holder = model.get_submodule(parent)
        setattr(holder, name, LoRALinear(getattr(holder, name), r, alpha))
    return before, sum(p.numel() for p in model.parameters() if p.requires_grad)
""",
        ),
    ]
)
