"""Other answers to every graded exercise, for testing the checks themselves.

One package per chapter (``ch01/`` for solutions/01_tensors.ipynb, ...; a plain ``chNN.py``
module would do as well), each with a dict ``TASKS`` from task number ("1.3", the number in
"### Exercise 1.3") to a ``Task``. A package's ``__init__.py`` assembles ``TASKS`` from one
module per task (``ch01/task_1_3.py`` defines ``TASK`` for exercise 1.3; where one task's
answers run long, its further wrong answers are in a ``task_N_M_more.py``, as in
``ch06/task_6_1_more.py``), and ``shared.py`` holds the cells and helpers that several of the
chapter's tasks use. A ``Task`` has:

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
    # What the message must contain; a few alternatives where which part of the check catches
    # the answer is the allocator's choice (an id() reused or not), each message a right one.
    hint: str | tuple[str, ...]

    def told(self, message: str) -> bool:
        """Whether ``message`` says what this mistake's message must say."""
        hints = (self.hint,) if isinstance(self.hint, str) else self.hint
        return any(hint in message for hint in hints)


@dataclass(frozen=True)
class Task:
    alternative: str
    wrong: list[Wrong] = field(default_factory=list)
    other_right: list[str] = field(default_factory=list)


def _chapter_modules() -> dict[str, dict[str, Task]]:
    """Chapter name (the solutions notebook's stem) -> its tasks, from the chNN packages (or modules)."""
    here = Path(__file__).resolve().parent
    solutions = here.parents[2] / "solutions"
    chapters = {}
    for path in sorted(solutions.glob("*.ipynb")):
        name = f"ch{path.stem.split('_')[0]}"
        if (here / name / "__init__.py").exists() or (here / f"{name}.py").exists():
            chapters[path.stem] = import_module(f".{name}", __name__).TASKS
    return chapters


ANSWERS: dict[str, dict[str, Task]] = _chapter_modules()
