"""Exercise 6.6 of solutions/06_compile.ipynb: its other answers (see answers/__init__.py).

Its further wrong answers are in task_6_6_more.py.
"""

from .. import Task, Wrong
from . import task_6_6_more

TASK = Task(
    alternative="""\
import inspect


def export_with_dynamic_batch(model, example):
    name = next(iter(inspect.signature(model.forward).parameters))
    return torch.export.export(model, args=(example,), dynamic_shapes={name: {0: Dim.DYNAMIC}})
""",
    wrong=[
        Wrong(
            "No dynamic_shapes: the batch is specialised to the example's.",
            hint="make dimension 0 dynamic",
            code="""\
def export_with_dynamic_batch(model, example):
    return torch.export.export(model, (example,))
""",
        ),
        Wrong(
            "A Dim with a max: larger batches are refused.",
            hint="with no max",
            code="""\
def export_with_dynamic_batch(model, example):
    return torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch", max=16)},))
""",
        ),
        Wrong(
            "A Dim bounded at 1024: a batch of 2048 is refused, though the task asks for any batch size.",
            hint="with no max",
            code="""\
def export_with_dynamic_batch(model, example):
    return torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch", max=1024)},))
""",
        ),
        Wrong(
            "The model put in eval mode and frozen to export it, and left so: the learner's model no longer trains.",
            hint="as it was given",
            code="""\
def export_with_dynamic_batch(model, example):
    model.eval().requires_grad_(False)
    return torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch")},))
""",
        ),
        Wrong(
            "The forward argument's name assumed to be x.",
            hint="pass the spec by position",
            code="""\
def export_with_dynamic_batch(model, example):
    return torch.export.export(model, (example,), dynamic_shapes={"x": {0: Dim("batch")}})
""",
        ),
    ],
)

TASK.wrong.extend(
    [
        Wrong(
            "A Dim bounded at 100000: a batch beyond it is refused, though the task asks for no "
            "upper bound (every batch the check runs is below it).",
            hint="upper bound",
            code="""\
def export_with_dynamic_batch(model, example):
    batch = Dim("batch", max=100_000)
    return torch.export.export(model, (example,), dynamic_shapes=({0: batch},))
""",
        ),
        Wrong(
            "The model run once on the example before exporting (to see that it runs): a model "
            "in training mode with BatchNorm updates its running statistics, so the model is "
            "changed.",
            hint="buffers",
            code="""\
def export_with_dynamic_batch(model, example):
    model(example)
    return torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch")},))
""",
        ),
        Wrong(
            "Exported in eval mode, the mode put back after: for a model in training mode with "
            "BatchNorm (or dropout), the program computes something else than the model does.",
            hint="differs from the model",
            code="""\
def export_with_dynamic_batch(model, example):
    training = model.training
    model.eval()
    try:
        return torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch")},))
    finally:
        model.train(training)
""",
        ),
        Wrong(
            "Autograd switched off to export, and left off: the learner's next training step records nothing.",
            hint="autograd",
            code="""\
def export_with_dynamic_batch(model, example):
    torch.set_grad_enabled(False)  # export needs no gradients
    return torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch")},))
""",
        ),
        Wrong(
            "One program kept per class of model: a second model of the same class (other "
            "weights) gets the first one's program.",
            hint="another instance",
            code="""\
_programs = {}


def export_with_dynamic_batch(model, example):
    if type(model) not in _programs:
        spec = ({0: Dim("batch")},)
        _programs[type(model)] = torch.export.export(model, (example,), dynamic_shapes=spec)
    return _programs[type(model)]
""",
        ),
    ]
)

TASK.wrong.append(
    Wrong(
        "The model put in training mode to export its training graph: a model given in eval "
        "mode is left in training mode (its dropout and BatchNorm now act as in training).",
        hint="changed the model's mode",
        code="""\
def export_with_dynamic_batch(model, example):
    model.train()
    return torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch")},))
""",
    )
)

TASK.wrong.extend(
    [
        Wrong(
            "Traced on a fresh torch.randn batch of 2: float32 whatever the model takes, and drawn "
            "from the caller's global random generator.",
            hint="global random generator",
            code="""\
def export_with_dynamic_batch(model, example):
    fresh = torch.randn(2, *example.shape[1:])
    return torch.export.export(model, (fresh,), dynamic_shapes=({0: Dim("batch")},))
""",
        ),
        Wrong(
            "Traced on a made-up batch of zeros (no random numbers): float32 whatever the model "
            "takes (token ids fail), and not the example.",
            hint="traced on another input",
            code="""\
def export_with_dynamic_batch(model, example):
    fresh = torch.zeros(2, *example.shape[1:])
    return torch.export.export(model, (fresh,), dynamic_shapes=({0: Dim("batch")},))
""",
        ),
        Wrong(
            "The global random generator reseeded for a reproducible export.",
            hint="global random generator",
            code="""\
def export_with_dynamic_batch(model, example):
    torch.manual_seed(0)
    return torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch")},))
""",
        ),
        Wrong(
            "A forward pre-hook (casting the input to float32) left registered on the model.",
            hint="left a hook on the model",
            code="""\
def export_with_dynamic_batch(model, example):
    model.register_forward_pre_hook(lambda m, args: tuple(a.float() for a in args))
    return torch.export.export(model, (example,), dynamic_shapes=({0: Dim("batch")},))
""",
        ),
    ]
)

TASK.wrong.extend(task_6_6_more.WRONG)

# Dim.AUTO: dimension 0 dynamic wherever the model lets it be (a model that specialised it
# would give a static batch, which the check's other batch sizes refuse); the other
# dimensions, not named, stay static.
TASK.other_right.extend(
    [
        """\
def export_with_dynamic_batch(model, example):
    return torch.export.export(model, (example,), dynamic_shapes=({0: Dim.AUTO},))
""",
        """\
def export_with_dynamic_batch(model, example):
    shapes = [{0: torch.export.Dim.DYNAMIC}]
    return torch.export.export(model, args=(example,), kwargs=None, dynamic_shapes=shapes)
""",
    ]
)
