"""Capture a graph that PyTorch's compiler stack already holds: an FX ``GraphModule`` or an
``ExportedProgram``, turned into the same GraphData as an autograd recording.

An FX graph is a list of nodes, each one of placeholder (an input), get_attr (a tensor
the module holds), call_function / call_method / call_module (an op) and output. Each
becomes one Node with the same edges (an input node -> the node that uses it), so a
learner can count in the picture what ``print(gm.graph)`` lists. Nothing runs: shapes
and dtypes come from what the tracer left in ``node.meta`` (``"val"``: a FakeTensor
from export, AOTAutograd and Dynamo's ``"example_value"``; ``"tensor_meta"``: from
``ShapeProp``). A ``symbolic_trace`` graph has neither; pass inputs
(``vz.graph(gm, x)``) and vizlib runs the graph once on them to learn the shapes and
small values, without writing into ``node.meta``.

Dimensions a compiler keeps symbolic are shown by name: the ``Dim`` name given to
``torch.export`` ("batch") when the shape environment knows it, else the symbol ("s0").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import torch
from torch import fx
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind
from torch.utils._pytree import tree_leaves

from ..data import GraphData, Node, SavedTensor, Shape, Stats, Value
from ..errors import VizlibTypeError, VizlibValueError
from ..text import dtype_name
from .guard import UserState, kept_before_written
from .summary import small_value, stats

# What an ExportedProgram's input kinds are called in the picture.
INPUT_ROLE = {
    InputKind.USER_INPUT: "input",
    InputKind.PARAMETER: "parameter",
    InputKind.BUFFER: "buffer",
    InputKind.CONSTANT_TENSOR: "constant",
    InputKind.CUSTOM_OBJ: "constant",
    InputKind.TOKEN: "token",
}


def is_compiler_graph(target: object) -> bool:
    """Whether ``vz.graph`` draws ``target`` as a compiler graph rather than recording it."""
    return isinstance(target, (fx.GraphModule, ExportedProgram))


def capture_compiler_graph(target: object, args: tuple = (), kwargs: dict | None = None) -> GraphData:
    """The graph of an FX ``GraphModule`` (with shapes from running it on ``args`` when given)
    or of an ``ExportedProgram``."""
    if isinstance(target, ExportedProgram):
        if args or kwargs:
            raise VizlibTypeError(
                "vz.graph(exported_program) takes no inputs: export already knows every shape. "
                "Pass the program alone: vz.graph(ep)."
            )
        return exported_program_data(target)
    if isinstance(target, fx.GraphModule):
        g = graph_module_data(target, runs=_run(target, args, kwargs or {}) if args or kwargs else None)
        if all(n.shape is None for n in g.nodes):
            g.notes.append("node.meta holds no shapes: pass inputs, vz.graph(gm, x), to see them")
        return g
    raise VizlibTypeError(
        f"Expected a torch.fx.GraphModule or a torch.export.ExportedProgram, got {type(target).__name__}."
    )


def exported_program_data(ep: ExportedProgram) -> GraphData:
    """``ep``'s graph, its inputs labelled from the graph signature: a parameter is drawn as
    ``fc.weight`` (parameter) rather than the placeholder ``p_fc_weight``."""
    names, roles = {}, {}
    for spec in ep.graph_signature.input_specs:
        arg_name = getattr(spec.arg, "name", None)
        if arg_name is None:  # a constant int or None argument: no placeholder node
            continue
        roles[arg_name] = INPUT_ROLE.get(spec.kind, "input")
        if spec.target is not None:
            names[arg_name] = spec.target
    return graph_module_data(ep.graph_module, names=names, roles=roles)


def graph_module_data(
    gm: fx.GraphModule,
    names: dict[str, str] | None = None,
    roles: dict[str, str] | None = None,
    runs: dict[str, Ran] | None = None,
    first_id: int = 0,
    part: str | None = None,
) -> GraphData:
    """One Node per FX node, in the graph's order, ids from ``first_id``; one edge per input
    node of each node (``node.all_input_nodes``, each input once).

    ``names`` and ``roles`` (placeholder name -> text) override how inputs are named and
    labelled; ``runs`` holds real values by node name (``_run``); ``part`` puts every node
    in one half of a joint graph.
    """
    names, roles = names or {}, roles or {}
    symbols = _symbol_names(gm)
    ids = {n: first_id + k for k, n in enumerate(gm.graph.nodes)}
    nodes: list[Node] = []
    for fx_node in gm.graph.nodes:
        node = Node(id=ids[fx_node], kind="op", name=str(fx_node.name), part=part)
        ran = runs.get(fx_node.name) if runs is not None else None
        returned = _single_result(fx_node)
        if returned is not None:  # the output node shows the one value it returns
            shown = nodes[ids[returned] - first_id]
            node.shape, node.dtype, node.value, node.value_stats = (
                shown.shape,
                shown.dtype,
                shown.value,
                shown.value_stats,
            )
        elif ran is not None:
            node.shape, node.dtype, node.value, node.value_stats = ran
        elif fx_node.op != "output":
            node.shape, node.dtype = _meta(fx_node.meta, symbols)
        node.modules = _module_paths(fx_node.meta.get("nn_module_stack"))
        _describe(node, fx_node, gm, names, roles)
        nodes.append(node)
    edges = [(ids[src], ids[n]) for n in gm.graph.nodes for src in n.all_input_nodes]
    return GraphData(nodes=nodes, edges=edges, edge_grads=[None] * len(edges))


def _single_result(fx_node: fx.Node) -> fx.Node | None:
    """The one node an output node returns (``return y`` or ``return (y,)``), else None."""
    if fx_node.op != "output" or len(fx_node.args) != 1:
        return None
    result = fx_node.args[0]
    if isinstance(result, (tuple, list)) and len(result) == 1:
        result = result[0]
    return result if isinstance(result, fx.Node) else None


def _describe(node: Node, fx_node: fx.Node, gm: fx.GraphModule, names: dict[str, str], roles: dict[str, str]) -> None:
    """Kind, name, role and target of ``node`` from what kind of FX node it is."""
    if fx_node.op == "placeholder":
        node.kind = "leaf"
        node.name = names.get(fx_node.name) or _input_name(str(fx_node.target))
        node.role = roles.get(fx_node.name) or _input_role(str(fx_node.target))
    elif fx_node.op == "get_attr":
        node.kind, node.name = "leaf", str(fx_node.target)
        node.role = _attribute_role(gm, str(fx_node.target))
    elif fx_node.op == "output":
        returned = [names.get(n.name, n.name) for n in fx_node.all_input_nodes]
        node.name, node.role, node.is_output = "output", "output", True
        node.op = "returns " + (", ".join(returned) if returned else "nothing")
    else:
        node.role = str(fx_node.op)  # call_function, call_method or call_module
        node.name, node.op = op_name(fx_node), _qualified(fx_node)
        if fx_node.op == "call_module":
            node.module_type = type(gm.get_submodule(str(fx_node.target))).__name__


def op_name(fx_node: fx.Node) -> str:
    """What a learner would call the op: ``aten.addmm`` for an ATen overload, ``relu`` for
    ``torch.relu``, ``add`` for ``operator.add``, the method name for ``x.sum()``, the
    module path (``fc1``) for a submodule call."""
    target = fx_node.target
    if fx_node.op in ("call_method", "call_module"):
        return str(target)
    if isinstance(target, torch._ops.OpOverload):
        return str(target.overloadpacket)  # "aten.addmm": the overload (.default) is noise here
    if isinstance(target, torch._ops.OpOverloadPacket):
        return str(target)
    return str(getattr(target, "__name__", target))


def _qualified(fx_node: fx.Node) -> str:
    """The full target, for the tooltip: ``aten.addmm.default``, ``torch.relu``, ``fc1``."""
    target = fx_node.target
    if fx_node.op != "call_function" or isinstance(target, str):
        return str(target)
    if isinstance(target, torch._ops.OpOverload):
        return str(target)
    module = getattr(target, "__module__", None) or ""
    module = {"_operator": "operator", "torch._C._VariableFunctions": "torch"}.get(module, module)
    return f"{module}.{getattr(target, '__name__', target)}" if module else op_name(fx_node)


# Dynamo names a graph input after where it came from: L_x_ for the argument x,
# L_self_modules_fc_parameters_weight_ for self.fc.weight.
_DYNAMO_INPUT = re.compile(r"^[LG]_(.*)_$")


def _input_name(target: str) -> str:
    """A placeholder's name as the learner wrote it: ``x``, or ``fc.weight`` for Dynamo's
    lifted ``L_self_modules_fc_parameters_weight_``."""
    m = _DYNAMO_INPUT.match(target)
    if not m:
        return target
    path = re.sub(r"_(modules|parameters|buffers)_", ".", m[1])
    head, _, rest = path.partition(".")
    return rest if rest and head in ("self", "fn", "mod", "model", "module") else path


def _input_role(target: str) -> str:
    """Dynamo passes a module's parameters and buffers as graph inputs: tell them apart by
    the name it gave them."""
    if "_parameters_" in target:
        return "parameter"
    if "_buffers_" in target:
        return "buffer"
    return "input"


def _attribute_role(gm: fx.GraphModule, target: str) -> str:
    """parameter, buffer, constant (a plain tensor attribute) or attribute (anything else)."""
    owner_path, _, attr = target.rpartition(".")
    try:
        owner = gm.get_submodule(owner_path)
    except AttributeError:
        return "attribute"
    if attr in owner._parameters:
        return "parameter"
    if attr in owner._buffers:  # symbolic_trace keeps a tensor constant as a buffer named so
        return "constant" if attr.startswith("_tensor_constant") else "buffer"
    return "constant" if isinstance(getattr(owner, attr, None), torch.Tensor) else "attribute"


def _module_paths(stack: object) -> tuple[str, ...]:
    """``nn_module_stack`` (export, Dynamo) as Node.modules: module paths, outermost first,
    the model itself named by its class (as autograd recordings name it)."""
    if not isinstance(stack, dict):
        return ()
    paths = []
    for path, cls in stack.values():
        path = re.sub(r"^L\['[^']*'\]\.?", "", str(path))  # Dynamo's L['self'].fc -> fc
        paths.append(path or getattr(cls, "__name__", str(cls).rsplit(".", 1)[-1]))
    return tuple(paths)


# ---------------------------------------------------------------- shapes


def _meta(source: dict, symbols: dict[str, str]) -> tuple[Shape | None, str | None]:
    """Shape and dtype from a node's meta (val, example_value, tensor_meta)."""
    for key in ("val", "example_value"):
        val = source.get(key)
        if isinstance(val, torch.Tensor):
            return shape_of(val.shape, symbols), dtype_name(val.dtype)
    tm = source.get("tensor_meta")
    if tm is not None and hasattr(tm, "shape") and hasattr(tm, "dtype"):
        return shape_of(tm.shape, symbols), dtype_name(tm.dtype)
    return None, None


