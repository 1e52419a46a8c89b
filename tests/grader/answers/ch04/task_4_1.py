"""Exercise 4.1 of solutions/04_amp.ipynb: its other answers (see answers/__init__.py)."""

from .. import Task, Wrong

# 4.1's right limits (overflow halfway to the next step above max, underflow at half the
# smallest subnormal): each wrong answer gets one or both of them wrong.
CAST_LIMITS_START = """\
def cast_limits(dtype):
    fi = torch.finfo(dtype)
"""

CAST_LIMITS = (
    CAST_LIMITS_START
    + """\
    step_at_max = 2.0 ** math.floor(math.log2(fi.max)) * fi.eps
    return fi.max + step_at_max / 2, fi.smallest_normal * fi.eps / 2
"""
)

FINFO_MAX_AND_TINY = CAST_LIMITS_START + "    return fi.max, fi.tiny\n"

UNDERFLOW_AT_SMALLEST_SUBNORMAL = CAST_LIMITS.replace("fi.smallest_normal * fi.eps / 2", "fi.smallest_normal * fi.eps")

OVERFLOW_AT_NEXT_POWER_OF_TWO = CAST_LIMITS.replace(
    "    step_at_max = 2.0 ** math.floor(math.log2(fi.max)) * fi.eps\n    return fi.max + step_at_max / 2,",
    "    return 2.0 ** (math.floor(math.log2(fi.max)) + 1),",
)

# The limits found by searching float32's bit patterns (bisection, one cast per try): right,
# but the task asks to compute them from finfo.
SEARCHED_LIMITS = """\
def cast_limits(dtype):
    def first(lo, hi, holds):                  # the smallest bit pattern in [lo, hi] where holds() is true
        while lo < hi:
            mid = (lo + hi) // 2
            if holds(torch.tensor(mid, dtype=torch.int32).view(torch.float32)):
                hi = mid
            else:
                lo = mid + 1
        return lo

    def as_float(bits):
        return torch.tensor(bits, dtype=torch.int32).view(torch.float32).item()

    top = torch.tensor(torch.finfo(dtype).max, dtype=torch.float32).view(torch.int32).item()
    over = first(top, 0x7F800000, lambda x: bool(torch.isinf(x.to(dtype))))
    under = first(0, 0x7F800000, lambda x: x.to(dtype).item() != 0) - 1
    return as_float(over), as_float(under)
"""

# The limits found by searching the bit patterns, with dispatch to Python switched off (no
# record sees it): the body of two cheats below.
SEARCHED_UNSEEN = """\
    with torch._C._DisableTorchDispatch():
        top = torch.tensor(fi.max, dtype=torch.float32).view(torch.int32).item()
        bits = torch.arange(top, top + (1 << 23), dtype=torch.int32)
        over = bits[torch.isinf(bits.view(torch.float32).to(dtype))][0]
        sub = torch.tensor(fi.smallest_normal * fi.eps, dtype=torch.float32).view(torch.int32).item()
        bits = torch.arange(sub - (1 << 23), sub + 1, dtype=torch.int32)
        under = bits[bits.view(torch.float32).to(dtype) == 0][-1]
        return over.view(torch.float32).item(), under.view(torch.float32).item()
"""

# Measured, not computed, by a helper that exec runs under globals of its own with dispatch to
# Python switched off (a red team's). The grader's scan refuses exec in a solution; run here
# past the scan, the watch fails them too (it follows code under other globals than the notebook's).
SEARCH_IN_AN_EXECED_HELPER = (
    """\
_helper_ns = {"torch": torch}
exec(\"\"\"
def _search(dtype, fi):
"""
    + SEARCHED_UNSEEN
    + """\"\"\", _helper_ns)


def cast_limits(dtype):
    fi = torch.finfo(dtype)
    return _helper_ns["_search"](dtype, fi)
"""
)

# A red team's answers, each once given full credit.
TABLE_KEYED_BY_MAX_4_1 = """\
def cast_limits(dtype):
    fi = torch.finfo(dtype)
    return {
        65504.0: (65520.0, 2.9802322387695312e-08),
        3.3895313892515355e38: (3.3961775292304601e38, 4.591774807899561e-41),
        57344.0: (61440.0, 7.62939453125e-06),
    }[fi.max]
"""

