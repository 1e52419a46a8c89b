"""A chapter runs where there is no `dot` program (Colab, VS Code, a bare venv): its graphs
are drawn by graphviz-pure, the Graphviz program that installing vizlib brings along (found
through the installed distribution, not PATH)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[3]


def test_welcome_chapter_draws_its_graphs_without_dot(monkeypatch, tmp_path):
    python_only = tmp_path / "bin"
    python_only.mkdir()
    os.symlink(sys.executable, python_only / "python")
    monkeypatch.setenv("PATH", str(python_only))  # the kernel inherits it: no `dot` anywhere
    monkeypatch.delenv("VIZLIB_RENDERER", raising=False)
    assert shutil.which("dot") is None

    nb = nbformat.read(REPO / "course" / "00_welcome.ipynb", as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("print(vz.renderer())"))
    # (coalesced: a busy kernel may send one print's text and its newline as two messages)
    NotebookClient(
        nb, timeout=120, kernel_name="python3", coalesce_streams=True, resources={"metadata": {"path": str(tmp_path)}}
    ).execute()

    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error" or o.get("name") == "stderr"]
    assert outputs[-1].text == "graphviz-pure\n"
    drawn = [o.data for o in outputs if "data" in o]
    graphs = [d["text/html"] for d in drawn if d.get("text/plain", "").startswith("Graph:")]
    assert graphs and all('<div class="vizlib-graph"' in h and "</svg>" in h for h in graphs)
    live_views = [d["image/svg+xml"] for d in drawn if "application/vnd.jupyter.widget-view+json" in d]
    assert len(live_views) >= 2 and all("</svg>" in svg for svg in live_views), "explore and replay draw too"
