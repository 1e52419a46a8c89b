"""What a capture is handed, read the user's way: the call's inputs made into leaves that
can be drawn, the names of parameters, the gradient to seed backward with, and why a call
gave no graph, in words that say what to do."""

from __future__ import annotations

import inspect
import math
import numbers
import sys
import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import fields, is_dataclass
from typing import Any

import torch
from torch import nn
from torch.utils._pytree import keystr, tree_flatten_with_path, tree_leaves, tree_map

from ..errors import NotScalarResult, VizlibTypeError, VizlibValueError
from ..memory import refuse_without_memory
from ..text import device_name, dims, dtype_name
from .compiled import original_module
from .nested import tensor_shape

# What params= may be: names for leaves, as a dict name -> tensor or a module's parameters.
Params = dict | nn.Module | None


def prepare_inputs(fn: Callable, args: tuple, kwargs: dict) -> tuple[tuple, dict, dict, dict]:
    """Give float inputs a gradient without touching the caller's tensors; name them.

    Python floats become 0-d float tensors (``_number_tensor``), and so do other real numbers that are not
    whole (NumPy's ``np.float32(0.5)``, which is no Python float, would otherwise stay a
    constant with no gradient where ``np.float64`` gets one); float (and complex) tensors
    that do not require grad are copied and the copy requires grad. Returns new args, kwargs,
    id(tensor) -> name, and the new arguments by name (``bound_arguments``: the modules
    among them are the caller's own).
    """

    def prepare(v: object) -> object:
        if isinstance(v, float):
            return _number_tensor(v)
        if isinstance(v, numbers.Real) and not isinstance(v, numbers.Integral):
            return _number_tensor(float(v))
        if isinstance(v, torch.Tensor) and (v.is_floating_point() or v.is_complex()) and not v.requires_grad:
            return v.detach().clone().requires_grad_(True)
        return v

    _refuse_freed_inputs(fn, args, kwargs)  # (before prepare copies one)
    args, kwargs = tree_map(prepare, (args, kwargs))
    names: dict[int, str] = {}
    bound = bound_arguments(fn, args, kwargs)
    for name, value in bound.items():
        # as Python reaches each tensor from the argument: targets[1]['boxes'], batch['x'][0]
        for path, t in tree_flatten_with_path(value)[0]:
            if isinstance(t, torch.Tensor):
                names[id(t)] = name + keystr(path)
    return args, kwargs, names, bound


def _refuse_freed_inputs(fn: Callable, args: tuple, kwargs: dict) -> None:
    """Refuse, by its name, an input whose memory was freed (``memory.refuse_without_memory``)."""
    for name, value in bound_arguments(fn, args, kwargs).items():
        for path, t in tree_flatten_with_path(value)[0]:
            if isinstance(t, torch.Tensor):
                refuse_without_memory(t, f"The input {name}{keystr(path)}")


def _number_tensor(v: float) -> torch.Tensor:
    """``v`` as a 0-d tensor that requires grad: of the default dtype (float32, which the course's
    pictures name), unless that cannot hold it: a number it would make inf (1e300) or round
    to 0 or to a subnormal of few digits (1e-300, 1e-40) becomes a float64, which holds any
    Python float as it is, rather than the call getting another number without a word
    (``widened_numbers`` says so in the picture)."""
    t = torch.tensor(v)
    held = t.item()
    if math.isfinite(v) and v != 0 and (math.isinf(held) or abs(held) < torch.finfo(t.dtype).tiny):
        t = torch.tensor(v, dtype=torch.float64)
    return t.requires_grad_(True)


def made_of_numbers(given: tuple, prepared: tuple, names: dict[int, str]) -> list[tuple[str, object, torch.Tensor]]:
    """The name, the number and the tensor of each argument that ``prepare_inputs`` made a
    tensor of a number (``given``: the caller's arguments; ``prepared``: what the call is
    handed, leaf for leaf)."""
    pairs = zip(tree_leaves(given), tree_leaves(prepared), strict=True)
    return [
        (names.get(id(t), "an input"), n, t)
        for n, t in pairs
        if isinstance(t, torch.Tensor) and not isinstance(n, torch.Tensor)
    ]


