"""Keep the checks of an exercise notebook honest inside the learner's kernel.

Checks run in the same Python process as the learner's answers, so an answer could make
later checks pass without being right: rebind ``torch.allclose`` (also through another
name for torch), shadow a builtin the checks call (``def all(x): return True``), redefine
a helper from a setup cell that a check compares with, or hook IPython so that every later
check cell becomes its print line. The static scan (scan.py) is a tripwire for the obvious
spellings; this module is what the checks themselves rely on:

- ``Grading(globals())``, made at the end of the first setup cell, before any answer runs,
  takes the checks' own references (``equal``, ``allclose``, ``assert_close``) and a
  snapshot of what they rely on: the builtins, torch's functions and classes, the names the
  setup cells defined (``keep()`` at the end of each later setup cell adds that cell's),
  and IPython's machinery (input transformers, AST transformers, hooks);
- before every check cell runs (an IPython AST transformer, the last step before the cell
  is executed) it compares all of that with the snapshot: anything replaced is put back
  and the cell is replaced by a failing assertion whose message says what the learner's
  code replaced; the cell's code is also compared with what IPython makes of its source,
  so an input transformer that rewrote the check is caught even though it ran first;
- ``passed("1.4")`` ends a check: it checks the same again (an answer called by the check
  may have replaced something while it ran) and prints ``Exercise 1.4 passed``;
  ``done()`` ends a hidden check the same way, silently;
- rules that cannot be seen in an answer's outputs (no autograd, no torch.optim, no
  clip_grad_norm_, no collective, no search, no loop) are checked from a ``Watch``
  (``with _grading.watch() as watch:`` around the call): a record of what actually ran
  below Python attributes, the aten and c10d operations (a ``TorchDispatchMode``) and the
  Python and C functions of torch, NumPy and coursekit that executed (``sys.setprofile``),
  in the calling thread and in every thread started after the setup (a ``threading.Thread``,
  a ``concurrent.futures`` pool: both are thread-local, so each such thread records for
  itself while a Watch runs). A reference captured before the check, or a private entry
  point, runs the same code and shows up all the same;
- predictions that must be made without running anything are answers that are not
  functions: ``Grading(globals(), record=("shape_a", ...))`` records, with a Watch, every
  cell that sets one of these names, and the check reads ``ran_while_setting(...)``.

A notebook's first setup cell run again (in JupyterLab; grading always starts a fresh
kernel) makes a new session that takes over from the old one, keeping as the setup's only
the names that cell defines.

Nothing here makes a kernel safe against code written to defeat it: a learner's code can
still reach anything in its own process. It makes the checks immune to the known ways of
making them lie, and turns each into a clear failure of the task that did it.
"""

from __future__ import annotations

import _thread
import ast
import builtins
import os
import sys
import threading
import types
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

_MISSING = object()
_SESSION: Grading | None = None  # the kernel's session: a newer one (the setup run again) replaces it

# What a learner is told after the name of what their code replaced.
ADVICE = (
    "the checks rely on it as the setup left it. Give your own variables and functions names of their own, "
    "and never assign to torch's (or another module's) functions, not even through another name for the "
    "module. The grader has put the original back for the checks that follow."
)

# Builtins that ipykernel itself replaces while a cell runs.
KERNEL_BUILTINS = {"input", "getpass"}
# IPython's names in a kernel's namespace, never kept as a setup's helpers.
_IPYTHON_NAMES = {"In", "Out", "get_ipython", "exit", "quit", "open", "_dh", "_ih", "_oh", "_", "__", "___"}

# Modules whose functions, classes and other objects (not their plain data: ints, strings,
# lists, dicts, which change legitimately) the checks rely on; those not imported yet when
# the snapshot is taken are left out.
WATCHED_MODULES = (
    "_thread",
    "threading",
    "math",
    "copy",
    "io",
    "itertools",
    "inspect",
    "textwrap",
    "numpy",
    "torch",
    "torch.functional",
    "torch.nn",
    "torch.nn.functional",
    "torch.nn.init",
    "torch.nn.utils",
    "torch.nn.utils.clip_grad",
    "torch.nn.modules.module",
    "torch.nn.parallel",
    "torch.autograd",
    "torch.autograd.graph",
    "torch.autograd.function",
    "torch.autograd.functional",
    "torch.testing",
    "torch.linalg",
    "torch.optim",
    "torch.amp",
    "torch.amp.grad_scaler",
    "torch.amp.autocast_mode",
    "torch.utils.checkpoint",
    "torch.utils.data",
    "torch.overrides",
    "torch.utils._python_dispatch",
    "torch.distributed",
    "torch.distributed.distributed_c10d",
)
# Modules whose classes are watched too (their methods and class attributes).
CLASS_MODULES = ("torch.nn", "torch.optim", "torch.amp", "torch.utils.data", "torch.nn.parallel")
# Module-level registries of global hooks: a hook there changes every module's forward.
GLOBAL_MODULE_HOOKS = (
    "_global_forward_hooks",
    "_global_forward_pre_hooks",
    "_global_backward_hooks",
    "_global_backward_pre_hooks",
    "_global_forward_hooks_with_kwargs",
    "_global_forward_hooks_always_called",
    "_global_module_registration_hooks",
    "_global_parameter_registration_hooks",
    "_global_buffer_registration_hooks",
)
# Methods that change the container they are called on.
MUTATING_METHODS = {
    "update",
    "setdefault",
    "pop",
    "popitem",
    "clear",
    "append",
    "extend",
    "insert",
    "remove",
    "add",
    "discard",
}
# Methods of IPython's shell that decide what code a cell runs.
SHELL_METHODS = (
    "run_cell",
    "run_cell_async",
    "_run_cell",
    "should_run_async",
    "transform_cell",
    "transform_ast",
    "run_ast_nodes",
    "run_code",
)


