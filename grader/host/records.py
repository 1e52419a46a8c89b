"""The contract between the pytest plugin process and the grader: what one notebook cell's
verdict looks like.

plugin/recorder.py runs inside the pytest subprocess and writes one `RecordLine` per code
cell, as a line of JSON, as soon as nbval has judged the cell; run.py (in the grader's
process) reads them back and groups them by notebook into `CellRecord`s keyed by nbval's
cell number; verdicts.py turns those into task verdicts. Both sides import these types,
so a key or a value that one side writes and the other does not read (or the reverse)
is a type error rather than a silently wrong grade.

Only the types live here: the module imports nothing beyond ``typing`` and costs the
plugin process nothing.
"""

from __future__ import annotations

from typing import Literal, TypeAlias, TypedDict

# pytest's TestReport.outcome for the cell (nbval runs one test item per code cell).
Outcome: TypeAlias = Literal["passed", "failed", "skipped"]
# How the cell lost its kernel: the kernel process died, or the cell ran past its timeout
# (also written when a run ended without a record for the cell).
Fatal: TypeAlias = Literal["died", "timeout"]
# The sandbox limit that stopped a cell's code (sandbox.py): memory (an out-of-memory kill in
# the sandbox), processes (a process or thread refused), CPU time (RLIMIT_CPU's SIGXCPU).
Limit: TypeAlias = Literal["memory", "processes", "cpu_time"]


class CellError(TypedDict):
    """The error output a cell ended with (the kernel's ``ename`` and ``evalue``)."""

    ename: str
    evalue: str


class _CellRecordKeys(TypedDict):
    cell: int  # nbval's number for the cell: its index among the notebook's code cells
    outcome: Outcome
    error: CellError | None  # None when the cell printed no error output


class CellRecord(_CellRecordKeys, total=False):
    """nbval's verdict on one code cell of a grading notebook.

    The keys below are present only when they apply."""

    problem: str  # why nbval failed the cell, its message without colours ("Cell outputs differ")
    diff: str  # nbval's diff of the outputs, when problem is "Cell outputs differ" (at most 2000 characters)
    fatal: Fatal  # the cell lost the kernel: nothing after it in its notebook ran
    limit: Limit  # the sandbox stopped the cell's code (and the kernel): which limit it reached


class RecordLine(CellRecord):
    """One line of the plugin's JSON-lines file: a `CellRecord` and the notebook it is from."""

    file: str  # the path of the grading notebook (its stem is the notebook's name in run.py)
