"""Read a learner's submission, decide its chapter and find its answer for each task.

Only the code of the learner's solution cells is ever used. A solution cell is found
(1) by its nbformat cell id, which the exercise notebook inherits from the instructor's
copy and JupyterLab keeps across saves, even when tags are removed or outputs cleared;
else (2) under the learner's own ``### Exercise N.M`` heading: the cell tagged
``solution``, else the one with a ``### BEGIN SOLUTION`` line, else the first code cell
that is not one of the instructor's other cells. A task with none of these is reported
as unmatched; the learner's other cells (checks, scratch work) are never looked at.

A submission is read as leniently as it can be without guessing at its code: a notebook
in UTF-16 or with a byte order mark, in the old nbformat 3, or alone in a zip archive is
read; characters no file can hold (lone surrogates) are replaced. Each such step is a
notice on the student's page. What cannot be read gets a message that says what the
file is (empty, an HTML page, a script) and what to hand in instead. A class's download
given as it is (one zip of several students' files) is refused for the whole run, before
anything is graded (``refuse_class_archives``): it is the instructor's to unpack.
"""

from __future__ import annotations

import json
import lzma
import os
import re
import zipfile
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

import nbformat
from nbformat import NotebookNode

from grader.host.errors import GraderError
from grader.host.identity import lms_id
from grader.host.notebook import BEGIN, Chapter, heading_number, role

UNMATCHED = None
# The most a notebook may weigh, as a file or unpacked from a zip archive. An exercise
# notebook is 30-160 KiB; the course's notebooks with every picture and output stored weigh
# up to about 0.5 MiB, so 16 MiB is 30 times the heaviest honest notebook. Above it a
# notebook holds outputs no grade needs (only code is graded): a class of such files would
# be read into memory whole, several times over as JSON.
SUBMISSION_BYTES = 16 * 2**20
HINT = "Hand in the exercise notebook itself (the .ipynb file you worked in)."
# Lone UTF-16 surrogates: json reads them from "\udc80" escapes, and no file, pipe or
# kernel message can carry them (UTF-8 cannot encode them).
SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


@dataclass
class Submission:
    path: Path
    nb: NotebookNode
    # What reading it took (a zip unpacked, characters replaced, the format converted, a
    # chapter told by the notebook rather than its file name): for the student's page and
    # the instructor's notes, so that a grade never silently rests on a guess.
    notices: list[str] = field(default_factory=list)
    inner: str | None = None  # the notebook's name inside a zip archive


def read_submission(path: Path) -> Submission:
    """Read a submission (never writing to it); GraderError if it is not a notebook."""
    path = Path(path)
    notices: list[str] = []
    data, inner = _notebook_bytes(path, notices)
    raw = _clean_text(_notebook_json(path, data, notices), notices)
    nb = _nbformat_4(path, raw, notices)
    # Only solution code is ever taken from a submission, so damage elsewhere (a hand
    # edit, another tool's save) is smoothed over rather than allowed to crash the grader.
    if not isinstance(nb.get("metadata"), dict):
        nb.metadata = nbformat.NotebookNode()
    for cell in nb.cells:
        _repair_cell(path, cell, HINT)
    return Submission(path, nb, notices, inner)


def _notebook_bytes(path: Path, notices: list[str]) -> tuple[bytes, str | None]:
    """The file's bytes, or those of the one notebook in it when it is a zip archive (and
    that notebook's name there); never more than SUBMISSION_BYTES of them read."""
    try:
        with path.open("rb") as file:
            if file.read(2) == b"PK":
                inner, data = _unzip_notebook(path, file)
                notices.append(f"handed in as a zip archive: graded the notebook inside it, {inner}")
                return data, inner
            _refuse_heavy(path, os.fstat(file.fileno()).st_size)
            file.seek(0)
            data = file.read(SUBMISSION_BYTES + 1)
    except FileNotFoundError:
        raise GraderError(f"{path}: no such file. Check the path.") from None
    except OSError as error:  # a folder, no permission, a loop of links
        raise GraderError(f"{path}: cannot read it ({error.strerror or error}). {HINT}") from None
    _refuse_heavy(path, len(data))  # a file that grew since, or whose size the system does not know
    return data, None