def _plain_data(value: object) -> bool:
    """Values a module or class may change by itself (counters, caches, settings)."""
    return value is None or isinstance(value, (bool, int, float, str, bytes, list, dict, set, tuple))


# --------------------------------------------------------------------------------------
# Watch: what actually ran
# --------------------------------------------------------------------------------------

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
# Packages whose functions a Watch names; the notebook's own code is counted in steps.
WATCHED_PACKAGES = ("torch", "numpy", "coursekit")


def _code_label(frame: types.FrameType, cache: dict[types.CodeType, str]) -> str:
    """'torch.optim.adamw:_single_tensor_adamw' for a function of torch, NumPy or coursekit
    (named by the module it runs in, wherever a reference to it was taken), '' else."""
    code = frame.f_code
    label = cache.get(code)
    if label is None:
        module = frame.f_globals.get("__name__")
        label = (
            f"{module}:{code.co_qualname}" if isinstance(module, str) and module.startswith(WATCHED_PACKAGES) else ""
        )
        cache[code] = label
    return label


def _private(label: str) -> bool:
    """Whether a function's module (or a C function's owner) is private to torch
    ('torch._library.simple_registry:find_torch_dispatch_rule', 'torch._C._nn.linear'):
    torch's own machinery, which it may call back at any time (once per operation while a
    dispatch mode records, once only where it caches)."""
    module = label.split(":")[0] if ":" in label else label.rpartition(".")[0]
    return any(part.startswith("_") for part in module.split("."))


def _c_label(function: Any) -> str:
    """'torch.arange', 'torch.Tensor.reshape', 'numpy.empty' for a builtin function or method of
    torch or NumPy; '' for anything else (len, math.log2, dict.update)."""
    try:
        owner = getattr(function, "__self__", None)
        name = getattr(function, "__name__", "?")
        if owner is None or isinstance(owner, types.ModuleType):
            module = getattr(function, "__module__", None) or getattr(owner, "__name__", "") or ""
            label = f"{module}.{name}"
        else:
            kind = owner if isinstance(owner, type) else type(owner)
            label = f"{kind.__module__}.{kind.__qualname__}.{name}"
    except Exception:  # noqa: BLE001 - whatever a learner's object does, the profiler must not raise
        return ""
    return label if label.startswith(WATCHED_PACKAGES) else ""


class _OpRecorder(TorchDispatchMode):
    """Records every aten / c10d operation that runs (below autograd and every Python API)."""

    def __init__(self, watch: Watch) -> None:
        super().__init__()
        self.watch = watch

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        kwargs = kwargs or {}
        watch = self.watch
        if not watch._active:  # another thread's recorder, left until that thread runs again
            return func(*args, **kwargs)
        watch._op(func, args, torch.is_grad_enabled())
        out = func(*args, **kwargs)
        watch._output(func, out)
        return out


@dataclass
class Watch:
    """What ran inside ``with grading.watch() as watch:`` (or in a recorded cell).

    - ``ops``: aten and c10d operations by name ('aten.add.Tensor', 'c10d.allreduce_.default');
    - ``outputs``: (operation, shape of its output) in order;
    - ``grad_ops``: operations that ran while autograd was recording;
    - ``collectives``: (operation, elements communicated) for every c10d operation;
    - ``calls``: torch and NumPy functions called directly from the notebook's own code;
    - ``code``: every torch and NumPy function that executed, at any depth, Python
      ('torch.optim.adamw:adamw') or C ('torch._C._EngineBase.run_backward');
    - ``steps``: calls of any function made from the notebook's own code, torch's private
      machinery left out (a loop shows up as a count that grows with the input).
    """

    namespace: dict[str, Any] = field(repr=False)
    ops: Counter[str] = field(default_factory=Counter)
    outputs: list[tuple[str, tuple[int, ...]]] = field(default_factory=list)
    grad_ops: int = 0
    collectives: list[tuple[str, int]] = field(default_factory=list)
    calls: Counter[str] = field(default_factory=Counter)
    code: set[str] = field(default_factory=set)
    steps: int = 0
    tampered: str | None = None
    _labels: dict[types.CodeType, str] = field(default_factory=dict, repr=False)
    _importing: list[types.FrameType] = field(default_factory=list, repr=False)
    _mode: _OpRecorder | None = field(default=None, repr=False)
    _profile: Callable[..., None] | None = field(default=None, repr=False)
    _previous_profile: Any = field(default=None, repr=False)
    _active: bool = field(default=False, repr=False)

    # -- reading the record ------------------------------------------------------------
    def ran(self, *prefixes: str) -> list[str]:
        """The functions and operations that ran whose names start with one of ``prefixes``."""
        names = set(self.code) | set(self.ops)
        return sorted(name for name in names if name.startswith(prefixes))

    def anything(self) -> list[str]:
        """Every public torch or NumPy function called from the notebook's code, and every
        operation, that ran, by name: empty when none did."""
        return sorted({c for c in self.calls if not _private(c)} | set(self.ops))

    def __sub__(self, other: Watch) -> list[str]:
        """What ran here beyond what ran in ``other`` (counting repeats), as in anything()."""
        public = Counter({c: n for c, n in self.calls.items() if not _private(c)})
        extra = (public - other.calls) + (self.ops - other.ops)
        return sorted(extra)

    # -- recording -----------------------------------------------------------------------
    def _op(self, func: Any, args: tuple, grad_enabled: bool) -> None:
        name = str(func)
        self.ops[name] += 1
        if grad_enabled:
            self.grad_ops += 1
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
        try:
            # A module torch imports the first time it needs it runs code that is nobody's answer.
            if self._importing:
                if event == "return" and frame is self._importing[-1]:
                    self._importing.pop()
                elif event == "call" and frame.f_code.co_name == "<module>":
                    self._importing.append(frame)
                return
            # (A recorded cell's own code runs as a '<module>' in the notebook's namespace: not an import.)
            if event == "call" and frame.f_code.co_name == "<module>" and frame.f_globals is not self.namespace:
                self._importing.append(frame)
                return
            if event == "call":
                label = _code_label(frame, self._labels)
                if label:
                    self.code.add(label)
                caller = frame.f_back
                if caller is not None and caller.f_globals is self.namespace and not (label and _private(label)):
                    self.steps += 1
                    if label:
                        self.calls[label] += 1
            elif event == "c_call":
                label = _c_label(arg)
                if label:
                    self.code.add(label)
                if frame.f_globals is self.namespace:
                    self.steps += 1
                    if label:
                        self.calls[label] += 1
        except Exception:  # noqa: BLE001, S110 - a profiler that raises is switched off by Python
            pass

    def start(self) -> None:
        _install_thread_hooks()
        self._mode = _OpRecorder(self)
        self._mode.__enter__()
        self._previous_profile = sys.getprofile()
        self._profile = self._on_event
        self._active = True
        _WATCHING.append(self)
        sys.setprofile(self._profile)

    def stop(self) -> None:
        profiled = sys.getprofile() is self._profile
        sys.setprofile(self._previous_profile)
        self._active = False
        _WATCHING[:] = [w for w in _WATCHING if w is not self]
        if threading._profile_hook is not None:
            self.tampered = "the grader's record of what runs in other threads (threading.setprofile)"
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
        if not profiled:
            self.tampered = "the grader's record of the functions that run (sys.setprofile)"

    def __enter__(self) -> Watch:
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, traceback: object) -> None:
        self.stop()
        if self.tampered and kind is None:
            raise AssertionError(f"your code replaced {self.tampered}: answers must leave it running.")


