"""What does a number become in fp32, fp16 and bf16? Its sign, exponent and mantissa bits, drawn.

A floating-point number is stored as three bit fields: a sign, an exponent (the power of
two, stored with a bias) and a mantissa (the fraction after an implicit leading 1). The
widths of the fields set a format's range and precision, which is all of mixed precision
in one picture: fp16 spends its 16 bits on mantissa (precision) and overflows at 65504;
bf16 keeps fp32's 8 exponent bits (range) and rounds to 7 mantissa bits.

``float_bits(x)`` rounds one number to each format the way torch does (``.to(dtype)``)
and draws the bits torch stored, one row per format with the sign bits aligned, each
row followed by what its fields mean and what the row's value is. The bits come from
torch itself (the stored bytes read as an integer), never from re-implementing the
rounding. The caller's tensor is only read.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass

import matplotlib.pyplot as plt
import torch
from matplotlib.collections import PatchCollection
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from ..errors import VizlibTypeError, VizlibValueError
from ..text import dtype_name
from .style import BIT_COLOURS, NOTEBOOK_WIDTH

# The binary interchange formats: sign, exponent, mantissa, and the IEEE rules for the
# all-zeros and all-ones exponents. (The float8 formats bend those rules; not drawn.)
FORMATS = (torch.float64, torch.float32, torch.float16, torch.bfloat16)
DEFAULT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
_INT_OF_SIZE = {2: torch.int16, 4: torch.int32, 8: torch.int64}

CELL_INCHES = 0.26  # one bit; narrower when a row would not fit MAX_ROW_INCHES
LABEL_INCHES = 1.0
# A row of bits fits the notebook's width, with the dtype's name left of it.
MAX_ROW_INCHES = NOTEBOOK_WIDTH - LABEL_INCHES - 0.3
# The smallest int that float(x) cannot convert (it rounds to inf: OverflowError): 2**1024
# less half a unit in the last place of float64's largest, 2**970.
_BEYOND_FLOAT64 = 2**1024 - 2**970
ROW_INCHES = 0.85  # a row of bits and its two lines of explanation


@dataclass(frozen=True)
class FloatBits:
    """One number as one format stores it: the bit fields and the value they encode."""

    dtype: str  # "float16"
    sign: str  # "0" or "1"
    exponent: str  # the exponent field, e.g. "01011"
    mantissa: str  # the mantissa (fraction) field, e.g. "1001100110"
    value: float  # what the bits encode: the number rounded to this format

    @property
    def bits(self) -> str:
        """All the bits, most significant first, as ``x.view(int)`` holds them."""
        return self.sign + self.exponent + self.mantissa

    @property
    def bias(self) -> int:
        """What is subtracted from the stored exponent: 127 for fp32 and bf16, 15 for fp16."""
        return 2 ** (len(self.exponent) - 1) - 1

    @property
    def kind(self) -> str:
        """'normal', 'subnormal', 'zero', 'inf' or 'nan', read from the exponent field."""
        if set(self.exponent) == {"1"}:
            return "inf" if set(self.mantissa) == {"0"} else "nan"
        if set(self.exponent) == {"0"}:
            return "zero" if set(self.mantissa) == {"0"} else "subnormal"
        return "normal"

    @property
    def power(self) -> int:
        """The power of two the significand is multiplied by (subnormals use 1 - bias)."""
        return max(int(self.exponent, 2), 1) - self.bias

    @property
    def significand(self) -> float:
        """1.mantissa in binary for a normal number, 0.mantissa for a subnormal or zero."""
        lead = 1 if self.kind == "normal" else 0
        return lead + int(self.mantissa, 2) / 2 ** len(self.mantissa)

    def decoded(self) -> float:
        """The value computed from the fields alone: (-1)^sign x significand x 2^power."""
        if self.kind == "inf":
            return -math.inf if self.sign == "1" else math.inf
        if self.kind == "nan":
            return math.nan
        return (-1) ** int(self.sign) * math.ldexp(self.significand, self.power)


def float_fields(
    x: float | torch.Tensor, dtypes: Sequence[torch.dtype] | torch.dtype = DEFAULT_DTYPES
) -> list[FloatBits]:
    """``x`` rounded to each dtype as torch rounds it, and the bits torch stored for it."""
    number = _as_tensor(x)
    return [_fields(number.to(dt)) for dt in _checked_dtypes(dtypes)]


def _as_tensor(x: object) -> torch.Tensor:
    """x as a 0-d CPU tensor, detached (the caller's tensor is never touched)."""
    if isinstance(x, bool) or (isinstance(x, torch.Tensor) and x.dtype == torch.bool):
        raise VizlibTypeError("float_bits draws a number, not a bool: pass e.g. vz.float_bits(1.0).")
    if isinstance(x, complex) or (isinstance(x, torch.Tensor) and x.is_complex()):
        raise VizlibTypeError(
            "A complex number is two floats: draw them one at a time, "
            "e.g. vz.float_bits(z.real) and vz.float_bits(z.imag)."
        )
    if isinstance(x, int) and not -_BEYOND_FLOAT64 < x < _BEYOND_FLOAT64:
        raise VizlibValueError(
            f"x, an integer of about {'-' if x < 0 else ''}2**{x.bit_length() - 1}, is beyond float64's range "
            "(its largest is about 1.8e308, just under 2**1024): "
            "no format float_bits draws can hold it, each would store it as inf. Draw that: "
            f"vz.float_bits({'-' if x < 0 else ''}math.inf)."
        )
    if isinstance(x, numbers.Real):  # NumPy's numbers too (np.float32(0.1): its own float32 value)
        return torch.tensor(float(x), dtype=torch.float64, device="cpu")
    if not isinstance(x, torch.Tensor):
        raise VizlibTypeError(
            f"float_bits draws one number: pass a Python float or int, or a tensor with "
            f"one element, e.g. vz.float_bits(0.1); got {type(x).__name__}."
        )
    if x.device.type == "meta":
        raise VizlibValueError("x is on the meta device: it has no value to draw. Use a real tensor.")
    if x.numel() != 1:
        raise VizlibValueError(
            f"x has {x.numel()} elements (shape {tuple(x.shape)}); float_bits draws one "
            "number: pick one, e.g. vz.float_bits(t.flatten()[0])."
        )
    return x.detach().reshape(()).cpu()


def _checked_dtypes(dtypes: object) -> list[torch.dtype]:
    """dtypes as a list of drawable formats; a single dtype is a list of one."""
    if isinstance(dtypes, torch.dtype):
        dtypes = [dtypes]
    if isinstance(dtypes, (str, bytes)) or not isinstance(dtypes, Sequence):
        raise VizlibTypeError(
            f"dtypes must be a list of torch dtypes, e.g. dtypes=[torch.float16, torch.bfloat16]; got {dtypes!r}."
        )
    if not dtypes:
        raise VizlibValueError("dtypes is empty: name at least one format, e.g. dtypes=[torch.float16].")
    for dt in dtypes:
        if not isinstance(dt, torch.dtype):
            raise VizlibTypeError(
                f"dtypes must hold torch dtypes such as torch.float16, not {dt!r} ({type(dt).__name__})."
            )
        if dt not in FORMATS:
            names = ", ".join(f"torch.{dtype_name(f)}" for f in FORMATS)
            raise VizlibValueError(f"float_bits draws {names}; {dt} is not one of them.")
    return list(dtypes)


def _fields(t: torch.Tensor) -> FloatBits:
    """The fields of the 0-d floating tensor ``t``, read from its bytes."""
    n_bits = torch.finfo(t.dtype).bits
    n_mantissa = round(-math.log2(torch.finfo(t.dtype).eps))
    word = int(t.view(_INT_OF_SIZE[t.element_size()]).item()) & ((1 << n_bits) - 1)  # two's complement -> bits
    bits = format(word, f"0{n_bits}b")
    return FloatBits(
        dtype=dtype_name(t.dtype),
        sign=bits[0],
        exponent=bits[1 : n_bits - n_mantissa],
        mantissa=bits[n_bits - n_mantissa :],
        value=t.item(),
    )


def float_bits(x: float | torch.Tensor, dtypes: Sequence[torch.dtype] | torch.dtype = DEFAULT_DTYPES) -> Figure:
    """Draw the sign, exponent and mantissa bits of ``x`` stored in each of ``dtypes``.

    ``x`` is a number (Python's or NumPy's) or a one-element tensor; ``dtypes`` the formats to compare
    (one dtype or a list), by default fp32, fp16 and bf16; float64 can be drawn too. Each row shows the bits
    torch stores for ``x`` in that format, what the exponent and mantissa fields mean,
    the value they encode and how far it is from ``x``: rounding, overflow to inf,
    underflow to a subnormal or to zero, all visible bit by bit. For example::

        vz.float_bits(0.1)                                # the three formats of AMP
        vz.float_bits(70_000.0, dtypes=[torch.float16])   # overflow: inf
    """
    number = _as_tensor(x)
    rows = float_fields(number, dtypes)
    widest = max(len(r.bits) for r in rows)
    cell = min(CELL_INCHES, MAX_ROW_INCHES / widest)
    width = LABEL_INCHES + widest * cell + 0.3
    height = 0.75 + ROW_INCHES * len(rows)
    fig = plt.figure(figsize=(min(NOTEBOOK_WIDTH, round(max(width, 7.5), 1)), round(height, 1)))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, fig.get_figwidth())
    ax.set_ylim(fig.get_figheight(), 0)  # inches, y down
    ax.axis("off")

    exact = number.to(torch.float64).item()
    given = f"{exact!r} (tensor, dtype {dtype_name(number.dtype)})" if isinstance(x, torch.Tensor) else repr(exact)
    ax.text(0.15, 0.3, f"x = {given}", fontsize=10, weight="bold", va="center")
    ax.legend(
        handles=[Patch(facecolor=c, edgecolor="black", label=k) for k, c in BIT_COLOURS.items()],
        loc="upper right",
        ncol=3,
        fontsize=8,
        frameon=False,
    )

    boxes, colours = [], []
    for i, row in enumerate(rows):
        top = 0.6 + i * ROW_INCHES
        ax.text(0.15, top + cell / 2, row.dtype, fontsize=9, weight="bold", va="center")
        parts = ["sign"] + ["exponent"] * len(row.exponent) + ["mantissa"] * len(row.mantissa)
        for j, (bit, part) in enumerate(zip(row.bits, parts, strict=True)):
            left = LABEL_INCHES + j * cell
            boxes.append(Rectangle((left, top), cell, cell))
            colours.append(BIT_COLOURS[part])
            ax.text(left + cell / 2, top + cell / 2, bit, ha="center", va="center", fontsize=min(8, 30 * cell))
        meaning, value = _explain(row, exact)
        ax.text(LABEL_INCHES, top + cell + 0.17, meaning, fontsize=7.5, va="center")
        ax.text(
            LABEL_INCHES,
            top + cell + 0.38,
            value,
            fontsize=7.5,
            va="center",
            color="darkred" if row.kind in ("inf", "nan") or (row.kind == "zero" and exact != 0) else "black",
        )
    ax.add_collection(PatchCollection(boxes, facecolors=colours, edgecolors="black", linewidths=0.5))
    plt.close(fig)  # shown once in Jupyter, through the returned value
    return fig


