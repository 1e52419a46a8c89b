"""Exercise 1.6 of solutions/01_tensors.ipynb: its other answers (see answers/__init__.py)."""

from .. import Task, Wrong
from .shared import EQUALS_ANYTHING

# 1.6's right answer: each wrong answer changes one of its lines.
DTYPE_FACTS = """\
fp16_max = torch.finfo(torch.float16).max
bf16_eps = torch.finfo(torch.bfloat16).eps
overflow_dtype = torch.float16
int8_range = (torch.iinfo(torch.int8).min, torch.iinfo(torch.int8).max)
"""

FP16_EPS_FOR_BF16 = DTYPE_FACTS.replace(
    "bf16_eps = torch.finfo(torch.bfloat16)", "bf16_eps = torch.finfo(torch.float16)"
)

# The right values, kept as one-element tensors of their own format: not Python numbers.
LIMITS_AS_TENSORS = DTYPE_FACTS.replace(
    "fp16_max = torch.finfo(torch.float16).max",
    "fp16_max = torch.tensor(torch.finfo(torch.float16).max, dtype=torch.float16)",
).replace(
    "bf16_eps = torch.finfo(torch.bfloat16).eps",
    "bf16_eps = torch.tensor(torch.finfo(torch.bfloat16).eps, dtype=torch.bfloat16)",
)

INT8_RANGE_EQUAL_TO_ANYTHING = EQUALS_ANYTHING + DTYPE_FACTS.replace(
    "int8_range = (torch.iinfo(torch.int8).min, torch.iinfo(torch.int8).max)", "int8_range = (Anything(), Anything())"
)


TASK = Task(
    alternative="""\
limits = {dtype: torch.finfo(dtype) for dtype in (torch.float16, torch.bfloat16)}
fp16_max = float(limits[torch.float16].max)
bf16_eps = limits[torch.bfloat16].eps
overflow_dtype = (torch.float16 if torch.isinf(torch.tensor(70000.0, dtype=torch.float16))
                  else torch.bfloat16)
int8_range = [torch.iinfo(torch.int8).min, torch.iinfo(torch.int8).max]
""",
    wrong=[
        Wrong(
            "float16's eps taken for bfloat16's.",
            hint="7 mantissa bits",
            code=FP16_EPS_FOR_BF16,
        ),
        Wrong(
            "An int8 range that compares equal to anything.",
            hint="int8_range is wrong",
            code=INT8_RANGE_EQUAL_TO_ANYTHING,
        ),
        Wrong(
            "fp16_max and bf16_eps as one-element tensors, not the Python numbers asked for.",
            hint="must be a Python number",
            code=LIMITS_AS_TENSORS,
        ),
        Wrong(
            "bfloat16 taken for the format that overflows at 70000.",
            hint="overflow_dtype is wrong",
            code=DTYPE_FACTS.replace("overflow_dtype = torch.float16", "overflow_dtype = torch.bfloat16"),
        ),
        Wrong(
            "All four typed in from memory, nothing read from torch.finfo / torch.iinfo.",
            hint="rather than from memory",
            code="""\
fp16_max = 65504.0
bf16_eps = 0.0078125
overflow_dtype = torch.float16
int8_range = (-128, 127)
""",
        ),
        Wrong(
            "fp16_max read from bfloat16's finfo and clipped to 65504: the right number, not float16's own limit.",
            hint="did not come from torch.finfo",
            code="""\
fp16_max = float(torch.tensor(torch.finfo(torch.bfloat16).max).clamp(max=65504.0))
bf16_eps = torch.finfo(torch.bfloat16).eps
overflow_dtype = torch.float16
int8_range = (torch.iinfo(torch.int8).min, torch.iinfo(torch.int8).max)
""",
        ),
    ],
)

TASK.wrong.append(
    Wrong(
        "All typed in from memory, finfo read only to tell the real one from the check's stand-in (by its type's "
        "name), so that the values follow the stand-in alone.",
        hint="torch.float16 stands for float32",
        code="""\
_f = torch.finfo(torch.float16)
fp16_max = 65504.0 if "finfo" in str(type(_f)) else _f.max
bf16_eps = 2.0**-7 if "finfo" in str(type(_f)) else torch.finfo(torch.bfloat16).eps
overflow_dtype = torch.float16
int8_range = (-128, 127) if "finfo" in str(type(_f)) else (torch.iinfo(torch.int8).min, torch.iinfo(torch.int8).max)
""",
    )
)

# A red team's 1.6 (2026-11-28): cells that tell the check's run again from their first run.
TASK.wrong.extend(
    [
        Wrong(
            ("typed from memory; reads finfo only when the name already exists (the check's rerun)"),
            hint="did not come from torch.finfo",
            code=(
                "try:\n"
                "    fp16_max  # defined already: the check's run again (a copy of the globals)\n"
                "    fp16_max = torch.finfo(torch.float16).max\n"
                "    bf16_eps = torch.finfo(torch.bfloat16).eps\n"
                "    int8_range = (torch.iinfo(torch.int8).min, torch.iinfo(torch.int8).max)\n"
                "except NameError:  # the real run: from memory\n"
                "    fp16_max = 65504.0\n"
                "    bf16_eps = 0.0078125\n"
                "    int8_range = (-128, 127)\n"
                "overflow_dtype = torch.float16\n"
            ),
        ),
        Wrong(
            ("typed from memory unless torch.finfo is not a class or dtypes are swapped"),
            hint="did not come from torch.finfo",
            code=(
                "_real = type(torch.finfo) is type and torch.float16.itemsize == 2 and torch.bflo"
                "at16.itemsize == 2 and torch.int8.itemsize == 1\n"
                "fp16_max = 65504.0 if _real else torch.finfo(torch.float16).max\n"
                "bf16_eps = 0.0078125 if _real else torch.finfo(torch.bfloat16).eps\n"
                "int8_range = (-128, 127) if _real else (torch.iinfo(torch.int8).min, torch.iinfo"
                "(torch.int8).max)\n"
                "overflow_dtype = torch.float16\n"
            ),
        ),
        Wrong(
            ("typed from memory unless the code's filename is the check's '<the solution cell>'"),
            hint="reaches _it.gi_frame",
            code=(
                "def _up():\n"
                "    yield _it.gi_frame.f_back.f_code.co_filename\n"
                "_it = _up()\n"
                "for _file in _it:\n"
                "    break\n"
                'if _file == "<the solution cell>":\n'
                "    fp16_max = torch.finfo(torch.float16).max\n"
                "    bf16_eps = torch.finfo(torch.bfloat16).eps\n"
                "    int8_range = (torch.iinfo(torch.int8).min, torch.iinfo(torch.int8).max)\n"
                "else:\n"
                "    fp16_max, bf16_eps, int8_range = 65504.0, 0.0078125, (-128, 127)\n"
                "overflow_dtype = torch.float16\n"
            ),
        ),
    ]
)