def widened_numbers(given: tuple, prepared: tuple, names: dict[int, str]) -> list[str]:
    """A note naming the numbers among the caller's arguments (``given``) that ``prepare_inputs``
    handed over (``prepared``, leaf for leaf) as float64 tensors, the default dtype being unable
    to hold them (``_number_tensor``); none where there are none."""
    default = torch.get_default_dtype()
    kind = dtype_name(default)
    wide = [
        f"{name}={float(n)!r} ({kind}: {torch.tensor(float(n)).item():.7g})"  # type: ignore[arg-type]
        for name, n, t in made_of_numbers(given, prepared, names)
        if t.dtype != default
    ]
    if not wide:
        return []
    return [
        f"{', '.join(wide)}: beyond what {kind}, torch's default dtype, holds, so handed to the function as "
        "float64, as given."
    ]


def bound_arguments(fn: Callable, args: tuple, kwargs: dict) -> dict[str, object]:
    """The call's arguments by the names ``fn``'s signature gives them (``arg0``... where it
    has none, or where the call will fail anyway)."""
    try:
        target = fn.forward if isinstance(fn, nn.Module) else fn
        return dict(_signature(target).bind(*args, **kwargs).arguments)
    except (TypeError, ValueError):
        return {f"arg{k}": a for k, a in enumerate(args)} | kwargs


def _signature(fn: Callable) -> inspect.Signature:
    """``fn``'s signature; for a TorchScript function (``torch.jit.script``, ``torch.jit.trace``),
    which has no Python one, the one its schema names (``f(Tensor x, float w=2.) -> Tensor``)."""
    if isinstance(fn, torch.jit.ScriptFunction):
        schema: Any = fn.schema  # (a property: torch's stubs call it a method)
        empty = inspect.Parameter.empty
        return inspect.Signature(
            [
                inspect.Parameter(
                    a.name,
                    inspect.Parameter.POSITIONAL_OR_KEYWORD,
                    default=a.default_value if a.has_default_value() else empty,
                )
                for a in schema.arguments
            ]
        )
    return inspect.signature(fn)


def module_names(fn: Callable, params: Params, reached: list[tuple[str, object]]) -> tuple[dict, dict[int, str]]:
    """The path of each module the call may run, and the name of each parameter.

    ``fn`` (a module) and ``params`` name theirs as ``named_modules`` and ``named_parameters``
    do. Then the modules the call reaches by a name of the user's (``reached``: its
    arguments, the variables of its closure and the globals it names) name theirs, under
    that name where there are several or ``fn``/``params`` named some, as ``net.0.weight``
    beside ``head.weight``: two modules named alike inside two of them are never one box.
    (Any other module is named when it runs: ``ForwardRecorder._name_unnamed``.)
    """
    paths: dict = {}
    names = param_names(fn) if isinstance(fn, nn.Module) else {}
    names.update(param_names(params))
    for given in (fn, params):
        if isinstance(given, nn.Module):
            given = original_module(given)
            paths.update({mod: path or type(given).__name__ for path, mod in named_modules(given)})
    others: dict[int, tuple[str, nn.Module]] = {}
    for name, value in reached:
        value = original_module(value) if isinstance(value, nn.Module) else value
        held = value if isinstance(value, nn.Module) else _list_of_modules(value)
        if held is not None and held not in paths:
            others.setdefault(id(value), (name, held))
    inside = {id(sub) for _, m in others.values() for sub in m.modules() if sub is not m}
    tops = [(name, m) for key, (name, m) in others.items() if key not in inside]
    named_already = bool(paths)  # (fn or params: a model beside it is named under its variable)
    for name, m in tops:
        # A list of modules (a plain one, a ModuleList, a ModuleDict) is never called: its
        # modules go under its name (``layers.0``), not under none, as a model's would.
        plain = isinstance(m, (_PlainList, nn.ModuleList, nn.ModuleDict))
        prefix = f"{name}." if len(tops) > 1 or named_already or plain else ""
        for path, mod in named_modules(m):
            if path or not isinstance(m, _PlainList):  # (the stand-in for a plain list is no module of theirs)
                paths.setdefault(mod, prefix + path if path else prefix.rstrip(".") or type(m).__name__)
        for path, p in named_parameters(m):
            names.setdefault(id(p), prefix + path)
    return paths, names


def tensor_names(fn: object, reached: list[tuple[str, object]]) -> dict[int, str]:
    """A name for each tensor the call reaches by a name of the user's: a variable of its
    closure or a global (``W``), an item of a list, tuple or dict held so (``Ws[0]``,
    ``P['w']``), an attribute of the object called or of a bound method's object (``W1``
    for ``vz.graph(mlp, x)``: weights held the way micrograd holds them), or of an object
    reached so (``mlp.W1`` for ``lambda x: mlp(x)``). Without it such a leaf is named by
    its shape alone, and two of one shape are drawn alike."""
    holder = fn.__self__ if isinstance(fn, types.MethodType) else fn
    named = [*_attributes(holder, ""), *reached]
    named += [item for name, value in reached for item in _attributes(value, f"{name}.")]
    names: dict[int, str] = {}
    for name, value in named:
        for where, t in _held_tensors(name, value):
            names.setdefault(id(t), where)
    return names