def _explain(row: FloatBits, exact: float) -> tuple[str, str]:
    """Two lines under a row: what the fields mean, and the value with its error."""
    sign = "-" if row.sign == "1" else "+"
    field = int(row.exponent, 2)
    if row.kind in ("inf", "nan"):
        mantissa = "zero: inf" if row.kind == "inf" else "not zero: NaN"
        meaning = f"sign {sign}  |  exponent all ones: inf or NaN  |  mantissa {mantissa}"
        if row.kind == "nan":
            return meaning, "= NaN"
        largest = torch.finfo(getattr(torch, row.dtype)).max
        why = f"  (x overflowed: it is past this format's largest, {largest:.5g})" if math.isfinite(exact) else ""
        return meaning, f"= {sign}inf{why}"
    if row.kind == "zero":
        meaning = f"sign {sign}  |  exponent and mantissa all zeros: zero"
        return meaning, f"= {sign}0" + ("  (x underflowed: too small for this format)" if exact != 0 else "")
    if row.kind == "normal":
        exponent = f"exponent {field} - {row.bias} = {row.power}"
        mantissa = f"mantissa 1.{row.mantissa} (binary) = {row.significand!r}"
    else:
        exponent = f"exponent all zeros: subnormal, power 1 - {row.bias} = {row.power}"
        mantissa = f"mantissa 0.{row.mantissa} (binary) = {row.significand!r}"
    meaning = f"sign {sign}  |  {exponent}  |  {mantissa}"
    error = row.value - exact
    if error == 0:
        how_far = "exactly x"
    else:
        how_far = f"error {error:+.3g}" + (f", relative {abs(error / exact):.2g}" if exact else "")
    return meaning, f"= {sign}{row.significand!r} × 2$^{{{row.power}}}$ = {row.value!r}   ({how_far})"
