"""A tensor's numbers on their way from the device to the Graph: ``Pending`` says which rows
(read to the host together, at the end of a recording) hold them, and ``finish`` turns those
rows into a ``Stats`` or a small tensor's value on the host.

A row is [sum, min, max, squares around the piece's mean] of one piece of a value, or
[sum of squares] of a gradient; a tensor read in several pieces has a row each, and
``finish`` combines them (Chan's formula), as exactly as one reduction of the whole.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..data import Stats, Value


@dataclass(eq=False, slots=True)
class Pending:
    """Numbers of one tensor still on its device; ``Summaries.fetch`` turns them into
    ``result`` (a ``Stats`` for statistics, a Python value for a small tensor's copy)."""

    # "values": rows [sum, min, max, squares around the piece's mean] per piece;
    # "squares": a gradient's [sum of squares]; "norms": [norm]; "value": a small copy.
    kind: str
    numel: int  # elements of the tensor described (an expanded tensor counts its repeats)
    rows: list[tuple[tuple, int, int]] = field(default_factory=list)  # (group, offset, length)
    counts: list[int] = field(default_factory=list)  # elements read for each row
    shape: tuple[int, ...] = ()  # "value": the copy's shape
    result: Stats | Value = None
    done: bool = False


# Where a row waiting in a batch will be: filled in when the batch is reduced.
UNREDUCED: tuple[tuple, int, int] = ((), 0, 0)


def sum_and_squares(rows: list[float], at: int, count: int) -> None:
    """``moments``' row at ``rows[at:at + 4]``, [mean, min, max, variance] of ``count``
    elements, as ``piece_row``'s: [sum, min, max, squares around the mean]. Infinities
    without NaN make ``var_mean``'s running mean NaN where the sum is infinite."""
    mean, lo, hi = rows[at : at + 3]
    if math.isnan(mean) and not (math.isnan(lo) or math.isnan(hi)):
        mean = math.inf if lo > -math.inf else -math.inf if hi < math.inf else math.nan
    rows[at] = mean * count
    rows[at + 3] *= count


def finish(p: Pending, parts: list[list]) -> Stats | Value:
    """The host's side: one tensor's rows combined into its ``Stats`` (or its value)."""
    if p.kind == "value":
        return _nest(parts[0], p.shape)
    distinct = sum(p.counts)
    repeat = p.numel / distinct
    if p.kind in ("squares", "norms"):
        squares = sum(row[0] ** 2 if p.kind == "norms" else row[0] for row in parts)
        return Stats(p.numel, None, None, math.sqrt(squares * repeat))
    sums = [row[0] for row in parts]
    lows, highs = [row[1] for row in parts], [row[2] for row in parts]
    means = [total / k for total, k in zip(sums, p.counts, strict=True)]
    centred = [row[3] for row in parts]
    mean = sum(sums) / distinct
    # Chan's combination: each piece's squares around its own mean, plus its mean's
    # distance from the whole tensor's.
    spread = sum(c + k * (m - mean) ** 2 for c, k, m in zip(centred, p.counts, means, strict=True))
    squares = sum(c + k * m * m for c, k, m in zip(centred, p.counts, means, strict=True))
    lo, hi = min(lows), max(highs)
    if math.isnan(lo) or math.isnan(hi):  # a NaN (min and max keep it); +inf with -inf sum to NaN
        squares = math.nan
    elif math.isinf(lo) or math.isinf(hi):
        squares = math.inf
    std = math.sqrt(max(spread / distinct, 0.0)) if math.isfinite(squares) else math.nan
    return Stats(p.numel, mean, std, math.sqrt(squares * repeat), lo, hi)


def finish_one(p: Pending, row: list) -> Stats | Value:
    """``_finish`` of a tensor read as one row: the same result, to the last bit."""
    if p.kind == "values":
        return _one_piece(p, row)
    if p.kind == "squares":
        return Stats(p.numel, None, None, math.sqrt(row[0] * (p.numel / p.counts[0])))
    return finish(p, [row])


def _one_piece(p: Pending, row: list) -> Stats:
    """``_finish`` of a tensor read in one piece: the same numbers, to the last bit."""
    total, lo, hi, centred = row
    distinct = p.counts[0]
    mean = total / distinct
    squares = centred + distinct * mean * mean
    if math.isnan(lo) or math.isnan(hi):  # a NaN (min and max keep it); +inf with -inf sum to NaN
        squares = math.nan
    elif math.isinf(lo) or math.isinf(hi):
        squares = math.inf
    std = math.sqrt(max(centred / distinct, 0.0)) if math.isfinite(squares) else math.nan
    return Stats(p.numel, mean, std, math.sqrt(squares * (p.numel / distinct)), lo, hi)


def _nest(flat: list, shape: tuple[int, ...]) -> Value:
    """``flat`` (row-major) as ``tolist`` gives a tensor of ``shape``: nested lists, or a
    number for 0-d."""
    if not shape:
        return flat[0]
    if len(shape) == 1:
        return list(flat)
    step = len(flat) // shape[0] if shape[0] else 0
    return [_nest(flat[k * step : (k + 1) * step], shape[1:]) for k in range(shape[0])]