def _refuse_heavy(path: Path, size: int, inner: str | None = None) -> None:
    """GraderError for a notebook over SUBMISSION_BYTES (``inner``: its name in a zip
    archive), saying what to do: its outputs make it so heavy, and clearing them loses
    nothing that is graded."""
    if size > SUBMISSION_BYTES:
        which = f"its notebook {inner} weighs {_size(size)} unpacked" if inner else f"the notebook weighs {_size(size)}"
        raise GraderError(
            f"{path}: {which}, more than the {_size(SUBMISSION_BYTES)} a submission may (an exercise notebook "
            "weighs well under 1 MiB): its outputs (pictures, long printouts) make it so heavy. Only your code "
            "is graded, so clear them: in Jupyter, Edit > Clear Outputs of All Cells (Cell > All Output > Clear "
            "in the classic Notebook), save, and hand it in again."
        )


def _unzip_notebook(path: Path, data: BinaryIO) -> tuple[str, bytes]:
    """The one notebook in the zip archive open as ``data``, read in memory: nothing is
    unpacked to disk (so no name in the archive can reach a folder), and nothing past
    SUBMISSION_BYTES is read (so a zip bomb costs nothing, and a data file zipped beside the
    notebook is never read). An archive of several notebooks is refused: which one is the
    submission is the student's call."""
    unpack = "Unpack it and hand in the exercise notebook (.ipynb) itself."
    try:
        with zipfile.ZipFile(data) as archive:
            members = [info for info in archive.infolist() if _zipped_notebook(info)]
            if not members:
                raise GraderError(f"{path}: a zip archive with no notebook (.ipynb) in it. {unpack}")
            if len(members) > 1:
                names = ", ".join(info.filename for info in members[:5])
                raise GraderError(
                    f"{path}: a zip archive of {len(members)} notebooks ({names}): unpack it and "
                    "hand in the one exercise notebook of this assignment."
                )
            (member,) = members
            _refuse_heavy(path, member.file_size, member.filename)
            with archive.open(member) as file:
                content = file.read(SUBMISSION_BYTES + 1)
            _refuse_heavy(path, len(content), member.filename)  # whatever the archive claimed
            return member.filename, content
    except (
        *(zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, RuntimeError, EOFError, OSError),
        *(zlib.error, lzma.LZMAError),
    ) as error:
        # RuntimeError: an encrypted member; NotImplementedError: a compression zipfile lacks;
        # zlib's and lzma's errors: a damaged compressed stream.
        raise GraderError(f"{path}: a damaged zip archive, or one the grader cannot open ({error}). {unpack}") from None


def refuse_class_archives(paths: list[Path]) -> None:
    """GraderError, before anything is graded, for a class's download given as it is (a
    Canvas or Moodle "download all submissions" zip): read as one submission, it was one
    student named after the archive, "a zip archive of 30 notebooks", in the gradebook and
    on a feedback page. A zip is a class's when it holds several students' files, named as
    an LMS names them, or when it is all that was given and holds several notebooks or
    other archives (a student's own zip of several notebooks, among classmates' files,
    stays that student's to mend)."""
    for path in paths:
        inside = _archived(path)
        students = {student for name in inside if (student := _lms_student_of(name))}
        if len(students) > 1 or (len(paths) == 1 and len(inside) > 1):
            listed = ", ".join(inside[:3]) + (f" and {len(inside) - 3} more" if len(inside) > 3 else "")
            folder = path.with_suffix("") if path.suffix else path.with_name(f"{path.name}-files")
            raise GraderError(
                f"{path}: a class's archive ({len(inside)} notebooks or archives in it: {listed}), not one student's "
                f"submission; the grader reads the students' notebooks (or each one's zip of one notebook), not a "
                f"class's archive. Unpack it (unzip {path} -d {folder}) and grade what it holds: {folder}/* for a "
                f"file per student, {folder}/*/* for a folder per student. (A learner's own archive: unpack it and "
                "give the exercise notebook in it.)"
            )


def _archived(path: Path) -> list[str]:
    """The notebooks and zip archives in the zip archive at ``path`` (its directory only,
    nothing unpacked); none when it is no readable zip archive."""
    try:
        with Path(path).open("rb") as file:
            if file.read(2) != b"PK":
                return []
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
    except (OSError, zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError):
        return []  # reading it as a submission says what is wrong, for its student
    return [info.filename for info in infos if _zipped_notebook(info, (".ipynb", ".zip"))]


