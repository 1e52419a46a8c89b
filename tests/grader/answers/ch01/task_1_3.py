"""Exercise 1.3 of solutions/01_tensors.ipynb: its other answers (see answers/__init__.py)."""

from .. import Task, Wrong
from .shared import EQUALS_ANYTHING

# 1.3's right cell (its given setup, then the answer): each wrong answer changes mt_stride.
STRIDES = """\
m = torch.arange(6.).reshape(2, 3)
mt = m.t()
mt_stride = (1, 3)
mt_is_contiguous = False
mt_contig = mt.contiguous()
mt_flat = mt.reshape(6)
"""

STRIDES_ROW_MAJOR = STRIDES.replace("mt_stride = (1, 3)", "mt_stride = (3, 1)")

STRIDES_EQUAL_TO_ANYTHING = STRIDES.replace(
    "mt_stride = (1, 3)\n", EQUALS_ANYTHING + "mt_stride = (Anything(), Anything())\n"
)

# 1.3, 1.4 and 1.5: answers right for the given values on the CPU, wrong elsewhere.
MT_SETUP = """\
m = torch.arange(6.0).reshape(2, 3)
mt = m.t()
mt_stride = (1, 3)
mt_is_contiguous = False
"""

# A contiguous copy in int64: the values compare equal, the tensor is not mt's.
MT_CONTIG_INT64 = MT_SETUP + "mt_contig = mt.contiguous().long()\nmt_flat = mt.reshape(6)\n"

MT_FLAT_INT64 = (
    MT_SETUP + "mt_contig = mt.contiguous()\nmt_flat = torch.tensor(mt.reshape(6).tolist(), dtype=torch.int64)\n"
)

# mt's values typed in: right for this m only.
MT_TYPED_IN = (
    MT_SETUP
    + "mt_contig = torch.tensor([[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]])\n"
    + "mt_flat = torch.tensor([0.0, 3.0, 1.0, 4.0, 2.0, 5.0])\n"
)


TASK = Task(
    alternative="""\
m = torch.arange(6.).reshape(2, 3)
mt = m.t()
mt_stride = list(mt.stride())
mt_is_contiguous = mt.is_contiguous()
mt_contig = mt.clone(memory_format=torch.contiguous_format)
mt_flat = mt.contiguous().view(-1)
""",
    wrong=[
        Wrong(
            "Thinking that transposing reorders the data, so the strides stay row-major.",
            hint="swaps the strides",
            code=STRIDES_ROW_MAJOR,
        ),
        Wrong(
            "Strides that compare equal to anything.",
            hint="swaps the strides",
            code=STRIDES_EQUAL_TO_ANYTHING,
        ),
        # clone() keeps mt's strides: a copy, but still not contiguous.
        Wrong(
            "mt_contig = mt.clone(): its own memory, but clone keeps the transposed strides.",
            hint="mt_contig must be contiguous",
            code=STRIDES.replace("mt_contig = mt.contiguous()", "mt_contig = mt.clone()"),
        ),
        Wrong(
            "mt_flat read in m's order (m.view(6)), not in mt's.",
            hint="row by row of mt",
            code=STRIDES.replace("mt_flat = mt.reshape(6)", "mt_flat = m.view(6)"),
        ),
        Wrong("mt_contig in int64.", hint="its values and its dtype", code=MT_CONTIG_INT64),
        Wrong("mt_flat in int64.", hint="in mt's dtype", code=MT_FLAT_INT64),
        Wrong("mt's values typed in.", hint="do not type the values in", code=MT_TYPED_IN),
        Wrong(
            "mt_flat passed through bfloat16: wrong for values bfloat16 cannot hold.",
            hint="keep every value as it is",
            code=STRIDES.replace("mt_flat = mt.reshape(6)", "mt_flat = mt.reshape(6).to(torch.bfloat16).float()"),
        ),
        Wrong(
            "mt_contig with nan and inf replaced (nan_to_num).",
            hint="keep every value as it is",
            code=STRIDES.replace("mt_contig = mt.contiguous()", "mt_contig = mt.contiguous().nan_to_num()"),
        ),
        Wrong(
            "mt_flat passed through float16: wrong for values float16 cannot hold.",
            hint="keep every value as it is",
            code=STRIDES.replace("mt_flat = mt.reshape(6)", "mt_flat = mt.half().reshape(6).to(mt.dtype)"),
        ),
        Wrong(
            "mt_contig and mt_flat rebuilt from Python lists: float32 whatever m's dtype.",
            hint="keep m's dtype",
            code="""\
m = torch.arange(6.0).reshape(2, 3)
mt = m.t()
mt_stride = (1, 3)
mt_is_contiguous = False
mt_contig = torch.tensor(mt.tolist())
mt_flat = torch.tensor(mt.tolist()).reshape(6)
""",
        ),
        Wrong(
            "mt_contig and mt_flat through .float(): a float64 m is rounded to float32.",
            hint="keep m's dtype",
            code="""\
m = torch.arange(6.0).reshape(2, 3)
mt = m.t()
mt_stride = (1, 3)
mt_is_contiguous = False
mt_contig = mt.float().contiguous()
mt_flat = mt.float().reshape(6)
""",
        ),
    ],
)
