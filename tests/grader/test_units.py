"""The grader's pure parts, without a kernel: task discovery, release, matching a
submission to its chapter and tasks, the tampering scan, the sanitize rule, the report."""

from __future__ import annotations

import json
import re
import shutil
import zipfile
from pathlib import Path
from typing import get_args

import nbformat
import pytest

import grader.__main__ as grader_cli
import grader.host.grade as grade_module
from grader.__main__ import default_solutions
from grader.__main__ import main as grader_main
from grader.host.assemble import grading_notebook
from grader.host.errors import GraderError
from grader.host.grade import _unrunnable
from grader.host.notebook import COURSE_ROOT, load_chapter, role
from grader.host.release import exercise_notebook, release, stub
from grader.host.report import as_json, table
from grader.host.results import REASONS, Reason, SubmissionResult, TaskResult
from grader.host.run import sanitize_rules
from grader.host.scan import findings, module_aliases
from grader.host.submission import (
    SUBMISSION_BYTES,
    Submission,
    chapter_of,
    markdown_solutions,
    match_solutions,
    read_submission,
)

FIXTURES = Path(__file__).parent / "fixtures"

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def chapters():
    return {path.stem: load_chapter(path) for path in sorted(FIXTURES.glob("*.ipynb"))}


@pytest.fixture
def chapter(chapters):
    return chapters["90_fixture"]


def exercise(chapter) -> nbformat.NotebookNode:
    return exercise_notebook(chapter)


def cell(nb, cell_id):
    return next(c for c in nb.cells if c.get("id") == cell_id)


def submission(nb, name="90_fixture.ipynb") -> Submission:
    return Submission(Path(name), nbformat.from_dict(json.loads(json.dumps(nb))))


# --- task discovery -----------------------------------------------------------------


def test_tasks_are_found_with_their_cells(chapter):
    found = [(t.number, t.points, len(t.checks), len(t.hidden)) for t in chapter.tasks]
    assert found == [("9.1", 2.0, 1, 1), ("9.2", 3.0, 1, 0), ("9.3", 1.0, 1, 0)]
    assert chapter.nb.cells[chapter.tasks[0].solution].id == "ex9-1-solution"


def test_the_role_of_a_tasks_cell_is_its_tag(chapter):
    for task in chapter.tasks:
        assert [task.role_of(i) for i in task.cells] == [role(chapter.nb.cells[i]) for i in task.cells]
    with pytest.raises(ValueError, match="not one of Exercise 9.1's cells"):
        chapter.tasks[0].role_of(chapter.tasks[1].solution)


@pytest.mark.parametrize(
    "cell_id, change, message",
    [
        ("ex9-2-check", {"tags": []}, r"Exercise 9\.2: no code cell tagged 'check'"),
        ("ex9-2-check", {"tags": ["check", "nbval-skip"]}, r"Exercise 9\.2: cell 8 is a check, so nbval must run it"),
        ("ex9-1-solution", {"tags": ["solution", "check"]}, r"cell 3: a cell can have only one of the tags"),
        ("ex9-3-check", {"execution_count": None}, r"Exercise 9\.3: cell 13 has outputs but no execution count"),
    ],
)
def test_malformed_instructor_notebook_names_the_cell_to_fix(tmp_path, chapter, cell_id, change, message):
    nb = json.loads(json.dumps(chapter.nb))
    target = next(c for c in nb["cells"] if c["id"] == cell_id)
    if "tags" in change:
        target["metadata"]["tags"] = change["tags"]
    else:
        target.update(change)
    path = tmp_path / "broken.ipynb"
    path.write_text(json.dumps(nb))
    with pytest.raises(GraderError, match=message):
        load_chapter(path)


# --- release ------------------------------------------------------------------------


def test_stub_keeps_code_outside_the_region_and_its_indentation():
    source = "x = 1\ndef f(y):\n    ### BEGIN SOLUTION\n    return y + x\n    ### END SOLUTION\nprint(f(2))"
    assert stub(source, "4.2") == (
        "x = 1\ndef f(y):\n    ### BEGIN SOLUTION\n"
        '    raise NotImplementedError("Exercise 4.2")\n    ### END SOLUTION\nprint(f(2))'
    )


