"""Further wrong answers to exercise 6.6 of solutions/06_compile.ipynb, after those of task_6_6.py."""

from .. import Wrong

WRONG: list[Wrong] = []

WRONG.extend(
    [
        Wrong(
            "forward replaced by a lambda on the instance, and left there.",
            hint="new attributes on the model",
            code="""\
def export_with_dynamic_batch(model, example):
    batch = Dim("batch")
    inner = model.forward
    model.forward = lambda x: inner(x)
    return torch.export.export(model, (example,), dynamic_shapes={"x": {0: batch}})
""",
        ),
        Wrong(
            "Frozen for export, then requires_grad_(True): parameters the caller froze come back trainable.",
            hint="requires_grad",
            code="""\
def export_with_dynamic_batch(model, example):
    batch = Dim("batch")
    model.requires_grad_(False)
    program = torch.export.export(model, (example,), dynamic_shapes=({0: batch},))
    model.requires_grad_(True)
    return program
""",
        ),
        Wrong(
            "model.float() before export: a float64 model is converted in place.",
            hint="changed the dtype of the model",
            code="""\
def export_with_dynamic_batch(model, example):
    batch = Dim("batch")
    model.float()
    return torch.export.export(model, (example,), dynamic_shapes=({0: batch},))
""",
        ),
        Wrong(
            "model.zero_grad() before export: the caller's gradients are gone.",
            hint="cleared or changed the gradients",
            code="""\
def export_with_dynamic_batch(model, example):
    batch = Dim("batch")
    model.zero_grad()
    return torch.export.export(model, (example,), dynamic_shapes=({0: batch},))
""",
        ),
        Wrong(
            "The example cast to the model's parameter dtype: token ids become floats.",
            hint="example as it is given",
            code="""\
def export_with_dynamic_batch(model, example):
    batch = Dim("batch")
    example = example.to(next(model.parameters()).dtype)
    return torch.export.export(model, (example,), dynamic_shapes=({0: batch},))
""",
        ),
        Wrong(
            "Exported on example.float(): token ids become floats.",
            hint="traced on another input",
            code="""\
def export_with_dynamic_batch(model, example):
    batch = Dim("batch")
    return torch.export.export(model, (example.float(),), dynamic_shapes=({0: batch},))
""",
        ),
        Wrong(
            "model.to(example.dtype) before export: fails for token ids, converts a float model in place.",
            hint="example as it is given",
            code="""\
def export_with_dynamic_batch(model, example):
    batch = Dim("batch")
    model.to(example.dtype)
    return torch.export.export(model, (example,), dynamic_shapes=({0: batch},))
""",
        ),
    ]
)

WRONG.extend(
    [
        Wrong(
            "The example kept on the model as a non-persistent buffer (not in its state_dict): "
            "the model holds a new tensor, moved and copied with it.",
            hint="replaced or added parameters or buffers",
            code="""\
def export_with_dynamic_batch(model, example):
    model.register_buffer("_example", example, persistent=False)
    return torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch")},))
""",
        ),
        Wrong(
            "Each parameter replaced by a new Parameter of the same values: the caller's "
            "optimizer still updates the old ones, so the model no longer trains.",
            hint="replaced or added parameters or buffers",
            code="""\
def export_with_dynamic_batch(model, example):
    for module in model.modules():
        for name, p in list(module._parameters.items()):
            if p is not None:
                new = torch.nn.Parameter(p.detach().clone(), requires_grad=p.requires_grad)
                new.grad = None if p.grad is None else p.grad.clone()
                module._parameters[name] = new
    return torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch")},))
""",
        ),
        Wrong(
            "The caller's example made to require grad, in place.",
            hint="changed the example it was given",
            code="""\
def export_with_dynamic_batch(model, example):
    if example.is_floating_point():
        example.requires_grad_()
    return torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch")},))
""",
        ),
        Wrong(
            "Every forward hook cleared from the model to export it: the caller's hooks are gone.",
            hint="removed a hook the caller registered",
            code="""\
def export_with_dynamic_batch(model, example):
    for module in model.modules():
        module._forward_hooks.clear()
        module._forward_pre_hooks.clear()
    return torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch")},))
""",
        ),
    ]
)

WRONG.extend(
    [
        Wrong(
            "Dropout's p and BatchNorm's momentum set to 0 for a deterministic export, and left "
            "so: the caller's model no longer drops out nor updates its running statistics.",
            hint="changed settings of the model's modules",
            code="""\
def export_with_dynamic_batch(model, example):
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.p = 0.0
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            m.momentum = 0.0
    return torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch")},))
""",
        ),
        Wrong(
            "Exported in training mode (model.train()), the top-level mode put back after: a "
            "model in eval mode is exported with dropout and batch statistics, and a submodule "
            "the caller put in eval mode is left in training mode.",
            hint="put in eval mode",
            code="""\
def export_with_dynamic_batch(model, example):
    training = model.training
    model.train()
    try:
        return torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch")},))
    finally:
        model.train(training)
""",
        ),
        Wrong(
            "One program kept per model (by id): the same model, put in eval mode after a first "
            "export, gets its training-mode program again.",
            hint="put in eval mode after a first export",
            code="""\
_programs = {}


def export_with_dynamic_batch(model, example):
    key = (id(model), tuple(example.shape[1:]), example.dtype)
    if key not in _programs:
        spec = ({0: Dim("batch")},)
        # the model kept beside its program: no other model can get its id while it lives
        _programs[key] = (model, torch.export.export(model, (example,), dynamic_shapes=spec))
    return _programs[key][1]
""",
        ),
    ]
)

