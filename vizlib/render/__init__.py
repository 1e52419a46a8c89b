"""Render: GraphData -> DOT text (``dot``) -> SVG, PNG or PDF through Graphviz (``graphviz``),
and the cached layout that live views patch instead of laying out again (``svg_patch``)."""

from .dot import to_dot
from .graphviz import dot_to, save, to_svg
from .svg_patch import LayoutCache

__all__ = ["to_dot", "to_svg", "dot_to", "save", "LayoutCache"]