def test_exercise_drops_hidden_cells_and_the_outputs_of_solutions_and_checks(chapter):
    nb = exercise(chapter)
    ids = [c.get("id") for c in nb.cells]
    assert "ex9-1-hidden" not in ids and "ex9-1-solution" in ids
    solution = cell(nb, "ex9-2-solution")
    assert solution.outputs == [] and solution.execution_count is None
    assert 'raise NotImplementedError("Exercise 9.2")' in solution.source and "sum(DATA)" not in solution.source
    # No "Exercise 9.N passed" under a check whose answer still raises: checks start unrun.
    assert cell(chapter.nb, "ex9-2-check").outputs[0].text == "Exercise 9.2 passed\n"
    for number in ("9.1", "9.2", "9.3"):
        check = cell(nb, f"ex{number.replace('.', '-')}-check")
        assert check.outputs == [] and check.execution_count is None, number
    assert cell(nb, "ex9-2-check").source == cell(chapter.nb, "ex9-2-check").source
    # A setup cell keeps what it shows (a task may point at it), with its count for nbval.
    setup = cell(nb, "setup")
    assert setup.outputs[0].text == "setup done\n" and setup.execution_count == 1
    assert nb.metadata.grader == {"chapter": "90_fixture"}


def test_release_is_byte_identical_across_runs(tmp_path):
    first = release(FIXTURES, tmp_path / "a")
    second = release(FIXTURES, tmp_path / "b")
    assert [p.name for p in first] == ["90_fixture.ipynb", "91_other.ipynb"]
    for a, b in zip(first, second, strict=True):
        assert a.read_bytes() == b.read_bytes()


# --- which chapter ------------------------------------------------------------------


def test_chapter_from_metadata_even_when_the_file_is_renamed(chapters, chapter):
    assert chapter_of(submission(exercise(chapter), "alice-homework.ipynb"), chapters).name == "90_fixture"


def test_chapter_from_file_name_when_metadata_is_gone(chapters, chapter):
    nb = exercise(chapter)
    del nb.metadata["grader"]
    assert chapter_of(submission(nb, "bob_90_fixture.ipynb"), chapters).name == "90_fixture"


def test_another_chapters_notebook_is_that_chapter_whatever_its_name(chapters):
    """Its metadata, else its cells, say which chapter it is (the class's run then refuses
    it, saying what to hand in); the misleading file name is only noted."""
    other = exercise(chapters["91_other"])
    read = submission(other, "90_fixture.ipynb")
    assert chapter_of(read, chapters).name == "91_other"
    assert read.notices == [
        "the file's name says chapter 90_fixture, but the notebook is chapter 91_other's: graded as 91_other"
    ]
    del other.metadata["grader"]
    assert chapter_of(submission(other, "90_fixture.ipynb"), chapters).name == "91_other"
    empty = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    with pytest.raises(GraderError, match="graded as chapter 90_fixture, but it has none of its exercises"):
        chapter_of(submission(empty, "90_fixture.ipynb"), chapters)


def test_unknown_chapter_is_a_clear_error(chapters):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    with pytest.raises(GraderError, match="cannot tell which chapter"):
        chapter_of(submission(nb, "notes.ipynb"), chapters)


@pytest.mark.parametrize(
    "content, message",
    [
        ("hello, not json", "not a Jupyter notebook"),
        ('{"cells": "nope", "nbformat": 4}', "not a Jupyter notebook in nbformat 4"),
        ("[1, 2]", "not a Jupyter notebook in nbformat 4"),
    ],
)
def test_not_a_notebook_is_a_clear_error(tmp_path, content, message):
    path = tmp_path / "sub.ipynb"
    path.write_text(content)
    with pytest.raises(GraderError, match=message):
        read_submission(path)
    with pytest.raises(GraderError, match="no such file"):
        read_submission(tmp_path / "missing.ipynb")


def test_damaged_cells_do_not_crash_matching(tmp_path, chapters, chapter):
    nb = json.loads(json.dumps(exercise(chapter)))
    nb["cells"][0]["metadata"] = None
    nb["cells"][1]["metadata"] = {"tags": "solution"}
    nb["cells"][2]["id"] = 17
    del nb["cells"][3]["source"]
    nb["cells"][4]["source"] = ["print(", "1)"]
    path = tmp_path / "damaged.ipynb"
    path.write_text(json.dumps(nb))
    damaged = read_submission(path)
    assert chapter_of(damaged, chapters).name == "90_fixture"
    assert set(match_solutions(chapter, damaged)) == {"9.1", "9.2", "9.3"}


