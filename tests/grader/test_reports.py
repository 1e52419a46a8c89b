"""What an instructor takes away: feedback pages, the gradebook CSV, the roster, the class
summary and atomic writes, on hand-built results; then one real `python -m grader grade`
run that writes them all."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

import grader.host.feedback as feedback_module
from grader.host.errors import GraderError
from grader.host.feedback import feedback_html, file_name, write_feedback
from grader.host.files import write_atomic
from grader.host.gradebook import gradebook_rows, write_gradebook
from grader.host.notebook import load_chapter
from grader.host.outputs import Outputs
from grader.host.release import release
from grader.host.report import as_json
from grader.host.results import SubmissionResult, TaskResult
from grader.host.roster import Entry, Roster, Student, read_roster
from grader.host.students import class_rows
from grader.host.summary import class_summary, summary_text

from .helpers import with_answers, write_submissions

FIXTURES = Path(__file__).parent / "fixtures"
SCRIPT = "<script>alert('x')</script>"


def result(name: str, verdicts: dict[str, tuple[str, str]], chapter: str = "90_fixture", **answers) -> SubmissionResult:
    """A graded submission: task number -> (reason, message), with 9.1 worth 2, 9.2 worth 3."""
    points = {"9.1": 2.0, "9.2": 3.0, "9.3": 1.0, "8.1": 4.0}
    return SubmissionResult(
        Path(f"subs/{name}.ipynb"),
        chapter,
        [TaskResult(number, points[number], reason, message) for number, (reason, message) in verdicts.items()],
        answers={number.replace("_", "."): code for number, code in answers.items()},
    )


PASS = ("passed", "Exercise passed")
HINT = ("check_failed", "total should be 6: use sum()")


def read_csv(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def roster_of(files: dict[str, Student]) -> Roster:
    """A roster as read_roster builds it: file value -> student, a line each."""
    return Roster([Entry(line, file, student) for line, (file, student) in enumerate(files.items(), start=2)])


# --- feedback pages -------------------------------------------------------------------


def test_feedback_page_shows_every_task_and_the_code_of_the_failed_ones_escaped():
    hostile = result(
        "mallory<img src=x onerror=alert(1)>",
        {"9.1": PASS, "9.2": ("check_failed", f"bad {SCRIPT} & more")},
        **{"9_1": "def square(x):\n    return x * x  # PASSED-CODE", "9_2": f"total = '{SCRIPT}'"},
    )
    (row,) = class_rows([hostile], roster_of({"mallory<img src=x onerror=alert(1)>": Student("m1", f"Mal{SCRIPT}")}))
    page = feedback_html(row)
    assert "<script" not in page.lower() and "<img" not in page
    assert page.count("&lt;script&gt;") >= 4  # the name (title and heading), the message, the code
    assert "mallory&lt;img src=x onerror=alert(1)&gt;.ipynb" in page
    assert "bad &lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; more" in page
    assert "total = &#x27;&lt;script&gt;" in page
    assert "PASSED-CODE" not in page  # only the failed tasks' code is shown
    assert "2 / 2" in page and "0 / 3" in page and "Total: 2 / 5 points" in page
    assert "Chapter 90_fixture" in page
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert "http://" not in page and "https://" not in page and "<link" not in page  # self-contained
    assert "unsandboxed" not in page
    assert "unsandboxed" in feedback_html(row, sandboxed=False)


def test_feedback_page_for_an_ungraded_or_unmatched_submission_says_why():
    broken = SubmissionResult(Path("bob.ipynb"), error=f"bob.ipynb: not a Jupyter notebook {SCRIPT}")
    unmatched = result("carol", {"9.1": ("unmatched", "no solution cell found"), "9.2": PASS}, **{"9_2": "total = 6"})
    bob, carol = class_rows([broken, unmatched])
    assert "Not graded: bob.ipynb: not a Jupyter notebook &lt;script&gt;" in feedback_html(bob)
    page = feedback_html(carol)
    assert "No solution cell was found" in page and "total = 6" not in page


def test_feedback_files_one_per_student_with_safe_names(tmp_path):
    rows = class_rows([result("alice", {"9.1": PASS}), result("evil", {"9.1": PASS}), result("Alice", {"9.1": HINT})])
    written = write_feedback(rows, tmp_path / "feedback")
    assert sorted(p.name for p in written) == ["Alice.html", "alice-2.html", "evil.html"]
    assert all(p.parent == tmp_path / "feedback" for p in written)
    assert file_name("a/b c\\d") == "a_b_c_d" and file_name("...") == "student" and file_name("../x") == "_x"


def test_pages_of_an_earlier_run_are_named_to_the_instructor_and_left_as_they_were(tmp_path, capsys):
    """Third class trial: grading again into the same folder (bob's file withdrawn, or alice
    regraded alone) left bob's old page among the new ones without a word, ready to be
    handed out with his old grade. They are kept (nothing of the instructor's is removed),
    and the terminal names them; the instructor's own files there are not."""
    folder = tmp_path / "feedback"
    everyone = [result(name, {"9.1": PASS}) for name in ("alice", "bob")]
    Outputs.prepare([r.path for r in everyone], feedback=folder).write(everyone)
    (folder / "index.html").write_text("<!DOCTYPE html><title>My class</title>", encoding="utf-8")
    assert "earlier run" not in capsys.readouterr().err
    alice = [result("alice", {"9.1": HINT})]
    Outputs.prepare([r.path for r in alice], feedback=folder).write(alice)
    err = capsys.readouterr().err
    assert "1 page(s) there are of an earlier run" in err and "left as they were: bob.html." in err
    assert "index.html" not in err and "alice.html" not in err
    assert "Exercise passed" in (folder / "bob.html").read_text(encoding="utf-8")  # kept as it was
    assert "use sum()" in (folder / "alice.html").read_text(encoding="utf-8")


def test_another_chapters_notebook_beside_the_right_one_costs_nothing_and_says_so():
    """Third class trial: a GitHub Classroom repository holds every chapter's exercises;
    graded with ``--chapter``, a student who handed in the right notebook read under a
    second "Chapter 90_fixture: not graded" heading "Hand in your 90_fixture notebook"."""

    def other(path: str) -> SubmissionResult:
        refused = SubmissionResult(Path(path), handed_in_chapter="91_other", expected_chapter="90_fixture")
        refused.error = "This is the exercise notebook of chapter 91_other; this assignment is chapter 90_fixture. "
        refused.error += "Hand in your 90_fixture notebook."
        return refused

    right = result("alice", {"9.1": PASS})
    (alice,) = class_rows([other("subs/alice/91_other.ipynb"), right])
    page = feedback_html(alice)
    assert "Hand in your" not in page and "<h2>Chapter 91_other: not graded</h2>" in page
    assert "it costs you nothing: your 90_fixture notebook, alice.ipynb, is the one graded" in page
    (bob,) = class_rows([other("subs/bob/91_other.ipynb")])  # nothing else handed in: told what to hand in
    assert "Hand in your 90_fixture notebook" in feedback_html(bob)
    # beside a notebook of the class's chapter that could not be graded either: no "is the one graded"
    damaged = SubmissionResult(Path("subs/carol/90_fixture.ipynb"), chapter="90_fixture", expected_chapter="90_fixture")
    damaged.error = "the grader failed on it (its traceback is in the report)."
    (carol,) = class_rows([other("subs/carol/91_other.ipynb"), damaged])
    assert "is the one graded" not in feedback_html(carol) and "Hand in your 90_fixture" in feedback_html(carol)


def test_grading_again_never_writes_a_page_over_another_students_or_the_instructors_file(tmp_path):
    """Third class trial: "Alice Smith" and "Alice_Smith" share a safe name; graded together
    their pages were Alice_Smith.html and Alice_Smith-2.html, and "Alice_Smith" graded again
    alone wrote her page over Alice Smith's (as alice.html does over Alice.html on a disk
    blind to letter case). A file of the instructor's of that name was replaced too."""
    folder = tmp_path / "feedback"
    both = [result("Alice Smith", {"9.1": PASS}), result("Alice_Smith", {"9.1": HINT})]
    written = write_feedback(class_rows(both), folder)
    assert [path.name for path in written] == ["Alice_Smith.html", "Alice_Smith-2.html"]
    (folder / "bob.html").write_text("<p>my notes on bob</p>", encoding="utf-8")
    again = write_feedback(class_rows([result("Alice_Smith", {"9.1": PASS}), result("bob", {"9.1": PASS})]), folder)
    assert [path.name for path in again] == ["Alice_Smith-2.html", "bob-2.html"]
    assert "Feedback for Alice Smith<" in (folder / "Alice_Smith.html").read_text(encoding="utf-8")
    assert "Feedback for Alice_Smith<" in (folder / "Alice_Smith-2.html").read_text(encoding="utf-8")
    assert (folder / "bob.html").read_text(encoding="utf-8") == "<p>my notes on bob</p>"


def test_feedback_file_names_are_cut_to_bytes_and_stay_unique(tmp_path):
    """Tester's 13: a name cut to 100 characters was 248 bytes of CJK, "File name too long",
    and the pages of every student after it were lost."""
    long = "wang" + "张" * 90  # 274 bytes
    other = long + "李"  # the same name once cut
    rows = class_rows([result(long, {"9.1": PASS}), result(other, {"9.1": PASS}), result("zed", {"9.1": PASS})])
    written = write_feedback(rows, tmp_path / "feedback")
    assert len(written) == 3 and all(p.is_file() for p in written)
    assert len({p.name.casefold() for p in written}) == 3
    assert all(len(p.name.encode()) <= 200 for p in written)
    assert file_name(long).encode().decode() == file_name(long)  # no character cut in half
    assert len(file_name("é" * 300).encode()) <= 200


def test_a_feedback_page_that_cannot_be_written_costs_no_other_page(tmp_path, monkeypatch):
    """Tester's 13: one page's failure is reported, after every other page is written."""
    rows = class_rows([result(name, {"9.1": PASS}) for name in ("alice", "bob", "carol")])
    real = feedback_module.write_atomic

    def write_atomic(path, text):
        if path.stem == "bob":
            raise OSError(36, "File name too long")
        real(path, text)

    monkeypatch.setattr(feedback_module, "write_atomic", write_atomic)
    with pytest.raises(OSError, match=r"bob: File name too long.*2 other pages were written"):
        write_feedback(rows, tmp_path / "feedback")
    assert sorted(os.listdir(tmp_path / "feedback")) == ["alice.html", "carol.html"]


def test_a_notebook_read_with_help_tells_its_student_on_the_page():
    """Tester's 1 and 11: what the grader changed or guessed to read a notebook (a zip, a
    character that is not text, a misleading file name) is on the student's page."""
    graded = result("alice", {"9.1": PASS})
    graded.notices = ["handed in as a zip archive: graded the notebook inside it, 90_fixture.ipynb"]
    page = feedback_html(class_rows([graded])[0])
    assert "handed in as a zip archive: graded the notebook inside it, 90_fixture.ipynb" in page


# --- gradebook ----------------------------------------------------------------------


def test_gradebook_has_a_column_per_task_a_total_and_students_sorted():
    rows = class_rows(
        [
            result("zoe", {"9.1": PASS, "9.2": HINT}),
            result("Émile", {"9.1": PASS, "9.2": PASS}),
            result("adam", {"9.1": HINT, "9.2": PASS}),
            SubmissionResult(Path("subs/bea.ipynb"), error="not a notebook"),
        ]
    )
    table = gradebook_rows(rows)
    assert table[0] == ["student", "name", "9.1 (2 pts)", "9.2 (3 pts)", "total (5 pts)", "notes"]
    assert [r[0] for r in table[1:]] == ["adam", "bea", "zoe", "Émile"]
    assert [r[2:5] for r in table[1:]] == [["0", "3", "3"], ["0", "0", "0"], ["2", "0", "2"], ["2", "3", "5"]]
    # the class chapter's tasks, when given, are the columns even where nobody was graded
    assert gradebook_rows(rows[1:2], [("9.1", 2.0), ("9.2", 3.0), ("9.3", 1.0)])[0][-2] == "total (6 pts)"


def test_gradebook_csv_is_utf8_and_spreadsheet_safe(tmp_path):
    rows = class_rows(
        [result("=cmd", {"9.3": PASS}), SubmissionResult(Path("x.ipynb"), error="not\na notebook")],
        roster_of({"=cmd": Student("s1", "Zoë =HYPERLINK()"), "x": Student("s2", "-2+3")}),
    )
    path = tmp_path / "grades.csv"
    write_gradebook(rows, path)
    table = read_csv(path.read_bytes().decode("utf-8").removeprefix("\ufeff"))
    assert table[0] == ["student", "name", "9.3 (1 pt)", "total (1 pt)", "notes"]
    assert table[1] == ["s1", "Zoë =HYPERLINK()", "1", "1", ""]
    assert table[2] == ["s2", "'-2+3", "0", "0", "x.ipynb: not graded: not"]


# --- roster -------------------------------------------------------------------------


def test_roster_matches_by_path_name_or_stem_and_notes_missing_and_extra_students(tmp_path):
    roster_path = tmp_path / "roster.csv"
    roster_path.write_text(
        "\ufeffFile,ID,Name,email\nsubs/alice.ipynb,a1,Alice A.,a@x\nbob.ipynb,b2,Bob,\n\ncarol,c3,Carol,\n",
        encoding="utf-8",
    )
    roster = read_roster(roster_path)
    results = [
        result("alice", {"9.1": PASS, "9.2": PASS}),
        result("bob", {"9.1": HINT, "9.2": PASS}),
        result("dave", {"9.1": PASS, "9.2": HINT}),
    ]
    rows = class_rows(results, roster)
    assert [(r.student.id, r.student.name, [x.path.stem for x in r.results]) for r in rows] == [
        ("a1", "Alice A.", ["alice"]),
        ("b2", "Bob", ["bob"]),
        ("c3", "Carol", []),
        ("dave", "", ["dave"]),
    ]
    table = {r[0]: r for r in gradebook_rows(rows)[1:]}
    assert table["b2"][2:5] == ["0", "3", "3"]
    assert table["c3"][2:] == ["0", "0", "0", "no submission"]
    assert table["dave"][-1] == "dave.ipynb: not in roster"
    assert table["a1"][-1] == ""


def test_a_chapter_handed_in_twice_counts_the_most_points_and_says_so():
    for verdicts in ([PASS, HINT], [HINT, PASS]):
        (row,) = class_rows([result("amy", {"9.1": verdict}) for verdict in verdicts])
        assert gradebook_rows([row])[1][2:4] == ["2", "2"]
        assert row.notes == [
            "2 submissions for chapter 90_fixture (amy.ipynb 0/2, amy.ipynb 2/2): counted amy.ipynb "
            "(the most points; of equal points, the last by name)"
        ]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("name,id\nalice,a1\n", "no column 'file'"),
        ("file,id\nalice,a1\nalice.ipynb,b2\n", "already on line 2 \\(student 'a1'\\)"),
        ("file,id\nalice,\n", "line 2: no id"),
        ("file,id\n", "no students"),
    ],
)
def test_a_bad_roster_is_refused_with_the_reason(tmp_path, text, problem):
    path = tmp_path / "roster.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(GraderError, match=problem):
        read_roster(path)