def _lms_student_of(name: str) -> str | None:
    """The student an LMS's name of a file in a class's archive gives (its folder, as
    Moodle's, or its own name, as Canvas's and Blackboard's)."""
    parts = PurePosixPath(name).parts
    return next((found for part in (*parts[:-1], PurePosixPath(name).stem) if (found := lms_id(part))), None)


def _zipped_notebook(info: zipfile.ZipInfo, suffixes: tuple[str, ...] = (".ipynb",)) -> bool:
    """A notebook (a file ending in one of ``suffixes``) in an archive, not a folder, a hidden
    file, a checkpoint, or one of macOS's resource forks. Its folders do not matter
    otherwise: nothing is unpacked."""
    parts = PurePosixPath(info.filename).parts
    return (
        not info.is_dir()
        and info.filename.lower().endswith(suffixes)
        and not parts[-1].startswith(".")
        and not any(part in ("__MACOSX", ".ipynb_checkpoints") for part in parts)
    )


def _size(count: int) -> str:
    return f"{count / 2**20:,.1f}".removesuffix(".0") + " MiB" if count >= 2**20 else f"{count:,} bytes"


def _notebook_json(path: Path, data: bytes, notices: list[str]) -> Any:
    """The file's JSON, in whichever encoding the JSON standard allows (UTF-8, with or
    without a byte order mark, UTF-16, UTF-32); otherwise an error that says what the file
    is instead, since learners hand in the wrong file more often than a bad one."""
    if not data.strip():
        raise GraderError(
            f"{path}: the file is empty ({len(data)} bytes): the notebook was probably handed in before it was "
            "saved. Save it in Jupyter (File > Save Notebook), check that the file is not empty, and hand it in again."
        )
    if (what := _what_it_is(path, data)) is not None:
        raise GraderError(f"{path}: {what}, not a Jupyter notebook. {HINT}")
    encoding = json.detect_encoding(data)
    try:
        text = data.decode(encoding, "surrogatepass")
    except UnicodeDecodeError:
        raise GraderError(f"{path}: not a text file, so not a Jupyter notebook. {HINT}") from None
    if encoding != "utf-8":
        notices.append(
            f"the file is saved as {encoding.upper().replace('-SIG', ' with a byte order mark')}, not plain UTF-8 "
            "as Jupyter saves notebooks: it was read all the same"
        )
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise GraderError(f"{path}: not a Jupyter notebook (not JSON: {error}). {HINT}") from None


def _what_it_is(path: Path, data: bytes) -> str | None:
    """What a file that cannot be a notebook is, by its first bytes or its suffix: the
    message a student can act on (a notebook downloaded as HTML, a script, a PDF)."""
    start = data.lstrip()[:16].lower()
    if start.startswith((b"<!doctype html", b"<html")):
        return "an HTML page (the notebook downloaded or exported as HTML)"
    if start.startswith(b"%pdf"):
        return "a PDF (the notebook printed or exported)"
    if path.suffix.lower() == ".py" and not start.startswith(b"{"):
        return "a Python script (the notebook exported as .py)"
    return None


def _clean_text(value: Any, notices: list[str]) -> Any:
    """The JSON with every lone surrogate replaced by U+FFFD: Python keeps them in strings,
    but writing the grading notebook, sending code to the kernel or printing a report would
    fail on them, and with them the whole class's run. The student is told."""
    found = [False]

    def clean(item: Any) -> Any:
        if isinstance(item, str):
            if SURROGATE.search(item):
                found[0] = True
                return SURROGATE.sub(REPLACEMENT, item)
            return item
        if isinstance(item, list):
            return [clean(element) for element in item]
        if isinstance(item, dict):
            return {clean(key): clean(element) for key, element in item.items()}
        return item

    cleaned = clean(value)
    if found[0]:
        notices.append(
            "the notebook holds characters that are not valid Unicode text (lone surrogates, such as a "
            f"\\udc80 escape), which cannot be saved or run: each was replaced with {REPLACEMENT} before grading"
        )
    return cleaned


