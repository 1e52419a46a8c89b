"""Further wrong answers to exercise 6.3 of solutions/06_compile.ipynb, after those of task_6_3.py."""

from .. import Wrong
from .shared import GATE_PYTHON

WRONG: list[Wrong] = []

WRONG.extend(
    [
        Wrong(
            "Both gates computed under torch.no_grad(): for an x that requires grad, the result "
            "is cut off from autograd (x * 2 and x - 1 carry x's gradient).",
            hint="autograd does not connect to x",
            code="""\
def gate_python(x, flag):
    with torch.no_grad():
        return x * 2 if flag else x - 1


def gate_tensor(x, flag):
    with torch.no_grad():
        return torch.where(flag, x * 2, x - 1)
""",
        ),
        Wrong(
            "gate_tensor computed from x.detach(): no gradient reaches x.",
            hint="autograd does not connect to x",
            code=GATE_PYTHON
            + """\


def gate_tensor(x, flag):
    y = x.detach()
    return torch.where(flag, y * 2, y - 1)
""",
        ),
        Wrong(
            "Computed in float64 and cast back: an int64 x beyond 2**53 is rounded.",
            hint="computed in x's dtype",
            code="""\
def gate_python(x, flag):
    y = x.double()
    return (y * 2 if flag else y - 1).to(x.dtype)


def gate_tensor(x, flag):
    y = x.double()
    return torch.where(flag, y * 2, y - 1).to(x.dtype)
""",
        ),
        Wrong(
            "gate_tensor works on x.view(-1): a transposed x raises.",
            hint="any layout included",
            code=GATE_PYTHON
            + """\


def gate_tensor(x, flag):
    y = x.view(-1)
    return torch.where(flag, y * 2, y - 1).view(x.shape)
""",
        ),
        Wrong(
            "gate_tensor branches with `if flag` for a float16 x: a graph break there, and one "
            "graph per flag value (no float16 x was compiled).",
            hint="not 1 (the flag a tensor",
            code=GATE_PYTHON
            + """\


def gate_tensor(x, flag):
    if x.dtype == torch.float16:
        return x * 2 if flag else x - 1
    return torch.where(flag, x * 2, x - 1)
""",
        ),
        Wrong(
            "gate_tensor branches with `if flag` for a complex x: a graph break there (no complex x was compiled).",
            hint="not 1 (the flag a tensor",
            code=GATE_PYTHON
            + """\


def gate_tensor(x, flag):
    if x.is_complex():
        return x * 2 if flag else x - 1
    return torch.where(flag, x * 2, x - 1)
""",
        ),
    ]
)

WRONG.append(
    Wrong(
        "gate_tensor's `if flag` hidden in a function under torch.compiler.disable, + 0 after it: "
        "one graph (the + 0) and no break reported, but the choice runs in Python, outside the "
        "graph, at every call.",
        hint="fullgraph=True",
        code=GATE_PYTHON
        + """\


@torch.compiler.disable
def _pick(x, flag):
    return x * 2 if flag else x - 1


def gate_tensor(x, flag):
    return _pick(x, flag) + 0
""",
    )
)

# A red team's 6.3 (2026-11-28): Dynamo's config changed out of the check's sight, to fool 6.4's count.
WRONG.extend(
    [
        Wrong(
            (
                "Right gates, and automatic dynamic shapes switched off behind a config copy that"
                " hides it, so that 6.4's check counts what a wrong prediction says."
            ),
            hint="ConfigModule.get_config_copy",
            code=(
                "def gate_python(x, flag):\n"
                "    return x * 2 if flag else x - 1\n"
                "\n"
                "\n"
                "def gate_tensor(x, flag):\n"
                "    return torch.where(flag, x * 2, x - 1)\n"
                "\n"
                "\n"
                "import torch.utils._config_module as _cm\n"
                "_real_copy = _cm.ConfigModule.get_config_copy\n"
                "\n"
                "\n"
                "def _as_found(self):\n"
                "    d = _real_copy(self)\n"
                '    if "automatic_dynamic_shapes" in d:\n'
                '        d["automatic_dynamic_shapes"] = True\n'
                "    return d\n"
                "\n"
                "\n"
                "torch._dynamo.config.automatic_dynamic_shapes = False\n"
                "_cm.ConfigModule.get_config_copy = _as_found\n"
            ),
        ),
    ]
)

