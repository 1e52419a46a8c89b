"""Run Graphviz's ``dot`` program: DOT text -> SVG, PNG or PDF bytes, and files by suffix.

The one place that starts a process. A missing ``dot`` or a failing one becomes a
VizlibError that says how to install Graphviz, never a FileNotFoundError from deep
inside ``subprocess``.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from ..data import GraphData
from ..errors import VizlibError, VizlibValueError
from .dot import to_dot

SUFFIX_FORMAT = {".svg": "svg", ".png": "png", ".pdf": "pdf", ".dot": None}


def dot_to(dot_source: str, fmt_name: str) -> bytes:
    """Run Graphviz's ``dot`` on DOT text; bytes of the requested format."""
    exe = shutil.which("dot")
    if exe is None:
        raise VizlibError(
            "Graphviz's `dot` program was not found on PATH; vizlib needs it to draw. Install it: "
            "`sudo apt-get install graphviz` (Debian/Ubuntu), `brew install graphviz` (macOS), or "
            "`conda install -c conda-forge graphviz`; then restart the kernel. g.to_dot() works without it."
        )
    proc = subprocess.run([exe, f"-T{fmt_name}"], input=dot_source.encode(), capture_output=True)
    if proc.returncode != 0:
        raise VizlibError(f"Graphviz's dot failed: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout


def to_svg(g: GraphData) -> str:
    """The picture of ``g`` as SVG text."""
    return dot_to(to_dot(g), "svg").decode()


def save(g: GraphData, path: Path) -> Path:
    """Write ``g`` to ``path`` in the format its suffix names."""
    suffix = path.suffix.lower()
    if suffix not in SUFFIX_FORMAT:
        raise VizlibValueError(
            f"Cannot save a graph as '{path.suffix or path.name}': use one of " + ", ".join(SUFFIX_FORMAT) + "."
        )
    fmt_name = SUFFIX_FORMAT[suffix]
    dot_source = to_dot(g)
    data = dot_source.encode() if fmt_name is None else dot_to(dot_source, fmt_name)
    path.write_bytes(data)
    return path