# 4.1's limits searched over 2**23 float32 candidates, cast all at once, with what records the
# operations switched off: torch's dispatch to Python excluded, or the dispatch modes popped.
SEARCH_UNSEEN = """\
def cast_limits(dtype):
    fi = torch.finfo(dtype)
    with HIDDEN:
        top = torch.tensor(fi.max, dtype=torch.float32).view(torch.int32).item()
        bits = torch.arange(top, top + (1 << 23), dtype=torch.int32)
        over = bits[torch.isinf(bits.view(torch.float32).to(dtype))][0]
        sub = torch.tensor(fi.smallest_normal * fi.eps, dtype=torch.float32).view(torch.int32).item()
        bits = torch.arange(sub - (1 << 23), sub + 1, dtype=torch.int32)
        under = bits[bits.view(torch.float32).to(dtype) == 0][-1]
        return over.view(torch.float32).item(), under.view(torch.float32).item()
"""


TASK = Task(
    alternative="""\
def cast_limits(dtype):
    fi = torch.finfo(dtype)
    mantissa_bits = round(-math.log2(fi.eps))
    top = math.frexp(fi.max)[1] - 1            # max = 1.11...1 (binary) x 2**top
    overflow_at = math.ldexp(2 - 2.0 ** -(mantissa_bits + 1), top)
    underflow_at = math.ldexp(fi.smallest_normal * fi.eps, -1)
    return overflow_at, underflow_at
""",
    wrong=[
        Wrong(
            "The numbers finfo prints: max does not overflow.",
            hint="halfway",
            code=FINFO_MAX_AND_TINY,
        ),
        Wrong(
            "Underflow at the smallest subnormal, which survives the cast.",
            hint="closer to 0 than",
            code=UNDERFLOW_AT_SMALLEST_SUBNORMAL,
        ),
        Wrong(
            "Overflow at the next power of two: it overflows, but so do smaller numbers.",
            hint="smaller ones overflow too",
            code=OVERFLOW_AT_NEXT_POWER_OF_TWO,
        ),
        Wrong(
            "The limits found by a search (bisection over float32's bit patterns), not computed.",
            hint="searches for the limits",
            code=SEARCHED_LIMITS,
        ),
        Wrong(
            "A search over float32's bit patterns, run by an exec'd helper with dispatch off.",
            hint="where the grader cannot record it",
            code=SEARCH_IN_AN_EXECED_HELPER,
        ),
        Wrong(
            "table of limits keyed by finfo.max: nothing computed",
            hint="not (248.0, 0.0009765625)",
            code=TABLE_KEYED_BY_MAX_4_1,
        ),
    ],
    # Once refused by the check that cast_limits reads torch.finfo (it looked at the code's
    # own names only): the function behind a cache, and finfo given as a default argument.
    other_right=[
        """\
import functools


@functools.lru_cache(maxsize=None)
def cast_limits(dtype):
    fi = torch.finfo(dtype)
    step_at_max = 2.0 ** math.floor(math.log2(fi.max)) * fi.eps
    return fi.max + step_at_max / 2, fi.smallest_normal * fi.eps / 2
""",
        """\
def cast_limits(dtype, info=torch.finfo):
    fi = info(dtype)
    step_at_max = 2.0 ** math.floor(math.log2(fi.max)) * fi.eps
    return fi.max + step_at_max / 2, fi.smallest_normal * fi.eps / 2
""",
    ],
)

TASK.wrong.append(
    Wrong(
        "The two pairs looked up in a table (found by casting in a scratch cell), not computed "
        "from torch.finfo(dtype): any other format, torch.float8_e5m2 say, raises a KeyError.",
        hint="float8_e5m2",
        code="""\
def cast_limits(dtype):
    return {
        torch.float16: (65520.0, 2.9802322387695312e-08),
        torch.bfloat16: (3.39617752923046e38, 4.591774807899561e-41),
    }[dtype]
""",
    )
)

# Wrong answers of the red team's report ch0406 (each passed every check before).
TASK.wrong.extend(
    [
        Wrong(
            "A complete table of the three formats with inf (float8_e5m2 included), not computed "
            "from torch.finfo(dtype): right numbers, but nothing computed.",
            hint="never reads torch.finfo",
            code="""\
def cast_limits(dtype):
    return {
        torch.float16: (65520.0, 2.9802322387695312e-08),
        torch.bfloat16: (3.3961775292304601e38, 4.591774807899561e-41),
        torch.float8_e5m2: (61440.0, 7.62939453125e-06),
    }[dtype]
""",
        ),
        Wrong(
            "The limits searched by bisection when the cell runs (outside the watched call), and "
            "only looked up by cast_limits.",
            hint="searched for the limits when it ran",
            code="""\
def _first(lo, hi, holds):
    while lo < hi:
        mid = (lo + hi) // 2
        if holds(torch.tensor(mid, dtype=torch.int32).view(torch.float32)):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _as_float(bits):
    return torch.tensor(bits, dtype=torch.int32).view(torch.float32).item()


def _search(dtype):
    top = torch.tensor(torch.finfo(dtype).max, dtype=torch.float32).view(torch.int32).item()
    over = _first(top, 0x7F800000, lambda x: bool(torch.isinf(x.to(dtype))))
    under = _first(0, 0x7F800000, lambda x: x.to(dtype).item() != 0) - 1
    return _as_float(over), _as_float(under)


_LIMITS = {d: _search(d) for d in (torch.float16, torch.bfloat16, torch.float8_e5m2)}


def cast_limits(dtype):
    torch.finfo(dtype)
    return _LIMITS[dtype]
""",
        ),
    ]
)

