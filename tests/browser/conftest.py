"""Fixtures for the browser tests: a real JupyterLab started the way `make lab` starts it,
on a temporary copy of course/ (the stored notebooks are never modified), and Playwright
pointed at Debian's Chromium.

Under pytest-xdist each worker that runs browser tests starts its own server.
"""

from __future__ import annotations

import json
import shutil

import pytest

from harness.lab_session import CHROMIUM_ARGS, chromium, lab_server
from harness.paths import REPO


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """pytest-playwright hook: Debian's chromium, headless (launch() already uses a fresh profile)."""
    return {**browser_type_launch_args, "executable_path": chromium(), "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    """JupyterLab serving a copy of course/, through scripts/lab.py, in a sandbox."""
    sandbox = tmp_path_factory.mktemp("lab")
    folder = sandbox / "course"
    shutil.copytree(REPO / "course", folder, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    with lab_server(folder, sandbox) as server:
        yield server


@pytest.fixture(scope="session")
def repo_lab(tmp_path_factory):
    """JupyterLab as `make lab` opens it: the top folder (a copy of course/, exercises/ and
    solutions/), landing on the welcome chapter, the course's notebooks trusted."""
    sandbox = tmp_path_factory.mktemp("repo-lab")
    root = sandbox / "repo"
    for name in ("course", "exercises", "solutions"):
        shutil.copytree(REPO / name, root / name, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    with lab_server(root, sandbox, open_first="course/00_welcome.ipynb") as server:
        yield server


# JupyterLab attaches off-screen cells lazily by default; for counting every picture, or for
# finding no output of a kind anywhere, all of them.
NO_WINDOWING = {"@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"}}


@pytest.fixture(scope="session")
def all_cells_attached(repo_lab):
    """repo_lab's user settings (read at each page load), set to attach every cell."""
    settings = repo_lab.folder.parent / "lab-settings"
    for rel, value in NO_WINDOWING.items():
        (settings / rel).parent.mkdir(parents=True, exist_ok=True)
        (settings / rel).write_text(json.dumps(value))
