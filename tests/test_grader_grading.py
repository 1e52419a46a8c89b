"""`python -m grader grade` end to end on the fixture chapter: real nbval, real kernels.

All submissions go to ONE grade command (a module fixture), as an instructor grading a
class would run it, so each test below reads its verdicts from the same JSON report.
The fixture chapter is plain Python, so a kernel is ready in about a second.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from grader.release import release

FIXTURES = Path(__file__).parent / "grader_fixtures" / "solutions"
CELL_TIMEOUT = 10  # seconds; the loops below cost this much each

RIGHT = {
    "9.1": "def square(x):\n    ### BEGIN SOLUTION\n    return x ** 2\n    ### END SOLUTION",
    "9.2": "### BEGIN SOLUTION\ntotal = 0\nfor value in DATA:\n    total += value\n### END SOLUTION",
    "9.3": "### BEGIN SOLUTION\nlargest = sorted(scaled)[-1]\n### END SOLUTION",
}
WRONG = {
    "9.1": "def square(x):\n    return x + x",
    "9.2": "total = len(DATA)",
    "9.3": "largest = min(scaled)",
}
HINTS = {
    "9.1": "square(3) should be 9: multiply x by itself",
    "9.2": "total should be 6, the sum of DATA: use sum()",
    "9.3": "largest should be 30, the biggest value in scaled: use max()",
}


def solution_cell(nb, number):
    return next(c for c in nb.cells if c.get("id") == f"ex{number.replace('.', '-')}-solution")


def with_answers(exercise, answers):
    nb = nbformat.from_dict(json.loads(json.dumps(exercise)))
    for number, code in answers.items():
        solution_cell(nb, number).source = code
    return nb


def tamper(nb):
    """Everything a learner can do to the cells that are not theirs: edit a check into a
    bare success line, delete a check, clear all outputs, strip all tags, add a 'hidden'
    cell of their own."""
    nb = nbformat.from_dict(json.loads(json.dumps(nb)))
    next(c for c in nb.cells if c.get("id") == "ex9-1-check").source = 'print("Exercise 9.1 passed")'
    nb.cells = [c for c in nb.cells if c.get("id") != "ex9-2-check"]
    for c in nb.cells:
        c.metadata.pop("tags", None)
        if c.cell_type == "code":
            c.outputs, c.execution_count = [], None
    own_hidden = nbformat.v4.new_code_cell("pass", id="my-hidden")
    own_hidden.metadata["tags"] = ["hidden"]
    nb.cells.insert(nb.cells.index(solution_cell(nb, "9.1")) + 1, own_hidden)
    return nb


def renumbered(nb):
    """The notebook's cells copied into a new notebook: every cell id is new."""
    nb = nbformat.from_dict(json.loads(json.dumps(nb)))
    for n, c in enumerate(nb.cells):
        c.id = f"copied-{n}"
    return nb


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("grading")
    exercises = root / "exercises"
    release(FIXTURES, exercises)
    exercise = nbformat.read(exercises / "90_fixture.ipynb", as_version=4)
    other = nbformat.read(exercises / "91_other.ipynb", as_version=4)
    other_unlabelled = nbformat.from_dict(json.loads(json.dumps(other)))
    del other_unlabelled.metadata["grader"]
    no_solution = with_answers(exercise, RIGHT)
    no_solution.cells = [c for c in no_solution.cells if c.get("id") != "ex9-2-solution"]
    submissions = {
        "solutions": nbformat.read(FIXTURES / "90_fixture.ipynb", as_version=4),
        "untouched": exercise,
        "right": with_answers(exercise, RIGHT),
        "wrong": with_answers(exercise, WRONG),
        "tampered_right": renumbered(tamper(with_answers(exercise, RIGHT))),
        "tampered_wrong": tamper(with_answers(exercise, WRONG)),
        "hidden_only": with_answers(exercise, {
            **RIGHT, "9.1": "def square(x):\n    return {3: 9, -2: 4}.get(x, 0)"}),
        "noisy": with_answers(exercise, {
            "9.1": "import warnings\ndef square(x):\n    warnings.warn('slow path')\n    print('debug: x =', x)\n"
                   "    return x * x",
            "9.2": "import sys\nprint('working on it', file=sys.stderr)\ntotal = sum(DATA)",
            "9.3": "import warnings\nwarnings.warn('deprecated', DeprecationWarning)\nlargest = max(scaled)\nlargest"}),
        "lost": with_answers(exercise, {
            "9.1": "while True:\n    pass", "9.2": "import os\nos._exit(1)", "9.3": RIGHT["9.3"]}),
        "lost_in_check": with_answers(exercise, {
            "9.1": "def square(x):\n    while True:\n        pass", "9.2": RIGHT["9.2"],
            "9.3": "print('x' * 2_000_000)\nlargest = max(scaled)"}),
        "stubborn": with_answers(exercise, {
            **RIGHT, "9.2": "while True:\n    try:\n        pass\n    except KeyboardInterrupt:\n        pass"}),
        "flagged": with_answers(exercise, {
            "9.1": "import builtins\ndef square(x):\n    return x * x",
            "9.2": "import sys\nsys.modules['math'] = None\ntotal = sum(DATA)", "9.3": RIGHT["9.3"]}),
        "no_solution": no_solution,
        "markers": with_answers(exercise, {
            "9.1": "# NBVAL_RAISES_EXCEPTION\ndef square(x):\n    return x * x\nraise ValueError('oops')",
            "9.2": "# NBVAL_SKIP\ntotal = sum(DATA)", "9.3": RIGHT["9.3"]}),
        "90_fixture_other_chapter": other,
    }
    paths = []
    for name, nb in submissions.items():
        paths.append(root / f"{name}.ipynb")
        nbformat.write(nb, paths[-1])
    (root / "unlabelled").mkdir()
    paths.append(root / "unlabelled" / "90_fixture.ipynb")
    nbformat.write(other_unlabelled, paths[-1])
    paths.append(root / "not_a_notebook.ipynb")
    paths[-1].write_text("print('this is a script')\n")
    before = {path: hashlib.sha256(path.read_bytes()).hexdigest() for path in paths}
    report = root / "grades.json"
    run = subprocess.run(
        [sys.executable, "-m", "grader", "grade", "--solutions", str(FIXTURES), *map(str, paths),
         "--report", str(report), "--cell-timeout", str(CELL_TIMEOUT)],
        capture_output=True, text=True, timeout=900)
    by_name = {}
    for entry in json.loads(report.read_text())["submissions"]:
        path = Path(entry["file"])
        by_name[path.stem if path.parent == root else f"{path.parent.name}/{path.stem}"] = entry
    return {"run": run, "report": by_name, "before": before}


