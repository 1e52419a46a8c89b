"""Run notebooks top to bottom in a fresh kernel and store them executed: `make notebooks`.

Notebooks are stored with their outputs (a reader on GitHub sees them; nbval compares
them), so after changing a chapter, vizlib or coursekit, its notebooks are re-executed
with this script. Each runs in its own folder, as JupyterLab runs it, and the per-cell
timing metadata nbclient adds is dropped, so a re-run with the same results changes
nothing but execution counts. A live view (a widget) is stored as its picture alone, as
`make lab` saves it (coursekit/saved_views.py says why). A cell that raises stops the run,
except in cells tagged ``raises-exception``; the notebook is then left as it was.

    .venv/bin/python scripts/execute_notebooks.py course/02_autograd.ipynb solutions/02_autograd.ipynb
    .venv/bin/python scripts/execute_notebooks.py            # every notebook of course/ and solutions/

Remember `python -m grader release` after changing solutions/.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

# A script knows the checkout by its own place: the repository's packages (harness.paths, coursekit)
# are imported from it, also where the project is not installed.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from coursekit.saved_views import drop_live_views  # noqa: E402 - after the path it is found on
from harness.paths import COURSE, SOLUTIONS  # noqa: E402

CELL_TIMEOUT = 600


def execute(path: Path) -> float:
    """Execute the notebook at ``path`` in place; the seconds it took."""
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    # coalesce_streams: a progress bar's redraws are stored as the text a reader sees, not
    # as one output per redraw.
    NotebookClient(
        nb,
        timeout=CELL_TIMEOUT,
        kernel_name="python3",
        coalesce_streams=True,
        resources={"metadata": {"path": str(path.parent)}},
    ).execute()
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
    drop_live_views(nb)
    nbformat.write(nb, path)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "notebooks", nargs="*", type=Path, help="notebooks to run (default: every notebook of course/ and solutions/)"
    )
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted(COURSE.glob("*.ipynb")) + sorted(SOLUTIONS.glob("*.ipynb"))
    failed = False
    for path in paths:
        try:
            print(f"{path}: {execute(path):.1f} s", flush=True)
        except CellExecutionError as error:
            print(f"{path}: FAILED, left unchanged\n{error}", file=sys.stderr)
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
