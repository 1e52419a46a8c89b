"""A Watch's records, which only grow while it records.

The learner's code runs in the process that holds them: an answer can reach a Watch (through
``grader.kernel.active.WATCHING``, say) and empty what it recorded, ``watch.ops.clear()``, so
that a forbidden call leaves no trace. Each record here notes when anything takes from it, and
``emptied`` tells, when the Watch stops, whether one was emptied or replaced. (Code written to
defeat this can still reach anything; this closes the plain way.)
"""

from __future__ import annotations

from collections import Counter
from typing import Any


def _taking(method: Any) -> Any:
    """``method`` of a record, noting that something was taken from it."""

    def taken(self: Any, *args: Any, **kwargs: Any) -> Any:
        self.taken_from = True
        return method(self, *args, **kwargs)

    return taken


class GrowingCounter(Counter):
    taken_from = False
    for _name in ("clear", "pop", "popitem", "__delitem__", "subtract", "__isub__", "__iand__"):
        locals()[_name] = _taking(getattr(Counter, _name))


class GrowingSet(set):
    taken_from = False
    for _name in (
        "clear", "pop", "remove", "discard", "difference_update", "intersection_update",
        "symmetric_difference_update", "__isub__", "__iand__", "__ixor__",
    ):  # fmt: skip
        locals()[_name] = _taking(getattr(set, _name))


class GrowingList(list):
    taken_from = False
    for _name in ("clear", "pop", "remove", "__delitem__", "__setitem__", "__imul__"):
        locals()[_name] = _taking(getattr(list, _name))


RECORDS = ("ops", "calls", "code", "written", "outputs", "collectives", "asked")


def emptied(watch: Any, kept: tuple[Any, ...], grad_ops: int) -> str | None:
    """The record of ``watch`` that was emptied or replaced since it started (``kept``: the
    records then, in RECORDS' order; ``grad_ops``: the count it has made itself), else None."""
    for name, record in zip(RECORDS, kept, strict=True):
        if getattr(watch, name) is not record or record.taken_from:
            return f"the grader's record of what runs (its {name}, emptied or replaced)"
    if watch.grad_ops != grad_ops:
        return "the grader's record of what runs (its count of operations autograd recorded)"
    return None
