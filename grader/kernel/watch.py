"""The Watch: a record of what actually ran inside a ``with`` block, below Python names.

Rules that cannot be seen in an answer's outputs (no autograd, no torch.optim, no
clip_grad_norm_, no collective, no search, no loop) are checked from a Watch: the aten and
c10d operations that ran (a ``TorchDispatchMode``) and the Python and C functions of torch,
NumPy and coursekit that executed (``sys.setprofile``), in the calling thread and in every
thread started after the setup (threads.py). A reference captured before the check, or a
private entry point, runs the same code and shows up all the same. Torch called by the
notebook's code where its operations reach no mode of the watch (dispatch to Python switched
off with ``torch._C._DisableTorchDispatch``, an ``_ExcludeDispatchKeyGuard``, the modes
popped, or inside a custom operator's own kernel) fails the watch: that work would run
unrecorded; so does an answer that empties the record itself (records.py).
"""

from __future__ import annotations

import os
import sys
import threading
import types
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
from torch._C import DispatchKey
from torch._ops import HigherOrderOperator
from torch.utils._python_dispatch import TorchDispatchMode

from grader.kernel import active, containment, copies, dispatch, lazy_dynamo, records, threads
from grader.kernel.authors import Authors, course_file
from grader.kernel.rules import WATCHED_PACKAGES

# torch.ops.<namespace>.<name>(...) and its overloads: a call names the operator itself, even
# one that reaches the dispatcher (and a dispatch mode) only as the operations it is made of.
_OPERATOR_CALLS = {torch._ops.OpOverload.__call__.__code__, torch._ops.OpOverloadPacket.__call__.__code__}
# Where torch turns a tensor into text (print, str, repr, an f-string): the code of its own
# Tensor.__repr__ and Tensor.__format__, taken before any answer runs (a function's __code__
# can be replaced; these objects cannot). Printing reads the values (.tolist, .item) and asks
# autograd's forward mode for a dual tensor: torch's work, not the answer's.
_PRINTING = frozenset({torch.Tensor.__repr__.__code__, torch.Tensor.__format__.__code__})
# What printing does that is still recorded: reading a tensor's values into Python. A check
# that forbids it cannot tell a debug print from ``json.loads(repr(lengths)[7:-1])``, an
# answer that reads the values through torch's printing.
_READS_WHEN_PRINTING = frozenset({"torch.Tensor.tolist", "torch.Tensor.item", "torch.Tensor.numpy"})
# The recorder's own code that calls torch's functions while an operation is recorded (the
# address of the memory an in-place operation writes into): the grader's reads, not the
# learner's. An answer's ``mask &= other`` made 1.4's check say that it read lengths' values.
_RECORDERS_OWN = frozenset({dispatch.storage.__code__})


def _package_roots() -> list[tuple[str, str]]:
    """(folder + os.sep, package) of each watched package that is installed."""
    roots = []
    for package in WATCHED_PACKAGES:
        module = sys.modules.get(package)
        path = getattr(module, "__file__", None)
        if path:
            roots.append((os.path.realpath(os.path.dirname(path)) + os.sep, package))
    return roots


_ROOTS: list[tuple[str, str]] = []
_FILES: dict[str, str] = {}


def _module_of_file(filename: str) -> str:
    """'torch.utils.data.distributed' for a file of a watched package, '' else."""
    if len(_ROOTS) < sum(package in sys.modules for package in WATCHED_PACKAGES):  # one imported since
        _ROOTS[:] = _package_roots()
    if filename not in _FILES:
        _FILES[filename] = os.path.realpath(filename)
    path = _FILES[filename]
    for root, package in _ROOTS:
        if path.startswith(root) and path.endswith(".py"):
            parts = [package, *path[len(root) : -3].split(os.sep)]
            return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    return ""


