"""Render: Graph -> DOT text (``dot``) -> SVG, PNG or PDF through Graphviz (``graphviz``),
and the cached layout that live views patch instead of laying out again (``svg_patch``)."""
