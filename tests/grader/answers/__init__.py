"""Other answers to every graded exercise, for testing the checks themselves.

One module per chapter (``ch01.py`` for solutions/01_tensors.ipynb, ...), each a dict
``TASKS`` from task number ("1.3", the number in "### Exercise 1.3") to a ``Task``:

- ``alternative``: a whole solution cell, as a learner could leave it, that is correct but
  written differently from the one in solutions/. Every check of the task, hidden ones
  included, must accept it: checks must not insist on one way of writing the answer.
- ``wrong``: whole solution cells with typical mistakes (a forgotten zero_grad, an in-place
  op left in, the right number reached by a method the task rules out...). The task must
  fail on each, with a message containing its ``hint``: a learner is told what went
  wrong, not just that something did.
- ``other_right``: further correct cells, each one a check once refused (a decorated
  function, a default argument...): kept so that no check refuses them again.

Code outside the BEGIN/END SOLUTION region of a solution cell sets the task up, so the
sources repeat it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path


@dataclass(frozen=True)
class Wrong:
    """A typical mistake: why it is wrong, the cell, and what the failing check must say."""

    why: str
    code: str
    hint: str


@dataclass(frozen=True)
class Task:
    alternative: str
    wrong: list[Wrong] = field(default_factory=list)
    other_right: list[str] = field(default_factory=list)


def _chapter_modules() -> dict[str, dict[str, Task]]:
    """Chapter name (the solutions notebook's stem) -> its tasks, from the chNN modules."""
    solutions = Path(__file__).resolve().parents[3] / "solutions"
    chapters = {}
    for path in sorted(solutions.glob("*.ipynb")):
        module = Path(__file__).with_name(f"ch{path.stem.split('_')[0]}.py")
        if module.exists():
            chapters[path.stem] = import_module(f".{module.stem}", __name__).TASKS
    return chapters


ANSWERS: dict[str, dict[str, Task]] = _chapter_modules()
