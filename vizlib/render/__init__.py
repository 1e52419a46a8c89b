"""Render: GraphData -> DOT text (``dot``) -> SVG, PNG or PDF through Graphviz (``graphviz``),
whichever Graphviz is here (``engines``), HTML for Jupyter with tooltips and a legend
(``inline``), and the cached layout that live views patch instead of laying out again
(``svg_patch``)."""

from .dot import to_dot
from .engines import renderer
from .graphviz import dot_to, save, to_svg
from .inline import to_html
from .svg_patch import LayoutCache

__all__ = ["to_dot", "to_svg", "to_html", "dot_to", "save", "renderer", "LayoutCache"]
