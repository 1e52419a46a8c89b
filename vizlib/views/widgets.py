"""What vz.explore and vz.replay share: showing an SVG in a widget, and a static fallback.

A widget only draws where a live widget front-end runs (JupyterLab, Notebook, VS Code). A
notebook read on GitHub, or converted without its kernel, shows whatever else the output
holds, so the live views add the current picture (``image/svg+xml``) and a one-line note
with a deterministic text summary (``text/plain``, the part nbval compares) to the bundle.

ipywidgets 8 asks a widget for ``_repr_mimebundle_``; ipywidgets 7 (Colab's) displays a
widget itself in ``_ipython_display_`` and never asks, so under 7 ``StaticFallback`` takes
over that method too, and both versions show the same bundle.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets
from IPython.display import display

from ..render.inline import GRAPH_CLASS, svg_for_html

__all__ = ["GRAPH_CLASS", "svg_for_html", "error_html", "StaticFallback"]

IPYWIDGETS_7 = hasattr(ipywidgets.Widget, "_ipython_display_")  # 8 replaced it by _repr_mimebundle_
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


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
        data: dict[str, Any]
        if IPYWIDGETS_7:  # the widget's own part, as ipywidgets 7 writes it
            data = {WIDGET_VIEW: {"version_major": 2, "version_minor": 0, "model_id": self.model_id}}  # type: ignore[attr-defined]
        else:
            data = super()._repr_mimebundle_(**kwargs)  # type: ignore[misc]  # the widget's, next in the MRO
        data["text/plain"] = self._static_text()
        data["image/svg+xml"] = self._static_svg()
        return data

    if IPYWIDGETS_7:

        def _ipython_display_(self, **kwargs: Any) -> None:
            display(self._repr_mimebundle_(), raw=True)
            self._handle_displayed(**kwargs)  # type: ignore[attr-defined]  # ipywidgets 7's on_displayed callbacks