# --------------------------------------------------------------------------------------
# Threads: what the notebook's code runs in a thread of its own is recorded too
# --------------------------------------------------------------------------------------
# A dispatch mode and sys.setprofile see only their own thread, so an answer could run a
# forbidden operation in a threading.Thread or a concurrent.futures pool. Every thread
# started once the hooks are in (by the first setup cell) runs `_in_thread` as its profile
# function: while a Watch records, that thread enters a recorder of its own for it and its
# calls go into the same record.

_WATCHING: list[Watch] = []  # the watches recording now
_THREAD = threading.local()  # in another thread: the (watch, recorder) pairs it has entered


def _in_thread(frame: types.FrameType, event: str, arg: Any) -> None:
    """The profile function of the threads started after `_install_thread_hooks`."""
    try:
        entered: list[tuple[Watch, _OpRecorder]] | None = getattr(_THREAD, "entered", None)
        if not _WATCHING and not entered:
            return
        if entered is None:
            entered = _THREAD.entered = []
        if not all(watch._active for watch, _ in entered):  # a watch has stopped: leave its recorder
            for watch, mode in reversed(entered):
                if not watch._active and torch.utils._python_dispatch._get_current_dispatch_mode() is mode:
                    mode.__exit__(None, None, None)
            entered[:] = [(watch, mode) for watch, mode in entered if watch._active]
        for watch in _WATCHING:
            if not any(w is watch for w, _ in entered):
                mode = _OpRecorder(watch)
                mode.__enter__()
                entered.append((watch, mode))
            if event == "c_call" and arg in (sys.setprofile, sys.settrace):
                watch.tampered = "the grader's record of what runs in other threads (sys.setprofile in a thread)"
            watch._on_event(frame, event, arg)
    except Exception:  # noqa: BLE001, S110 - a profiler that raises is switched off by Python
        pass


def _watched_start(start: Callable[..., int]) -> Callable[..., int]:
    """``_thread.start_new_thread`` whose threads run `_in_thread` as their profile function."""

    def start_new_thread(function: Callable[..., Any], args: tuple, kwargs: dict | None = None) -> int:
        def run(*args: Any, **kwargs: Any) -> Any:
            sys.setprofile(_in_thread)
            return function(*args, **kwargs)

        return start(run, args, kwargs or {})

    start_new_thread._grader_hook = True  # type: ignore[attr-defined]
    return start_new_thread


def _install_thread_hooks() -> None:
    """Every thread started from now on, by threading (Thread, concurrent.futures) or by
    _thread directly, is watched while a Watch records (once per process)."""
    for owner, name in ((_thread, "start_new_thread"), (_thread, "start_new"), (threading, "_start_new_thread")):
        start = getattr(owner, name, None)
        if start is not None and not getattr(start, "_grader_hook", False):
            setattr(owner, name, _watched_start(start))


# --------------------------------------------------------------------------------------
# Snapshots of what the checks rely on
# --------------------------------------------------------------------------------------