# --- matching solution cells --------------------------------------------------------


def answered(chapter, answers: dict[str, str]) -> nbformat.NotebookNode:
    nb = exercise(chapter)
    for number, code in answers.items():
        cell(nb, f"ex{number.replace('.', '-')}-solution").source = code
    return nb


def test_match_by_cell_id_survives_removed_tags_and_moved_cells(chapter):
    nb = answered(chapter, {"9.1": "def square(x):\n    return x ** 2"})
    for c in nb.cells:
        c.metadata.pop("tags", None)
    moved = cell(nb, "ex9-1-solution")
    nb.cells.remove(moved)
    nb.cells.append(moved)
    answers = match_solutions(chapter, submission(nb))
    assert answers["9.1"] == "def square(x):\n    return x ** 2"


def test_match_by_heading_when_ids_are_new(chapter):
    """Cells copied into a fresh notebook get new ids; the heading and the BEGIN marker
    (or the tag) still find the answer, and the learner's check cell is never taken."""
    nb = answered(chapter, {"9.2": "### BEGIN SOLUTION\ntotal = 6\n### END SOLUTION"})
    for n, c in enumerate(nb.cells):
        c.id = f"new-{n}"
        c.metadata.pop("tags", None)
    scratch = nbformat.v4.new_code_cell("print('scratch')", id="scratch")
    nb.cells.insert(next(i for i, c in enumerate(nb.cells) if "Exercise 9.2" in c.source) + 1, scratch)
    answers = match_solutions(chapter, submission(nb))
    assert answers["9.2"] == "### BEGIN SOLUTION\ntotal = 6\n### END SOLUTION"
    assert "Exercise 9.1" in answers["9.1"] and "Exercise 9.3" in answers["9.3"]  # the stubs


def test_deleted_solution_cell_is_unmatched(chapter):
    nb = exercise(chapter)
    nb.cells = [c for c in nb.cells if c.get("id") != "ex9-2-solution"]
    answers = match_solutions(chapter, submission(nb))
    assert answers["9.2"] is None and answers["9.1"] is not None


# --- the scan for code that reaches into the checks ----------------------------------

MODULES = module_aliases(["import torch\nimport numpy as np\nfrom torch import nn"])


@pytest.mark.parametrize(
    "code, reason",
    [
        ("import builtins\nbuiltins.print = None", "imports the builtins module"),
        ("__builtins__['abs'] = lambda x: 0", "__builtins__"),
        ("import sys\nsys.modules['torch'] = None", "sys.modules"),
        ("from sys import modules", "sys.modules"),
        # The grader's record seen, to take a forbidden route where it is not there.
        ("import sys\nif sys.getprofile() is None:\n    pass", "sys.getprofile"),
        ("from sys import gettrace", "sys.gettrace"),
        ("torch.allclose = lambda *a, **k: True", "changes torch.allclose"),
        ("torch.Tensor.__eq__ = lambda a, b: True", "changes torch.Tensor.__eq__"),
        ("setattr(np, 'allclose', print)", "with setattr()"),
        ("torch = None", "rebinds torch"),
        ("import numpy as torch", "rebinds torch"),
        ("def nn():\n    pass", "rebinds nn"),
        ("get_ipython().events.register('pre_run_cell', print)", "get_ipython"),
        ("import grader.kernel.output_guard", "the grader"),
        ("import importlib\nimportlib.import_module('os')", "importlib"),
        ("exec('x = 1')", "exec()"),
        ("g = globals()['__builtins__']", "'__builtins__'"),
        ("_grading.equal = lambda a, b: True", "_grading"),
        # The harmless parts of the machinery's modules open no door to the rest of them.
        ("import IPython", "the IPython kernel"),
        ("import IPython.display\nIPython.get_ipython()", "get_ipython"),
        ("import IPython.display\nIPython.core.getipython", "IPython.core"),
        ("from IPython import get_ipython as g", "get_ipython"),
        ("from IPython.display import display\ndisplay.__globals__", "display.__globals__"),
        ("from IPython.core.display_functions import display", "the IPython kernel"),
        ("import importlib.metadata\nimportlib.import_module('os')", "importlib.import_module"),
        ("import importlib.metadata as md\nmd.import_module('os')", "md.import_module"),
        ("from importlib.metadata import import_module", "importlib"),
        ("from importlib.metadata import EntryPoint", "importlib"),
        ("from importlib.metadata import *", "importlib"),
        ("from importlib import util", "importlib"),
        # torch's settings take a plain value: a function put there would run in the checks.
        ("torch.backends.cudnn.deterministic = print", "changes torch.backends.cudnn.deterministic"),
        ("torch._dynamo.config.cache_size_limit = lambda: 0", "changes torch._dynamo.config.cache_size_limit"),
        ("torch.backends.cudnn = None", "changes torch.backends.cudnn"),
        ("torch.backends.cuda.matmul.allow_tf32 = flag = True\ntorch.allclose = 1", "changes torch.allclose"),
    ],
)
def test_scan_flags_reaching_into_the_checks(code, reason):
    found = findings(code, MODULES)
    assert any(reason in line for line in found), found


