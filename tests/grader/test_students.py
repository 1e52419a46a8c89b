"""Who is who in a class (findings 4 to 7 of the second class trial): students named by
their folder in an LMS's export whatever their files are called, an LMS's rosters as
exported, roster names matched whatever their letter case or Unicode form, and which of
a student's two submissions counts, whatever order the files were given in."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest

from grader.host.errors import GraderError
from grader.host.feedback import feedback_html
from grader.host.gradebook import gradebook_rows
from grader.host.identity import owners
from grader.host.lms import write_lms_gradebook
from grader.host.outputs import Outputs
from grader.host.report import as_json
from grader.host.roster import read_roster
from grader.host.students import class_rows
from grader.host.summary import class_summary, summary_text

from .classroom import TASKS, graded, read_table, roster_file

MOODLE = [
    Path("moodle/Alice Smith_123_assignsubmission_file_/01_tensors.ipynb"),
    Path("moodle/Bob Jones_456_assignsubmission_file_/tensors_bob.ipynb"),
    Path("moodle/Chloé Ñúñez_789_assignsubmission_file_/Copy of 01_tensors.ipynb"),
]


def ids(found: dict) -> list[tuple[str, str]]:
    return [(student.id, student.name) for student in found.values()]


# --- 4. folder-per-student exports -----------------------------------------------------


def test_a_moodle_export_names_each_student_by_their_folder_whatever_their_files():
    """Moodle's "download all submissions" puts each student in `<name>_<id>_assignsubmission_file_`:
    the student is that name and id, not the file's name, and stays so when a classmate's
    file happens to share a name."""
    expected = [("123", "Alice Smith"), ("456", "Bob Jones"), ("789", "Chloé Ñúñez")]
    assert ids(owners(MOODLE)) == expected
    dan = Path("moodle/Dan Li_321_assignsubmission_file_/01_tensors.ipynb")
    assert ids(owners([*MOODLE, dan])) == [*expected, ("321", "Dan Li")]
    assert ids(owners(MOODLE[:1])) == expected[:1]  # one student's folder alone


def test_a_moodle_student_with_two_files_handed_in_twice():
    copy = Path("moodle/Alice Smith_123_assignsubmission_file_/Copy of 01_tensors.ipynb")
    rows = class_rows([graded(str(MOODLE[0])), graded(str(copy), passed=()), graded(str(MOODLE[1]))])
    assert [(row.student.id, len(row.results)) for row in rows] == [("123", 2), ("456", 1)]
    assert "2 submissions for chapter 90_fixture" in rows[0].notes[0]


def test_blackboard_attempts_of_one_user_are_one_student_who_submitted_twice(tmp_path):
    """Blackboard's export is flat: `<assignment>_<user>_attempt_<date>_<file>`."""
    first = "HW1_jdoe_attempt_2024-03-01-10-00-00_01_tensors.ipynb"
    second = "HW1_jdoe_attempt_2024-03-02-09-30-00_01_tensors.ipynb"
    other = "HW1_asmith_attempt_2024-03-01-11-00-00_homework.ipynb"
    assert [s.id for s in owners([Path(first), Path(second), Path(other)]).values()] == ["jdoe", "jdoe", "asmith"]
    rows = class_rows([graded(first, passed=()), graded(second), graded(other)])
    assert [(row.student.id, len(row.results)) for row in rows] == [("asmith", 1), ("jdoe", 2)]
    assert "2 submissions" in rows[1].notes[0]
    roster = read_roster(roster_file(tmp_path, "file,id,name\njdoe,u1,Jo Doe\nasmith,u2,Al Smith\n"))
    assert [s.id for s in owners([Path(first), Path(second), Path(other)], roster).values()] == ["u1", "u1", "u2"]


def test_blackboard_users_with_an_underscore_are_never_merged(tmp_path):
    """Blackboard usernames may hold ``_``: ``j_doe`` and ``a_doe`` are two students, not
    one ``doe`` (whose page would show both students' code); a roster names them so."""
    j_doe = Path("HW1_j_doe_attempt_2024-03-01-10-00-00_01_tensors.ipynb")
    a_doe = Path("HW1_a_doe_attempt_2024-03-01-11-00-00_01_tensors.ipynb")
    again = Path("HW1_j_doe_attempt_2024-03-02-09-00-00_01_tensors.ipynb")
    other = Path("HW1_bsmith_attempt_2024-03-01-12-00-00_01_tensors.ipynb")
    found = owners([j_doe, a_doe, again, other])
    assert [s.id for s in found.values()] == ["j_doe", "a_doe", "j_doe", "bsmith"]
    rows = class_rows([graded(str(path)) for path in (j_doe, a_doe, again, other)])
    assert [(row.student.id, len(row.results)) for row in rows] == [("a_doe", 1), ("bsmith", 1), ("j_doe", 2)]
    roster = read_roster(roster_file(tmp_path, "file,id\nj_doe,u1\na_doe,u2\nbsmith,u3\n"))
    assert [s.id for s in owners([j_doe, a_doe, other], roster).values()] == ["u1", "u2", "u3"]


