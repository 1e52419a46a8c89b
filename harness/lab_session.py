"""Drive a real JupyterLab from Python: shared by the browser tests and bench/bench_latency.py.

A tool for working on the course from its repository (it needs the `test` extras, for
Playwright), not something a chapter imports.

``lab_server`` starts JupyterLab exactly as ``make lab`` does, through scripts/lab.py, and
reads the URL and token from what the script prints (so a test also proves the printed URL
works). Every Jupyter/IPython directory points into a sandbox folder, so the user's own
settings, workspaces, runtime files and IPython history are never read or touched.
The notebook helpers wait in the order the UI needs, with no wait longer than 60 s.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from playwright.sync_api import Browser, Page, expect

from harness.paths import SCRIPTS

T = TypeVar("T")
LAB_SCRIPT = SCRIPTS / "lab.py"
WAIT_MS = 60_000
URL_LINE = re.compile(
    r"(http://127\.0\.0\.1:\d+)(/lab\S*?)[?&]token=([\w-]{16,})"
)  # not JupyterLab's own masked "token=..." line
# No "get Jupyter news?" toast (it shows even with news_url=None), no update check.
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false", "checkForUpdates": False},
}
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium() -> str:
    """Debian's chromium (Playwright's own browser download is not used)."""
    found = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        raise RuntimeError(
            "The browser tests need Chromium: run `scripts/system_deps.sh test` "
            "(or `apt-get install chromium`), or set CHROMIUM to its path."
        )
    return found


@dataclass
class Lab:
    url: str  # http://127.0.0.1:PORT
    token: str
    landing: str  # the printed URL without its token: /lab?QUERY, or /lab/tree/NOTEBOOK?QUERY with --open
    folder: Path  # what the server serves
    proc: subprocess.Popen  # scripts/lab.py
    log: Path


def sandbox_env(sandbox: Path) -> dict[str, str]:
    """The environment for JupyterLab with every Jupyter/IPython directory inside ``sandbox``."""
    settings = sandbox / "lab-settings"
    for rel, value in LAB_SETTINGS.items():
        f = settings / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(value))
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(sandbox / "config"),
        "JUPYTER_DATA_DIR": str(sandbox / "data"),
        "JUPYTER_RUNTIME_DIR": str(sandbox / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(settings),
        "JUPYTERLAB_WORKSPACES_DIR": str(sandbox / "workspaces"),
        "IPYTHONDIR": str(sandbox / "ipython"),
    }
    env.pop("JUPYTER_TOKEN", None)  # lab.py makes its own
    return env


@contextmanager
def lab_server(folder: Path, sandbox: Path, open_first: str | None = None) -> Iterator[Lab]:
    """JupyterLab serving ``folder``, started by scripts/lab.py (``--open open_first`` if given);
    stopped (by its handle) after."""
    log = sandbox / "lab.log"
    extra = ["--open", open_first] if open_first else []
    with open(log, "w") as out:
        proc = subprocess.Popen(
            # (no --port: lab.py chooses one, and chooses again if another program takes it first)
            [sys.executable, str(LAB_SCRIPT), str(folder), "--no-browser", *extra],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=sandbox_env(sandbox),
        )
        try:
            url, landing, token = _wait_for_url(proc, log)
            yield Lab(url=url, token=token, landing=landing, folder=folder, proc=proc, log=log)
        finally:
            proc.terminate()  # lab.py passes it on to JupyterLab
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _wait_for_url(proc: subprocess.Popen, log: Path) -> tuple[str, str, str]:
    deadline = time.monotonic() + WAIT_MS / 1000
    while time.monotonic() < deadline and proc.poll() is None:
        if m := URL_LINE.search(log.read_text()):
            return m.group(1), m.group(2), m.group(3)
        time.sleep(0.2)
    raise RuntimeError(f"scripts/lab.py printed no URL within {WAIT_MS // 1000} s:\n{log.read_text()[-3000:]}")


def open_notebook(page: Page, lab: Lab, name: str) -> None:
    """Open ``name`` alone (``?reset``: a fresh workspace, without the notebooks earlier pages
    left open) and wait until its kernel is really there.

    The execution indicator says 'idle' before any kernel exists ("No Kernel"); running
    cells then pops a "Select Kernel" dialog. So wait for the kernel's name first.
    """
    page.goto(f"{lab.url}/lab/tree/{name}?reset&token={lab.token}")
    expect(page.locator(".jp-NotebookPanel")).to_be_visible(timeout=WAIT_MS)
    expect(page.locator(".jp-NotebookPanel-toolbar .jp-Toolbar-kernelName")).not_to_have_text(
        "No Kernel", timeout=WAIT_MS
    )
    expect(page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']")).to_be_attached(timeout=WAIT_MS)


def run_all(page: Page) -> None:
    """Run → Run All Cells, then wait until every code cell has an execution count."""
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
    page.wait_for_function(
        """() => {
            const prompts = [...document.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')];
            return prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
        }""",
        timeout=WAIT_MS,
    )
    expect(page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']")).to_be_attached(timeout=WAIT_MS)


@contextmanager
def notebook_run(browser: Browser, lab: Lab, name: str) -> Iterator[tuple[Page, list[str]]]:
    """A page as wide as a laptop's Lab with notebook ``name`` opened and run from the top,
    and the JavaScript errors the page raised (a test asserts there are none); closed after."""
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        open_notebook(page, lab, name)
        run_all(page)
        yield page, errors
    finally:
        context.close()


def wait_until(read: Callable[[], T], ok: Callable[[T], bool], what: str, timeout_s: float = 30) -> T:
    """Poll ``read()`` until ``ok`` accepts what it returned; fail with the last value seen."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = read()
        if ok(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}; last seen: {value!r}")
        time.sleep(0.1)