def verdicts(graded, name):
    entry = graded["report"][name]
    assert entry["error"] is None, entry["error"]
    return {t["task"]: (t["passed"], t["message"]) for t in entry["tasks"]}


def reasons(graded, name):
    return [t["reason"] for t in graded["report"][name]["tasks"]]


def test_instructor_copy_and_other_correct_answers_score_full_marks(graded):
    for name in ("solutions", "right", "tampered_right"):
        assert graded["report"][name]["score"] == 6.0, graded["report"][name]
        assert verdicts(graded, name) == {n: (True, f"Exercise {n} passed") for n in ("9.1", "9.2", "9.3")}


def test_untouched_exercise_fails_every_task_as_not_answered(graded):
    for number, (passed, message) in verdicts(graded, "untouched").items():
        assert not passed and "not answered yet" in message and f"Exercise {number}" in message
    assert graded["report"]["untouched"]["score"] == 0


def test_wrong_answers_fail_with_the_checks_message(graded):
    assert verdicts(graded, "wrong") == {n: (False, hint) for n, hint in HINTS.items()}
    assert reasons(graded, "wrong") == ["check_failed"] * 3


def test_tampering_with_checks_changes_no_grade(graded):
    assert verdicts(graded, "tampered_wrong") == verdicts(graded, "wrong")
    assert verdicts(graded, "tampered_right") == verdicts(graded, "right")


def test_hidden_checks_catch_answers_fitted_to_the_visible_ones(graded):
    result = verdicts(graded, "hidden_only")
    assert result["9.1"] == (False, "hidden check: square must work for any number, not only the examples")
    assert result["9.2"][0] and result["9.3"][0]


def test_warnings_stderr_and_debug_prints_cost_nothing(graded):
    assert graded["report"]["noisy"]["score"] == 6.0, graded["report"]["noisy"]


def test_infinite_loop_and_dead_kernel_fail_only_their_task(graded):
    result = verdicts(graded, "lost")
    assert result["9.1"] == (False, f"timed out after {CELL_TIMEOUT} s (an infinite loop?) in your solution cell")
    assert result["9.2"] == (False, "the Python kernel died (os._exit(), a crash, or out of memory) in your solution cell")
    assert result["9.3"] == (True, "Exercise 9.3 passed")  # graded in a fresh kernel, setup replayed
    assert reasons(graded, "lost") == ["timeout", "kernel_died", "passed"]


def test_loop_in_the_check_and_huge_output_fail_only_their_task(graded):
    result = verdicts(graded, "lost_in_check")
    assert result["9.1"] == (False, f"timed out after {CELL_TIMEOUT} s (an infinite loop?) in the check on your answer")
    assert result["9.2"] == (True, "Exercise 9.2 passed")
    assert not result["9.3"][0] and result["9.3"][1].startswith("huge output: this cell printed more than")


