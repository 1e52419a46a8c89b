"""coursekit.saved_views: a notebook saved with its live views as pictures (the browser test
tests/browser/test_saved_views.py shows the Lab reopening one)."""

from __future__ import annotations

import copy

import nbformat

from coursekit.saved_views import WIDGET_VIEW, drop_live_views, pre_save_hook

VIEW = {WIDGET_VIEW: {"version_major": 2, "version_minor": 0, "model_id": "0123abcd"}}
PICTURE = {"image/svg+xml": "<svg/>", "text/plain": "vz.explore: x=2"}


def display(data: dict) -> dict:
    return {"output_type": "display_data", "data": data, "metadata": {}}


def notebook() -> dict:
    """A saved notebook as the server receives it: a live view with its picture, a widget
    without one (the widget's part alone), a printed line and a markdown cell."""
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell("# views"),
            nbformat.v4.new_code_cell(
                "vz.explore(f, x=2.0)", outputs=[display({**VIEW, **PICTURE})], execution_count=1
            ),
            nbformat.v4.new_code_cell(
                "display(slider)",
                outputs=[display(dict(VIEW)), nbformat.v4.new_output("stream", text="moved\n")],
                execution_count=2,
            ),
        ]
    )
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    return copy.deepcopy(dict(nb))  # plain dicts, as json.loads gives them


def test_live_views_keep_their_picture_and_text_only():
    nb = notebook()
    drop_live_views(nb)
    outputs = [cell.get("outputs") for cell in nb["cells"]]
    assert outputs[1] == [display(PICTURE)]
    assert outputs[2] == [nbformat.v4.new_output("stream", text="moved\n")]  # nothing left to show: gone
    assert "outputs" not in nb["cells"][0] and "widgets" not in nb["metadata"]
    nbformat.validate(nbformat.from_dict(nb))


def test_the_save_hook_changes_notebooks_only():
    model = {"type": "notebook", "format": "json", "content": notebook()}
    pre_save_hook(model=model, path="views.ipynb", contents_manager=None)
    assert WIDGET_VIEW not in str(model["content"])
    text = {"type": "file", "format": "text", "content": str(VIEW)}
    pre_save_hook(model=text, path="notes.txt", contents_manager=None)
    assert text == {"type": "file", "format": "text", "content": str(VIEW)}
    renamed = {"type": "notebook", "path": "views.ipynb"}  # a rename carries no content
    pre_save_hook(model=renamed, path="views.ipynb", contents_manager=None)
    assert renamed == {"type": "notebook", "path": "views.ipynb"}
