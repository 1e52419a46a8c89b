"""What several tasks of solutions/06_compile.ipynb use: right cells their wrong answers change, setups, helpers."""

# 6.3's right pair (the solution's): its wrong answers change gate_tensor or gate_python.
GATE_PYTHON = """\
def gate_python(x, flag):
    return x * 2 if flag else x - 1
"""

# Measuring a prediction in a string run by exec, applied as a decorator: the cell has no
# call and reads no other cell's name, and the string's code runs out of the watch's sight
# (the dispatch modes off, its calls made from a copy of the globals).
UNSEEN = """\
import types

from torch.utils._python_dispatch import _disable_current_modes

with _disable_current_modes():
    _found = types.FunctionType(_measure.__code__, dict(globals()))()
"""


def _exec_decorated(script: str, literal: str) -> str:
    """A cell that sets the answers literally, then overwrites them with what ``script`` measures."""
    return f"_MEASURE = {script!r}\n{literal}exec = exec\n\n\n@exec\n@(lambda f: _MEASURE)\ndef _():\n    pass\n"
