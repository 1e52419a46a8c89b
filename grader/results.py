"""What grading a submission produces, shared by the grader's modules and the report."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class TaskResult:
    number: str
    points: float
    passed: bool
    message: str

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

    @property
    def passed(self) -> bool:
        return self.error is None and all(task.passed for task in self.tasks)
