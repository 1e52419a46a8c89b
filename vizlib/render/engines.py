"""Which Graphviz lays the picture out: the ``dot`` program, the one pip installed, or the browser.

Colab, VS Code and a plain venv often have no ``dot`` program, and a learner cannot always
``apt-get install`` one. So vizlib tries, in this order, at each drawing:

1. ``dot``: Graphviz's program on PATH (apt, brew, conda), the one the course's stored
   pictures were drawn with;
2. ``pygraphviz``: Graphviz's libraries bundled in the ``pygraphviz`` wheel that installing
   vizlib brings along, run inside this process;
3. ``browser``: no Graphviz in Python at all (a platform without that wheel, Pyodide). Jupyter's
   front-end lays the DOT out with Graphviz compiled to WebAssembly, shipped inside vizlib
   (``vizlib/render/wasm``); files and live views need one of the first two.

``vz.renderer()`` says which one draws now. ``VIZLIB_RENDERER=dot|pygraphviz|browser`` picks
one instead (to compare them, or to test a fallback); naming one that is not available is
an error that says why. bench/RESULTS.md has their times and install sizes.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr
from typing import IO

from ..errors import VizlibError

ENGINES = ("dot", "pygraphviz", "browser")
ENV = "VIZLIB_RENDERER"
INSTALL_HINT = (
    "Install Graphviz: `pip install pygraphviz` (wheels for Linux, Windows and Apple-silicon macOS), "
    "`sudo apt-get install graphviz` (Debian/Ubuntu), `brew install graphviz` (macOS), or "
    "`conda install -c conda-forge graphviz`; then restart the kernel. g.to_dot() works without it."
)


def renderer() -> str:
    """The name of what lays out vizlib's pictures now: ``"dot"``, ``"pygraphviz"`` or ``"browser"``."""
    wanted = os.environ.get(ENV, "").strip()
    if wanted:
        if wanted not in ENGINES:
            raise VizlibError(f"{ENV}={wanted!r} is not a renderer vizlib knows: use one of {', '.join(ENGINES)}.")
        if not _available(wanted):
            raise VizlibError(f"{ENV}={wanted} was asked for, but {_why_not(wanted)} Unset {ENV} to let vizlib choose.")
        return wanted
    return next(name for name in ENGINES if _available(name))


def _available(name: str) -> bool:
    if name == "dot":
        return shutil.which("dot") is not None
    if name == "pygraphviz":
        try:
            import pygraphviz  # noqa: F401
        except ImportError:
            return False
    return True


def _why_not(name: str) -> str:
    return "`dot` is not on PATH." if name == "dot" else "pygraphviz cannot be imported."


def dot_to(dot_source: str, fmt_name: str) -> bytes:
    """Lay ``dot_source`` out with the native renderer; bytes of the requested format."""
    name = renderer()
    if name == "dot":
        return _run_dot(dot_source, fmt_name)
    if name == "pygraphviz":
        return _run_pygraphviz(dot_source, fmt_name)
    raise VizlibError(
        "No Graphviz in this Python: neither the `dot` program nor pygraphviz was found, so vizlib can draw "
        f"only in Jupyter's front-end (displaying the graph), not to {fmt_name.upper()} or in live views. "
        + INSTALL_HINT
    )


def _run_dot(dot_source: str, fmt_name: str) -> bytes:
    exe = shutil.which("dot")
    if exe is None:  # removed from PATH since renderer() looked
        raise VizlibError("Graphviz's `dot` program was not found on PATH. " + INSTALL_HINT)
    proc = subprocess.run([exe, f"-T{fmt_name}"], input=dot_source.encode(), capture_output=True)
    if proc.returncode != 0:
        raise VizlibError(f"Graphviz's dot failed: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout


def _run_pygraphviz(dot_source: str, fmt_name: str) -> bytes:
    import pygraphviz

    # Graphviz in this process writes its notes ("graph has 3000 nodes...layout may take a
    # long time", fontconfig's complaints) straight to file descriptor 2, which Jupyter shows
    # under the cell. `dot` writes the same to a stderr nobody sees: so here they go to a file,
    # read only to explain a failure.
    with tempfile.TemporaryFile() as notes:
        # pygraphviz itself writes its own note (over 1000 nodes) to sys.stderr.
        with warnings.catch_warnings(), _stderr_to(notes), redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            try:
                data = pygraphviz.AGraph(string=dot_source).draw(format=fmt_name, prog="dot")
                error = None
            except Exception as err:  # pygraphviz raises DotError, ValueError... from Graphviz's messages
                error = err
        if error is not None:
            notes.seek(0)
            said = notes.read().decode(errors="replace").strip()
            raise VizlibError(f"Graphviz (pygraphviz) failed: {error} {said}".strip()) from error
    if not isinstance(data, bytes):
        raise VizlibError(f"Graphviz (pygraphviz) returned no {fmt_name.upper()} data.")
    return data


@contextmanager
def _stderr_to(file: IO[bytes]) -> Iterator[None]:
    """File descriptor 2 sent to ``file`` for a while (as it is where there is none: nothing)."""
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no file descriptor 2 (pythonw): nothing to keep quiet
        yield
        return
    os.dup2(file.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