# --- class summary ------------------------------------------------------------------


def test_summary_counts_pass_rates_and_the_three_most_common_failures():
    fails = [("check_failed", m) for m in ["use sum()", "use sum()", "off by one", "use sum()", "off by one"]]
    fails += [("timeout", "ran past 10 s"), ("solution_error", "NameError")]
    results = [result(f"s{n}", {"9.1": PASS, "9.2": verdict}) for n, verdict in enumerate(fails)]
    results += [result("ok", {"9.1": PASS, "9.2": PASS}), SubmissionResult(Path("subs/bad.ipynb"), error="not JSON")]
    summary = class_summary(results)
    assert (summary["submissions"], summary["graded"], summary["not_graded"]) == (9, 8, 1)
    first, second = summary["tasks"]
    assert (first["task"], first["passed"], first["graded"], first["pass_rate"], first["failures"]) == (
        "9.1",
        8,
        8,
        1.0,
        [],
    )
    assert (second["passed"], second["graded"], second["pass_rate"]) == (1, 8, 0.125)
    assert second["failures"] == [
        {"message": "use sum()", "reason": "check_failed", "count": 3},
        {"message": "off by one", "reason": "check_failed", "count": 2},
        {"message": "ran past 10 s", "reason": "timeout", "count": 1},
    ]
    text = summary_text(summary)
    assert "8 of 9 submissions graded" in text and "unsandboxed" not in text
    assert (
        re.search(r"1/8 passed \(12%\)\s+3x use sum\(\)", text) and "2x off by one" in text and "NameError" not in text
    )
    assert as_json(results)["summary"] == summary
    assert "unsandboxed" in summary_text(class_summary(results, sandboxed=False))
    assert as_json(results, sandboxed=False)["summary"]["sandboxed"] is False


