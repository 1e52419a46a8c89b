"""`python -m grader grade` end to end on the fixture chapter: real nbval, real kernels.

All submissions go to ONE grade command (a module fixture), as an instructor grading a
class would run it, so each test below reads its verdicts from the same JSON report.
The fixture chapter is plain Python, so a kernel is ready in about a second.
"""

from __future__ import annotations

import hashlib
import os
import threading
import uuid
from pathlib import Path

import nbformat
import psutil
import pytest

from grader.host.notebook import load_chapter
from grader.host.release import release

from .helpers import copied, grade, tamper, with_answers, write_submissions

FIXTURES = Path(__file__).parent / "fixtures"
CHAPTER = load_chapter(FIXTURES / "90_fixture.ipynb")
CELL_TIMEOUT = 10  # seconds; the loops below take this long each (one of them busy)

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


def answered(exercise, answers):
    return with_answers(exercise, CHAPTER, answers)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("grading")
    exercises = root / "exercises"
    release(FIXTURES, exercises)
    exercise = nbformat.read(exercises / "90_fixture.ipynb", as_version=4)
    other = nbformat.read(exercises / "91_other.ipynb", as_version=4)
    other_unlabelled = copied(other)
    del other_unlabelled.metadata["grader"]
    no_solution = answered(exercise, RIGHT)
    no_solution.cells = [c for c in no_solution.cells if c.get("id") != "ex9-2-solution"]
    # Here the learner's own 'hidden' cell sits right after their first answer.
    tampered_right = tamper(answered(exercise, RIGHT), CHAPTER)
    after = next(i for i, c in enumerate(tampered_right.cells) if c.source == RIGHT["9.1"]) + 1
    tampered_right.cells.insert(after, tampered_right.cells.pop())
    # The three that wait out the cell timeout (stubborn: GRACE seconds more) go first and
    # are graded three at once: their waits, idle but for "lost", pass while the quick ones
    # are graded beside them instead of after them (--jobs 3; the default is one per core).
    submissions = {
        "stubborn": answered(
            exercise,
            {
                **RIGHT,
                # idle, as it runs GRACE seconds past the timeout before it is killed
                "9.2": "import time\nwhile True:\n    try:\n        time.sleep(0.1)\n"
                "    except KeyboardInterrupt:\n        pass",
            },
        ),
        "lost": answered(
            exercise, {"9.1": "while True:\n    pass", "9.2": "import os\nos._exit(1)", "9.3": RIGHT["9.3"]}
        ),
        "lost_in_check": answered(
            exercise,
            {
                # idle: only "lost" burns a core (an idle loop times out the same way)
                "9.1": "import time\ndef square(x):\n    while True:\n        time.sleep(0.1)",
                "9.2": RIGHT["9.2"],
                "9.3": "print('x' * 2_000_000)\nlargest = max(scaled)",
            },
        ),
        "solutions": CHAPTER.nb,
        "untouched": exercise,
        "right": answered(exercise, RIGHT),
        "wrong": answered(exercise, WRONG),
        "tampered_right": tampered_right,
        "tampered_wrong": tamper(answered(exercise, WRONG), CHAPTER),
        "hidden_only": answered(exercise, {**RIGHT, "9.1": "def square(x):\n    return {3: 9, -2: 4}.get(x, 0)"}),
        "noisy": answered(
            exercise,
            {
                "9.1": "import warnings\ndef square(x):\n    warnings.warn('slow path')\n    print('debug: x =', x)\n"
                "    return x * x",
                "9.2": "import sys\nprint('working on it', file=sys.stderr)\ntotal = sum(DATA)",
                "9.3": "import warnings\nwarnings.warn('deprecated', DeprecationWarning)\n"
                "largest = max(scaled)\nlargest",
            },
        ),
        # Fails its check, and would loop for ever in the hidden check, which is skipped.
        "hidden_hangs": answered(
            exercise,
            {
                **RIGHT,
                "9.1": "import time\ndef square(x):\n    while x == 0.5:\n        time.sleep(0.1)\n    return x + x",
            },
        ),
        "flagged": answered(
            exercise,
            {
                "9.1": "import builtins\ndef square(x):\n    return x * x",
                "9.2": "import sys\nsys.modules['math'] = None\ntotal = sum(DATA)",
                "9.3": RIGHT["9.3"],
            },
        ),
        "no_solution": no_solution,
        "markers": answered(
            exercise,
            {
                "9.1": "# NBVAL_RAISES_EXCEPTION\ndef square(x):\n    return x * x\nraise ValueError('oops')",
                "9.2": "# NBVAL_SKIP\ntotal = sum(DATA)",
                "9.3": RIGHT["9.3"],
            },
        ),
        "90_fixture_other_chapter": other,
        "unlabelled/90_fixture": other_unlabelled,
    }
    paths = write_submissions(root, submissions)
    paths.append(root / "not_a_notebook.ipynb")
    paths[-1].write_text("print('this is a script')\n")
    before = {path: hashlib.sha256(path.read_bytes()).hexdigest() for path in paths}
    result = grade(root, paths, CELL_TIMEOUT, solutions=FIXTURES, options=("--jobs", "3"))
    result.before = before
    return result


