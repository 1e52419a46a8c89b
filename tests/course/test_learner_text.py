"""No sentence a learner reads speaks of the course's own tests.

A learner reads about PyTorch: the chapters' and the exercises' markdown, their code (the
messages that checks print are in it) and the outputs stored under the cells. Whether an
output is compared by nbval, or a progress bar is deterministic for the test run, is the
course's machinery, not a fact about PyTorch. Cell tags (``nbval-ignore-output``) are
metadata, not text, and are not read here.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "course").glob("*.ipynb")) + sorted((ROOT / "exercises").glob("*.ipynb"))

# Phrases that speak of the test harness. "the test(s)" is allowed before the words that
# make it a statistics or machine-learning term (a test set, test time, test accuracy).
HARNESS = re.compile(
    r"nbval|pytest|make test|test suite|course's tests|our tests"
    r"|is not compared|are not compared|output is compared|outputs are compared"
    r"|this cell prints the same|prints the same (?:on|final line|output)|deterministic progress bar"
    r"|\bthe tests?\b(?! (?:set|time|data|accuracy|loss|split)\b)",
    re.IGNORECASE,
)


def learner_text(cell: nbformat.NotebookNode) -> list[str]:
    """What a learner reads of a cell: its source and the text of its outputs."""
    texts = [cell.source]
    for output in cell.get("outputs", []):
        if "text" in output:
            texts.append(output["text"])
        elif "text/plain" in output.get("data", {}):
            texts.append(output["data"]["text/plain"])
        elif output.get("output_type") == "error":
            texts.append(f"{output['ename']}: {output['evalue']}")
    return texts


def harness_mentions(path: Path, root: Path = ROOT) -> list[str]:
    """`notebook [cell]: "...phrase..."` for every phrase about the tests in the notebook."""
    found = []
    for index, cell in enumerate(nbformat.read(path, as_version=4).cells):
        for text in learner_text(cell):
            for match in HARNESS.finditer(text):
                context = text[max(0, match.start() - 40) : match.end() + 40].replace("\n", " ")
                found.append(f'{path.relative_to(root)} [{index}] ({cell.cell_type}): "...{context}..."')
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_learner_text_speaks_of_the_tests(path: Path) -> None:
    mentions = harness_mentions(path)
    assert not mentions, (
        "a sentence a learner reads speaks of the course's tests; say what it means for "
        "PyTorch, or nothing (cell numbers are 0-based, markdown included):\n" + "\n".join(mentions)
    )


def test_the_search_finds_each_kind_of_mention(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("The loss on the test set falls."),  # allowed
        nbformat.v4.new_markdown_cell("This cell's output is not compared."),
        nbformat.v4.new_code_cell(
            "print(1)", outputs=[nbformat.v4.new_output("stream", text="a deterministic progress bar\n")]
        ),
        nbformat.v4.new_code_cell("assert ok, 'as the test expects'"),
    ]
    path = tmp_path / "course" / "99_fixture.ipynb"
    path.parent.mkdir()
    nbformat.write(nb, path)
    mentions = harness_mentions(path, root=tmp_path)
    assert [m.split(" (")[0] for m in mentions] == [
        "course/99_fixture.ipynb [1]",
        "course/99_fixture.ipynb [2]",
        "course/99_fixture.ipynb [3]",
    ]