# Wrong answers of the red team's report rt5a (each passed every check before).
TASK.wrong.append(
    Wrong(
        "A table of the three formats with inf, torch.finfo(dtype) read for show only: the numbers do not "
        "follow finfo (nothing computed from it).",
        hint="only read for show",
        code="""\
def cast_limits(dtype):
    fi = torch.finfo(dtype)
    return {
        torch.float16: (65520.0, 2.9802322387695312e-08),
        torch.bfloat16: (3.3961775292304601e38, 4.591774807899561e-41),
        torch.float8_e5m2: (61440.0, 7.62939453125e-06),
    }[dtype]
""",
    )
)

TASK.wrong.extend(
    [
        Wrong(
            "The limits searched over 2**23 candidates with torch._C._DisableTorchDispatch(): no operation "
            "reaches the check's record.",
            hint="where the grader cannot record it",
            code=SEARCH_UNSEEN.replace("HIDDEN", "torch._C._DisableTorchDispatch()"),
        ),
        Wrong(
            "The limits searched over 2**23 candidates with the dispatch modes popped (_disable_current_modes).",
            hint="where the grader cannot record it",
            code="from torch.utils._python_dispatch import _disable_current_modes\n\n\n"
            + SEARCH_UNSEEN.replace("HIDDEN", "_disable_current_modes()"),
        ),
    ]
)

TASK.wrong.append(
    Wrong(
        "The limits searched when the cell runs, with torch._C._DisableTorchDispatch() (the cell's record "
        "shows nothing), and only looked up by cast_limits, torch.finfo read for show.",
        hint="only read for show",
        code="""\
def _search(dtype):
    fi = torch.finfo(dtype)
"""
        + SEARCHED_UNSEEN
        + """

_LIMITS = {d: _search(d) for d in (torch.float16, torch.bfloat16, torch.float8_e5m2)}


def cast_limits(dtype):
    fi = torch.finfo(dtype)
    return _LIMITS[dtype]
""",
    )
)

# Round 6 (rt6e): ints where the task asks for floats (4.1, 4.5), and a GradScaler enabled on a
# GPU only (4.7).
TASK.wrong.append(
    Wrong(
        "overflow_at returned as an int (int(...)): the task asks for Python floats.",
        hint="nor an int",
        code=CAST_LIMITS.replace("return fi.max + step_at_max / 2,", "return int(fi.max + step_at_max / 2),"),
    )
)


# A red team's 4.1 that searches with NumPy, where the watch counts no torch operation.
TASK.wrong.extend(
    [
        Wrong(
            (
                "A vectorised NumPy search over every float32 bit pattern near max and near the smallest "
                "subnormal, with round-to-nearest-even simulated from finfo's numbers: right for any format, fake "
                "ones too, but a search."
            ),
            hint="MiB of Python or NumPy objects while it ran",
            code="""\
import numpy as np


def cast_limits(dtype):
    fi = torch.finfo(dtype)
    f32 = np.float32

    def rounds(values):  # round-to-nearest-even onto the format's grid, from finfo's numbers
        exp = np.floor(np.log2(np.maximum(values, fi.smallest_normal)))
        spacing = np.exp2(exp) * fi.eps
        q = np.rint(values / spacing) * spacing
        return np.where(q > fi.max, np.inf, q)

    # every float32 bit pattern from max to 2 * max: the first that rounds to inf
    lo, hi = f32(fi.max).view(np.uint32), f32(2 * fi.max).view(np.uint32)
    over = np.arange(lo, hi, dtype=np.uint32).view(np.float32).astype(np.float64)
    overflow_at = float(over[np.argmax(np.isinf(rounds(over)))])
    # every float32 bit pattern from a quarter of the smallest subnormal to it: the last that rounds to 0
    tiny = fi.smallest_normal * fi.eps
    low, top = f32(tiny / 4).view(np.uint32), f32(tiny).view(np.uint32)
    under = np.arange(low, top, dtype=np.uint32).view(np.float32).astype(np.float64)
    zero = rounds(under) == 0
    underflow_at = float(under[len(zero) - 1 - np.argmax(zero[::-1])])
    return overflow_at, underflow_at
""",
        ),
    ]
)