def test_instructor_copy_and_other_correct_answers_score_full_marks(graded):
    for name in ("solutions", "right", "tampered_right"):
        assert graded.entries[name]["score"] == 6.0, graded.entries[name]
        assert graded.verdicts(name) == {n: (True, f"Exercise {n} passed") for n in ("9.1", "9.2", "9.3")}


def test_untouched_exercise_fails_every_task_as_not_answered(graded):
    for number, (passed, message) in graded.verdicts("untouched").items():
        assert not passed and "not answered yet" in message and f"Exercise {number}" in message
    assert graded.entries["untouched"]["score"] == 0


def test_wrong_answers_fail_with_the_checks_message(graded):
    assert graded.verdicts("wrong") == {n: (False, hint) for n, hint in HINTS.items()}
    assert graded.reasons("wrong") == ["check_failed"] * 3


def test_tampering_with_checks_changes_no_grade(graded):
    assert graded.verdicts("tampered_wrong") == graded.verdicts("wrong")
    assert graded.verdicts("tampered_right") == graded.verdicts("right")


def test_hidden_checks_catch_answers_fitted_to_the_visible_ones(graded):
    result = graded.verdicts("hidden_only")
    assert result["9.1"] == (False, "hidden check: square must work for any number, not only the examples")
    assert result["9.2"][0] and result["9.3"][0]


def test_a_task_that_failed_skips_its_hidden_checks(graded):
    """9.1's answer fails its check, then would loop for ever in the hidden check: that
    cell is not run, so the learner reads the check's message (not a timeout), and the
    other tasks are graded in the same kernel."""
    assert graded.verdicts("hidden_hangs")["9.1"] == (False, HINTS["9.1"])
    assert graded.reasons("hidden_hangs") == ["check_failed", "passed", "passed"]


def test_warnings_stderr_and_debug_prints_cost_nothing(graded):
    assert graded.entries["noisy"]["score"] == 6.0, graded.entries["noisy"]


def test_infinite_loop_and_dead_kernel_fail_only_their_task(graded):
    result = graded.verdicts("lost")
    assert result["9.1"] == (False, f"timed out after {CELL_TIMEOUT} s (an infinite loop?) in your solution cell")
    assert result["9.2"] == (
        False,
        "the Python kernel died (os._exit(), a crash, or out of memory) in your solution cell",
    )
    assert result["9.3"] == (True, "Exercise 9.3 passed")  # graded in a fresh kernel, setup replayed
    assert graded.reasons("lost") == ["timeout", "kernel_died", "passed"]


def test_loop_in_the_check_and_huge_output_fail_only_their_task(graded):
    result = graded.verdicts("lost_in_check")
    assert result["9.1"] == (False, f"timed out after {CELL_TIMEOUT} s (an infinite loop?) in the check on your answer")
    assert result["9.2"] == (True, "Exercise 9.2 passed")
    assert not result["9.3"][0] and result["9.3"][1].startswith("huge output: this cell printed more than")