def test_canvas_file_names_give_the_user_id_and_late_is_not_part_of_the_name():
    """Canvas's zip: `<name>_<userid>_<submissionid>_<file>`, late ones marked `late_` or `_late_`."""
    found = owners(
        [
            Path("smithjohn_12345_67890_01_tensors.ipynb"),
            Path("late_doejane_23456_78901_01_tensors.ipynb"),
            Path("roepat_late_34567_89012_tensors-1.ipynb"),
            Path("late_alice.ipynb"),
        ]
    )
    assert ids(found) == [("12345", "smithjohn"), ("23456", "doejane"), ("34567", "roepat"), ("alice", "")]


def test_a_mixed_layout_is_graded_each_loose_file_named_by_its_stem():
    found = owners(
        [Path("mixed/alice/01_tensors.ipynb"), Path("mixed/bob/01_tensors.ipynb"), Path("mixed/carol.ipynb")]
    )
    assert [s.id for s in found.values()] == ["alice", "bob", "carol"]
    assert Outputs.prepare(list(found), gradebook=Path("grades.csv")).gradebook == Path("grades.csv")


# --- 5. a roster with students who did not submit ----------------------------------------

CANVAS_EXPORT = (
    "Student,ID,SIS User ID,SIS Login ID,Section,Homework 1 (4521),file\n"
    "    Points Possible,,,,,18.00,\n"
    '"Alice, A",1001,s1001,alice@x.edu,Sec 1,,alice.ipynb\n'
    '"Bob, B",1002,s1002,bob@x.edu,Sec 1,,bob.ipynb\n'
    '"Carol, C",1003,s1003,carol@x.edu,Sec 1,,\n'
    '"Student, Test",9999,,,Sec 1,,\n'
)


def test_a_canvas_export_with_a_file_column_is_a_roster(tmp_path, capsys):
    """Its "Points Possible" row and Canvas's Test Student are left out (and said so); a
    student with no file gets "no submission" and 0."""
    roster = read_roster(roster_file(tmp_path, CANVAS_EXPORT))
    Outputs.prepare([Path("alice.ipynb")], roster=tmp_path / "roster.csv")
    assert "line 2: left out 'Points Possible'" in capsys.readouterr().err
    assert [s.id for s in roster.students] == ["1001", "1002", "1003"]
    assert any("Points Possible" in note for note in roster.skipped)
    assert any("Student, Test" in note for note in roster.skipped)
    rows = class_rows([graded("alice.ipynb"), graded("bob.ipynb", passed=("9.2",))], roster)
    carol = next(row for row in rows if row.student.id == "1003")
    assert carol.notes == ["no submission"]
    left_out = write_lms_gradebook(rows, tmp_path / "cv.csv", TASKS, "canvas")
    assert [row[1::4] for row in read_table(tmp_path / "cv.csv")[1:]] == [["1001", "6"], ["1002", "3"], ["1003", "0"]]
    assert left_out == []


def test_a_canvas_exports_manual_posting_line_is_no_student(tmp_path):
    """Where an assignment posts its grades by hand, Canvas's export has a line above
    "Points Possible" with nothing but "Manual Posting" under such assignments."""
    header, rest = CANVAS_EXPORT.split("\n", 1)
    roster = read_roster(roster_file(tmp_path, f"{header}\n,,,,,Manual Posting,\n{rest}"))
    assert [s.id for s in roster.students] == ["1001", "1002", "1003"]
    assert any("line 2: left out" in note and "Manual Posting" in note for note in roster.skipped)


def test_a_roster_line_without_an_id_is_still_refused(tmp_path):
    with pytest.raises(GraderError, match="line 2: no id"):
        read_roster(roster_file(tmp_path, "file,id\nalice.ipynb,\n"))


# --- 6. letter case and Unicode form ---------------------------------------------------


