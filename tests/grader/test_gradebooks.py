"""Gradebooks an LMS imports, written from a class graded by hand (classroom.py): Canvas's
import columns, Moodle's one identifier column, and a plain table Excel opens with its accents.
Finding 7 of the class trial (issue 28's numbered list)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from grader.__main__ import main
from grader.host.errors import GraderError
from grader.host.gradebook import write_gradebook
from grader.host.lms import write_lms_gradebook
from grader.host.lock import file_lock
from grader.host.outputs import Outputs
from grader.host.roster import read_roster
from grader.host.students import class_rows

from .classroom import TASKS, graded, read_table, roster_file

BOM = "\ufeff"  # what Excel needs to read a CSV as UTF-8

CANVAS_ROSTER = (
    "Student,ID,SIS User ID,SIS Login ID,Section,file\n"
    '"Dupont, Zoë",101,S-1,zdupont,Group A,zoe\n'
    "Bob Brown,102,S-2,bbrown,Group B,bob\n"
    "Carl Crane,103,S-3,ccrane,Group A,carl\n"
)


def test_canvas_gradebook_follows_canvas_import_columns(tmp_path):
    """Canvas's gradebook import (its instructor guide, "How do I import grades in the
    Gradebook?"): the first columns are the identity columns Student, ID, SIS User ID,
    SIS Login ID and Section, exactly so named, as Canvas's own export writes them; every
    other column is read as an assignment (a new name makes a new assignment), so only one
    assignment column may follow: the chapter's total. UTF-8 (with a BOM for Excel).
    Students Canvas cannot know (not on the roster) are left out; the tasks go to a
    separate detail file."""
    roster = read_roster(roster_file(tmp_path, CANVAS_ROSTER))
    results = [graded("zoe.ipynb"), graded("bob.ipynb", passed=("9.2",)), graded("stranger.ipynb")]
    rows = class_rows(results, roster)
    path = tmp_path / "canvas.csv"
    left_out = write_lms_gradebook(rows, path, TASKS, "canvas", assignment="Autograd")
    raw = path.read_bytes()
    assert raw.startswith(BOM.encode("utf-8"))
    table = read_table(path)
    assert table[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Autograd"]
    assert table[1:] == [
        ["Dupont, Zoë", "101", "S-1", "zdupont", "Group A", "6"],
        ["Bob Brown", "102", "S-2", "bbrown", "Group B", "3"],
        ["Carl Crane", "103", "S-3", "ccrane", "Group A", "0"],
    ]
    assert left_out == ["stranger"]
    details = read_table(tmp_path / "canvas-tasks.csv")
    assert details[0][:5] == ["student", "name", "9.1 (2 pts)", "9.2 (3 pts)", "9.3 (1 pt)"]
    assert [r[0] for r in details[1:]] == ["101", "102", "103", "stranger"]


def test_canvas_gradebook_needs_a_roster_with_canvas_ids(tmp_path):
    """Canvas matches rows to students by ID / SIS User ID / SIS Login ID: without a roster
    that gives them, refuse before grading."""
    with pytest.raises(GraderError, match="--gradebook-format canvas needs --roster"):
        Outputs.prepare([Path("a.ipynb")], gradebook=tmp_path / "g.csv", form="canvas")


def test_moodle_gradebook_has_one_identifier_column_and_leaves_unknown_users_out(tmp_path):
    """Moodle's "Import grades from CSV file" (Moodle docs, Grade import): the file's header
    names its columns; the import maps one identifier column ("Map from") to a user field
    (user id, username, ID number or email: "Map to") and each other column to a grade
    item, and the import fails on a user it cannot find, so every row must be a known user
    and no row may lack the identifier."""
    roster = read_roster(
        roster_file(
            tmp_path,
            "file,id,name,email\nzoe,101,Zoë,zoe@uni.example\nbob,102,Bob,bob@uni.example\nnomail,103,Nomail,\n",
        )
    )
    rows = class_rows([graded("zoe.ipynb"), graded("bob.ipynb", passed=()), graded("stranger.ipynb")], roster)
    path = tmp_path / "moodle.csv"
    left_out = write_lms_gradebook(rows, path, TASKS, "moodle", assignment="Autograd", id_column="email")
    assert path.read_bytes().startswith(BOM.encode("utf-8"))
    assert read_table(path) == [["email", "Autograd"], ["zoe@uni.example", "6"], ["bob@uni.example", "0"]]
    assert left_out == ["103", "stranger"]
    with pytest.raises(GraderError, match=r"--id-column 'phone'.*file, id, name, email"):
        write_lms_gradebook(rows, path, TASKS, "moodle", id_column="phone")


def test_the_plain_gradebook_opens_in_excel_with_accents(tmp_path):
    """Finding 7: Excel reads a CSV as the system's code page unless it starts with a BOM."""
    roster = read_roster(roster_file(tmp_path, "file,id,name\nzoe,101,Zoë Émile\n"))
    path = tmp_path / "grades.csv"
    write_gradebook(class_rows([graded("zoe.ipynb")], roster), path, TASKS)
    assert path.read_bytes().startswith(BOM.encode("utf-8"))
    assert read_table(path)[1][:2] == ["101", "Zoë Émile"]


