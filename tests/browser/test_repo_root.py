"""`make lab` opens the course where learners are: the top folder, landing on the welcome
chapter; each chapter's "Next: exercises/..." link opens its exercise notebook; and a
chapter opened fresh, before any cell runs, shows its stored graph pictures (JupyterLab
draws SVG only for trusted notebooks, and scripts/lab.py trusts the course's own).

One page for the whole module: it loads the Lab once from the URL scripts/lab.py printed,
then opens chapters from the file browser, as a learner does.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Locator, Page, expect

from coursekit.lab_session import REPO, WAIT_MS

pytestmark = pytest.mark.browser

LANDING = "course/00_welcome.ipynb"
# A graph's picture as JupyterLab shows it: an <img> of image/svg+xml output, or inline
# SVG (a widget's HTML, or an HTML output) with Graphviz's node groups in it.
PICTURES = ".jp-OutputArea-output img[src^='data:image/svg+xml'], .jp-OutputArea-output svg:has(g.node)"


@pytest.fixture(scope="module")
def lab_page(browser, repo_lab):
    """The page a learner sees after opening the URL `make lab` printed (a fresh workspace)."""
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    page.goto(f"{repo_lab.url}{repo_lab.landing}?reset&token={repo_lab.token}")
    yield page
    context.close()


def active_tab(page: Page) -> Locator:
    return page.locator("#jp-main-dock-panel .lm-TabBar-tab.jp-mod-current")


def expect_open(page: Page, path: str) -> Locator:
    """Wait until ``path`` is the open notebook (the tab's tooltip has a line 'Path: ...'); its panel."""
    shows_path = re.compile(rf"(^|\n)Path: {re.escape(path)}(\n|$)")
    expect(active_tab(page)).to_have_attribute("title", shows_path, timeout=WAIT_MS)
    panel = page.locator(".jp-NotebookPanel:visible")
    expect(panel.locator(".jp-Cell").first).to_be_visible(timeout=WAIT_MS)
    return panel


def open_from_file_browser(page: Page, path: str) -> Locator:
    """Double-click through the file browser from the top folder to ``path``; its panel."""
    page.locator(".jp-FileBrowser .jp-BreadCrumbs-home").click()
    for name in path.split("/"):
        item = page.locator(".jp-FileBrowser .jp-DirListing-item").filter(
            has=page.locator(".jp-DirListing-itemText", has_text=re.compile(f"^{re.escape(name)}$"))
        )
        item.dblclick()
    return expect_open(page, path)


def stored_pictures(notebook: Path) -> int:
    """How many outputs of ``notebook`` carry a stored picture of a graph (SVG)."""
    cells = json.loads(notebook.read_text())["cells"]
    return sum(
        "image/svg+xml" in out.get("data", {}) or "<svg" in "".join(out.get("data", {}).get("text/html", ""))
        for cell in cells
        for out in cell.get("outputs", [])
    )


def test_printed_url_lands_on_the_welcome_chapter_in_the_top_folder(lab_page, repo_lab):
    assert repo_lab.landing == f"/lab/tree/{LANDING}"
    expect_open(lab_page, LANDING)
    auth = {"Authorization": f"token {repo_lab.token}"}
    root = lab_page.request.get(f"{repo_lab.url}/api/contents", headers=auth)
    assert {"course", "exercises"} <= {item["name"] for item in root.json()["content"]}
    # Where a browser that `make lab` opens by itself lands: the server's default URL.
    home = lab_page.request.get(f"{repo_lab.url}/", headers=auth, max_redirects=0)
    assert home.status == 302 and urlsplit(home.headers["location"]).path == repo_lab.landing


# Two chapters, one per way the links are written ([`exercises/...`](...) and **[exercises/...](...)**);
# tests/test_notebooks.py checks that every chapter ends with its link, to a file that exists.
@pytest.mark.parametrize("chapter", ["01_tensors.ipynb", "02_autograd.ipynb"])
def test_chapter_link_opens_its_exercise_notebook(lab_page, chapter):
    chapter_panel = open_from_file_browser(lab_page, f"course/{chapter}")
    link = chapter_panel.locator(".jp-MarkdownCell a", has_text=f"exercises/{chapter}").last
    link.scroll_into_view_if_needed()
    link.click()
    exercise = expect_open(lab_page, f"exercises/{chapter}")
    expect(exercise.locator(".jp-MarkdownCell", has_text="Exercise").first).to_be_visible(timeout=WAIT_MS)
    expect(lab_page.locator(".jp-Dialog")).to_have_count(0)  # no "File Load Error"


@pytest.mark.parametrize("chapter", ["00_welcome.ipynb", "02_autograd.ipynb"])
def test_chapter_opened_fresh_shows_its_stored_pictures(lab_page, chapter):
    expected = stored_pictures(REPO / "course" / chapter)
    assert expected >= 4  # the chapters picked here draw graphs
    panel = open_from_file_browser(lab_page, f"course/{chapter}")
    pictures = panel.locator(PICTURES)
    expect(pictures).to_have_count(expected, timeout=WAIT_MS)
    # Each picture really drew: an <img> decoded to a size, inline SVG laid out.
    sizes = pictures.evaluate_all(
        """els => els.map(e => e.tagName === 'IMG' ? [e.naturalWidth, e.naturalHeight]
                                                : [e.getBBox().width, e.getBBox().height])"""
    )
    assert all(w > 20 and h > 20 for w, h in sizes), sizes
    # Not the text fallback of a graph (what an untrusted notebook shows instead).
    expect(panel.locator(".jp-OutputArea-output[data-mime-type='text/plain']", has_text="Graph: ")).to_have_count(0)
    expect(panel.locator(".jp-OutputArea-output", has_text="Error displaying widget")).to_have_count(0)


def test_trust_signs_the_course_notebooks_and_skips_a_broken_one(tmp_path, monkeypatch):
    """Without a browser: what scripts/lab.py trusts, and that a broken file does not stop it."""
    import importlib.util

    import nbformat
    from nbformat.sign import NotebookNotary

    spec = importlib.util.spec_from_file_location("lab_script", REPO / "scripts" / "lab.py")
    lab_script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lab_script)
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "data"))
    welcome = nbformat.read(REPO / "course" / "00_welcome.ipynb", 4)
    for name in ("course", "exercises", "elsewhere"):
        (tmp_path / name).mkdir()
        welcome.cells[0].source = f"# a notebook in {name}/"  # signatures go by content
        nbformat.write(welcome, tmp_path / name / "a.ipynb")
    broken = tmp_path / "exercises" / "b.ipynb"
    broken.write_text('{"cells": [')

    assert lab_script.trust_course_notebooks(tmp_path) == 2
    notary = NotebookNotary()
    trusted = {d: notary.check_signature(nbformat.read(tmp_path / d / "a.ipynb", 4)) for d in ("course", "exercises")}
    assert trusted == {"course": True, "exercises": True}
    assert not notary.check_signature(nbformat.read(tmp_path / "elsewhere" / "a.ipynb", 4))
    assert broken.read_text() == '{"cells": ['  # left as it was
