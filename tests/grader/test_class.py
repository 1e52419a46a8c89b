"""Grading a class, as an instructor does it: whose each submission is, one chapter per
class, options checked before grading, every file written (test_gradebooks.py: the gradebooks
an LMS imports).

Each test names the finding of the class trial it guards (issue 28's numbered list). Most
stop before any kernel runs (refusals, parsing, hand-built results); the class of 30 at
the end grades for real, on the fixture chapter.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import nbformat
import pytest

import grader.host.grade as grade_module
from grader.__main__ import main
from grader.host.errors import GraderError
from grader.host.feedback import feedback_html, write_feedback
from grader.host.grade import choose_chapter
from grader.host.gradebook import gradebook_rows
from grader.host.identity import owners
from grader.host.lock import this_run
from grader.host.notebook import COURSE_ROOT, load_chapter
from grader.host.outputs import Outputs
from grader.host.release import release
from grader.host.results import SubmissionResult, TaskResult
from grader.host.roster import read_roster
from grader.host.students import class_rows

from .classroom import TASKS, graded, read_table, roster_file
from .helpers import with_answers, write_submissions

FIXTURES = Path(__file__).parent / "fixtures"
RIGHT = {"9.1": "def square(x):\n    return x * x", "9.2": "total = sum(DATA)", "9.3": "largest = max(scaled)"}


def run_main(capsys, *argv: str) -> tuple[int, str, str]:
    """The command line in this process (no kernel runs before these refusals)."""
    try:
        code = main(list(argv))
    except SystemExit as exit:  # argparse's refusals
        code = exit.code if isinstance(exit.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


# --- 1. students with the same file name ------------------------------------------------


def test_folder_per_student_with_one_file_name_gives_each_student_their_row_and_page(tmp_path):
    """Finding 1: three students' `02_autograd.ipynb`, one folder each, no roster."""
    results = [
        graded("class/alice/90_fixture.ipynb", code="ALICE-CODE", passed=("9.1",)),
        graded("class/bob/90_fixture.ipynb", code="BOB-CODE", passed=("9.2",)),
        graded("class/carol/90_fixture.ipynb", code="CAROL-CODE", passed=()),
    ]
    rows = class_rows(results)
    assert [(row.student.id, [r.path.parent.name for r in row.results]) for row in rows] == [
        ("alice", ["alice"]),
        ("bob", ["bob"]),
        ("carol", ["carol"]),
    ]
    assert [r[0] for r in gradebook_rows(rows, TASKS)[1:]] == ["alice", "bob", "carol"]
    written = write_feedback(rows, tmp_path / "feedback")
    pages = {path.stem: path.read_text(encoding="utf-8") for path in written}
    assert sorted(pages) == ["alice", "bob", "carol"]
    for name, page in pages.items():
        others = {"alice", "bob", "carol"} - {name}
        assert f"{name.upper()}-CODE" in page
        assert not any(f"{other.upper()}-CODE" in page for other in others), name


def test_two_files_of_one_name_in_different_folders_are_two_students():
    """Finding 1: two `alex.ipynb` in different folders are not merged."""
    found = owners([Path("groupA/alex.ipynb"), Path("groupB/alex.ipynb")])
    assert [found[p].id for p in found] == ["groupA", "groupB"]
    # groupA/zoe.ipynb beside groupA/alex.ipynb made alex and zoe one student, groupA: refused
    # (test_students.py: a section's folder of loose files)
    with pytest.raises(GraderError, match="groupA holds notebooks of 2 names"):
        owners([Path("groupA/alex.ipynb"), Path("groupB/alex.ipynb"), Path("groupA/zoe.ipynb")])
    # a student handing in twice in their folder is one student (the rows note it)
    rows = class_rows([graded("groupA/alex.ipynb"), graded("groupB/alex.ipynb")])
    assert [row.student.id for row in rows] == ["groupA", "groupB"]


def test_same_file_names_without_a_folder_each_are_refused_listing_the_clashes():
    """Finding 1: when no folder tells the students apart, the refusal lists the files and
    says to pass a roster, before anything is graded."""
    with pytest.raises(GraderError) as refused:
        owners([Path("alex.ipynb"), Path("late/alex.ipynb"), Path("bob.ipynb")])
    message = str(refused.value)
    assert "alex.ipynb" in message and "late/alex.ipynb" in message and "--roster" in message
    with pytest.raises(GraderError, match="--roster"):
        Outputs.prepare([Path("alex.ipynb"), Path("late/alex.ipynb")], gradebook=Path("grades.csv"))


def test_a_roster_line_that_matches_several_students_is_refused(tmp_path):
    """Finding 1 with a roster: `file` = the shared name would merge the folder's students."""
    roster = read_roster(roster_file(tmp_path, "file,id\n90_fixture.ipynb,a1\n"))
    with pytest.raises(GraderError, match=r"line 2.*alice/90_fixture.ipynb.*bob/90_fixture.ipynb"):
        owners([Path("class/alice/90_fixture.ipynb"), Path("class/bob/90_fixture.ipynb")], roster)
    by_folder = read_roster(roster_file(tmp_path, "file,id,name\nalice,a1,Alice\nclass/bob/90_fixture.ipynb,b2,Bob\n"))
    found = owners([Path("class/alice/90_fixture.ipynb"), Path("class/bob/90_fixture.ipynb")], by_folder)
    assert [s.id for s in found.values()] == ["a1", "b2"]


