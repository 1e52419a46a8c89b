"""The venv with ipywidgets 7.7 (Colab's) that several packaging tests run in, built once.

It installs ipywidgets 7.7 and its own front-end packages, and graphviz-pure (a program,
which a symlinked dist-info would not find), and sees torch, numpy, matplotlib and the kernel
through symlinks into the project's venv, and this checkout through a ``.pth`` file
(tests/packaging/venvs.py). It has no pygraphviz. pytest-xdist's workers share
it: the first to ask builds it under a lock, the others wait and reuse it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import tomllib
from filelock import FileLock
from packaging.requirements import Requirement

from harness.paths import REPO

from .venvs import closure, link_distributions, make_venv, pip_install

WIDGET_PACKAGES = {"ipywidgets", "widgetsnbextension", "jupyterlab-widgets"}
PIP_INSTALLED = {"ipywidgets", "graphviz-pure"}  # installed into the venv by pip, not linked


def vizlib_requirements() -> list[Requirement]:
    """vizlib's own dependencies as pyproject.toml declares them, for this machine."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    reqs = [Requirement(line) for line in project["dependencies"]]
    return [r for r in reqs if r.marker is None or r.marker.evaluate()]


@pytest.fixture(scope="session")
def ipywidgets_7_7(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """The python of the ipywidgets 7.7 venv."""
    base = tmp_path_factory.getbasetemp()
    root = (base if worker_id == "master" else base.parent) / "ipywidgets7"
    python = root / "venv" / "bin" / "python"
    with FileLock(f"{root}.lock"):
        if not (root / "ready").exists():
            # The kernel, nbclient, and the notebook server that widgetsnbextension 3.6
            # (ipywidgets 7's) requires.
            reqs = vizlib_requirements()
            names = [r.name for r in reqs if r.name not in PIP_INSTALLED]
            shared = closure([*names, "ipykernel", "notebook-shim", "jupyterlab"])
            assert not WIDGET_PACKAGES & set(shared), "a linked package would bring ipywidgets 8 along"
            assert "pygraphviz" not in shared, "the venv is to have no pygraphviz"
            link_distributions(shared.values(), root / "links")
            make_venv(root / "venv", see=[root / "links", REPO])
            renderer = [str(r) for r in reqs if r.name == "graphviz-pure"]
            installed = pip_install(python, "ipywidgets~=7.7.0", *renderer)
            assert installed.returncode == 0, installed.stderr[-3000:]
            (root / "ready").touch()
    return python
