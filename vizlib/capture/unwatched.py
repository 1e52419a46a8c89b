"""Stretches of a recording run with the function mode off: modules whose ops no picture
can draw as nodes of their own.

A folded picture of a transformer draws each block as one box: of the thousands of ops
inside, it shows the number of ops, the bytes they saved and the output of each box. The
function mode costs every torch call some microseconds of Python (a GPU's host pays them
on top of each launch), so once ``Drawn`` says that no op at a module's depth can be
drawn, the recorder takes its mode off for the length of that module call (a
``Stretch``), and keeps only what the mode would have told the picture:

- which module each node ran in: autograd numbers its nodes in the order a thread makes
  them (``_sequence_nr``), so the call made the nodes numbered from where the count stood
  when it began to where it stood when it ended. The calls inside it are not told apart:
  a picture that folds at the stretch's module or above cannot show them, so the
  recorder does not even note them (their module hooks return at once);
- where each node goes in the order the ops ran (``Stretch.key``);
- what each node saved, as for every op (``ForwardRecorder.packed_at``);
- how many ops it ran, for ``Drawn``'s counts;
- its output, for a box that shows it (the recorder notes it).
"""

from __future__ import annotations

import bisect

import torch

from ..data import SavedTensor


def next_number() -> int:
    """The sequence number autograd gives the next node made on this thread."""
    return torch._C._autograd._get_sequence_nr()


class Stretch:
    """One module call run unwatched."""

    def __init__(self, position: int, scope: tuple[str, ...]) -> None:
        self.position = position  # ops the recorder had recorded when the stretch began
        self.scope = scope  # the module call's chain of modules, outermost first
        self.first = next_number()  # the sequence number of the first node made in it
        self.end: int | None = None  # one past the last, once it has ended
        self.nested = 0  # module calls inside it still running
        # What was saved outside any op before its first node was made, which that node takes
        # (ForwardRecorder._pack), with each one's storage key.
        self.took: list[tuple[SavedTensor, tuple]] = []

    def leave(self) -> int:
        """The call ends: how many nodes it made."""
        self.end = next_number()
        return self.end - self.first

    def key(self, number: int) -> float:
        """Where the node numbered ``number`` ran among the recorder's ops: after the
        ``position`` ops recorded before the stretch, before the next, in number order."""
        assert self.end is not None
        return self.position - 1 + (number - self.first + 1) / (self.end - self.first + 1)


_UNASKED = object()


class Stretches:
    """Every stretch of one recording."""

    def __init__(self) -> None:
        self.done: list[Stretch] = []  # in the order they ran: their numbers increase
        self._firsts: list[int] = []
        self.made = 0  # nodes made in all of them
        self._found: dict = {}  # autograd node -> what ``of`` said of it (``forget`` lets go)

    def close(self, stretch: Stretch) -> None:
        assert stretch.end is not None
        self.done.append(stretch)
        self._firsts.append(stretch.first)
        self.made += stretch.end - stretch.first

    def of(self, fn: object) -> tuple[Stretch, int] | None:
        """The stretch autograd node ``fn`` was made in, and its number (None: made watched,
        a leaf's node, or a leaf tensor itself). Asked of every node several times."""
        if not self.done:
            return None
        found = self._found.get(fn, _UNASKED)  # (a KeyError raised and caught costs more)
        if found is not _UNASKED:
            return found
        found = None
        number = getattr(fn, "_sequence_nr", None)  # (a tensor has none)
        if number is not None:
            number = number()
            k = bisect.bisect_right(self._firsts, number) - 1  # the last stretch begun at or before it
            # (ended: it is done; a leaf's AccumulateGrad is numbered past any)
            if k >= 0 and number < self.done[k].end:
                found = self.done[k], number
        self._found[fn] = found
        return found

    def forget(self) -> None:
        """Let go of the nodes ``of`` was asked about."""
        self._found.clear()


class RanAt:
    """Where each node ran among a recording's ops, for ``walk``: the position of a watched
    op's record, a number between two of them for a node made unwatched."""

    def __init__(self, positions: dict, stretches: Stretches) -> None:
        self._positions = positions
        self._stretches = stretches

    def __bool__(self) -> bool:
        return bool(self._positions) or bool(self._stretches.done)

    def get(self, fn: object) -> float | None:
        found = self._stretches.of(fn)
        if found is not None:
            stretch, number = found
            return stretch.key(number)
        return self._positions.get(fn)
