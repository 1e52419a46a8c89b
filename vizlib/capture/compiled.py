"""What ``torch.compile`` captured from one call: one FX graph per piece between graph breaks.

Dynamo reads a function's bytecode and hands each stretch it could trace to a backend as
an FX ``GraphModule``; where it cannot go on (a ``print``, a ``.item()`` that decides an
``if``), the graph ends, that instruction runs in plain Python, and a new graph starts
after it. vizlib compiles the call with a backend of its own that keeps each graph and
the record Dynamo gives it of why it ended (``gm.compile_subgraph_reason``: the same
record ``torch._dynamo.explain`` reports), and runs the graph as it is.

Dynamo caches compiled code on the function's code object, so an earlier
``torch.compile`` of the same function would hand back its cached graphs and none would
reach this backend: Dynamo is reset before (and after, so that none of vizlib's graphs
stay cached). The call runs on copies of the tensor arguments, and whatever else of the
user's it may change is put back (``guard.UserState``); Dynamo's own log of each break is held back while it
runs, since the Graphs say the same.

A recording of a compiled function (build.py) draws what it computes, eagerly: ``uncompiled``
finds the function inside ``torch.compile``'s wrapper, and ``run_eager`` keeps Dynamo off
while the recording runs.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import re
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from copy import copy as copy_of
from typing import Any

import torch
from torch import fx, nn
from torch.utils._pytree import tree_leaves, tree_map

from ..data import GraphData
from ..errors import VizlibTypeError, VizlibValueError
from .fx import graph_module_data
from .guard import UserState
from .left_behind import LeftBehind, watch


def compiled_graphs(fn: Callable, args: tuple, kwargs: dict) -> list[GraphData]:
    """One GraphData per graph Dynamo captured from ``fn(*args, **kwargs)``, in order, each
    with its title ("graph 1 of 3 — ended by: ..."), ``break_reason`` and, as notes,
    Dynamo's explanation and where in the learner's code the break was."""
    dynamic = _dynamic_asked(fn)
    fn = uncompiled(fn)
    captured: list[tuple[fx.GraphModule, Any]] = []
    left: LeftBehind | None = None

    def keep(gm: fx.GraphModule, example_inputs: list) -> Callable:
        captured.append((gm, getattr(gm, "compile_subgraph_reason", None)))
        return _run_telling(gm, left) if left is not None else gm.forward

    state = UserState(fn, args, kwargs)
    args, kwargs = tree_map(copy_tensor, (args, kwargs))
    made = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
    torch._dynamo.reset()
    notes: list[str] = []
    try:
        # What the call frees of the caller's memory, and an autocast it leaves on, put back as
        # vz.graph puts them back (left_behind.py), before UserState puts back the rest.
        with state, quiet_compiler(), watch(state.noted_since, made) as left:
            try:
                torch.compile(fn, backend=keep, dynamic=dynamic)(*args, **kwargs)
            finally:
                notes = left.call_returned()
    except Exception as err:
        raise_clearly(err, fn, "torch.compile")
        raise
    finally:
        torch._dynamo.reset()
    if not captured:
        raise VizlibValueError(
            f"torch.compile captured no graph from {_name(fn)}: it ran no tensor operation Dynamo "
            "could put in a graph. Pass a function that computes with tensors, and its tensor inputs."
        )
    positional = _positional_names(fn)
    graphs = [_piece(gm, reason, k + 1, len(captured), positional) for k, (gm, reason) in enumerate(captured)]
    for g in graphs:  # (of the call, which each graph is a piece of)
        g.notes += notes
    return graphs


def _run_telling(gm: fx.GraphModule, left: LeftBehind) -> Callable:
    """``gm.forward``; for a graph that frees memory itself, an interpreter of it that tells
    ``left`` first: Dynamo traces ``untyped_storage().resize_`` into the graph as
    ``inductor.resize_storage_bytes_``, which never calls the ``UntypedStorage.resize_`` that
    ``left_behind`` watches."""
    packet = getattr(torch.ops.inductor, "resize_storage_bytes_", None)
    resizes = () if packet is None else (packet, packet.default)
    if not any(n.target in resizes for n in gm.graph.nodes):
        return gm.forward

    class Telling(fx.Interpreter):
        def call_function(self, target: Any, args: tuple, kwargs: dict) -> Any:
            if target in resizes:
                storage, size = args[0].untyped_storage(), args[1]
                if size < (before := storage.nbytes()):
                    left.shrinking(storage, before)
            return super().call_function(target, args, kwargs)

    return lambda *inputs: Telling(gm).run(*inputs)


def _piece(gm: fx.GraphModule, reason: Any, number: int, count: int, positional: list[str]) -> GraphData:
    names = {}
    for n in gm.graph.nodes:  # a module's inputs reach Dynamo as __call__(*args): L_args_0_
        m = re.fullmatch(r"L_args_(\d+)_", str(n.target)) if n.op == "placeholder" else None
        if m and int(m[1]) < len(positional):
            names[n.name] = positional[int(m[1])]
    g = graph_module_data(gm, names=names)
    if reason is not None and reason.graph_break:
        text = str(reason.reason).strip()
        g.break_reason = text.splitlines()[0].strip()
        if explanation := _explanation(text):
            g.notes.append(explanation)
        if reason.user_stack:
            frame = reason.user_stack[-1]  # the learner's line (no file path: it is the machine's)
            g.notes.append(f"the break is at line {frame.lineno} of {frame.name}: {(frame.line or '').strip()}")
        g.title = f"graph {number} of {count} — ended by: {g.break_reason}"
    else:
        g.title = f"graph {number} of {count} — ended by: the function's return"
    return g


def _positional_names(fn: Callable) -> list[str]:
    """The names of a module's forward arguments, by position (none for a function, whose
    inputs Dynamo already names after its arguments)."""
    if not isinstance(fn, torch.nn.Module):
        return []
    try:
        params = inspect.signature(fn.forward).parameters.values()
    except (TypeError, ValueError):
        return []
    return [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


# Where ``torch._dynamo.mark_dynamic`` (and its kin) note which sizes of a tensor Dynamo
# traces as symbols (``s0``), not as the numbers they are now.
_SIZE_MARKS = (
    "_dynamo_dynamic_indices",
    "_dynamo_weak_dynamic_indices",
    "_dynamo_unbacked_indices",
    "_dynamo_static_indices",
    "_dynamo_dynamic_range",
)


def copy_tensor(v: object) -> object:
    """A tensor copied with its requires_grad, and with the sizes the caller marked dynamic,
    so that nothing the call does reaches the caller's and the graph is the one they get."""
    if isinstance(v, torch.Tensor) and not isinstance(v, torch.nn.Parameter):
        copy = v.detach().clone().requires_grad_(v.requires_grad)
        for mark in _SIZE_MARKS:
            if hasattr(v, mark):
                setattr(copy, mark, copy_of(getattr(v, mark)))
        return copy
    return v


