"""Exercise 6.4 of solutions/06_compile.ipynb: its other answers (see answers/__init__.py)."""

from .. import Task, Wrong
from .shared import UNSEEN, _exec_decorated

COUNT_FN = """\
def _measure():
    graphs = []
    f = torch.compile(lambda x, n: x * n + 1, backend=lambda gm, ex: graphs.append(gm) or gm.forward)
    for x, n in [(torch.randn(4), 2), (torch.randn(4), 2), (torch.randn(6), 2), (torch.randn(8), 2),
                 (torch.randn(8, dtype=torch.float64), 2), (torch.randn(8), 3)]:
        f(x, n)
    torch._dynamo.reset()
    return len(graphs)
"""


TASK = Task(
    alternative="""\
n_graphs = 1 + 1 + 1 + 1   # first call, dynamic size, float64, n = 3
""",
    wrong=[
        Wrong("One graph per call: reuse and dynamic sizes forgotten.", hint="Too many", code="n_graphs = 6\n"),
        Wrong(
            "One graph per distinct size: automatic dynamic shapes forgotten.",
            hint="go call by call",
            code="n_graphs = 5\n",
        ),
        Wrong(
            "The right number, counted by running torch.compile in a subprocess.",
            hint="code starting a process",
            code="""\
import subprocess
import sys

_count = \"\"\"
import torch
graphs = []
f = torch.compile(lambda x, n: x * n + 1, backend=lambda gm, ex: graphs.append(gm) or gm.forward)
for x, n in [(torch.randn(4), 2), (torch.randn(4), 2), (torch.randn(6), 2), (torch.randn(8), 2),
             (torch.randn(8, dtype=torch.float64), 2), (torch.randn(8), 3)]:
    f(x, n)
print(len(graphs))
\"\"\"
n_graphs = int(subprocess.run([sys.executable, "-c", _count], capture_output=True, text=True).stdout)
""",
        ),
        Wrong(
            "The right number, counted by running torch.compile in the answer cell.",
            hint="ran torch code",
            code="""\
_seen = []
_counted = torch.compile(lambda x: x + 1, backend=lambda gm, example_inputs: _seen.append(gm) or gm.forward)
_counted(torch.randn(2))
n_graphs = 3 + len(_seen)
""",
        ),
    ],
)

TASK.wrong.append(
    Wrong(
        "The right number, counted by a string of code exec'd as a decorator (no call in the "
        "cell), with the dispatch modes off and the calls made from a copy of the globals.",
        hint="The cell that sets n_graphs",
        code=_exec_decorated(COUNT_FN + "\n\n" + UNSEEN + "n_graphs = _found\n", "n_graphs = 0\n"),
    )
)

# A red team's 6.4 (2026-11-28): a value read back through a format string; a cell run by
# a cell that zeroed the session's counter.
TASK.wrong.extend(
    [
        Wrong(
            ("reads the kernel's value back through a format string when run alone (measured elsewhere)"),
            hint="measured, not predicted",
            code=(
                'n_graphs = 4 if "<module" in f"{__builtins__}" else int("{0.__globals__[ast].sys'
                '.modules[grader.kernel.session]._SESSION.namespace[n_graphs]}".format(print))'
            ),
        ),
        Wrong(
            ("measured in the cell, then written by a cell it runs, with the session's counter zeroed"),
            hint="a cell run from inside another cell",
            code=(
                "_seen = []\n"
                "torch._dynamo.reset()\n"
                "_f = torch.compile(lambda x, n: x * n + 1, backend=lambda gm, ex: _seen.append(g"
                "m) or gm.forward)\n"
                "for _a in [(torch.randn(4), 2), (torch.randn(4), 2), (torch.randn(6), 2), (torch"
                ".randn(8), 2),\n"
                "           (torch.randn(8, dtype=torch.float64), 2), (torch.randn(8), 3)]:\n"
                "    _f(*_a)\n"
                "torch._dynamo.reset()\n"
                "_grading._running = 0\n"
                'get_ipython().run_cell(f"n_graphs = {len(_seen)}")\n'
            ),
        ),
    ]
)

# Helper round h3 (2026-11-29): a count of the wrong type, one that equals anything, and a wrong count
# made true by Dynamo's settings changed in the cell.
TASK.wrong.extend(
    [
        Wrong("The count written as a float.", hint="must be set to an int", code="n_graphs = 4.0\n"),
        Wrong(
            "The count as a NumPy integer.",
            hint="must be set to an int",
            code="import numpy as np\n\nn_graphs = np.int64(4)\n",
        ),
        Wrong(
            "An int subclass whose == is always true.",
            hint="must be set to an int",
            code="""\
class Count(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__


n_graphs = Count(0)
""",
        ),
        Wrong(
            "One graph per size predicted, and automatic dynamic shapes switched off to make it so.",
            hint="measured, not predicted",
            code="torch._dynamo.config.automatic_dynamic_shapes = False\nn_graphs = 5\n",
        ),
        Wrong(
            "No graph predicted, and Dynamo's stance set to force_eager to make it so.",
            hint="Dynamo's compile stance",
            code='torch.compiler.set_stance("force_eager")\nn_graphs = 0\n',
        ),
    ]
)
TASK.other_right.append("n_graphs: int = 4  # first call, the first new size, float64, n = 3\n")