@pytest.mark.parametrize(
    "code",
    [
        "import torch\nx = torch.ones(3)\nx.add_(1)\nmodel = torch.nn.Linear(2, 2)\nmodel.eval()",
        "import torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.fc = nn.Linear(2, 2)",
        "import sys\nprint('progress', file=sys.stderr)\nsys.stdout.flush()",
        "%time y = 2 * 3",
        "import torch\nkeep = torch.ones(4, dtype=torch.bool)\nkeep[torch.randperm(4)[:2]] = False",
        "def f(x):\n    return x +",  # a syntax error fails when run, with Python's message
        # Showing things, asking a package's version, and torch's global settings (each check
        # starts from them as the setup left them): nothing of the checking machinery.
        "from IPython.display import display, HTML\ndisplay(HTML('<b>hi</b>'))",
        "from IPython import display\ndisplay.clear_output(wait=True)",
        "import IPython.display as ipd\nipd.display(3)",
        "import IPython.display\nIPython.display.display(3)",
        "torch.backends.cudnn.deterministic = True\ntorch.backends.cudnn.benchmark = False",
        "torch.backends.cuda.matmul.allow_tf32 = False",
        "torch._dynamo.config.cache_size_limit = 64",
        "torch._inductor.config.max_autotune = False",
        "import importlib.metadata\nprint(importlib.metadata.version('torch'))",
        "from importlib.metadata import version, PackageNotFoundError",
        "from importlib import metadata\nmetadata.version('torch')",
    ],
)
def test_scan_leaves_ordinary_answers_alone(code):
    assert findings(code, MODULES) == []


# --- grading notebook and sanitize rule ---------------------------------------------


def test_grading_notebook_takes_only_solution_code_from_the_submission(chapter):
    answers = {"9.1": "def square(x):\n    return x * x", "9.2": "total = 6", "9.3": "largest = 30"}
    nb, roles = grading_notebook(chapter, answers, chapter.tasks, [])
    kinds = [r.kind for r in roles]
    assert kinds == ["guard", "setup", "solution", "check", "hidden", "solution", "check", "setup", "solution", "check"]
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code[5].source == "total = 6" and code[5].execution_count is None
    assert code[6].source == cell(chapter.nb, "ex9-2-check").source and code[6].outputs
    assert "nbval-ignore-output" in code[1].metadata.tags  # setup output is not graded
    assert "nbval-ignore-output" in code[4].metadata.tags  # a hidden check without output: errors only


def test_grading_notebook_after_a_lost_kernel_replays_earlier_solutions_only(chapter):
    answers = {"9.1": "def square(x):\n    return x * x", "9.2": "total = 6", "9.3": "largest = 30"}
    _, roles = grading_notebook(chapter, answers, [chapter.tasks[2]], [chapter.tasks[0]])
    assert [(r.kind, r.task) for r in roles] == [
        ("guard", None),
        ("setup", None),
        ("replay", "9.1"),
        ("setup", None),
        ("solution", "9.3"),
        ("check", "9.3"),
    ]


