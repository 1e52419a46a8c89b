"""An instructor's fourth class trial: what a real class's downloads and disks hand the
grader beyond the earlier trials (a class's archive given as it is, links that lead out of
the class's folder, cells pasted with their ids, rosters saved by a spreadsheet in its own
encoding, the grader's own output caught by the submissions' glob). Each test names what
went wrong before its fix; none runs a kernel."""

from __future__ import annotations

import json
import shutil
import tempfile
import tracemalloc
import zipfile
from pathlib import Path

import nbformat
import pytest

from grader.__main__ import main
from grader.host.errors import GraderError
from grader.host.notebook import load_chapter
from grader.host.release import exercise_notebook
from grader.host.roster import read_roster
from grader.host.submission import Submission, match_solutions, read_submission

from .classroom import read_table

FIXTURES = Path(__file__).parent / "fixtures"
NOT_JSON = "not json"


@pytest.fixture(scope="module")
def chapter():
    return load_chapter(FIXTURES / "90_fixture.ipynb")


def run_main(capsys, *argv: str) -> tuple[int, str, str]:
    """The command line in this process, on the fixture chapter, unsandboxed (these
    submissions never reach a kernel)."""
    code = main(["grade", "--solutions", str(FIXTURES), "--no-sandbox", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_cell_pasted_with_its_id_is_not_taken_for_the_answer(chapter):
    """VS Code's Jupyter extension (and Notebook 6.2) paste a copied cell with the original's
    id. A learner who copied their 9.1 answer to the end of the notebook to try something was
    graded on the scratch copy, the last cell with that id, not on the answer under 9.1."""
    nb = exercise_notebook(chapter)
    answer = next(c for c in nb.cells if c.get("id") == "ex9-1-solution")
    answer.source = "def square(x):\n    return x * x"
    scratch = nbformat.from_dict(json.loads(json.dumps(answer)))
    scratch.source = "def square(x):\n    return x +  # trying something"
    nb.cells.append(scratch)
    answers = match_solutions(chapter, Submission(Path("90_fixture.ipynb"), nb))
    assert answers["9.1"] == "def square(x):\n    return x * x"
    assert "Exercise 9.2" in (answers["9.2"] or "")  # the untouched stub, by its own id


def test_a_pasted_copy_of_one_answer_is_not_taken_for_another_tasks(chapter):
    """The copy of 9.1's answer, pasted (with its id) at the end of the notebook, lies under
    9.3's heading. 9.3's answer cell had been made anew (an id of its own, no tag), so 9.3 is
    found under its heading: the tagged copy of 9.1's answer was taken for it, since a shared
    id no longer told whose answer the copy was."""
    nb = exercise_notebook(chapter)
    answer = next(c for c in nb.cells if c.get("id") == "ex9-1-solution")
    answer.source = "def square(x):\n    return x * x"
    mine = next(c for c in nb.cells if c.get("id") == "ex9-3-solution")
    mine.source, mine.metadata, mine.id = "largest = max(scaled)", nbformat.NotebookNode(), "made-anew"
    nb.cells.append(nbformat.from_dict(json.loads(json.dumps(answer))))
    answers = match_solutions(chapter, Submission(Path("90_fixture.ipynb"), nb))
    assert answers["9.1"] == "def square(x):\n    return x * x"
    assert answers["9.3"] == "largest = max(scaled)"


def zipped(path: Path, members: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in members.items():
            archive.writestr(name, text)
    return path


@pytest.mark.parametrize(
    "members, given",
    [
        # "Download all submissions" as Canvas writes it (a student's own zip inside), given alone
        ({"alice_12345_67890_90_fixture.ipynb": NOT_JSON, "bob_12346_67891_bob.zip": NOT_JSON}, ()),
        # Moodle's, a folder per student, given beside a late notebook the instructor saved
        (
            {
                "Alice Smith_123_assignsubmission_file_/90_fixture.ipynb": NOT_JSON,
                "Bob Jones_124_assignsubmission_file_/90_fixture.ipynb": NOT_JSON,
            },
            ("carol.ipynb",),
        ),
        # a class's notebooks zipped by hand, given alone
        ({"alice.ipynb": NOT_JSON, "bob.ipynb": NOT_JSON, "__MACOSX/._alice.ipynb": ""}, ()),
    ],
)
def test_a_class_archive_given_as_it_is_is_refused_with_how_to_unpack_it(tmp_path, capsys, members, given):
    """The class's download, given to the grader as it came from the LMS, was graded as one
    student named after the archive: a gradebook row and a feedback page for "submissions",
    telling a student to "hand in the one exercise notebook", and every real student missing."""
    archive = zipped(tmp_path / "submissions.zip", members)
    others = [tmp_path / name for name in given]
    for path in others:
        path.write_text(NOT_JSON, encoding="utf-8")
    grades, pages = tmp_path / "grades.csv", tmp_path / "feedback"
    code, _, err = run_main(
        capsys, str(archive), *map(str, others), "--gradebook", str(grades), "--feedback", str(pages)
    )
    assert code == 2
    assert f"{archive}: a class's archive" in err
    assert f"unzip {archive} -d {tmp_path / 'submissions'}" in err
    assert not grades.exists() and not pages.exists()


def test_a_students_own_zip_of_several_notebooks_is_still_theirs_to_mend(tmp_path, capsys):
    """The boundary: among classmates' files, a student's zip of two notebooks (not an LMS's
    names) is that student's row, "unpack it and hand in the one exercise notebook"."""
    archive = zipped(tmp_path / "alice.zip", {"90_fixture.ipynb": NOT_JSON, "90_fixture-Copy1.ipynb": NOT_JSON})
    (tmp_path / "bob.ipynb").write_text(NOT_JSON, encoding="utf-8")
    grades = tmp_path / "grades.csv"
    code, _, _ = run_main(capsys, str(archive), str(tmp_path / "bob.ipynb"), "--gradebook", str(grades))
    assert code == 1
    rows = {row[0]: row[-1] for row in read_table(grades)[1:]}
    assert "a zip archive of 2 notebooks" in rows["alice"] and "not JSON" in rows["bob"]


def test_a_link_out_of_the_class_folder_is_not_followed(tmp_path, capsys):
    """A student's repository (git keeps links) or archive (unzip makes them) held
    ``alice/90_fixture.ipynb`` as a link to a file elsewhere on the instructor's disk: the
    grader read it with the instructor's rights and graded it as alice's (the course's
    solutions/ notebook: full marks; last year's notebook of another student: their code on
    alice's page). Now it is alice's row, "not graded", and the instructor is told where it
    led; a class folder that is itself a link is read as ever."""
    elsewhere = tmp_path / "course" / "solutions" / "90_fixture.ipynb"
    elsewhere.parent.mkdir(parents=True)
    elsewhere.write_text(NOT_JSON, encoding="utf-8")
    for name in ("alice", "bob"):
        (tmp_path / "class" / name).mkdir(parents=True)
    (tmp_path / "class" / "alice" / "90_fixture.ipynb").symlink_to(Path("../../course/solutions/90_fixture.ipynb"))
    (tmp_path / "class" / "bob" / "90_fixture.ipynb").write_text(NOT_JSON, encoding="utf-8")
    (tmp_path / "linked").symlink_to(tmp_path / "class")
    for folder in ("class", "linked"):
        grades = tmp_path / f"{folder}.csv"
        given = [str(tmp_path / folder / name / "90_fixture.ipynb") for name in ("alice", "bob")]
        code, _, err = run_main(capsys, *given, "--gradebook", str(grades))
        assert code == 1
        alice, bob = read_table(grades)[1:]
        assert alice[0] == "alice" and "a link to a file outside the student's own folder" in alice[-1]
        assert "not JSON" not in alice[-1] and str(tmp_path) not in alice[-1]
        assert f"a link to {elsewhere}, outside the student's own folder: not read" in err
        assert bob[0] == "bob" and "not JSON" in bob[-1]


def test_a_learner_grading_their_own_notebook_behind_a_link_is_graded(tmp_path, capsys):
    """One notebook is no class: a learner who keeps it behind a link (in a synced folder,
    say) and grades it with `grade my.ipynb` has it read."""
    kept = tmp_path / "synced" / "90_fixture.ipynb"
    kept.parent.mkdir()
    kept.write_text(NOT_JSON, encoding="utf-8")
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "90_fixture.ipynb").symlink_to(kept)
    report = tmp_path / "report.json"
    code, _, err = run_main(capsys, str(tmp_path / "work" / "90_fixture.ipynb"), "--report", str(report))
    assert code == 1
    assert "outside the student's own folder" not in err + report.read_text(encoding="utf-8")
    assert "not JSON" in report.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "encoding, told",
    [("cp1252", "line 3 is not UTF-8 text (byte 0xeb"), ("utf-16", 'it is saved as UTF-16 (Excel\'s "Unicode Text")')],
)
def test_a_roster_a_spreadsheet_saved_in_its_own_encoding_says_how_to_save_it(tmp_path, encoding, told):
    """Excel's "CSV (Comma delimited)" on a Western European Windows writes Windows-1252, its
    "Unicode Text" UTF-16: the refusal was Python's decoder speaking ("'utf-8' codec can't
    decode byte 0xeb in position 34: invalid continuation byte"), with no line to look at and
    nothing to do about it."""
    roster = tmp_path / "roster.csv"
    roster.write_bytes("file,id,name\nbob,b1,Bob\nalice,a1,Zoë\n".encode(encoding))
    with pytest.raises(GraderError) as refused:
        read_roster(roster)
    assert told in str(refused.value)
    assert "Save it again as CSV UTF-8" in str(refused.value)


def test_a_roster_with_a_byte_order_mark_and_a_legacy_byte_names_that_byte_and_its_line(tmp_path):
    """A roster begun as CSV UTF-8 (its byte order mark) and finished in Windows-1252: the
    decoder counts positions after the mark, so the byte named was 3 bytes early ("byte 0x62",
    a plain "b") and, near a line's start, so was the line."""
    roster = tmp_path / "roster.csv"
    roster.write_bytes(b"\xef\xbb\xbffile,id,name\nbob,b1,Bob\n\xebve,e1,Eve\n")
    with pytest.raises(GraderError, match=r"line 3 is not UTF-8 text \(byte 0xeb"):
        read_roster(roster)


def test_the_graders_own_output_caught_by_the_submissions_pattern_is_named_as_such(tmp_path, capsys):
    """Outputs written into the class's folder (``class/grades.json``, ``class/feedback/``)
    are caught by ``class/*`` on the next run. The refusals said "--report class/grades.json:
    that is a submission" (it is the report) and "class/feedback: a folder, not a notebook.
    Give ... class/feedback/*.ipynb" (grade the feedback folder?)."""
    folder = tmp_path / "class"
    folder.mkdir()
    for name in ("alice", "bob"):
        (folder / f"{name}.ipynb").write_text(NOT_JSON, encoding="utf-8")
    outputs = ["--report", str(folder / "grades.json"), "--feedback", str(folder / "feedback")]
    code, _, _ = run_main(capsys, *map(str, sorted(folder.iterdir())), *outputs)
    assert code == 1
    report = (folder / "grades.json").read_bytes()
    code, _, err = run_main(capsys, *map(str, sorted(folder.iterdir())), *outputs)
    assert code == 2
    assert f"{folder / 'feedback'}: a folder of feedback pages this grader wrote" in err
    assert f"Give the notebooks only ({folder / '*.ipynb'})" in err
    given = [str(path) for path in sorted(folder.iterdir()) if path.is_file()]
    code, _, err = run_main(capsys, *given, *outputs)
    assert code == 2
    assert f"--report {folder / 'grades.json'}: it is among the submissions given too" in err
    assert f"Give the notebooks only ({folder / '*.ipynb'})" in err
    assert (folder / "grades.json").read_bytes() == report  # refused before anything was written


def test_a_link_out_of_a_students_folder_is_caught_whatever_the_paths_share(tmp_path, capsys):
    """links_out knew only the folder all the given paths share: two sections given from
    far-apart places share only ``/``, under which every file lies, so alice's link to the
    instructor's solutions was read and graded as hers; and a link from one student's folder
    to a classmate's file never left the class's folder, so it was read too (or merged with
    the classmate's file as "the same file"). Each is now its student's "not graded" row."""
    elsewhere = tmp_path / "course" / "solutions" / "90_fixture.ipynb"
    elsewhere.parent.mkdir(parents=True)
    elsewhere.write_text(NOT_JSON, encoding="utf-8")
    sec1, sec2 = tmp_path / "term" / "sec1", Path(tempfile.mkdtemp(prefix="sec2-"))  # apart from tmp_path
    try:
        for folder in (sec1 / "alice", sec1 / "bob", sec1 / "dan", sec2 / "carol"):
            folder.mkdir(parents=True)
        (sec1 / "alice" / "90_fixture.ipynb").symlink_to(elsewhere)
        (sec1 / "bob" / "90_fixture.ipynb").write_text(NOT_JSON, encoding="utf-8")
        (sec1 / "dan" / "90_fixture.ipynb").symlink_to(Path("../bob/90_fixture.ipynb"))
        (sec2 / "carol" / "90_fixture.ipynb").write_text(NOT_JSON, encoding="utf-8")
        given = [sec1 / name / "90_fixture.ipynb" for name in ("alice", "bob", "dan")]
        report = tmp_path / "grades.json"
        code, _, err = run_main(
            capsys, *map(str, [*given, sec2 / "carol" / "90_fixture.ipynb"]), "--report", str(report)
        )
        assert code == 1
        entries = {
            Path(e["file"]).parent.name: e for e in json.loads(report.read_text(encoding="utf-8"))["submissions"]
        }
        assert sorted(entries) == ["alice", "bob", "carol", "dan"]
        for name in ("alice", "dan"):
            assert "a link to a file outside the student's own folder" in entries[name]["error"], name
        assert f"a link to {elsewhere}, outside the student's own folder: not read" in err
        assert f"a link to {sec1 / 'bob' / '90_fixture.ipynb'}, outside the student's own folder" in err
        assert "not JSON" in entries["bob"]["error"] and "not JSON" in entries["carol"]["error"]
    finally:
        shutil.rmtree(sec2)


def test_a_link_within_a_students_own_folder_is_read(tmp_path, capsys):
    """The boundary: alice's ``90_fixture.ipynb``, a link to her own ``drafts/final.ipynb``
    (as her repository keeps it), leads nowhere outside her folder, and is read."""
    alice = tmp_path / "class" / "alice"
    (alice / "drafts").mkdir(parents=True)
    (alice / "drafts" / "final.ipynb").write_text(NOT_JSON, encoding="utf-8")
    (alice / "90_fixture.ipynb").symlink_to(Path("drafts/final.ipynb"))
    (tmp_path / "class" / "bob").mkdir()
    (tmp_path / "class" / "bob" / "90_fixture.ipynb").write_text(NOT_JSON, encoding="utf-8")
    report = tmp_path / "grades.json"
    code, _, err = run_main(
        capsys,
        str(alice / "90_fixture.ipynb"),
        str(tmp_path / "class" / "bob" / "90_fixture.ipynb"),
        "--report",
        str(report),
    )
    assert code == 1 and "own folder" not in err
    entries = json.loads(report.read_text(encoding="utf-8"))["submissions"]
    assert len(entries) == 2 and all("not JSON" in entry["error"] for entry in entries), entries


def test_a_notebook_too_heavy_to_grade_is_its_students_row_and_is_never_read_whole(tmp_path, capsys):
    """Only a zipped notebook had a size limit: a plain one with 50 MB of stored output was
    read whole (and a class of them, several times over as JSON). Now it is its student's
    "not graded" row, saying its weight, the limit and to clear the outputs; reading it took
    no memory to speak of; its classmates are read as ever."""
    heavy = tmp_path / "class" / "alice" / "90_fixture.ipynb"
    heavy.parent.mkdir(parents=True)
    with heavy.open("wb") as file:
        file.write(b'{"cells": [')
        file.truncate(50 * 10**6)  # sparse: 50 MB that take no disk
    (tmp_path / "class" / "bob").mkdir()
    (tmp_path / "class" / "bob" / "90_fixture.ipynb").write_text(NOT_JSON, encoding="utf-8")
    tracemalloc.start()
    with pytest.raises(GraderError) as refused:
        read_submission(heavy)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 2**20, peak
    assert "the notebook weighs 47.7 MiB, more than the 16 MiB a submission may" in str(refused.value)
    grades = tmp_path / "grades.csv"
    code, _, _ = run_main(
        capsys, str(heavy), str(tmp_path / "class" / "bob" / "90_fixture.ipynb"), "--gradebook", str(grades)
    )
    assert code == 1
    alice, bob = read_table(grades)[1:]
    assert alice[0] == "alice" and "not graded: the notebook weighs 47.7 MiB" in alice[-1]
    assert "Clear Outputs of All Cells" in alice[-1]
    assert bob[0] == "bob" and "not JSON" in bob[-1]


def test_a_data_file_beside_a_students_notebook_is_not_graded_as_their_submission(tmp_path, capsys):
    """A student's folder holding their notebook and the data file it reads, given as
    ``class/*/*``: the data file was graded as bob's second submission, and his page said
    "not a Jupyter notebook ... Hand in the exercise notebook itself" beside the notebook
    he had handed in. Now a file beside a notebook of its student (in their folder, or named
    as it is) is left out, and the terminal says so; a student's only file is still graded,
    to tell them what to hand in."""
    files = {
        "bob/90_fixture.ipynb": NOT_JSON,
        "bob/data.csv": "x,y\n1,2\n",
        "carol.ipynb": NOT_JSON,
        "carol.html": "<!DOCTYPE html>\n<html>",
        "dave.txt": "my answers",
    }
    for name, text in files.items():
        (tmp_path / "class" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "class" / name).write_text(text, encoding="utf-8")
    report = tmp_path / "grades.json"
    code, _, err = run_main(capsys, *(str(tmp_path / "class" / name) for name in files), "--report", str(report))
    assert code == 1
    graded = [Path(entry["file"]).name for entry in json.loads(report.read_text(encoding="utf-8"))["submissions"]]
    assert graded == ["90_fixture.ipynb", "carol.ipynb", "dave.txt"]
    for left, beside in (("bob/data.csv", "90_fixture.ipynb"), ("carol.html", "carol.ipynb")):
        assert f"{tmp_path / 'class' / left}: not a notebook, beside the notebook {beside}: not graded" in err


def test_a_data_file_beside_the_notebook_of_a_students_folder_graded_alone_is_not_graded(tmp_path, capsys):
    """Bob's folder graded on its own (``class/bob/*``), his notebook not named after the
    chapter, the data file it reads beside it: the data file was graded as a second student,
    ``data``, "not a notebook". Now it is left out as when the class is graded, with the same note."""
    bob = tmp_path / "class" / "bob"
    bob.mkdir(parents=True)
    (bob / "bob_answers.ipynb").write_text(NOT_JSON, encoding="utf-8")
    (bob / "data.csv").write_text("x,y\n1,2\n", encoding="utf-8")
    report = tmp_path / "grades.json"
    code, _, err = run_main(capsys, *(str(path) for path in sorted(bob.iterdir())), "--report", str(report))
    assert code == 1
    graded = [entry["file"] for entry in json.loads(report.read_text(encoding="utf-8"))["submissions"]]
    assert graded == [str(bob / "bob_answers.ipynb")]
    assert f"{bob / 'data.csv'}: not a notebook, beside the notebook bob_answers.ipynb: not graded" in err