def _attributes(obj: object, prefix: str) -> list[tuple[str, object]]:
    """The attributes of a plain object (a module's parameters are named as parameters, a
    function's variables by ``outside_state``), each name after ``prefix``."""
    if isinstance(obj, (nn.Module, torch.Tensor, types.FunctionType, type)) or not hasattr(obj, "__dict__"):
        return []
    return [(prefix + name, value) for name, value in vars(obj).items()]


# A list or dict of more tensors than this is data (a dataset held in memory), not weights:
# naming each of its items would cost a drawing more than the rest.
_MAX_NAMED = 10_000


def _held_tensors(name: str, value: object) -> list[tuple[str, torch.Tensor]]:
    """``value`` under ``name`` where it is a tensor, each tensor of it under ``name[key]``
    where it is a list, tuple or dict of tensors; else nothing (the first item that is no
    tensor settles it: a vocabulary of millions of entries is not read through)."""
    if isinstance(value, torch.Tensor):
        return [(name, value)]
    if isinstance(value, (list, tuple, dict)) and len(value) > _MAX_NAMED:
        return []
    if isinstance(value, dict):
        items: Iterable = value.items()
    elif isinstance(value, (list, tuple)):
        items = enumerate(value)
    else:
        return []
    found = []
    for key, item in items:
        if not isinstance(item, torch.Tensor):
            return []
        found.append((f"{name}[{key!r}]", item))
    return found


def named_modules(module: nn.Module) -> Iterator[tuple[str, nn.Module]]:
    """``module.named_modules()``, with each module that ``torch.compile`` wrapped named as it
    would be unwrapped: ``block.lin``, not ``block._orig_mod.lin``, for a model whose block was
    compiled on its own. The wrapper gets its original's path: the wrapper runs only to call it
    (``module_hooks`` draws no box for it)."""
    found: dict[str, tuple[str, nn.Module]] = {}  # path -> (path unwrapped, module)
    for path, mod in module.named_modules():
        outer, _, last = path.rpartition(".")
        above, holder = found.get(outer, ("", module))
        if not path or (last == "_orig_mod" and original_module(holder) is not holder):
            path_of = above  # (a wrapper's only module is the one it wrapped)
        else:
            path_of = f"{above}.{last}" if above else last
        found[path] = (path_of, mod)
        yield path_of, mod


def named_parameters(module: nn.Module) -> Iterator[tuple[str, nn.Parameter]]:
    """``module.named_parameters()``, named as ``named_modules`` names their modules."""
    seen: set[int] = set()
    for path, mod in named_modules(module):
        for name, p in mod.named_parameters(recurse=False):
            if id(p) not in seen:
                seen.add(id(p))
                yield (f"{path}.{name}" if path else name), p


class _PlainList(nn.ModuleList):
    """A plain list, tuple or dict of modules the call reaches by a name, standing in for the
    ``nn.ModuleList`` it could have been, to name its modules as that would:
    ``layers = [nn.Linear(8, 8) for _ in range(4)]`` runs ``layers.0`` to ``layers.3``."""


def _list_of_modules(value: object) -> nn.Module | None:
    """``value`` as a ``_PlainList`` where it is a non-empty list or tuple of modules, or a dict
    of them by names a module may have; else None. Asked of every variable a call reaches
    (a vocabulary of millions of entries too): the first item that is no module settles it."""
    if isinstance(value, dict):
        items: Iterable = value.items()
    elif isinstance(value, (list, tuple)):
        items = enumerate(value)
    else:
        return None
    if not value or not all(isinstance(module, nn.Module) for _, module in items):
        return None
    plain = _PlainList()
    try:
        for key, module in value.items() if isinstance(value, dict) else enumerate(value):
            plain.add_module(str(key), module)
    except KeyError:  # a name no module may have ("a.b", "", "training")
        return None
    return plain


