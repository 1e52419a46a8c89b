"""Small virtual environments for the packaging tests, made in seconds, not minutes.

A new venv gets no pip of its own (``pip --python`` drives it from the project's venv) and
no copy of torch: a ``.pth`` file points at a folder of symlinks to the distributions it
should see from the project's venv (torch and what torch needs, say), dist-info included,
so pip counts them as installed and resolves everything else normally.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name


def closure(names: Iterable[str]) -> dict[str, metadata.Distribution]:
    """The installed distributions ``names`` need, with what they need in turn (and the
    extras they ask of each other, e.g. ``jsonschema[format-nongpl]``)."""
    found: dict[str, metadata.Distribution] = {}
    done: set[tuple[str, str]] = set()
    todo = [(canonicalize_name(name), "") for name in names]
    while todo:
        name, extra = todo.pop()
        if (name, extra) in done:
            continue
        done.add((name, extra))
        dist = found.setdefault(name, metadata.distribution(name))
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": extra}):
                todo += [(canonicalize_name(req.name), e) for e in ("", *req.extras)]
    return found


def link_distributions(dists: Iterable[metadata.Distribution], into: Path) -> None:
    """Symlink each distribution's top-level files and folders (and its dist-info) into ``into``."""
    into.mkdir(parents=True, exist_ok=True)
    for dist in dists:
        for top in {Path(f).parts[0] for f in dist.files or []} - {"..", "__pycache__"}:
            target = Path(dist.locate_file(top))
            if target.exists() and not (into / top).exists():
                (into / top).symlink_to(target)


def make_venv(path: Path, see: Iterable[Path] = ()) -> Path:
    """A venv without pip at ``path`` that also imports from the folders ``see``; its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    python = path / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    Path(site, "_seen_from_project_venv.pth").write_text("".join(f"{folder}\n" for folder in see))
    return python


def pip_install(python: Path, *args: str) -> subprocess.CompletedProcess:
    """``pip install ARGS`` into the venv of ``python``, by the project venv's pip."""
    cmd = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-input", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)