def test_a_loop_that_swallows_the_interrupt_still_times_out(graded):
    result = graded.verdicts("stubborn")
    assert result["9.2"] == (False, f"timed out after {CELL_TIMEOUT} s (an infinite loop?) in your solution cell")
    assert result["9.1"][0] and result["9.3"][0]


def test_solutions_reaching_into_the_checks_are_flagged_and_not_run(graded):
    result = graded.verdicts("flagged")
    assert not result["9.1"][0] and "checking machinery" in result["9.1"][1] and "builtins" in result["9.1"][1]
    assert not result["9.2"][0] and "sys.modules" in result["9.2"][1]
    assert result["9.3"] == (True, "Exercise 9.3 passed")


def test_nbval_comments_in_a_solution_change_nothing(graded):
    result = graded.verdicts("markers")
    assert result["9.1"] == (False, "your solution raised ValueError: oops")
    assert result["9.2"] == (False, "your solution cell was skipped: remove its NBVAL_SKIP comment")
    assert result["9.3"][0]


def test_a_deleted_solution_cell_is_reported_not_crashed_on(graded):
    result = graded.verdicts("no_solution")
    assert result["9.2"][0] is False and result["9.2"][1].startswith("no solution cell found for Exercise 9.2")
    assert result["9.1"][0] and result["9.3"][0]


def test_wrong_files_get_clear_errors(graded):
    report = graded.entries
    # another chapter's exercises, under this chapter's name or none: refused for the class's chapter
    for label in ("90_fixture_other_chapter", "unlabelled/90_fixture"):
        assert "chapter 91_other" in report[label]["error"] and report[label]["handed_in_chapter"] == "91_other"
        assert "Hand in your 90_fixture notebook" in report[label]["error"]
    assert "not a Jupyter notebook" in report["not_a_notebook"]["error"]
    assert report["not_a_notebook"]["tasks"] == []


def test_cli_prints_a_table_per_submission_and_fails_when_a_task_failed(graded):
    run = graded.run
    assert run.returncode == 1, run.stderr
    assert "Traceback" not in run.stderr
    assert "wrong.ipynb (chapter 90_fixture): 0/6 points" in run.stdout
    assert "9.2   0/3     FAILED  total should be 6, the sum of DATA: use sum()" in run.stdout
    assert "not_a_notebook.ipynb: ERROR" in run.stdout


def test_grading_never_writes_to_submissions(graded):
    for path, digest in graded.before.items():
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest, path


def test_exit_status_zero_when_everything_passed(tmp_path):
    paths = write_submissions(tmp_path, {"91_other": nbformat.read(FIXTURES / "91_other.ipynb", as_version=4)})
    run = grade(tmp_path, paths, CELL_TIMEOUT, solutions=FIXTURES, timeout=300).run
    assert run.returncode == 0, run.stdout + run.stderr
    assert "8.1   1/1     passed  Exercise 8.1 passed" in run.stdout


# What a learner's function prints or displays while its check calls it: not whole lines (text
# printed with end="; ", to which the check's line is glued), a blank line, a displayed value,
# a background thread's chatter. None of it is the check's output.
DEBUG_OUTPUT = {
    "9.1": "from IPython.display import display\n"
    "def square(x):\n"
    '    print("square called with x =", x, end="; ")\n'
    "    print()\n"
    "    display(x)\n"
    "    return x * x",
    "9.2": "import threading, time\n"
    "def _chatter():\n"
    "    for _ in range(40):\n"
    "        print('tick', end=' ')\n"
    "        time.sleep(0.02)\n"
    "threading.Thread(target=_chatter, daemon=True).start()\n"
    "total = sum(DATA)",
    "9.3": RIGHT["9.3"],
}
# Answers that print a check's own line themselves: right or wrong, the line is not theirs to print.
FORGED = {
    "9.1": 'def square(x):\n    print("Exercise 9.1 passed")\n    return x * x',
    "9.2": 'print("Exercise 9.2 passed")\ntotal = len(DATA)',
    "9.3": RIGHT["9.3"],
}