# --- 2. a duplicated id in the roster ----------------------------------------------------


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("file,id\nalice,a1\nhiro,a1\n", r"id 'a1' is on lines 2 and 3"),
        ("file,id\nalice,a1\nalice.ipynb,a1\n", r"file 'alice.ipynb' .*line 2"),
        ("file,id\nalice,a1\nalice,b2\n", r"file 'alice' .*line 2"),
    ],
)
def test_a_roster_with_a_duplicated_id_or_file_is_refused(tmp_path, text, problem):
    """Finding 2: Hiro's row must not become Alice's."""
    with pytest.raises(GraderError, match=problem):
        read_roster(roster_file(tmp_path, text))


def test_a_duplicated_roster_id_stops_the_command_before_grading(tmp_path, capsys):
    """Finding 2, from the command line: refused before any grading."""
    roster = roster_file(tmp_path, "file,id\nalice,a1\nhiro,a1\n")
    code, out, err = run_main(capsys, "grade", str(tmp_path / "alice.ipynb"), "--roster", str(roster), "--no-sandbox")
    assert code == 2 and "id 'a1' is on lines 2 and 3" in err and "grading" not in out


# --- 3. one wrong-chapter submission ------------------------------------------------------


def test_the_class_chapter_is_the_one_most_submissions_are_or_the_one_named():
    """Finding 3: one chapter per class; a tie, or an unknown --chapter, is refused."""
    names = ["01_tensors", "02_autograd", "03_modules"]
    assert choose_chapter(["02_autograd"] * 20 + ["01_tensors"], None, names) == "02_autograd"
    assert choose_chapter(["01_tensors"], "02", names) == "02_autograd"  # a unique prefix will do
    with pytest.raises(GraderError, match=r"01_tensors \(2\), 02_autograd \(2\).*--chapter"):
        choose_chapter(["01_tensors", "02_autograd"] * 2, None, names)
    with pytest.raises(GraderError, match=r"--chapter 07.*01_tensors, 02_autograd, 03_modules"):
        choose_chapter(["01_tensors"], "07", names)
    with pytest.raises(GraderError, match=r"--chapter 0 .*several"):
        choose_chapter(["01_tensors"], "0", names)


def test_a_wrong_chapter_submission_is_refused_with_a_note_everywhere(tmp_path, capsys):
    """Finding 3: another chapter's notebook is not graded against its own chapter: the
    report, the gradebook (header and note) and the student's page say why."""
    release(FIXTURES, tmp_path / "exercises")
    other = nbformat.read(tmp_path / "exercises" / "91_other.ipynb", as_version=4)
    (path,) = write_submissions(tmp_path / "class" / "dana", {"91_other": other})
    out = tmp_path / "out"
    code, stdout, err = run_main(
        capsys,
        "grade",
        "--solutions",
        str(FIXTURES),
        str(path),
        "--chapter",
        "90_fixture",
        "--no-sandbox",
        "--report",
        str(out / "grades.json"),
        "--gradebook",
        str(out / "grades.csv"),
        "--feedback",
    )
    assert code == 1
    (entry,) = json.loads((out / "grades.json").read_text(encoding="utf-8"))["submissions"]
    assert entry["chapter"] is None and entry["tasks"] == [] and entry["handed_in_chapter"] == "91_other"
    assert "chapter 91_other" in entry["error"] and "90_fixture" in entry["error"]
    table = read_table(out / "grades.csv")
    assert table[0] == ["student", "name", "9.1 (2 pts)", "9.2 (3 pts)", "9.3 (1 pt)", "total (6 pts)", "notes"]
    assert table[1][:6] == ["dana", "", "0", "0", "0", "0"]  # her folder, not the chapter her file is named after
    assert "wrong chapter: 91_other, not 90_fixture" in table[1][6]
    page = (out / "feedback" / "dana.html").read_text(encoding="utf-8")
    assert "chapter 91_other" in page and "Hand in your 90_fixture notebook" in page
    assert "Total: 0 / 6 points" in page
    assert "wrong chapter" in err  # the instructor is told on the terminal too


def test_files_that_cannot_be_read_count_for_the_chapter_they_are_named_after(tmp_path, capsys):
    """An empty or damaged file still says which chapter its student handed in: two such
    90_fixture files beside one readable 90_fixture and one 91_other make the class's chapter
    90_fixture, where the readable files alone were a tie, refused."""
    release(FIXTURES, tmp_path / "exercises")
    exercises = {
        name: nbformat.read(tmp_path / "exercises" / f"{name}.ipynb", as_version=4)
        for name in ("90_fixture", "91_other")
    }
    (alice,) = write_submissions(tmp_path / "class" / "alice", {"90_fixture": exercises["90_fixture"]})
    (dana,) = write_submissions(tmp_path / "class" / "dana", {"91_other": exercises["91_other"]})
    bob, carol = (
        tmp_path / "class" / "bob" / "90_fixture.ipynb",
        tmp_path / "class" / "carol" / "Copy of 90_fixture.ipynb",
    )
    for path, text in ((bob, ""), (carol, '{"cells": [')):
        path.parent.mkdir(parents=True)
        path.write_text(text, encoding="utf-8")
    report = tmp_path / "out" / "grades.json"
    paths = [str(p) for p in (alice, bob, carol, dana)]
    code, _, err = run_main(
        capsys, "grade", "--solutions", str(FIXTURES), *paths, "--no-sandbox", "--report", str(report)
    )
    assert code == 1 and "none of them the most" not in err, err
    entries = {Path(e["file"]).parent.name: e for e in json.loads(report.read_text(encoding="utf-8"))["submissions"]}
    assert entries["alice"]["chapter"] == "90_fixture" and entries["dana"]["handed_in_chapter"] == "91_other"
    assert entries["bob"]["error"] and entries["carol"]["error"]


