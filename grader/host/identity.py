"""Whose each submission is: decided from the paths (and the roster) before anything is
graded, so that two students are never merged into one row or one feedback page.

Without a roster, a student is their file's stem (``alice.ipynb`` is ``alice``) while
every stem is different. Where two files share a stem, the class is taken to be laid out
one folder per student (``alice/02_autograd.ipynb``, ``bob/02_autograd.ipynb``): every
student is then their folder, written relative to the folder all the submissions share.
Where a shared stem has no folder of its own to tell its students apart
(``alex.ipynb`` and ``late/alex.ipynb``), grading is refused with the list of clashes.

A roster line's ``file`` names a submission by its path or the end of it (with or without
``.ipynb``), or by the student's folder. A line that would name the submissions of several
students (``02_autograd.ipynb`` in a folder-per-student class) is refused rather than
merging them.
"""

from __future__ import annotations

import os
from pathlib import Path

from grader.host.errors import GraderError
from grader.host.roster import SUFFIX, Entry, Roster, Student


def owners(paths: list[Path], roster: Roster | None = None) -> dict[Path, Student]:
    """Submission path -> its student, in the order given; GraderError where the paths and
    the roster cannot tell two students apart."""
    paths = list(dict.fromkeys(Path(path) for path in paths))
    own, clashing, clash = _by_path(paths)
    if roster is None:
        if clashing:
            raise GraderError(clash)
        return {path: Student(own[path]) for path in paths}
    keys: dict[str, Entry] = {key: entry for entry in roster.entries for key in entry.keys}
    found: dict[Path, Student] = {}
    matched: dict[Entry, list[Path]] = {}
    for path in paths:
        entry = next((keys[key] for key in _candidates(path) if key in keys), None)
        if entry is None:
            if path in clashing:
                raise GraderError(clash)
            found[path] = Student(own[path], listed=False)
        else:
            found[path] = entry.student
            matched.setdefault(entry, []).append(path)
    for entry, handed in matched.items():
        if len({own[path] for path in handed}) > 1:
            raise GraderError(
                f"roster {roster.path}, line {entry.line}: file {entry.file!r} names the submissions of several "
                f"students ({', '.join(path.as_posix() for path in handed)}). Name each student's file by its "
                "folder or its path (e.g. alice or alice/02_autograd.ipynb)."
            )
    return found


def _by_path(paths: list[Path]) -> tuple[dict[Path, str], set[Path], str]:
    """Path -> its student's name without a roster (stem, or folder where stems repeat);
    the paths that cannot be told apart so, and the refusal to raise for them."""
    where = {path: Path(os.path.normpath(os.path.abspath(path))) for path in paths}
    stems: dict[str, list[Path]] = {}
    for path in paths:
        stems.setdefault(path.stem, []).append(path)
    if all(len(same) == 1 for same in stems.values()):
        return {path: path.stem for path in paths}, set(), ""
    common = Path(os.path.commonpath([str(where[path].parent) for path in paths]))
    own = {path: where[path].parent.relative_to(common).as_posix() for path in paths}
    if all(name != "." for name in own.values()):
        return own, set(), ""
    clashing = {path for same in stems.values() if len(same) > 1 for path in same}
    clashes = [
        f"{stem}{SUFFIX if same[0].suffix == SUFFIX else same[0].suffix} ({', '.join(p.as_posix() for p in same)})"
        for stem, same in stems.items()
        if len(same) > 1
    ]
    names = {path: path.as_posix() if path in clashing else path.stem for path in paths}
    return (
        names,
        clashing,
        (
            f"several submissions share a file name and no folder of their own tells their students apart: "
            f"{'; '.join(clashes)}. Pass a roster (--roster FILE.csv) whose file column names each submission "
            "by its path, or put each student's files in a folder of their own (submissions/<student>/...)."
        ),
    )


def _candidates(path: Path) -> list[str]:
    """How a roster's file value may name this submission, the most precise first: its
    path and each end of it (with and without .ipynb), then its folders."""
    whole = Path(os.path.normpath(path))
    parts = whole.parts[1:] if whole.anchor else whole.parts
    names = [whole.as_posix(), whole.as_posix().removesuffix(SUFFIX)]
    for start in range(len(parts)):
        end = "/".join(parts[start:])
        names += [end, end.removesuffix(SUFFIX)]
    folders = parts[:-1]
    names += ["/".join(folders[start:]) for start in range(len(folders))]
    return list(dict.fromkeys(name for name in names if name not in ("", ".", "/")))