def param_names(params: Params) -> dict[int, str]:
    if params is None:
        return {}
    if isinstance(params, nn.Module):
        return {id(p): name for name, p in named_parameters(original_module(params))}
    if isinstance(params, dict):
        return {id(t): name for name, t in params.items() if isinstance(t, torch.Tensor)}
    raise VizlibTypeError(f"params= must be a dict of name -> tensor, or an nn.Module (got {type(params).__name__}).")


def _ones(shape: list[int | str], device: str = "cpu") -> str:
    """``torch.ones(2, 3)`` to write in advice (with ``device=`` where it is not the CPU)."""
    if any(isinstance(d, str) for d in shape):  # a nested tensor's ragged dimension (tensor_shape)
        return "torch.ones_like(y)"
    on = "" if device == "cpu" else f", device={device!r}"
    # (torch.ones() is an error)
    return f"torch.ones({', '.join(map(str, shape))}{on})" if shape else f"torch.ones((){on})"


def why_no_graph(fn: Callable, user_args: tuple, result: object = None, modules: Iterable[nn.Module] = ()) -> str:
    """Why a recorded call's ``result`` has no graph behind it, in the terms of what the user did
    (``modules``: those the call ran, whose parameters could have carried one)."""
    name = name_of(fn)
    if inspect.iscoroutine(result):
        result.close()  # never to run: Python would warn that it was never awaited
        return (
            f"{name} is an async function: calling it returned a coroutine, whose body has not run, so there "
            "is no graph to draw. Draw a plain function (def, not async def) that returns the tensor."
        )
    if inspect.isgenerator(result) or inspect.isasyncgen(result):
        return (
            f"{name} is a generator function (it has yield): calling it returned a generator, whose body has "
            "not run, so there is no graph to draw. Draw a function that runs it and returns a tensor, e.g. "
            "vz.graph(lambda x: list(f(x))[-1], x) for its last value, f being the generator function."
        )
    if torch.is_inference_mode_enabled():
        return (
            f"vz.graph ran {name} under torch.inference_mode(), where autograd records nothing, so there "
            "is no graph to draw. Call vz.graph outside the `with torch.inference_mode():` block."
        )
    leaves = tree_leaves(user_args)
    holders = [v for v in leaves if _holds_tensors(v)]
    if holders:
        kind = type(holders[0]).__name__
        return (
            f"{name} returned a result that does not depend on any tensor requiring grad. vizlib makes float "
            "tensors require grad where it finds them: as arguments, or inside lists, tuples and dicts; "
            f"the tensors inside the {kind} argument it does not look into. Pass them as arguments "
            f"(vz.graph(lambda x: f({kind}(x)), x) for a function f), or create them with requires_grad=True."
        )
    iterators = [v for v in leaves if hasattr(type(v), "__next__") and not isinstance(v, torch.Tensor)]
    if iterators:
        kind = type(iterators[0]).__name__
        return (
            f"{name} returned a result that does not depend on any tensor requiring grad. vizlib makes float "
            f"tensors require grad where it finds them, but it cannot look into the {kind} argument without "
            "running through it, which is the call's to do (once). Pass its items in a list: vz.graph(f, "
            "list(items)), or create the tensors with requires_grad=True."
        )
    np = sys.modules.get("numpy")  # (an array handed in means NumPy is imported: vizlib need not import it)
    arrays = [v for v in leaves if np is not None and isinstance(v, np.ndarray)]
    if arrays:
        return (
            f"{name} was given a NumPy array of shape {list(arrays[0].shape)}, and autograd follows gradients "
            "only through torch tensors: vizlib makes float tensors require grad, not arrays, so nothing "
            "required grad and there is no graph to draw. Pass the array as a tensor: "
            "vz.graph(f, torch.from_numpy(a)) (torch.tensor(a, dtype=torch.float32) for float32)."
        )
    floats = [v for v in leaves if isinstance(v, float) or (isinstance(v, torch.Tensor) and v.is_floating_point())]
    numbers = [v for v in leaves if isinstance(v, (int, torch.Tensor)) and not isinstance(v, bool)]
    parameters = {id(p): p for m in modules for p in m.parameters(recurse=False)}.values()
    if parameters:  # a model's parameters are the leaves, whatever its inputs (token ids)
        frozen = not floats and not any(p.requires_grad for p in parameters)
        return _why_no_graph_of_a_model(name, result_tensors(result), frozen)
    if numbers and not floats:
        # (a quantized tensor has no .float(): it is dequantized)
        quantized = ", q.dequantize() for a quantized one." if any(map(_is_quantized, numbers)) else "."
        got = ", ".join(
            f"{type(v).__name__} {v}" if not isinstance(v, torch.Tensor) else f"a {dtype_name(v.dtype)} tensor"
            for v in numbers[:3]
        )
        return (
            f"{name}'s inputs ({got}) are integers, and autograd follows gradients only through "
            "floating-point numbers, so there is no graph to draw. Pass floats: 2.0 rather than 2, "
            "or torch.tensor([1.0, 2.0]) / t.float() for a tensor" + quantized
        )
    kinds = _no_float_among(result_tensors(result))
    if kinds:
        return (
            f"{name} returned {kinds} tensors only, and autograd follows gradients only through floating-point "
            "numbers: an integer or boolean result (argmax, a comparison, a count) has no graph behind it, "
            "whatever it was computed from. Return a float tensor computed from the inputs: x.max() rather "
            "than x.argmax(), or the loss itself."
        )
    return (
        f"{name} returned a result that does not depend on any tensor requiring grad, so there is no graph "
        "to draw. Return a tensor computed from the inputs (a result computed under torch.no_grad() "
        "or from .detach()ed tensors has no graph)."
    )