def shape_of(shape: Iterable[Any], symbols: dict[str, str] | None = None) -> Shape:
    """A shape as ints, a symbolic dimension as its name (``batch``) or expression (``2*s0``)."""
    out: list[int | str] = []
    for d in shape:
        if isinstance(d, int):
            out.append(d)
            continue
        expr = d.node.expr if isinstance(d, torch.SymInt) else d
        if getattr(expr, "is_number", False):
            out.append(int(expr))
            continue
        text = str(expr)
        for sym, name in (symbols or {}).items():
            text = re.sub(rf"\b{re.escape(sym)}\b", name, text)
        out.append(text)
    return tuple(out)


def _symbol_names(gm: fx.GraphModule) -> dict[str, str]:
    """Symbol -> the Dim name the learner gave export (s77 -> batch), where the graph's
    shape environment remembers it."""
    env = None
    for n in gm.graph.nodes:
        val = n.meta.get("val", n.meta.get("example_value"))
        mode = getattr(val, "fake_mode", None)  # a FakeTensor's
        if mode is not None:
            env = mode.shape_env
            break
    if env is None:
        return {}
    debug = getattr(env, "source_name_to_debug_name", {})
    names = {}
    for sym, sources in getattr(env, "var_to_sources", {}).items():
        for src in sources:
            name = debug.get(src.name)
            if name:
                names[str(sym)] = name
                break
    return names