def test_roster_files_match_whatever_their_letter_case_or_unicode_form(tmp_path):
    """macOS writes file names decomposed (NFD); a roster typed elsewhere is composed (NFC)."""
    nfd = unicodedata.normalize("NFD", "Chloé.ipynb")
    roster = read_roster(roster_file(tmp_path, "file,id,name\nChloé.ipynb,2001,Chloé N\nAlice.ipynb,2002,Alice\n"))
    found = owners([Path(nfd), Path("alice.ipynb")], roster)
    assert [(s.id, s.listed) for s in found.values()] == [("2001", True), ("2002", True)]


def test_two_files_that_differ_only_in_case_or_form_are_refused_for_one_roster_line(tmp_path):
    roster = read_roster(roster_file(tmp_path, "file,id\nalice.ipynb,a1\n"))
    with pytest.raises(GraderError, match=r"line 2.*Alice.ipynb.*alice.ipynb.*letter case or Unicode form"):
        owners([Path("Alice.ipynb"), Path("alice.ipynb")], roster)


def test_a_roster_file_repeated_in_another_case_or_form_is_refused(tmp_path):
    text = "file,id\nChloé.ipynb,a1\n" + unicodedata.normalize("NFD", "chloé") + ",b2\n"
    with pytest.raises(GraderError, match="already on line 2"):
        read_roster(roster_file(tmp_path, text))


# --- 7. a student's two submissions --------------------------------------------------------


def twice(order: list[int]) -> list:
    """Alice hands in two notebooks (one failing 9.2), Bob one; in the given order."""
    results = [
        graded("twice/alice/01_tensors.ipynb", passed=("9.1", "9.3")),
        graded("twice/alice/01_tensors_v2.ipynb"),
        graded("twice/bob/01_tensors.ipynb", passed=("9.1",)),
    ]
    return [results[n] for n in order]


def test_which_of_two_submissions_counts_does_not_depend_on_their_order():
    """The better of the two counts (ties: the last by name), and the note names both."""
    tables = [gradebook_rows(class_rows(twice(order)), TASKS) for order in ([0, 1, 2], [2, 1, 0], [1, 0, 2])]
    assert tables[0] == tables[1] == tables[2]
    alice = tables[0][1]
    assert alice[:6] == ["alice", "", "2", "3", "1", "6"]
    assert "01_tensors.ipynb 3/6" in alice[-1] and "01_tensors_v2.ipynb 6/6" in alice[-1]
    assert "counted 01_tensors_v2.ipynb" in alice[-1]


def test_ties_count_the_last_file_by_name():
    first, second = graded("jo/hw_a.ipynb", passed=("9.1",)), graded("jo/hw_b.ipynb", passed=("9.1",))
    for results in ([first, second], [second, first]):
        jo, _ = class_rows([*results, graded("kim/hw_a.ipynb")])
        assert jo.counted()["90_fixture"] is second


def test_the_class_summary_counts_students_not_files():
    for order in ([0, 1, 2], [2, 1, 0]):
        summary = class_summary(twice(order))
        task = {t["task"]: t for t in summary["tasks"]}
        assert (task["9.2"]["passed"], task["9.2"]["graded"]) == (1, 2)
        assert (summary["students"], summary["submissions"]) == (2, 3)
        assert "from 2 students" in summary_text(summary)


def test_names_shaped_like_an_export_but_of_two_people_are_never_merged():
    """The review's finding: ``alice_2024_1_autograd`` and ``bob_2024_1_autograd`` were read as
    Canvas's ``<name>_<user id>_<submission id>_<file>``, one user 2024, and merged into one
    row. Canvas's ids run to several digits; and one id never stands for two names."""
    loose = [Path("c/alice_2024_1_autograd.ipynb"), Path("c/bob_2024_1_autograd.ipynb")]
    assert [s.id for s in owners(loose).values()] == ["alice_2024_1_autograd", "bob_2024_1_autograd"]
    same_id = [Path("c/ann_12345_67890_hw.ipynb"), Path("c/bob_12345_67891_hw.ipynb")]
    assert [s.id for s in owners(same_id).values()] == ["ann_12345_67890_hw", "bob_12345_67891_hw"]


# --- the third class trial: repositories, nbgrader's folders, one student regraded ---------