# A red team's 6.3 (2026-11-28, second round).
WRONG.extend(
    [
        Wrong(
            ("gate_tensor flips the caller's flag in place"),
            hint="gate_tensor called twice with the same flag,",
            code=(
                "\n"
                "def gate_python(x, flag):\n"
                "    return x * 2 if flag else x - 1\n"
                "\n"
                "\n"
                "def gate_tensor(x, flag):\n"
                "    out = torch.where(flag.clone(), x * 2, x - 1)\n"
                "    flag.logical_not_()  # the caller's flag flipped in place\n"
                "    return out\n"
            ),
        ),
    ]
)

# A red team's 6.3 (ninth round): a 0-d integer x made int64, a size threshold, and Dynamo's
# automatic dynamic shapes or its stance changed to fool 6.4's count.
WRONG.extend(
    [
        Wrong(
            "x - torch.tensor(1): a 0-d integer x meets a 0-d int64 tensor and becomes int64 "
            "(tensor(-128, int8) - 1 gives -129, not 127 as x - 1 does in int8).",
            hint="or torch.tensor(1)",
            code="""\
def gate_python(x, flag):
    return x * 2 if flag else x - torch.tensor(1)


def gate_tensor(x, flag):
    return torch.where(flag, x * 2, x - torch.tensor(1))
""",
        ),
        Wrong(
            "gate_tensor takes an `if` on the flag for a large x only (over 1024 entries): the "
            "graph breaks there, and every x the check compiled was smaller.",
            hint="gate_tensor branches on x's size",
            code=GATE_PYTHON
            + """\


def gate_tensor(x, flag):
    if x.numel() > 1024:  # big tensors: compute only the branch taken
        return x * 2 if flag else x - 1
    return torch.where(flag, x * 2, x - 1)
""",
        ),
        Wrong(
            "Right gates, and a method of torch._dynamo.pgo's FrameStateSizeEntry replaced so that "
            "no size ever becomes dynamic: 6.4's check would count a graph per size.",
            hint="your code replaced torch._dynamo.pgo.FrameStateSizeEntry.is_size_dynamic",
            code=GATE_PYTHON
            + """\


def gate_tensor(x, flag):
    return torch.where(flag, x * 2, x - 1)


_entry = torch._dynamo.pgo.FrameStateSizeEntry
_entry.is_size_dynamic = lambda self, dim: False
""",
        ),
        Wrong(
            "Right gates, and gate_tensor sets Dynamo's stance to eager_on_recompile when it is "
            "called twice with the same flag (6.3's hidden check does), asking "
            "torch.compiler.is_compiling() to do it only in eager: 6.4's check would then count "
            "no recompilation.",
            hint="asks whether it is being compiled or watched (torch.compiler:is_compiling)",
            code="""\
_seen_flag = []


def gate_python(x, flag):
    return x * 2 if flag else x - 1


def gate_tensor(x, flag):
    if not torch.compiler.is_compiling():
        if _seen_flag and _seen_flag[-1] is flag:
            torch.compiler.set_stance("eager_on_recompile")
        _seen_flag[:] = [flag]
    return torch.where(flag, x * 2, x - 1)
""",
        ),
        Wrong(
            "Right gates, and Dynamo's stance set to eager_on_recompile in the cell itself.",
            hint="torch.compiler.set_stance",
            code=GATE_PYTHON
            + """\


def gate_tensor(x, flag):
    return torch.where(flag, x * 2, x - 1)


torch.compiler.set_stance("eager_on_recompile")
""",
        ),
    ]
)