def test_what_an_answer_prints_or_displays_inside_a_check_costs_nothing_but_the_checks_line_is_its_own(tmp_path):
    """A debug print inside a function the check calls costs nothing, whatever its shape; the
    check's line still counts only as the check prints it: an answer that prints it too fails,
    and is told so in a sentence (never nbval's diff)."""
    release(FIXTURES, tmp_path / "exercises")
    exercise = nbformat.read(tmp_path / "exercises" / "90_fixture.ipynb", as_version=4)
    paths = write_submissions(
        tmp_path, {"debug_output": answered(exercise, DEBUG_OUTPUT), "forged": answered(exercise, FORGED)}
    )
    graded = grade(tmp_path, paths, CELL_TIMEOUT, solutions=FIXTURES, timeout=300)
    assert graded.entries["debug_output"]["score"] == 6.0, graded.entries["debug_output"]
    forged = graded.verdicts("forged")
    assert forged["9.2"] == (False, HINTS["9.2"])  # a wrong value fails on its assertion, printed line or not
    passed, message = forged["9.1"]
    assert not passed and graded.reasons("forged")[0] == "output_differs"
    assert "'Exercise 9.1 passed'" in message and "printed" in message
    assert "==" not in message and "\\n" not in message and "\n" not in message  # a sentence, not a diff
    assert forged["9.3"] == (True, "Exercise 9.3 passed")


# A setup cell that kills its kernel: always, or as the test that grades it decides for each
# kernel. In the sandbox nothing outlives a kernel and nothing of the test's is in sight, so
# such a kernel asks through the one folder it shares with the grader (its sockets, see
# sandbox.py): it leaves a note there and waits for the test's answer, "die" or "live".
DIES_ALWAYS = "import os\nos._exit(1)\n"
DIES_IF_TOLD = """\
import os, pathlib, time
from ipykernel import get_connection_file
_here = pathlib.Path(get_connection_file()).parent
(_here / "setup-asks").write_text("{token}")
_answer = _here / "setup-answer"
for _ in range(1200):
    if _answer.exists():
        break
    time.sleep(0.05)
if not _answer.exists() or _answer.read_text() == "die":
    os._exit(1)
"""


def answer_kernels(temp: Path, token: str, answers: list[str], stop: threading.Event) -> None:
    """Answer each kernel that asks (DIES_IF_TOLD with this token), in the order they ask:
    the first gets answers[0], and so on; the last answer goes to any later one."""
    asked: list[Path] = []
    while not stop.is_set():
        # The kernels' socket folders: in the grader's temporary folder, or in /tmp where that path is long.
        for note in [*temp.glob("grader-*/k/setup-asks"), *Path("/tmp").glob("grader-k-*/setup-asks")]:
            try:
                if note in asked or note.read_text() != token:
                    continue
                partial = note.with_name("setup-answer.partial")
                partial.write_text(answers[min(len(asked), len(answers) - 1)])
                partial.rename(note.with_name("setup-answer"))
                asked.append(note)
            except OSError:  # the run ended meanwhile and its folder is gone
                continue
        stop.wait(0.05)


def grade_with_dying_setup(tmp_path: Path, dies: list[str] | None):
    """Grade a correct submission of a chapter whose first setup cell kills the kernel: in
    every kernel (``dies`` None), or as ``dies`` answers the kernels one after the other."""
    token = uuid.uuid4().hex
    solutions = tmp_path / "solutions"
    solutions.mkdir()
    chapter = copied(CHAPTER.nb)
    setup = DIES_ALWAYS if dies is None else DIES_IF_TOLD.format(token=token)
    chapter.cells.insert(1, nbformat.v4.new_code_cell(setup, id="dies"))
    nbformat.write(chapter, solutions / "90_fixture.ipynb")
    release(solutions, tmp_path / "exercises")
    exercise = nbformat.read(tmp_path / "exercises" / "90_fixture.ipynb", as_version=4)
    paths = write_submissions(tmp_path, {"right": answered(exercise, RIGHT)})
    temp = tmp_path / "tmp"
    temp.mkdir()
    stop = threading.Event()
    answering = threading.Thread(target=answer_kernels, args=(temp, token, dies or ["die"], stop), daemon=True)
    answering.start()
    try:
        graded = grade(
            tmp_path, paths, CELL_TIMEOUT, solutions=solutions, env={**os.environ, "TMPDIR": str(temp)}, timeout=300
        )
    finally:
        stop.set()
        answering.join()
    return graded.run, graded.entries["right"]


