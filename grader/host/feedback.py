"""Feedback files: one self-contained HTML page per student, to hand back.

The page names the student and, for each of their submissions, its chapter, every task
with the points earned and possible, passed or failed, the check's message, the learner's
own code for each failed task, and the total. Inline CSS only: no script, no external
asset, and a Content-Security-Policy that forbids both, so the file opens anywhere.

Learner code, check messages, file names and student names are hostile input: every piece
of text goes through ``html.escape`` and into element content (never into a tag or an
attribute unescaped), and very long code or messages are cut.

A page is handed to its student, so it holds only what is theirs: no other student's
result, none of the instructor's notes (how the roster matched them), and no folder of
the instructor's machine (submissions are named by their file name; a message that
quotes the instructor's folders shows ``…`` instead).

Grading again into the same folder writes each student's page under their name again,
never over another student's page (each page names its student in its head) or a file
that is not a page of this grader; earlier pages of students not graded this time are
left as they were, and ``earlier_pages`` names them for the instructor. Without a roster a
student is named by their folder or file, so two sections graded into one folder may each
have an ``alice``: each page also holds a digest of the folders its student's files lay in
(never the folders themselves), and a page of another folders' ``alice`` is not this
``alice``'s to replace (``other_classes_pages``), unless this run is the folder's class as
a whole, moved or downloaded again into a new folder (``same_class``).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Collection, Iterable
from html import escape, unescape
from pathlib import Path

from grader.host.files import real_path, write_atomic
from grader.host.gradebook import points
from grader.host.notebook import COURSE_ROOT
from grader.host.results import SubmissionResult, TaskResult
from grader.host.roster import Student
from grader.host.students import Row

MAX_CODE = 20_000  # characters of a learner's code shown per task
MAX_MESSAGE = 5_000  # characters of a check's message shown
# Bytes of a page's file name before ".html" (file systems allow 255 bytes, not characters;
# the room left is for "-2" when two names meet, ".html", and write_atomic's temporary name).
MAX_NAME_BYTES = 150
TITLE = "<title>Feedback: "  # how a page of this grader starts its title (earlier_pages)
# The student a page is for, in its head: a later run never writes another student's page over it.
OWNER = re.compile(r'<meta name="grader-student" content="([^"]*)">')
# Digests of the folders the student's files lay in: an alice of another section is another student.
FOLDERS = re.compile(r'<meta name="grader-folders" content="([^"]*)">')

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto; max-width: 60em;
  padding: 0 1em; color: #1d1d1f; line-height: 1.4; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; } h3 { font-size: 1em; }
table { border-collapse: collapse; width: 100%; }
th, td { border-bottom: 1px solid #ddd; padding: 0.4em 0.6em; text-align: left; vertical-align: top; }
td.points, td.result { white-space: nowrap; }
tr.passed td.result { color: #1a7f37; font-weight: 600; }
tr.failed td.result { color: #cf222e; font-weight: 600; }
pre { margin: 0; white-space: pre-wrap; word-break: break-word; font-family: ui-monospace, Menlo, Consolas,
  monospace; font-size: 0.9em; }
pre.code { background: #f6f8fa; border: 1px solid #ddd; padding: 0.8em; }
.warning { background: #fff8c5; border: 1px solid #d4a72c; padding: 0.6em 0.8em; }
.error { background: #ffebe9; border: 1px solid #cf222e; padding: 0.6em 0.8em; }
.total { font-size: 1.1em; font-weight: 600; margin-top: 2em; }
.muted { color: #57606a; }
"""


def feedback_html(row: Row, sandboxed: bool = True, possible: float | None = None) -> str:
    """The feedback page for one student (``sandboxed=False`` says so on the page);
    ``possible``: the points the class's chapter is worth (default: those of the student's
    graded submissions)."""
    who = row.student.name or row.student.id
    if row.student.name and row.student.name != row.student.id:
        who += f" ({row.student.id})"
    chapters = (
        ", ".join(dict.fromkeys(c for r in row.results if (c := r.chapter or r.expected_chapter))) or "not graded"
    )
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f'<meta name="grader-student" content="{_e(row.student.id)}">',
        f'<meta name="grader-folders" content="{" ".join(sorted(folder_digests(r.path for r in row.results)))}">',
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"{TITLE}{_e(who)}, chapter {_e(chapters)}</title>",
        f"<style>{STYLE}</style>",
        "</head>",
        "<body>",
        f"<h1>Feedback for {_e(who)}</h1>",
    ]
    if not sandboxed:
        parts.append(
            '<p class="warning">Graded <strong>unsandboxed</strong>: the code ran without the grader\'s sandbox.</p>'
        )
    counted = row.counted()
    for result in row.results:
        right = counted.get(result.expected_chapter or "") if result.handed_in_chapter else None
        # (one not graded either: the page says why)
        graded = row.label(right) if right is not None and right.error is None else None
        parts += _submission(result, row.label(result), graded)
    if not row.results:
        parts.append('<p class="error">No submission.</p>')
    score = sum(r.score for r in row.counted().values())
    total = sum(r.max_score for r in row.counted().values()) if possible is None else possible
    parts.append(f'<p class="total">Total: {_e(points(score))} / {_e(points(total))} points</p>')
    if row.notes:  # never row.instructor_notes
        parts.append('<p class="muted">' + "<br>".join(_e(_private(note)) for note in row.notes) + "</p>")
    parts += ["</body>", "</html>", ""]
    return "\n".join(parts)