def test_sanitize_rule_keeps_only_the_lines_checks_print(chapter):
    nb, _ = grading_notebook(chapter, {"9.1": "", "9.2": "", "9.3": ""}, chapter.tasks, [])
    rules = sanitize_rules([nb])
    patterns = re.findall(r"^regex: (.*)$\n^replace: (.*)$", rules, flags=re.MULTILINE)
    assert patterns, "the sanitize file must hold regex/replace pairs nbval can read"

    def sanitize(text):
        for regex, replace in patterns:
            text = re.sub(regex, replace, text)
        return text

    assert sanitize("debug 3\nExercise 9.1 passed\n") == sanitize("Exercise 9.1 passed\n")
    assert sanitize("Exercise 9.1 passed\n") != sanitize("Exercise 9.2 passed\n")
    assert sanitize("Exercise 9.1 failed\n") != sanitize("Exercise 9.1 passed\n")
    # Whatever shape a learner's debug output has: glued to the check's line, blank lines,
    # a background thread's text before and after it.
    expected = sanitize("Exercise 9.1 passed\n")
    for noisy in (
        "called with x = 3; Exercise 9.1 passed\n",
        "\n\nExercise 9.1 passed\n",
        "tick tick \nExercise 9.1 passed\ntick \n\n",
        "E" * 5000 + "xercise Exercise 9.1 passed\n",
    ):
        assert sanitize(noisy) == expected, noisy
    # The check's line counts as often as the check prints it: printed by the learner's code too,
    # or missing, it differs.
    assert sanitize("Exercise 9.1 passed\nExercise 9.1 passed\n") != expected
    assert sanitize("Exercise 9.1 passed; Exercise 9.1 passed\n") != expected
    assert sanitize("debug 3\n") != expected
    assert sanitize("Exercise 9.1 passed\nExercise 9.2 passed\n") != expected


# --- report -------------------------------------------------------------------------


def test_table_and_json_show_every_task():
    result = SubmissionResult(
        Path("alice.ipynb"),
        "90_fixture",
        [
            TaskResult("9.1", 2.0, "passed", "Exercise 9.1 passed"),
            TaskResult("9.2", 3.0, "check_failed", "total should be 6\nsecond line"),
        ],
    )
    text = table(result)
    assert "alice.ipynb (chapter 90_fixture): 2/5 points" in text
    assert re.search(r"9\.2\s+0/3\s+FAILED\s+total should be 6\n\s+second line", text)
    data = as_json([result])["submissions"][0]
    assert (data["score"], data["max_score"]) == (2.0, 5.0)
    assert [(t["passed"], t["reason"]) for t in data["tasks"]] == [(True, "passed"), (False, "check_failed")]
    assert "ERROR" in table(SubmissionResult(Path("x.ipynb"), error="not a notebook"))


def test_every_reason_says_what_it_means():
    assert list(REASONS) == list(get_args(Reason))


def test_the_grader_finds_the_solutions_of_the_folder_it_runs_from(tmp_path, monkeypatch):
    """Installed from a wheel, the grader has no course beside it: it takes solutions/ from
    the folder it runs in, and writes exercises/ beside them."""
    course = tmp_path / "my-course"
    (course / "solutions").mkdir(parents=True)
    shutil.copy(ROOT / "solutions" / "02_autograd.ipynb", course / "solutions")
    monkeypatch.chdir(course)
    assert default_solutions() == course / "solutions"
    assert grader_main(["release"]) == 0
    assert (course / "exercises" / "02_autograd.ipynb").is_file()


def test_without_solutions_the_grader_says_where_it_looked_and_what_to_pass(tmp_path, monkeypatch):
    monkeypatch.setattr(grader_cli, "COURSE_ROOT", tmp_path / "site-packages")
    with pytest.raises(
        GraderError, match=r"no solutions/ folder in .*: run the grader from the course folder.*--solutions DIR"
    ):
        default_solutions(tmp_path)


# --- what students hand in instead of a plain notebook --------------------------------


def written(tmp_path, nb, name="90_fixture.ipynb", encoding="utf-8") -> Path:
    """The notebook saved as JSON in ``encoding`` (json.dumps escapes lone surrogates)."""
    path = tmp_path / name
    path.write_bytes(json.dumps(nb).encode(encoding))
    return path


def zipped(tmp_path, members: dict[str, bytes], name="alice_90_fixture.zip") -> Path:
    path = tmp_path / name
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for member, data in members.items():
            archive.writestr(member, data)
    return path


