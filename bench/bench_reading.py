"""How long each chapter takes to read: prose words and code lines, turned into minutes.

A chapter should read in about an hour (COURSE.md). Cell counts alone hide what a cell
holds, so this counts what a learner reads: the words of the markdown cells and the code
lines (blank lines and comment-only lines left out; outputs are not counted). Minutes are
estimated at WORDS_PER_MINUTE for technical prose and CODE_LINES_PER_MINUTE for code that
is read and run, not typed: assumptions stated here, not a measurement of readers. Writes
bench/results/reading.md.

    .venv/bin/python -m bench.bench_reading
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import nbformat

from bench.report import table, write_section
from harness.paths import COURSE

WORDS_PER_MINUTE = 200
CODE_LINES_PER_MINUTE = 20


@dataclass(frozen=True)
class Reading:
    cells: int
    words: int
    code_lines: int

    @property
    def minutes(self) -> float:
        return self.words / WORDS_PER_MINUTE + self.code_lines / CODE_LINES_PER_MINUTE


def reading(path: Path) -> Reading:
    """What a learner reads in one notebook."""
    nb = nbformat.read(path, as_version=4)
    words = sum(len(c.source.split()) for c in nb.cells if c.cell_type == "markdown")
    code_lines = sum(
        1
        for c in nb.cells
        if c.cell_type == "code"
        for line in c.source.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    )
    return Reading(len(nb.cells), words, code_lines)


def main() -> None:
    rows = []
    for path in sorted(COURSE.glob("*.ipynb")):
        r = reading(path)
        rows.append([f"`course/{path.name}`", str(r.cells), str(r.words), str(r.code_lines), f"{r.minutes:.0f}"])
    write_section(
        "reading",
        "Chapter length: what a learner reads",
        f"How measured: `.venv/bin/python -m bench.bench_reading`. Words of the markdown cells, code "
        f"lines without blank and comment-only lines; minutes = words / {WORDS_PER_MINUTE} + code "
        f"lines / {CODE_LINES_PER_MINUTE} (an assumed reading pace, the same for every chapter, so the "
        "chapters compare; outputs and pictures not counted).",
        table(["notebook", "cells", "prose words", "code lines", "minutes (estimate)"], rows),
    )


if __name__ == "__main__":
    main()
