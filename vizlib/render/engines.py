"""Which Graphviz lays the picture out: the ``dot`` program, the one pip installed, or the browser.

Colab, VS Code, a plain venv, a slim container or a GPU server often have no ``dot`` program,
and a learner cannot always ``apt-get install`` one. So vizlib tries, in this order, at each
drawing:

1. ``dot``: Graphviz's program on PATH (apt, brew, conda), the one the course's stored
   pictures were drawn with;
2. ``graphviz-pure``: a port of Graphviz 16.1 to Rust, one statically linked program that
   installing vizlib brings along (pip's ``graphviz-pure`` wheel). It needs no library from
   the system, not even the C library, so it runs where only glibc (or nothing) is present;
3. ``pygraphviz``: Graphviz's C libraries inside the ``pygraphviz`` wheel, where a learner
   installed it (vizlib no longer asks for it: its Linux wheel needs glib and X libraries from
   the system, which slim containers and GPU servers lack);
4. ``browser``: no Graphviz in Python at all (a platform with none of these wheels, Pyodide).
   Jupyter's front-end lays the DOT out with Graphviz compiled to WebAssembly, shipped inside
   vizlib (``vizlib/render/wasm``); files and live views need one of the first three.

``vz.renderer()`` says which one draws now. ``VIZLIB_RENDERER=dot|graphviz-pure|pygraphviz|browser``
picks one instead (to compare them, or to test a fallback); naming one that is not available
is an error that says why. A renderer that is installed but cannot run here (pygraphviz
without the system libraries it links to) is passed over with a warning that names what it
lacks, and the same words end the error of a drawing that then finds no Graphviz at all.
bench/RESULTS.md has their times, install sizes and the libraries each needs.
"""

from __future__ import annotations

import importlib.util
import io
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr
from importlib import metadata
from importlib.machinery import ModuleSpec
from pathlib import Path
from typing import IO

from ..errors import VizlibError

ENGINES = ("dot", "graphviz-pure", "pygraphviz", "browser")
ENV = "VIZLIB_RENDERER"
PURE = "graphviz-pure"
# What graphviz-pure 0.2 writes of the formats vizlib saves (it has no PDF yet).
PURE_FORMATS = {"svg", "png"}
INSTALL_HINT = (
    "Install Graphviz: `pip install graphviz-pure` (one program that needs no system library: Linux x86-64 "
    "and ARM, macOS, Windows), `sudo apt-get install graphviz` (Debian/Ubuntu), `brew install graphviz` "
    "(macOS), or `conda install -c conda-forge graphviz`; then restart the kernel. g.to_dot() works without it."
)

# Why an installed renderer cannot be used (None: it can), found out once per program or
# package: probing runs the program, or tries to load the library and asks ldd what it lacks.
_checked: dict[str, str | None] = {}
_warned: set[str] = set()


def renderer() -> str:
    """The name of what lays out vizlib's pictures now: ``"dot"``, ``"graphviz-pure"``,
    ``"pygraphviz"`` or ``"browser"``. One that is installed but cannot run here is passed
    over with a warning that says what it lacks."""
    wanted = os.environ.get(ENV, "").strip()
    if wanted:
        if wanted not in ENGINES:
            raise VizlibError(f"{ENV}={wanted!r} is not a renderer vizlib knows: use one of {', '.join(ENGINES)}.")
        why = why_not(wanted)
        if why is not None:
            raise VizlibError(f"{ENV}={wanted} was asked for, but {why} Unset {ENV} to let vizlib choose.")
        return wanted
    for name in ENGINES[:-1]:
        why = why_not(name)
        if why is None:
            return name
        if _installed(name) and why not in _warned:
            _warned.add(why)
            warnings.warn(f"{why} vizlib draws without it.", UserWarning, stacklevel=2)
    return "browser"


