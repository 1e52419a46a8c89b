"""``vz.graph`` and the ``vz.Graph`` it returns: the stages put together for a learner.

Capture (torch -> GraphData) and transform (GraphData -> GraphData) know nothing of each
other or of pictures; this module runs them in order and hands back a ``Graph``, which is
the plain data plus the ways to look at it (DOT, SVG, files, Jupyter's display). Keeping
that façade here is what lets the data be the lowest stage: render imports the data,
never the other way round.

A learner's function may name its parameters anything, ``depth`` and ``params``
included. vz.graph's own options are keyword-only; a keyword that is both one of them
and a parameter of the function is refused with a message saying how to pass the
function's argument instead, never silently taken for the option.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Any

from torch import nn

from .capture import capture, capture_compiler_graph, collector_paused, is_compiler_graph
from .capture import compiled_graphs as capture_compiled
from .capture import joint_graph as capture_joint
from .data import GraphData
from .errors import VizlibError, VizlibTypeError, VizlibValueError
from .plots import steps_undone
from .render import save, to_dot, to_html, to_svg
from .transform import DrawnNumbers, simplify

# vz.graph's options and their defaults (the signature of ``graph`` below says the same;
# a test holds the two together).
OPTIONS: dict[str, Any] = {
    "params": None,
    "grad_output": None,
    "show_saved": False,
    "depth": None,
    "max_nodes": 150,
}


class Graph(GraphData):
    """What ``vz.graph`` returns: the graph's plain data (see ``vizlib.data.GraphData``)
    and its pictures. In Jupyter it displays itself; ``repr`` is a short text summary."""

    def to_dot(self) -> str:
        """Graphviz DOT source; the same Graph always gives the same text."""
        return to_dot(self)

    def to_svg(self) -> str:
        """The picture as SVG text (needs Graphviz: ``dot``, graphviz-pure or pygraphviz; see ``vz.renderer()``)."""
        return to_svg(self)

    def save(self, path: str | os.PathLike) -> Path:
        """Write the picture to ``path`` (``~`` is the home folder); the suffix picks the
        format (.svg .png .pdf .dot). Returns the path written."""
        if not isinstance(path, (str, os.PathLike)):
            raise VizlibTypeError(
                f"g.save needs a file name, e.g. g.save('graph.svg'); got {type(path).__name__} {path!r:.40}."
            )
        return save(self, Path(path).expanduser())

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, str]:
        # HTML, not image/svg+xml: JupyterLab shows an SVG image as an <img>, which has no
        # tooltips; inline SVG has them (vizlib.render.inline). text/plain is what nbval compares.
        text = repr(self)
        try:
            return {"text/html": to_html(self), "text/plain": text}
        except VizlibError as err:  # e.g. Graphviz failed: still show the summary, and why no picture
            return {"text/plain": f"{text}\n(no picture: {err})"}

    @classmethod
    def of(cls, data: GraphData) -> Graph:
        """The same graph, as a ``Graph`` that can draw itself."""
        return cls(**{f.name: getattr(data, f.name) for f in fields(data)})


def graph(
    target: object,
    /,
    *args: Any,
    params: dict | nn.Module | None = None,
    grad_output: object = None,
    show_saved: bool = False,
    depth: int | None = None,
    max_nodes: int | None = 150,
    **kwargs: Any,
) -> Graph:
    """Capture the autograd graph of ``target`` with its values and gradients.

    ``target`` is a tensor (or a list of tensors) to walk post-hoc, or a function or
    ``nn.Module`` to run on ``args``/``kwargs`` while recording. ``params`` names leaves
    (a dict name -> tensor, or a module). ``grad_output`` seeds backward for a
    non-scalar result. ``show_saved`` draws the tensors saved for backward. ``depth``
    draws each module nested that many levels deep as one box (0: the outermost module);
    ``None`` keeps every op unless the graph has more than ``max_nodes`` nodes, in which
    case modules are collapsed automatically and a note says so.

    A parameter of ``target`` named like one of these options is passed by position
    (``vz.graph(f, x, 3.0)`` for ``def f(x, depth)``); passing it by keyword is refused.
    For a function that takes ``**kwargs``, such a keyword is vz.graph's option.

    ``target`` may also be a graph PyTorch's compiler stack holds, drawn as it is (nothing
    runs backward): a ``torch.fx.GraphModule`` (from ``torch.fx.symbolic_trace``, or what
    ``torch.compile`` hands a backend), one node per FX node, shapes and dtypes from
    ``node.meta`` or, given inputs (``vz.graph(gm, x)``), from running it once on them;
    or a ``torch.export.ExportedProgram``, its inputs labelled user input, parameter,
    buffer or constant, dynamic dimensions by their ``Dim`` name. ``depth``/``max_nodes``
    apply; ``params``, ``grad_output`` and ``show_saved`` (autograd's) do not.
    """
    options = {
        "params": params,
        "grad_output": grad_output,
        "show_saved": show_saved,
        "depth": depth,
        "max_nodes": max_nodes,
    }
    if is_compiler_graph(target):
        check_options(options)
        _refuse_autograd_options(target, options)
        data = capture_compiler_graph(target, args, kwargs)
        return Graph.of(simplify(data, depth, max_nodes))
    if callable(target):
        refuse_module_without_forward(target, "vz.graph", "x")
        _refuse_clashes(target, args, options)
    elif grad_output is not None:
        raise VizlibValueError(
            "grad_output= seeds the backward vz.graph runs when it records a call; a tensor's graph drawn after "
            "the fact runs none, so it would be ignored. Leave it out, or record the call that makes the tensor: "
            "vz.graph(f, x, grad_output=torch.ones(...))."
        )
    return graph_of_call(target, args, kwargs, options)


def graph_of_call(target: object, args: tuple = (), kwargs: dict | None = None, options: dict | None = None) -> Graph:
    """``vz.graph`` with the call's arguments already apart from its ``options`` (a dict of
    OPTIONS' names; the defaults where absent): what ``vz.explore`` uses, so that a slider
    named ``depth`` is the function's ``depth``."""
    o = OPTIONS | (options or {})
    check_options(o)
    with collector_paused():  # folding a big graph makes many objects too (see collector_paused)
        # Only the numbers the folded picture draws are read (transform.DrawnNumbers).
        numbers = DrawnNumbers(o["depth"], o["max_nodes"])
        with steps_undone():
            data = capture(target, args, kwargs or {}, o["params"], o["grad_output"], o["show_saved"], numbers)
        drawn = Graph.of(numbers.picture(data))
        # Let go of the unfolded graph while the collector is off: once on, its first
        # collection would walk every one of its objects (seconds for 50,000 nodes).
        del data
    return drawn


def check_options(options: dict[str, Any]) -> None:
    """Refuse an option of the wrong type or value before anything runs: a capture can take
    seconds, and its result would be thrown away by the error."""
    depth, max_nodes, show_saved = options["depth"], options["max_nodes"], options["show_saved"]
    for name, value, least, example, meaning in (
        ("depth", depth, 0, 1, "the module nesting level drawn as boxes; 0 draws the outermost module as one box"),
        ("max_nodes", max_nodes, 1, 150, "the most nodes drawn before vizlib collapses the graph"),
    ):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise VizlibTypeError(
                f"{name}= must be a whole number or None ({meaning}); got {type(value).__name__} {value!r}. "
                f"Pass e.g. {name}={example}."
            )
        if value < least:
            raise VizlibValueError(
                f"{name}= must be at least {least}, or None ({meaning}); got {value}. Pass e.g. {name}={example}."
            )
    if not isinstance(show_saved, bool):
        raise VizlibTypeError(f"show_saved= must be True or False; got {type(show_saved).__name__} {show_saved!r}.")


def refuse_module_without_forward(target: object, entry: str, inputs: str) -> None:
    """Refuse a module that has no forward (a ``ModuleList``, a ``ModuleDict``): calling it raises
    torch's NotImplementedError, which does not say what to draw instead. ``entry`` is the
    vizlib call refusing it, ``inputs`` how its example passes an input ("x" or "x=1.0")."""
    if not isinstance(target, nn.Module):
        return
    module = type(target)
    # Read without running descriptors: a ScriptModule's class-level forward raises when read
    # from the class, and a forward set on the module itself (m.forward = fn) is its forward.
    forward = inspect.getattr_static(target, "forward", None)
    if forward is not nn.Module.forward or inspect.getattr_static(module, "__call__", None) is not nn.Module.__call__:
        return
    raise VizlibTypeError(
        f"{entry} cannot run a {module.__name__}: it holds modules but has no forward of its own, so calling "
        f"it is not defined. Draw a function that runs its modules instead, e.g. {entry}(lambda x: "
        f"run(layers, x), {inputs}), run being your code that calls each of them in turn."
    )


def _refuse_clashes(fn: Any, args: tuple, options: dict[str, object]) -> None:
    """Refuse an option that names a parameter of ``fn`` which the positional arguments
    leave open, when the option was given (it differs from its default) or ``fn`` needs
    that parameter (it has no default, so the learner meant to pass it)."""
    try:
        sig = inspect.signature(fn.forward if isinstance(fn, nn.Module) else fn)
    except (TypeError, ValueError):  # builtins without a signature: nothing to clash with
        return
    positional = [p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    open_by_name = {
        p.name: p
        for p in sig.parameters.values()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p not in positional[: len(args)]
    }
    for name, value in options.items():
        param = open_by_name.get(name)
        if param is None or (_is_default(value, OPTIONS[name]) and param.default is not param.empty):
            continue
        fn_name = getattr(fn, "__name__", type(fn).__name__)
        if param in positional:
            upto = ", ".join(p.name for p in positional[: positional.index(param) + 1])
            how = f"pass it by position: vz.graph({fn_name}, {upto})"
        else:
            how = f"rename {fn_name}'s keyword-only argument {name}"
        if _is_default(value, OPTIONS[name]):  # not given, but fn cannot run without it
            problem = f"{fn_name}() needs its argument {name!r}, but {name}= is vz.graph's own option."
        else:
            problem = (
                f"{fn_name}() has an argument named {name!r}, which is also vz.graph's option {name}=, "
                f"so vz.graph cannot tell which one {name}= is for."
            )
        raise VizlibValueError(f"{problem} To give {fn_name} its {name}, {how}.")


def compiled_graphs(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> list[Graph]:
    """The graphs ``torch.compile`` captures from ``fn(*args, **kwargs)``: one per piece
    between graph breaks, in the order Dynamo compiled them.

    Each is drawn like ``vz.graph(gm)`` draws an FX graph, and says why its piece ended:
    ``g.break_reason`` (Dynamo's reason, e.g. "Unsupported Tensor.item() call ...";
    None for the piece that ran to the return), a title such as "graph 1 of 3 — ended by:
    ...", and notes with Dynamo's explanation and the line of ``fn`` that broke the graph.
    A graph break costs a return to Python and a new graph: this shows where they are.

    ``fn`` runs once, compiled with a backend that keeps the graphs and runs them
    uncompiled (fast, no C++ compiler needed), on copies of the tensor arguments. Dynamo
    is reset before and after, so caches left by earlier ``torch.compile`` calls are
    dropped (a later compiled call compiles again). A function handed in already wrapped
    by ``torch.compile`` is unwrapped. Errors of the compiler become a VizlibValueError
    saying what to check; an exception ``fn`` raises itself propagates unchanged.
    """
    refuse_module_without_forward(fn, "vz.compiled_graphs", "x")
    with steps_undone():
        return [Graph.of(g) for g in capture_compiled(fn, args, kwargs)]


def joint_graph(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Graph:
    """AOTAutograd's view of ``fn(*args, **kwargs)``: the forward and backward graphs
    (ATen ops) that ``torch.compile`` partitions a training step into, drawn as one
    picture with a "forward" and a "backward" cluster.

    The values the forward saves for the backward are backward leaves marked "saved"
    (dashed orange edges cross from where the forward made them); ``g.saved`` lists them
    as ``SavedTensor(name, shape, dtype, bytes)`` and ``g.saved_bytes`` sums them, to set
    beside eager autograd's ``vz.graph(fn, x, show_saved=True).saved_bytes``: the
    min-cut partition ``torch.compile`` uses recomputes cheap ops in the backward rather
    than saving their results. The backward's other inputs are the gradients of the
    results ("tangent"). Nodes carry ``part`` ("forward"/"backward").

    Inputs are treated as ``vz.graph`` treats them (float tensors are copied and the copy
    requires grad, Python floats become tensors); an ``nn.Module``'s parameters and
    buffers are inputs named as in ``named_parameters()``. Nobody's ``.grad``, tensors
    or buffers change. A function AOTAutograd cannot trace (e.g. ``.item()`` deciding an
    ``if``) gets a VizlibValueError; an exception ``fn`` raises itself propagates.
    """
    refuse_module_without_forward(fn, "vz.joint_graph", "x")
    with steps_undone():
        return Graph.of(capture_joint(fn, args, kwargs))


def _refuse_autograd_options(target: object, options: dict[str, object]) -> None:
    """A compiler graph is drawn, not run backward: options about autograd's run are refused
    rather than ignored, with the way to get autograd's picture instead."""
    given = [k for k in ("params", "grad_output", "show_saved") if not _is_default(options[k], OPTIONS[k])]
    if given:
        raise VizlibValueError(
            f"vz.graph({type(target).__name__}) draws the graph the compiler holds and runs no backward, "
            f"so {', '.join(k + '=' for k in given)} does not apply. Leave it out; to see autograd's graph of "
            "running the module, record a call: vz.graph(lambda x: module(x), x)."
        )


def _is_default(value: object, default: object) -> bool:
    """``value`` is the option's default (a tensor never is: it is compared by type first)."""
    return value is default or (type(value) is type(default) and value == default)
