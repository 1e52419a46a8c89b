"""vizlib's pictures in a real JupyterLab and Chromium: hovering a node of a plain `vz.graph`
output shows its details (whether Graphviz ran in Python or in the browser), a notebook the
Lab does not trust shows a still copy of its graphs, and in every chapter no picture is wider
than its output area."""

from __future__ import annotations

import nbformat
import pytest
import torch
from playwright.sync_api import Page, expect

import vizlib as vz
from harness.lab_session import WAIT_MS, notebook_run, open_notebook, wait_until
from harness.paths import REPO

pytestmark = pytest.mark.browser

CHAPTERS = sorted(p.name for p in (REPO / "course").glob("*.ipynb"))
CELLS = [
    "import os\nimport torch\nimport vizlib as vz",
    "vz.graph(lambda x, w: (w * x).sum(), torch.ones(2, 3), torch.ones(2, 3))",
    # Twelve branches side by side, each with its saved tensors: far wider than the output.
    "vz.graph(lambda x: sum((x * k).exp() for k in range(12)).sum(), torch.ones(64, 64), show_saved=True)",
    'os.environ["VIZLIB_RENDERER"] = "browser"  # as where Python has no Graphviz\n'
    "vz.graph(lambda x, b: (x + b).tanh().sum(), torch.ones(3), torch.ones(3))",
]
# The <title> nearest to what the pointer is over: the text the browser shows on hover.
TOOLTIP_AT_JS = """([x, y]) => {
    for (let el = document.elementFromPoint(x, y); el; el = el.parentElement) {
        const title = [...el.children].find(c => c.tagName.toLowerCase() === 'title');
        if (title) return title.textContent;
    }
    return null;
}"""
# Every picture in the notebook's outputs: its width and its output area's, scrolled into view.
OVERFLOW_JS = """el => {
    el.scrollIntoView({block: 'center'});
    const area = el.closest('.jp-OutputArea-output');
    return {width: el.getBoundingClientRect().width, room: area.clientWidth, what: el.outerHTML.slice(0, 80)};
}"""
# (a graph's still copy is shown only where the notebook is not trusted: not in these Labs)
PICTURES = ".jp-OutputArea-output :is(.vizlib-graph svg, img):not(.vizlib-still *)"


