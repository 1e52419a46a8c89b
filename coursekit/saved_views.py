"""Live views saved as their picture: what `make lab` writes when a notebook is saved, and
what scripts/execute_notebooks.py stores.

A widget's output holds only the id of a model that lives in the kernel. Saved as it is, a
notebook reopened once that kernel has gone shows "Error displaying widget: model not found"
where the picture was: JupyterLab prefers the widget's part of an output to every other part
and has no fallback when the model is missing (ipywidgets 8.1's jupyterlab-manager), and
nothing brings the model back (the Lab saves no widget state by default; a saved state would
reopen as sliders that move while the picture does not, and only once a kernel has started).

vizlib's live views put their current picture (``image/svg+xml``) and a line of text in the
same output, under ipywidgets 7 and 8 alike. Without the widget's part, that picture is what
every front-end shows at once (the Lab, VS Code, Colab, GitHub, an HTML export); running the
cell again brings the live view back. A widget with no picture of its own keeps its text.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "widgets"  # the notebook metadata that holds saved widget state


def drop_live_views(nb: MutableMapping[str, Any]) -> None:
    """Drop the widget's part of every output (an output with nothing else left goes too)
    and the notebook's saved widget state; each live view keeps its picture and text.

    ``nb`` is a notebook as nbformat reads it or as the Jupyter server receives it (a dict).
    """
    nb.get("metadata", {}).pop(WIDGET_STATE, None)
    for cell in nb.get("cells", []):
        if "outputs" not in cell:
            continue
        for output in cell["outputs"]:
            output.get("data", {}).pop(WIDGET_VIEW, None)
        cell["outputs"] = [o for o in cell["outputs"] if "data" not in o or o["data"]]


def pre_save_hook(model: dict[str, Any], **_: Any) -> None:
    """The Jupyter server's ``ContentsManager.pre_save_hook`` (scripts/lab.py sets it): every
    notebook the Lab saves, autosaves included, is written with its live views as pictures.
    The open notebook keeps its live widgets: the Lab does not read back what it saved."""
    if model.get("type") == "notebook" and isinstance(model.get("content"), dict):
        drop_live_views(model["content"])