def tensor_bytes(shape: Shape | None, dtype: str | None) -> int:
    """Bytes of a dense tensor of this shape and dtype (0 when a dimension is symbolic)."""
    if shape is None or dtype is None or not all(isinstance(d, int) for d in shape):
        return 0
    numel = 1
    for d in shape:
        numel *= int(d)
    return numel * getattr(torch, dtype).itemsize


def saved_tensor(node: Node) -> SavedTensor:
    """What a joint graph's forward saved in ``node``, with its bytes."""
    return SavedTensor(node.name, node.shape or (), node.dtype or "?", tensor_bytes(node.shape, node.dtype))


# ---------------------------------------------------------------- running a symbolic trace

# What running a graph showed of one node's result: its shape, dtype, small value and statistics.
Ran = tuple[Shape, str, Value, Stats | None]


def _run(gm: fx.GraphModule, args: tuple, kwargs: dict) -> dict[str, Ran]:
    """What each node's result was (``Ran``) when running ``gm`` once on ``args`` (no grad,
    RNG and buffers restored), for graphs whose meta has no shapes.

    Each result is read as its node runs: a later node may change it in place (an
    ``nn.ReLU(inplace=True)``, ``x.div_(255)``), and a tensor of the caller's that the run
    changed is put back before the picture is made. The caller's inputs and the graph's
    parameters are copied only where an op is about to write into them
    (``guard.kept_before_written``): not the whole input batch on every drawing."""
    if kwargs:
        raise VizlibTypeError("A GraphModule takes its inputs by position: vz.graph(gm, x, y), not by keyword.")
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    required = [n for n in placeholders if not n.args]  # a placeholder's args hold its default
    if not len(required) <= len(args) <= len(placeholders):
        raise VizlibValueError(
            f"The graph module takes {len(placeholders)} inputs ({', '.join(n.name for n in placeholders)}), "
            f"not {len(args)}. Pass one value per input, vz.graph(gm, x), or none: vz.graph(gm)."
        )
    results: dict[str, Ran] = {}

    class Recorder(fx.Interpreter):
        def run_node(self, n: fx.Node) -> Any:
            out = super().run_node(n)
            if isinstance(out, torch.Tensor):
                results[n.name] = (shape_of(out.shape), dtype_name(out.dtype), small_value(out), stats(out))
            return out

    # A BatchNorm in training mode would update its statistics, a graph may change an input
    # or a parameter in place (x.div_(255)): UserState puts them back.
    theirs = [t for t in tree_leaves(args) if isinstance(t, torch.Tensor)] + list(gm.parameters())
    with UserState(gm, args) as state, torch.no_grad(), kept_before_written(state, theirs):
        Recorder(gm).run(*args)
    return results
