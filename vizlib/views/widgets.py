"""What vz.explore and vz.replay share: showing an SVG in a widget, and a static fallback.

A widget only draws where a live widget front-end runs (JupyterLab, Notebook, VS Code). A
notebook read on GitHub, or converted without its kernel, shows whatever else the output
holds, so the live views add the current picture (``image/svg+xml``) and a one-line note
with a deterministic text summary (``text/plain``, the part nbval compares) to the bundle.
"""

from __future__ import annotations

import html
import re
from typing import Any

GRAPH_CLASS = "vizlib-graph"  # the stable CSS class browser tests and benchmarks look for


def svg_for_html(svg: str) -> str:
    """Graphviz's SVG document as an inline element that shrinks to the output's width."""
    start = svg.index("<svg")
    body = svg[start:]
    return re.sub(r"<svg\b", '<svg style="max-width:100%;height:auto"', body, count=1)


def error_html(message: str) -> str:
    """An error shown in place of the picture, in the notebook's error colours."""
    return (
        '<div class="vizlib-error" style="color:var(--jp-error-color1,#b00020);'
        'white-space:pre-wrap;font-family:var(--jp-code-font-family,monospace)">'
        f"{html.escape(message)}</div>"
    )


class StaticFallback:
    """Mixin for a widget: its display bundle also carries a static picture and a note.

    Subclasses define ``_static_svg()`` (a whole SVG document) and ``_static_text()``.
    """

    def _static_svg(self) -> str:
        raise NotImplementedError

    def _static_text(self) -> str:
        raise NotImplementedError

    def _repr_mimebundle_(self, **kwargs: Any) -> dict:
        data = super()._repr_mimebundle_(**kwargs)  # type: ignore[misc]  # the widget's, next in the MRO
        data["text/plain"] = self._static_text()
        data["image/svg+xml"] = self._static_svg()
        return data
