"""What grading a submission produces, shared by the grader's modules and the report."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeAlias

EACH = "each"  # --chapter each: every notebook against its own chapter, not one class's

# Why a task got its verdict, for gradebooks and statistics (the message is for people).
Reason: TypeAlias = Literal[
    "passed",
    "not_answered",
    "check_failed",
    "check_error",
    "output_differs",
    "solution_error",
    "huge_output",
    "timeout",
    "kernel_died",
    "out_of_memory",
    "too_many_processes",
    "cpu_time",
    "time_limit",
    "flagged",
    "unmatched",
]
# What each reason means (a unit test checks that every Reason has its entry).
REASONS: dict[Reason, str] = {
    "passed": "every check passed",
    "not_answered": "the solution still raises the exercise's NotImplementedError",
    "check_failed": "an assertion of a check (or hidden check) failed",
    "check_error": "a check raised another exception on the answer",
    "output_differs": "a check printed something other than the instructor's copy",
    "solution_error": "the solution cell raised an exception",
    "huge_output": "a cell printed more than output_guard allows",
    "timeout": "a cell ran past the cell timeout",
    "kernel_died": "the kernel process died",
    "out_of_memory": "the sandbox's processes together used more memory than the grader allows",
    "too_many_processes": "the sandbox started more processes or threads than the grader allows",
    "cpu_time": "a process of the sandbox used more CPU time than the grader allows",
    "time_limit": "the notebook's time limit (--submission-timeout) was reached before or while the task ran",
    "flagged": "the solution reaches into the checking machinery; not run",
    "unmatched": "no solution cell for the task in the submission",
}


@dataclass
class TaskResult:
    number: str
    points: float
    reason: Reason  # see REASONS
    message: str

    @property
    def passed(self) -> bool:
        return self.reason == "passed"

    @property
    def score(self) -> float:
        return self.points if self.passed else 0.0


@dataclass
class SubmissionResult:
    path: Path
    chapter: str | None = None
    tasks: list[TaskResult] = field(default_factory=list)
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    # The learner's solution code per task number (None: no solution cell found), for the
    # feedback file; never in the JSON report.
    answers: dict[str, str | None] = field(default_factory=dict)
    # A notebook of another chapter than the class's, refused (error says so): the chapter
    # it is, and the class's.
    handed_in_chapter: str | None = None
    expected_chapter: str | None = None
    # What reading the notebook took (a zip unpacked, characters replaced, a misleading file
    # name): shown on the student's page; also in notes, for the instructor.
    notices: list[str] = field(default_factory=list)
    # The grader's own failure on this submission (its traceback, for the instructor only):
    # the submission is not graded, and the command exits 2.
    internal_error: str | None = None

    @property
    def passed(self) -> bool:
        return self.error is None and all(task.passed for task in self.tasks)

    @property
    def score(self) -> float:
        return sum(task.score for task in self.tasks)

    @property
    def max_score(self) -> float:
        return sum(task.points for task in self.tasks)