@dataclass
class _Owner:
    """A module or class whose attributes the checks rely on, as it was: its functions,
    classes and other objects (not plain data, which may change by itself) and, for a
    class, the names it had (a new method on a class overrides an inherited one)."""

    label: str
    owner: Any
    saved: dict[str, Any]
    keys: set[str] | None  # for a class: every attribute name it had

    @staticmethod
    def of(label: str, owner: Any, is_class: bool) -> _Owner:
        saved = {k: v for k, v in vars(owner).items() if not _plain_data(v)}
        return _Owner(label, owner, saved, set(vars(owner)) if is_class else None)

    def changes(self) -> list[str]:
        current = vars(self.owner)
        changed = []
        for key, value in self.saved.items():
            now = current.get(key, _MISSING)
            if now is value:
                continue
            if _torch_wrapper_of(now, value):
                self.saved[key] = now  # torch wraps some of its own functions when it first needs to
            else:
                changed.append(key)
        if self.keys is not None:
            for key, value in list(current.items()):
                if key in self.keys or _plain_data(value):
                    continue
                inherited = next((vars(k)[key] for k in self.owner.__mro__[1:] if key in vars(k)), _MISSING)
                if _torch_wrapper_of(value, inherited):
                    self.keys.add(key)  # an optimizer's inherited step, wrapped by torch
                    self.saved[key] = value
                else:
                    changed.append(key)
        return changed

    def restore(self) -> None:
        current = vars(self.owner)
        for key, value in self.saved.items():
            if current.get(key, _MISSING) is not value:
                try:
                    setattr(self.owner, key, value)
                except (AttributeError, TypeError):
                    pass
        if self.keys is not None:
            for key in [k for k, v in current.items() if k not in self.keys and not _plain_data(v)]:
                try:
                    delattr(self.owner, key)
                except (AttributeError, TypeError):
                    pass


def _torch_wrapper_of(new: Any, old: Any) -> bool:
    """Whether torch itself wrapped ``old`` (torch._dynamo wraps torch.manual_seed when it is
    first imported, an optimizer class's step is wrapped when the first one is made)."""
    return (
        isinstance(new, types.FunctionType)
        and getattr(new, "__wrapped__", None) is old
        and new.__code__.co_filename.startswith(_TORCH_DIR)
    )


def _owners() -> list[_Owner]:
    """The watched modules and torch's classes that checks use (and their torch bases)."""
    owners: list[_Owner] = []
    seen: set[int] = set()

    def add(label: str, owner: Any, is_class: bool) -> None:
        if id(owner) not in seen:
            seen.add(id(owner))
            owners.append(_Owner.of(label, owner, is_class))

    for name in WATCHED_MODULES:
        module = sys.modules.get(name)
        if module is not None:
            add(name, module, False)
    classes: list[type] = [torch.Tensor, torch.nn.Parameter, torch.autograd.Function]
    for name in CLASS_MODULES:
        module = sys.modules.get(name)
        for value in vars(module).values() if module is not None else ():
            if isinstance(value, type) and value.__module__.startswith("torch"):
                classes.append(value)
    for cls in classes:
        for klass in cls.__mro__:
            if klass.__module__.startswith("torch") and not klass.__module__.startswith("torch._C"):
                add(f"{klass.__module__}.{klass.__qualname__}", klass, True)
    return owners


@dataclass
class _Kept:
    """A name a setup cell (or a check) defined, with what it held."""

    value: Any
    state: Any

    @staticmethod
    def of(value: Any) -> _Kept:
        return _Kept(value, _state(value))

    def unchanged(self, current: Any) -> bool:
        if current is not self.value:
            return False
        try:
            return self.state is None or _same_state(self.value, self.state)
        except Exception:  # noqa: BLE001 - what cannot be compared counts as unchanged
            return True

    def restore(self, namespace: dict[str, Any], name: str) -> None:
        namespace[name] = self.value
        if self.state is not None:
            _restore_state(self.value, self.state)
            try:
                self.state = _state(self.value)
            except Exception:  # noqa: BLE001
                self.state = None


def _function_state(fn: types.FunctionType) -> tuple:
    cells = tuple(c.cell_contents if _cell_full(c) else _MISSING for c in fn.__closure__ or ())
    return (fn.__code__, fn.__defaults__, dict(fn.__kwdefaults__ or {}), cells)


def _cell_full(cell: types.CellType) -> bool:
    try:
        cell.cell_contents  # noqa: B018
    except ValueError:
        return False
    return True


def _state(value: Any) -> Any:
    """What can change inside an object without changing its identity, as far as a check cares."""
    if isinstance(value, types.FunctionType):
        return _function_state(value)
    if isinstance(value, type):
        return {
            k: (v, _function_state(v) if isinstance(v, types.FunctionType) else None) for k, v in vars(value).items()
        }
    if isinstance(value, torch.Tensor):
        if (
            value.is_inference()
            or value.layout != torch.strided
            or type(value) is not torch.Tensor
            and not isinstance(value, torch.nn.Parameter)
        ):
            return None  # no version counter to read (an inference tensor), or a subclass: identity only
        return (value._version, value.detach().clone() if value.numel() <= 1 << 16 else None)
    if isinstance(value, dict):
        return {k: (v, _function_state(v) if isinstance(v, types.FunctionType) else None) for k, v in value.items()}
    if isinstance(value, (list, set)):
        return list(value)
    return None


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a is b or (type(a) is type(b) and type(a) in (int, float, str, bool) and a == b)


def _same_state(value: Any, state: Any) -> bool:
    if isinstance(value, torch.Tensor):
        return state is None or value._version == state[0]
    if isinstance(value, (list, set)):
        return len(value) == len(state) and all(x is y for x, y in zip(value, state, strict=True))
    return _same(_state(value), state)