def test_a_students_repository_with_a_copy_in_a_subfolder_is_one_student():
    """GitHub Classroom: a repository per student; alice's notebook is at its top and again
    in exercises/. It was two rows (``alice-repo`` and ``alice-repo/exercises``), one of
    them the worse grade an LMS would take. A folder holding notes beside several
    students' folders still merges none of them."""
    rows = class_rows(
        [
            graded("hw/alice-repo/90_fixture.ipynb", passed=("9.1",)),
            graded("hw/alice-repo/exercises/90_fixture.ipynb"),
            graded("hw/bob-repo/exercises/90_fixture.ipynb"),
        ]
    )
    assert [(row.student.id, len(row.results)) for row in rows] == [("alice-repo", 2), ("bob-repo/exercises", 1)]
    # the note and the page tell her two files of one name apart
    note = "(alice-repo/90_fixture.ipynb 2/6, exercises/90_fixture.ipynb 6/6): counted exercises/90_fixture.ipynb"
    assert note in rows[0].notes[0]
    page = feedback_html(rows[0])
    assert "Submission: alice-repo/90_fixture.ipynb<" in page and "Submission: exercises/90_fixture.ipynb<" in page
    assert rows[0].counted()["90_fixture"].score == 6
    sections = ["sec1/notes.ipynb", "sec1/alice/90.ipynb", "sec1/bob/90.ipynb", "sec2/carol/90.ipynb"]
    found = owners([Path("class") / path for path in sections])
    assert [s.id for s in found.values()] == ["sec1", "sec1/alice", "sec1/bob", "sec2/carol"]
    # a folder of a student's loose file beside one student's folder owns no one else's
    # (the review: carol's sec1/carol.ipynb and sec1/alice/ were one student, "sec1")
    loose = [graded("class/sec1/carol.ipynb"), graded("class/sec1/alice/90_fixture.ipynb")]
    rows = class_rows([*loose, graded("class/sec2/bob/90_fixture.ipynb")])
    assert [(row.student.id, len(row.results)) for row in rows] == [("sec1", 1), ("sec1/alice", 1), ("sec2/bob", 1)]


def test_a_roster_names_a_student_by_their_folder_above_the_notebooks_own(tmp_path):
    """nbgrader's ``submitted/<student>/<assignment>/`` and a repository's ``exercises/``: the
    roster's file ``alice`` (the student's folder, as the README says) names alice's
    notebook; it named nothing, and alice got "no submission" beside an unlisted row."""
    roster = read_roster(roster_file(tmp_path, "file,id,name\nalice,a1,Alice\nhw2-bob,b1,Bob\n"))
    paths = [Path("submitted/alice/ps1/90_fixture.ipynb"), Path("hw2/hw2-bob/exercises/90_fixture.ipynb")]
    assert [(s.id, s.listed) for s in owners(paths, roster).values()] == [("a1", True), ("b1", True)]
    # never a folder above the class's own: the instructor's home, /home/chen, names no one
    home = read_roster(roster_file(tmp_path, "file,id\nchen,c1\n"))
    paths = [tmp_path / "chen" / "submitted" / name / "ps1" / "90_fixture.ipynb" for name in ("bob", "dana")]
    assert [(s.id, s.listed) for s in owners(paths, home).values()] == [("bob/ps1", False), ("dana/ps1", False)]


def test_one_students_folder_graded_again_on_its_own_is_that_student():
    """Regrading alice alone (``submissions/alice/90_fixture.ipynb``) named her ``90_fixture``:
    her page and gradebook row went under the chapter's name. A file named after the
    chapter names no student; a loose file named after its student still is that student;
    and two files named after one chapter (a browser's ``90_fixture (1).ipynb``) may be two
    students' and are never merged."""
    assert [row.student.id for row in class_rows([graded("submissions/alice/90_fixture.ipynb")])] == ["alice"]
    assert [row.student.id for row in class_rows([graded("submissions/alice/Copy of 90_fixture.ipynb")])] == ["alice"]
    downloads = [graded("Downloads/90_fixture.ipynb"), graded("Downloads/90_fixture (1).ipynb")]
    assert [row.student.id for row in class_rows(downloads)] == ["90_fixture", "90_fixture (1)"]
    assert [row.student.id for row in class_rows([graded("class/carol.ipynb")])] == ["carol"]
    # a whole repository on its own (the notebook and its copy in exercises/) is its student
    repository = [graded("hw/alice-repo/90_fixture.ipynb"), graded("hw/alice-repo/exercises/90_fixture.ipynb")]
    assert [(row.student.id, len(row.results)) for row in class_rows(repository)] == [("alice-repo", 2)]
    # a student number after a dash is no copy's number: the file is that student's
    assert [row.student.id for row in class_rows([graded("hw2/90_fixture-1002.ipynb")])] == ["90_fixture-1002"]
    assert [row.student.id for row in class_rows([graded("class/carol.ipynb"), graded("class/90_fixture.ipynb")])] == [
        "90_fixture",
        "carol",
    ]


