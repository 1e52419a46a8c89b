"""Write the files grading leaves behind (report, gradebook, feedback) all or nothing.

Each file is written to a temporary file in its own folder and renamed over the target
(``os.replace`` is atomic within one file system), so a reader (an LMS import, a
colleague's script, a second grading run) never sees half a file, and an interrupted run
leaves the previous version in place and no temporary file behind.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` as UTF-8, atomically; creates missing parent folders.

    Characters UTF-8 cannot encode (lone surrogates a kernel may send back in a message)
    become ``?`` rather than failing the write."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = text.encode("utf-8", errors="replace")
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temp, _mode(path))
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def real_path(path: Path) -> Path:
    """The file ``path`` names, links followed, to tell two paths of one file apart; where
    that cannot be found (a loop of links, which ``Path.resolve`` raises on) the path
    itself, made absolute, so that one such submission stops no run."""
    try:
        return Path(path).resolve()
    except (OSError, RuntimeError):
        return Path(os.path.normpath(os.path.abspath(path)))


def links_out(paths: list[Path]) -> dict[Path, Path]:
    """The paths that lead, through a link of their own or of a folder below the folder all
    the paths share, to a file outside that folder; each with the file it leads to. A link
    above that folder (a class folder that is itself a link) leads nowhere else. One path is
    no class: a learner grading their own notebook may keep it behind a link."""
    if len(paths) < 2:
        return {}
    where = {path: Path(os.path.normpath(os.path.abspath(path))) for path in paths}
    home = real_path(Path(os.path.commonpath([str(place.parent) for place in where.values()])))
    found = {}
    for path in paths:
        real = real_path(path)
        if real != where[path] and not real.is_relative_to(home):
            found[path] = real
    return found


def _mode(path: Path) -> int:
    """The permissions the file would get from a plain write: the old file's, else the umask's
    (mkstemp makes its file private to its owner)."""
    try:
        return path.stat().st_mode & 0o777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