def _nbformat_4(path: Path, raw: Any, notices: list[str]) -> NotebookNode:
    """The notebook in nbformat 4: an nbformat 3 notebook (worksheets) converted as Jupyter
    converts it when it opens it; another version, or no list of cells, is refused."""
    version = raw.get("nbformat") if isinstance(raw, dict) else None
    if version == 3 and isinstance(raw.get("worksheets"), list):
        try:
            nb = nbformat.convert(nbformat.from_dict(raw), 4)
        except Exception as error:  # nbformat's converter on a damaged old notebook
            raise GraderError(
                f"{path}: a notebook in the old format 3 that could not be converted ({error}). Open it in Jupyter, "
                "save it (Jupyter saves format 4), and hand it in again."
            ) from None
        notices.append("the notebook is in the old format 3: converted to format 4 as Jupyter does when it opens it")
        raw = nb
    elif isinstance(version, int) and version != 4:
        raise GraderError(
            f"{path}: a notebook in notebook format {version}, which the grader does not read (it reads 3 and 4). "
            "Open it in Jupyter and save it, or hand in the exercise notebook."
        )
    if not isinstance(raw, dict) or not isinstance(raw.get("cells"), list) or raw.get("nbformat") != 4:
        raise GraderError(f"{path}: not a Jupyter notebook in nbformat 4 (no list of cells). {HINT}")
    return nbformat.from_dict(raw)


def _repair_cell(path: Path, cell: object, hint: str) -> None:
    """Give a cell the fields the grader reads (metadata, a tag list, an id or None, its
    source as one string); only a cell without a type is past repair."""
    # from_dict made every dict in the notebook a NotebookNode (a dict with attribute access).
    if not isinstance(cell, NotebookNode) or not isinstance(cell.get("cell_type"), str):
        raise GraderError(f"{path}: a cell without a cell_type: the file is damaged. {hint}")
    if not isinstance(cell.get("metadata"), dict):
        cell.metadata = nbformat.NotebookNode()
    if not isinstance(cell.metadata.get("tags", []), list):
        cell.metadata.tags = []
    if not isinstance(cell.get("id"), (str, type(None))):
        cell.id = None
    source = cell.get("source", "")
    cell.source = "".join(map(str, source)) if isinstance(source, list) else str(source)


def _chapter_in_name(submission: Submission, names: list[str]) -> str | None:
    """The chapter the file's name (or, in a zip, the notebook's) names: only when it names
    one. A name that holds two ('01_tensors_started_after_02_autograd_lecture') tells
    nothing; one chapter's name inside another's counts as the longer one only."""
    text = submission.path.stem + (f" {PurePosixPath(submission.inner).stem}" if submission.inner else "")
    found = [name for name in names if name in text]
    found = [name for name in found if not any(name != other and name in other for other in found)]
    return found[0] if len(found) == 1 else None


def _declared_chapter(nb: NotebookNode) -> str | None:
    """The chapter release wrote into the notebook's metadata; None when there is none, or
    something else than a name there (a hand edit, another tool's save)."""
    grader_meta = nb.metadata.get("grader")
    declared = grader_meta.get("chapter") if isinstance(grader_meta, dict) else None
    return declared if isinstance(declared, str) and declared else None


def _overlap(chapter: Chapter, nb: NotebookNode) -> int:
    """How many of the chapter's task cells (by id) and task headings the notebook has."""
    ids = {chapter.nb.cells[i].get("id") for t in chapter.tasks for i in (t.heading, *t.cells)} - {None}
    numbers = {task.number for task in chapter.tasks}
    return sum(cell.get("id") in ids for cell in nb.cells) + sum(heading_number(cell) in numbers for cell in nb.cells)