def why_not(name: str) -> str | None:
    """None if ``name`` can draw here, else one sentence saying why it cannot."""
    if name == "dot":
        return None if shutil.which("dot") else "`dot` is not on PATH."
    if name == PURE:
        exe = graphviz_pure_program()
        if exe is None:
            return "graphviz-pure is not installed (`pip install graphviz-pure`)."
        if exe not in _checked:
            _checked[exe] = _pure_fails(exe)
        return _checked[exe]
    if name == "pygraphviz":
        spec = _pygraphviz_spec()
        if spec is None or spec.origin is None:
            return "pygraphviz is not installed."
        if spec.origin not in _checked:
            _checked[spec.origin] = _pygraphviz_fails(spec.origin)
        return _checked[spec.origin]
    return None


def _installed(name: str) -> bool:
    """Whether ``name`` is here at all (a program or package), whether or not it runs."""
    if name == PURE:
        return graphviz_pure_program() is not None
    if name == "pygraphviz":
        return _pygraphviz_spec() is not None
    return False  # `dot` is a program on PATH or nothing; the browser is always here


def graphviz_pure_program() -> str | None:
    """The path of the ``graphviz-pure`` program installed with this Python's distribution of it
    (found through its files, so a kernel whose venv is not on PATH finds it too), else on PATH."""
    names = (PURE, f"{PURE}.exe")
    for dist in metadata.distributions(name=PURE):
        site = Path(str(dist.locate_file("")))
        recorded = [Path(str(dist.locate_file(f))) for f in dist.files or [] if f.name in names]
        # `pip install --target DIR` records a script at a path it did not put it: DIR/bin.
        beside = [site / folder / name for folder in ("bin", "Scripts") for name in names]
        for path in (*recorded, *beside):
            if path.is_file():
                return str(path.resolve())
    return shutil.which(PURE)  # e.g. installed with pipx or uv tool