def test_a_lone_surrogate_is_replaced_and_the_student_told(tmp_path, chapters, chapter):
    """Tester's 1: "\\udc80" in a solution crashed nbformat.write, and with it the class's run."""
    nb = answered(chapter, {"9.2": 'total = sum(DATA)\nlabel = "\udc80"'})
    nb.metadata["note"] = "\ud800"
    read = read_submission(written(tmp_path, nb))
    answer = match_solutions(chapter, read)["9.2"]
    assert answer == 'total = sum(DATA)\nlabel = "\ufffd"'
    assert any("not valid Unicode" in notice and "\ufffd" in notice for notice in read.notices)
    nbformat.write(read.nb, tmp_path / "written.ipynb")  # raised UnicodeEncodeError before


def test_metadata_that_is_not_a_chapter_name_is_ignored(tmp_path, chapters, chapter):
    """Tester's 1: a list as metadata.grader.chapter crashed with "unhashable type"."""
    nb = exercise(chapter)
    nb.metadata["grader"]["chapter"] = ["90_fixture"]
    assert chapter_of(submission(nb, "alice.ipynb"), chapters).name == "90_fixture"


def test_the_notebooks_metadata_wins_over_its_file_name(chapters, chapter):
    """Tester's 8: a 90 notebook named for chapter 91 is graded as 90, and the student told."""
    read = submission(exercise(chapter), "dave_2345_6789_91_other.ipynb")
    assert chapter_of(read, chapters).name == "90_fixture"
    assert read.notices == [
        "the file's name says chapter 91_other, but the notebook is chapter 90_fixture's: graded as 90_fixture"
    ]


def test_a_file_name_with_two_chapters_leaves_it_to_the_notebook(chapters, chapter):
    """Tester's 8: '01_tensors_started_after_02_autograd_lecture' took the longest name."""
    nb = exercise(chapter)
    del nb.metadata["grader"]
    found = chapter_of(submission(nb, "90_fixture_started_after_91_other_lecture.ipynb"), chapters)
    assert found.name == "90_fixture"


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-32"])
def test_a_notebook_saved_with_a_bom_or_in_utf16_is_read(tmp_path, chapter, encoding):
    """Tester's 11: a raw decoder error before; json reads them as the standard allows."""
    read = read_submission(written(tmp_path, exercise(chapter), encoding=encoding))
    assert set(match_solutions(chapter, read)) == {"9.1", "9.2", "9.3"}


def test_an_nbformat_3_notebook_is_converted_as_jupyter_does(tmp_path, chapters, chapter):
    """Tester's 11: refused before with "(no list of cells)"."""
    old = nbformat.v3.convert.downgrade(copied_v4(exercise(chapter)))
    path = tmp_path / "90_fixture.ipynb"
    path.write_text(nbformat.writes(old, version=3), encoding="utf-8")
    read = read_submission(path)
    assert any("format 3" in notice for notice in read.notices)
    assert chapter_of(read, chapters).name == "90_fixture"
    answers = match_solutions(chapter, read)
    assert "### BEGIN SOLUTION" in answers["9.2"] and "Exercise 9.3" in answers["9.3"]


def copied_v4(nb):
    return nbformat.from_dict(json.loads(json.dumps(nb)))


