"""float_bits: the bits it reports and draws are the bits torch stores (read back through an
integer view, and for fp64/fp32/fp16 also through Python's struct), the fields decode to
torch's own value, and bad input is a clear error that leaves the caller's tensor alone."""

import math
import struct

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg

import vizlib as vz
from vizlib.errors import VizlibValueError
from vizlib.plots.float_bits import FloatBits, float_bits, float_fields
from vizlib.plots.style import NOTEBOOK_WIDTH

FORMATS = [torch.float64, torch.float32, torch.float16, torch.bfloat16]
INT_VIEW = {
    torch.float64: torch.int64,
    torch.float32: torch.int32,
    torch.float16: torch.int16,
    torch.bfloat16: torch.int16,
}
STRUCT_CODE = {torch.float64: "d", torch.float32: "f", torch.float16: "e"}
# Normal, subnormal, zero, overflow and special values of each format, none on a rounding tie.
VALUES = [
    0.1,
    -2.5,
    1 / 3,
    1.0,
    65504.0,
    70000.0,
    1e-5,
    -6e-8,
    1e-8,
    1e-40,
    5e-324,
    0.0,
    -0.0,
    1e38,
    3.4e38,
    math.inf,
    -math.inf,
    math.nan,
]


def torch_bits(value: float, dtype: torch.dtype) -> str:
    """The bits torch stores for ``value`` in ``dtype``, through an integer view of its bytes."""
    n = torch.finfo(dtype).bits
    word = torch.tensor(value, dtype=torch.float64).to(dtype).view(INT_VIEW[dtype]).item()
    return format(word & ((1 << n) - 1), f"0{n}b")


def struct_bits(value: float, dtype: torch.dtype) -> str | None:
    """The IEEE bits Python's struct module packs for ``value``, where it has the format."""
    code = STRUCT_CODE.get(dtype)
    if code is None or math.isnan(value):  # NaN payloads differ between libraries
        return None
    try:
        packed = struct.pack(f">{code}", value)
    except OverflowError:  # struct refuses to round to inf; torch does
        return None
    return format(int.from_bytes(packed, "big"), f"0{8 * len(packed)}b")


@pytest.mark.parametrize("dtype", FORMATS, ids=str)
@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_reported_bits_are_the_stored_bits(value, dtype):
    (row,) = float_fields(value, [dtype])
    assert row.bits == torch_bits(value, dtype)
    independent = struct_bits(value, dtype)
    if independent is not None:
        assert row.bits == independent
    n_mantissa = {torch.float64: 52, torch.float32: 23, torch.float16: 10, torch.bfloat16: 7}[dtype]
    assert len(row.sign) == 1 and len(row.mantissa) == n_mantissa
    assert len(row.exponent) == torch.finfo(dtype).bits - 1 - n_mantissa


@pytest.mark.parametrize("dtype", FORMATS, ids=str)
@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_fields_decode_to_the_value_torch_stored(value, dtype):
    (row,) = float_fields(value, [dtype])
    stored = torch.tensor(value, dtype=torch.float64).to(dtype).item()
    assert row.value == stored or (math.isnan(row.value) and math.isnan(stored))
    decoded = row.decoded()
    assert decoded == stored or (math.isnan(decoded) and math.isnan(stored))
    assert math.copysign(1, decoded) == math.copysign(1, stored) or math.isnan(stored)  # -0.0 keeps its sign


def test_bf16_is_fp32_rounded_to_its_top_16_bits():
    fp32, bf16 = float_fields(0.1, [torch.float32, torch.bfloat16])
    assert (bf16.sign, bf16.exponent) == (fp32.sign, fp32.exponent)
    # 0.1 in fp32: 1.1001100|1100... the cut-off bits start with 1 and are not a tie: round up.
    assert fp32.mantissa[:7] == "1001100" and bf16.mantissa == "1001101"


@pytest.mark.parametrize(
    "value, kinds",
    [
        (0.1, ["normal", "normal", "normal"]),
        (70000.0, ["normal", "inf", "normal"]),
        (1e-5, ["normal", "subnormal", "normal"]),
        (1e-8, ["normal", "zero", "normal"]),
        (1e-40, ["subnormal", "zero", "subnormal"]),
        (math.nan, ["nan", "nan", "nan"]),
        (-math.inf, ["inf", "inf", "inf"]),
    ],
)
def test_kind_says_normal_subnormal_zero_or_special(value, kinds):
    rows = float_fields(value)  # default: fp32, fp16, bf16
    assert [r.dtype for r in rows] == ["float32", "float16", "bfloat16"]
    assert [r.kind for r in rows] == kinds


