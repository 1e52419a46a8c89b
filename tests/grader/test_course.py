"""The course's real exercise notebooks under the grader.

- exercises/ is exactly what `python -m grader release` writes today, byte for byte;
- the instructor's solutions score full marks, untouched exercises score zero;
- for every task, the other correct answer in answers/ passes, each typical wrong one fails
  with the message meant for it, and with nothing answered (the stub made a `pass`) the
  check fails on its own assertion. The first wrong answer of every task goes into one
  submission ("wrong-0"), graded like a learner's; the other answers test the same checks
  and run in one kernel per chapter (one_kernel.py says why that is sound), since a
  submission of its own costs a kernel start each;
- tampering with the checks changes no grade ("wrong-0" is tampered and earns nothing;
  the first chapter also grades its right answers tampered, and they earn full marks);
- an infinite loop and a killed kernel each cost only their own task;
- a wrong answer that deadlocks (its `why` says so) fails its own task, through the
  check's time limit, and every other task of that submission still passes;
- grading leaves no process behind (chapter 05's checks start processes, and one of its
  wrong answers deadlocks them).

Each chapter's submissions go to one `grade` command (a module fixture per chapter): one
pytest start per chapter, one kernel per notebook.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import Hashable
from pathlib import Path

import nbformat
import psutil
import pytest

from grader.host.notebook import Chapter, load_chapter
from grader.host.release import release

from .answers import ANSWERS
from .helpers import Graded, grade, tamper, with_answers, write_submissions
from .one_kernel import Answer, Verdict, run_answers

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS, EXERCISES = ROOT / "solutions", ROOT / "exercises"
CHAPTERS = sorted(path.stem for path in SOLUTIONS.glob("*.ipynb"))
CELL_TIMEOUT = 20  # seconds: the infinite loop below costs this much; a deadlock check takes 10 s
WRONG = [
    (name, number, k)
    for name in CHAPTERS
    for number, task in ANSWERS.get(name, {}).items()
    for k in range(len(task.wrong))
]
DEADLOCKS = [(name, number, k) for name, number, k in WRONG if "deadlock" in ANSWERS[name][number].wrong[k].why]
# A task's further wrong answers, for one kernel per chapter (those that deadlock: a submission each).
FURTHER = [(name, number, k) for name, number, k in WRONG if k >= 1 and (name, number, k) not in DEADLOCKS]


def test_every_chapter_has_answers_to_test_its_checks():
    assert CHAPTERS and CHAPTERS == sorted(ANSWERS)
    for name in CHAPTERS:
        assert [t.number for t in load_chapter(SOLUTIONS / f"{name}.ipynb").tasks] == list(ANSWERS[name])
        assert all(task.wrong for task in ANSWERS[name].values()), f"{name}: a task without a wrong answer"


def test_committed_exercises_equal_a_fresh_release(tmp_path):
    written = release(SOLUTIONS, tmp_path)
    assert sorted(p.name for p in EXERCISES.glob("*.ipynb")) == sorted(p.name for p in written), (
        "exercises/ and solutions/ hold different chapters: run `python -m grader release`"
    )
    for path in written:
        assert (EXERCISES / path.name).read_bytes() == path.read_bytes(), (
            f"exercises/{path.name} is not what release writes: run `python -m grader release` "
            "(never edit exercises by hand)"
        )
    again = release(SOLUTIONS, tmp_path / "again")
    assert [p.read_bytes() for p in again] == [p.read_bytes() for p in written]


def emptied_answers(chapter: Chapter, exercise: nbformat.NotebookNode) -> dict[str, str]:
    """Each task's solution cell as the exercise has it, each stub line made a `pass`:
    nothing answered, nothing raised."""
    stubs = {c.get("id"): c.source for c in exercise.cells}
    return {
        t.number: stubs[chapter.nb.cells[t.solution].id].replace(
            f'raise NotImplementedError("Exercise {t.number}")', "pass"
        )
        for t in chapter.tasks
    }


def chapter_submissions(name: str, exercises: Path) -> dict[str, nbformat.NotebookNode]:
    chapter = load_chapter(SOLUTIONS / f"{name}.ipynb")
    exercise = nbformat.read(exercises / f"{name}.ipynb", as_version=4)
    tasks = ANSWERS[name]
    right = {t.number: chapter.nb.cells[t.solution].source for t in chapter.tasks}
    first_wrong = {number: task.wrong[0].code for number, task in tasks.items()}
    # The submissions that wait (a deadlock's time limit, an endless loop's cell timeout)
    # go first: the grader runs them in this order, --jobs at a time, so their waits pass
    # while the other job grades the rest instead of after everything else.
    submissions: dict[str, nbformat.NotebookNode] = {}
    for _, number, k in (d for d in DEADLOCKS if d[0] == name):
        submissions[f"deadlock-{number}"] = with_answers(
            exercise, chapter, {**right, number: tasks[number].wrong[k].code}
        )
    if name == CHAPTERS[0]:
        first, second = chapter.tasks[0].number, chapter.tasks[1].number
        # An idle endless loop: it costs the cell timeout without a core (test_grading.py
        # interrupts a busy one).
        endless = "import time\n\nwhile True:\n    time.sleep(0.1)"
        submissions["lost"] = with_answers(
            exercise, chapter, {**right, first: endless, second: "import os\nos._exit(1)"}
        )
    submissions |= {
        "solutions": chapter.nb,
        "untouched": exercise,
        # Every wrong answer's verdict is read from a tampered notebook: its checks edited,
        # deleted, untagged and renamed must not change what it earns.
        "wrong-0": tamper(with_answers(exercise, chapter, first_wrong), chapter),
    }
    if name == CHAPTERS[0]:
        submissions["tampered_right"] = tamper(with_answers(exercise, chapter, right), chapter)
    return {f"{name}-{label}": nb for label, nb in submissions.items()}


def grade_chapter(name: str, root: Path) -> Graded:
    """One chapter's submissions through one `grade` command. The first chapter's also
    carry a mixed-up file: another chapter's exercises under this chapter's name."""
    exercises = root / "exercises"
    release(SOLUTIONS, exercises)
    submissions = chapter_submissions(name, exercises)
    if name == CHAPTERS[0]:
        submissions[f"mixed_up/{name}"] = nbformat.read(exercises / f"{CHAPTERS[-1]}.ipynb", as_version=4)
    paths = write_submissions(root, submissions)
    before = {path: hashlib.sha256(path.read_bytes()).hexdigest() for path in paths}
    token = uuid.uuid4().hex  # every process of this grading inherits it (outside the sandboxes)
    temp = root / "tmp"  # the grader's folders: each sandboxed kernel's command line names its own
    temp.mkdir()
    env = {**os.environ, "COURSE_TEST_GRADING": token, "TMPDIR": str(temp)}
    result = grade(root, paths, CELL_TIMEOUT, timeout=1800, env=env)
    result.before, result.token, result.temp = before, token, temp
    return result


@pytest.fixture(scope="class")
def further(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[dict[tuple[str, Hashable], Verdict], dict[str, Verdict]]:
    """The chapter's further wrong answers, its alternative answers and nothing answered,
    each task's right answer after them, in one kernel."""
    name = request.cls.name
    chapter = load_chapter(SOLUTIONS / f"{name}.ipynb")
    emptied = emptied_answers(chapter, nbformat.read(EXERCISES / f"{name}.ipynb", as_version=4))
    answers: dict[str, list[Answer]] = {}
    for number, task in ANSWERS[name].items():
        answers[number] = [Answer(k, task.wrong[k].code) for c, n, k in FURTHER if (c, n) == (name, number)]
        answers[number] += [Answer("alternative", task.alternative), Answer("emptied", emptied[number], alone=True)]
        answers[number] += [Answer(("right", k), code) for k, code in enumerate(task.other_right)]
    return run_answers(chapter, answers, tmp_path_factory.mktemp(f"{name}-further"))