def _dynamic_asked(fn: object) -> bool | None:
    """The ``dynamic=`` the caller compiled ``fn`` with (``torch.compile(f, dynamic=True)``), so
    that the graphs drawn are the ones their compiled code runs; None (torch's default) for a
    plain function, or where PyTorch keeps it elsewhere. Read from the context Dynamo keeps: a
    compiled module's ``dynamo_ctx``, a compiled function's closure."""
    context = getattr(fn, "dynamo_ctx", None)
    if context is None and getattr(fn, "_torchdynamo_orig_callable", None) is not None:
        held = [_contents(cell) for cell in getattr(fn, "__closure__", None) or ()]
        context = next((c for c in held if hasattr(c, "_dynamic")), None)
    dynamic = getattr(context, "_dynamic", None)
    return dynamic if isinstance(dynamic, bool) else None


def _contents(cell: Any) -> object:
    """What a closure's cell holds (None for one not filled yet, which Python refuses to read)."""
    try:
        return cell.cell_contents
    except ValueError:
        return None


def uncompiled(fn: object) -> Callable:
    """The function itself, also when handed ``torch.compile(fn)``, whose compiled code would
    bypass vizlib's backend."""
    if not callable(fn):
        raise VizlibTypeError(
            f"Expected a function or an nn.Module to compile, got {type(fn).__name__}. "
            "Pass the function and its inputs: vz.compiled_graphs(fn, x)."
        )
    inner = getattr(fn, "_orig_mod", None) or getattr(fn, "_torchdynamo_orig_callable", None)
    return inner if callable(inner) else fn


