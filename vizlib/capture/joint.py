"""AOTAutograd's view of a call: the forward and backward graphs it splits a computation into.

``torch.compile`` does not run autograd op by op: AOTAutograd traces the forward and the
backward together into one joint graph of ATen ops, then a partitioner cuts it in two.
The forward returns the results plus the values the backward needs (what it *saves*);
the backward takes those and the gradients of the results (``tangents_1``, ...). Which
values are saved is the partitioner's choice: ``min_cut_rematerialization_partition``,
the one ``torch.compile`` uses, saves few and recomputes cheap ops (``sin``, ``cos``) in
the backward instead, so a compiled step often keeps less memory than eager autograd.

vizlib runs ``functorch.compile.aot_function`` with that partitioner and two compilers of
its own that keep the graphs and run them as they are, then asks for gradients once with
``torch.autograd.grad`` (so nobody's ``.grad`` changes), because AOTAutograd compiles
the backward only when it first runs. Inputs are treated as ``vz.graph`` treats them:
float tensors that do not require grad are copied and the copy requires it, Python
floats become 0-d tensors, so the two pictures of one function can be compared. An
``nn.Module`` runs through ``torch.func.functional_call``, so its parameters and buffers
are graph inputs named as in ``named_parameters()``.

A saved value's bytes are its elements times their size, as the forward's metadata gives
them; a saved view of a parameter (``t_3``, a transposed weight) counts in full, as eager
autograd counts the parameter's storage it keeps.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import fx, nn
from torch.utils._pytree import keystr, tree_flatten_with_path, tree_leaves, tree_map

from ..data import GraphData
from ..errors import VizlibTypeError, VizlibValueError
from .autocast import autocast_state, put_back_autocast
from .compiled import quiet_compiler, raise_clearly, uncompiled
from .fx import graph_module_data, saved_tensor
from .guard import UserState, outside_state
from .inputs import prepare_inputs, result_tensors, widened_numbers


def joint_graph(fn: Callable, args: tuple, kwargs: dict) -> GraphData:
    """The forward and backward graphs of ``fn(*args, **kwargs)`` as AOTAutograd partitions
    them, in one GraphData: forward nodes with ``part="forward"``, backward nodes with
    ``part="backward"``, each saved value a backward leaf with role "saved" joined by an
    edge to the forward node that made it, and ``saved``/``saved_bytes`` filled in."""
    if not callable(fn):
        raise VizlibTypeError(
            f"Expected a function or an nn.Module, got {type(fn).__name__}. "
            "Pass the function and its inputs: vz.joint_graph(fn, x, w)."
        )
    fn = uncompiled(fn)
    given = tree_map(_off_the_callers_graph, (args, kwargs))
    args, kwargs, arg_names, bound = prepare_inputs(fn, *given)
    widened = widened_numbers(given, (args, kwargs), arg_names)  # (before the trace, which may set the default dtype)
    _refuse_module_arguments(fn, bound)
    names: dict[int, tuple[str, str]] = {id(t): (n, "input") for n, t in _named(arg_names, args, kwargs)}
    call, call_args = fn, args
    holder = fn if isinstance(fn, nn.Module) else _closure_modules(fn)
    if holder is not None:
        params, buffers = dict(holder.named_parameters()), dict(holder.named_buffers())
        names |= {id(t): (n, "parameter") for n, t in params.items()}
        names |= {id(t): (n, "buffer") for n, t in buffers.items()}
        call, call_args = _functional(holder), (params, buffers, *args)
    placeholder_names, placeholder_roles, constants = _inputs_named(tree_leaves((call_args, kwargs)), names, bound)
    forward, backward, notes = _partition(fn, call, call_args, kwargs)
    fw = graph_module_data(forward, names=placeholder_names, roles=placeholder_roles, part="forward")
    for fx_node, node in zip(forward.graph.nodes, fw.nodes, strict=True):
        if fx_node.name in constants:
            node.value = constants[fx_node.name]  # (an int or a bool: its value is the input)
    saved_names = {p: placeholder_names.get(p, p) for p in _saved(backward)}
    bw_roles = {p: "saved" for p in saved_names} | {
        p: "tangent" for p in _placeholders(backward) if p not in saved_names
    }
    bw = graph_module_data(backward, names=saved_names, roles=bw_roles, first_id=len(fw.nodes), part="backward")
    g = GraphData(nodes=fw.nodes + bw.nodes, edges=fw.edges + bw.edges, edge_grads=fw.edge_grads + bw.edge_grads)

    fw_id = {n.name: fw.nodes[k].id for k, n in enumerate(forward.graph.nodes)}
    for k, n in enumerate(backward.graph.nodes):
        node = bw.nodes[k]
        if node.role == "saved":
            node.saved = [saved_tensor(node)]
            node.saved_bytes = node.saved[0].bytes
            g.saved.append(node.saved[0])
            if n.name in fw_id:  # forward -> backward: what crosses is what is saved
                g.edges.append((fw_id[n.name], node.id))
                g.edge_grads.append(None)
    g.saved_bytes = sum(s.bytes for s in g.saved)
    bw.nodes[-1].op = _gradients(forward, backward, placeholder_names)
    g.title = "AOTAutograd's forward and backward graphs (min-cut partition, as torch.compile uses)"
    g.notes += notes + widened
    return g


def _off_the_callers_graph(v: object) -> object:
    """An input made by the caller's own graph (``h = x * 3``) as a tensor of its own: the
    joint graph starts at the inputs, and AOTAutograd, faking a non-leaf, reads its ``.grad``,
    which makes torch warn."""
    if isinstance(v, torch.Tensor) and v.grad_fn is not None:
        return v.detach()
    return v


def _refuse_module_arguments(fn: Callable, bound: dict[str, object]) -> None:
    """Refuse a module among the call's arguments: AOTAutograd's inputs are tensors and
    numbers, and a module fails deep in its tracer (an AssertionError). A module the
    function reaches from outside (``_closure_modules``) is traced, its tensors inputs."""
    for name, value in bound.items():
        if any(isinstance(v, nn.Module) for v in tree_leaves(value)):
            raise VizlibTypeError(
                f"{_name(fn)} takes the module {name!r} as an argument, but AOTAutograd's inputs are tensors and "
                f"numbers. Reach the module from outside the function instead, and its parameters and buffers "
                f"become inputs: vz.joint_graph(lambda x: f({name}, x), x) for a function f({name}, x)."
            )


def _partition(
    fn: object, call: Callable, call_args: tuple, kwargs: dict
) -> tuple[fx.GraphModule, fx.GraphModule, list[str]]:
    """Run the call through aot_function; the forward and backward graphs it compiled, and a
    note if the call left autocast on (put back as it was, as vz.graph puts it back)."""
    # Imported here: AOTAutograd brings Dynamo with it, seconds that `import vizlib` need not pay.
    from torch._functorch.aot_autograd import aot_function, make_boxed_func
    from torch._functorch.partitioners import min_cut_rematerialization_partition

    graphs: dict[str, fx.GraphModule] = {}

    def keep(which: str) -> Callable:
        def compiler(gm: fx.GraphModule, example_inputs: list) -> Callable:
            graphs[which] = gm
            return make_boxed_func(gm.forward)

        return compiler

    compiled = aot_function(call, keep("forward"), keep("backward"), partition_fn=min_cut_rematerialization_partition)
    notes: list[str] = []
    try:
        with UserState(fn, call_args, kwargs), quiet_compiler(), torch.enable_grad():
            before = autocast_state()
            try:
                result = compiled(*call_args, **kwargs)
            finally:
                notes = put_back_autocast(before)
            outs = [t for t in result_tensors(result) if t.requires_grad]
            if not outs or "forward" not in graphs:
                raise VizlibValueError(
                    f"{_name(fn)} returned no tensor that depends on its inputs, so AOTAutograd made no "
                    "backward graph. Return a tensor computed from the inputs (or the module's parameters)."
                )
            wrt = [t for t in tree_leaves((call_args, kwargs)) if isinstance(t, torch.Tensor) and t.requires_grad]
            torch.autograd.grad(outs, wrt, [torch.ones_like(t) for t in outs], allow_unused=True)
    except VizlibValueError:
        raise
    except Exception as err:
        if notes:  # (PyTorch 2.11's AOTAutograd refuses a call that leaves autocast changed)
            raise VizlibValueError(
                f"AOTAutograd cannot trace {_name(fn)} on this PyTorch: it entered torch.autocast and did not "
                "leave it. Enter autocast with a `with torch.autocast(...):` block, inside the function or "
                "around the vz.joint_graph call (autocast was put back as it was)."
            ) from err
        hint = (
            f" AOTAutograd traces it as one graph; vz.compiled_graphs({_name(fn)}, ...) shows where "
            "torch.compile splits it."
        )
        raise_clearly(err, fn, "AOTAutograd", hint)
        raise
    if "backward" not in graphs:
        raise VizlibValueError(
            f"AOTAutograd made no backward graph for {_name(fn)}: no input requires grad. "
            "Pass float tensor inputs (vizlib makes copies of them require grad) or a module with parameters."
        )
    return graphs["forward"], graphs["backward"], notes


class _Closure(nn.Module):
    """A function and the modules it takes from outside its arguments, as one module, so
    that ``functional_call`` swaps their parameters and buffers for graph inputs: the
    closure reaches the very same module objects, whose tensors it swaps in place."""

    def __init__(self, fn: Callable, modules: dict[str, nn.Module]):
        super().__init__()
        self.fn = fn
        for name, module in modules.items():
            self.add_module(name, module)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)


def _closure_modules(fn: Callable) -> _Closure | None:
    """``fn`` with the modules it uses from a closure or a global, or None when it uses none.

    AOTAutograd traces with fake tensors made from the call's inputs; a tensor that is
    neither an input nor a module's (a closure's constant) would fail deep in the tracer,
    so it is refused before the call, with the way to pass it in instead."""
    outside = outside_state(fn)
    tensors = [name for name, value in outside if isinstance(value, torch.Tensor)]
    if tensors:
        name = tensors[0]
        raise VizlibValueError(
            f"{_name(fn)} uses the tensor {name!r} from outside its arguments, but AOTAutograd traces only "
            f"the call's inputs and the parameters and buffers of its modules. To draw it, pass it as an "
            f"argument: vz.joint_graph(lambda x, {name}: ..., x, {name})."
        )
    # (the rest outside_state finds: a module, a list, tuple or dict, or a plain object that
    # holds tensors, as a micrograd-style model holds its weights)
    held = [name for name, value in outside if not isinstance(value, (nn.Module, list, tuple, dict))]
    if held:
        name = held[0]
        raise VizlibValueError(
            f"{_name(fn)} uses the tensors {name!r} holds, from outside its arguments, but AOTAutograd traces "
            "only the call's inputs and the parameters and buffers of its modules. To draw it, pass them as "
            f"arguments (vz.joint_graph(lambda x, w: ..., x, {name}.w)), or hold them in an nn.Module as "
            "nn.Parameters."
        )
    modules = {name: value for name, value in outside if isinstance(value, nn.Module)}
    return _Closure(fn, modules) if modules else None


def _gradients(forward: fx.GraphModule, backward: fx.GraphModule, names: dict[str, str]) -> str:
    """What the backward returns, said as gradients: one per forward input, in order
    ("grad of x: mul_5, grad of w: mul_3"), none for an input that needs none."""
    inputs = _placeholders(forward)
    output = next(n for n in backward.graph.nodes if n.op == "output")
    results = output.args[0] if isinstance(output.args[0], (tuple, list)) else output.args
    said = [
        f"grad of {names.get(p, p)}: {r.name}" for p, r in zip(inputs, results, strict=False) if isinstance(r, fx.Node)
    ]
    return "returns " + ", ".join(said)


def _placeholders(gm: fx.GraphModule) -> list[str]:
    return [n.name for n in gm.graph.nodes if n.op == "placeholder"]


def _saved(backward: fx.GraphModule) -> list[str]:
    """The backward's inputs that the forward saved: all but the gradients of the results
    (``tangents_*``), each named like the forward node that made it."""
    return [p for p in _placeholders(backward) if not p.startswith("tangents_")]


def _named(arg_names: dict[int, str], args: tuple, kwargs: dict) -> list[tuple[str, torch.Tensor]]:
    """(name, tensor) for the call's tensor arguments, by the names ``_prepare_inputs`` gave them."""
    return [
        (arg_names[id(t)], t) for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor) and id(t) in arg_names
    ]


