"""Names a task's check cells define are not there for another task's cells.

The grader skips the hidden checks of a task that has already failed (plugin/recorder.py),
and after a lost kernel (an endless loop, a crash) it rebuilds the state of the tasks
already graded by running their solution cells again, not their checks (host/grade.py).
Both are sound only while no cell reads a name that only another task's check or hidden
cell defined: a check skipped or not replayed would leave a right answer to a later task
failing on a NameError. Read from each cell's code by Python's own symbol tables
(``symtable``): what the cell binds, and what it reads without binding it, in its own
code or in the functions it defines.
"""

from __future__ import annotations

import symtable
from pathlib import Path

import nbformat
import pytest
from IPython.core.inputtransformer2 import TransformerManager

from grader.host.notebook import Chapter, load_chapter

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = sorted((ROOT / "solutions").glob("*.ipynb"))
FIXTURE = Path(__file__).parent / "fixtures" / "90_fixture.ipynb"


def bound_and_read(source: str) -> tuple[set[str], set[str]]:
    """The names a cell binds at its top level, and the global names it reads without
    binding them (its functions' included)."""
    table = symtable.symtable(TransformerManager().transform_cell(source), "<cell>", "exec")
    symbols = table.get_symbols()
    bound = {s.get_name() for s in symbols if s.is_assigned() or s.is_imported()}
    read = {s.get_name() for s in symbols if s.is_referenced()} - bound
    nested = list(table.get_children())
    while nested:
        scope = nested.pop()
        nested.extend(scope.get_children())
        read |= {s.get_name() for s in scope.get_symbols() if s.is_global() and s.is_referenced()} - bound
    return bound, read


def reads_from_checks(chapter: Chapter) -> list[str]:
    """Each cell that reads a name last bound by a check or hidden cell of another task."""
    task_of = chapter.task_of_cell()
    binder: dict[str, tuple[str | None, str | None, int]] = {}  # name -> (task, its cell's role, cell)
    found = []
    for index, cell in enumerate(chapter.nb.cells):
        if cell.cell_type != "code":
            continue
        task = task_of.get(index)
        number = task.number if task else None
        bound, read = bound_and_read(cell.source)
        for name in sorted(read):
            by, role, at = binder.get(name, (None, None, -1))
            if role in ("check", "hidden") and by != number:
                found.append(f"cell {index} reads {name}, which only Exercise {by}'s {role} cell (cell {at}) binds")
        for name in bound:
            binder[name] = (number, task.role_of(index) if task else None, index)
    return found


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_no_cell_relies_on_what_another_tasks_check_defines(path):
    assert not reads_from_checks(load_chapter(path))


def test_a_name_only_a_hidden_check_defines_is_found(tmp_path):
    nb = nbformat.read(FIXTURE, as_version=4)
    hidden = next(c for c in nb.cells if "hidden" in c.metadata.get("tags", []))
    hidden.source = "_probe = 0.25\n" + hidden.source
    later = [c for c in nb.cells if "check" in c.metadata.get("tags", [])][-1]
    later.source = "def _uses():\n    return _probe\n\n\n" + later.source
    nbformat.write(nb, tmp_path / FIXTURE.name)
    found = reads_from_checks(load_chapter(tmp_path / FIXTURE.name))
    assert len(found) == 1 and "reads _probe, which only Exercise 9.1's hidden cell" in found[0], found