@pytest.fixture(scope="class")
def graded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Graded:
    """The chapter's grading (the test class's ``name``), run once for all its tests."""
    name = request.cls.name
    return grade_chapter(name, tmp_path_factory.mktemp(name))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Each chapter class's wrong answers and deadlocks: one test each."""
    name = getattr(metafunc.cls, "name", None)
    first = [case for case in WRONG if case[2] == 0]
    for argname, cases in (("wrong_case", first), ("further_case", FURTHER), ("deadlock_case", DEADLOCKS)):
        if name is not None and argname in metafunc.fixturenames:
            mine = [(number, k) for chapter, number, k in cases if chapter == name]
            metafunc.parametrize(argname, mine, ids=[f"{number}-{k}" for number, k in mine])


class ChapterTests:
    """The tests of one chapter. A class per chapter (made below) is a scope of its own, so
    pytest-xdist's ``--dist loadscope`` hands each chapter to the next free worker instead
    of grading all of them on one."""

    name: str

    def test_solutions_score_full_marks(self, graded):
        name = self.name
        assert graded.verdicts(f"{name}-solutions") == {
            number: (True, f"Exercise {number} passed") for number in ANSWERS[name]
        }

    def test_untouched_exercises_score_zero_each_task_with_its_own_message(self, graded):
        name = self.name
        for number, (passed, message) in graded.verdicts(f"{name}-untouched").items():
            assert not passed and "not answered yet" in message and f"Exercise {number}" in message

    def test_checks_bite_when_nothing_was_answered(self, further):
        """With the stubs replaced by `pass` (and nothing else answered), no solution raises:
        every check must then fail on one of its own assertions (e.g. "x is not defined:
        ..."), not on a NameError."""
        verdicts = {number: further[0][(number, "emptied")] for number in ANSWERS[self.name]}
        bad = {
            n: v.message
            for n, v in verdicts.items()
            if v.passed or v.solution_raised or not v.message.startswith("AssertionError: ")
        }
        assert not bad, bad

    def test_alternative_answers_pass(self, further):
        verdicts = {
            (number, key): further[0][(number, key)]
            for number, task in ANSWERS[self.name].items()
            for key in ["alternative", *(("right", k) for k in range(len(task.other_right)))]
        }
        failed = {number: verdict.message for number, verdict in verdicts.items() if not verdict.passed}
        assert not failed, f"correct alternative answers failed: {failed}"

    def test_wrong_answer_fails_with_the_intended_message(self, graded, wrong_case):
        name, (number, k) = self.name, wrong_case
        wrong = ANSWERS[name][number].wrong[k]
        label = f"{name}-wrong-{k}"
        passed, message = graded.verdicts(label)[number]
        assert not passed, f"Exercise {number}: a wrong answer passed ({wrong.why})"
        assert wrong.told(message), f"Exercise {number} ({wrong.why}): {message!r} lacks {wrong.hint!r}"
        reason = next(t["reason"] for t in graded.entries[label]["tasks"] if t["task"] == number)
        assert reason == "check_failed", (reason, message)

    def test_further_wrong_answer_fails_with_the_intended_message(self, further, further_case):
        name, (number, k) = self.name, further_case
        wrong = ANSWERS[name][number].wrong[k]
        verdict = further[0][(number, k)]
        assert not verdict.passed, f"Exercise {number}: a wrong answer passed ({wrong.why})"
        assert wrong.told(verdict.message), f"Exercise {number} ({wrong.why}): {verdict.message!r} lacks {wrong.hint!r}"
        assert not verdict.solution_raised, verdict.message  # the check failed, not the answer's cell

    def test_right_answers_pass_after_the_wrong_ones_in_the_same_kernel(self, further):
        """No wrong answer left the kernel changed for what follows it."""
        failed = {number: v.message for number, v in further[1].items() if not v.passed}
        assert not failed, failed

    def test_tampered_checks_earn_a_wrong_answer_nothing(self, graded):
        """wrong-0 is tampered (its first check edited into a bare success line, its second
        deleted): every task still fails, each with its own check's message (the test above)."""
        name = self.name
        verdicts = graded.verdicts(f"{name}-wrong-0")
        assert list(verdicts) == list(ANSWERS[name])
        assert not any(passed for passed, _ in verdicts.values()), verdicts

    def test_grading_leaves_submissions_untouched_and_reports_failure(self, graded):
        result = graded
        for path, digest in result.before.items():
            assert hashlib.sha256(path.read_bytes()).hexdigest() == digest, path
        assert result.run.returncode == 1 and "Traceback" not in result.run.stderr, result.run.stderr

    def test_grading_leaves_no_process_behind(self, graded):
        token, temp = graded.token, str(graded.temp)
        left = []
        for process in psutil.process_iter():
            try:
                if process.status() != psutil.STATUS_ZOMBIE and (
                    process.environ().get("COURSE_TEST_GRADING") == token or any(temp in p for p in process.cmdline())
                ):
                    left.append(process.cmdline())
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
        assert not left, left
        assert not list(graded.temp.iterdir())


