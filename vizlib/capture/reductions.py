"""The numbers a recording keeps of a piece of a tensor, computed on its device: of a
value, [sum, min, max, sum of squares around the piece's mean]; of a gradient, [sum of
squares]. ``piece_row`` reduces one piece, ``segment_rows`` a batch of small pieces at once,
``moments`` a batch of values' pieces of one length in two reductions (an accelerator's
way). summary.py decides what is read and brings the rows to the host.
"""

from __future__ import annotations

import torch

# Up to this many elements a piece is read as float64: exact enough for any data, and
# free at that size. Bigger float32 pieces are read as they are (a float64 copy would
# cost more than the statistics themselves); their squares overflow only for elements
# above about 1.8e19.
FLOAT64_UP_TO = 4096


def segment_rows(data: torch.Tensor, lengths: list[int], gradient: bool) -> torch.Tensor:
    """The rows ``piece_row`` gives, for every piece of a batch at once: ``data`` holds the
    pieces one after another, ``lengths`` their sizes. Of gradients, [sum of squares]
    per piece; of values, [sum, min, max, sum of squares around the piece's mean].

    Read as float64, as ``piece_row`` reads small pieces. Segment reductions keep NaN (a
    piece's min and max are NaN where it holds one, as ``aminmax``'s are) and need no
    read of the lengths on the host, so nothing waits for the device.
    """
    x = data.to(torch.float64)
    counts = torch.tensor(lengths, device="cpu")  # (not the default device: torch.set_default_device)
    if x.device.type == "cuda":  # a pinned copy: a plain one would wait for the device's queue
        counts = counts.pin_memory().to(x.device, non_blocking=True)
    elif x.device.type != "cpu":
        counts = counts.to(x.device)
    if gradient:
        return torch.segment_reduce(x * x, "sum", lengths=counts, unsafe=True)
    total = torch.segment_reduce(x, "sum", lengths=counts, unsafe=True)
    lo = torch.segment_reduce(x, "min", lengths=counts, unsafe=True)
    hi = torch.segment_reduce(x, "max", lengths=counts, unsafe=True)
    mean = (total / counts).repeat_interleave(counts, output_size=x.numel())
    d = x.sub_(mean) if x is not data else x - mean  # centred in place where x is a copy of its own
    centred = torch.segment_reduce(d.square_(), "sum", lengths=counts, unsafe=True)
    return torch.stack([total, lo, hi, centred], dim=1).view(-1)


def piece_row(piece: torch.Tensor, gradient: bool) -> torch.Tensor:
    """One piece's numbers, on its device: of a gradient, [sum of squares]; of a value,
    [sum, min, max, sum of squares around the piece's mean].

    Centring on the mean (computed on the device, so nothing waits) keeps the variance of
    data far from zero (1000 + 0.01 * noise) from cancelling to nothing, as the one-pass
    sum(x^2)/n - mean^2 would; ``var_mean`` would too, but on a CPU it is many times
    slower than a sum. Half precision and integers are read as float32, small pieces as
    float64 (see ``FLOAT64_UP_TO``), a piece at a time.
    """
    wide = piece.dtype == torch.float64 or piece.numel() <= FLOAT64_UP_TO
    x = piece.to(torch.float64 if wide else torch.float32).reshape(-1)  # one copy at most
    if gradient:
        return squares(x).view(1)
    total = x.sum()
    lo, hi = torch.aminmax(x)
    mean = total / x.numel()
    d = x.sub_(mean) if x.data_ptr() != piece.data_ptr() else x - mean  # a copy is centred in place
    return torch.stack([total, lo, hi, squares(d)])


def moments(pieces: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The mean, min, max and variance around the mean of each row of ``pieces`` (values of
    one length, one row each, float32 or float64), on the device: two reductions whatever
    the number of rows, and no temporary of their size.

    On a GPU every call costs the host a few microseconds whatever its size, and
    ``var_mean`` and ``aminmax`` several times a plain launch's; the host is what a
    recording waits on. ``piece_row`` makes six calls per piece (sum, aminmax, the mean,
    the centring, its squares, the stack), and its centred copy is as big as the piece.
    ``var_mean`` is one pass (Welford's, as exact as centring first) and ``aminmax`` the
    other. On a CPU ``var_mean`` is many times slower than a sum, so CPUs keep
    ``piece_row``. ``Summaries`` turns the mean and variance into the row's sum and squares.
    """
    var, mean = torch.var_mean(pieces, dim=1, correction=0)
    lo, hi = torch.aminmax(pieces, dim=1)
    return mean, lo, hi, var


def squares(x: torch.Tensor) -> torch.Tensor:
    """The sum of squares of a 1-D tensor: ``dot`` without a copy, but a small float64
    one by multiplying, since MKL's float64 ``dot`` starts its threads from a few
    thousand elements and on a busy machine waits milliseconds for them."""
    return (x * x).sum() if x.numel() <= FLOAT64_UP_TO else torch.dot(x, x)