def original_module(module: nn.Module) -> nn.Module:
    """The module ``torch.compile`` wrapped, where ``module`` is its wrapper (an
    ``OptimizedModule``, which keeps it as ``_orig_mod``), else ``module`` itself. Dynamo is
    not imported to ask: a process that never loaded it has compiled nothing."""
    eval_frame = sys.modules.get("torch._dynamo.eval_frame")
    while eval_frame is not None and isinstance(module, eval_frame.OptimizedModule):
        module = module._orig_mod
    return module


class _RunEager:
    """Functions and modules wrapped by ``torch.compile`` run as plain PyTorch while recording:
    autograd's graph is the eager one (what the compiled code computes), and Dynamo never
    traces vizlib's own hooks. Dynamo's stance is process-wide, so it is set when the first
    thread starts recording and put back when the last one ends. Only once Dynamo is loaded:
    before that nothing is compiled."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users = 0
        self._stance: contextlib.AbstractContextManager | None = None

    @contextmanager
    def __call__(self) -> Iterator[None]:
        if "torch._dynamo" not in sys.modules:
            yield
            return
        with self._lock:
            if self._users == 0:
                self._stance = torch.compiler.set_stance("force_eager")
                self._stance.__enter__()
            self._users += 1
        try:
            with warnings.catch_warnings():
                # torch warns that a compiled module's hooks fire twice when global module hooks
                # exist: vizlib's own, which note the module only once.
                warnings.filterwarnings(
                    "ignore", message=r"Using `torch.compile\(module\)` when there are global hooks"
                )
                yield
        finally:
            with self._lock:
                self._users -= 1
                if self._users == 0 and self._stance is not None:
                    self._stance.__exit__(None, None, None)
                    self._stance = None


run_eager = _RunEager()


# Loggers of torch's compiler stack that report graph breaks and failed traces themselves.
COMPILER_LOGGERS = ("torch._dynamo", "torch._subclasses", "torch._functorch", "torch.fx.experimental")


@contextmanager
def quiet_compiler() -> Iterator[None]:
    """Hold back the compiler's own log of graph breaks and failed traces (tracebacks with
    this machine's paths in them) while vizlib compiles: the Graphs, or vizlib's error,
    say the same. Each logger's level is restored afterwards."""
    loggers = [logging.getLogger(name) for name in COMPILER_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def raise_clearly(err: Exception, fn: object, what: str, hint: str = "") -> None:
    """Raise a VizlibValueError for an error of torch's compiler (a class defined in torch),
    with the error underneath it when torch wrapped one; return for any other error, which
    is the learner's own and propagates unchanged."""
    if not type(err).__module__.startswith("torch."):
        return
    detail = f"{type(err).__name__}: {_first_line(err)}"
    if explanation := _explanation(str(err)):
        detail += f" ({explanation})"
    elif err.__cause__ is not None:
        detail += f" ({type(err.__cause__).__name__}: {_first_line(err.__cause__)})"
    raise VizlibValueError(
        f"{what} failed on {_name(fn)}: {detail}. Check that {_name(fn)} runs on these inputs "
        f"without {what}, and keep to tensor operations (no .item() or .tolist() deciding what runs "
        f"next, no NumPy).{hint}"
    ) from err


def _explanation(text: str) -> str | None:
    """The sentence after "Explanation:" in a Dynamo message, if it has one."""
    for line in text.splitlines():
        if line.strip().startswith("Explanation:"):
            return line.strip().removeprefix("Explanation:").strip()
    return None


def _first_line(err: BaseException) -> str:
    return (str(err).strip().splitlines() or [""])[0].rstrip(".")


def _name(fn: object) -> str:
    return getattr(fn, "__name__", None) or type(fn).__name__