def _restore_state(value: Any, state: Any) -> None:
    try:
        if isinstance(value, types.FunctionType):
            code, defaults, kwdefaults, cells = state
            value.__code__, value.__defaults__ = code, defaults
            value.__kwdefaults__ = kwdefaults or None
            for cell, content in zip(value.__closure__ or (), cells, strict=False):
                if content is not _MISSING:
                    cell.cell_contents = content
        elif isinstance(value, type):
            for key in [k for k in vars(value) if k not in state]:
                delattr(value, key)
            for key, (item, fstate) in state.items():
                if vars(value).get(key, _MISSING) is not item:
                    setattr(value, key, item)
                if fstate is not None:
                    _restore_state(item, fstate)
        elif isinstance(value, torch.Tensor) and state is not None and state[1] is not None:
            with torch.no_grad():
                value.copy_(state[1])
        elif isinstance(value, dict):
            value.clear()
            value.update({k: item for k, (item, _) in state.items()})
            for item, fstate in state.values():
                if fstate is not None:
                    _restore_state(item, fstate)
        elif isinstance(value, list):
            value[:] = state
        elif isinstance(value, set):
            value.clear()
            value.update(state)
    except Exception:  # noqa: BLE001, S110 - best effort: the task fails anyway
        pass


def _globals_used(code: types.CodeType) -> set[str]:
    """Global names a function (and the functions and classes nested in it) may read."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _globals_used(const)
    return names


def _dependencies(value: Any) -> set[str]:
    if isinstance(value, types.FunctionType):
        return _globals_used(value.__code__)
    if isinstance(value, type):
        names: set[str] = set()
        for item in vars(value).values():
            if isinstance(item, (staticmethod, classmethod)):
                item = item.__func__
            if isinstance(item, types.FunctionType):
                names |= _globals_used(item.__code__)
        return names
    if isinstance(value, dict):
        return set().union(*(_dependencies(v) for v in value.values() if isinstance(v, types.FunctionType)))
    return set()


def cell_names(source: str) -> tuple[set[str], set[str]]:
    """The names a cell reads without defining them itself (from the setup, earlier cells or
    the builtins), and the names it defines, both anywhere in the cell."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set(), set()
    loaded: set[str] = set()
    stored: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else stored).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stored.add(node.name)
        elif isinstance(node, ast.arg):
            stored.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            stored.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            stored.add(node.name)
    return loaded - stored, stored


def sets_names(source: str, names: Iterable[str]) -> set[str]:
    """Which of ``names`` a cell sets or changes: assigns, deletes, assigns into (x[k] = v,
    x.a = v) or calls a changing method of (x.update(...), x.add_(...))."""
    wanted = set(names)
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in wanted and not isinstance(node.ctx, ast.Load):
            found.add(node.id)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            found.update(wanted & set(node.names))
        elif isinstance(node, (ast.Subscript, ast.Attribute)) and not isinstance(node.ctx, ast.Load):
            root = node.value
            while isinstance(root, (ast.Subscript, ast.Attribute)):
                root = root.value
            if isinstance(root, ast.Name) and root.id in wanted:
                found.add(root.id)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and _mutates(node.func.attr):
            root = node.func.value
            while isinstance(root, (ast.Subscript, ast.Attribute)):
                root = root.value
            if isinstance(root, ast.Name) and root.id in wanted:
                found.add(root.id)
    return found


def _mutates(method: str) -> bool:
    """Whether a method of that name changes its object (dict.update, list.append, add_)."""
    return method in MUTATING_METHODS or (method.endswith("_") and not method.startswith("_"))


def _is_check(source: str) -> bool:
    """A check or hidden cell ends with _grading.passed(...) or _grading.done()."""
    return "_grading.passed(" in source or "_grading.done(" in source


# --------------------------------------------------------------------------------------
# The session
# --------------------------------------------------------------------------------------


@dataclass
class _Cell:
    raw: str | None  # the cell's source, until the guard has looked at it
    is_check: bool
    used: set[str]
    recorded: set[str]
    watch: Watch | None = None
    checked: bool = False
    before: dict[str, Any] = field(default_factory=dict)


