"""Reuse one Graphviz layout while only the numbers in the picture change.

A live view redraws the same graph again and again with new values (``vz.explore``) or
more gradients shown (``vz.replay``). Running ``dot`` for each redraw costs tens of
milliseconds and makes the boxes jump around. So ``LayoutCache`` lays a graph out once and,
as long as the new DOT text has the same nodes, edges and graph settings, rewrites only
what changed inside the cached SVG: the label lines, tooltips, colours and pen widths that
``vizlib.render.dot`` sets. A label that no longer fits its box (more lines, or a longer line),
or any other difference, gets a fresh layout, which becomes the new cache.

It relies on two things Graphviz guarantees for its SVG output: each node's group carries
the DOT node name in ``<title>``, and edges are numbered ``edge1, edge2, ...`` in the order
the DOT text lists them.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

from .graphviz import dot_to

# What may differ between the cached layout and a redraw without moving anything.
NODE_PATCHABLE = {"label", "tooltip", "fillcolor", "fontcolor", "color", "penwidth"}
EDGE_PATCHABLE = {"color", "penwidth", "style"}
# A box keeps Graphviz's minimum width (0.75 in) for short labels: this many characters fit.
MIN_CAPACITY = 6

_NODE = re.compile(r"^\s*(\w+) \[(.*)\];$")
_EDGE = re.compile(r"^\s*(\w+) -> (\w+)(?: \[(.*)\])?;$")
_DEFAULTS = re.compile(r"^\s*(node|edge) \[(.*)\];$")
_ATTR = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|<.*>|[^,\s]+)')
_GROUP = re.compile(r'<g id="(node|edge)(\d+)" class="\1">\n<title>(.*?)</title>')
_TEXT = re.compile(r"<text ([^>]*)>(.*?)</text>")
_Y = re.compile(r'\by="([-\d.]+)"')
_SHAPE = re.compile(r"<(path|polygon|ellipse|polyline) ([^>]*?)/>")
_A_TITLE = re.compile(r'xlink:title="[^"]*"')


def _attrs(text: str) -> dict[str, str]:
    out = {}
    for key, value in _ATTR.findall(text):
        if value.startswith('"'):  # (the text Graphviz draws: DOT's escapes, then the entities dot._esc wrote)
            value = html.unescape(re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), value[1:-1]))
        out[key] = value
    return out


@dataclass
class ParsedDot:
    """render's DOT text split into what can be patched and what fixes the layout."""

    nodes: dict[str, dict[str, str]] = field(default_factory=dict)
    edges: list[dict[str, str]] = field(default_factory=list)
    defaults: dict[str, dict[str, str]] = field(default_factory=lambda: {"node": {}, "edge": {}})
    skeleton: list[str] = field(default_factory=list)  # everything else, and which nodes/edges exist


def parse_dot(dot: str) -> ParsedDot:
    """Split the line-per-statement DOT text written by ``vizlib.render.dot.to_dot``."""
    p = ParsedDot()
    for line in dot.splitlines():
        if m := _DEFAULTS.match(line):
            p.defaults[m.group(1)] = _attrs(m.group(2))
            p.skeleton.append(line)
        elif m := _EDGE.match(line):
            p.edges.append(_attrs(m.group(3) or ""))
            p.skeleton.append(f"{m.group(1)} -> {m.group(2)}")
        elif m := _NODE.match(line):
            p.nodes[m.group(1)] = _attrs(m.group(2))
            p.skeleton.append(m.group(1))
        else:
            p.skeleton.append(line)
    return p


class _Layout:
    """One laid-out SVG, cut into pieces: a node or edge group per piece, the rest between."""

    def __init__(self, parsed: ParsedDot, svg: str):
        self.parsed = parsed
        self.pieces = re.split(r"(?=<!-- )", svg)
        self.node_piece: dict[str, int] = {}
        self.edge_piece: dict[int, int] = {}
        for i, piece in enumerate(self.pieces):
            if m := _GROUP.search(piece):
                if m.group(1) == "node":
                    self.node_piece[html.unescape(m.group(3))] = i
                else:
                    self.edge_piece[int(m.group(2)) - 1] = i

    def patch(self, new: ParsedDot) -> str | None:
        """The cached SVG redrawn for ``new``, or None when it needs a fresh layout."""
        old = self.parsed
        if new.skeleton != old.skeleton:
            return None
        pieces = list(self.pieces)
        for name, attrs in new.nodes.items():
            before = old.nodes[name]
            if attrs == before:
                continue
            if name not in self.node_piece or not _only(attrs, before, NODE_PATCHABLE):
                return None
            piece = _patch_node(pieces[self.node_piece[name]], before, attrs, new.defaults["node"])
            if piece is None:
                return None
            pieces[self.node_piece[name]] = piece
        # The same skeleton: the same edges, in the same order.
        for k, (attrs, before) in enumerate(zip(new.edges, old.edges, strict=True)):
            if attrs == before:
                continue
            if k not in self.edge_piece or not _only(attrs, before, EDGE_PATCHABLE):
                return None
            pieces[self.edge_piece[k]] = _patch_edge(pieces[self.edge_piece[k]], attrs, new.defaults["edge"])
        return "".join(pieces)