class DeadlockTests:
    """For a chapter with wrong answers that deadlock its ranks (their ``why`` says so)."""

    def test_a_deadlock_costs_only_its_own_task(self, graded, deadlock_case):
        name, (number, k) = self.name, deadlock_case
        label = f"{name}-deadlock-{number}"
        verdicts = graded.verdicts(label)
        passed, message = verdicts.pop(number)
        assert not passed and ANSWERS[name][number].wrong[k].told(message), message
        assert graded.reasons(label)[list(ANSWERS[name]).index(number)] == "check_failed"
        assert all(passed for passed, _ in verdicts.values()), verdicts


class FirstChapterTests:
    """The first chapter's grading also carries a lost kernel and a mixed-up file."""

    def test_tampering_takes_nothing_from_right_answers(self, graded):
        assert graded.verdicts(f"{CHAPTERS[0]}-tampered_right") == graded.verdicts(f"{CHAPTERS[0]}-solutions")

    def test_infinite_loop_and_killed_kernel_cost_only_their_task(self, graded):
        (first, loop), (second, died), *rest = graded.verdicts(f"{CHAPTERS[0]}-lost").items()
        assert loop == (False, f"timed out after {CELL_TIMEOUT} s (an infinite loop?) in your solution cell")
        assert died == (False, "the Python kernel died (os._exit(), a crash, or out of memory) in your solution cell")
        assert rest and all(passed for _, (passed, _) in rest), rest

    def test_another_chapters_notebook_is_a_clear_error(self, graded):
        entry = graded.entries[f"mixed_up/{CHAPTERS[0]}"]
        assert f"the exercise notebook of chapter {CHAPTERS[-1]}" in entry["error"]
        assert f"Hand in your {CHAPTERS[0]} notebook" in entry["error"]
        assert entry["handed_in_chapter"] == CHAPTERS[-1] and entry["tasks"] == []


