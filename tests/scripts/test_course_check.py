"""scripts/course_check.py, what `make test-torch-floor` runs on the oldest PyTorch: it must
find every cell that raises (but not those that raise on purpose), a kernel that dies, and
every task a solution loses; here on the pinned PyTorch, with real kernels and the real grader."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from harness.paths import REPO
from tests.scripts.helpers import load_script

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
    solution, exercise = REPO / "solutions" / "01_tensors.ipynb", REPO / "exercises" / "01_tensors.ipynb"
    grading = course_check.grade_solutions([solution, exercise], jobs=2, sandbox=False)
    missing, seconds = grading.missing, grading.seconds
    tasks = [
        cell.source.split()[2]  # "### Exercise 1.3 (2 points)"
        for cell in nbformat.read(solution, as_version=4).cells
        if cell.cell_type == "markdown" and cell.source.startswith("### Exercise")
    ]
    assert len(tasks) >= 3
    assert [line.split(":")[0] for line in missing] == [f"{exercise} {task}" for task in tasks]
    assert all(" 0.0/" in line for line in missing) and seconds > 0
    solved, unanswered = grading.points["solutions/01_tensors.ipynb"], grading.points["exercises/01_tensors.ipynb"]
    assert sorted(solved) == sorted(unanswered) == sorted(tasks)
    assert all(score == points > 0 for score, points in solved.values())
    assert all(score == 0 for score, _ in unanswered.values())


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


def test_keeps_the_executed_chapter_and_lists_the_gpu_parts_it_skipped(tmp_path):
    import torch

    path = notebook(tmp_path, ("from coursekit.gpu import has_cuda\nhas_cuda('the fp16 run')", []), ("print(1)", []))
    kept = tmp_path / "kept"
    kept.mkdir()
    run = course_check.run_chapter(path, kept)
    assert run.skipped == ([] if torch.cuda.is_available() else ["no GPU: skipped the fp16 run"])
    assert nbformat.read(kept / path.name, as_version=4).cells[1].outputs[0]["text"] == "1\n"


def test_the_summary_names_the_machine_what_raised_what_skipped_and_each_task_short_of_full_marks():
    summary = {
        "machine": {
            "date": "2026-11-26",
            "gpus": ["H100"],
            "torch": "2.11.0",
            "cuda": "13.0",
            "python": "3.12.3",
            "cpus": 16,
        },
        "chapters": {
            "04_amp": {"seconds": 43.5, "errors": [], "stopped": None, "skipped": []},
            "05_distributed": {
                "seconds": 85.1,
                "errors": ["cell 11: AttributeError: no"],
                "stopped": None,
                "skipped": ["no GPU: skipped x"],
            },
        },
        "grading": {"how": "unsandboxed", "points": {"solutions/03b_training.ipynb": {"3.7": [3, 3], "3.8": [0, 2]}}},
    }
    text = course_check.summary_markdown(summary)
    assert text.splitlines()[0] == "2026-11-26: H100, PyTorch 2.11.0 (CUDA 13.0), Python 3.12.3, 16 CPUs"
    assert "| 04_amp | 43.5 | none | 0 |" in text
    assert "| 05_distributed | 85.1 | cell 11: AttributeError: no | 1 |" in text
    assert "Reference solutions graded (unsandboxed):" in text
    assert "| solutions/03b_training.ipynb | 3/5 | 3.8 |" in text