# --- atomic writes ------------------------------------------------------------------


def test_atomic_write_replaces_the_file_and_leaves_no_temporary_file(tmp_path):
    path = tmp_path / "out" / "grades.csv"
    write_atomic(path, "first\n")
    path.chmod(0o640)
    write_atomic(path, "second \ud800\n")  # a lone surrogate cannot fail the write
    assert path.read_text(encoding="utf-8") == "second ?\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert os.listdir(path.parent) == ["grades.csv"]


def test_a_failed_atomic_write_keeps_the_old_file_and_no_temporary_file(tmp_path, monkeypatch):
    path = tmp_path / "grades.json"
    path.write_text("old", encoding="utf-8")

    def broken(*args):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OSError, match="disk full"):
        write_atomic(path, "new")
    assert path.read_text(encoding="utf-8") == "old" and os.listdir(tmp_path) == ["grades.json"]


def test_outputs_refuse_to_write_over_a_submission_before_grading(tmp_path):
    submission = tmp_path / "alice.ipynb"
    with pytest.raises(GraderError, match="never writes to one"):
        Outputs.prepare([submission], gradebook=submission)
    with pytest.raises(GraderError, match="not a folder"):
        Outputs.prepare([submission], feedback=tmp_path / "bob.ipynb")
    assert Outputs.prepare([submission], report=tmp_path / "r" / "g.json", feedback=True).feedback == (
        tmp_path / "r" / "feedback"
    )


