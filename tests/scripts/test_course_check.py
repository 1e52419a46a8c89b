"""scripts/course_check.py, what `make test-torch-floor` runs on the oldest PyTorch: it must
find every cell that raises (but not those that raise on purpose), a kernel that dies, and
every task a solution loses; here on the pinned PyTorch, with real kernels and the real grader."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from tests.scripts.helpers import ROOT, load_script

course_check = load_script("course_check")


def notebook(tmp_path: Path, *cells: tuple[str, list[str]]) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source, metadata={"tags": tags}) for source, tags in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = tmp_path / "chapter.ipynb"
    nbformat.write(nb, path)
    return path


def test_lists_each_cell_that_raises_and_not_those_tagged_to_raise(tmp_path):
    path = notebook(
        tmp_path,
        ("x = 1", []),
        ("1 / 0", []),
        ("raise ValueError('shown on purpose')", ["raises-exception"]),
        ("import torch\ntorch.no_such_function()", []),
        ("print(x)", []),
    )
    run = course_check.run_chapter(path)
    assert run.errors == [
        "cell 1: ZeroDivisionError: division by zero",
        "cell 3: AttributeError: module 'torch' has no attribute 'no_such_function'",
    ]
    assert run.stopped is None and not run.ok


def test_a_chapter_that_runs_clean_is_ok(tmp_path):
    run = course_check.run_chapter(notebook(tmp_path, ("import torch\nprint(torch.ones(2).sum())", [])))
    assert run.ok and run.errors == [] and run.seconds > 0


def test_a_kernel_that_dies_stops_the_chapter_and_says_so(tmp_path):
    run = course_check.run_chapter(notebook(tmp_path, ("import os\nos._exit(3)", []), ("print('never')", [])))
    assert not run.ok
    assert run.stopped is not None and "DeadKernelError" in run.stopped


def test_full_marks_for_a_solution_and_every_lost_task_of_an_empty_exercise():
    solution, exercise = ROOT / "solutions" / "01_tensors.ipynb", ROOT / "exercises" / "01_tensors.ipynb"
    missing, seconds = course_check.grade_solutions([solution, exercise], jobs=2, sandbox=False)
    tasks = [
        cell.source.split()[2]  # "### Exercise 1.3 (2 points)"
        for cell in nbformat.read(solution, as_version=4).cells
        if cell.cell_type == "markdown" and cell.source.startswith("### Exercise")
    ]
    assert len(tasks) >= 3
    assert [line.split(":")[0] for line in missing] == [f"{exercise} {task}" for task in tasks]
    assert all(" 0.0/" in line for line in missing) and seconds > 0


def test_refuses_a_notebook_that_is_not_a_chapter_or_a_solution(tmp_path, capsys):
    assert course_check.main([str(notebook(tmp_path, ("pass", [])))]) == 2
    assert "not a chapter or solution of this course" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("report", "expected"),
    [
        ({"submissions": [{"file": "a.ipynb", "error": None, "tasks": []}]}, []),
        (
            {"submissions": [{"file": "a.ipynb", "error": "not a notebook: fix the JSON", "tasks": []}]},
            ["a.ipynb: not a notebook: fix the JSON"],
        ),
    ],
)
def test_a_submission_the_grader_could_not_read_is_short_of_full_marks(report, expected):
    assert course_check.short_of_full_marks(report) == expected