def _submission(result: SubmissionResult, label: str, right: str | None = None) -> list[str]:
    """One submission's part of the page, ``label`` naming its file. ``right``: for another
    chapter's notebook, the student's notebook of the class's chapter that was graded, if
    any (a repository holds every chapter's exercises): then the other one costs nothing,
    and the page says so rather than asking for the notebook it has just graded."""
    chapter = result.chapter or result.handed_in_chapter or result.expected_chapter or "unknown"
    earned = f"{points(result.score)} / {points(result.max_score)} points" if result.error is None else "not graded"
    error = result.error
    if right is not None:
        error = (
            f"this is the exercise notebook of chapter {result.handed_in_chapter}, not of this assignment "
            f"(chapter {result.expected_chapter}); it costs you nothing: your {result.expected_chapter} "
            f"notebook, {right}, is the one graded."
        )
    parts = [
        f"<h2>Chapter {_e(chapter)}: {_e(earned)}</h2>",
        f'<p class="muted">Submission: {_e(label)}</p>',
    ]
    parts += [f'<p class="warning">Note: {_e(_private(_cut(notice, MAX_MESSAGE)))}</p>' for notice in result.notices]
    if error is not None:
        parts.append(f'<p class="error">Not graded: {_e(_private(_cut(error, MAX_MESSAGE)))}</p>')
        return parts
    parts += [
        "<table>",
        "<thead><tr><th>Task</th><th>Points</th><th>Result</th><th>Message</th></tr></thead>",
        "<tbody>",
    ]
    for task in result.tasks:
        state = "passed" if task.passed else "failed"
        parts.append(
            f'<tr class="{state}"><td>{_e(task.number)}</td>'
            f'<td class="points">{_e(points(task.score))} / {_e(points(task.points))}</td>'
            f'<td class="result">{state}</td>'
            f"<td><pre>{_e(_private(_cut(task.message, MAX_MESSAGE)))}</pre></td></tr>"
        )
    parts += ["</tbody>", "</table>"]
    failed = [task for task in result.tasks if not task.passed]
    if failed:
        parts.append("<h3>Your code for the failed tasks</h3>")
        for task in failed:
            parts += _code(result, task)
    return parts


def _code(result: SubmissionResult, task: TaskResult) -> list[str]:
    code = result.answers.get(task.number)
    head = f"<p>Exercise {_e(task.number)}:</p>"
    if code is None:
        return [head, '<p class="muted">No solution cell was found for this exercise.</p>']
    return [head, f'<pre class="code"><code>{_e(_cut(code, MAX_CODE))}</code></pre>']


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n… ({len(text) - limit} more characters not shown)"


def _private(text: str) -> str:
    """Text without the instructor's folders: the course's, the current one, the home."""
    for folder in sorted({str(COURSE_ROOT), os.getcwd(), os.path.expanduser("~")}, key=len, reverse=True):
        if len(folder) > 1:
            text = text.replace(folder, "…")
    return text


def _e(text: str) -> str:
    return escape(text, quote=True)


def file_name(student_id: str) -> str:
    """A safe file name for a student's page: letters, digits, ``.``, ``-``, ``_``, at most
    MAX_NAME_BYTES bytes of UTF-8 (a name in CJK takes three bytes a character), never a
    character cut in half."""
    name = re.sub(r"[^\w.-]", "_", student_id).lstrip(".")
    return name.encode("utf-8")[:MAX_NAME_BYTES].decode("utf-8", errors="ignore") or "student"


def write_feedback(rows: list[Row], folder: Path, sandboxed: bool = True, possible: float | None = None) -> list[Path]:
    """Write ``folder/<student>.html`` for every student who handed something in; the paths
    (``possible``: see feedback_html). A page that cannot be written costs no other page:
    OSError at the end names each one that failed."""
    written: list[Path] = []
    failed: list[str] = []
    taken: set[str] = set()
    moved = same_class(folder, [row.student for row in rows if row.results])
    for row in rows:
        if not row.results:
            continue
        stem = base = file_name(row.student.id)
        n = 1
        # Two ids that differ only in unsafe characters, case or past the cut; or a file already
        # there that is not this student's page (another student's from an earlier run, which on
        # a disk blind to letter case is also alice.html for Alice; another section's alice; a
        # file of the instructor's).
        while stem.casefold() in taken or _not_theirs(Path(folder) / f"{stem}.html", row, moved):
            n += 1
            stem = f"{base}-{n}"
        taken.add(stem.casefold())
        path = Path(folder) / f"{stem}.html"
        try:
            write_atomic(path, feedback_html(row, sandboxed, possible))
        except OSError as error:
            failed.append(f"{row.student.id}: {error.strerror or error}")
            continue
        written.append(path)
    if failed:
        raise OSError(
            f"{len(failed)} page(s) not written ({'; '.join(failed)}); the {len(written)} other pages were written"
        )
    return written