def _code_label(frame: types.FrameType, cache: dict[types.CodeType, str], unnamed: set[types.CodeType]) -> str:
    """'torch.optim.adamw:_single_tensor_adamw' for a function of torch, NumPy or coursekit
    (named by the module it runs in, wherever a reference to it was taken; or by the file its
    code comes from, where that code runs with other globals: types.FunctionType(torch's
    function.__code__, globals())), '' else."""
    code = frame.f_code
    label = cache.get(code)
    if label is None:
        module = frame.f_globals.get("__name__")
        if not (isinstance(module, str) and module.startswith(WATCHED_PACKAGES)):
            module = _module_of_file(code.co_filename)
        label = f"{module}:{code.co_qualname}" if module else ""
        cache[code] = label
        if not label:  # the learner's, a library's, or a copy of torch's (copies.py)
            unnamed.add(code)
    return label


def _private(label: str) -> bool:
    """Whether a function's module (or a C function's owner) is private to torch
    ('torch._library.simple_registry:find_torch_dispatch_rule', 'torch._C._nn.linear'):
    torch's own machinery, which it may call back at any time (once per operation while a
    dispatch mode records, once only where it caches)."""
    private = _PRIVATE.get(label)  # asked at every call while a Watch records: kept per label
    if private is None:
        module = label.split(":")[0] if ":" in label else label.rpartition(".")[0]
        private = _PRIVATE[label] = any(part.startswith("_") for part in module.split("."))
    return private


_PRIVATE: dict[str, bool] = {}


def _c_label(function: Any, cache: dict[tuple[Any, ...], str]) -> str:
    """'torch.arange', 'torch.Tensor.reshape', 'numpy.empty' for a builtin function or method of
    torch or NumPy; '' for anything else (len, math.log2, dict.update). ``cache``: the labels
    this Watch worked out, by what they are made of (one Watch's own: a class renamed later
    is named anew by the next)."""
    try:
        owner = getattr(function, "__self__", None)
        name = getattr(function, "__name__", "?")
        if owner is None or isinstance(owner, types.ModuleType):
            key: tuple[Any, ...] = (owner, name, getattr(function, "__module__", None))
        elif isinstance(owner, type) or type(owner).__module__.startswith("pybind11"):
            key = (owner, name)  # a class's own method; a pybind11 function by its record
        else:
            key = (type(owner), name)  # a method of an instance: named by its class
        label = cache.get(key)
        if label is None:
            label = cache[key] = _c_label_of(function, owner, name)
    except Exception:  # noqa: BLE001 - whatever a learner's object does, the profiler must not raise
        return ""
    return label


def _c_label_of(function: Any, owner: Any, name: str) -> str:
    # A pybind11 function's __self__ is its record: named by its module ('torch._C._nn.linear').
    if owner is None or isinstance(owner, types.ModuleType) or type(owner).__module__.startswith("pybind11"):
        module = getattr(function, "__module__", None) or getattr(owner, "__name__", "") or ""
        label = f"{module}.{name}"
    else:
        kind = owner if isinstance(owner, type) else type(owner)
        label = f"{kind.__module__}.{kind.__qualname__}.{name}"
    return label if label.startswith(WATCHED_PACKAGES) else ""