def _inputs_named(
    leaves: list, names: dict[int, tuple[str, str]], bound: dict[str, object]
) -> tuple[dict[str, str], dict[str, str], dict[str, int | float]]:
    """The name and role of each of AOTAutograd's inputs (``primals_k``, one per leaf of the
    call's arguments), and the value of each that is a Python number (an int, a bool)."""
    named, roles, constants = {}, {}, {}
    others = _other_arguments(bound)
    for k, leaf in enumerate(leaves):
        placeholder = f"primals_{k + 1}"
        if id(leaf) in names:
            named[placeholder], roles[placeholder] = names[id(leaf)]
        elif not isinstance(leaf, torch.Tensor) and (name := _take(others, leaf)):
            named[placeholder], roles[placeholder] = name, "input"
            if isinstance(leaf, (int, float)):
                constants[placeholder] = leaf
    return named, roles, constants


def _other_arguments(bound: dict[str, object]) -> list[tuple[str, object]]:
    """(name, value) of each argument that is no tensor (an int, a bool: AOTAutograd makes it
    an input too), named as Python reaches it (``n``, ``sizes[1]``), in the call's order."""
    return [
        (name + keystr(path), value)
        for name, arg in bound.items()
        for path, value in tree_flatten_with_path(arg)[0]
        if not isinstance(value, torch.Tensor)
    ]


def _take(others: list[tuple[str, object]], leaf: object) -> str | None:
    """The name of the first argument in ``others`` that is ``leaf`` (taken out of the list:
    two arguments equal to 3 are one object, each is named once, in order)."""
    for k, (name, value) in enumerate(others):
        if value is leaf:
            del others[k]
            return name
    return None


def _functional(module: nn.Module) -> Callable:
    """``module`` as a function of its parameters and buffers, so they become graph inputs."""

    def call(params: dict, buffers: dict, *args: Any, **kwargs: Any) -> Any:
        return torch.func.functional_call(module, (params, buffers), args, kwargs)

    return call


def _name(fn: object) -> str:
    return getattr(fn, "__name__", None) or type(fn).__name__
