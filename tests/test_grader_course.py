"""The course's real exercise notebooks under the grader.

- exercises/ is exactly what `python -m grader release` writes today, byte for byte;
- the instructor's solutions score full marks, untouched exercises score zero;
- for every task, the other correct answer in exercise_answers.py passes and the typical
  wrong one fails with the message meant for it (all tasks of a chapter in one notebook:
  one failing task does not hide the others);
- tampering with the checks changes no grade;
- an infinite loop and a killed kernel each cost only their own task.

All submissions go to one `grade` command (a module fixture): one pytest start, one
kernel per notebook.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from exercise_answers import ANSWERS
from grader.notebook import load_chapter
from grader.release import release

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS, EXERCISES = ROOT / "solutions", ROOT / "exercises"
CHAPTERS = sorted(path.stem for path in SOLUTIONS.glob("*.ipynb"))
CELL_TIMEOUT = 20  # seconds: the infinite loop below costs this much


def test_every_chapter_has_answers_to_test_its_checks():
    assert CHAPTERS and CHAPTERS == sorted(ANSWERS)
    for name in CHAPTERS:
        assert [t.number for t in load_chapter(SOLUTIONS / f"{name}.ipynb").tasks] == list(ANSWERS[name])


def test_committed_exercises_equal_a_fresh_release(tmp_path):
    written = release(SOLUTIONS, tmp_path)
    assert sorted(p.name for p in EXERCISES.glob("*.ipynb")) == sorted(p.name for p in written), (
        "exercises/ and solutions/ hold different chapters: run `python -m grader release`")
    for path in written:
        assert (EXERCISES / path.name).read_bytes() == path.read_bytes(), (
            f"exercises/{path.name} is not what release writes: run `python -m grader release` "
            "(never edit exercises by hand)")
    again = release(SOLUTIONS, tmp_path / "again")
    assert [p.read_bytes() for p in again] == [p.read_bytes() for p in written]


def solution_ids(chapter):
    return {t.number: chapter.nb.cells[t.solution].id for t in chapter.tasks}


def with_answers(exercise, chapter, answers):
    nb = nbformat.from_dict(json.loads(json.dumps(exercise)))
    ids = solution_ids(chapter)
    for number, code in answers.items():
        next(c for c in nb.cells if c.get("id") == ids[number]).source = code
    return nb


def tamper(nb, chapter):
    """Edit the first check into a bare success line, delete the second, clear every
    output, strip every tag, add a 'hidden' cell of the learner's own, give every cell a
    new id (as copying the cells into a fresh notebook does)."""
    nb = nbformat.from_dict(json.loads(json.dumps(nb)))
    first, second = chapter.tasks[0], chapter.tasks[1]
    check_ids = [chapter.nb.cells[t.checks[0]].id for t in (first, second)]
    next(c for c in nb.cells if c.get("id") == check_ids[0]).source = f'print("Exercise {first.number} passed")'
    nb.cells = [c for c in nb.cells if c.get("id") != check_ids[1]]
    own = nbformat.v4.new_code_cell("pass", id="own-hidden")
    own.metadata["tags"] = ["hidden"]
    nb.cells.append(own)
    for n, c in enumerate(nb.cells):
        c.metadata.pop("tags", None)
        c.id = f"copied-{n}"
        if c.cell_type == "code":
            c.outputs, c.execution_count = [], None
    return nb


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("course")
    exercises = root / "exercises"
    release(SOLUTIONS, exercises)
    submissions = {}
    for name in CHAPTERS:
        chapter = load_chapter(SOLUTIONS / f"{name}.ipynb")
        exercise = nbformat.read(exercises / f"{name}.ipynb", as_version=4)
        right = {t.number: chapter.nb.cells[t.solution].source for t in chapter.tasks}
        alternative = {number: a["alternative"] for number, a in ANSWERS[name].items()}
        wrong = {number: a["wrong"] for number, a in ANSWERS[name].items()}
        # The exercise with each stub line replaced by `pass`: nothing answered, nothing raised.
        stubs = {c.get("id"): c.source for c in exercise.cells}
        emptied = {t.number: stubs[chapter.nb.cells[t.solution].id].replace(
            f'raise NotImplementedError("Exercise {t.number}")', "pass") for t in chapter.tasks}
        submissions.update({
            f"{name}-solutions": chapter.nb,
            f"{name}-untouched": exercise,
            f"{name}-emptied": with_answers(exercise, chapter, emptied),
            f"{name}-alternative": with_answers(exercise, chapter, alternative),
            f"{name}-wrong": with_answers(exercise, chapter, wrong),
            f"{name}-tampered_right": tamper(with_answers(exercise, chapter, right), chapter),
            f"{name}-tampered_wrong": tamper(with_answers(exercise, chapter, wrong), chapter),
        })
        if name == CHAPTERS[0]:
            first, second = chapter.tasks[0].number, chapter.tasks[1].number
            submissions[f"{name}-lost"] = with_answers(exercise, chapter, {
                **right, first: "while True:\n    pass", second: "import os\nos._exit(1)"})
    paths = []
    for label, nb in submissions.items():
        paths.append(root / f"{label}.ipynb")
        nbformat.write(nb, paths[-1])
    # Another chapter's exercise notebook, handed in under this chapter's name.
    (root / "mixed_up").mkdir()
    paths.append(root / "mixed_up" / f"{CHAPTERS[0]}.ipynb")
    paths[-1].write_bytes((exercises / f"{CHAPTERS[-1]}.ipynb").read_bytes())
    before = {path: hashlib.sha256(path.read_bytes()).hexdigest() for path in paths}
    report = root / "grades.json"
    run = subprocess.run(
        [sys.executable, "-m", "grader", "grade", *map(str, paths), "--report", str(report),
         "--cell-timeout", str(CELL_TIMEOUT)],
        capture_output=True, text=True, timeout=1500)
    entries = {}
    for entry in json.loads(report.read_text())["submissions"]:
        path = Path(entry["file"])
        entries[path.stem if path.parent == root else path.parent.name] = entry
    return {"run": run, "report": entries, "before": before}


def verdicts(graded, label):
    entry = graded["report"][label]
    assert entry["error"] is None, entry["error"]
    return {t["task"]: (t["passed"], t["message"]) for t in entry["tasks"]}


@pytest.mark.parametrize("name", CHAPTERS)
def test_solutions_score_full_marks(graded, name):
    result = verdicts(graded, f"{name}-solutions")
    assert result == {number: (True, f"Exercise {number} passed") for number in ANSWERS[name]}


@pytest.mark.parametrize("name", CHAPTERS)
def test_untouched_exercises_score_zero_each_task_with_its_own_message(graded, name):
    result = verdicts(graded, f"{name}-untouched")
    for number, (passed, message) in result.items():
        assert not passed and f"not answered yet" in message and f"Exercise {number}" in message


@pytest.mark.parametrize("name", CHAPTERS)
def test_checks_bite_when_nothing_was_answered(graded, name):
    """With the stubs replaced by `pass`, no solution raises: every check must then fail
    on one of its own assertions (e.g. "x is not defined: ..."), not on a NameError."""
    entry = graded["report"][f"{name}-emptied"]
    assert [t["reason"] for t in entry["tasks"]] == ["check_failed"] * len(entry["tasks"]), entry["tasks"]


@pytest.mark.parametrize("name", CHAPTERS)
def test_alternative_answers_pass(graded, name):
    result = verdicts(graded, f"{name}-alternative")
    failed = {number: message for number, (passed, message) in result.items() if not passed}
    assert not failed, f"correct alternative answers failed: {failed}"


@pytest.mark.parametrize("name", CHAPTERS)
def test_wrong_answers_fail_with_the_intended_message(graded, name):
    result = verdicts(graded, f"{name}-wrong")
    for number, answer in ANSWERS[name].items():
        passed, message = result[number]
        assert not passed, f"Exercise {number}: the typical wrong answer passed"
        assert answer["hint"] in message, f"Exercise {number}: {message!r} lacks {answer['hint']!r}"
    assert {t["reason"] for t in graded["report"][f"{name}-wrong"]["tasks"]} == {"check_failed"}


@pytest.mark.parametrize("name", CHAPTERS)
def test_tampering_changes_no_grade(graded, name):
    assert verdicts(graded, f"{name}-tampered_wrong") == verdicts(graded, f"{name}-wrong")
    assert verdicts(graded, f"{name}-tampered_right") == verdicts(graded, f"{name}-solutions")


def test_infinite_loop_and_killed_kernel_cost_only_their_task(graded):
    result = verdicts(graded, f"{CHAPTERS[0]}-lost")
    (first, loop), (second, died), *rest = result.items()
    assert loop == (False, f"timed out after {CELL_TIMEOUT} s (an infinite loop?) in your solution cell")
    assert died == (False, "the Python kernel died (os._exit(), a crash, or out of memory) in your solution cell")
    assert rest and all(passed for _, (passed, _) in rest), rest


def test_another_chapters_notebook_is_a_clear_error(graded):
    error = graded["report"]["mixed_up"]["error"]
    assert f"named for chapter {CHAPTERS[0]} but is the exercise notebook of chapter {CHAPTERS[-1]}" in error


def test_grading_leaves_submissions_untouched_and_reports_failure(graded):
    for path, digest in graded["before"].items():
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest, path
    assert graded["run"].returncode == 1 and "Traceback" not in graded["run"].stderr, graded["run"].stderr