def _is_quantized(v: object) -> bool:
    return isinstance(v, torch.Tensor) and v.is_quantized


def _no_float_among(made: list[torch.Tensor]) -> str:
    """The dtypes of a result whose tensors are all integers or booleans ("int64"), else ""."""
    if made and not any(t.is_floating_point() or t.is_complex() for t in made):
        return " and ".join(sorted({dtype_name(t.dtype) for t in made}))
    return ""


def _why_no_graph_of_a_model(name: str, made: list[torch.Tensor], frozen: bool) -> str:
    """``why_no_graph`` for a call that ran a model: its parameters could have carried a graph
    (``frozen``: none requires grad, and no input could)."""
    kinds = _no_float_among(made)
    if kinds:
        return (
            f"{name} returned {kinds} tensors only (token ids, as model.generate() returns, or an argmax), and "
            "autograd follows gradients only through floating-point numbers, so there is no graph to draw. "
            "Return the float tensor the model computes: its loss, or its logits (for instance "
            "vz.graph(lambda ids: model(ids).logits.sum(), ids))."
        )
    if frozen:
        return (
            f"Every parameter of the model {name} runs is frozen (requires_grad=False), and no input is a float "
            "tensor vizlib could make require grad, so nothing requires grad and there is no graph to draw. "
            "Let the parameters to draw require grad (model.requires_grad_(True), or those of some layers), "
            "or pass a float input (inputs_embeds rather than token ids)."
        )
    return (
        f"{name} returned a result that does not depend on the model's parameters or inputs, so there is no "
        "graph to draw: it was computed under torch.no_grad() (model.generate() runs so), from .detach()ed "
        "tensors, or by torch.inference_mode(). Return the loss or logits of a forward run with grad enabled."
    )


def result_tensors(result: object) -> list[torch.Tensor]:
    """The tensors of a call's result, in order (see ``_placed_tensors``)."""
    return [t for _, t in _placed_tensors(result)]


def _placed_tensors(result: object, at: str = "") -> list[tuple[str, torch.Tensor]]:
    """The tensors of a call's result, in order, each with where Python reaches it from the
    result (``[0]``, ``['loss']``, ``.loss``): where torch's pytree finds them (tuples,
    lists, dicts, named tuples, what a library registered), and inside a dataclass or a
    mapping pytree does not know (an ``OrderedDict`` subclass, a model's output class),
    which are reached by their fields and keys, not by position."""
    found = []
    for path, leaf in tree_flatten_with_path(result)[0]:
        where = at + keystr(path)
        if isinstance(leaf, torch.Tensor):
            found.append((where, leaf))
        elif isinstance(leaf, Mapping):
            for key, value in leaf.items():
                found += _placed_tensors(value, f"{where}[{key!r}]")
        elif is_dataclass(leaf) and not isinstance(leaf, type):
            for f in fields(leaf):
                found += _placed_tensors(getattr(leaf, f.name, None), f"{where}.{f.name}")
    return found


def _holds_tensors(v: object) -> bool:
    """An object that is not a tensor but keeps tensors in its fields (a dataclass, a plain object)."""
    if isinstance(v, torch.Tensor) or not hasattr(v, "__dict__") or isinstance(v, (nn.Module, type)):
        return False
    return any(isinstance(x, torch.Tensor) for x in vars(v).values())


def name_of(fn: object) -> str:
    return type(fn).__name__ if isinstance(fn, nn.Module) else getattr(fn, "__name__", "the function")