def test_a_kernel_lost_before_any_exercise_ran_is_retried_not_blamed_on_the_learner(tmp_path):
    """No learner code has run in a setup cell: losing the kernel there (e.g. one that could
    not start on a busy machine) costs no points when a fresh kernel gets through."""
    run, entry = grade_with_dying_setup(tmp_path, ["die", "live"])
    assert entry["score"] == 6.0, entry
    assert "the Python kernel died" in run.stderr and "graded again in a fresh kernel" in run.stderr


def test_a_setup_cell_that_always_kills_the_kernel_ends_with_a_verdict(tmp_path):
    run, entry = grade_with_dying_setup(tmp_path, None)
    assert run.returncode == 1 and entry["score"] == 0
    assert {t["message"] for t in entry["tasks"]} == {
        "the Python kernel died (os._exit(), a crash, or out of memory) in a setup cell"
    }


DETACHED = """\
import os, subprocess, sys
_sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
open(os.path.join(os.environ["GRADER_TEST_PIDS"], str(_sleeper.pid)), "w").close()
"""


def running(pid: int) -> bool:
    """Alive and not a zombie (a killed orphan stays a zombie until init reaps it)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_processes_a_submission_leaves_behind_are_killed_even_unsandboxed(tmp_path):
    """Each answer starts a process in a session of its own (as torchrun does with its ranks),
    which killing the kernel's process group would not reach, then loops forever, kills its
    kernel, or ends normally. Grading still ends with none of them running, and every task
    is graded. Without the sandbox (whose PID namespace ends them all: test_sandbox.py) the
    grader finds them by the marker they inherit (processes.py)."""
    pids = tmp_path / "pids"
    pids.mkdir()
    release(FIXTURES, tmp_path / "exercises")
    exercise = nbformat.read(tmp_path / "exercises" / "90_fixture.ipynb", as_version=4)
    paths = write_submissions(
        tmp_path,
        {
            "detached": answered(
                exercise,
                {
                    "9.1": DETACHED + "import time\nwhile True:\n    time.sleep(0.1)",  # idle: it costs no core
                    "9.2": DETACHED + "os._exit(1)",
                    "9.3": DETACHED + RIGHT["9.3"],
                },
            )
        },
    )
    graded = grade(
        tmp_path,
        paths,
        CELL_TIMEOUT,
        solutions=FIXTURES,
        timeout=300,
        env={**os.environ, "GRADER_TEST_PIDS": str(pids)},
        options=("--no-sandbox",),
    )
    assert graded.reasons("detached") == ["timeout", "kernel_died", "passed"]
    started = [int(path.name) for path in pids.iterdir()]
    assert len(started) == 3, started
    assert not [pid for pid in started if running(pid)]


def test_a_notebook_past_its_time_limit_is_stopped_and_its_later_tasks_not_run(tmp_path):
    """Tester's 12: a solution that hangs costs at most --submission-timeout in all, not a
    cell timeout per task (with the earlier solutions replayed after each)."""
    release(FIXTURES, tmp_path / "exercises")
    exercise = nbformat.read(tmp_path / "exercises" / "90_fixture.ipynb", as_version=4)
    hangs = {**RIGHT, "9.2": "import time\ntime.sleep(600)\n" + RIGHT["9.2"]}
    paths = write_submissions(tmp_path, {"slow": answered(exercise, hangs)})
    options = ("--no-sandbox", "--submission-timeout", "15")
    graded = grade(tmp_path, paths, 300, solutions=FIXTURES, options=options, timeout=300)
    entry = graded.entries["slow"]
    tasks = {t["task"]: t for t in entry["tasks"]}
    assert entry["error"] is None, entry
    assert graded.run.returncode == 1, graded.run.stderr
    assert tasks["9.2"]["reason"] == tasks["9.3"]["reason"] == "time_limit", tasks
    assert tasks["9.2"]["message"].startswith("stopped: the notebook's time limit was reached while this task ran")
    assert tasks["9.3"]["message"].startswith("not run: the notebook's time limit was reached (15 s")