def test_grading_some_students_again_keeps_the_class_gradebook_and_report(tmp_path, capsys):
    """Third class trial: grading alice again with the class's command line replaced the
    class's grades.csv and grades.json with files of alice alone. The earlier version is
    kept beside each (numbered, never over an earlier copy), and the terminal says so; a
    run over the whole class again keeps nothing."""
    grades, report = tmp_path / "grades.csv", tmp_path / "grades.json"

    def run(*names: str) -> None:
        results = [graded(f"class/{name}/90_fixture.ipynb") for name in names]
        Outputs.prepare([r.path for r in results], report=report, gradebook=grades).write(results, TASKS)

    run("alice", "bob")
    run("alice", "bob")
    assert "earlier version" not in capsys.readouterr().err
    assert sorted(path.name for path in tmp_path.iterdir()) == ["grades.csv", "grades.json"]
    run("alice")
    err = capsys.readouterr().err
    kept = tmp_path / "grades.earlier.csv"
    assert (
        f"{grades} held 1 student(s) whose rows this run changed or left out (bob); "
        f"its earlier version is kept as {kept}" in err
    )
    assert f"{report} held 1 student(s) not graded in this run (bob)" in err
    assert [row[0] for row in read_table(tmp_path / "grades.earlier.csv")[1:]] == ["alice", "bob"]
    assert [row[0] for row in read_table(grades)[1:]] == ["alice"]
    assert "class/bob/90_fixture.ipynb" in (tmp_path / "grades.earlier.json").read_text(encoding="utf-8")
    run("bob")
    assert [row[0] for row in read_table(tmp_path / "grades.earlier-2.csv")[1:]] == ["alice"]
    assert [row[0] for row in read_table(tmp_path / "grades.earlier.csv")[1:]] == ["alice", "bob"]  # untouched
    assert not [path for path in tmp_path.iterdir() if path.name.startswith(".")]  # no temporary copy left


def test_grading_one_student_again_with_the_roster_keeps_the_class_gradebook(tmp_path, capsys):
    """With a roster every student has a row, so none is left out of the new gradebook when
    one student is graded again: bob's row is there, without his points. The earlier
    version, which has them, is kept."""
    grades = tmp_path / "grades.csv"
    roster = tmp_path / "roster.csv"
    roster.write_text("file,id,name\nalice,alice,Alice\nbob,bob,Bob\n", encoding="utf-8")

    def run(*names: str) -> None:
        results = [graded(f"class/{name}/90_fixture.ipynb") for name in names]
        Outputs.prepare([r.path for r in results], gradebook=grades, roster=roster).write(results, TASKS)

    run("alice", "bob")
    before = read_table(grades)
    run("alice", "bob")
    assert not (tmp_path / "grades.earlier.csv").exists()  # the same grades again: nothing to keep
    run("alice")
    assert "whose rows this run changed or left out (bob)" in capsys.readouterr().err
    assert read_table(tmp_path / "grades.earlier.csv") == before


def test_a_gradebook_open_in_excel_keeps_this_runs_grades_beside_it(tmp_path, monkeypatch):
    """Re-grading with last run's gradebook open in Excel on Windows: the file cannot be
    replaced while Excel shows it, and the run's gradebook was lost ("cannot write it"),
    the class to be graded again. Now this run's is written beside it as grades.new.csv, the
    message says so and what to do, and the open gradebook and the report are as ever."""
    gradebook, report = tmp_path / "grades.csv", tmp_path / "grades.json"
    outputs = Outputs.prepare([Path("class/alice.ipynb")], report=report, gradebook=gradebook)
    outputs.write([graded("class/alice.ipynb", passed=("9.1",))], TASKS)
    shown = gradebook.read_bytes()
    replace = os.replace

    def excel_holds_it(source, target):
        if Path(target) == gradebook:
            raise PermissionError(13, "The process cannot access the file because it is being used by another process")
        replace(source, target)

    monkeypatch.setattr("grader.host.files.os.replace", excel_holds_it)
    with pytest.raises(GraderError) as failed:
        outputs.write([graded("class/alice.ipynb")], TASKS)
    message = str(failed.value)
    assert f"--gradebook {gradebook}: cannot write it (The process cannot access the file" in message
    assert f"this run's version is written beside it as {tmp_path / 'grades.new.csv'}: close grades.csv" in message
    assert gradebook.read_bytes() == shown
    assert read_table(tmp_path / "grades.new.csv")[1][:6] == ["alice", "", "2", "3", "1", "6"]
    assert '"score": 6' in report.read_text(encoding="utf-8")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["grades.csv", "grades.json", "grades.new.csv"]


def test_an_lms_gradebooks_tasks_file_is_locked_with_it(tmp_path, capsys):
    """A Canvas gradebook writes every task's points to ``grades-tasks.csv`` beside it: a run
    holding that file (here, this process) keeps a second run from writing it, as the
    gradebook itself is kept (test_class.py), and nothing is written."""
    (tmp_path / "zoe").mkdir()
    (tmp_path / "zoe" / "90_fixture.ipynb").write_text("not json", encoding="utf-8")
    gradebook = tmp_path / "out" / "grades.csv"
    argv = ["grade", "--solutions", str(Path(__file__).parent / "fixtures"), "--no-sandbox"]
    argv += [str(tmp_path / "zoe" / "90_fixture.ipynb"), "--roster", str(roster_file(tmp_path, CANVAS_ROSTER))]
    argv += ["--gradebook", str(gradebook), "--gradebook-format", "canvas"]
    with file_lock(tmp_path / "out" / "grades-tasks.csv", "--gradebook"):
        code = main(argv)
    err = capsys.readouterr().err
    assert code == 2
    assert f"--gradebook {tmp_path / 'out' / 'grades-tasks.csv'}: another grading run is writing this file" in err
    assert not gradebook.exists() and not (tmp_path / "out").exists()  # (made for the lock, removed with it)