def test_chapter_each_grades_every_notebook_against_its_own_chapter_without_a_gradebook(tmp_path, capsys):
    """Finding 3's way out for a check of all the solutions: --chapter each, and then no gradebook."""
    paths = [FIXTURES / "90_fixture.ipynb", FIXTURES / "91_other.ipynb"]
    code, _, err = run_main(capsys, "grade", *map(str, paths), "--chapter", "each", "--gradebook", "g.csv")
    assert code == 2 and "--chapter each and --gradebook" in err
    report = tmp_path / "grades.json"
    run = subprocess.run(
        [sys.executable, "-m", "grader", "grade", "--solutions", str(FIXTURES), *map(str, paths)]
        + ["--chapter", "each", "--no-sandbox", "--jobs", "2", "--report", str(report)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    entries = json.loads(report.read_text(encoding="utf-8"))["submissions"]
    assert [(e["chapter"], e["score"] == e["max_score"] > 0) for e in entries] == [
        ("90_fixture", True),
        ("91_other", True),
    ]


def test_a_gradebook_holds_one_chapter():
    """Finding 3: results of two chapters never share one total."""
    other = SubmissionResult(Path("x.ipynb"), "91_other", [TaskResult("1.1", 8.0, "passed", "ok")])
    with pytest.raises(GraderError, match="one chapter"):
        gradebook_rows(class_rows([graded("a.ipynb"), other]))


# --- 4. limits that fail correct work -----------------------------------------------------


@pytest.mark.parametrize(
    ("option", "value", "fix"),
    [
        ("--jobs", "0", "1 or more"),
        ("--jobs", "-3", "1 or more"),
        ("--jobs", "two", "a whole number"),
        ("--cell-timeout", "0", "more than 0"),
        ("--cell-timeout", "nan", "more than 0"),
        ("--process-limit", "0", "more than 0"),
        ("--memory-limit", "0", "more than 0"),
        ("--memory-limit", "-1", "more than 0"),
        ("--memory-limit", "inf", "more than 0"),
    ],
)
def test_a_numeric_option_out_of_range_is_refused_at_parse_time_naming_it(capsys, option, value, fix):
    """Finding 4: the message names the option and what it takes; nothing is graded."""
    code, out, err = run_main(capsys, "grade", "nothing.ipynb", option, value)
    assert code == 2 and option in err and fix in err and "default" in err, err
    assert "nothing.ipynb" not in out + err  # refused before looking at the submissions


# --- 5. errors found late or aimed at the wrong person -------------------------------------


def test_an_unwritable_output_is_refused_before_grading(tmp_path, capsys):
    """Finding 5: a gradebook that cannot be written stops the run before it grades."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file", encoding="utf-8")
    submission = tmp_path / "alice.ipynb"
    submission.write_text("{}", encoding="utf-8")
    for option in ("--gradebook", "--report"):
        code, out, err = run_main(capsys, "grade", str(submission), option, str(blocker / "grades.csv"))
        assert code == 2 and f"{option} {blocker / 'grades.csv'}" in err and "cannot write" in err
        assert "ERROR" not in out  # nothing was graded
    code, out, err = run_main(capsys, "grade", str(submission), "--feedback", str(blocker / "pages"))
    assert code == 2 and "--feedback" in err and "ERROR" not in out


def test_every_output_is_written_when_one_of_them_fails(tmp_path):
    """Finding 5: a gradebook that fails at the end costs neither the report nor the pages."""
    outputs = Outputs.prepare(
        [Path("class/alice.ipynb")],
        report=tmp_path / "grades.json",
        feedback=tmp_path / "feedback",
        gradebook=tmp_path / "late" / "grades.csv",
    )
    (tmp_path / "late").write_text("became a file after the check", encoding="utf-8")
    with pytest.raises(GraderError, match=r"--gradebook .*late/grades.csv"):
        outputs.write([graded("class/alice.ipynb")], TASKS)
    assert json.loads((tmp_path / "grades.json").read_text(encoding="utf-8"))["submissions"]
    assert "Total: 6 / 6 points" in (tmp_path / "feedback" / "alice.html").read_text(encoding="utf-8")
    assert sorted(os.listdir(tmp_path)) == ["feedback", "grades.json", "late"]  # no temporary file


def test_a_folder_given_as_a_submission_gets_an_instructor_message(tmp_path, capsys):
    """Finding 5: the instructor typed a folder; learner advice would not help them."""
    (tmp_path / "submissions" / "alice").mkdir(parents=True)
    code, out, err = run_main(capsys, "grade", str(tmp_path / "submissions"), "--no-sandbox")
    assert code == 2 and "a folder, not a notebook" in err and "*.ipynb" in err
    assert "Hand in" not in err


def test_a_semicolon_separated_roster_is_refused_naming_the_separator(tmp_path):
    """Finding 5: spreadsheets set to a decimal comma save CSV with ';'."""
    with pytest.raises(GraderError, match=r"separated by ';'.*commas"):
        read_roster(roster_file(tmp_path, "file;id;name\nalice;a1;Alice\n"))


def test_help_states_every_limit_and_its_default(capsys):
    """Finding 5: the output limit that costs a task, and each limit's default, in --help."""
    code, out, _ = run_main(capsys, "grade", "--help")
    text = " ".join(out.split())
    assert code == 0
    assert "1,000,000 characters" in text
    for option, default in [
        ("--cell-timeout", "default 60"),
        ("--memory-limit", "default 4"),
        ("--process-limit", "default 1024"),
        ("--jobs", "default: one per core"),
    ]:
        assert re.search(re.escape(option) + r"[^-]*" + re.escape(default), text), option


# --- 6. where things land -----------------------------------------------------------------


def test_an_error_page_shows_no_path_of_the_instructors_machine(tmp_path, capsys):
    """Finding 6: a submission given by its absolute path, refused: its page names the file only."""
    broken = tmp_path / "class" / "alice" / "90_fixture.ipynb"
    broken.parent.mkdir(parents=True)
    broken.write_text("not json", encoding="utf-8")
    out = tmp_path / "out"
    code, _, _ = run_main(
        capsys, "grade", "--solutions", str(FIXTURES), str(broken), "--feedback", str(out), "--no-sandbox"
    )
    assert code == 1
    page = (out / "90_fixture.html").read_text(encoding="utf-8")
    assert "not JSON" in page and "90_fixture.ipynb" in page
    assert str(tmp_path) not in page and str(Path.home()) + "/" not in page and str(COURSE_ROOT) not in page


def test_one_file_given_twice_is_graded_once(tmp_path, capsys):
    """Third class trial: ``class/*/*.ipynb class/alice/*.ipynb`` (or ``./``, or a linked
    folder) gave alice's file twice: graded twice, her page said she handed in twice, and a
    linked folder made her two students."""
    for name in ("alice", "bob"):
        (tmp_path / "class" / name).mkdir(parents=True)
        (tmp_path / "class" / name / "90_fixture.ipynb").write_text("not json", encoding="utf-8")
    broken, bob = (tmp_path / "class" / name / "90_fixture.ipynb" for name in ("alice", "bob"))
    (tmp_path / "class" / "latest").symlink_to(broken.parent)
    out = tmp_path / "out"
    again = [str(broken.parent / ".." / "alice" / broken.name), str(tmp_path / "class" / "latest" / broken.name)]
    args = ["grade", "--solutions", str(FIXTURES), "--report", str(out / "grades.json"), "--no-sandbox"]
    args += ["--gradebook", str(out / "grades.csv")]
    for given in ([broken, *again, bob], [*reversed(again), bob, broken]):
        code, _, err = run_main(capsys, *args, *map(str, given))
        assert code == 1
        entries = json.loads((out / "grades.json").read_text(encoding="utf-8"))["submissions"]
        assert sorted(entry["file"] for entry in entries) == [str(broken), str(bob)]  # the file's own path
        assert [row[0] for row in read_table(out / "grades.csv")[1:]] == ["alice", "bob"]
        assert f"{again[1]}: the same file as {broken}: graded once" in err


def test_a_loop_of_links_handed_in_is_its_students_row_not_a_crash(tmp_path, capsys):
    """Third class trial: a submission that is a loop of links (unpacked from a student's
    archive) stopped the whole run with a RuntimeError's traceback before anything was graded."""
    (tmp_path / "class" / "alice").mkdir(parents=True)
    (tmp_path / "class" / "bob").mkdir()
    loop = tmp_path / "class" / "alice" / "90_fixture.ipynb"
    loop.symlink_to(loop.with_name("other.ipynb"))
    loop.with_name("other.ipynb").symlink_to(loop)
    (tmp_path / "class" / "bob" / "90_fixture.ipynb").write_text("not json", encoding="utf-8")
    grades = tmp_path / "grades.csv"
    code, _, _ = run_main(
        capsys,
        "grade",
        "--solutions",
        str(FIXTURES),
        str(loop),
        str(tmp_path / "class" / "bob" / "90_fixture.ipynb"),
        "--gradebook",
        str(grades),
        "--no-sandbox",
    )
    assert code == 1
    alice, bob = read_table(grades)[1:]
    assert alice[0] == "alice" and "cannot read it (Too many levels of symbolic links)" in alice[-1]
    assert bob[0] == "bob" and "not JSON" in bob[-1]


def test_jupyters_checkpoints_are_not_graded_as_a_students_second_file(tmp_path, capsys):
    """Third class trial: ``find class -name '*.ipynb'`` over students' repositories finds
    the checkpoints they committed; graded, alice's older copy was her second submission
    (and the one that counted, had it more points)."""
    notebook = tmp_path / "class" / "alice" / "90_fixture.ipynb"
    checkpoint = notebook.parent / ".ipynb_checkpoints" / "90_fixture-checkpoint.ipynb"
    checkpoint.parent.mkdir(parents=True)
    for path in (notebook, checkpoint):
        path.write_text("not json", encoding="utf-8")
    report = tmp_path / "grades.json"
    args = ["grade", "--solutions", str(FIXTURES), "--report", str(report), "--no-sandbox"]
    code, _, err = run_main(capsys, *args, str(notebook), str(checkpoint))
    assert code == 1
    assert [entry["file"] for entry in json.loads(report.read_text(encoding="utf-8"))["submissions"]] == [str(notebook)]
    assert f"{checkpoint}: a Jupyter checkpoint" in err
    code, _, err = run_main(capsys, *args, str(checkpoint))
    assert code == 2 and "every file given is a Jupyter checkpoint" in err


def _section(root: Path, names: tuple[str, ...], text: str = "not json") -> list[str]:
    """A section's folder of students' files (not notebooks: no kernel runs), one folder each."""
    for name in names:
        (root / name).mkdir(parents=True, exist_ok=True)
        (root / name / "90_fixture.ipynb").write_text(text, encoding="utf-8")
    return [str(root / name / "90_fixture.ipynb") for name in names]


def test_a_section_graded_into_another_sections_feedback_folder_is_refused_before_grading(tmp_path, capsys):
    """Two sections graded one after the other into one feedback folder, no roster: each has
    an alice, named by her folder, and sec2's run wrote its alice's page over sec1's (sec1's
    alice would be handed sec2's alice's grade). Now sec2's run stops before grading, names
    the page and says what to do; sec1's pages are as they were."""
    feedback = tmp_path / "feedback"
    args = ["grade", "--solutions", str(FIXTURES), "--no-sandbox", "--feedback", str(feedback)]
    code, _, _ = run_main(capsys, *args, *_section(tmp_path / "sec1", ("alice", "bob")))
    assert code == 1
    before = {path.name: path.read_bytes() for path in feedback.iterdir()}
    assert sorted(before) == ["alice.html", "bob.html"]
    code, out, err = run_main(capsys, *args, *_section(tmp_path / "sec2", ("alice", "carol")))
    assert code == 2
    assert f"--feedback {feedback}: it holds the pages of 1 student(s) of another class named as students" in err
    assert f"alice.html (this run's alice: {tmp_path / 'sec2' / 'alice' / '90_fixture.ipynb'})" in err
    assert "a feedback folder of its own" in err and "--roster" in err
    assert "ERROR" not in out and {path.name: path.read_bytes() for path in feedback.iterdir()} == before


def test_the_same_class_graded_again_replaces_its_own_pages(tmp_path, capsys):
    """The normal case stays as it was: alice resubmits, the class is graded again into the
    same folder (through a linked folder, too), and her page is replaced by the new one."""
    feedback = tmp_path / "feedback"
    args = ["grade", "--solutions", str(FIXTURES), "--no-sandbox", "--feedback", str(feedback)]
    run_main(capsys, *args, *_section(tmp_path / "sec1", ("alice", "bob")))
    (tmp_path / "sec1" / "alice" / "90_fixture.ipynb").write_text("", encoding="utf-8")  # her resubmission
    (tmp_path / "linked").symlink_to(tmp_path / "sec1")
    for folder in ("sec1", "linked"):
        code, _, err = run_main(
            capsys, *args, *(str(tmp_path / folder / n / "90_fixture.ipynb") for n in ("alice", "bob"))
        )
        assert code == 1 and "another class" not in err
        assert sorted(path.name for path in feedback.iterdir()) == ["alice.html", "bob.html"]
        assert "the file is empty" in (feedback / "alice.html").read_text(encoding="utf-8")


def test_the_same_class_downloaded_again_into_a_new_folder_replaces_its_own_pages(tmp_path, capsys):
    """Next week's download of the class from the LMS, into a fresh folder (one student
    gone, one new), graded into the class's feedback folder without a roster, was refused
    as "another class": every page's folders differed. The class as a whole is found again
    (it shares most of its students with the pages), so its pages are replaced, each under
    its own name; another section sharing one name is still refused (the test above)."""
    feedback = tmp_path / "feedback"
    args = ["grade", "--solutions", str(FIXTURES), "--no-sandbox", "--feedback", str(feedback)]
    code, _, _ = run_main(capsys, *args, *_section(tmp_path / "week1", ("alice", "bob", "carol", "dan")))
    assert code == 1
    again = _section(tmp_path / "week2", ("alice", "bob", "carol", "erin"), text="")
    code, _, err = run_main(capsys, *args, *again)
    assert code == 1 and "another class" not in err
    pages = sorted(path.name for path in feedback.iterdir())
    assert pages == ["alice.html", "bob.html", "carol.html", "dan.html", "erin.html"]
    assert "the file is empty" in (feedback / "alice.html").read_text(encoding="utf-8")
    assert "dan.html" in err  # a page of the earlier run, named as ever


def test_a_namesakes_page_of_another_class_is_never_written_over(tmp_path):
    """write_feedback on its own (as a script may call it): sec2's alice gets alice-2.html
    beside sec1's alice.html; a roster's alice (the instructor's id) replaces hers."""
    folder = tmp_path / "feedback"
    write_feedback(class_rows([graded("sec1/alice/90_fixture.ipynb", code="SEC1-CODE", passed=())]), folder)
    written = write_feedback(class_rows([graded("sec2/alice/90_fixture.ipynb", code="SEC2-CODE", passed=())]), folder)
    assert [path.name for path in written] == ["alice-2.html"]
    assert "SEC1-CODE" in (folder / "alice.html").read_text(encoding="utf-8")
    assert "SEC2-CODE" in (folder / "alice-2.html").read_text(encoding="utf-8")
    roster = read_roster(roster_file(tmp_path, "file,id\nsec3/alice,alice\n"))
    rows = class_rows([graded("sec3/alice/90_fixture.ipynb", code="SEC3-CODE", passed=())], roster)
    assert [path.name for path in write_feedback(rows, folder)] == ["alice.html"]
    assert "SEC3-CODE" in (folder / "alice.html").read_text(encoding="utf-8")


HOLD_THE_LOCK = """
import sys, time
from grader.host.lock import folder_lock
with folder_lock(sys.argv[1]):
    print("held", flush=True)
    time.sleep(120)
"""


def test_a_second_run_into_a_feedback_folder_in_use_stops_at_once_and_a_killed_runs_lock_is_taken_over(
    tmp_path, capsys
):
    """Two terminals (or two instructors) grading into one feedback folder at once were not
    kept apart: each wrote its pages over the other's. Now the second stops at once, naming
    the folder and the run that holds it; once that run is killed (its lock left behind),
    the next run takes the lock over, says so, and leaves no lock behind."""
    feedback = tmp_path / "feedback"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_THE_LOCK, str(feedback)], stdout=subprocess.PIPE, text=True, cwd=COURSE_ROOT
    )
    args = ["grade", "--solutions", str(FIXTURES), "--no-sandbox", "--feedback", str(feedback)]
    args += _section(tmp_path / "sec1", ("alice", "bob"))
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        lock = (feedback / ".grader-lock").read_bytes()
        code, out, err = run_main(capsys, *args)
        assert code == 2 and "ERROR" not in out
        started = json.loads(lock)["started"]
        assert f"--feedback {feedback}: another grading run is writing into this folder: pid {holder.pid} on " in err
        assert f"{socket.gethostname()}, started {started}" in err and "grade into another folder" in err
        assert sorted(path.name for path in feedback.iterdir()) == [".grader-lock"]
        assert (feedback / ".grader-lock").read_bytes() == lock
    finally:
        holder.kill()
        holder.wait()
    code, _, err = run_main(capsys, *args)
    assert code == 1
    assert f"took over the lock of a grading run that ended without releasing it (pid {holder.pid} on " in err
    assert sorted(path.name for path in feedback.iterdir()) == ["alice.html", "bob.html"]