class Grading:
    """The checks' own references and the guard over everything they rely on.

    Made once, at the end of a notebook's first setup cell: ``_grading = Grading(globals())``
    (``record=`` names the answers whose cells are recorded, see ``footprint``)."""

    name = "_grading"

    def __init__(self, namespace: dict[str, Any], record: Iterable[str] = ()) -> None:
        global _SESSION
        self.namespace = namespace
        # The setup cell run again (in a notebook, not when grading): the session before it puts back
        # what earlier answers replaced, then hands over.
        previous = _SESSION if _SESSION is not None and _SESSION.namespace is namespace else None
        if previous is not None:
            previous.problems()
            previous._uninstall()
        # The checks compare with these, never with whatever torch.equal is by then.
        self.equal = torch.equal
        self.allclose = torch.allclose
        self.assert_close = torch.testing.assert_close
        self._print = builtins.print
        # ipykernel swaps builtins.input (and getpass) for each cell, to forward them to the notebook.
        self._builtins = {k: v for k, v in vars(builtins).items() if not _plain_data(v) and k not in KERNEL_BUILTINS}
        self._builtins_module = namespace.get("__builtins__", builtins)
        _install_thread_hooks()  # before the snapshot: replacing them is then caught like the rest
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # reading deprecated names (torch.distributed.reduce_op) warns
            self._owners = _owners()
        self._modules = {name: sys.modules[name] for name in WATCHED_MODULES if name in sys.modules}
        self._module_hooks = {
            name: getattr(torch.nn.modules.module, name)
            for name in GLOBAL_MODULE_HOOKS
            if hasattr(torch.nn.modules.module, name)
        }
        self._trace = (sys.gettrace(), sys.getprofile())
        self._kept: dict[str, _Kept] = {}
        self._record = set(record)
        self._footprints: dict[str, Watch] = {}
        if previous is not None and previous._cell is not None:
            # Only what this cell defines is the setup's: the rest of the namespace holds answers too.
            before = previous._cell.before
            self._kept = {k: v for k, v in previous._kept.items() if namespace.get(k, _MISSING) is v.value}
            self._footprints = dict(previous._footprints)
            self._keep_names(k for k, v in namespace.items() if self._keepable(k) and before.get(k, _MISSING) is not v)
        else:
            self._keep_names(k for k in namespace if self._keepable(k))
        self._cell: _Cell | None = None
        self._serial = 0
        self._checked_serial = -1
        self._installed_shell = None
        self.shell = self._find_shell()
        if self.shell is not None:
            self._install(self.shell)
        _SESSION = self
        # The first operation under a dispatch mode makes torch import a part of itself (sympy and more,
        # about 2 s): once, here, rather than in a check's record, where the profiler would slow it down
        # (and in every process a check forks).
        with _OpRecorder(Watch(namespace)):
            torch.ones(1).add(1)

    def __reduce__(self) -> tuple[type[RankGrading], tuple]:
        """A check's function sent to other processes (coursekit.ranks) takes a RankGrading
        along in place of this session: the session holds the whole namespace and the
        kernel's hooks, which belong to this process alone."""
        return (RankGrading, ())

    # -- what the check cells call -------------------------------------------------------
    def passed(self, number: str) -> None:
        """End of a check cell: verify again, then print ``Exercise <number> passed``."""
        self._verify_end()
        self._print(f"Exercise {number} passed")

    def done(self) -> None:
        """End of a hidden check cell: verify again, print nothing."""
        self._verify_end()

    def keep(self) -> None:
        """End of a setup cell after the first: the checks rely on what this cell defined,
        as it defined it."""
        before = self._cell.before if self._cell is not None else {}
        self._keep_names(k for k, v in self.namespace.items() if self._keepable(k) and before.get(k, _MISSING) is not v)

    def watch(self) -> Watch:
        """A record of what runs in a ``with`` block (see Watch)."""
        return Watch(self.namespace)

    def footprint(self, name: str) -> Watch | None:
        """What ran in the last cell that set ``name`` (a name given to ``record=``), or None."""
        return self._footprints.get(name)

    def ran_while_setting(self, *names: str, beyond: Watch | None = None) -> list[str]:
        """What ran (see Watch.anything) in the cells that set ``names``, beyond what ran in
        ``beyond`` (the code given with the task); a name set where the grader did not see
        it (not by its cell's own code) counts as having run something."""
        found: set[str] = set()
        for name in names:
            watch = self._footprints.get(name)
            if watch is None:
                found.add(f"code that set {name} out of sight")
            else:
                found.update(watch - beyond if beyond is not None else watch.anything())
        return sorted(found)

    # -- keeping ----------------------------------------------------------------------------
    @staticmethod
    def _keepable(name: str) -> bool:
        if name in _IPYTHON_NAMES or (name.startswith("__") and name.endswith("__")):
            return False
        return not (name.startswith("_i") and (name[2:].isdigit() or name[2:] in ("", "i", "ii"))) and not (
            name.startswith("_") and name[1:].isdigit()
        )

    def _keep_names(self, names: Iterable[str]) -> None:
        for key in list(names):
            if key != self.name:
                try:
                    self._kept[key] = _Kept.of(self.namespace[key])
                except Exception:  # noqa: BLE001 - an object that cannot be looked into is kept by identity
                    self._kept[key] = _Kept(self.namespace[key], None)

    # -- verification -----------------------------------------------------------------------
    def problems(self, used: Iterable[str] = ()) -> list[str]:
        """What differs from the snapshot (each put back as it is found): one line per
        replaced thing, naming it; ``used`` are the names the check cell reads."""
        found: list[str] = []
        ns = self.namespace
        if ns.get(self.name) is not self:
            ns[self.name] = self
            found.append("_grading, the checks' own references")
        if ns.get("__builtins__", builtins) is not self._builtins_module:
            ns["__builtins__"] = self._builtins_module
            found.append("__builtins__")
        current = vars(builtins)
        for key, value in self._builtins.items():
            if current.get(key, _MISSING) is not value:
                setattr(builtins, key, value)
                found.append(f"the builtin {key}")
        for name, module in self._modules.items():
            if sys.modules.get(name) is not module:
                sys.modules[name] = module
                found.append(f"the module {name} (in sys.modules)")
        for owner in self._owners:
            changed = owner.changes()
            if changed:
                owner.restore()
                found += [f"{owner.label}.{key}" for key in changed[:3]]
        for name, registry in self._module_hooks.items():
            if getattr(torch.nn.modules.module, name) is not registry:
                setattr(torch.nn.modules.module, name, registry)
                found.append(f"torch.nn.modules.module.{name}")
            if registry:
                registry.clear()
                found.append("torch's global module hooks (a hook on every module's forward or backward)")
        if torch._C._len_torch_function_stack():
            while torch._C._len_torch_function_stack():
                torch._C._pop_torch_function_stack()
            found.append("torch's function dispatch (a TorchFunctionMode left active)")
        if torch._C._len_torch_dispatch_stack():
            while torch._C._len_torch_dispatch_stack():
                torch.utils._python_dispatch._pop_mode()
            found.append("torch's operator dispatch (a TorchDispatchMode left active)")
        if torch._C._autograd._top_saved_tensors_default_hooks(True) is not None:
            while torch._C._autograd._top_saved_tensors_default_hooks(True) is not None:
                torch._C._autograd._pop_saved_tensors_default_hooks()
            found.append("autograd's saved tensors (saved_tensors_hooks left active)")
        if (sys.gettrace(), sys.getprofile()) != self._trace:
            sys.settrace(self._trace[0])
            sys.setprofile(self._trace[1])
            found.append("Python's trace or profile function (sys.settrace, sys.setprofile)")
        found += self._shell_problems()
        found += self._name_problems(set(used))
        return list(dict.fromkeys(found))

    def _name_problems(self, used: set[str]) -> list[str]:
        found: list[str] = []
        ns = self.namespace
        todo, seen = list(used), set()
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            kept = self._kept.get(name)
            if kept is not None:
                current = ns.get(name, _MISSING)
                if not kept.unchanged(current):
                    kept.restore(ns, name)
                    found.append(f"{name}, which the check uses (from the setup)")
                todo += sorted(_dependencies(kept.value))
            elif name in self._builtins and name in ns and ns[name] is not self._builtins[name]:
                del ns[name]
                found.append(f"the builtin {name} (with a variable or function of that name)")
        return found

    def _failure(self, found: list[str]) -> str:
        shown = ", ".join(found[:4]) + (f" and {len(found) - 4} more" if len(found) > 4 else "")
        return f"your code replaced {shown}: {ADVICE}"

    def _reset_global_state(self) -> None:
        """Every check starts with autograd recording, float32 by default and no autocast."""
        torch.set_grad_enabled(True)
        torch.set_default_dtype(torch.float32)
        for device in ("cpu", "cuda", "xpu", "mps", "hpu", "mtia", "maia", "xla", "ipu"):
            try:
                if torch.is_autocast_enabled(device):
                    torch.set_autocast_enabled(device, False)
            except (RuntimeError, TypeError):
                pass
        torch.clear_autocast_cache()

    def _verify_end(self) -> None:
        cell = self._cell
        found = []
        if self.shell is not None and (cell is None or not cell.checked or self._checked_serial != self._serial):
            found.append("the grader's hooks in IPython (the check ran without them)")
        found += self.problems(cell.used if cell is not None else ())
        if found:
            raise AssertionError(self._failure(found))

    # -- IPython ------------------------------------------------------------------------------
    @staticmethod
    def _find_shell() -> Any:
        try:
            from IPython import get_ipython
        except ImportError:  # pragma: no cover - the course always has IPython
            return None
        return get_ipython()

    def _install(self, shell: Any) -> None:
        from IPython.core.inputtransformer2 import TransformerManager

        self._transformer = _CheckGuard(self)
        shell.ast_transformers.append(self._transformer)
        shell.events.register("pre_run_cell", self._pre_run_cell)
        shell.events.register("post_run_cell", self._post_run_cell)
        manager = shell.input_transformer_manager
        self._shell_saved = {
            "class": type(shell),
            "manager": manager,
            "lists": [
                (shell, "input_transformers_post", list(shell.input_transformers_post)),
                (shell, "ast_transformers", list(shell.ast_transformers)),
                (manager, "cleanup_transforms", list(manager.cleanup_transforms)),
                (manager, "line_transforms", list(manager.line_transforms)),
                (manager, "token_transformers", list(manager.token_transformers)),
            ],
            "overrides": {k: v for k, v in vars(shell).items() if k in SHELL_METHODS},
            "manager_overrides": {k: v for k, v in vars(manager).items() if callable(v)},
        }
        # The classes behind the shell and its transformer manager, as they were.
        self._owners += [
            _Owner.of(f"{k.__module__}.{k.__qualname__}", k, True)
            for k in (*type(shell).__mro__[:-1], TransformerManager)
        ]
        self._expected_manager = TransformerManager()
        self._expected_manager.cleanup_transforms = list(manager.cleanup_transforms)
        self._expected_manager.line_transforms = list(manager.line_transforms)
        self._expected_manager.token_transformers = list(manager.token_transformers)
        self._installed_shell = shell

    def _uninstall(self) -> None:
        """Take the hooks out of IPython (a newer session takes over)."""
        shell = self._installed_shell
        if shell is None:
            return
        if self._transformer in shell.ast_transformers:
            shell.ast_transformers.remove(self._transformer)
        for event, hook in (("pre_run_cell", self._pre_run_cell), ("post_run_cell", self._post_run_cell)):
            try:
                shell.events.unregister(event, hook)
            except ValueError:
                pass
        self._installed_shell = self.shell = None

    def _shell_problems(self) -> list[str]:
        shell = self.shell
        if shell is None:
            return []
        saved = self._shell_saved
        found: list[str] = []
        if type(shell) is not saved["class"]:
            shell.__class__ = saved["class"]
            found.append("IPython's shell (its class)")
        if shell.input_transformer_manager is not saved["manager"]:
            shell.input_transformer_manager = saved["manager"]
            found.append("IPython's input transformers (the transformer manager)")
        for owner, attribute, items in saved["lists"]:
            current = getattr(owner, attribute)
            if len(current) != len(items) or any(a is not b for a, b in zip(current, items, strict=True)):
                current[:] = items
                what = "AST transformers" if attribute == "ast_transformers" else "input transformers"
                found.append(f"IPython's {what} ({attribute})")
        overrides = {k: v for k, v in vars(shell).items() if k in SHELL_METHODS}
        if overrides.keys() != saved["overrides"].keys() or any(
            overrides[k] is not saved["overrides"][k] for k in overrides
        ):
            for key in overrides.keys() - saved["overrides"].keys():
                delattr(shell, key)
            for key, value in saved["overrides"].items():
                setattr(shell, key, value)
            found.append("IPython's way of running cells (a method of the shell)")
        manager = saved["manager"]
        manager_overrides = {k: v for k, v in vars(manager).items() if callable(v)}
        if manager_overrides.keys() != saved["manager_overrides"].keys():
            for key in manager_overrides.keys() - saved["manager_overrides"].keys():
                delattr(manager, key)
            found.append("IPython's input transformers (a method of the transformer manager)")
        callbacks = shell.events.callbacks
        for event, hook in (("pre_run_cell", self._pre_run_cell), ("post_run_cell", self._post_run_cell)):
            if not any(cb == hook for cb in callbacks.get(event, [])):
                shell.events.register(event, hook)
                found.append(f"IPython's hooks (the grader's {event} hook was removed)")
        return found

    def _expected_ast(self, raw: str) -> ast.Module | None:
        try:
            cell = self._expected_manager.transform_cell(raw)
            for transform in self._shell_saved["lists"][0][2]:
                cell = "".join(transform(cell.splitlines(keepends=True)))
            return ast.parse(cell)
        except Exception:  # noqa: BLE001 - a cell IPython cannot parse fails by itself
            return None

    def _pre_run_cell(self, info: Any) -> None:
        try:
            self._before_cell(info)
        except Exception:  # noqa: BLE001 - a hook that raises would fail the learner's cell
            self._cell = None

    def _before_cell(self, info: Any) -> None:
        raw = getattr(info, "raw_cell", "") or ""
        self._serial += 1
        expected = self._expected_ast(raw)
        source = ast.unparse(expected) if expected is not None else raw
        used = cell_names(source)[0] if _is_check(raw) else set()
        recorded = sets_names(source, self._record) if self._record and not _is_check(raw) else set()
        self._cell = _Cell(raw, _is_check(raw), used, recorded, before=dict(self.namespace))
        if recorded:
            self._cell.watch = Watch(self.namespace)
            self._cell.watch.start()

    def _post_run_cell(self, result: Any) -> None:
        try:
            self._after_cell()
        except Exception:  # noqa: BLE001, S110 - a hook that raises would fail the learner's cell
            pass

    def _after_cell(self) -> None:
        cell = self._cell
        if cell is None:
            return
        if cell.watch is not None:
            cell.watch.stop()
            for name in cell.recorded:
                self._footprints[name] = cell.watch
            cell.watch = None
        if cell.is_check:
            # What a check defined (its helpers), as it defined it: later checks rely on them.
            self._keep_names(
                k for k, v in self.namespace.items() if self._keepable(k) and cell.before.get(k, _MISSING) is not v
            )

    def _guard(self, node: ast.Module) -> ast.Module:
        """Run by IPython on every cell's code, right before it runs."""
        cell = self._cell
        if cell is None or cell.raw is None:
            found = self._shell_problems()
            return _failing(self._failure(found)) if found else node
        raw, cell.raw = cell.raw, None  # once per cell
        if not cell.is_check:
            found = self._shell_problems()
            return _failing(self._failure(found)) if found else node
        self._reset_global_state()
        found = self.problems(cell.used)
        expected = self._expected_ast(raw)
        if expected is not None and ast.dump(expected) != ast.dump(node):
            found.append("IPython's input transformers (the check cell was rewritten before it ran)")
        cell.checked, self._checked_serial = True, self._serial
        if found:
            return _failing(self._failure(list(dict.fromkeys(found))))
        return node