def stored_pictures(chapter: str) -> int:
    """How many pictures the chapter's stored outputs hold (a live view without its kernel shows
    the picture it stored beside the widget)."""
    nb = nbformat.read(REPO / "course" / chapter, as_version=4)
    data = [o.get("data", {}) for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    return sum(
        'class="vizlib-graph"' in d.get("text/html", "") or "image/png" in d or "image/svg+xml" in d for d in data
    )


@pytest.fixture(scope="module")
def pictures(browser, repo_lab):
    """A small notebook of graphs, run in the lab of `make lab`."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, repo_lab.folder / "pictures.ipynb")
    with notebook_run(browser, repo_lab, "pictures.ipynb") as (page, errors):
        yield page, errors


def hover_tooltip(page: Page, output: int, node_name: str) -> str | None:
    """Move the pointer onto the node whose first label line is ``node_name``; the tooltip there."""
    graph = page.locator(".jp-OutputArea-output .vizlib-graph").nth(output)
    node = graph.locator("svg g.node").filter(has=page.locator("text", has_text=node_name)).first
    node.scroll_into_view_if_needed()
    box = node.bounding_box()
    assert box, f"node {node_name} is not drawn"
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    return page.evaluate(TOOLTIP_AT_JS, [x, y])


def test_hovering_a_node_shows_its_details(pictures):
    page, errors = pictures
    expect(page.locator(".vizlib-graph svg")).to_have_count(3, timeout=WAIT_MS)
    tip = hover_tooltip(page, 0, "w")
    assert tip and tip.startswith("w (leaf)"), tip
    assert "shape: 2×3" in tip and "dtype: float32" in tip and "grad" in tip
    op_tip = hover_tooltip(page, 0, "MulBackward0")
    assert op_tip and op_tip.startswith("MulBackward0 (op)") and "forward: mul" in op_tip
    expect(page.locator(".vizlib-still").first).to_be_hidden()  # the copy for an untrusted notebook
    assert not errors, errors


def test_an_untrusted_notebook_shows_a_still_copy_of_each_graph(browser, repo_lab):
    """A stored graph opened where the notebook is not trusted (an instructor's copy of a
    submission, a colleague's notebook): the Lab's sanitizer drops inline SVG and leaves its
    text, every tooltip run together; the output's still copy is shown instead. A cell run
    again (as the copy's note says) shows its live picture, and the other cells' copies stay:
    its <style> holds for the whole page."""
    g = vz.graph(lambda x, w: (w * x).sum(), torch.ones(2, 3), torch.ones(2, 3))
    code = "import torch, vizlib as vz\nvz.graph(lambda x, w: (w * x).sum(), torch.ones(2, 3), torch.ones(2, 3))"
    cells = [
        nbformat.v4.new_code_cell(
            code,
            outputs=[nbformat.v4.new_output("execute_result", data=g._repr_mimebundle_(), execution_count=n)],
            execution_count=n,
        )
        for n in (1, 2)
    ]
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, repo_lab.folder / "untrusted.ipynb")  # written after the Lab trusted the course
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    try:
        open_notebook(page, repo_lab, "untrusted.ipynb")
        first, second = (page.locator(".jp-CodeCell").nth(k).locator(".jp-OutputArea-output") for k in (0, 1))
        still = first.locator(".vizlib-still img")
        expect(still).to_be_visible(timeout=WAIT_MS)
        assert wait_until(lambda: still.evaluate("img => img.naturalWidth"), lambda w: w > 0, "the image to load")
        expect(first.locator(".vizlib-live")).to_be_hidden()
        shown = first.inner_text()
        assert "shape: 2×3" not in shown and "vizlib-live" not in shown, shown[:500]  # no tooltip, no CSS
        assert "not trusted" in shown and "hover a node" in shown
        page.locator(".jp-CodeCell").first.click()
        page.keyboard.press("Shift+Enter")  # its new output is trusted
        expect(first.locator(".vizlib-live svg")).to_be_visible(timeout=WAIT_MS)
        expect(first.locator(".vizlib-still")).to_be_hidden()
        expect(second.locator(".vizlib-still img")).to_be_visible()
        expect(second.locator(".vizlib-live")).to_be_hidden()
    finally:
        context.close()


def test_the_browser_lays_the_graph_out_where_python_cannot(pictures):
    page, errors = pictures
    laid_out = page.locator(".vizlib-browser-layout svg")
    expect(laid_out).to_have_count(1, timeout=WAIT_MS)
    tip = hover_tooltip(page, 2, "TanhBackward0")
    assert tip and tip.startswith("TanhBackward0 (op)") and "shape: 3" in tip, tip
    assert page.locator(".vizlib-legend").nth(2).inner_text().startswith("leaf")
    assert not errors, errors


def test_a_wide_graph_is_scaled_to_the_output(pictures, tmp_path):
    page, _ = pictures
    wide = page.locator(".jp-OutputArea-output .vizlib-graph svg").nth(1)
    wide.scroll_into_view_if_needed()
    page.screenshot(path=str(tmp_path / "wide.png"))
    print(f"screenshot: {tmp_path / 'wide.png'}")
    natural = float(wide.get_attribute("width").removesuffix("pt")) * 4 / 3
    size = wide.evaluate(OVERFLOW_JS)
    assert natural > size["room"], "the test graph must be wider than the output"
    assert 0 < size["width"] <= size["room"], size


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_no_picture_is_wider_than_its_output(browser, repo_lab, all_cells_attached, chapter):
    """The chapters' stored outputs, as a learner first sees them (the course is trusted)."""
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    try:
        # ?reset: a workspace of its own, without the notebooks earlier tests left open
        page.goto(f"{repo_lab.url}/lab/tree/course/{chapter}?reset&token={repo_lab.token}")
        panel = page.locator(".jp-NotebookPanel")
        expect(panel).to_be_visible(timeout=WAIT_MS)
        pictures = panel.locator(PICTURES)
        expected = stored_pictures(chapter)
        wait_until(
            pictures.count,
            lambda n: n == expected,
            f"the {expected} stored pictures of {chapter} to be shown",
        )
        sizes = [
            wait_until(  # a cell scrolled into view is laid out (and its image decoded) a moment later
                lambda k=k: pictures.nth(k).evaluate(OVERFLOW_JS),
                lambda size: size["width"] > 0 and size["room"] > 0,
                f"picture {k} of {chapter} to be drawn",
                timeout_s=15,
            )
            for k in range(pictures.count())
        ]
        too_wide = [size for size in sizes if size["width"] > size["room"] + 0.5]
        assert not too_wide, too_wide
    finally:
        context.close()