def chapter_of(submission: Submission, chapters: dict[str, Chapter]) -> Chapter:
    """The chapter a submission is: the one its metadata names (release wrote it), else the
    one its file name names, when the notebook has that chapter's exercises; else the one
    whose exercises it has. The file name comes last because students and LMSs rename
    files (an LMS's prefixes, "final", another chapter's name) far more often than anything
    rewrites a notebook's metadata or cells; the student is told when it misled.

    Whether it is the class's chapter is grade.py's call (a notebook of another chapter is
    refused there, with what to hand in)."""
    path, nb = submission.path, submission.nb
    names = sorted(chapters)
    declared = _declared_chapter(nb)
    if declared is not None and declared not in chapters:
        raise GraderError(
            f"{path}: its metadata names chapter {declared!r}, which has no exercises (chapters: {', '.join(names)})."
        )
    named = _chapter_in_name(submission, names)
    scores = {candidate: _overlap(chapter, nb) for candidate, chapter in chapters.items()}
    name = next((candidate for candidate in (declared, named) if candidate and scores[candidate] > 0), None)
    if name is None:
        best = max(scores.values(), default=0)
        winners = [candidate for candidate, score in scores.items() if score == best]
        if best > 0 and len(winners) == 1:
            name = winners[0]
        elif declared or named:
            given = declared or named
            raise GraderError(
                f"{path}: graded as chapter {given}, but it has none of its exercises. "
                f"Hand in the {given} exercise notebook."
            )
        else:
            raise GraderError(
                f"{path}: cannot tell which chapter's exercises this is. Name the file after "
                f"its chapter ({', '.join(n + '.ipynb' for n in names)})."
            )
    if declared is not None and declared != name:
        submission.notices.append(
            f"the notebook's metadata says chapter {declared}, but it has chapter {name}'s exercises: graded as {name}"
        )
    elif named is not None and named != name:
        submission.notices.append(
            f"the file's name says chapter {named}, but the notebook is chapter {name}'s: graded as {name}"
        )
    return chapters[name]


def markdown_solutions(chapter: Chapter, submission: Submission) -> set[str]:
    """The tasks whose solution cell the learner turned into a markdown cell (Jupyter's "M"
    key, or the cell type menu): found by its id, or by its BEGIN SOLUTION line under the
    task's heading. Their answer is unmatched, and the learner is told why."""
    ids = {chapter.nb.cells[t.solution].get("id"): t.number for t in chapter.tasks}
    found = {
        ids[cell.get("id")] for cell in submission.nb.cells if cell.cell_type == "markdown" and cell.get("id") in ids
    }
    current = None
    for cell in submission.nb.cells:
        current = heading_number(cell) or current
        if current is not None and cell.cell_type == "markdown" and BEGIN in cell.source:
            found.add(current)
    return found & {task.number for task in chapter.tasks}


def match_solutions(chapter: Chapter, submission: Submission) -> dict[str, str | None]:
    """Task number -> the learner's code for its solution cell (None when not found).

    An id that several of the submission's cells hold names none of them: VS Code's Jupyter
    extension and Notebook 6.2 copy a cell with its id, so the pasted scratch copy (often
    below, often broken) would otherwise be taken for the answer. Such cells are found
    under their heading instead, the first there first, as Jupyter keeps the first."""
    nb = submission.nb
    solution_ids = {chapter.nb.cells[t.solution].get("id"): t for t in chapter.tasks}
    other_ids = {c.get("id") for c in chapter.nb.cells} - set(solution_ids) - {None}
    other_sources = {c.source.strip() for c in chapter.nb.cells if role(c) in ("check", "hidden", "setup")}
    held = Counter(cell.get("id") for cell in nb.cells)

    def own_id(cell: NotebookNode) -> str | None:
        """The cell's id where it names this cell alone."""
        return cell.get("id") if held[cell.get("id")] == 1 else None

    by_id = {own_id(cell): cell for cell in nb.cells if cell.cell_type == "code" and own_id(cell)}

    sections: dict[str, list[NotebookNode]] = {}
    current: list[NotebookNode] | None = None
    for cell in nb.cells:
        number = heading_number(cell)
        if number is not None:
            current = sections.setdefault(number, [])
        elif current is not None and cell.cell_type == "code":
            current.append(cell)

    def from_heading(number: str) -> NotebookNode | None:
        candidates = [
            cell
            for cell in sections.get(number, [])
            # (by the id it holds, shared or not: a pasted copy of another task's answer, or of a
            # check, is no candidate here)
            if cell.get("id") not in other_ids
            and cell.source.strip() not in other_sources
            and (cell.get("id") not in solution_ids or solution_ids[cell.get("id")].number == number)
        ]
        for wanted in (lambda c: "solution" in c.metadata.get("tags", []), lambda c: BEGIN in c.source, lambda c: True):
            chosen = [cell for cell in candidates if wanted(cell)]
            if chosen:
                return chosen[0]
        return None

    answers: dict[str, str | None] = {}
    for task in chapter.tasks:
        cell = by_id.get(chapter.nb.cells[task.solution].get("id")) or from_heading(task.number)
        answers[task.number] = cell.source if cell is not None else UNMATCHED
    return answers