# Round 10 (2026-11-28): complex128 and a 5-d x, compiled.
WRONG.extend(
    [
        Wrong(
            ("complex128 only: gate_tensor takes the flag with bool() (a graph break and a recompile per value)"),
            hint="no branch of your own for some of them",
            code="""\
def gate_python(x, flag):
    return x * 2 if flag else x - 1


def gate_tensor(x, flag):
    if x.dtype == torch.complex128:
        return x * 2 if bool(flag) else x - 1
    return torch.where(flag, x * 2, x - 1)
""",
        ),
        Wrong(
            ("5-D x: gate_tensor takes the flag with bool()"),
            hint="no branch of your own for some of them",
            code="""\
def gate_python(x, flag):
    return x * 2 if flag else x - 1


def gate_tensor(x, flag):
    if x.dim() >= 5:
        return x * 2 if bool(flag) else x - 1
    return torch.where(flag, x * 2, x - 1)
""",
        ),
    ]
)


# Round 10: a float64 x that requires grad.
WRONG.extend(
    [
        Wrong(
            ("float64 that requires grad: computed on x.detach()"),
            hint="returns a result that autograd does not connect to x",
            code="""\
def gate_python(x, flag):
    if x.dtype == torch.float64:
        x = x.detach()
    return x * 2 if flag else x - 1


def gate_tensor(x, flag):
    if x.dtype == torch.float64:
        x = x.detach()
    return torch.where(flag, x * 2, x - 1)
""",
        ),
    ]
)
WRONG.append(
    Wrong(
        "gate_tensor's result detached from x for a transpose (a non-contiguous x) that requires grad.",
        hint="returns a result that autograd does not connect to x",
        code="""\
def gate_python(x, flag):
    return x * 2 if flag else x - 1


def gate_tensor(x, flag):
    out = torch.where(flag, x * 2, x - 1)
    return out if x.is_contiguous() else out.detach().requires_grad_(x.requires_grad)
""",
    )
)


# Helper round (2026-11-29): eager code other than the compiled one (the flag read where nothing
# compiles, or where no dispatch mode watches), results kept per x, and an index by the flag.
WRONG.extend(
    [
        Wrong(
            "gate_tensor reads the flag with an `if` unless Dynamo is compiling: the compiled "
            "graph is right, the eager call reads the flag's value.",
            hint="reads the flag's value into Python when it runs eagerly",
            code=GATE_PYTHON
            + """\


def gate_tensor(x, flag):
    if torch.compiler.is_compiling():
        return torch.where(flag, x * 2, x - 1)
    return x * 2 if flag else x - 1  # eager: the flag is known
""",
        ),
        Wrong(
            "gate_tensor reads the flag with an `if` where nothing compiles and no dispatch mode "
            "is on the stack (the grader's record of the operations).",
            hint="asks whether it is being compiled or watched",
            code=GATE_PYTHON
            + """\


def gate_tensor(x, flag):
    if torch.compiler.is_compiling() or torch._C._len_torch_dispatch_stack():
        return torch.where(flag, x * 2, x - 1)
    return x * 2 if flag else x - 1
""",
        ),
        Wrong(
            "gate_python keeps its results by (x, x._version, flag) in an lru_cache: an x changed "
            "through .data (the version stays) gets the old result.",
            hint="gave an earlier call's result for an x changed in place",
            code="""\
import functools


@functools.lru_cache(maxsize=None)
def _gate(x, version, flag):
    return x * 2 if flag else x - 1


def gate_python(x, flag):
    if x.requires_grad:
        return x * 2 if flag else x - 1
    return _gate(x, x._version, flag)


def gate_tensor(x, flag):
    return torch.where(flag, x * 2, x - 1)
""",
        ),
        Wrong(
            "gate_python keeps its results in a dict by (id(x), flag): Dynamo compiles the "
            "lookup too, and the graphs are not one per flag value.",
            hint="one graph per value of the Python flag",
            code="""\
_results = {}


def gate_python(x, flag):
    # the same tensor asked again: its result, without computing it again
    if x.requires_grad:
        return x * 2 if flag else x - 1
    if (id(x), flag) not in _results:
        _results[id(x), flag] = (x, x * 2 if flag else x - 1)
    return _results[id(x), flag][1]


def gate_tensor(x, flag):
    return torch.where(flag, x * 2, x - 1)
""",
        ),
        Wrong(
            "gate_tensor keeps its results by (id(x), bool(flag)) where nothing compiles: the "
            "eager call reads the flag's value.",
            hint="reads the flag's value into Python when it runs eagerly",
            code="""\
_results = {}


def _cached(x, key, compute):
    if torch.compiler.is_compiling() or x.requires_grad:
        return compute()
    if (id(x), key) not in _results:
        _results[id(x), key] = (x, compute())
    return _results[id(x), key][1]


def gate_python(x, flag):
    return _cached(x, ("py", bool(flag)), lambda: x * 2 if flag else x - 1)


def gate_tensor(x, flag):
    if torch.compiler.is_compiling():
        return torch.where(flag, x * 2, x - 1)
    return _cached(x, ("t", bool(flag)), lambda: torch.where(flag, x * 2, x - 1))
""",
        ),
        Wrong(
            "gate_tensor picks from torch.stack([x - 1, x * 2]) by the flag as an index: compiled, "
            "the index is a value read from a tensor, and the graph is not captured whole.",
            hint="is not captured whole",
            code=GATE_PYTHON
            + """\


def gate_tensor(x, flag):
    return torch.stack([x - 1, x * 2])[flag.long()]
""",
        ),
    ]
)