def test_a_loop_that_swallows_the_interrupt_still_times_out(graded):
    result = verdicts(graded, "stubborn")
    assert result["9.2"] == (False, f"timed out after {CELL_TIMEOUT} s (an infinite loop?) in your solution cell")
    assert result["9.1"][0] and result["9.3"][0]


def test_solutions_reaching_into_the_checks_are_flagged_and_not_run(graded):
    result = verdicts(graded, "flagged")
    assert not result["9.1"][0] and "checking machinery" in result["9.1"][1] and "builtins" in result["9.1"][1]
    assert not result["9.2"][0] and "sys.modules" in result["9.2"][1]
    assert result["9.3"] == (True, "Exercise 9.3 passed")


def test_nbval_comments_in_a_solution_change_nothing(graded):
    result = verdicts(graded, "markers")
    assert result["9.1"] == (False, "your solution raised ValueError: oops")
    assert result["9.2"] == (False, "your solution cell was skipped: remove its NBVAL_SKIP comment")
    assert result["9.3"][0]


def test_a_deleted_solution_cell_is_reported_not_crashed_on(graded):
    result = verdicts(graded, "no_solution")
    assert result["9.2"][0] is False and result["9.2"][1].startswith("no solution cell found for Exercise 9.2")
    assert result["9.1"][0] and result["9.3"][0]


def test_wrong_files_get_clear_errors(graded):
    report = graded["report"]
    assert "chapter 91_other" in report["90_fixture_other_chapter"]["error"]
    assert "looks like chapter 91_other's" in report["unlabelled/90_fixture"]["error"]
    assert "not a Jupyter notebook" in report["not_a_notebook"]["error"]
    assert report["not_a_notebook"]["tasks"] == []


def test_cli_prints_a_table_per_submission_and_fails_when_a_task_failed(graded):
    run = graded["run"]
    assert run.returncode == 1, run.stderr
    assert "Traceback" not in run.stderr
    assert "wrong.ipynb (chapter 90_fixture): 0/6 points" in run.stdout
    assert "9.2   0/3     FAILED  total should be 6, the sum of DATA: use sum()" in run.stdout
    assert "not_a_notebook.ipynb: ERROR" in run.stdout


def test_grading_never_writes_to_submissions(graded):
    for path, digest in graded["before"].items():
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest, path


def test_exit_status_zero_when_everything_passed(tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "grader", "grade", "--solutions", str(FIXTURES), str(FIXTURES / "91_other.ipynb")],
        capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "8.1   1/1     passed  Exercise 8.1 passed" in run.stdout


DIES_IN_SETUP = """\
import os, pathlib
_flag = os.environ.get("SETUP_DIES")  # "always", or a file: die only while it does not exist
if _flag == "always" or (_flag and not pathlib.Path(_flag).exists()):
    if _flag != "always":
        pathlib.Path(_flag).touch()
    os._exit(1)
"""


def grade_with_dying_setup(tmp_path: Path, how: str) -> tuple[subprocess.CompletedProcess, dict]:
    """Grade a correct submission of a chapter whose first setup cell kills the kernel."""
    solutions = tmp_path / "solutions"
    solutions.mkdir()
    chapter = nbformat.read(FIXTURES / "90_fixture.ipynb", as_version=4)
    chapter.cells.insert(1, nbformat.v4.new_code_cell(DIES_IN_SETUP, id="dies"))
    nbformat.write(chapter, solutions / "90_fixture.ipynb")
    release(solutions, tmp_path / "exercises")
    submission = tmp_path / "right.ipynb"
    nbformat.write(with_answers(nbformat.read(tmp_path / "exercises" / "90_fixture.ipynb", as_version=4), RIGHT),
                   submission)
    report = tmp_path / "grades.json"
    run = subprocess.run(
        [sys.executable, "-m", "grader", "grade", "--solutions", str(solutions), str(submission),
         "--report", str(report), "--cell-timeout", str(CELL_TIMEOUT)],
        capture_output=True, text=True, timeout=300, env={**os.environ, "SETUP_DIES": how})
    return run, json.loads(report.read_text())["submissions"][0]


def test_a_kernel_lost_before_any_exercise_ran_is_retried_not_blamed_on_the_learner(tmp_path):
    """No learner code has run in a setup cell: losing the kernel there (e.g. one that could
    not start on a busy machine) costs no points when a fresh kernel gets through."""
    run, entry = grade_with_dying_setup(tmp_path, str(tmp_path / "died-once"))
    assert entry["score"] == 6.0, entry
    assert "the Python kernel died" in run.stderr and "graded again in a fresh kernel" in run.stderr


def test_a_setup_cell_that_always_kills_the_kernel_ends_with_a_verdict(tmp_path):
    run, entry = grade_with_dying_setup(tmp_path, "always")
    assert run.returncode == 1 and entry["score"] == 0
    assert {t["message"] for t in entry["tasks"]} == {
        "the Python kernel died (os._exit(), a crash, or out of memory) in a setup cell"}