class _OpRecorder(TorchDispatchMode):
    """Records every aten / c10d operation that runs (below autograd and every Python API),
    and the operations inside a higher-order operator (``torch.cond``, ``while_loop``...)."""

    # Without it torch refuses every higher-order operator under the mode: a correct answer
    # written with torch.cond would fail its check with torch's NotImplementedError.
    supports_higher_order_operators = True

    def __init__(self, watch: Watch) -> None:
        super().__init__()
        self.watch = watch

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        kwargs = kwargs or {}
        watch = self.watch
        if not watch._active:  # another thread's recorder, left until that thread runs again
            return func(*args, **kwargs)
        if (
            watch._printing
            and func is not torch.ops.aten._local_scalar_dense.default  # (a value read: see _READS_WHEN_PRINTING)
            and watch._under_printing(sys._getframe(1))
        ):
            return func(*args, **kwargs)
        watch._op(func, args, kwargs, torch.is_grad_enabled())
        thread = threading.get_ident()
        watch._handling[thread] += 1
        try:
            if isinstance(func, HigherOrderOperator):
                out = self._higher_order(func, args, kwargs)
            else:
                out = func(*args, **kwargs)
        finally:
            watch._handling[thread] -= 1
        watch._output(func, out)
        return out

    def _higher_order(self, func: HigherOrderOperator, args: tuple, kwargs: dict) -> Any:
        """Run a higher-order operator by its eager kernel, its functions (branches, body)
        run with the recorder on, so that what they do is recorded like any other operation
        (forbidden work inside ``torch.cond`` is seen). One without an eager kernel runs as
        torch would run it, its inner operations unrecorded, and the watch records that."""
        eager = func.py_kernels.get(DispatchKey.CompositeExplicitAutograd)
        if eager is None:
            self.watch.ops[f"{func} (its inner operations unrecorded)"] += 1
            return func(*args, **kwargs)

        def recorded(function: Callable[..., Any]) -> Callable[..., Any]:
            def run(*inner: Any, **named: Any) -> Any:
                with self:
                    return function(*inner, **named)

            return run

        return eager(*(recorded(a) if callable(a) and not isinstance(a, torch.Tensor) else a for a in args), **kwargs)


lazy_dynamo.imported_once(_OpRecorder)
dispatch.guard_switches()