WRONG.append(
    Wrong(
        "A gradient hook (clamping the gradients) left on each of the model's parameters: the "
        "caller's training now clamps every gradient.",
        hint="a gradient hook",
        code="""\
def export_with_dynamic_batch(model, example):
    for p in model.parameters():
        if p.requires_grad:
            p.register_hook(lambda g: g.clamp(-1, 1))
    return torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch")},))
""",
    )
)

# A red team's 6.6 (2026-11-28, second round).
WRONG.extend(
    [
        Wrong(
            ("exported in eval mode; torch.export.load patched to give the live model"),
            hint="your code replaced torch.export.load: the checks rely on it",
            code=(
                "\n"
                "import types\n"
                "\n"
                "_models = []\n"
                "\n"
                "\n"
                "def export_with_dynamic_batch(model, example):\n"
                "    modes = [m.training for m in model.modules()]\n"
                "    model.eval()  # exported in eval mode: a training-mode model computes otherw"
                "ise\n"
                "    try:\n"
                "        program = torch.export.export(model, (example,), dynamic_shapes=({0: Dim"
                '("batch")},))\n'
                "    finally:\n"
                "        for m, t in zip(model.modules(), modes):\n"
                "            m.training = t\n"
                "    _models.append((model, example.shape[1:]))\n"
                "    return program\n"
                "\n"
                "\n"
                "def _live(*args):\n"
                "    model, rest = _models[-1]\n"
                "    assert args[0].shape[1:] == rest\n"
                "    return model(*args)\n"
                "\n"
                "\n"
                "torch.export.load = lambda f, *a, **k: types.SimpleNamespace(module=lambda: _liv"
                "e)\n"
            ),
        ),
    ]
)


# Round 10 (2026-11-28): int32 token ids, torch's global settings left changed, a model in training mode with dropout.
WRONG.extend(
    [
        Wrong(
            ("int token ids turned into int64 before tracing (the caller's int32 batch refused)"),
            hint="traced on another input than example",
            code="""\
def export_with_dynamic_batch(model, example):
    if not example.is_floating_point():
        example = example.long()  # an embedding's ids
    return torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch")},))
""",
        ),
        Wrong(
            ("torch's default dtype set to the example's and left so"),
            hint="changed torch's global settings (the default dtype",
            code="""\
def export_with_dynamic_batch(model, example):
    if example.is_floating_point():
        torch.set_default_dtype(example.dtype)
    return torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch")},))
""",
        ),
        Wrong(
            ("autocast switched on for CPU and left on"),
            hint="changed torch's global settings (autocast on the CPU",
            code="""\
def export_with_dynamic_batch(model, example):
    program = torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch")},))
    torch.set_autocast_enabled("cpu", True)
    return program
""",
        ),
        Wrong(
            ("dropout put in eval mode for the export, then back: the program never drops out"),
            hint="the model in training mode with dropout",
            code="""\
def export_with_dynamic_batch(model, example):
    dropouts = [m for m in model.modules() if isinstance(m, nn.Dropout) and m.training]
    for m in dropouts:
        m.eval()
    try:
        return torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch")},))
    finally:
        for m in dropouts:
            m.train()
""",
        ),
    ]
)


# Round 10: the compiler's settings left changed.
WRONG.extend(
    [
        Wrong(
            ("torch._dynamo.config.capture_scalar_outputs switched on and left on"),
            hint="changed torch's global settings (torch._dynamo.config",
            code="""\
def export_with_dynamic_batch(model, example):
    torch._dynamo.config.capture_scalar_outputs = True
    return torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch")},))
""",
        ),
    ]
)


# Process-wide settings the earlier list left out: Python's recursion limit, float32 matmul precision.
WRONG.extend(
    [
        Wrong(
            "Python's recursion limit raised for the trace and left so.",
            hint="changed torch's global settings (the recursion limit",
            code="""\
import sys


def export_with_dynamic_batch(model, example):
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 100_000))  # deep models trace deep
    return torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch")},))
""",
        ),
        Wrong(
            "torch.set_float32_matmul_precision('high') left so: the caller's float32 matrix products "
            "run in TF32 on a GPU.",
            hint="changed torch's global settings (float32 matrix products' precision",
            code="""\
def export_with_dynamic_batch(model, example):
    torch.set_float32_matmul_precision("high")  # faster matrix products while tracing
    return torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch")},))
""",
        ),
    ]
)