def parts_to_draw(result: object) -> list[str]:
    """Where a call's result keeps a number to draw, as Python reaches it from the result: its
    single numbers that depend on the inputs (``['loss']``, ``[0]``, ``.loss``: a Hugging Face
    model's output holds its loss beside its logits), else the sum of the first tensor that
    does (``['out'].sum()``: a segmentation model's output, a dict of maps)."""
    parts = [(where, t.numel() == 1) for where, t in _placed_tensors(result) if t.requires_grad]
    singles = [part for part, single in parts if single]
    return singles or [f"{part}.sum()" for part, _ in parts[:1]]


def _draw_one(fn: object, part: str) -> str:
    """The advice to draw the number at ``part`` of ``fn``'s result (see ``parts_to_draw``)."""
    if isinstance(fn, nn.Module):
        call, params = "model", ", params=model"  # (through a lambda, its parameters need naming)
    else:
        name = getattr(fn, "__name__", "")
        call, params = (name if name.isidentifier() else "f"), ""
    summed = part.removesuffix(".sum()")
    one = f"the result's {part} is one" if summed == part else f"the sum of the result's {summed} is one"
    return (
        f"{one}, so vz.graph(lambda *a, **kw: {call}(*a, **kw){part}, ...{params}), "
        "with your inputs in place of ..., draws the graph behind it."
    )


def grad_outputs(
    outs: list[torch.Tensor], grad_output: object, fn: object = None, parts: list[str] | None = None
) -> list[torch.Tensor]:
    """The gradients backward starts from: ``grad_output`` checked against the result
    tensors ``outs``, or ones for a single number. ``fn`` and ``parts`` (where its result
    keeps a number, ``parts_to_draw``) word the advice when the result is not one number."""
    if grad_output is None:
        shapes = [list(tensor_shape(t)) for t in outs]
        ones = [_ones(shape, device_name(t.device)) for shape, t in zip(shapes, outs, strict=True)]
        if len(outs) == 1 and outs[0].numel() != 1:
            raise NotScalarResult(
                f"The result has shape {dims(shapes[0])}, not a single number, so backward has no "
                "natural starting gradient. Pass grad_output= a tensor of that shape "
                f"(e.g. grad_output={ones[0]}), or return a scalar such as y.sum().",
                shapes,
            )
        if any(t.numel() != 1 for t in outs):
            raise NotScalarResult(
                f"The result holds {len(outs)} tensors that depend on the inputs, of shapes "
                f"{', '.join(map(dims, shapes))}, not a single number, so backward has no natural starting "
                "gradient. Pass grad_output= one tensor per result tensor, in order "
                f"(grad_output=[{', '.join(ones)}]), or draw a function that returns one scalar: "
                + (_draw_one(fn, parts[0]) if parts else "e.g. vz.graph(lambda x: f(x)[0].sum(), x)."),
                shapes,
            )
        return [torch.ones_like(t) for t in outs]
    given = list(grad_output) if isinstance(grad_output, (list, tuple)) else [grad_output]
    seeds = [s for s in given if isinstance(s, torch.Tensor)]
    want = ", ".join(dims(tensor_shape(t)) for t in outs)
    if len(seeds) != len(given):
        raise VizlibTypeError(
            f"grad_output must be a tensor (or a list of tensors, one per result tensor) "
            f"of the result's shape ({want}); got {type(grad_output).__name__}."
        )
    if len(seeds) != len(outs) or any(tensor_shape(s) != tensor_shape(t) for s, t in zip(seeds, outs, strict=True)):
        raise VizlibValueError(f"grad_output must be one tensor per result tensor with the same shape ({want}).")
    # (autograd's own words for it name neither grad_output nor the fix: "invalid gradient at index 0";
    # a result on the meta device runs no backward, build._run_backward; a one-number seed on a
    # real device autograd moves to the result's itself, torch.tensor(1.0) for a loss on a GPU)
    for seed, out in zip(seeds, outs, strict=True):
        moved_by_autograd = seed.dim() == 0 and seed.device.type != "meta"
        if seed.device != out.device and out.device.type != "meta" and not moved_by_autograd:
            where = device_name(out.device)
            raise VizlibValueError(
                f"grad_output is on {device_name(seed.device)}, but the result it seeds is on {where}: "
                "backward needs them on the same device. Make it there, e.g. "
                f"grad_output={_ones(list(tensor_shape(out)), where)}, or move it: grad_output.to({where!r})."
            )
    return seeds
