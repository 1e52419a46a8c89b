"""`make lab` opens the course where learners are: the top folder in the file browser,
landing on the welcome chapter; each chapter's "Next: exercises/..." link opens its exercise
notebook, which shows no verdict before anything runs; and a chapter opened fresh, before
any cell runs, shows its stored graph pictures (JupyterLab draws SVG only for trusted
notebooks, and scripts/lab.py trusts the course's own).

One page for the whole module: it loads the Lab once from the URL scripts/lab.py printed,
then opens chapters from the file browser, as a learner does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from harness.lab_session import WAIT_MS, wait_until
from harness.paths import REPO

pytestmark = pytest.mark.browser

LANDING = "course/00_welcome.ipynb"
# A graph's picture as JupyterLab shows it: an <img> of image/svg+xml output, or inline
# SVG (a widget's HTML, or an HTML output) with Graphviz's node groups in it; not the still
# copy beside a graph's inline SVG, which only an untrusted notebook shows.
PICTURES = (
    ".jp-OutputArea-output img[src^='data:image/svg+xml']:not(.vizlib-still *), .jp-OutputArea-output svg:has(g.node)"
)


@contextmanager
def new_page(browser: Browser, url: str) -> Iterator[Page]:
    """A page as wide as a laptop's Lab, at ``url``; closed after."""
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    try:
        page.goto(url)
        yield page
    finally:
        context.close()


@pytest.fixture(scope="module")
def lab_page(browser, repo_lab):
    """The page a learner sees after opening the URL `make lab` printed (a fresh workspace)."""
    with new_page(browser, f"{repo_lab.url}{repo_lab.landing}&reset&token={repo_lab.token}") as page:
        yield page


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
    assert repo_lab.landing == f"/lab/tree/{LANDING}?file-browser-path=/"
    expect_open(lab_page, LANDING)
    auth = {"Authorization": f"token {repo_lab.token}"}
    root = lab_page.request.get(f"{repo_lab.url}/api/contents", headers=auth)
    assert {"course", "exercises"} <= {item["name"] for item in root.json()["content"]}
    # Where a browser that `make lab` opens by itself lands: the server's default URL.
    home = lab_page.request.get(f"{repo_lab.url}/", headers=auth, max_redirects=0)
    location, landing = urlsplit(home.headers["location"]), urlsplit(repo_lab.landing)
    assert home.status == 302 and location.path == landing.path
    assert parse_qs(location.query) == parse_qs(landing.query)  # the server adds a bare '&'


def test_the_file_browser_opens_at_the_top_folder(browser, repo_lab, tmp_path):
    """With the printed URL as it is (the workspace the earlier pages left included), the file
    browser shows the top folder, course/ and exercises/ in sight, as README says; a notebook
    opened by its URL would otherwise take it to the notebook's own folder, course/."""
    with new_page(browser, f"{repo_lab.url}{repo_lab.landing}&token={repo_lab.token}") as page:
        expect_open(page, LANDING)
        # The Lab applies the URL to the file browser in steps (the top folder, the notebook's
        # folder, the folder asked for), and marks it restoring until the last one is done.
        expect(page.locator(".jp-FileBrowser:not(.jp-mod-restoring)")).to_have_count(1, timeout=WAIT_MS)
        names = page.locator(".jp-FileBrowser .jp-DirListing-item .jp-DirListing-itemText")
        listed = wait_until(
            names.all_inner_texts,
            lambda shown: {"course", "exercises"} <= set(shown),
            "the file browser to list the top folder",
        )
        assert "00_welcome.ipynb" not in listed
        expect(page.locator(".jp-FileBrowser .jp-BreadCrumbs-item", has_text="course")).to_have_count(0)
        page.screenshot(path=str(tmp_path / "landing.png"))
        print(f"screenshot: {tmp_path / 'landing.png'}")


def test_a_fresh_exercise_notebook_shows_no_verdict(browser, repo_lab, all_cells_attached, tmp_path):
    """Before anything runs, no check cell says "Exercise N.M passed" (its answer above still
    raises NotImplementedError); the outputs a task points at ("the cell below shows the
    error") are there."""
    name = "exercises/02_autograd.ipynb"
    cells = json.loads((REPO / name).read_text())["cells"]
    code_cells = sum(cell["cell_type"] == "code" for cell in cells)
    stored = sum(len(cell.get("outputs", [])) for cell in cells)
    assert stored >= 1  # the setup cell of Exercise 2.7 shows the error the task is about
    with new_page(browser, f"{repo_lab.url}/lab/tree/{name}?reset&token={repo_lab.token}") as page:
        panel = expect_open(page, name)
        expect(panel.locator(".jp-CodeCell")).to_have_count(code_cells, timeout=WAIT_MS)  # every cell attached
        error = panel.locator(".jp-OutputArea-output", has_text="modified by an inplace operation")
        expect(error).to_be_visible(timeout=WAIT_MS)
        expect(panel.locator(".jp-OutputArea-output")).to_have_count(stored)
        expect(panel.locator(".jp-OutputArea-output", has_text="passed")).to_have_count(0)
        panel.locator(".jp-Cell").nth(4).scroll_into_view_if_needed()  # Exercise 2.1's check
        page.screenshot(path=str(tmp_path / "exercise.png"))
        print(f"screenshot: {tmp_path / 'exercise.png'}")


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
    expect(panel.locator(".vizlib-still:visible")).to_have_count(0)
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
