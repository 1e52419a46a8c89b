"""vizlib in someone else's project: the wheel built from this repository installs into a
clean venv that has nothing but torch, brings its own small dependencies (resolved by pip
as usual, none of the course's pins), and draws a graph, with the Graphviz pip brought along
where there is no `dot`: a program that needs no library of the system at all.

The clean venv sees torch (and what torch needs) through symlinks into the project's venv
instead of a second gigabyte copy (tests/packaging/venvs.py); everything else pip installs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from harness.paths import REPO

from .venvs import closure, link_distributions, make_venv, pip_install

PACKAGES = {"vizlib", "grader", "coursekit"}  # pyproject's [tool.setuptools.packages.find]
DRAW = """
import json, torch, vizlib as vz
g = vz.graph(lambda x, w, b: torch.tanh(w * x + b), 2.0, 0.5, -0.3)
print(json.dumps({"vizlib": vz.__file__, "torch": torch.__file__, "svg": g.to_svg(), "text": repr(g)}))
"""
RENDERER = """
import json, torch, vizlib as vz
from vizlib.render.engines import graphviz_pure_program
g = vz.graph(lambda x, w, b: torch.tanh(w * x + b), 2.0, 0.5, -0.3)
print(json.dumps({"renderer": vz.renderer(), "program": graphviz_pure_program(), "dot": g.to_dot(), "svg": g.to_svg()}))
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built from a copy of what it is made of (the checkout gets no build/ folder)."""
    root = tmp_path_factory.mktemp("wheel")
    src = root / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    # Every package of the checkout, those that must stay out (harness, bench, tests) too:
    # what the wheel holds is pyproject's choice, not this copy's.
    for package in sorted(p.parent for p in REPO.glob("*/__init__.py")):
        shutil.copytree(package, src / package.name, ignore=shutil.ignore_patterns("__pycache__"))
    # The project's own setuptools builds it (no isolated build env to download); its
    # dependencies are not needed to build a pure-Python wheel.
    cmd = [sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps", "-w", str(root), str(src)]
    subprocess.run(cmd, check=True, capture_output=True, timeout=300)
    [built] = root.glob("*.whl")
    return built


@pytest.fixture(scope="module")
def clean_venv(wheel, tmp_path_factory) -> Path:
    """A venv with torch only, then `pip install` of the wheel; its python."""
    root = tmp_path_factory.mktemp("clean")
    link_distributions(closure(["torch"]).values(), root / "torch-only")
    python = make_venv(root / "venv", see=[root / "torch-only"])
    installed = pip_install(python, str(wheel))
    assert installed.returncode == 0, installed.stderr[-3000:]
    return python


def wheel_metadata(wheel: Path):
    with zipfile.ZipFile(wheel) as zf:
        [meta] = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
        return zf.namelist(), Parser().parsestr(zf.read(meta).decode())


def test_wheel_holds_the_packages_not_the_course(wheel):
    names, _ = wheel_metadata(wheel)
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == PACKAGES
    assert "vizlib/py.typed" in names
    assert not [n for n in names if n.endswith(".ipynb")]


def test_wheel_requires_only_vizlibs_own_dependencies(wheel):
    _, meta = wheel_metadata(wheel)
    reqs = [Requirement(line) for line in meta.get_all("Requires-Dist")]
    always = {canonicalize_name(r.name): r for r in reqs if not r.marker or "extra" not in str(r.marker)}
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    assert set(always) == {canonicalize_name(Requirement(line).name) for line in declared}
    assert not {"jupyterlab", "pytest", "nbval", "playwright"} & set(always)  # the course's, behind extras
    torch_req = always["torch"]
    assert not any(spec.operator == "==" for spec in torch_req.specifier), "a library must not pin torch"
    assert torch_req.specifier.contains("2.13.0") and "ipywidgets>=7.7" in str(always["ipywidgets"])


def test_wheel_draws_a_graph_in_a_venv_with_only_torch(clean_venv, tmp_path):
    done = subprocess.run([str(clean_venv), "-c", DRAW], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout)
    venv = clean_venv.parent.parent
    assert Path(got["vizlib"]).is_relative_to(venv / "lib"), got["vizlib"]  # the wheel's, not the checkout's
    assert "torch-only" in got["torch"]  # torch was not installed again
    assert got["svg"].lstrip().startswith(("<?xml", "<svg")) and "TanhBackward0" in got["svg"]
    assert got["text"].startswith("Graph: 6 nodes (3 leaves, 3 ops)")


def test_clean_venv_got_no_course_packages(clean_venv):
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(clean_venv), "list", "--format=json"],
        capture_output=True,
        text=True,
        check=True,
    )
    installed = {canonicalize_name(p["name"]): p["version"] for p in json.loads(listed.stdout)}
    assert {"numpy", "matplotlib", "ipywidgets"} <= set(installed)
    assert installed["torch"] == __import__("torch").__version__  # the one it already had
    assert not {"jupyterlab", "pytest", "nbval", "tqdm", "playwright"} & set(installed)  # the course's


@pytest.fixture(scope="module")
def pip_renderer(clean_venv, tmp_path_factory) -> dict:
    """What the clean venv draws with where PATH has no `dot` (an empty folder)."""
    empty = tmp_path_factory.mktemp("no-dot")
    env = {"PATH": str(empty), "HOME": str(empty)}
    done = subprocess.run([str(clean_venv), "-c", RENDERER], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_without_dot_the_wheel_draws_with_the_graphviz_pip_installed(clean_venv, pip_renderer):
    assert pip_renderer["renderer"] == "graphviz-pure"
    venv = clean_venv.parent.parent
    assert Path(pip_renderer["program"]).is_relative_to(venv.resolve()), "pip put it in the venv"
    assert "(graphviz-pure)" in pip_renderer["svg"] and "TanhBackward0" in pip_renderer["svg"]


def test_the_pip_installed_renderer_needs_no_library_not_even_the_c_library(pip_renderer, tmp_path):
    """ "Only glibc present" asks for a program that links to nothing beyond the C library (libc,
    libm, the dynamic loader): graphviz-pure asks for less, it is a static executable with no
    interpreter and no needed library, so it runs in an empty root with no libc, no fonts, no /etc."""
    program = Path(pip_renderer["program"])
    with program.open("rb") as f:
        assert f.read(4) == b"\x7fELF"
    ldd = subprocess.run(["ldd", str(program)], capture_output=True, text=True)
    assert ldd.stdout.strip() in {"statically linked", "not a dynamic executable"}, ldd.stdout
    chroot = shutil.which("chroot")
    if os.geteuid() != 0 or chroot is None:
        pytest.skip("chroot(8) and root are needed (CI runs as root): the empty-root run is not tried")
    root = tmp_path / "root"
    root.mkdir()
    shutil.copy2(program, root / "graphviz-pure")
    assert sorted(p.name for p in root.iterdir()) == ["graphviz-pure"]
    run = [chroot, str(root), "/graphviz-pure", "-Tsvg"]
    done = subprocess.run(run, input=pip_renderer["dot"], capture_output=True, text=True, env={}, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == pip_renderer["svg"], "the same bytes as vizlib drew in the venv"