def test_the_json_report_names_each_files_student_and_the_file_that_counts(tmp_path):
    """Third class trial: the report listed files only, so a script importing it summed
    alice's two files (9 of 6 points) and could not say whose each was."""
    for order in ([0, 1, 2], [2, 1, 0]):
        entries = {e["file"]: e for e in as_json(twice(order))["submissions"]}
        assert [(e["student"], e["counted"]) for _, e in sorted(entries.items())] == [
            ("alice", False),
            ("alice", True),
            ("bob", True),
        ]
        assert sum(e["score"] for e in entries.values() if e["counted"]) == 6 + 2
    roster = read_roster(roster_file(tmp_path, "file,id,name\nalice,a1,Alice A\n"))
    alice = as_json(twice([0, 1, 2]), roster=roster)["submissions"][1]
    assert (alice["student"], alice["name"], alice["counted"]) == ("a1", "Alice A", True)
    # a report alone of files no folder tells apart: no student, and no crash
    clash = [graded("alex.ipynb"), graded("late/alex.ipynb")]
    assert [(e["student"], e["counted"]) for e in as_json(clash)["submissions"]] == [(None, False), (None, False)]


def test_one_learner_checking_all_their_notebooks_is_one_student():
    """``grade exercises/*.ipynb --chapter each``: a learner's own notebooks, named after
    their chapters, are one student's (the summary said "from 1 students" at best)."""
    mine = [graded("exercises/90_fixture.ipynb"), graded("exercises/91_other.ipynb", passed=())]
    mine[1].chapter = "91_other"
    assert [(row.student.id, len(row.results)) for row in class_rows(mine)] == [("exercises", 2)]
    assert "from 1 student (each" in summary_text(class_summary(mine))


def test_a_sections_folder_of_loose_files_is_never_taken_for_one_student(tmp_path):
    """``sec1/alice.ipynb``, ``sec1/bob.ipynb`` and ``sec2/carol.ipynb`` given together: each
    file in a folder was that folder's, so alice and bob were one student, ``sec1``, of whom
    one file counted (bob vanished from the gradebook). No name tells a section's folder from
    a student's folder of drafts, so it is refused, saying how to grade it either way; the
    section graded on its own is a student per file, a roster naming the folder makes one
    student of it, and a folder holding the chapter's notebook beside a draft is its student's."""
    section = [Path("class/sec1/alice.ipynb"), Path("class/sec1/bob.ipynb"), Path("class/sec2/carol.ipynb")]
    with pytest.raises(GraderError) as refused:
        owners(section)
    told = str(refused.value)
    assert "class/sec1 holds notebooks of 2 names (alice.ipynb, bob.ipynb), none named after a chapter" in told
    assert "grade that folder on its own (class/sec1/*.ipynb" in told and "--roster" in told
    assert [s.id for s in owners(section[:2]).values()] == ["alice", "bob"]
    roster = read_roster(roster_file(tmp_path, "file,id\nsec1,s1\nsec2/carol.ipynb,c1\n"))
    assert [s.id for s in owners(section, roster).values()] == ["s1", "s1", "c1"]
    drafts = [Path("class/alice/90_fixture.ipynb"), Path("class/alice/draft.ipynb"), Path("class/bob/x.ipynb")]
    assert [s.id for s in owners(drafts, chapters=["90_fixture"]).values()] == ["alice", "alice", "bob"]
    versions = [Path("class/alice/hw.ipynb"), Path("class/alice/HW (1).ipynb"), Path("class/alice/hw_v2.ipynb")]
    assert {s.id for s in owners([*versions, Path("class/bob/x.ipynb")]).values()} == {"alice", "bob"}
    with pytest.raises(GraderError, match="class/alice holds notebooks of 2 names"):
        owners([Path("class/alice/draft.ipynb"), Path("class/alice/final.ipynb"), Path("class/bob/x.ipynb")])
    assert [s.id for s in owners(MOODLE + [MOODLE[0].with_name("scratch.ipynb")]).values()] == [
        "123",
        "456",
        "789",
        "123",
    ]