for _name in CHAPTERS:  # TestChapter01, TestChapter02, ...: one class per chapter
    _cls = f"TestChapter{_name.split('_')[0]}"
    _bases = (
        ChapterTests,
        *([FirstChapterTests] if _name == CHAPTERS[0] else []),
        *([DeadlockTests] if any(chapter == _name for chapter, _, _ in DEADLOCKS) else []),
    )
    globals()[_cls] = type(_cls, _bases, {"name": _name, "__doc__": f"Chapter {_name} under the grader."})


@pytest.mark.parametrize("name", CHAPTERS)
def test_the_grading_command_in_each_exercise_notebook_works_from_the_course_folder(name):
    """The intro and the last cell tell the learner what to run from the top folder of the
    course; that command must name the file where it really is."""
    exercise = nbformat.read(EXERCISES / f"{name}.ipynb", as_version=4)
    command = f".venv/bin/python -m grader grade exercises/{name}.ipynb"
    for cell in (exercise.cells[0], exercise.cells[-1]):
        assert command in cell.source, f"{name}: {cell.get('id')} must show `{command}`"
    assert (ROOT / "exercises" / f"{name}.ipynb").is_file()
    assert "Check cells come without output" in exercise.cells[0].source, (
        f"{name}: the intro must say that check cells ship without output (a fresh notebook shows no verdict)"
    )


@pytest.mark.parametrize("name", CHAPTERS)
def test_a_fresh_exercise_notebook_shows_no_verdict(name):
    """Before a learner runs anything, no check shows "passed" (its answer still raises) and
    no cell of a task shows an output; setup cells may (a task can point at what they show)."""
    chapter = load_chapter(EXERCISES / f"{name}.ipynb")
    task_cells = {index for task in chapter.tasks for index in task.cells}
    assert chapter.tasks and all(task.checks for task in chapter.tasks)
    for index, cell in enumerate(chapter.nb.cells):
        if cell.cell_type != "code":
            continue
        shown = json.dumps(cell.outputs)
        assert "passed" not in shown, f"{name}, cell {index}: a stored verdict"
        if index in task_cells:
            assert not cell.outputs and cell.execution_count is None, f"{name}, cell {index}: a stored output"