HOLD_A_FILES_LOCK = """
import sys, time
from grader.host.lock import file_lock
with file_lock(sys.argv[1], sys.argv[2]):
    print("held", flush=True)
    time.sleep(120)
"""


@pytest.mark.parametrize(("option", "name"), [("--report", "grades.json"), ("--gradebook", "grades.csv")])
def test_a_second_run_writing_a_report_or_gradebook_in_use_stops_at_once(tmp_path, capsys, option, name):
    """Only the feedback folder was locked: two runs writing one report or gradebook without
    --feedback (two sections' commands naming the same grades.csv) each replaced the other's
    file. Now the second stops at once, naming the file and the run that holds it, and leaves
    the file as it was; once that run is killed, the next run takes its lock over, says so,
    writes the file and leaves no lock behind."""
    output = tmp_path / "out" / name
    output.parent.mkdir()
    output.write_text("the earlier run's\n", encoding="utf-8")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_A_FILES_LOCK, str(output), option],
        stdout=subprocess.PIPE,
        text=True,
        cwd=COURSE_ROOT,
    )
    args = ["grade", "--solutions", str(FIXTURES), "--no-sandbox", option, str(output)]
    args += _section(tmp_path / "sec1", ("alice", "bob"))
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        lock = output.with_name(f".{name}.grader-lock")
        started = json.loads(lock.read_bytes())["started"]
        code, out, err = run_main(capsys, *args)
        assert code == 2 and "ERROR" not in out
        assert f"{option} {output}: another grading run is writing this file: pid {holder.pid} on " in err
        assert f"{socket.gethostname()}, started {started}" in err and "grade into another file" in err
        assert output.read_text(encoding="utf-8") == "the earlier run's\n"
    finally:
        holder.kill()
        holder.wait()
    code, _, err = run_main(capsys, *args)
    assert code == 1
    assert f"{option} {output}: took over the lock of a grading run that ended without releasing it" in err
    assert "alice" in output.read_text(encoding="utf-8-sig")
    assert sorted(path.name for path in output.parent.iterdir()) == [name]


