"""DOT text -> SVG, PNG or PDF bytes, and files by suffix, through whichever Graphviz is here.

``engines`` picks it (the ``dot`` program, else graphviz-pure, else pygraphviz). No Graphviz
at all becomes a VizlibError that says how to install one, never a FileNotFoundError from
deep inside ``subprocess``.
"""

from __future__ import annotations

from pathlib import Path

from ..data import GraphData
from ..errors import VizlibValueError
from .dot import to_dot
from .engines import dot_to

SUFFIX_FORMAT = {".svg": "svg", ".png": "png", ".pdf": "pdf", ".dot": None}


def to_svg(g: GraphData) -> str:
    """The picture of ``g`` as SVG text."""
    return dot_to(to_dot(g), "svg").decode()


def save(g: GraphData, path: Path) -> Path:
    """Write ``g`` to ``path`` in the format its suffix names."""
    suffix = path.suffix.lower()
    if path.name.lower() in SUFFIX_FORMAT:  # '.svg' alone is a hidden file's name, with no suffix
        named = path.with_name("graph" + path.name)
        raise VizlibValueError(
            f"Cannot save the graph as {path}: '{path.name}' is a file name with no suffix (a name that starts "
            f"with a dot is all name), so it names no format. Give the file a name, e.g. {named}."
        )
    if suffix not in SUFFIX_FORMAT:
        raise VizlibValueError(
            f"Cannot save a graph as '{path.suffix or path.name}': use one of " + ", ".join(SUFFIX_FORMAT) + "."
        )
    if path.is_dir():
        raise VizlibValueError(
            f"Cannot save the graph as {path}: that is a folder. Name a file in it, e.g. {path / 'graph.svg'}."
        )
    if not path.parent.is_dir():
        raise VizlibValueError(
            f"Cannot save the graph as {path}: the folder {path.parent} does not exist. "
            f"Create it first (Path({str(path.parent)!r}).mkdir(parents=True)) or save elsewhere."
        )
    fmt_name = SUFFIX_FORMAT[suffix]
    dot_source = to_dot(g)
    data = dot_source.encode() if fmt_name is None else dot_to(dot_source, fmt_name)
    path.write_bytes(data)
    return path