def earlier_pages(folder: Path, written: list[Path]) -> list[Path]:
    """The feedback pages in ``folder`` that this run did not write: an earlier run's, of
    students not graded now (a student regraded alone, one whose file was withdrawn or
    renamed). They are left as they were, but the instructor is told, since a folder handed
    out as it is would give those students an old grade. Other files are not looked at."""
    mine = {Path(path).name for path in written}
    return [path for path in sorted(Path(folder).glob("*.html")) if path.name not in mine and _head(path) is not None]


def other_classes_pages(folder: Path, students: dict[Student, list[Path]]) -> list[tuple[Path, Student]]:
    """The pages in ``folder`` that a run over ``students`` (each with their submissions)
    would find taken by a namesake of another class: the same id, named by a folder or file
    (no roster), from other folders (_other_class). Checked before grading, so that two
    sections graded into one folder are stopped before minutes of grading, not after."""
    if same_class(folder, students):
        return []
    found = []
    for student, paths in students.items():
        page = Path(folder) / f"{file_name(student.id)}.html"
        if _other_class(page, student, folder_digests(paths)):
            found.append((page, student))
    return found


def same_class(folder: Path, students: Collection[Student]) -> bool:
    """Whether ``students`` are the class whose pages ``folder`` holds, taken as a whole:
    the class moved, or downloaded again from the LMS into a new folder (next week's
    download), whose every student's files lie in other folders than their page says.
    It is when the two share at least two students, and more than half of each side's:
    another section's alice shares her name with this class, never most of its students
    with most of this one's (and students named by an LMS's ids share none). A class of one,
    or one student graded from a new folder, is not told apart so: refused as ever."""
    ids = {student.id for student in students if not student.columns}
    pages = _page_owners(folder)
    shared = len(ids & pages)
    return shared >= 2 and 2 * shared > len(ids) and 2 * shared > len(pages)


def _page_owners(folder: Path) -> set[str]:
    """The students whose pages of this grader ``folder`` holds."""
    found = set()
    for path in Path(folder).glob("*.html"):
        owner = OWNER.search(_head(path) or "")
        if owner is not None:
            found.add(unescape(owner[1]))
    return found


def folder_digests(paths: Iterable[Path]) -> set[str]:
    """A digest of each folder the files at ``paths`` lie in (links followed): what tells
    this alice's page from another section's alice's, without a path of the instructor's
    machine on a page handed to a student."""
    return {
        hashlib.sha256(str(real_path(Path(path).parent)).encode("utf-8", "replace")).hexdigest()[:16] for path in paths
    }


def _not_theirs(path: Path, row: Row, moved: bool = False) -> bool:
    """Whether writing the page of ``row``'s student to ``path`` would replace something
    else: a file that is not a page of this grader, another student's page, or a namesake's
    of another class (_other_class; ``moved``: this run is the folder's class, from new
    folders, whose pages are its own: same_class)."""
    if not path.exists():
        return False
    head = _head(path)
    if head is None:
        return True
    owner = OWNER.search(head)
    if owner is not None and unescape(owner[1]) != row.student.id:  # pages written before OWNER: as ever
        return True
    return not moved and _other_class(path, row.student, folder_digests(r.path for r in row.results))


def _other_class(page: Path, student: Student, digests: set[str]) -> bool:
    """Whether ``page`` is of a student with ``student``'s id whose files lay in none of the
    folders (``digests``) of ``student``'s: another section's alice, graded without a roster
    into the same folder. A student a roster names is the roster's to tell apart (their id is
    the instructor's, whatever folder their files come from now). A page that names no
    folders (an older grader's) is taken as ever, and one that shares a folder with
    ``student``'s files is theirs: the same class graded again, a student resubmitting."""
    if student.columns or not digests:
        return False
    head = _head(page) or ""  # (none: no page there)
    owner, folders = OWNER.search(head), FOLDERS.search(head)
    if owner is None or unescape(owner[1]) != student.id or folders is None or not folders[1]:
        return False
    return not digests & set(folders[1].split())


def _head(path: Path) -> str | None:
    """The start of a feedback page of this grader at ``path``; None for any other file."""
    try:
        with path.open(encoding="utf-8", errors="replace") as page:
            head = page.read(4000)
    except OSError:
        return None
    return head if head.startswith("<!DOCTYPE html>") and TITLE in head else None
