"""Graph -> DOT text: the picture's conventions, written as Graphviz's input language.

Conventions of the picture: leaves are blue boxes, ops grey ellipses, modules orange
3-D boxes; the result has a double border; when more than one dtype appears the fill
colour shows the dtype and a legend says which is which (so autocast is visible); edges
that carried bigger gradients are drawn heavier; NaN or Inf anywhere turns a node red.
Node names in DOT are ``n{id}`` from the Graph's counter, so the same Graph always gives
the same text.

Compiler graphs (FX, export, torch.compile, AOTAutograd) use the same conventions; a
leaf says what it is (input, parameter, buffer, saved...), a joint graph draws its forward
and backward halves as two clusters, and the edges that cross from one to the other (the
values saved for backward) are dashed orange, like saved tensors in an autograd picture.
"""

from __future__ import annotations

import math
from collections.abc import Collection

from ..data import GraphData, Node, Shape, Stats, Value
from ..text import fmt, fmt_value, human_bytes

KIND_STYLE = {
    "leaf": 'shape=box, style="rounded,filled", fillcolor="#cfe5fb"',
    "op": 'shape=ellipse, style=filled, fillcolor="#ececec"',
    "module": 'shape=box3d, style=filled, fillcolor="#fde2b8"',
}
DTYPE_COLOR = {
    "float32": "#dbeafe",
    "float64": "#d1fae5",
    "bfloat16": "#fde68a",
    "float16": "#fbcfe8",
}
OTHER_DTYPE_COLOR = "#e5e7eb"
CURRENT_COLOR = "#fff176"  # the node backward is running now, in vz.replay
SAVED_COLOR = "#e8590c"  # what is kept for backward: saved-tensor notes, forward -> backward edges
MOVED_COLOR = "#7048e8"  # an edge along which a tensor moved to another device
# Graphviz's default layout grows superlinearly with what it lays out: the nodes, plus a
# virtual node on every rank an edge skips. A deep network (GPT-96: 6k nodes, 10k laid
# out, 38 s of `dot`) or a weight shared by every step of a loop (80 steps: 243 nodes,
# 9.9k laid out, over a minute) gets a layout that skips the costly passes: ``newrank``
# ranks in one pass, ``nslimit=0`` keeps each node at the leftmost x its rank allows, and
# ``splines=line`` draws long edges straight instead of routing each through thousands of
# boxes (0.5 s and 0.1 s). A chain of blocks comes out as a straight main path with side
# branches to its right. bench/bench_layout.py has the measurements. Graphviz 14-16 (the
# pygraphviz wheel, graphviz-pure, WebAssembly) no longer packs ranks left under ``nslimit=0``: a GPT-96
# came out 900 inches wide; ``mclimit=0.01`` (one short crossing-minimisation pass) keeps it
# 10 inches wide in every version, for a few tenths of a second (bench/bench_renderers.py).
# A name longer than this is drawn shortened in its node's label, its start and its end
# (where a layer's number and "weight" or "bias" are); the tooltip has it whole. One name
# of thousands of characters drew a box that wide, and the inline picture, scaled to the
# output area, shrank every other node to nothing.
MAX_LABEL_NAME = 40
FAST_LAYOUT_ABOVE = 1000  # layout_size() from which the fast layout is used
FAST_LAYOUT = "newrank=true, nslimit=0, splines=line, mclimit=0.01"


def to_dot(g: GraphData, current: int | None = None, done: Collection[int] | None = None) -> str:
    """DOT source of ``g``. With ``done`` (vz.replay), only those nodes show gradients,
    only edges into them look travelled, and ``current`` is highlighted."""
    dtypes = sorted({n.dtype for n in g.nodes if n.dtype})
    by_dtype = len(dtypes) > 1
    max_norm = max((e for e in g.edge_grads if e is not None and math.isfinite(e)), default=0.0)
    big = layout_size(g) > FAST_LAYOUT_ABOVE
    device_of = _devices_if_several(g)
    lines = [
        "digraph vizlib {",
        '  graph [rankdir=TB, nodesep=0.25, ranksep=0.3, fontname="Helvetica", fontsize=10'
        + (f", {FAST_LAYOUT}" if big else "")
        + "];",
        '  node [fontname="Helvetica", fontsize=10, height=0.3, penwidth=1];',
        '  edge [arrowsize=0.6, color="#555555"];',
    ]
    parts = list(dict.fromkeys(n.part for n in g.nodes if n.part))
    lines += _node_lines(g, by_dtype, current, done, bool(device_of))
    for part in parts:
        lines.append(f'  subgraph cluster_{part} {{ label="{_esc(part)}"; color="#999999"; style=rounded;')
        lines += [
            f"    n{n.id} [{_node_attrs(n, by_dtype, current, done, bool(device_of))}];"
            for n in g.nodes
            if n.part == part
        ]
        lines.append("  }")
    lines += _edge_lines(g, {n.id: n.part for n in g.nodes} if parts else {}, max_norm, done, device_of)
    if by_dtype:
        lines += _legend(dtypes)
    if g.title:  # a compiler graph's heading on top, its notes under it
        lines.append(f'  label="{_esc(chr(10).join([g.title, *g.notes]))}"; labelloc=t; fontcolor="#333333";')
    elif g.notes:
        lines.append(f'  label="{_esc(chr(10).join(g.notes))}"; labelloc=b; fontcolor="#666666";')
    lines.append("}")
    return "\n".join(lines) + "\n"


