"""Gradebooks that an LMS imports as they are: Canvas's and Moodle's CSV grade imports.

Canvas (``--gradebook-format canvas``): its gradebook import reads the identity columns
``Student``, ``ID``, ``SIS User ID``, ``SIS Login ID`` and ``Section`` (the first five
columns of its own export, so named) and takes every other column for an assignment. So
the file has those five, from the roster's columns of the same names (a Canvas export
with a ``file`` column added is a roster), and one column, the assignment (``--assignment``,
default the chapter's name), holding each student's total.

Moodle (``--gradebook-format moodle``): its CSV import maps one column of the file to a
user field (user id, username, ID number or email) and aborts on a user it cannot find.
So the file has that one identifier column (the roster's ``--id-column``, default
``id``) and the grade column; students not on the roster, or with no value in that
column, are left out, and the instructor is told who.

Both leave the tasks to the plain gradebook, written beside them (gradebook.py).
"""

from __future__ import annotations

from pathlib import Path

from grader.host.errors import GraderError
from grader.host.gradebook import chapter_tasks, gradebook_rows, points, scores, tasks_path, text, write_csv
from grader.host.students import Row

CANVAS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")


def write_lms_gradebook(
    rows: list[Row],
    path: Path,
    tasks: list[tuple[str, float]] | None,
    form: str,
    assignment: str | None = None,
    id_column: str | None = None,
) -> list[str]:
    """Write the gradebook in ``form`` (canvas or moodle), and the plain one with every
    task beside it (``grades-tasks.csv``); the ids of the students it leaves out."""
    table, left_out = lms_rows(rows, form, tasks, assignment, id_column)
    write_csv(table, path)
    write_csv(gradebook_rows(rows, tasks), tasks_path(path))
    return left_out


def lms_rows(
    rows: list[Row],
    form: str,
    tasks: list[tuple[str, float]] | None,
    assignment: str | None,
    id_column: str | None,
) -> tuple[list[list[str]], list[str]]:
    """The gradebook in Canvas's or Moodle's form, header first, and the ids of the
    students it leaves out (not on the roster, or no value to identify them by)."""
    results = [result for row in rows for result in row.results]
    tasks = chapter_tasks(results) if tasks is None else tasks
    chapters = sorted({result.chapter for result in results if result.chapter})
    column = assignment or (chapters[0] if chapters else "grade")
    listed = [row for row in rows if row.student.listed]
    left_out = [row.student.id for row in rows if not row.student.listed]
    if form == "canvas":
        table = [[*CANVAS, column]]
        for row in listed:
            student = row.student
            table.append(
                [
                    text(student.column("student") or student.name or student.id),
                    student.id,
                    student.column("sis user id") or "",
                    student.column("sis login id") or "",
                    text(student.column("section") or ""),
                    points(sum(scores(row, tasks))),
                ]
            )
        return table, left_out
    if form != "moodle":
        raise GraderError(f"--gradebook-format {form}: not a format (csv, canvas or moodle).")
    wanted = id_column or "id"
    headers = [name for name, _ in listed[0].student.columns] if listed else []
    header = next((name for name in headers if name.casefold() == wanted.casefold()), None)
    if header is None:
        raise GraderError(
            f"--id-column {wanted!r}: the roster has no such column (its columns: {', '.join(headers)}). Name the "
            "column whose value Moodle knows the students by (username, ID number or email)."
        )
    table = [[header, column]]
    for row in listed:
        value = row.student.column(header) or ""
        if value:
            table.append([value, points(sum(scores(row, tasks)))])
        else:
            left_out.append(row.student.id)
    order = [row.student.id for row in rows]
    return table, sorted(left_out, key=order.index)
