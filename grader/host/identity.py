"""Whose each submission is: decided from the paths (and the roster) before anything is
graded, so that two students are never merged into one row or one feedback page, and so
that a student is the same student in every run, whatever their classmates' files are
called.

Without a roster, paths are read below the folder all the submissions share:

- a file in a folder below it belongs to that folder (``alice/02_autograd.ipynb`` and
  ``alice/Copy of 02_autograd.ipynb`` are ``alice``'s), whatever the file is called;
  a folder whose own submissions are all named after a chapter also owns those of its one
  subfolder (GitHub Classroom's ``alice-repo/02_autograd.ipynb`` and
  ``alice-repo/exercises/02_autograd.ipynb`` are one student's), never those of two
  (``sec1/notes.ipynb`` beside ``sec1/alice/`` and ``sec1/bob/`` merges no one), nor a
  folder of a student's own file (``sec1/carol.ipynb`` beside ``sec1/alice/``);
- a file directly in it is its stem (``carol.ipynb`` is ``carol``); both kinds may mix;
  but files that all lie in it (or in its one line of subfolders, a repository graded on
  its own), each named after a chapter (``chapters``: ``02_autograd.ipynb``, ``Copy of
  02_autograd.ipynb``), no two in one folder after the same one, are that folder's
  student's: grading ``submissions/alice/02_autograd.ipynb`` again on its own is
  ``alice``, not a student called ``02_autograd`` (``02_autograd.ipynb`` beside
  ``02_autograd (1).ipynb`` may be two students' files saved to one folder: never merged);
- an LMS's own names give the student's id and name (``lms_student``): Moodle's folders
  ``Alice Smith_123_assignsubmission_file_`` (also when grading that one folder),
  Blackboard's ``HW1_jdoe_attempt_2024-03-01-10-00-00_02_autograd.ipynb``, Canvas's
  ``smithjohn_12345_67890_02_autograd.ipynb``, and a ``late_`` in front of any name;
- a folder holding a file named like a student beside it (``alex.ipynb`` and
  ``late/alex.ipynb``) is not taken for a student: that is refused with the list of
  clashes, since it cannot say whose ``late/alex.ipynb`` is.

A roster line's ``file`` names a submission by its path or the end of it (with or without
``.ipynb``), by the student's folder, or by the id the LMS's name gives (``jdoe`` names
both of Blackboard's attempts), in any letter case and Unicode form (roster.fold). A line
that would name the submissions of several students (``02_autograd.ipynb`` in a
folder-per-student class, or ``Alice.ipynb`` beside ``alice.ipynb``) is refused rather
than merging them.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Collection
from dataclasses import replace
from pathlib import Path

from grader.host.errors import GraderError
from grader.host.roster import SUFFIX, Entry, Roster, Student, fold

LATE = re.compile(r"^late_", re.IGNORECASE)  # Canvas marks a late file so; instructors too
# <name>_<id>_assignsubmission_<plugin>_[<file>]: Moodle's folder, or its file without folders
MOODLE = re.compile(r"^(?P<name>.+?)_(?P<id>\d+)_assignsubmission_[a-z]+_(?P<file>.*)$")
# <assignment>_<user>_attempt_<yyyy-mm-dd-hh-mm-ss>[_<file>]: Blackboard's attempt files
BLACKBOARD = re.compile(r"^(?P<assignment>.+)_(?P<id>[^_]+)_attempt_\d{4}(?:-\d{2}){5}(?:_(?P<file>.*))?$")
# <name>[_late]_<user id>_<submission id>_<file>: Canvas's "Download Submissions", whose ids
# run to several digits (``alice_2024_1_autograd`` is no export: a year and a part)
CANVAS = re.compile(r"^(?P<name>[^_]+?)(?:_late)?_(?P<id>\d{4,})_(?P<submission>\d{4,})_(?P<file>.+)$", re.IGNORECASE)
VERSION_SEPARATORS = "_- .("  # what ends the name a student's attempts share: hw_v2, hw-final, hw (1)
# A copy of a chapter's file, as a student's disk or browser names it: "Copy of 02_autograd",
# "02_autograd (1)", "02_autograd-2" (not "02_autograd-1002": a student number)
CHAPTER_FILE = re.compile(r"^(?:copy of )?(?P<chapter>.+?)(?: ?\(\d+\)|-\d{1,2})?$", re.IGNORECASE)


def owners(paths: list[Path], roster: Roster | None = None, chapters: Collection[str] = ()) -> dict[Path, Student]:
    """Submission path -> its student, in the order given; GraderError where the paths and
    the roster cannot tell two students apart. ``chapters``: the names of the chapters the
    files are (a file so named names no student; see the module's docstring)."""
    paths = list(dict.fromkeys(Path(path) for path in paths))
    own, refused = _by_path(paths, chapters)
    if roster is None:
        if refused:
            raise GraderError(next(iter(refused.values())))
        return own
    keys: dict[str, Entry] = {key: entry for entry in roster.entries for key in entry.keys}
    where, common = _placed(paths)
    found: dict[Path, Student] = {}
    matched: dict[Entry, list[Path]] = {}
    for path in paths:
        below = where[path].parent.relative_to(common).parts
        entry = next((keys[key] for key in _candidates(path, own[path], below) if key in keys), None)
        if entry is None:
            if path in refused:
                raise GraderError(refused[path])
            found[path] = replace(own[path], listed=False)
        else:
            found[path] = entry.student
            matched.setdefault(entry, []).append(path)
    for entry, handed in matched.items():
        _refuse_several(roster, entry, handed, own)
    return found


def lms_student(name: str) -> Student:
    """The student a folder's name or a file's stem names: the id (and name) in an LMS's
    export name, else the name itself; NFC, and without a ``late_`` in front, so that a
    student is one id however their files were marked or which disk they came from."""
    name = unicodedata.normalize("NFC", name)
    bare = LATE.sub("", name) or name
    found = _lms_match(bare)
    return Student(found["id"], found.groupdict().get("name") or "") if found else Student(bare)


def lms_id(name: str) -> str | None:
    """The student id in an LMS's export name (a folder's name or a file's stem, see
    lms_student); None for any other name."""
    found = _lms_match(LATE.sub("", unicodedata.normalize("NFC", name)))
    return found["id"] if found else None


def _lms_match(bare: str) -> re.Match[str] | None:
    return next((found for pattern in (MOODLE, BLACKBOARD, CANVAS) if (found := pattern.match(bare))), None)


def _by_path(paths: list[Path], chapters: Collection[str] = ()) -> tuple[dict[Path, Student], dict[Path, str]]:
    """Path -> its student without a roster (see the module's docstring); and the paths that
    cannot be told apart so, each with the refusal to raise for it."""
    if not paths:
        return {}, {}
    where, common = _placed(paths)
    below = {path: where[path].parent.relative_to(common) for path in paths}
    folded = {fold(chapter) for chapter in chapters}
    named = {path: chapter_named(where[path], folded) for path in paths}
    folders = _folders_below(below, named)
    own = _told_apart({path: _owner(where[path], common, folders) for path in paths}, where)
    own = _blackboard_users(own, where)
    if _one_students_folder([(where[path], named[path]) for path in paths], common):
        own = {path: lms_student(common.name) for path in paths}
    refused = _category_folders(paths, where, common, own) | _folders_of_loose_files(paths, where, common, own, named)
    # One Student per id (a name read from two exports could differ), chosen in path order,
    # not argument order.
    first: dict[str, Student] = {}
    for path in sorted(paths, key=lambda path: str(where[path])):
        first.setdefault(own[path].id, own[path])
    return {path: first[own[path].id] for path in paths}, refused


def student_folders(paths: list[Path], chapters: Collection[str] = ()) -> dict[Path, Path]:
    """Path -> the folder its student's files are read from (absolute, links not followed):
    the student's own folder below the one all the paths share (``alice/``, a repository's
    ``alice-repo/`` for its ``exercises/`` too), or, for a file directly in that shared
    folder, the shared folder itself. Whatever the paths share (only ``/``, for files from
    far-apart places), a submission's own folder is never wider than the folder it lies in
    or its repository's: what a link in it may lead to (files.links_out)."""
    paths = list(dict.fromkeys(Path(path) for path in paths))
    if not paths:
        return {}
    where, common = _placed(paths)
    below = {path: where[path].parent.relative_to(common) for path in paths}
    folded = {fold(chapter) for chapter in chapters}
    folders = _folders_below(below, {path: chapter_named(where[path], folded) for path in paths})
    return {path: Path(os.path.normpath(common / folders[below[path]])) for path in paths}


def _folders_below(below: dict[Path, Path], named: dict[Path, str]) -> dict[Path, Path]:
    """Each folder holding submissions (relative to the shared one) -> its student's folder
    (_student_folders). The folders whose own files are all named after a chapter (``named``)
    may be a student's repository, owning its one subfolder; a folder of students' files
    (``sec1/carol.ipynb``) never is."""
    mixed = {below[path] for path in below if not named[path]}
    return _student_folders(list(below.values()), set(below.values()) - mixed)


def _placed(paths: list[Path]) -> tuple[dict[Path, Path], Path]:
    """Each path made absolute, and the folder all of them share."""
    where = {path: Path(os.path.normpath(os.path.abspath(path))) for path in paths}
    return where, Path(os.path.commonpath([str(where[path].parent) for path in paths]))


def _told_apart(own: dict[Path, Student], where: dict[Path, Path]) -> dict[Path, Student]:
    """``own``, where one id read from an LMS's names came with two names (``bob_12345_67890_x``
    beside ``ann_12345_67890_y``: no export gives two people one id): those are named by their
    paths instead, never merged."""
    names: dict[str, set[str]] = {}
    for student in own.values():
        if student.name:
            names.setdefault(student.id, set()).add(student.name)
    clashing = {key for key, seen in names.items() if len(seen) > 1}
    return {path: Student(where[path].stem) if s.id in clashing else s for path, s in own.items()}


def _blackboard_users(own: dict[Path, Student], where: dict[Path, Path]) -> dict[Path, Student]:
    """``own``, where two of Blackboard's names give one user with two different heads
    (``HW1_j_doe_attempt_…`` and ``HW1_a_doe_attempt_…``: the pattern reads the user as
    the last part, ``doe``, and usernames may hold ``_``): one class's files are of one
    assignment, so each user is their head without the part all the heads share
    (``j_doe``, ``a_doe``), never merged. Without such a clash, ids stay as read, the same
    in every run."""
    heads: dict[Path, str] = {}
    for path, student in own.items():
        found = BLACKBOARD.match(LATE.sub("", unicodedata.normalize("NFC", where[path].stem)))
        if found and found["id"] == student.id:
            heads[path] = f"{found['assignment']}_{found['id']}"
    users: dict[str, set[str]] = {}
    for path, head in heads.items():
        users.setdefault(own[path].id, set()).add(head)
    if all(len(seen) == 1 for seen in users.values()):
        return own
    shared = os.path.commonprefix(list(heads.values()))
    assignment = shared[: shared.rfind("_") + 1]
    return {path: Student(heads[path][len(assignment) :]) if path in heads else s for path, s in own.items()}


def _owner(where: Path, common: Path, folders: dict[Path, Path]) -> Student:
    """The student of the submission at ``where`` (absolute), the submissions sharing
    ``common``: an LMS's submission folder on its way, else its student's folder below
    ``common`` (``folders``, from _student_folders), else its stem."""
    below = where.parent.relative_to(common)
    for folder in (*reversed(below.parts), common.name):
        if MOODLE.match(unicodedata.normalize("NFC", folder)):
            return lms_student(folder)
    own = folders[below]
    return lms_student(own.as_posix() if own.parts else where.stem)


def _one_students_folder(files: list[tuple[Path, str]], common: Path) -> bool:
    """Whether the files (each absolute, with the chapter it is named after: ``chapter_named``)
    are one student's folder graded on its own: each lies in ``common`` or in its one line
    of subfolders (a repository's ``exercises/``), some directly in it, each named after a
    chapter (or a copy of one), which no student is called, and no two in one folder after
    the same chapter (a browser's downloads of several students' files)."""
    folders = {path.parent for path, _ in files}
    deepest = max(folders, key=lambda folder: len(folder.parts))
    named = [(path.parent, chapter) for path, chapter in files]
    return (
        bool(common.name)
        and common in folders
        and all(folder == deepest or folder in deepest.parents for folder in folders)
        and all(chapter for _, chapter in named)
        and len(set(named)) == len(named)
    )


def chapter_named(path: Path, folded: set[str]) -> str:
    """The chapter (folded) a file is named after, a copy of one included, of the chapters
    ``folded`` (their names folded); "" if none."""
    copy = CHAPTER_FILE.match(path.stem)
    name = fold(copy["chapter"]) if copy else ""
    return name if name in folded else ""


def _student_folders(below: list[Path], repositories: set[Path]) -> dict[Path, Path]:
    """Each folder holding submissions (relative to the common one) -> the folder of its
    student: itself, or the shallowest folder on its way that holds a submission directly,
    each of its own named after a chapter (``repositories``), and has submissions below it
    in that one subfolder only (a student's repository with a copy in ``exercises/``). One
    holding several subfolders' submissions is a group of students (a section with notes
    beside it), and one holding a file named otherwise is a folder of students' files
    (``sec1/carol.ipynb`` beside ``sec1/alice/``): each subfolder stays its own."""
    holding = {folder for folder in below if folder.parts}
    found = {}
    for folder in set(below):
        found[folder] = folder
        for depth in range(1, len(folder.parts)):
            ancestor = Path(*folder.parts[:depth])
            if ancestor in holding and ancestor in repositories:
                inside = {o.parts[depth] for o in holding if len(o.parts) > depth and o.parts[:depth] == ancestor.parts}
                if len(inside) == 1:
                    found[folder] = ancestor
                    break
    return found


def _category_folders(
    paths: list[Path], where: dict[Path, Path], common: Path, own: dict[Path, Student]
) -> dict[Path, str]:
    """The files that a folder cannot be trusted to name: ``late/alex.ipynb`` beside a
    student ``alex`` (``alex.ipynb``) is most likely alex's, not a student called late.
    Each such file and the loose one it clashes with -> the refusal that lists them."""
    loose: dict[str, list[Path]] = {}
    for path in paths:
        if where[path].parent == common:
            loose.setdefault(fold(own[path].id), []).append(path)
    clashes: dict[str, list[Path]] = {}
    for path in paths:
        stem = fold(lms_student(where[path].stem).id)
        if where[path].parent != common and stem in loose and fold(own[path].id) != stem:
            clashes.setdefault(stem, list(loose[stem])).append(path)
    if not clashes:
        return {}
    listed = "; ".join(f"{same[0].name} ({', '.join(path.as_posix() for path in same)})" for same in clashes.values())
    message = (
        f"several submissions share a file name and no folder of their own tells their students apart: "
        f"{listed}. Pass a roster (--roster FILE.csv) whose file column names each submission "
        "by its path, or put each student's files in a folder of their own (submissions/<student>/...)."
    )
    return {path: message for same in clashes.values() for path in same}


def _folders_of_loose_files(
    paths: list[Path], where: dict[Path, Path], common: Path, own: dict[Path, Student], named: dict[Path, str]
) -> dict[Path, str]:
    """The files of a student's folder below ``common`` that may as well be several
    students' own files: notebooks of two or more names, none after a chapter, nor versions
    of one name (``sec1/alice.ipynb`` beside ``sec1/bob.ipynb``, a section's folder of loose
    files, were one student ``sec1`` of whom one file counted; ``alice/draft.ipynb`` beside
    ``alice/final.ipynb`` are one student's). No name tells the two apart, and merging two
    students loses one: each such file -> the refusal that says how to grade either way. A
    folder holding a notebook named after a chapter is its student's (their exercise
    notebook beside a draft), and so is one of versions of one name (``hw.ipynb``,
    ``hw_v2.ipynb``) and an LMS's submission folder (Moodle's)."""
    stems: dict[str, dict[str, Path]] = {}
    for path in paths:
        found = where[path]
        if found.parent == common or named[path] or own[path].id == lms_student(found.stem).id or _in_moodle(found):
            continue
        stems.setdefault(own[path].id, {}).setdefault(fold(lms_student(found.stem).id), path)
    chaptered = {own[path].id for path in paths if named[path]}
    shared = {
        student: files
        for student, files in stems.items()
        if len(files) > 1 and student not in chaptered and not _versions(list(files))
    }
    if not shared:
        return {}
    student, files = next(iter(sorted(shared.items())))
    folder = next(iter(files.values())).parent
    names = ", ".join(path.name for path in sorted(files.values()))
    message = (
        f"{folder} holds notebooks of {len(files)} names ({names}), none named after a chapter: as files in a "
        f"student's folder they are one student, {student!r}, of whom one file counts, but they may be "
        f"{len(files)} students' own files. If each file is a student's, grade that folder on its own "
        f"({folder / '*.ipynb'}: each file then names its student), or put each student's files in a folder "
        f"of their own; if they are one student's, pass a roster (--roster FILE.csv) whose file column names "
        f"their folder ({student})."
    )
    return {path: message for path in paths if own[path].id in shared and not named[path]}


def _versions(stems: list[str]) -> bool:
    """Whether ``stems`` (folded) are versions of one name: one is the start of every other
    (``hw``, ``hw_v2``, ``hw (1)``), or all share a start up to a separator (``hw_a``,
    ``hw-final``), as a student's attempts are named; never ``alice`` and ``bob``."""
    start = os.path.commonprefix(stems)
    return start in stems or (start[-1:] in VERSION_SEPARATORS and bool(start.strip(VERSION_SEPARATORS)))


def _in_moodle(where: Path) -> bool:
    """Whether the file at ``where`` lies in a Moodle submission folder, which names its student."""
    return any(MOODLE.match(unicodedata.normalize("NFC", folder)) for folder in where.parent.parts)


def _refuse_several(roster: Roster, entry: Entry, handed: list[Path], own: dict[Path, Student]) -> None:
    """A roster line may name one student's several submissions, never several students'."""
    students = {own[path] for path in handed}
    if len(students) <= 1:
        return
    files = ", ".join(path.as_posix() for path in handed)
    if len({fold(student.id) for student in students}) == 1:
        raise GraderError(
            f"roster {roster.path}, line {entry.line}: file {entry.file!r} names {files}, whose names differ "
            "only in letter case or Unicode form, so no roster line can tell them apart (a Windows or macOS "
            "disk holds them as one file). Keep the student's own file and rename or remove the other."
        )
    raise GraderError(
        f"roster {roster.path}, line {entry.line}: file {entry.file!r} names the submissions of several "
        f"students ({files}). Name each student's file by its folder or its path (e.g. alice or "
        "alice/02_autograd.ipynb)."
    )


def _candidates(path: Path, owner: Student, below: tuple[str, ...] = ()) -> list[str]:
    """How a roster's file value may name this submission, the most precise first, folded
    (roster.fold): its path and each end of it (with and without .ipynb), then its
    folders: each end of them, and each run of the folders ``below`` the one all the
    submissions share (a student's folder may hold theirs in a subfolder, as nbgrader's
    ``submitted/alice/ps1/`` and a repository's ``exercises/`` do; never a folder above,
    which may be the instructor's own, ``/home/alice``), then the id its path gives (an
    LMS's user id)."""
    whole = Path(os.path.normpath(path))
    parts = whole.parts[1:] if whole.anchor else whole.parts
    names = [whole.as_posix(), whole.as_posix().removesuffix(SUFFIX)]
    for start in range(len(parts)):
        end = "/".join(parts[start:])
        names += [end, end.removesuffix(SUFFIX)]
    folders = parts[:-1]
    names += ["/".join(folders[start:]) for start in range(len(folders))]
    runs = [(start, end) for end in range(1, len(below)) for start in range(end)]  # those not ending the path
    names += ["/".join(below[start:end]) for start, end in sorted(runs, key=lambda run: (run[0] - run[1], -run[0]))]
    names.append(owner.id)
    return list(dict.fromkeys(fold(name) for name in names if name not in ("", ".", "/")))