def test_a_lock_of_a_run_on_another_machine_says_how_to_remove_it(tmp_path, capsys):
    """A folder on a shared disk, its lock taken by a run on another machine: whether that
    run still goes cannot be checked here, so it is refused, with the lock to remove once
    that run is known to be over."""
    feedback = tmp_path / "feedback"
    feedback.mkdir()
    lock = feedback / ".grader-lock"
    lock.write_text(json.dumps({"pid": 1, "host": "lab-pc-7", "started": "2026-11-29 09:00:00 CET", "since": 0.0}))
    args = ["grade", "--solutions", str(FIXTURES), "--no-sandbox", *_section(tmp_path / "sec1", ("alice",))]
    code, _, err = run_main(capsys, *args, "--feedback", str(feedback))
    assert code == 2
    assert "pid 1 on lab-pc-7, started 2026-11-29 09:00:00 CET" in err
    assert "That run is on another machine" in err and f"remove {lock} and grade again" in err
    assert lock.exists() and not (feedback / "alice.html").exists()


def test_a_lock_whose_pid_now_belongs_to_a_later_process_is_a_killed_runs():
    """A killed run's pid, given to a later process (pids are reused), must not keep its
    lock alive: the process's start time tells them apart."""
    me = this_run()
    assert not me.gone()
    assert replace(me, since=me.since - 3600).gone()
    assert not replace(me, host="lab-pc-7", since=0.0).gone()  # another machine's: cannot be told


