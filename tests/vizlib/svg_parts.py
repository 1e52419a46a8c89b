"""Read what Graphviz drew back out of an SVG, to compare a patched picture with a fresh one."""

from __future__ import annotations

import html
import re


def node_texts(svg: str) -> dict[str, list[str]]:
    """Each node's label lines, keyed by the DOT node name in its <title>."""
    out = {}
    for piece in re.split(r"(?=<!-- )", svg):
        if m := re.search(r'class="node">\n<title>(.*?)</title>', piece):
            out[m.group(1)] = [html.unescape(t) for t in re.findall(r"<text [^>]*>(.*?)</text>", piece)]
    return out


def drawn_attrs(svg: str) -> dict[str, tuple]:
    """Per node/edge group: the colours, widths and dashes of its shapes and texts, and tooltip."""
    out = {}
    for piece in re.split(r"(?=<!-- )", svg):
        if m := re.search(r'<g id="(\w+)" class="(?:node|edge)">', piece):
            shapes = re.findall(r"<(?:path|polygon|ellipse) ([^>]*)/>", piece)
            out[m.group(1)] = (
                sorted(
                    tuple(sorted(re.findall(r'\b(fill|stroke|stroke-width|stroke-dasharray)="([^"]*)"', s)))
                    for s in shapes
                ),
                sorted(re.findall(r'<text [^>]*\bfill="([^"]*)"', piece)),
                [html.unescape(t) for t in re.findall(r'xlink:title="([^"]*)"', piece)],
            )
    return out