def test_the_one_notebook_in_a_zip_archive_is_read(tmp_path, chapter):
    """Tester's 11: a zip (as an LMS's download or the student's own) is read in memory,
    never unpacked, so names in it cannot reach any folder."""
    nb = json.dumps(answered(chapter, {"9.2": "total = 6"})).encode()
    path = zipped(
        tmp_path, {"../../evil/90_fixture.ipynb": nb, "__MACOSX/._90_fixture.ipynb": b"\0", "notes.txt": b"hi"}
    )
    read = read_submission(path)
    assert match_solutions(chapter, read)["9.2"] == "total = 6"
    assert read.notices == ["handed in as a zip archive: graded the notebook inside it, ../../evil/90_fixture.ipynb"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


@pytest.mark.parametrize(
    "members, message",
    [
        ({}, r"a zip archive with no notebook \(\.ipynb\) in it"),
        ({"a/90_fixture.ipynb": b"{}", "b/90_fixture.ipynb": b"{}"}, r"2 notebooks .*a/90_fixture.ipynb.*unpack it"),
    ],
)
def test_a_zip_archive_that_cannot_be_graded_says_what_to_do(tmp_path, members, message):
    with pytest.raises(GraderError, match=message):
        read_submission(zipped(tmp_path, members))


def test_a_zip_bomb_is_refused_without_unpacking_it(tmp_path, monkeypatch):
    """A notebook that unpacks to more than a notebook can be (a few KiB of zip) is refused
    before it is read, and reading stops at the limit whatever the archive claims."""
    path = zipped(tmp_path, {"90_fixture.ipynb": b" " * 5000})
    monkeypatch.setattr("grader.host.submission.SUBMISSION_BYTES", 1000)
    with pytest.raises(GraderError, match=r"its notebook 90_fixture.ipynb weighs 5,000 bytes unpacked, more than"):
        read_submission(path)
    heaviest = max(
        path.stat().st_size for folder in ("course", "solutions") for path in (COURSE_ROOT / folder).glob("*.ipynb")
    )
    assert SUBMISSION_BYTES >= 10 * heaviest  # far above the course's notebooks with every picture stored


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("alice.ipynb", b"", r"the file is empty \(0 bytes\).*save"),
        ("alice.ipynb", b"  \n", r"the file is empty"),
        ("alice.ipynb", b"\x89PNG\r\n\x1a\n\0\0", r"not a text file"),
        ("alice.html", b"<!DOCTYPE html>\n<html>", r"an HTML page.*\.ipynb"),
        ("alice.py", b"x = 1\n", r"a Python script.*\.ipynb"),
        ("alice.ipynb", b'{"nbformat": 2, "worksheets": []}', r"(?i)notebook format 2.*open it in Jupyter and save it"),
        ("alice.zip", b"PK\x03\x04 damaged", r"a damaged zip archive"),
    ],
)
def test_a_file_that_is_not_a_notebook_says_what_it_is(tmp_path, name, content, message):
    """Tester's 11: "Expecting value: line 1 column 1" told an empty file's student nothing."""
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(GraderError, match=message):
        read_submission(path)


def test_a_solution_cell_turned_markdown_says_so(chapter):
    nb = exercise(chapter)
    cell(nb, "ex9-2-solution").cell_type = "markdown"
    read = submission(nb)
    assert markdown_solutions(chapter, read) == {"9.2"}
    decided = _unrunnable(chapter, match_solutions(chapter, read), markdown_solutions(chapter, read))
    assert "became a markdown cell" in decided["9.2"].message and decided["9.2"].reason == "unmatched"


def test_a_zip_whose_compressed_stream_is_damaged_is_the_students_to_mend(tmp_path):
    """zlib's error on a damaged stream was taken for the grader's own failure (exit 2)."""
    path = zipped(tmp_path, {"90_fixture.ipynb": json.dumps({"cells": []}).encode() * 200})
    data = bytearray(path.read_bytes())
    start = 30 + len("90_fixture.ipynb")  # the local header, then the compressed stream
    data[start : start + 12] = bytes(b ^ 0xFF for b in data[start : start + 12])
    path.write_bytes(bytes(data))
    with pytest.raises(GraderError, match=r"a damaged zip archive"):
        read_submission(path)


def test_ctrl_c_says_nothing_was_written_without_a_traceback(tmp_path, monkeypatch, capsys):
    """An instructor stopping a class's grading sees what is left, not a traceback: the
    gradebook of an earlier run as it was, and no report."""

    def stopped(*args: object, **kwargs: object) -> object:
        raise KeyboardInterrupt

    monkeypatch.setattr(grade_module, "grade_files", stopped)
    gradebook, report = tmp_path / "grades.csv", tmp_path / "grades.json"
    gradebook.write_text("student,total\nalice,5\n", encoding="utf-8")
    submission = str(FIXTURES / "90_fixture.ipynb")
    argv = ["grade", "--solutions", str(FIXTURES), submission, "--no-sandbox", "--gradebook", str(gradebook)]
    assert grader_main([*argv, "--report", str(report)]) == grader_cli.INTERRUPTED
    err = capsys.readouterr().err
    assert "interrupted: grading stopped and nothing was written" in err
    assert "Traceback" not in err
    assert gradebook.read_text(encoding="utf-8") == "student,total\nalice,5\n" and not report.exists()