def _failing(message: str) -> ast.Module:
    """A cell that fails with ``message`` (an assert: no name a learner could replace)."""
    return ast.Module(body=[ast.Assert(test=ast.Constant(False), msg=ast.Constant(message))], type_ignores=[])


class _CheckGuard(ast.NodeTransformer):
    """The grader's AST transformer: IPython calls ``visit`` with each cell's code."""

    def __init__(self, grading: Grading) -> None:
        self.grading = grading

    def visit(self, node: ast.AST) -> ast.AST:
        if isinstance(node, ast.Module):
            try:
                return self.grading._guard(node)
            except Exception as error:  # noqa: BLE001 - IPython drops a transformer that raises
                return _failing(f"the grader could not check the kernel ({type(error).__name__}: {error})")
        return node


class RankGrading:
    """What a check's function has of the Grading when it runs on a rank, in a process of
    its own (coursekit.ranks sends the function there by value): the references taken in
    that process, fresh from torch, before the function runs, and watches. A watch there
    counts as the notebook's code the functions that travelled with the check (their
    globals are one namespace, the caller's)."""

    def __init__(self) -> None:
        self.equal = torch.equal
        self.allclose = torch.allclose
        self.assert_close = torch.testing.assert_close

    def watch(self) -> Watch:
        """A record of what runs in a ``with`` block (see Watch), in this process."""
        return Watch(sys._getframe(1).f_globals)


@contextmanager
def watching(namespace: dict[str, Any]) -> Iterator[Watch]:
    """``with watching(globals()) as watch:`` outside a notebook (tests)."""
    watch = Watch(namespace)
    with watch:
        yield watch
