"""The first chapters on a learner's pip-only setup: no Graphviz `dot` program, Colab's
ipywidgets 7.7, no pygraphviz. Chapters 00-02 must run top to bottom there and still draw
every graph (vizlib falls back to graphviz-pure, the program pip installs with it; see
vizlib/render/engines.py).

The run reuses the ipywidgets 7.7 venv (conftest.py), with PATH cut down to that venv's
own bin folder, and compares each cell's pictures with those the stored notebook shows. A
live view runs as a widget with its static picture beside it, and is stored as that picture
alone (scripts/execute_notebooks.py says why), so the widget itself is left out of the
comparison.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest

from harness.paths import REPO

PROBE = Path(__file__).with_name("chapters_probe.py")
CHAPTERS = ["00_welcome", "01_tensors", "02_autograd"]
PICTURES = {"image/svg+xml", "image/png"}


@pytest.fixture(scope="module")
def ran(ipywidgets_7_7: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in {"PATH", "VIZLIB_RENDERER", "VIRTUAL_ENV", "PYTHONPATH"}}
    env["PATH"] = str(ipywidgets_7_7.parent)
    assert shutil.which("dot", path=env["PATH"]) is None
    paths = [str(REPO / "course" / f"{name}.ipynb") for name in CHAPTERS]
    done = subprocess.run(
        [str(ipywidgets_7_7), str(PROBE), *paths], capture_output=True, text=True, env=env, timeout=500
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout)


def pictures(outputs: list[dict]) -> list[set[str]]:
    """The picture formats of each output that has one."""
    return [kinds for out in outputs if (kinds := set(out.get("data", {})) & PICTURES)]


def test_the_run_is_pip_only_without_dot_on_ipywidgets_7_7(ran):
    assert ran["renderer"] == "graphviz-pure"
    assert ran["pygraphviz"] is False
    assert ran["ipywidgets"].startswith("7.7.")
    assert Path(ran["vizlib"]) == REPO / "vizlib" / "__init__.py"
    venv_bin = Path(ran["python"]).parent
    assert venv_bin.parent.name == "venv" and shutil.which(ran["kernel"], path=str(venv_bin))


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_runs_and_draws_every_picture_the_stored_one_shows(ran, chapter):
    stored = nbformat.read(REPO / "course" / f"{chapter}.ipynb", as_version=4)
    got = ran["notebooks"][str(REPO / "course" / f"{chapter}.ipynb")]["cells"]
    drawn = 0
    for cell in stored.cells:
        if cell.cell_type != "code":
            continue
        outputs = got[cell.id]
        errors = [out["ename"] for out in outputs if out["type"] == "error"]
        assert not errors or "raises-exception" in cell.metadata.get("tags", []), (cell.id, errors)
        assert pictures(outputs) == pictures(cell.outputs), f"{chapter}, cell {cell.id}"
        drawn += len(pictures(outputs))
        for out in outputs:
            svg = out["data"].get("image/svg+xml")
            if svg is not None:  # a graph laid out by Graphviz, not an error in its place
                assert "<svg" in svg and 'class="node"' in svg and "vizlib-error" not in svg, f"{chapter}, {cell.id}"
    assert drawn > 0
