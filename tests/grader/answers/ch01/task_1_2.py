"""Exercise 1.2 of solutions/01_tensors.ipynb: its other answers (see answers/__init__.py)."""

from .. import Task, Wrong
from .shared import EQUALS_ANYTHING

# 1.2's given setup (every answer starts with it), and the right predictions that its first
# wrong answer changes.
STORAGE_SETUP = """\
base = torch.arange(12).reshape(3, 4)
shares_storage = {
    "base[1]": None,
    "base[:, 1]": None,
    "base[::2]": None,
    "base[None]": None,
    "base[[0, 2]]": None,
    "base[base > 5]": None,
    "base.t()": None,
    "base.view(2, 6)": None,
    "base.t().reshape(12)": None,
    "base.float()": None,
}
"""

STORAGE_PREDICTIONS = """\
shares_storage.update({
    "base[1]": True,
    "base[:, 1]": True,
    "base[::2]": True,
    "base[None]": True,
    "base[[0, 2]]": False,
    "base[base > 5]": False,
    "base.t()": True,
    "base.view(2, 6)": True,
    "base.t().reshape(12)": False,
    "base.float()": False,
})
"""

STORAGE_MEASURED_IN_EXEC = (
    STORAGE_SETUP
    + """\
_ns = {"torch": torch, "base": base, "K": list(shares_storage)}
exec(
    '''
with torch._C._DisableTorchDispatch():
    out = {k: eval(k).untyped_storage().data_ptr() == base.untyped_storage().data_ptr() for k in K}
''',
    _ns,
)
shares_storage.update(_ns["out"])
"""
)

STORAGE_MEASURED_ON_A_NUMPY_TWIN_IN_EXEC = (
    STORAGE_SETUP
    + """\
_ns = {"K": list(shares_storage)}
exec(
    '''
import numpy as np
b = np.arange(12).reshape(3, 4)
ex = {"base[1]": lambda: b[1], "base[:, 1]": lambda: b[:, 1], "base[::2]": lambda: b[::2],
      "base[None]": lambda: b[None], "base[[0, 2]]": lambda: b[[0, 2]], "base[base > 5]": lambda: b[b > 5],
      "base.t()": lambda: b.T, "base.view(2, 6)": lambda: b.reshape(2, 6),
      "base.t().reshape(12)": lambda: b.T.reshape(12), "base.float()": lambda: b.astype(np.float32)}
out = {k: bool(np.shares_memory(ex[k](), b)) for k in K}
''',
    _ns,
)
shares_storage.update(_ns["out"])
"""
)


TASK = Task(
    alternative=STORAGE_SETUP
    + """\
views = ["base[1]", "base[:, 1]", "base[::2]", "base[None]", "base.t()", "base.view(2, 6)"]
for expression in shares_storage:
    shares_storage[expression] = expression in views
""",
    wrong=[
        Wrong(
            "Believing that indexing with a list of indices returns a view.",
            hint="fancy",
            code=STORAGE_SETUP + STORAGE_PREDICTIONS.replace('"base[[0, 2]]": False', '"base[[0, 2]]": True'),
        ),
        Wrong(
            "Predictions that compare equal to anything.",
            hint="must be True or False",
            code=STORAGE_SETUP
            + EQUALS_ANYTHING
            + """\
shares_storage.update({key: Anything() for key in shares_storage})
""",
        ),
        Wrong(
            "Each expression run and its storage compared: right, but measured, not predicted.",
            hint="measured, not predicted",
            code=STORAGE_SETUP
            + """\


def same_storage(t):
    return t.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()


shares_storage["base[1]"] = same_storage(base[1])
shares_storage["base[:, 1]"] = same_storage(base[:, 1])
shares_storage["base[::2]"] = same_storage(base[::2])
shares_storage["base[None]"] = same_storage(base[None])
shares_storage["base[[0, 2]]"] = same_storage(base[[0, 2]])
shares_storage["base[base > 5]"] = same_storage(base[base > 5])
shares_storage["base.t()"] = same_storage(base.t())
shares_storage["base.view(2, 6)"] = same_storage(base.view(2, 6))
shares_storage["base.t().reshape(12)"] = same_storage(base.t().reshape(12))
shares_storage["base.float()"] = same_storage(base.float())
""",
        ),
        Wrong(
            "Believing that a step slice copies every other row.",
            hint="a step slice is a view",
            code=STORAGE_SETUP + STORAGE_PREDICTIONS.replace('"base[::2]": True', '"base[::2]": False'),
        ),
        Wrong(
            "Each storage compared in exec'd code with torch's dispatch switched off.",
            hint="measured, not predicted",
            code=STORAGE_MEASURED_IN_EXEC,
        ),
        Wrong(
            "Each expression measured on a NumPy twin with np.shares_memory, in exec'd code.",
            hint="run again on its own",
            code=STORAGE_MEASURED_ON_A_NUMPY_TWIN_IN_EXEC,
        ),
    ],
)

