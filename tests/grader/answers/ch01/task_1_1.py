"""Exercise 1.1 of solutions/01_tensors.ipynb: its other answers (see answers/__init__.py)."""

from .. import Task, Wrong
from .shared import EQUALS_ANYTHING

# 1.1 and 1.2: the answers measured in code run by exec or eval, out of sight of the record of
# what ran: the checks read the cell's own code too.
SHAPES_BY_EVAL = """\
_f = eval("lambda l, r: tuple(torch.broadcast_shapes(l, r))", {"torch": torch})


def _try(l, r):
    try:
        return _f(l, r)
    except RuntimeError:
        return None


shape_a = _try((3, 1), (4,))
shape_b = _try((2, 3, 4), (3, 1))
shape_c = _try((5, 4), (5,))
shape_d = _try((8, 1, 6, 1), (7, 1, 5))
shape_e = _try((6, 1), (1, 4))
"""

SHAPES_BY_EXEC_WITHOUT_DISPATCH = """\
_ns = {"torch": torch}
exec(
    compile(
        '''
def shp(f):
    try:
        with torch._C._DisableTorchDispatch():
            return tuple(f().shape)
    except RuntimeError:
        return None
r = [shp(lambda: torch.ones(3, 1) + torch.ones(4)), shp(lambda: torch.ones(2, 3, 4) * torch.ones(3, 1)),
     shp(lambda: torch.ones(5, 4) + torch.ones(5)), shp(lambda: torch.ones(8, 1, 6, 1) + torch.ones(7, 1, 5)),
     shp(lambda: torch.arange(6.)[:, None] * torch.ones(4)[None, :])]
''',
        "<x>",
        "exec",
    ),
    _ns,
)
shape_a, shape_b, shape_c, shape_d, shape_e = _ns["r"]
"""

SHAPES_BY_NUMPY_IN_EXEC = """\
_ns = {}
exec(
    '''
import numpy as _np
def b(l, r):
    try:
        return tuple(int(n) for n in _np.broadcast_shapes(l, r))
    except ValueError:
        return None
r = [b((3, 1), (4,)), b((2, 3, 4), (3, 1)), b((5, 4), (5,)), b((8, 1, 6, 1), (7, 1, 5)), b((6, 1), (1, 4))]
''',
    _ns,
)
shape_a, shape_b, shape_c, shape_d, shape_e = _ns["r"]
"""


TASK = Task(
    alternative="""\
shape_a = torch.Size([3, 4])
shape_b = [2, 3, 4]
shape_c = None
shape_d = (8, 7, 6, 5)
shape_e = tuple([6, 4])
""",
    wrong=[
        Wrong(
            "Aligning the shapes from the left instead of the right.",
            hint="from the right",
            code="""\
shape_a = (3, 4)
shape_b = (2, 3, 4)
shape_c = (5, 4)
shape_d = (8, 7, 6, 5)
shape_e = (6, 4)
""",
        ),
        Wrong(
            "Shapes that compare equal to anything.",
            hint="tuple of ints",
            code=EQUALS_ANYTHING
            + """\
shape_a = shape_e = (Anything(),) * 2
shape_b = (Anything(),) * 3
shape_c = None
shape_d = (Anything(),) * 4
""",
        ),
        Wrong(
            "The shapes computed by running the expressions: right, but not predicted.",
            hint="computed, not predicted",
            code="""\
shape_a = (torch.ones(3, 1) + torch.ones(4)).shape
shape_b = tuple(torch.broadcast_shapes((2, 3, 4), (3, 1)))
shape_c = None
shape_d = (torch.ones(8, 1, 6, 1) + torch.ones(7, 1, 5)).shape
shape_e = tuple(torch.broadcast_shapes((6, 1), (1, 4)))
""",
        ),
        Wrong(
            "Floats for sizes, and the builtin all shadowed so that the type check passes.",
            hint="your code replaced the builtin all",
            code="""\
def all(items):
    return True


shape_a = (3.0, 4.0)
shape_b = (2.0, 3.0, 4.0)
shape_c = None
shape_d = (8.0, 7.0, 6.0, 5.0)
shape_e = (6.0, 4.0)
""",
        ),
        Wrong(
            "The shapes measured with torch.broadcast_shapes in eval'd code.",
            hint="with nothing computed",
            code=SHAPES_BY_EVAL,
        ),
        Wrong(
            "The expressions run in exec'd code with torch's dispatch switched off.",
            hint="computed, not predicted",
            code=SHAPES_BY_EXEC_WITHOUT_DISPATCH,
        ),
        Wrong(
            "The shapes measured with NumPy's broadcast_shapes in exec'd code.",
            hint="with nothing computed",
            code=SHAPES_BY_NUMPY_IN_EXEC,
        ),
    ],
)

# Helper round h3 (2026-11-29): sizes of the wrong type (floats, ints that equal anything), a shape
# measured where the cell's record does not reach (in a forked child, or when the check compares).
RIGHT_SHAPES = """\
shape_a = (3, 4)
shape_b = (2, 3, 4)
shape_c = None
shape_d = (8, 7, 6, 5)
shape_e = (6, 4)
"""
TASK.wrong.extend(
    [
        Wrong(
            "Sizes written as floats: torch.arange(6.) has 6.0 as its end, and 6.0 == 6.",
            hint="tuple of ints",
            code=RIGHT_SHAPES.replace("shape_e = (6, 4)", "shape_e = (6.0, 4.0)"),
        ),
        Wrong(
            "Sizes of an int subclass whose == is always true.",
            hint="shape_d must be a tuple of ints",
            code="""\
class Size(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__


"""
            + RIGHT_SHAPES.replace("shape_d = (8, 7, 6, 5)", "shape_d = (Size(0),) * 4"),
        ),
        Wrong(
            "A tuple subclass that measures the shape with torch when the check compares it, out of the cell's record.",
            hint="shape_a must be a tuple of ints",
            code="""\
class Measured(tuple):
    def __eq__(self, other):
        return tuple((torch.ones(3, 1) + torch.ones(4)).shape) == other

    __hash__ = tuple.__hash__


"""
            + RIGHT_SHAPES.replace("shape_a = (3, 4)", "shape_a = Measured((3, 4))"),
        ),
        Wrong(
            "The shapes measured in a forked child process and sent back through a pipe.",
            hint="code starting a process (os.fork)",
            code="""\
import os
import pickle


def _shape(make):
    try:
        return tuple(make().shape)
    except RuntimeError:
        return None


_read, _write = os.pipe()
if os.fork() == 0:
    _shapes = [
        _shape(lambda: torch.ones(3, 1) + torch.ones(4)),
        _shape(lambda: torch.ones(2, 3, 4) * torch.ones(3, 1)),
        _shape(lambda: torch.ones(5, 4) + torch.ones(5)),
        _shape(lambda: torch.ones(8, 1, 6, 1) + torch.ones(7, 1, 5)),
        _shape(lambda: torch.arange(6.0)[:, None] * torch.ones(4)[None, :]),
    ]
    os.write(_write, pickle.dumps(_shapes))
    os._exit(0)
os.waitpid(-1, 0)
shape_a, shape_b, shape_c, shape_d, shape_e = pickle.loads(os.read(_read, 4096))
os.close(_read)
os.close(_write)
""",
        ),
    ]
)
TASK.other_right.append(
    """\
# tuples written without parentheses
shape_a = 3, 4
shape_b = 2, 3, 4
shape_c = None  # 4 against 5: neither is 1
shape_d = 8, 7, 6, 5
shape_e = 6, 4
"""
)
