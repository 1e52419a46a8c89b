"""The Graph's data: plain records describing one autograd computation.

The lowest stage: capture fills a GraphData, transforms rewrite it, render draws it, and
none of them is imported here. It holds numbers and strings only (no tensors, no autograd
nodes), so keeping a graph never keeps activations alive and two captures of the same
computation compare equal field by field. ``vz.Graph`` (in ``vizlib.api``) is this data
plus the ways to look at it: DOT, SVG, files and Jupyter's display.
"""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass, field

from .errors import VizlibTypeError
from .text import dims, fmt, fmt_value, human_bytes

Value = float | int | bool | list | None
# A tensor's shape: ints, or for a dimension a compiler keeps symbolic its name ("batch", "s0"),
# and for a nested tensor's ragged one torch's name ("j1") or the range of its lengths ("2..3").
Shape = tuple[int | str, ...]


@dataclass(frozen=True)
class Stats:
    """Statistics of one tensor, enough for a tooltip and for NaN/Inf flags.

    A value has all of them; a gradient only its norm (the others None): the norm is what
    tells a vanishing or exploding gradient, and a gradient's mean is mostly rounding noise
    around zero.
    """

    numel: int
    mean: float | None
    std: float | None
    norm: float
    min: float | None = None
    max: float | None = None

    @property
    def finite(self) -> bool:
        """False when any element is NaN or ±Inf."""
        return all(v is None or math.isfinite(v) for v in (self.mean, self.norm, self.min, self.max))


# repr() lists every leaf's value and gradient for graphs with at most this many leaves.
_REPR_LEAVES = 12


@dataclass(frozen=True)
class SavedTensor:
    """One tensor an autograd node saved for backward (e.g. ``self`` of MulBackward0)."""

    name: str  # post-hoc: autograd's attribute ("self", "other", "result"); recorded: "input 0", "output", ...
    shape: Shape
    dtype: str
    bytes: int  # bytes of its storage, what saving it keeps alive


@dataclass(frozen=True)
class ModuleSpec:
    """What makes two module calls "the same block": the class and every parameter's
    name and shape (GPT's blocks.0 ... blocks.11 share one spec)."""

    type: str  # class name, e.g. "Block"
    params: tuple[tuple[str, tuple[int, ...]], ...] = ()


@dataclass
class Node:
    """One box in the picture: an autograd op, a leaf tensor, or a collapsed module.

    ``value`` and ``grad`` are exact copies for small tensors (a float for a scalar, a
    nested list otherwise) and None for big ones, whose ``value_stats`` still say min, max,
    mean, std and norm, and ``grad_stats`` the gradient's norm. ``grad`` is the gradient of the result with
    respect to this node's output.
    """

    id: int
    kind: str  # "op", "leaf" or "module"
    name: str  # "MulBackward0", a parameter/argument name, or a module path
    shape: Shape | None = None
    dtype: str | None = None
    device: str | None = None  # where the tensor lives: "cpu", "cuda:0", "meta"
    value: Value = None
    grad: Value = None
    value_stats: Stats | None = None
    grad_stats: Stats | None = None
    saved_bytes: int = 0
    saved: list[SavedTensor] = field(default_factory=list)
    op: str | None = None  # the forward call that made it, e.g. "mul", "linear"
    module: str | None = None  # path of the innermost module that ran it, e.g. "blocks.0.attn"
    modules: tuple[str, ...] = ()  # every enclosing module path, outermost first
    members: int = 1  # nodes folded into this one (module boxes)
    module_type: str | None = None  # module boxes: the class, e.g. "CausalSelfAttention"
    repeats: int = 1  # module boxes: identical blocks in a row drawn as this one ("Block ×12")
    is_output: bool = False
    # Compiler graphs (FX, export, torch.compile, AOTAutograd) only:
    role: str | None = None  # "input", "parameter", "buffer", "constant", "saved", "tangent", "output"
    part: str | None = None  # joint graphs: "forward" or "backward"

    @property
    def nonfinite(self) -> bool:
        """True when the value or the gradient holds NaN or Inf."""
        return any(s is not None and not s.finite for s in (self.value_stats, self.grad_stats))