def _only(a: dict, b: dict, allowed: set[str]) -> bool:
    return all(a.get(k) == b.get(k) for k in (a.keys() | b.keys()) - allowed)


def _svg_text(line: str) -> str:
    return html.escape(line, quote=False).replace("  ", " &#160;")


def _set(attr: str, value: str | None, tag_attrs: str) -> str:
    """Set (or, with None, remove) one XML attribute in a tag's attribute text."""
    tag_attrs = re.sub(rf'\s*\b{attr}="[^"]*"', "", tag_attrs)
    return tag_attrs if value is None else f'{tag_attrs} {attr}="{value}"'


def _stroke_width(attrs: dict, defaults: dict) -> str | None:
    width = float(attrs.get("penwidth", defaults.get("penwidth", "1")))
    return None if width == 1 else f"{width:.2f}".rstrip("0").rstrip(".")  # as Graphviz writes it


def _patch_node(piece: str, before: dict, attrs: dict, defaults: dict) -> str | None:
    old_lines = before.get("label", "").split("\n")
    lines = attrs.get("label", "").split("\n")
    texts = list(_TEXT.finditer(piece))
    capacity = max(MIN_CAPACITY, *map(len, old_lines))
    if len(texts) != len(old_lines) or len(lines) > len(texts) or any(len(s) > capacity for s in lines):
        return None
    # Fewer lines than the box was made for: keep them centred where the old ones were.
    found = [_Y.search(t.group(1)) for t in texts]
    if not all(found):  # a text element without y=: not Graphviz's usual output, lay out anew
        return None
    ys = [float(m[1]) for m in found if m]
    shift = (ys[-1] - ys[len(lines) - 1]) / 2
    fontcolor = attrs.get("fontcolor", defaults.get("fontcolor"))
    new_texts = []
    # Fewer lines than the box had text elements: the extra elements are dropped.
    for t, y, line in zip(texts, ys, lines, strict=False):
        tag = _Y.sub(f'y="{y + shift:.2f}"', t.group(1))
        tag = _set("fill", None if fontcolor in (None, "black") else fontcolor, tag)
        new_texts.append(f"<text {tag}>{_svg_text(line)}</text>")
    head, tail = piece[: texts[0].start()], piece[texts[-1].end() :]
    fill, color, width = (
        attrs.get("fillcolor"),
        attrs.get("color", defaults.get("color", "black")),
        _stroke_width(attrs, defaults),
    )

    def shape(m: re.Match) -> str:
        tag = m.group(2)
        if fill is not None and 'fill="none"' not in tag:
            tag = _set("fill", fill, tag)
        tag = _set("stroke-width", width, _set("stroke", color, tag))
        return f"<{m.group(1)} {tag}/>"

    head = _SHAPE.sub(shape, head)
    if "tooltip" in attrs:
        tip = html.escape(attrs["tooltip"]).replace("\n", "&#10;").replace("  ", " &#160;")
        head = _A_TITLE.sub(lambda _: f'xlink:title="{tip}"', head, count=1)
    return head + "\n".join(new_texts) + tail


def _patch_edge(piece: str, attrs: dict, defaults: dict) -> str:
    color = attrs.get("color", defaults.get("color", "black"))
    width = _stroke_width(attrs, defaults)
    dashed = "dashed" in attrs.get("style", defaults.get("style", ""))

    def shape(m: re.Match) -> str:
        tag = _set("stroke-width", width, _set("stroke", color, m.group(2)))
        if m.group(1) == "path":
            tag = _set("stroke-dasharray", "5,2" if dashed else None, tag)
        else:
            tag = _set("fill", color, tag)  # the arrowhead
        return f"<{m.group(1)} {tag}/>"

    return _SHAPE.sub(shape, piece)


class LayoutCache:
    """SVG for DOT text, running ``dot`` only when the layout itself must change."""

    def __init__(self) -> None:
        self._layout: _Layout | None = None

    def svg(self, dot: str) -> str:
        """The picture for ``dot``: the cached layout patched, or a fresh layout."""
        parsed = parse_dot(dot)
        if self._layout is not None and (svg := self._layout.patch(parsed)) is not None:
            return svg
        svg = dot_to(dot, "svg").decode()
        self._layout = _Layout(parsed, svg)
        return svg
