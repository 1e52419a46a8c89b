"""The stored notebooks keep the course's conventions (nbval then checks their outputs).

- stored executed: every code cell ran, once, in order, so a reader sees real outputs;
- compared: at most a few cells per notebook escape nbval's comparison (tags
  nbval-ignore-output / nbval-skip), and only where output truly varies;
- no warning and no error reaches a reader unless the chapter shows it on purpose: a
  stderr output only in cells tagged ``shows-warning``, an error only in cells tagged
  ``raises-exception``;
- no path of the machine that ran them (home folders, temporary folders, the checkout);
- code lines of at most 100 characters, so that a cell reads without sideways scrolling in
  JupyterLab, Colab or GitHub (exercises/ are written from solutions/, so they follow);
- a live view is stored as its picture, not as a widget (scripts/execute_notebooks.py says why);
- each chapter ends by pointing to its exercise notebook, which exists.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbconvert import HTMLExporter

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "course").glob("*.ipynb")) + sorted((ROOT / "solutions").glob("*.ipynb"))
CHAPTERS = sorted(p for p in (ROOT / "course").glob("0[1-9]*_*.ipynb"))
CODE_LINE_AT_MOST = 100  # characters: what JupyterLab, Colab and GitHub show without scrolling
IGNORED_AT_MOST = 0.12  # share of the cells with output that nbval does not compare
NOT_COMPARED = {"nbval-ignore-output", "nbval-skip"}
# Home, temporary and checkout folders of the machines this course is run on.
MACHINE_PATH = re.compile(r"/(?:root|tmp|work)/|/(?:home|Users)/\w|[A-Z]:\\\\Users")


def cells(path: Path) -> list[dict]:
    return json.loads(path.read_text())["cells"]


def code_cells(path: Path) -> list[dict]:
    return [c for c in cells(path) if c["cell_type"] == "code" and "".join(c["source"]).strip()]


def tags(cell: dict) -> set[str]:
    return set(cell.get("metadata", {}).get("tags", []))


def label(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=label)
def test_stored_executed_in_order(path):
    counts = [c["execution_count"] for c in code_cells(path)]
    assert counts == list(range(1, len(counts) + 1)), (
        f"{label(path)}: run it top to bottom in a fresh kernel (scripts/execute_notebooks.py)"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=label)
def test_most_outputs_are_compared_by_nbval(path):
    with_output = [c for c in code_cells(path) if c["outputs"]]
    ignored = [c.get("id") for c in with_output if tags(c) & NOT_COMPARED]
    assert len(ignored) <= IGNORED_AT_MOST * len(with_output), (
        f"{label(path)}: {len(ignored)} of {len(with_output)} cells with output escape nbval: {ignored}"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=label)
def test_no_warning_or_error_unless_shown_on_purpose(path):
    for cell in code_cells(path):
        for output in cell["outputs"]:
            if output.get("name") == "stderr":
                assert "shows-warning" in tags(cell), (
                    f"{label(path)}, cell {cell.get('id')}: prints to stderr: "
                    f"{''.join(output['text'])[:300]!r}. Fix the cause, or tag the cell shows-warning "
                    "if the chapter shows this warning on purpose."
                )
            if output["output_type"] == "error":
                assert "raises-exception" in tags(cell), f"{label(path)}, cell {cell.get('id')}: {output['ename']}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=label)
def test_code_lines_fit_the_notebook_width(path):
    too_long = [
        f"cell {cell.get('id')}: {line[:60]}... ({len(line)} characters)"
        for cell in code_cells(path)
        for line in "".join(cell["source"]).splitlines()
        if len(line) > CODE_LINE_AT_MOST
    ]
    assert not too_long, (
        f"{label(path)}: {len(too_long)} code lines longer than {CODE_LINE_AT_MOST} characters; wrap them "
        "(ruff format --line-length 100 on the cell, long strings split into pieces):\n" + "\n".join(too_long)
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=label)
def test_no_paths_of_the_machine_that_ran_it(path):
    for cell in code_cells(path):
        for output in cell["outputs"]:
            text = json.dumps(output.get("text", "")) + json.dumps(output.get("data", {}).get("text/plain", ""))
            found = MACHINE_PATH.search(text)
            assert not found, f"{label(path)}, cell {cell.get('id')}: output shows the path {found.group(0)!r}..."


@pytest.mark.parametrize("path", NOTEBOOKS + sorted((ROOT / "exercises").glob("*.ipynb")), ids=label)
def test_live_views_are_stored_as_their_pictures(path):
    nb = json.loads(path.read_text())
    assert "widgets" not in nb["metadata"], f"{label(path)}: stored widget state (run scripts/execute_notebooks.py)"
    for cell in nb["cells"]:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            assert "application/vnd.jupyter.widget-view+json" not in data, (
                f"{label(path)}, cell {cell.get('id')}: a stored widget (run scripts/execute_notebooks.py)"
            )


@pytest.mark.parametrize("path", CHAPTERS, ids=label)
def test_chapter_ends_with_a_pointer_to_its_exercises(path):
    last = "".join(cells(path)[-1]["source"])
    assert f"exercises/{path.name}" in last, f"{label(path)}: the summary must link exercises/{path.name}"
    assert (ROOT / "exercises" / path.name).exists() and (ROOT / "solutions" / path.name).exists()


def test_an_html_export_shows_every_stored_graph():
    """nbconvert's HTML (what a course site or an e-mailed export shows) carries each stored
    graph as its inline picture, not the text summary below it."""
    exporter, drawn = HTMLExporter(), 0
    for path in sorted((ROOT / "course").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        stored = sum(
            output.get("data", {}).get("text/html", "").count('class="graph"')
            for cell in nb.cells
            if cell.cell_type == "code"
            for output in cell.outputs
        )
        html, _ = exporter.from_notebook_node(nb)
        assert html.count('class="graph"') == stored, f"{label(path)}: {stored} graphs stored"
        drawn += stored
    assert drawn > 10, "the chapters store their graphs as inline pictures"


SANITIZE_FILES = [ROOT / "tests" / "nbval-sanitize.cfg", ROOT / "grader" / "host" / "nbval-sanitize.cfg"]
# Applies every rule of each file to a long run of characters without a space or of digits,
# as a stored picture's base64 or a printed big number is: a rule tried at every character
# costs the run's length squared (a run of 1 MB: minutes), a rule tried where the run starts
# a few milliseconds.
_LONG_RUNS = """
import re, sys
from nbval.plugin import get_sanitize_patterns
runs = ["QUJD+/" * 170_000, "1234567890" * 20_000]
for path in sys.argv[1:]:
    for regex, replace in get_sanitize_patterns(open(path, encoding="utf-8").read()):
        for run in runs:
            re.sub(regex, replace, "<img src='data:image/png;base64," + run + "'> 3 ms")
"""


def test_the_sanitize_rules_pass_over_a_long_run_without_a_space_at_once():
    """nbval applies each rule to the stored and the fresh output of every cell: a rule such
    as ``\\S*ipykernel_`` tried at every character took 18 s for one graph of chapter 04 (its
    still copy is 90 KB of base64 without a space), and a learner's printed megabyte would
    stall the grader's comparison. A limit a hundred times what the rules take here, far
    below what a rule tried at every character takes."""
    files = [str(path) for path in SANITIZE_FILES]
    subprocess.run([sys.executable, "-c", _LONG_RUNS, *files], check=True, timeout=120)