def _pure_fails(exe: str) -> str | None:
    """Run the program once: a wheel of another machine or a folder mounted noexec fails here."""
    try:
        proc = subprocess.run([exe, "-V"], capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as err:
        return f"graphviz-pure is installed ({exe}) but cannot run here: {err}."
    if proc.returncode != 0:
        said = proc.stderr.decode(errors="replace").strip()
        return f"graphviz-pure is installed ({exe}) but `graphviz-pure -V` failed: {said}."
    return None


def _pygraphviz_spec() -> ModuleSpec | None:
    """Where pygraphviz would be imported from, without importing it (None: not installed, or
    its import blocked by a None in sys.modules)."""
    try:
        return importlib.util.find_spec("pygraphviz")
    except (ImportError, ValueError):
        return None


def _pygraphviz_fails(origin: str) -> str | None:
    try:
        import pygraphviz  # noqa: F401
    except ImportError as err:  # its extension module links to a library this system lacks
        return f"pygraphviz is installed but cannot load: {missing_libraries(err, Path(origin).parent)}"
    except OSError as err:  # a library found but unusable (wrong architecture, truncated)
        return f"pygraphviz is installed but cannot load: {err}."
    return None


_NOT_FOUND = re.compile(r"^\s*(\S+) => not found$", re.M)
_DLOPEN = re.compile(r"([\w.+-]+\.so[.\d]*): cannot open shared object file|Library not loaded: \S*?([\w.+-]+\.dylib)")


def missing_libraries(err: BaseException, package: Path) -> str:
    """What a compiled module that failed to load lacks, in words: every system library its
    extension links to that the dynamic linker cannot find (``ldd``, where there is one), else
    the one the loader named first."""
    missing = _ldd_not_found(package)
    if not missing:
        missing = [next(name for name in m.groups() if name) for m in _DLOPEN.finditer(str(err))]
    if not missing:
        return f"{type(err).__name__}: {err}."
    names = list(dict.fromkeys(missing))
    what, install = ("library", "package that provides it") if len(names) == 1 else ("libraries", "packages")
    return (
        f"the system {what} {', '.join(names)} {'is' if len(names) == 1 else 'are'} missing "
        f"({type(err).__name__}: {err}). Install the system {install}, or `pip install graphviz-pure` (it needs none)."
    )


def _ldd_not_found(package: Path) -> list[str]:
    """The libraries ``ldd`` cannot find for the extension modules in ``package`` (Linux)."""
    ldd = shutil.which("ldd") or shutil.which("ldd", path="/usr/bin:/bin")  # a kernel's PATH may lack it
    if ldd is None:
        return []
    missing: list[str] = []
    for ext in sorted(package.glob("*.so")):
        out = subprocess.run([ldd, str(ext)], capture_output=True, text=True, timeout=30).stdout
        missing += _NOT_FOUND.findall(out)
    return missing


def dot_to(dot_source: str, fmt_name: str) -> bytes:
    """Lay ``dot_source`` out with the native renderer; bytes of the requested format."""
    name = renderer()
    if name == "dot":
        exe = shutil.which("dot")
        if exe is None:  # removed from PATH since renderer() looked
            raise VizlibError("Graphviz's `dot` program was not found on PATH. " + INSTALL_HINT)
        return _run_program(exe, "dot", dot_source, fmt_name)
    if name == PURE:
        exe = graphviz_pure_program()
        if exe is None:  # uninstalled since renderer() looked
            raise VizlibError("graphviz-pure was not found. " + INSTALL_HINT)
        if fmt_name not in PURE_FORMATS:
            raise VizlibError(
                f"graphviz-pure, the Graphviz that draws here, cannot write {fmt_name.upper()} yet: save as "
                f".svg or .png, or install Graphviz's `dot` program (`sudo apt-get install graphviz`, "
                "`brew install graphviz`, `conda install -c conda-forge graphviz`) and restart the kernel."
            )
        return _run_program(exe, PURE, dot_source, fmt_name)
    if name == "pygraphviz":
        return _run_pygraphviz(dot_source, fmt_name)
    if os.environ.get(ENV, "").strip() == "browser":  # asked for, not the last resort
        raise VizlibError(
            f"{ENV}=browser is set: vizlib lays pictures out only in Jupyter's front-end (displaying the graph), "
            f"not to {fmt_name.upper()} or in live views. Unset {ENV} to draw with the Graphviz installed here."
        )
    reasons = " ".join(why for engine in ENGINES[:-1] if (why := why_not(engine)))
    raise VizlibError(
        f"No Graphviz in this Python, so vizlib can draw only in Jupyter's front-end (displaying the graph), "
        f"not to {fmt_name.upper()} or in live views. {reasons} {INSTALL_HINT}".replace("  ", " ")
    )


def _run_program(exe: str, name: str, dot_source: str, fmt_name: str) -> bytes:
    proc = subprocess.run([exe, f"-T{fmt_name}"], input=dot_source.encode(), capture_output=True)
    if proc.returncode != 0:
        raise VizlibError(f"Graphviz's {name} failed: {failure(proc.returncode, proc.stderr)}")
    return proc.stdout


def failure(returncode: int, stderr: bytes) -> str:
    """Why a renderer process failed, in words: the signal that ended it (and what that
    usually means), what it wrote to stderr, and what to do about a graph too big to lay out."""
    said = stderr.decode(errors="replace").strip()
    if returncode < 0:
        try:
            sig = signal.Signals(-returncode).name
        except ValueError:
            sig = f"signal {-returncode}"
        why = f"it was killed by {sig}"
        if sig in ("SIGKILL", "SIGSEGV", "SIGABRT", "SIGBUS"):
            why += ", which for a big graph usually means it ran out of memory"
    else:
        why = f"it exited with status {returncode}"
    if "out of memory" in said.lower() or "cannot allocate" in said.lower():
        why += " (out of memory)"
    said = f"; it said: {said}" if said else "; it wrote nothing to stderr"
    return (
        f"{why}{said}. If the graph is big, draw fewer nodes: vz.graph(..., depth=1) or a smaller max_nodes= "
        "(the default, 150, folds modules and loops)."
    )


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