def _node_lines(
    g: GraphData, by_dtype: bool, current: int | None, done: Collection[int] | None, devices: bool
) -> list[str]:
    """The nodes outside any part's cluster, each with the notes of what it saved."""
    lines = []
    for n in g.nodes:
        if n.part:  # drawn inside its part's cluster
            continue
        lines.append(f"  n{n.id} [{_node_attrs(n, by_dtype, current, done, devices)}];")
        if g.show_saved:
            for k, s in enumerate(n.saved):
                lines.append(
                    f'  s{n.id}_{k} [shape=note, style=filled, fillcolor="#ffd8a8", fontsize=8, '
                    f'label="{_esc(s.name)}\\n{_shape(s.shape)} {s.dtype}\\n{human_bytes(s.bytes)}"];'
                )
                lines.append(f'  s{n.id}_{k} -> n{n.id} [style=dashed, arrowhead=none, color="{SAVED_COLOR}"];')
    return lines


def _edge_lines(
    g: GraphData,
    part_of: dict[int, str | None],
    max_norm: float,
    done: Collection[int] | None,
    device_of: dict[int, str],
) -> list[str]:
    """The edges: dashed between parts, labelled where a tensor moved between devices."""
    lines = []
    for (src, dst), eg in zip(g.edges, g.edge_grads, strict=True):
        crosses = part_of.get(src) != part_of.get(dst)
        attrs = f' [style=dashed, color="{SAVED_COLOR}"]' if crosses else _edge_attrs(eg, max_norm, done, dst)
        moved = _moved(device_of.get(src), device_of.get(dst))
        if moved:
            attrs = f" [{moved}, {attrs.strip()[1:-1]}]" if attrs else f" [{moved}]"
        lines.append(f"  n{src} -> n{dst}{attrs};")
    return lines


def layout_size(g: GraphData) -> int:
    """About how many nodes `dot` lays out for ``g``: its nodes plus one per rank an edge skips.

    Ranks roughly as `dot` assigns them (it minimises the total length of the edges): each
    node one rank below its deepest input, then, from the outputs up, each node with at
    least as many consumers as inputs (a leaf, a transpose feeding a matmul) moved down to
    just above its first consumer.
    """
    consumers: dict[int, list[int]] = {n.id: [] for n in g.nodes}
    inputs = dict.fromkeys(consumers, 0)
    for src, dst in g.edges:
        consumers[src].append(dst)
        inputs[dst] += 1
    waiting = dict(inputs)
    order = [i for i, k in waiting.items() if k == 0]
    rank = dict.fromkeys(order, 0)
    for i in order:  # grows while it is read: Kahn's topological sort
        for dst in consumers[i]:
            rank[dst] = max(rank.get(dst, 0), rank[i] + 1)
            waiting[dst] -= 1
            if waiting[dst] == 0:
                order.append(dst)
    for i in reversed(order):
        if consumers[i] and len(consumers[i]) >= inputs[i]:
            rank[i] = min(rank[dst] for dst in consumers[i]) - 1
    # Nodes on a cycle (never in a recorded graph) are left out of the count.
    return len(g.nodes) + sum(max(rank[dst] - rank[src] - 1, 0) for src, dst in g.edges if src in rank and dst in rank)


def _devices_if_several(g: GraphData) -> dict[int, str]:
    """Each node's device, where the graph's tensors live on more than one; else empty."""
    device_of = {n.id: n.device for n in g.nodes if n.device}
    return device_of if len(set(device_of.values())) > 1 else {}


def _moved(src: str | None, dst: str | None) -> str:
    """The attributes of an edge along which a tensor moved from device ``src`` to ``dst``."""
    if src is None or dst is None or src == dst:
        return ""
    return f'label="{_esc(f"{src} → {dst}")}", fontsize=8, fontcolor="{MOVED_COLOR}", color="{MOVED_COLOR}"'


def _node_attrs(
    n: Node, by_dtype: bool, current: int | None, done: Collection[int] | None, show_device: bool = False
) -> str:
    show_grad = done is None or n.id in done
    label = _label(n, show_grad) + (f"\n{n.device}" if show_device and n.device else "")
    attrs = [KIND_STYLE[n.kind], f'label="{_esc(label)}"', f'tooltip="{_esc(_tooltip(n))}"']
    if by_dtype:
        attrs.append(f'fillcolor="{DTYPE_COLOR.get(n.dtype or "", OTHER_DTYPE_COLOR)}"')
    if n.is_output:
        attrs.append("peripheries=2")
    if n.nonfinite:
        attrs.append('color="#d00000", fontcolor="#d00000", fillcolor="#ffc9c9", penwidth=2')
    if n.id == current:
        attrs.append(f'fillcolor="{CURRENT_COLOR}", penwidth=3')
    elif done is not None and n.id not in done:
        attrs.append('fontcolor="#777777"')
    return ", ".join(attrs)