# --- end to end ---------------------------------------------------------------------


def test_grade_writes_report_gradebook_and_feedback_for_a_class(tmp_path):
    """One real grading run: two submissions, a roster that misses one of them and names a
    student who handed in nothing."""
    chapter = load_chapter(FIXTURES / "90_fixture.ipynb")
    release(FIXTURES, tmp_path / "exercises")
    exercise = nbformat.read(tmp_path / "exercises" / "90_fixture.ipynb", as_version=4)
    right = {"9.1": "def square(x):\n    return x * x", "9.2": "total = sum(DATA)", "9.3": "largest = max(scaled)"}
    wrong = {**right, "9.2": f"total = len(DATA)  # {SCRIPT}"}
    paths = write_submissions(
        tmp_path / "subs",
        {"alice": with_answers(exercise, chapter, right), "bob": with_answers(exercise, chapter, wrong)},
    )
    hashes = [hashlib.sha256(p.read_bytes()).hexdigest() for p in paths]
    roster = tmp_path / "roster.csv"
    roster.write_text("file,id,name\nalice.ipynb,a1,Alice\ncarol.ipynb,c3,Carol\n", encoding="utf-8")
    out = tmp_path / "out"
    run = subprocess.run(
        [sys.executable, "-m", "grader", "grade", "--solutions", str(FIXTURES), *map(str, paths)]
        + ["--cell-timeout", "30", "--report", str(out / "grades.json"), "--feedback"]
        + ["--gradebook", str(out / "grades.csv"), "--roster", str(roster)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 1, run.stderr  # bob failed a task
    assert run.stdout.index("bob.ipynb (chapter 90_fixture)") < run.stdout.index("Class summary")
    assert re.search(r"9\.2\s+1/2 passed \(50%\)\s+1x total should be 6", run.stdout)
    assert "warning: roster: c3: no submission" in run.stderr
    assert "warning: roster: bob: bob.ipynb: not in roster" in run.stderr

    report = json.loads((out / "grades.json").read_text(encoding="utf-8"))
    assert [t["passed"] for t in report["summary"]["tasks"]] == [2, 1, 2]
    table = read_csv((out / "grades.csv").read_text(encoding="utf-8-sig"))
    assert table == [
        ["student", "name", "9.1 (2 pts)", "9.2 (3 pts)", "9.3 (1 pt)", "total (6 pts)", "notes"],
        ["a1", "Alice", "2", "3", "1", "6", ""],
        ["bob", "", "2", "0", "1", "3", "bob.ipynb: not in roster"],
        ["c3", "Carol", "0", "0", "0", "0", "no submission"],
    ]
    assert sorted(os.listdir(out / "feedback")) == ["a1.html", "bob.html"]
    bob = (out / "feedback" / "bob.html").read_text(encoding="utf-8")
    assert "<script" not in bob and "total = len(DATA)  # &lt;script&gt;" in bob
    assert "total should be 6" in bob and "Total: 3 / 6 points" in bob
    assert "Total: 6 / 6 points" in (out / "feedback" / "a1.html").read_text(encoding="utf-8")
    assert sorted(os.listdir(out)) == ["feedback", "grades.csv", "grades.json"]  # no temporary files
    assert [hashlib.sha256(p.read_bytes()).hexdigest() for p in paths] == hashes