def test_ctrl_c_leaves_no_feedback_folder_made_for_the_lock(tmp_path, capsys, monkeypatch):
    """The lock makes the feedback folder before grading; Ctrl-C, which writes nothing,
    leaves no empty folder (nor lock) behind, nor the folder above it that it made."""

    def stopped(*args: object, **kwargs: object) -> object:
        raise KeyboardInterrupt

    monkeypatch.setattr(grade_module, "grade_files", stopped)
    feedback = tmp_path / "out" / "feedback"
    args = ["grade", "--solutions", str(FIXTURES), "--no-sandbox", "--feedback", str(feedback)]
    code, _, err = run_main(capsys, *args, *_section(tmp_path / "sec1", ("alice",)))
    assert code == 130 and "interrupted" in err
    assert sorted(path.name for path in tmp_path.iterdir()) == ["sec1"]


def test_a_student_not_on_the_roster_does_not_read_it_on_their_page(tmp_path):
    """Finding 6: "not in roster" is for the instructor's gradebook, not the student's page."""
    roster = read_roster(roster_file(tmp_path, "file,id\nalice,a1\n"))
    rows = class_rows([graded("alice.ipynb"), graded("zed.ipynb")], roster)
    zed = next(row for row in rows if row.student.id == "zed")
    assert "not in roster" in gradebook_rows(rows, TASKS)[-1][-1]
    assert "roster" not in feedback_html(zed)


