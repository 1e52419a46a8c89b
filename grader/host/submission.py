"""Read a learner's submission, decide its chapter and find its answer for each task.

Only the code of the learner's solution cells is ever used. A solution cell is found
(1) by its nbformat cell id, which the exercise notebook inherits from the instructor's
copy and JupyterLab keeps across saves, even when tags are removed or outputs cleared;
else (2) under the learner's own ``### Exercise N.M`` heading: the cell tagged
``solution``, else the one with a ``### BEGIN SOLUTION`` line, else the first code cell
that is not one of the instructor's other cells. A task with none of these is reported
as unmatched; the learner's other cells (checks, scratch work) are never looked at.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from grader.host.errors import GraderError, WrongChapter
from grader.host.notebook import BEGIN, Chapter, heading_number, role

UNMATCHED = None


@dataclass
class Submission:
    path: Path
    nb: NotebookNode


def read_submission(path: Path) -> Submission:
    """Read a submission (never writing to it); GraderError if it is not a notebook."""
    path = Path(path)
    hint = "Hand in the exercise notebook itself (the .ipynb file you worked in)."
    nb = nbformat.from_dict(_notebook_json(path, hint))
    # Only solution code is ever taken from a submission, so damage elsewhere (a hand
    # edit, another tool's save) is smoothed over rather than allowed to crash the grader.
    if not isinstance(nb.get("metadata"), dict):
        nb.metadata = nbformat.NotebookNode()
    for cell in nb.cells:
        _repair_cell(path, cell, hint)
    return Submission(path, nb)


def _notebook_json(path: Path, hint: str) -> dict:
    """The file's JSON, if it is a notebook in nbformat 4; otherwise an error that says
    what the file is instead, since learners hand in the wrong file more often than a bad one."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise GraderError(f"{path}: no such file. Check the path.") from None
    except (UnicodeDecodeError, IsADirectoryError, PermissionError) as error:
        raise GraderError(f"{path}: cannot read it as a notebook ({error}). {hint}") from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as error:
        raise GraderError(f"{path}: not a Jupyter notebook (not JSON: {error}). {hint}") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("cells"), list) or raw.get("nbformat") != 4:
        raise GraderError(f"{path}: not a Jupyter notebook in nbformat 4 (no list of cells). {hint}")
    return raw


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


def _chapter_in_name(path: Path, names: list[str]) -> str | None:
    found = [name for name in names if name in path.stem]
    return max(found, key=len) if found else None


def _overlap(chapter: Chapter, nb: NotebookNode) -> int:
    """How many of the chapter's task cells (by id) and task headings the notebook has."""
    ids = {chapter.nb.cells[i].get("id") for t in chapter.tasks for i in (t.heading, *t.cells)} - {None}
    numbers = {task.number for task in chapter.tasks}
    return sum(cell.get("id") in ids for cell in nb.cells) + sum(heading_number(cell) in numbers for cell in nb.cells)


def chapter_of(submission: Submission, chapters: dict[str, Chapter]) -> Chapter:
    """The chapter a submission belongs to: the name release wrote into its metadata and
    the file name must not disagree; with neither, the content decides. A notebook of
    another chapter is a clear error rather than a zero."""
    path, nb = submission.path, submission.nb
    names = sorted(chapters)
    grader_meta = nb.metadata.get("grader")
    declared = grader_meta.get("chapter") if isinstance(grader_meta, dict) else None
    named = _chapter_in_name(path, names)
    if declared is not None and declared not in chapters:
        raise GraderError(
            f"{path}: its metadata names chapter {declared!r}, which has no exercises (chapters: {', '.join(names)})."
        )
    if declared and named and declared != named:
        raise WrongChapter(
            f"{path}: the file is named for chapter {named} but is the exercise notebook of "
            f"chapter {declared}. Hand in your {named} notebook, or rename the file.",
            declared,
        )
    name = declared or named
    if name is None:
        scores = {candidate: _overlap(chapter, nb) for candidate, chapter in chapters.items()}
        best = max(scores.values(), default=0)
        winners = [candidate for candidate, score in scores.items() if score == best]
        if best == 0 or len(winners) > 1:
            raise GraderError(
                f"{path}: cannot tell which chapter's exercises this is. Name the file after "
                f"its chapter ({', '.join(n + '.ipynb' for n in names)})."
            )
        name = winners[0]
    chapter = chapters[name]
    if _overlap(chapter, nb) == 0:
        others = [other for other, c in chapters.items() if other != name and _overlap(c, nb) > 0]
        where = f"it looks like chapter {others[0]}'s" if others else "it has none of its exercises"
        message = f"{path}: graded as chapter {name}, but {where}. Hand in the {name} exercise notebook."
        raise WrongChapter(message, others[0]) if others else GraderError(message)
    return chapter


def match_solutions(chapter: Chapter, submission: Submission) -> dict[str, str | None]:
    """Task number -> the learner's code for its solution cell (None when not found)."""
    nb = submission.nb
    solution_ids = {chapter.nb.cells[t.solution].get("id"): t for t in chapter.tasks}
    other_ids = {c.get("id") for c in chapter.nb.cells} - set(solution_ids)
    other_sources = {c.source.strip() for c in chapter.nb.cells if role(c) in ("check", "hidden", "setup")}
    by_id = {cell.get("id"): cell for cell in nb.cells if cell.cell_type == "code" and cell.get("id")}

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