def test_bias_and_power_follow_the_format():
    fp32, fp16, bf16 = float_fields(0.1)
    assert (fp32.bias, fp16.bias, bf16.bias) == (127, 15, 127)
    assert fp32.power == fp16.power == bf16.power == -4  # 0.1 = 1.6 x 2^-4
    (sub,) = float_fields(1e-5, [torch.float16])
    assert sub.power == -14 and sub.significand < 1  # subnormal: 0.m x 2^(1 - bias)


def rows_drawn(fig) -> list[str]:
    """The bits in the picture, row by row: the one-character texts, grouped by height."""
    by_row: dict[float, list[tuple[float, str]]] = {}
    for t in fig.axes[0].texts:
        if t.get_text() in ("0", "1"):
            x, y = t.get_position()
            by_row.setdefault(round(y, 3), []).append((x, t.get_text()))
    return ["".join(bit for _, bit in sorted(row)) for _, row in sorted(by_row.items())]


def texts(fig) -> list[str]:
    return [t.get_text() for t in fig.axes[0].texts]


@pytest.mark.parametrize("value", [0.1, 70000.0, 1e-5, -1e-8, math.nan])
def test_picture_draws_the_stored_bits_in_field_colours(value, tmp_path):
    dtypes = [torch.float32, torch.float16, torch.bfloat16]
    fig = float_bits(value, dtypes)
    assert rows_drawn(fig) == [torch_bits(value, dt) for dt in dtypes]
    (cells,) = fig.axes[0].collections
    colours = [tuple(c) for c in cells.get_facecolors()]
    assert len(colours) == 32 + 16 + 16
    sign, exponent, mantissa = colours[0], colours[1], colours[31]
    assert len({sign, exponent, mantissa}) == 3
    # Each row: one sign cell, then its exponent cells, then its mantissa cells.
    assert colours == (
        [sign]
        + [exponent] * 8
        + [mantissa] * 23
        + [sign]
        + [exponent] * 5
        + [mantissa] * 10
        + [sign]
        + [exponent] * 8
        + [mantissa] * 7
    )
    fig.savefig(tmp_path / "bits.png")
    assert (tmp_path / "bits.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_picture_states_values_and_what_went_wrong():
    words = " ".join(texts(float_bits(70000.0)))
    assert "x = 70000.0" in words
    assert "exponent 143 - 127 = 16" in words  # fp32 and bf16
    assert "x overflowed: it is past this format's largest, 65504" in words  # fp16
    assert "= 70144.0" in words and "exactly x" in words  # bf16 rounds; fp32 holds 70000 exactly
    words = " ".join(texts(float_bits(1e-8, [torch.float16])))
    assert "x underflowed" in words and "exponent and mantissa all zeros: zero" in words
    words = " ".join(texts(float_bits(1e-5, [torch.float16])))
    assert "subnormal, power 1 - 15 = -14" in words
    assert repr(torch.tensor(1e-5, dtype=torch.float16).item()) in words


def test_tensor_input_is_read_not_changed():
    t = torch.tensor([0.1], requires_grad=True)
    open_figures = plt.get_fignums()
    fig = vz.float_bits(t, dtypes=torch.float16)  # one dtype alone is fine too
    assert plt.get_fignums() == open_figures  # closed: Jupyter shows it once, via the return value
    assert t.grad is None and t.grad_fn is None and t.requires_grad and t.dtype == torch.float32
    assert torch.equal(t.detach(), torch.tensor([0.1]))
    # A float32 tensor is rounded from its own (float32) value, and the title says so.
    assert rows_drawn(fig) == [format(t.detach().half().view(torch.int16).item() & 0xFFFF, "016b")]
    assert f"x = {t.item()!r} (tensor, dtype float32)" in texts(fig)


def test_same_input_gives_the_same_picture():
    a, b = float_bits(0.1), float_bits(0.1)
    assert repr(a) == repr(b) and texts(a) == texts(b)
    assert repr(a).startswith("<Figure size ") and repr(a).endswith(" with 1 Axes>")


def test_float64_row_fits_the_page():
    fig = float_bits(0.1, FORMATS)
    width, _ = fig.get_size_inches()
    assert width < 10
    assert rows_drawn(fig) == [torch_bits(0.1, dt) for dt in FORMATS]


@pytest.mark.parametrize(
    "x, dtypes, error, message",
    [
        ("0.1", None, TypeError, r"pass a Python float or int, or a tensor with one element.*got str"),
        (True, None, TypeError, "not a bool"),
        (torch.tensor([True]), None, TypeError, "not a bool"),
        (1 + 2j, None, TypeError, r"vz.float_bits\(z.real\)"),
        (torch.zeros(1, dtype=torch.complex64), None, TypeError, "complex"),
        (torch.zeros(2, 3), None, ValueError, r"x has 6 elements \(shape \(2, 3\)\).*pick one"),
        (torch.zeros((), device="meta"), None, ValueError, "meta device"),
        (0.1, "fp16", TypeError, "list of torch dtypes"),
        (0.1, ["fp16"], TypeError, r"torch dtypes such as torch.float16, not 'fp16'"),
        (0.1, [], ValueError, "dtypes is empty"),
        (0.1, [torch.int8], ValueError, "torch.int8 is not one of them"),
        (0.1, [torch.float8_e4m3fn], ValueError, "float_bits draws torch.float64, torch.float32"),
    ],
)
def test_bad_input_is_a_clear_error(x, dtypes, error, message):
    kwargs = {} if dtypes is None else {"dtypes": dtypes}
    with pytest.raises(error, match=message) as info:
        float_bits(x, **kwargs)
    assert isinstance(info.value, vz.VizlibError)


def test_float_bits_data_is_plain():
    row = FloatBits(dtype="float16", sign="0", exponent="01111", mantissa="0000000000", value=1.0)
    assert row.bits == "0011110000000000" and row.kind == "normal" and row.decoded() == 1.0


def test_integers_draw_as_the_floats_they_become():
    (fp16,) = float_fields(3, [torch.float16])
    assert fp16.value == 3.0 and fp16.exponent == "10000" and fp16.mantissa == "1000000000"  # 1.1 (binary) x 2**1
    rows = float_fields(torch.tensor(65519), [torch.float16, torch.bfloat16])
    assert [r.value for r in rows] == [65504.0, 65536.0]  # fp16 rounds down to its max; bf16 keeps 8 bits
    assert "x = 65519.0 (tensor, dtype int64)" in texts(float_bits(torch.tensor(65519)))


def test_a_numpy_number_draws_as_the_value_it_holds():
    # (a learner comparing NumPy's float32 with torch's: np.float32(0.1) is already rounded)
    held = float(np.float32(0.1))
    assert [r.value for r in float_fields(np.float32(0.1), FORMATS)] == [
        torch.tensor(held, dtype=torch.float64).to(dt).item() for dt in FORMATS
    ]
    assert f"x = {held!r}" in texts(float_bits(np.float32(0.1)))
    assert rows_drawn(float_bits(np.int64(3), [torch.float16])) == [torch_bits(3.0, torch.float16)]


@pytest.mark.parametrize("dtypes", [None, FORMATS, [torch.float64]], ids=["default", "all four", "float64"])
def test_figure_is_no_wider_than_a_notebook_shows(dtypes):
    fig = float_bits(0.1) if dtypes is None else float_bits(0.1, dtypes)
    assert fig.get_figwidth() <= NOTEBOOK_WIDTH
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    drawn = fig.get_tightbbox(canvas.get_renderer())
    assert drawn.x1 <= fig.get_figwidth() + 0.01  # nothing cut at the right edge


@pytest.mark.parametrize("x", [2**1024, -(10**400)], ids=["2**1024", "-10**400"])
def test_an_integer_beyond_float64_is_a_clear_error(x):
    with pytest.raises(VizlibValueError, match=r"beyond float64.*math\.inf"):
        float_bits(x)
    sign = "-" if x < 0 else ""
    assert float_bits(float(f"{sign}inf"))  # the advice works