def _label(n: Node, show_grad: bool) -> str:
    """Short: name (a module box adds its class and size), shape (unless a scalar), value
    and grad for scalars."""
    name = _short(n.name)
    lines = [name] if n.kind != "module" else [name, _module_line(n)]
    if n.kind == "leaf" and n.role:  # compiler graphs: input, parameter, buffer, saved...
        lines.append(n.role + (f" · {human_bytes(n.saved_bytes)}" if n.role == "saved" else ""))
    scalar = n.shape == () or (n.shape is not None and all(d == 1 for d in n.shape))
    if n.shape is not None and not scalar:
        lines.append(_shape(n.shape))
    if scalar and n.value is not None:
        lines.append(f"= {fmt_value(n.value)}")
    if show_grad and scalar and n.grad is not None:
        lines.append(f"grad {fmt_value(n.grad)}")
    return "\n".join(lines)


def _short(name: str) -> str:
    """``name`` in at most MAX_LABEL_NAME characters: its first third, an ellipsis and its end."""
    if len(name) <= MAX_LABEL_NAME:
        return name
    head = MAX_LABEL_NAME // 3
    return name[:head] + "…" + name[head + 1 - MAX_LABEL_NAME :]


def _module_line(n: Node) -> str:
    """'Block ×12, 744 ops' for folded blocks, 'Linear, 3 ops' for one module."""
    what = f"{n.module_type} ×{n.repeats}" if n.repeats > 1 else n.module_type
    return f"{what}, {n.members} ops" if what else f"{n.members} ops"


def _tooltip(n: Node) -> str:
    """Everything known about the node: what hovering it in the SVG shows."""
    lines = [f"{n.name} ({n.role or n.kind})"]
    if n.part:
        lines.append(f"part: {n.part}")
    if n.op:
        lines.append(f"{'target' if n.role else 'forward'}: {n.op}")
    if n.kind == "module":
        lines.append(f"module: {n.module}, {_module_line(n)}")
    elif n.module:
        lines.append(f"module: {n.module}")
    if n.shape is not None:
        lines.append(f"shape: {_shape(n.shape)}  dtype: {n.dtype}" + (f"  device: {n.device}" if n.device else ""))
    lines += _tensor_lines("value", n.value, n.value_stats)
    lines += _tensor_lines("grad", n.grad, n.grad_stats)
    if n.saved:
        lines.append(
            f"saved for backward: {human_bytes(n.saved_bytes)} ("
            + ", ".join(f"{s.name} {_shape(s.shape)}" for s in n.saved)
            + ")"
        )
    return "\n".join(lines)


def _tensor_lines(what: str, value: Value, st: Stats | None) -> list[str]:
    lines = []
    if value is not None:
        lines.append(f"{what}: {fmt_value(value)}")
    if st is not None:
        named = {"min": st.min, "max": st.max, "mean": st.mean, "std": st.std, "norm": st.norm}
        lines.append(" ".join([what] + [f"{k} {fmt(v)}" for k, v in named.items() if v is not None]))
        if not st.finite:
            lines.append(f"{what} contains NaN or Inf")
    return lines


def _edge_attrs(norm: float | None, max_norm: float, done: Collection[int] | None, dst: int) -> str:
    if done is not None and dst not in done:
        return ' [color="#bbbbbb", style=dashed]'
    if norm is None:
        return ""
    if not math.isfinite(norm):
        return ' [color="#d00000", penwidth=2.5]'
    if max_norm <= 0 or norm <= 0:
        return ""
    # Four decades below the largest gradient and smaller: thinnest; the largest: 4.
    heaviness = min(max((math.log10(norm / max_norm) + 4) / 4, 0.0), 1.0)
    return f" [penwidth={1 + 3 * heaviness:.2f}]"


def _legend(dtypes: list[str]) -> list[str]:
    rows = "".join(f'<TR><TD BGCOLOR="{DTYPE_COLOR.get(d, OTHER_DTYPE_COLOR)}">{d}</TD></TR>' for d in dtypes)
    return [
        "  subgraph cluster_legend {",
        '    label="dtype"; fontsize=9; color="#bbbbbb";',
        f'    legend [shape=plain, label=<<TABLE BORDER="0" CELLSPACING="2">{rows}</TABLE>>];',
        "  }",
    ]


def _shape(shape: Shape | None) -> str:
    return "×".join(map(str, shape)) if shape else "scalar"


def _esc(text: str) -> str:
    """``text`` as a quoted DOT string that Graphviz draws as it is. Graphviz reads HTML
    entities in any string (``&lt;`` is drawn ``<``), so each ``&`` is written ``&amp;``: a
    name such as ``p&lt;`` is drawn so, and drawn the same by ``svg_patch``'s redraws."""
    return text.replace("&", "&amp;").replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