@dataclass
class GraphData:
    """An autograd graph with the values that flowed forward and the gradients that came back.

    ``edges[i]`` is ``(src_id, dst_id)`` in the forward direction (input toward output);
    ``edge_grads[i]`` is the L2 norm of the gradient that flowed back along it (None when
    unknown, NaN or Inf when the gradient was not finite). ``backward_order`` lists node
    ids in the order the autograd engine ran them. ``notes`` are sentences for the
    reader, e.g. that the picture was collapsed. ``module_specs`` describes every module
    that ran (by path), so that collapsing can tell identical blocks apart from others.
    """

    nodes: list[Node] = field(default_factory=list)
    edges: list[tuple[int, int]] = field(default_factory=list)
    edge_grads: list[float | None] = field(default_factory=list)
    backward_order: list[int] = field(default_factory=list)
    saved_bytes: int = 0
    notes: list[str] = field(default_factory=list)
    show_saved: bool = False
    module_specs: dict[str, ModuleSpec] = field(default_factory=dict)
    # Compiler graphs only: a heading ("graph 1 of 3 — ended by: ..."), why a piece that
    # torch.compile captured ended (None: it ran to the function's return), and the values a
    # joint graph's forward saved for its backward (their bytes sum to ``saved_bytes``).
    title: str | None = None
    break_reason: str | None = None
    saved: list[SavedTensor] = field(default_factory=list)

    def node(self, node_id: int) -> Node:
        """The node with this id."""
        for n in self.nodes:
            if n.id == node_id:
                return n
        raise KeyError(node_id)

    def find(self, name: str) -> list[Node]:
        """Nodes whose name is ``name``, or matches it as a glob (``"Mul*"``, ``"fc1.*"``)."""
        if not isinstance(name, str):
            raise VizlibTypeError(
                f"g.find needs a name or a glob, e.g. g.find('MulBackward0') or g.find('fc1.*'); "
                f"got {type(name).__name__} {name!r:.40}."
            )
        return [n for n in self.nodes if n.name == name or fnmatch.fnmatchcase(n.name, name)]

    def __repr__(self) -> str:
        return summary_text(self)


def summary_text(g: GraphData) -> str:
    """A short deterministic summary: counts by kind, and each leaf's value and grad."""
    counts = {k: sum(n.kind == k for n in g.nodes) for k in ("leaf", "op", "module")}
    plural = {"leaf": "leaves", "op": "ops", "module": "modules"}
    parts = ", ".join(f"{c} {k if c == 1 else plural[k]}" for k, c in counts.items() if c)
    lines = [] if g.title is None else [g.title]
    lines += [
        f"Graph: {len(g.nodes)} nodes ({parts}), {len(g.edges)} edge{'s' if len(g.edges) != 1 else ''}, "
        f"saved for backward {human_bytes(g.saved_bytes)}"
    ]
    leaves = [n for n in g.nodes if n.kind == "leaf"]
    if len(leaves) <= _REPR_LEAVES:
        for n in leaves:
            role = f" ({n.role})" if n.role else ""
            # Compiler graphs know shapes, not values: their dtype is worth a word.
            line = f"  {n.name}{role}: {_describe(n.value, n.value_stats, n.shape, n.dtype if n.role else None)}"
            if n.grad is not None or n.grad_stats is not None:
                line += f", grad {_describe(n.grad, n.grad_stats, n.shape, None)}"
            lines.append(line)
    for box in (n for n in g.nodes if n.repeats > 1):
        lines.append(f"  {box.name}: {box.module_type} ×{box.repeats} drawn as one box")
    for out in (n for n in g.nodes if n.is_output):
        what = _describe(out.value, out.value_stats, out.shape, None)
        # A compiler graph's output node returns other nodes' values: name them.
        part = f" ({out.part})" if out.part else ""
        lines.append(f"  output{part}: {out.op}" if out.role == "output" else f"  output {out.name}: {what}")
    if g.saved:
        lines.append(f"  saved for backward: {', '.join(s.name for s in g.saved)}")
    lines += [f"  note: {note}" for note in g.notes]
    return "\n".join(lines)


def _describe(value: Value, st: Stats | None, shape: Shape | None, dtype: str | None) -> str:
    """A value, its statistics, or (compiler graphs, complex tensors) its shape; ``dtype``
    is named where only the shape is known."""
    if value is not None:
        return fmt_value(value)
    if st is not None:
        mean = f", mean {fmt(st.mean)}" if st.mean is not None else ""
        return f"shape {dims(shape or ())}{mean}, norm {fmt(st.norm)}"
    if shape is None:
        return "?"
    return f"shape {dims(shape)}" + (f" {dtype}" if dtype else "")