def _gate_asking(condition: str, helpers: str = "") -> str:
    """Right compiled, the flag read eagerly unless ``condition`` (an ask: compiling, or a
    dispatch mode on the stack) says that something watches."""
    return (
        GATE_PYTHON
        + helpers
        + f"""

def gate_tensor(x, flag):
    if {condition}:
        return torch.where(flag, x * 2, x - 1)
    return x * 2 if flag else x - 1  # eager and unwatched: the flag read
"""
    )


# Helper round h3 (2026-11-29): the ask made where the gate's own calls do not show it: in a helper
# with a module's globals, through torch's private names, a thread-local dispatch key, a callback.
WRONG.extend(
    [
        Wrong(
            "gate_tensor asks through a helper whose globals are a module's (types.ModuleType), "
            "so that the asks are not the notebook's own calls.",
            hint="asks whether it is being compiled or watched (torch._C._len_torch_dispatch_stack)",
            code=_gate_asking(
                "watched()",
                """
import types

_helpers = types.ModuleType("gate_helpers")
vars(_helpers).update(vars(types))  # a module's globals, its builtins included (Dynamo reads them)
_helpers.torch = torch


def _watched():
    return torch.compiler.is_compiling() or torch._C._len_torch_dispatch_stack() > 0


watched = types.FunctionType(_watched.__code__, vars(_helpers), "watched")
""",
            ),
        ),
        Wrong(
            "gate_tensor asks through torch's private names: torch._dynamo.is_compiling() and "
            "torch.utils._python_dispatch._get_current_dispatch_mode().",
            hint="asks whether it is being compiled or watched (torch._dynamo.external_utils:is_compiling)",
            code=_gate_asking(
                "torch._dynamo.is_compiling() or torch.utils._python_dispatch._get_current_dispatch_mode() is not None"
            ),
        ),
        Wrong(
            "gate_tensor asks whether the Python dispatch key is in the thread's set, which a mode on "
            "the stack puts there.",
            hint="asks whether it is being compiled or watched (torch._C._dispatch_tls_is_dispatch_key_included)",
            code=_gate_asking(
                "torch._dynamo.is_compiling() "
                "or torch._C._dispatch_tls_is_dispatch_key_included(torch._C.DispatchKey.Python)"
            ),
        ),
        Wrong(
            "gate_tensor reads the dispatch stack through a Mock's side_effect: the call is made by "
            "unittest.mock's code.",
            hint="asks whether it is being compiled or watched (torch._C._len_torch_dispatch_stack)",
            code=_gate_asking(
                "_asks()",
                """
from unittest import mock

_stack = mock.Mock(side_effect=torch._C._len_torch_dispatch_stack)


def _asks():
    return torch._dynamo.is_compiling() or _stack() > 0
""",
            ),
        ),
    ]
)
