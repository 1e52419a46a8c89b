"""Run chapter notebooks top to bottom in this Python and print what their cells showed, as JSON.

Run by tests/packaging/test_chapters_pip_only.py inside the ipywidgets 7.7 venv, with a PATH
that holds that venv alone, so no Graphviz `dot` program, and no pygraphviz: vizlib draws
with graphviz-pure, the program pip installed with it, as on Colab, in a plain pip-installed
venv or on a machine without glib and X libraries. The notebooks
run in memory, in their own folder as JupyterLab runs them; nothing is written back.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from pathlib import Path

import ipywidgets
import nbformat
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient

import vizlib as vz


def run(path: Path) -> dict:
    """Execute the notebook (a cell that raises stops it, except those tagged raises-exception)."""
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    cells = {
        cell.id: [
            {
                "type": out.output_type,
                "name": out.get("name"),
                "ename": out.get("ename"),
                "data": dict(out.get("data", {})),
            }
            for out in cell.outputs
        ]
        for cell in nb.cells
        if cell.cell_type == "code"
    }
    return {"seconds": round(time.perf_counter() - start, 1), "cells": cells}


if __name__ == "__main__":
    facts = {
        "python": sys.executable,
        "kernel": KernelSpecManager().get_kernel_spec("python3").argv[0],
        "ipywidgets": ipywidgets.__version__,
        "vizlib": vz.__file__,
        "renderer": vz.renderer(),
        "pygraphviz": importlib.util.find_spec("pygraphviz") is not None,
        "notebooks": {name: run(Path(name)) for name in sys.argv[1:]},
    }
    print(json.dumps(facts))
