"""The repository's folders, for code that runs from a checkout (tests, benchmarks, scripts).

Found from this file's place in the checkout, so they hold wherever the repository is cloned
and whatever the current folder is. The shipped packages do not use them: an installed wheel
has no checkout around it.
"""

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COURSE = REPO / "course"
SOLUTIONS = REPO / "solutions"
EXERCISES = REPO / "exercises"
SCRIPTS = REPO / "scripts"