def test_gitignore_covers_what_readmes_grading_commands_write():
    """Finding 6: grading from the top folder leaves nothing git would offer to commit."""
    paths = ["submissions/alice/02_autograd.ipynb", "grades.json", "grades.csv", "feedback/a1.html", "roster.csv"]
    paths += ["grades-tasks.csv", ".grades.csv.grader-lock"]  # a killed run's lock
    done = subprocess.run(
        ["git", "check-ignore", "--no-index", *paths], cwd=COURSE_ROOT, capture_output=True, text=True
    )
    assert sorted(done.stdout.split()) == sorted(paths), done.stderr


def test_readme_tells_instructors_every_limit_default_and_ci_commands():
    """Finding 6: the instructor section states the defaults --help states, grading outside
    the repository, and the course's nbval for their own CI, chapter by chapter."""
    readme = (COURSE_ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## For instructors") :]
    section = section[: section.index("\n## ", 3)]
    text = " ".join(section.split())
    for fact in ["1,000,000", "--cell-timeout", "60 s", "--memory-limit", "4 GiB", "--process-limit", "1024"]:
        assert fact in text, fact
    assert "outside the repository" in text
    commands = re.findall(r"^\s*(\.venv/bin/python -m pytest .*)$", section, flags=re.MULTILINE)
    chapters = sorted(p.name for p in (COURSE_ROOT / "course").glob("[0-9]*.ipynb"))
    assert sorted(command.split()[-1] for command in commands) == [f"course/{name}" for name in chapters]


# --- a class of 30 ------------------------------------------------------------------------


def test_a_class_of_30_gets_every_student_their_own_row_and_page(tmp_path):
    """The Done-when of issue 28, graded for real on the fixture chapter: 30 students, one
    folder each, most files named alike; one hands in another chapter, two hand in files of
    one stem of their own choosing, the roster misspells one folder. Every student gets
    their own row and page, with their own code only. Each submission's failed code
    carries its student's marker, so a page holding another's code shows it."""
    release(FIXTURES, tmp_path / "exercises")
    exercise = nbformat.read(tmp_path / "exercises" / "90_fixture.ipynb", as_version=4)
    other = nbformat.read(tmp_path / "exercises" / "91_other.ipynb", as_version=4)
    chapter = load_chapter(FIXTURES / "90_fixture.ipynb")
    names = [f"s{n:02d}" for n in range(1, 31)]
    notebooks = {}
    for n, name in enumerate(names):
        # Task 9.3 fails for every third student with their own marker in the code.
        answers = {**RIGHT, "9.3": f"largest = 0  # {name.upper()}-CODE"} if n % 3 == 0 else RIGHT
        notebooks[f"{name}/90_fixture"] = with_answers(exercise, chapter, answers)
    notebooks["s05/90_fixture"] = other  # s05 hands in chapter 91's notebook
    del notebooks["s07/90_fixture"], notebooks["s08/90_fixture"]  # the same stem, their own
    notebooks["s07/homework"] = with_answers(exercise, chapter, {**RIGHT, "9.3": "largest = 0  # S07-CODE"})
    notebooks["s08/homework"] = with_answers(exercise, chapter, {**RIGHT, "9.3": "largest = 0  # S08-CODE"})
    paths = write_submissions(tmp_path / "class", notebooks)
    roster_lines = ["file,id,name"] + [f"{'s1O' if n == 's10' else n},id-{n},Student {n}" for n in names]
    roster = roster_file(tmp_path, "\n".join(roster_lines) + "\n")  # s10 misspelt: s1O
    out = tmp_path / "out"
    start = time.perf_counter()
    run = subprocess.run(
        [sys.executable, "-m", "grader", "grade", "--solutions", str(FIXTURES), *map(str, paths)]
        + ["--report", str(out / "grades.json"), "--gradebook", str(out / "grades.csv"), "--feedback"]
        + ["--roster", str(roster), "--cell-timeout", "30", "--jobs", "2"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    seconds = time.perf_counter() - start
    print(f"class of 30 graded in {seconds:.1f} s")
    assert run.returncode == 1, run.stderr
    table = read_table(out / "grades.csv")
    assert table[0][-2:] == ["total (6 pts)", "notes"]
    rows = {row[0]: row for row in table[1:]}
    # every roster student has a row; s10's file is graded under its folder, noted
    assert sorted(rows) == sorted([f"id-{n}" for n in names] + ["s10"])
    assert rows["id-s10"][-1] == "no submission" and rows["s10"][-1] == "90_fixture.ipynb: not in roster"
    assert "wrong chapter: 91_other, not 90_fixture" in rows["id-s05"][-1] and rows["id-s05"][-2] == "0"
    for n, name in enumerate(names):
        if name in ("s05", "s10"):
            continue
        expected = "5" if n % 3 == 0 or name in ("s07", "s08") else "6"
        assert rows[f"id-{name}"][-2] == expected, (name, rows[f"id-{name}"])
    pages = {path.stem: path.read_text(encoding="utf-8") for path in (out / "feedback").iterdir()}
    assert sorted(pages) == sorted([f"id-{n}" for n in names if n != "s10"] + ["s10"])
    markers = {name: f"{name.upper()}-CODE" for name in names}
    for stem, page in pages.items():
        name = stem.removeprefix("id-")
        assert not [other for other, marker in markers.items() if other != name and marker in page], stem
        failed = int(name[1:]) % 3 == 1 or name in ("s07", "s08")  # n % 3 == 0, n = number - 1
        assert (markers[name] in page) == failed, stem
        assert "roster" not in page
    assert "Hand in your 90_fixture notebook" in pages["id-s05"]
    assert str(tmp_path) not in "".join(pages.values())


# --- the tester's round after issue 28: one bad notebook, the exit status ---------------------


def test_a_submission_the_grader_fails_on_costs_only_its_own_row(tmp_path, capsys, monkeypatch):
    """Tester's 1 and 14: an unexpected exception on one notebook (here: deciding its
    chapter) was the class's end; now it is that student's "not graded" row, every output
    is written, the traceback goes to the instructor only, and the exit status says 2."""
    release(FIXTURES, tmp_path / "exercises")
    exercise = nbformat.read(tmp_path / "exercises" / "90_fixture.ipynb", as_version=4)
    paths = write_submissions(tmp_path / "class", {"evil": exercise, "broken": exercise})
    paths[1].write_text("not json", encoding="utf-8")
    real = grade_module.chapter_of

    def chapter_of(submission, chapters):
        if submission.path.stem == "evil":
            raise TypeError("unhashable type: 'list'")
        return real(submission, chapters)

    monkeypatch.setattr(grade_module, "chapter_of", chapter_of)
    out = tmp_path / "out"
    code, _, err = run_main(
        capsys, "grade", "--solutions", str(FIXTURES), *map(str, paths), "--no-sandbox",
        "--report", str(out / "grades.json"), "--feedback", "--gradebook", str(out / "grades.csv"),
    )  # fmt: skip
    assert code == 2
    evil, broken = json.loads((out / "grades.json").read_text(encoding="utf-8"))["submissions"]
    assert "the grader failed on this notebook" in evil["error"] and "Traceback" not in evil["error"]
    assert any("TypeError: unhashable type" in note and "Traceback" in note for note in evil["notes"])
    assert "TypeError: unhashable type" in err
    assert "not JSON" in broken["error"]
    page = (out / "feedback" / "evil.html").read_text(encoding="utf-8")
    assert "the grader failed on this notebook" in page and "Traceback" not in page and "TypeError" not in page
    assert len(read_table(out / "grades.csv")) == 3


def test_a_grading_round_that_crashes_costs_only_its_submission(tmp_path, monkeypatch):
    """Tester's 1: an exception inside one submission's rounds; the others are graded."""
    chapters = {"90_fixture": load_chapter(FIXTURES / "90_fixture.ipynb")}
    release(FIXTURES, tmp_path / "exercises")
    exercise = nbformat.read(tmp_path / "exercises" / "90_fixture.ipynb", as_version=4)
    paths = write_submissions(tmp_path, {"alice": exercise, "bob": exercise})

    def run_nbval(name, nb, cell_timeout, sandbox=None, time_limit=None):
        if name.startswith("0000"):
            raise RuntimeError("boom")
        return {}  # cut off before the first cell: every task lost, in a setup cell

    monkeypatch.setattr(grade_module, "run_nbval", run_nbval)
    alice, bob = grade_module.grade_files(paths, chapters, 30, None, jobs=2).results
    assert alice.internal_error and alice.tasks == [] and "the grader failed" in (alice.error or "")
    assert any("RuntimeError: boom" in note for note in alice.notes)
    assert bob.error is None and [t.number for t in bob.tasks] == ["9.1", "9.2", "9.3"]


def test_a_submission_past_its_time_limit_has_its_remaining_tasks_not_run(tmp_path, monkeypatch):
    """Tester's 12: each round gets only the time the submission has left, and once it is
    spent no round starts again; the tasks left say why, with the time used."""
    chapters = {"90_fixture": load_chapter(FIXTURES / "90_fixture.ipynb")}
    release(FIXTURES, tmp_path / "exercises")
    exercise = nbformat.read(tmp_path / "exercises" / "90_fixture.ipynb", as_version=4)
    paths = write_submissions(tmp_path, {"slow": exercise})
    clock, limits = [100.0], []

    def run_nbval(name, nb, cell_timeout, sandbox=None, time_limit=None):
        limits.append(time_limit)
        clock[0] += 250.0  # killed when the limit came, before any cell recorded
        return {}

    monkeypatch.setattr(grade_module, "run_nbval", run_nbval)
    monkeypatch.setattr(grade_module, "monotonic", lambda: clock[0])
    (slow,) = grade_module.grade_files(paths, chapters, 30, None, time_limit=400).results
    assert limits == [400, 150]  # the second round: what the first left
    assert [t.reason for t in slow.tasks] == ["time_limit"] * 3
    assert slow.tasks[-1].message.startswith(
        "not run: the notebook's time limit was reached (400 s for the whole notebook; 500 s used)"
    )


def test_exit_status_tells_a_lost_point_from_a_grading_error(tmp_path, capsys):
    """Tester's 14: 1 only when a student lost points (or handed in something ungradable);
    2 when the grader could not do its job (a usage error, an output it could not write)."""
    broken = tmp_path / "alice.ipynb"
    broken.write_text("not json", encoding="utf-8")
    code, _, _ = run_main(capsys, "grade", "--solutions", str(FIXTURES), str(broken), "--no-sandbox")
    assert code == 1
    (tmp_path / "empty").mkdir()
    code, _, err = run_main(capsys, "grade", "--solutions", str(tmp_path / "empty"), str(broken), "--no-sandbox")
    assert code == 2 and "no instructor notebooks" in err
    code, out, _ = run_main(capsys, "grade", "--help")
    text = " ".join(out.split())
    assert "exit status: 0" in text and "1 when" in text and "2 when" in text
    assert "--submission-timeout" in text and "(default 600)" in text
