"""A live view saved and reopened, as a learner meets it: run the notebook, the Lab saves it,
the kernel goes (the Lab is stopped, or the learner shuts it down), the notebook is opened
again. Each vz.replay and vz.explore output must come back as its picture, never as "Error
displaying widget: model not found" (what a saved widget without its kernel shows).

An explicit save (Ctrl+S) stands in for the Lab's autosave: both save the same way, through
the server's save hook that `make lab` sets (coursekit/saved_views.py).
"""

from __future__ import annotations

import json

import nbformat
import pytest
from playwright.sync_api import expect

from coursekit.saved_views import WIDGET_VIEW
from harness.lab_session import WAIT_MS, notebook_run, open_notebook, wait_until

pytestmark = pytest.mark.browser

NAME = "live_views.ipynb"
CELLS = [
    "import torch\nimport vizlib as vz",
    "def linear(x, w, b):\n    return w * x + b\n\n\nvz.explore(linear, x=2.0, w=3.0, b=1.0)",
    "vz.replay(vz.graph(linear, torch.tensor(2.0), torch.tensor(3.0), torch.tensor(1.0)))",
]
VIEWS = 2  # the live views above
SVG_PICTURE = ".jp-OutputArea-output img[src^='data:image/svg+xml']"


def saved_notebook(path) -> dict:
    """The notebook on disk; an empty one while the server is still writing it (read again)."""
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError:  # caught between the server's truncation and its write
        return {"cells": [], "metadata": {}}


def saved_outputs(path) -> list[list[str]]:
    """The MIME types of each output the file on disk holds, in order."""
    cells = saved_notebook(path)["cells"]
    return [sorted(o.get("data", {})) for c in cells for o in c.get("outputs", []) if o["output_type"] != "stream"]


def toolbar_button(page, command: str):
    return page.locator(f".jp-NotebookPanel-toolbar jp-button[data-command='{command}']")


def shut_down_kernels(page, lab) -> None:
    """What stopping the Lab does to a notebook's kernel: gone, with its widget models."""
    auth = {"Authorization": f"token {lab.token}"}
    for session in page.request.get(f"{lab.url}/api/sessions", headers=auth).json():
        assert page.request.delete(f"{lab.url}/api/sessions/{session['id']}", headers=auth).ok
    assert page.request.get(f"{lab.url}/api/kernels", headers=auth).json() == []


def test_a_saved_live_view_reopens_as_its_picture(browser, repo_lab, tmp_path):
    path = repo_lab.folder / NAME
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)

    with notebook_run(browser, repo_lab, NAME) as (page, errors):
        live = page.locator(".vizlib-explore .vizlib-graph svg, .vizlib-replay .vizlib-graph svg")
        expect(live).to_have_count(VIEWS, timeout=WAIT_MS)
        toolbar_button(page, "docmanager:save").click()
        wait_until(
            lambda: saved_outputs(path),
            lambda outputs: len(outputs) == VIEWS,
            "the Lab to save the run notebook",
        )
        # The open notebook keeps its live views: a slider still redraws.
        explorer = page.locator(".vizlib-explore")
        handle = explorer.locator(".widget-slider .noUi-handle").first
        handle.focus()
        handle.press("ArrowRight")
        expect(explorer.locator(".widget-readout").first).to_have_text("2.1", timeout=WAIT_MS)
        expect(explorer.locator(".vizlib-graph svg g.node", has_text="= 2.1")).to_have_count(1, timeout=WAIT_MS)
        # A later save (the autosave's) goes through without a "File Changed" dialog.
        page.locator(".jp-CodeCell .jp-InputPrompt").first.click()
        toolbar_button(page, "notebook:run-cell-and-select-next").click()
        expect(page.locator(".jp-CodeCell .jp-InputPrompt").first).to_have_text("[4]:", timeout=WAIT_MS)
        toolbar_button(page, "docmanager:save").click()
        wait_until(
            lambda: [cell["execution_count"] for cell in saved_notebook(path)["cells"][:1]],
            lambda counts: counts == [4],
            "the second save (the first cell run again)",
        )
        expect(page.locator(".jp-Dialog")).to_have_count(0)
        shut_down_kernels(page, repo_lab)
        assert not errors, errors

    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    try:
        open_notebook(page, repo_lab, NAME)  # a fresh kernel, with no widget model of the run
        pictures = page.locator(SVG_PICTURE)
        expect(pictures).to_have_count(VIEWS, timeout=WAIT_MS)
        sizes = pictures.evaluate_all("imgs => imgs.map(i => [i.naturalWidth, i.naturalHeight])")
        assert all(w > 50 and h > 50 for w, h in sizes), sizes
        expect(page.locator(".jp-OutputArea-output", has_text="Error displaying widget")).to_have_count(0)
        expect(page.locator(".jp-OutputArea-output", has_text="Loading widget")).to_have_count(0)
        page.locator(".jp-OutputArea-output").nth(1).scroll_into_view_if_needed()
        page.screenshot(path=str(tmp_path / "reopened.png"))
        print(f"screenshot: {tmp_path / 'reopened.png'}")
    finally:
        context.close()
    # What the file holds: each view's picture and text, without the widget's part or state.
    assert saved_outputs(path) == [["image/svg+xml", "text/plain"]] * VIEWS
    assert "widgets" not in json.loads(path.read_text())["metadata"]
    assert WIDGET_VIEW not in path.read_text()