# A red team's 1.2 (session of 2026-11-28): a generator's frame leads the run alone back to the kernel.
TASK.wrong.extend(
    [
        Wrong(
            ("measured on a NumPy twin (numpy called from C via map), rerun hands back the kernel's dict via frames"),
            hint="measured, not predicted",
            code=(
                "base = torch.arange(12).reshape(3, 4)\n"
                "shares_storage = {\n"
                '    "base[1]": None,\n'
                '    "base[:, 1]": None,\n'
                '    "base[::2]": None,\n'
                '    "base[None]": None,\n'
                '    "base[[0, 2]]": None,\n'
                '    "base[base > 5]": None,\n'
                '    "base.t()": None,\n'
                '    "base.view(2, 6)": None,\n'
                '    "base.t().reshape(12)": None,\n'
                '    "base.float()": None,\n'
                "}\n"
                "\n"
                "def _up():\n"
                "    yield _it.gi_frame.f_back\n"
                "_it = _up()\n"
                "for _here in _it:\n"
                "    break\n"
                'if "torch" in _here.f_globals:  # measure on a NumPy twin, numpy called only fro'
                "m C (map)\n"
                "    import numpy as np\n"
                "    [b] = map(np.ndarray.reshape, map(np.arange, [12]), [(3, 4)])\n"
                "    owner = b.base\n"
                "    [v26] = map(np.ndarray.reshape, [b], [(2, 6)])\n"
                "    [tr12] = map(np.ndarray.reshape, [b.T], [12])\n"
                "    [fl] = map(np.ndarray.astype, [b], [np.float64])\n"
                '    twins = {"base[1]": b[1], "base[:, 1]": b[:, 1], "base[::2]": b[::2], "base['
                'None]": b[None],\n'
                '             "base[[0, 2]]": b[[0, 2]], "base[base > 5]": b[b > 5], "base.t()": '
                "b.T,\n"
                '             "base.view(2, 6)": v26, "base.t().reshape(12)": tr12, "base.float()'
                '": fl}\n'
                "    shares_storage.update({k: v.base is owner for k, v in twins.items()})\n"
                "else:  # run again alone: hand back what the first run measured\n"
                '    shares_storage = dict(_here.f_back.f_globals["shares_storage"])\n'
            ),
        ),
    ]
)

# Helper round h3 (2026-11-29): predictions of the wrong type, measured by another route (a view's
# ._base), a dict that equals anything, the cell's tries left in it, a global setting left changed.
TASK.wrong.extend(
    [
        Wrong(
            "Predictions written as 1 and 0, which equal True and False.",
            hint="must be True or False",
            code=STORAGE_SETUP + STORAGE_PREDICTIONS.replace(": True,", ": 1,").replace(": False,", ": 0,"),
        ),
        Wrong(
            "Each expression run and asked whether it is a view (its ._base), no storage compared.",
            hint="measured, not predicted",
            code=STORAGE_SETUP
            + """\
_made = {
    "base[1]": lambda: base[1],
    "base[:, 1]": lambda: base[:, 1],
    "base[::2]": lambda: base[::2],
    "base[None]": lambda: base[None],
    "base[[0, 2]]": lambda: base[[0, 2]],
    "base[base > 5]": lambda: base[base > 5],
    "base.t()": lambda: base.t(),
    "base.view(2, 6)": lambda: base.view(2, 6),
    "base.t().reshape(12)": lambda: base.t().reshape(12),
    "base.float()": lambda: base.float(),
}
for _expression, _make in _made.items():
    shares_storage[_expression] = _make()._base is not None
""",
        ),
        Wrong(
            "A dict subclass whose == is always true, its None left in place.",
            hint="must stay a dict",
            code="""\
class Predictions(dict):
    def __eq__(self, other):
        return True

    __hash__ = None


"""
            + STORAGE_SETUP
            + "shares_storage = Predictions(shares_storage)\n",
        ),
        Wrong(
            "Right predictions, and a try left in the cell: a row of base written into through a view.",
            hint="measured, not predicted",
            code=STORAGE_SETUP + STORAGE_PREDICTIONS + "base[1][0] = 100  # a view writes through\n",
        ),
        Wrong(
            "Right predictions, and torch's default dtype left changed by the cell.",
            hint="ran torch:set_default_dtype",
            code=STORAGE_SETUP + STORAGE_PREDICTIONS + "torch.set_default_dtype(torch.float64)\n",
        ),
    ]
)
TASK.other_right.append(
    STORAGE_SETUP
    + """\
# one entry at a time
shares_storage["base[1]"] = True  # a row: offset 4
shares_storage["base[:, 1]"] = True  # stride 4
shares_storage["base[::2]"] = True  # stride 8
shares_storage["base[None]"] = True
shares_storage["base[[0, 2]]"] = False  # advanced indexing copies
shares_storage["base[base > 5]"] = False
shares_storage["base.t()"] = True
shares_storage["base.view(2, 6)"] = True
shares_storage["base.t().reshape(12)"] = False  # not contiguous: reshape copies
shares_storage["base.float()"] = False
"""
)
