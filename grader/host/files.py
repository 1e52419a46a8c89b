"""Write the files grading leaves behind (report, gradebook, feedback) all or nothing.

Each file is written to a temporary file in its own folder and renamed over the target
(``os.replace`` is atomic within one file system), so a reader (an LMS import, a
colleague's script, a second grading run) never sees half a file, and an interrupted run
leaves the previous version in place and no temporary file behind.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Collection
from pathlib import Path

from grader.host.identity import student_folders


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
        try:
            os.replace(temp, path)
        except PermissionError as error:
            raise _kept_aside(Path(temp), path, error) from None
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


class InUse(PermissionError):
    """A file that could not be replaced, as Windows refuses to replace a file another
    program holds open (Excel, showing last run's gradebook); the new version is ``kept``
    beside it, so that a class's grading is not lost to a window left open."""

    def __init__(self, error: PermissionError, kept: Path) -> None:
        super().__init__(error.errno, error.strerror, error.filename)
        self.kept = kept


def _kept_aside(temp: Path, path: Path, error: PermissionError) -> PermissionError:
    """``temp``, the new version of ``path``, moved to ``grades.new.csv`` beside it; the error
    to raise (InUse, or ``error`` itself where that fails too)."""
    kept = path.with_name(f"{path.stem}.new{path.suffix}")
    try:
        os.replace(temp, kept)
    except OSError:
        return error
    return InUse(error, kept)


def real_path(path: Path) -> Path:
    """The file ``path`` names, links followed, to tell two paths of one file apart; where
    that cannot be found (a loop of links, which ``Path.resolve`` raises on) the path
    itself, made absolute, so that one such submission stops no run."""
    try:
        return Path(path).resolve()
    except (OSError, RuntimeError):
        return Path(os.path.normpath(os.path.abspath(path)))


def links_out(paths: list[Path], chapters: Collection[str] = ()) -> dict[Path, Path]:
    """The paths that lead, through a link of their own or of a folder in their student's
    folder, to a file outside that student's folder (identity.student_folders: ``alice/``,
    or, for a file directly in the class's folder, that folder); each with the file it leads
    to. Whatever the paths share (only ``/``, for files from far-apart places), a link from
    alice's folder to the instructor's solutions or to a classmate's file is caught. A link
    above a student's folder (a class folder that is itself a link) leads nowhere else.
    ``chapters``: the course's chapter names, which tell a student's repository (see
    identity.py). One path is no class: a learner grading their own notebook may keep it
    behind a link."""
    if len(paths) < 2:
        return {}
    homes = student_folders(paths, chapters)
    found = {}
    for path in paths:
        real = real_path(path)
        if not real.is_relative_to(real_path(homes[path])):
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