@dataclass
class Watch:
    """What ran inside ``with grading.watch() as watch:`` (or in a recorded cell).

    - ``ops``: aten and c10d operations by name ('aten.add.Tensor', 'c10d.allreduce_.default');
    - ``outputs``: (operation, shape of its output) in order;
    - ``grad_ops``: operations that ran while autograd was recording;
    - ``collectives``: (operation, elements communicated) for every c10d operation;
    - ``written``: the storages (by address) an operation wrote into: an in-place operation's
      tensor or an ``out=``, through ``.data`` or a view too (``wrote_into`` reads it);
    - ``calls``: torch and NumPy functions called directly from the notebook's own code;
    - ``code``: every torch and NumPy function that executed, at any depth, Python
      ('torch.optim.adamw:adamw') or C ('torch._C._EngineBase.run_backward');
    - ``steps``: calls of any function made from the notebook's own code, torch's private
      machinery left out (a loop shows up as a count that grows with the input);
    - ``deepest``: the most Python calls nested at once below where the watch started, in the
      watched threads counted together (a recursion shows up as a depth that grows with its
      input, however the recursive function reads its input, and whatever recursion limit
      it set meanwhile);
    - ``asked``: the functions named by ``asks`` (label prefixes, as ``ran`` takes them) that
      the learner's code called, at any depth: the notebook's code, a module of the learner's
      (``types.ModuleType``, a file it wrote), or a library it handed the function to as a
      callback. torch's own code asks too (torch.cond asks whether it is compiled), and so do
      the grader's guards around torch's switches: those calls are not noted.
    """

    namespace: dict[str, Any] = field(repr=False)
    ops: Counter[str] = field(default_factory=records.GrowingCounter)
    outputs: list[tuple[str, tuple[int, ...]]] = field(default_factory=records.GrowingList)
    grad_ops: int = 0
    collectives: list[tuple[str, int]] = field(default_factory=records.GrowingList)
    written: set[int] = field(default_factory=records.GrowingSet)
    calls: Counter[str] = field(default_factory=records.GrowingCounter)
    code: set[str] = field(default_factory=records.GrowingSet)
    steps: int = 0
    deepest: int = 0
    asks: tuple[str, ...] = ()
    asked: list[str] = field(default_factory=records.GrowingList)
    tampered: str | None = None
    unrecorded: str | None = None  # torch the notebook's code ran out of the record's reach
    escaped: list[str] = field(default_factory=list)  # processes and threads started (containment.py)
    refuse: bool = True  # refuse them (a check's call) or only note them (a recorded cell)
    # Record through the profile function alone, with no dispatch mode on the stack: an
    # answer that looks for the grader (torch._C._len_torch_dispatch_stack()) and keeps a
    # forbidden route for when none is there takes it here, and ``code`` names it. ``ops``,
    # ``outputs``, ``written`` and ``collectives`` stay empty.
    quiet: bool = False
    _labels: dict[types.CodeType, str] = field(default_factory=dict, repr=False)
    _unnamed: set[types.CodeType] = field(default_factory=set, repr=False)  # code with no label
    _c_labels: dict[tuple[Any, ...], str] = field(default_factory=dict, repr=False)
    _importing: list[types.FrameType] = field(default_factory=list, repr=False)
    _printing: list[types.FrameType] = field(default_factory=list, repr=False)  # torch printing a tensor now
    _authors: Authors = field(default_factory=Authors, repr=False)
    _mode: _OpRecorder | None = field(default=None, repr=False)
    _profile: Callable[..., None] | None = field(default=None, repr=False)
    _previous_profile: Any = field(default=None, repr=False)
    _active: bool = field(default=False, repr=False)
    _threads: set[int] = field(default_factory=set, repr=False)
    _depth: int = field(default=0, repr=False)  # Python calls nested now, below where the watch started
    # thread -> how many operations its recorder is handling now (its mode popped meanwhile)
    _handling: Counter[int] = field(default_factory=Counter, repr=False)
    _grad_ops: int = field(default=0, repr=False)  # and _kept: the records as start() found them
    _kept: tuple[Any, ...] = field(default=(), repr=False)

    # -- reading the record ------------------------------------------------------------
    def ran(self, *prefixes: str) -> list[str]:
        """The functions and operations that ran whose names start with one of ``prefixes``,
        copies of torch's functions under other names included."""
        # copies, each taken in one step: a kernel thread's profile function may still be adding
        names = set(self.code) | set(self.ops) | set(copies.named(set(self._unnamed), prefixes))
        return sorted(name for name in names if name.startswith(prefixes))

    def anything(self) -> list[str]:
        """Every public torch or NumPy function called from the notebook's code, and every
        operation, that ran, by name: empty when none did."""
        return sorted({c for c in list(self.calls) if not _private(c)} | set(self.ops))

    def code_run(self) -> list[str]:
        """``code`` less what runs when memory is freed (a finalizer, a weakref callback of
        torch's): any cell may run that for objects an earlier cell made."""
        freed = ("torch.utils.weak",)
        code = list(self.code)
        return sorted(c for c in code if not c.startswith(freed) and "<locals>" not in c and "__del__" not in c)

    def wrote_into(self, *tensors: torch.Tensor) -> bool:
        """Whether an operation wrote into the memory of one of ``tensors``, even if it put
        the values back, by any route: ``x.data.mul_(2)`` leaves ``x._version`` as it was."""
        return any(address in self.written for address in map(dispatch.storage, tensors) if address)

    def __sub__(self, other: Watch) -> list[str]:
        """What ran here beyond what ran in ``other`` (counting repeats), as in anything()."""
        public = Counter({c: n for c, n in dict(self.calls).items() if not _private(c)})
        extra = (public - Counter(dict(other.calls))) + (Counter(dict(self.ops)) - Counter(dict(other.ops)))
        return sorted(extra)

    # -- recording -----------------------------------------------------------------------
    def _op(self, func: Any, args: tuple, kwargs: dict, grad_enabled: bool) -> None:
        name = str(func)
        self.ops[name] += 1
        if grad_enabled:
            self.grad_ops += 1
            self._grad_ops += 1  # its own count, beside the record an answer can reach
        for tensor in dispatch.written_arguments(func, args, kwargs):
            self.written.add(dispatch.storage(tensor))
        if name.startswith(("c10d.", "_c10d_functional.")):
            tensors = args[0] if args else ()
            tensors = tensors if isinstance(tensors, (list, tuple)) else [tensors]
            numel = sum(t.numel() for t in tensors if isinstance(t, torch.Tensor))
            self.collectives.append((name, numel))

    def _output(self, func: Any, out: Any) -> None:
        first = out[0] if isinstance(out, (list, tuple)) and out else out
        shape = tuple(first.shape) if isinstance(first, torch.Tensor) else ()
        self.outputs.append((str(func), shape))

    def _on_event(self, frame: types.FrameType, event: str, arg: Any) -> None:
        # (a return: the most frequent event; a generator's yield is one, its resumption a call)
        if event == "return":
            self._depth -= 1
            if not self._importing and not self._printing:
                return
        elif event == "call":
            self._depth += 1
            self.deepest = max(self.deepest, self._depth)
        if frame.f_code not in _RECORDERS_OWN:
            self._record(frame, event, arg)

    def _record(self, frame: types.FrameType, event: str, arg: Any) -> None:
        """One event of the profile function, recorded (see the class's fields)."""
        try:
            if event == "c_call" and threads.starts_unwatched(frame, arg):  # in an import too
                containment.note_unwatched_start()
            if self._in_import(frame, event) or self._printing_only(frame, event, arg):
                return
            if event == "call":
                label, code, from_notebook, asked = self._on_call(frame)
            elif event == "c_call":
                label = _c_label(arg, self._c_labels)
                code, from_notebook = frame, frame.f_globals is self.namespace
                self._count(label, from_notebook)
                self._note_ask(label, frame)
                # called by the learner's code, private or not; any C function where dispatch to
                # Python is off (sorted(map(torch.relu, xs)) calls torch from C)
                asked = bool(label) or dispatch.python_dispatch_off()
                label = label or getattr(arg, "__name__", "a C function")
            elif event == "c_return" and dispatch.python_dispatch_off():
                # a C function that switched dispatch to Python off and left it off
                label, code, from_notebook, asked = getattr(arg, "__name__", "a C function"), frame, False, True
            else:
                return
            # The learner's code: the notebook's, or its own under other globals (authors.py),
            # asked last, where the answer matters.
            if (
                asked
                and not self.quiet
                and self.unrecorded is None
                and code is not None
                and (from_notebook or self._learners(code))
            ):
                where = self._out_of_reach()
                if where:
                    self.unrecorded = f"{label} ran {where}"
        except Exception:  # noqa: BLE001, S110 - a profiler that raises is switched off by Python
            pass

    def _on_call(self, frame: types.FrameType) -> tuple[str, types.FrameType | None, bool, bool]:
        """A Python function's call: its label, the frame that called it, whether that is the
        notebook's, and whether torch called there must be within the record's reach."""
        operator = frame.f_code in _OPERATOR_CALLS
        if operator:  # torch.ops.aten.dropout(...): named by the operator
            self.code.add(operator_name := str(frame.f_locals.get("self")))
        label = _code_label(frame, self._labels, self._unnamed)
        code = frame.f_back  # the code that made the call
        from_notebook = code is not None and code.f_globals is self.namespace
        self._count(label, from_notebook and not (label and _private(label)))
        self._note_ask(label, code)
        # Called from the notebook's line (or from C that line called: torch's own
        # machinery too, which runs while a mode has popped itself to handle an op).
        asked = operator or label.startswith("torch._tensor:") or bool(label and not _private(label))
        return (operator_name if operator else label), code, from_notebook, asked

    def _note_ask(self, label: str, caller: types.FrameType | None) -> None:
        """Note ``label`` in ``asked`` where it is one of ``asks`` and the learner's code asked."""
        if self.asks and label.startswith(self.asks) and self._learner_asks(caller):
            self.asked.append(label)

    def _learner_asks(self, caller: types.FrameType | None) -> bool:
        """Whether the call made by ``caller`` is the learner's: the first frame up the stack
        that is not Python's or another library's (contextlib entering torch's context
        manager, unittest.mock calling the learner's side effect) runs the learner's code,
        not torch's nor the course's (the grader's guards around torch's switches). torch's
        and the course's code are known by their files, which a module of the learner's named
        ``torch.something`` does not change."""
        frame = caller
        while frame is not None:
            filename = frame.f_code.co_filename
            if _module_of_file(filename).startswith("torch") or course_file(filename):
                return False
            if not self._authors.library(frame):
                return True
            frame = frame.f_back
        return False

    def _out_of_reach(self) -> str:
        """Where torch, called now, would run out of this watch's record ('' where it would
        not): with dispatch to Python excluded, or this thread's mode of the watch off the
        stack, by the notebook's code or because the mode is handling an operation whose
        own kernel runs the notebook's code (a ``torch.library`` custom op). A C function of
        torch called from C (through ``map``) is not seen by the profile function, but any C
        function the notebook calls meanwhile (``sorted``) is, and its return; a C guard
        entered around a block that calls none (``[*map(torch.relu, xs)]``) is noted by
        dispatch.py. Open: such a guard reached around dispatch.py's (its base class)."""
        if dispatch.python_dispatch_off():
            return "with dispatch to Python switched off (torch._C._DisableTorchDispatch, _ExcludeDispatchKeyGuard)"
        modes = (torch._C._get_dispatch_stack_at(i) for i in range(torch._C._len_torch_dispatch_stack()))
        if any(isinstance(mode, _OpRecorder) and mode.watch is self for mode in modes):
            return ""
        if self._handling[threading.get_ident()]:
            return "inside an operator's own kernel (a torch.library custom op), where no record of operations reaches"
        return "with the dispatch modes popped off their stack"

    def _learners(self, frame: types.FrameType) -> bool:
        """Whether ``frame`` runs the learner's code: the notebook's, or code the learner runs
        under globals of its own (``exec(source, {})``: authors.py)."""
        return frame.f_globals is self.namespace or not self._authors.library(frame)

    def _printing_only(self, frame: types.FrameType, event: str, arg: Any) -> bool:
        """Whether the event is torch's printing's own work (``_in_printing``), not one of its
        reads of values into Python (``_READS_WHEN_PRINTING``), which are recorded."""
        if not self._in_printing(frame, event):
            return False
        return not (event == "c_call" and _c_label(arg, self._c_labels) in _READS_WHEN_PRINTING)

    def _in_printing(self, frame: types.FrameType, event: str) -> bool:
        """Whether the event belongs to torch printing a tensor: a learner's debug print costs
        nothing. Only torch's own code counts, from its Tensor.__repr__ or __format__ in; code of
        the learner's that runs meanwhile (a subclass's __repr__ or __torch_function__) is
        recorded as ever, and so are torch's printing functions called directly (no entry)."""
        if event == "call" and frame.f_code in _PRINTING:
            self._printing.append(frame)
            return True
        if not self._printing:
            return False
        if event == "return" and any(frame is entry for entry in self._printing):
            self._printing[:] = [entry for entry in self._printing if entry is not frame]
            return True
        return self._under_printing(frame)

    def _under_printing(self, frame: types.FrameType | None) -> bool:
        """Whether ``frame`` runs inside an entry of torch's printing with only library code
        (authors.py) between them."""
        while frame is not None:
            if frame.f_code in _PRINTING and any(frame is entry for entry in self._printing):
                return True
            if not self._authors.library(frame):
                return False
            frame = frame.f_back
        return False

    def _in_import(self, frame: types.FrameType, event: str) -> bool:
        """Whether the event belongs to a module being imported: a module torch imports the
        first time it needs it runs code that is nobody's answer."""
        if self._importing:
            if event == "return" and frame is self._importing[-1]:
                self._importing.pop()
            elif event == "call" and frame.f_code.co_name == "<module>":
                self._importing.append(frame)
            return True
        # (A recorded cell's own code runs as a '<module>' in the notebook's namespace: not an import.)
        if event == "call" and frame.f_code.co_name == "<module>" and not self._learners(frame):
            self._importing.append(frame)
            return True
        return False

    def _count(self, label: str, from_notebook: bool) -> None:
        """One function that ran (``label``: '' when not torch's, NumPy's or coursekit's);
        ``from_notebook``: called directly by the notebook's own code."""
        if label:
            self.code.add(label)
        if from_notebook:
            self.steps += 1
            if label:
                self.calls[label] += 1

    def recorder(self) -> TorchDispatchMode:
        """A dispatch mode that records into this watch (one per thread that runs while it records)."""
        return _OpRecorder(self)

    def start(self) -> None:
        threads.install_hooks()
        containment.install()
        self.escaped += containment.out_of_sight()
        self._threads = containment.live_threads()
        if not self.quiet:
            self._mode = _OpRecorder(self)
            self._mode.__enter__()
        self._previous_profile = sys.getprofile()
        self._profile = self._on_event
        self._active = True
        self._kept = tuple(getattr(self, name) for name in records.RECORDS)
        active.WATCHING.append(self)
        with containment.grader_profile():
            sys.setprofile(self._profile)

    def stop(self) -> None:
        profiled = sys.getprofile() is self._profile
        with containment.grader_profile():
            sys.setprofile(self._previous_profile)
        self.escaped += [e for e in containment.out_of_sight(self._threads) if e not in self.escaped]
        self._active = False
        active.WATCHING[:] = [w for w in active.WATCHING if w is not self]
        self.tampered = records.emptied(self, self._kept, self._grad_ops) or self.tampered
        if threading._profile_hook is not None:
            self.tampered = "the grader's record of what runs in other threads (threading.setprofile)"
        if not self.quiet:
            self._leave_mode()
        if not profiled:
            self.tampered = "the grader's record of the functions that run (sys.setprofile)"
        if containment.TORCH_LOOKED_UP:  # may be called at any time, unseen
            self.tampered = (
                "torch's record of the operators that run, through its own C++ functions looked up "
                f"with ctypes ({containment.TORCH_LOOKED_UP[0]})"
            )

    def _leave_mode(self) -> None:
        """Take this watch's dispatch mode off the stack, noting a mode left above it or its
        own gone."""
        mode = self._mode
        current = torch.utils._python_dispatch._get_current_dispatch_mode()
        if mode is not None and current is mode:
            mode.__exit__(None, None, None)
        elif mode is not None and any(
            m is mode for m in torch.utils._python_dispatch._get_current_dispatch_mode_stack()
        ):
            while torch._C._len_torch_dispatch_stack():  # a mode the answer left on top of ours
                if torch.utils._python_dispatch._pop_mode() is mode:
                    break
            self.tampered = "the grader's record of the operations that run (a mode your code left active)"
        else:
            self.tampered = "the grader's record of the operations that run (its TorchDispatchMode)"

    def __enter__(self) -> Watch:
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, traceback: object) -> None:
        self.stop()
        if self.escaped:  # whatever the block raised: the refusal is the reason
            raise AssertionError(f"your code started {self.escaped[0]} while the check ran: {containment.ADVICE}")
        if self.unrecorded:  # whatever the block raised: work out of sight is the reason
            raise AssertionError(
                f"your code ran torch where the grader cannot record it: {self.unrecorded}. Call torch "
                "directly, with nothing switched off or wrapped around it: work out of the check's sight "
                "earns nothing."
            )
        if self.tampered and kind is None:
            raise AssertionError(f"your code replaced {self.tampered}: answers must leave it running.")


@contextmanager
def watching(namespace: dict[str, Any], quiet: bool = False, asks: tuple[str, ...] = ()) -> Iterator[Watch]:
    """``with watching(globals()) as watch:`` outside a notebook (tests)."""
    watch = Watch(namespace, quiet=quiet, asks=asks)
    with watch:
        yield watch
