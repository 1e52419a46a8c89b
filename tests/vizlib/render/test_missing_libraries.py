"""pygraphviz installed on a Linux without glib and X libraries (a slim container, a GPU
server): its wheel cannot load, and vizlib says which system libraries are missing instead
of "no Graphviz found".

The machine is made real for one process: a mount namespace (``unshare -m``, as root) in which
the system's library folder is replaced by a copy of symlinks that lacks libgobject and
libXrender, the two the pygraphviz 2.0.4 wheel takes from the system and such machines lack.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HIDDEN = ("libgobject-2.0.so.0", "libXrender.so.1")
# In the namespace: bind the library folder elsewhere, fill a folder with symlinks to all of
# it but the hidden libraries, and mount that folder over the original.
HIDE = """
set -e
lib="$1"; tmp="$2"; shift 2
mkdir "$tmp/all" "$tmp/view"
mount --bind "$lib" "$tmp/all"
cp -s "$tmp"/all/* "$tmp/view/" 2>/dev/null || true
for name in {hidden}; do rm -f "$tmp/view/$name"*; done
mount --bind "$tmp/view" "$lib"
exec "$@"
"""
PROBE = """
import json, os, warnings
import torch
import vizlib as vz
from vizlib.render import engines
engines.graphviz_pure_program = lambda: None  # as where graphviz-pure has no wheel
os.environ["PATH"] = os.environ["NO_DOT"]
with warnings.catch_warnings(record=True) as said:
    warnings.simplefilter("always")
    chosen = vz.renderer()
try:
    vz.graph(lambda x: (x * 2).sum(), torch.ones(2)).to_svg()
    error = None
except vz.VizlibError as err:
    error = str(err)
print(json.dumps({"renderer": chosen, "warnings": [str(w.message) for w in said], "error": error}))
"""


def system_library_folder() -> Path:
    """The folder the dynamic linker takes libgobject from on this machine."""
    import pygraphviz  # loads here: this machine has the libraries

    [ext] = Path(pygraphviz.__file__).parent.glob("_graphviz*.so")
    out = subprocess.run(["ldd", str(ext)], capture_output=True, text=True, check=True).stdout
    found = re.search(rf"{re.escape(HIDDEN[0])} => (\S+)", out)
    assert found, out
    return Path(found[1]).resolve().parent


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> dict:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare(1) to hide system libraries in a mount namespace (CI runs as root)")
    tmp = tmp_path_factory.mktemp("nolibs")
    lib = system_library_folder()
    hide = HIDE.format(hidden=" ".join(HIDDEN))
    cmd = ["unshare", "-m", "sh", "-c", hide, "hide", str(lib), str(tmp), sys.executable, "-c", PROBE]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env={**os.environ, "NO_DOT": str(tmp)})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_vz_renderer_falls_back_to_the_browser_and_names_the_missing_libraries(ran):
    assert ran["renderer"] == "browser"
    [warning] = ran["warnings"]
    assert warning.startswith("pygraphviz is installed but cannot load: the system libraries ")
    assert all(name in warning for name in HIDDEN), warning
    assert "pip install graphviz-pure" in warning


def test_drawing_to_svg_says_why_there_is_no_graphviz(ran):
    error = ran["error"]
    assert "not to SVG" in error and "graphviz-pure is not installed" in error
    assert "pygraphviz is installed but cannot load" in error and all(name in error for name in HIDDEN), error
    assert "neither the `dot` program nor pygraphviz was found" not in error
