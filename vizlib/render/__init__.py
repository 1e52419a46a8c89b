"""Render: GraphData -> DOT text (``dot``) -> SVG, PNG or PDF through Graphviz (``graphviz``),
whichever Graphviz is here (``engines``), HTML for Jupyter with tooltips and a legend
(``inline``), and the cached layout that live views patch instead of laying out again
(``svg_patch``). When a graph is big enough for the fast layout (``layout_size`` above
``FAST_LAYOUT_ABOVE``), its DOT asks for ``FAST_LAYOUT``; ``graphviz_pure_program`` is the
Graphviz program pip installs with vizlib, if any (bench/ measures both)."""

from .dot import FAST_LAYOUT, FAST_LAYOUT_ABOVE, layout_size, to_dot
from .engines import graphviz_pure_program, renderer
from .graphviz import dot_to, save, to_svg
from .inline import to_html
from .svg_patch import LayoutCache

__all__ = [
    "to_dot",
    "to_svg",
    "to_html",
    "dot_to",
    "save",
    "renderer",
    "LayoutCache",
    "layout_size",
    "FAST_LAYOUT",
    "FAST_LAYOUT_ABOVE",
    "graphviz_pure_program",
]
