"""The grading session in a learner's kernel: ``_grading = Grading(globals())``.

Checks run in the same Python process as the learner's answers, so an answer could make
later checks pass without being right: rebind ``torch.allclose`` (also through another
name for torch), shadow a builtin the checks call (``def all(x): return True``), redefine
a helper from a setup cell that a check compares with, or hook IPython so that every later
check cell becomes its print line. The session is what the checks rely on:

- made at the end of the first setup cell, before any answer runs, it takes the checks' own
  references (``equal``, ``allclose``, ``assert_close``) and a snapshot of what they rely on
  (snapshots.py): the builtins, torch's functions and classes, the names the setup cells
  defined (``keep()`` at the end of each later setup cell adds that cell's), and IPython's
  machinery (shell.py);
- before every check cell runs (an IPython AST transformer, the last step before the cell
  is executed) it compares all of that with the snapshot: anything replaced is put back
  and the cell is replaced by a failing assertion whose message says what the learner's
  code replaced; the cell's code is also compared with what IPython makes of its source,
  so an input transformer that rewrote the check is caught even though it ran first;
- ``passed("1.4")`` ends a check: it checks the same again (an answer called by the check
  may have replaced something while it ran) and prints ``Exercise 1.4 passed``;
  ``done()`` ends a hidden check the same way, silently;
- ``watch()`` records what really ran (watch.py); predictions that must be made without
  running anything are answers that are not functions: ``Grading(globals(), record=(...))``
  records every cell that sets one of these names, and the check reads
  ``ran_while_setting(...)`` and ``prediction_problems(...)`` (predictions.py).

A notebook's first setup cell run again (in JupyterLab; grading always starts a fresh
kernel) makes a new session that takes over from the old one, keeping as the setup's only
the names that cell defines.

Nothing here makes a kernel safe against code written to defeat it: a learner's code can
still reach anything in its own process. It makes the checks immune to the known ways of
making them lie, and turns each into a clear failure of the task that did it.
"""

from __future__ import annotations

import ast
import builtins
import sys
import threading
import types
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch._functorch.predispatch import lazy_load_decompositions

from grader.kernel import active, compiles, containment, kernel_threads, predictions, threads
from grader.kernel.names import cell_names, dependencies, is_check, sets_names
from grader.kernel.rules import (
    ADVICE,
    GLOBAL_MODULE_HOOKS,
    IPYTHON_NAMES,
    KERNEL_BUILTINS,
    MISSING,
    WATCHED_MODULES,
    plain_data,
)
from grader.kernel.shell import ShellHooks, failing, find_shell
from grader.kernel.snapshots import Kept, watched_owners
from grader.kernel.torch_state import (
    added_kernels,
    clear_modes,
    registered_kernels,
    reset_global_state,
    settings,
    settings_changed,
)
from grader.kernel.watch import Watch

_SESSION: Grading | None = None  # the kernel's session: a newer one (the setup run again) replaces it


@dataclass
class _Cell:
    raw: str | None  # the cell's source, until the guard has looked at it
    is_check: bool
    used: set[str]
    recorded: set[str]
    source: str = ""  # the code that runs (magics as calls), for a recorded cell
    watch: Watch | None = None
    checked: bool = False
    before: dict[str, Any] = field(default_factory=dict)
    escapes_before: int = 0  # containment.ESCAPES's length when the cell started
    check_source: str = ""  # a check cell's source, for how its failure shows (failures.py)
    outer: _Cell | None = None  # the cell that ran this one (get_ipython().run_cell), if any


def _keepable(name: str) -> bool:
    """Whether a name in the namespace can be a setup's helper (not IPython's own)."""
    if name in IPYTHON_NAMES or (name.startswith("__") and name.endswith("__")):
        return False
    return not (name.startswith("_i") and (name[2:].isdigit() or name[2:] in ("", "i", "ii"))) and not (
        name.startswith("_") and name[1:].isdigit()
    )


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
        self._builtins = {k: v for k, v in vars(builtins).items() if not plain_data(v) and k not in KERNEL_BUILTINS}
        self._builtins_module = namespace.get("__builtins__", builtins)
        threads.install_hooks()  # before the snapshot: replacing them is then caught like the rest
        kernel_threads.watch_kernel_threads()  # the kernel's own threads, started before the hooks
        containment.install()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # reading deprecated names (torch.distributed.reduce_op) warns
            self._owners = watched_owners()
        self._modules = {name: sys.modules[name] for name in WATCHED_MODULES if name in sys.modules}
        self._module_hooks = {
            name: getattr(torch.nn.modules.module, name)
            for name in GLOBAL_MODULE_HOOKS
            if hasattr(torch.nn.modules.module, name)
        }
        self._trace = (sys.gettrace(), sys.getprofile())
        # torch.func's first vmap (jacrev, jacfwd, hessian) registers torch's own batching
        # rules with torch.library; registered before the snapshot, they are not the answer's.
        lazy_load_decompositions()
        self._kernels = registered_kernels()
        self._settings = settings()
        self._record = set(record)
        self._take_over_names(previous)
        self._cell: _Cell | None = None
        self._running = 0  # cells running now: more than one when a cell runs another
        self._after_check = False  # the last cell that ran was a check or hidden cell
        self._serial = 0
        self._checked_serial = -1
        shell = find_shell()
        self._hooks = (
            ShellHooks(shell, self._guard, self._pre_run_cell, self._post_run_cell, self._check_source)
            if shell
            else None
        )
        if self._hooks is not None:
            self._owners += self._hooks.owners
        _SESSION = self
        # The first operation under a dispatch mode sets up what torch needs for one: once, here,
        # rather than in a check's record, where the profiler would slow it down.
        with Watch(namespace).recorder():
            torch.ones(1).add(1)

    def _take_over_names(self, previous: Grading | None) -> None:
        """The setup's names: all of the namespace's on a first run; on a run again, those the
        previous session kept that still hold their value, and what this cell defined."""
        self._kept: dict[str, Kept] = {}
        self._footprints: dict[str, Watch] = {}
        self._sources: dict[str, str] = {}
        namespace = self.namespace
        if previous is None or previous._cell is None:
            self._keep_names(k for k in namespace if _keepable(k))
            return
        # Only what this cell defines is the setup's: the rest of the namespace holds answers too.
        before = previous._cell.before
        self._kept = {k: v for k, v in previous._kept.items() if namespace.get(k, MISSING) is v.value}
        self._footprints = dict(previous._footprints)
        self._sources = dict(previous._sources)
        self._keep_names(k for k, v in namespace.items() if before.get(k, MISSING) is not v and _keepable(k))

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
        as it defined it, and on torch's settings as it left them."""
        self._keep_new_names()
        self._settings = settings()

    def settings_changed(self) -> list[str]:
        """torch's process-wide settings (``torch_state.SETTINGS``) that differ from the
        setup's, named, each put back: a check calls this right after the answer, to say
        which the answer left changed in words of its own."""
        return settings_changed(self._settings)

    def watch(self, quiet: bool = False, asks: tuple[str, ...] = ()) -> Watch:
        """A record of what runs in a ``with`` block (see Watch; ``quiet``: with no dispatch
        mode, for answers that look for one; ``asks``: the functions whose calls by the
        learner's code it notes in ``asked``, such as those that tell whether torch compiles or
        a mode watches)."""
        return Watch(self.namespace, quiet=quiet, asks=asks)

    def footprint(self, name: str) -> Watch | None:
        """What ran in the last cell that set ``name`` (a name given to ``record=``), or None."""
        return self._footprints.get(name)

    def source_setting(self, name: str) -> str | None:
        """The code of the last cell that set ``name`` (a name given to ``record=``), as it ran
        (IPython's magics as the calls they become), or None: a check reads how a prediction
        was reached, which code run out of the watch's sight (exec'd, in a copy of the
        globals) cannot hide."""
        return self._sources.get(name)

    def ran_while_setting(self, *names: str, beyond: Watch | None = None) -> list[str]:
        """What ran (see Watch.anything) in the cells that set ``names``, beyond what ran in
        ``beyond`` (the code given with the task); a name set where the grader did not see
        it (not by its cell's own code) counts as having run something. A process or thread
        such a cell started comes first: the work it hid is not in the record."""
        started: set[str] = set()
        found: set[str] = set()
        for name in names:
            watch = self._footprints.get(name)
            if watch is None:
                found.add(f"code that set {name} out of sight")
            else:
                found.update(watch - beyond if beyond is not None else watch.anything())
                found.update(filter(None, [watch.tampered, watch.unrecorded]))
                started.update(f"code starting {what}" for what in watch.escaped)
        return sorted(started) + sorted(found)

    def code_ran_setting(self, *names: str) -> list[str]:
        """Every torch function that ran at any depth, however it was reached, in the cells
        that set ``names`` (names given to ``record=``), and a record switched off there."""
        found: set[str] = set()
        for name in names:
            footprint = self._footprints.get(name)
            if footprint is not None:
                found.update(footprint.code_run())
                found.update(filter(None, [footprint.tampered, footprint.unrecorded]))
        return sorted(found)

    def prediction_problems(self, **given: Any) -> list[str]:
        """What makes the cells that set ``given``'s names (with the values the check took)
        more than a written-down prediction: torch code run there (``code_ran_setting``),
        code beyond building values (predictions.py). Empty when none."""
        sources = filter(None, map(self.source_setting, given))
        return sorted(set(self.code_ran_setting(*given)) | set(predictions.code_problems(sources, given)))

    def reading_problems(
        self, known: dict[str, Any], builtin_names: Iterable[str], modules: Iterable[str], **given: Any
    ) -> list[str]:
        """What makes the cells that set ``given``'s names (with the values the check took)
        more than a reading of the texts in ``known`` with ``builtin_names`` and imports of
        ``modules`` only (predictions.reading_problems). Empty when none."""
        sources = filter(None, map(self.source_setting, given))
        return predictions.reading_problems(sources, given, known, builtin_names, modules)

    def reaches(self, *sources: str) -> list[str]:
        """What code reaches past its own values: dunders and frames (predictions.reaches)."""
        return predictions.reaches(sources)

    # -- keeping ----------------------------------------------------------------------------
    def _keep_names(self, names: Iterable[str]) -> None:
        for key in list(names):
            if key != self.name:
                try:
                    self._kept[key] = Kept.of(self.namespace[key])
                except Exception:  # noqa: BLE001 - an object that cannot be looked into is kept by identity
                    self._kept[key] = Kept(self.namespace[key], None)

    def _keep_new_names(self) -> None:
        """Keep what the current cell defined, as it defined it."""
        before = self._cell.before if self._cell is not None else {}
        self._keep_names(k for k, v in self.namespace.items() if before.get(k, MISSING) is not v and _keepable(k))

    # -- verification -----------------------------------------------------------------------
    def problems(self, used: Iterable[str] = ()) -> list[str]:
        """What differs from the snapshot (each put back as it is found): one line per
        replaced thing, naming it; ``used`` are the names the check cell reads."""
        # (torch's settings before the modules: setting the default dtype also swaps torch.Storage)
        found = self._own_problems() + self._settings_problems() + self._module_problems() + clear_modes()
        found += [f"the check's own variables ({what})" for what in active.DURING_CHECK]
        found += added_kernels(self._kernels)
        if (sys.gettrace(), sys.getprofile()) != self._trace:
            with containment.grader_profile():
                sys.settrace(self._trace[0])
                sys.setprofile(self._trace[1])
            found.append("Python's trace or profile function (sys.settrace, sys.setprofile)")
        found += self._hooks.problems() if self._hooks is not None else []
        found += self._name_problems(set(used))
        return list(dict.fromkeys(found))

    def _settings_problems(self) -> list[str]:
        return [f"{what}, left changed (put it back before your code returns)" for what in self.settings_changed()]

    def _own_problems(self) -> list[str]:
        """The session itself and the builtins."""
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
            if current.get(key, MISSING) is not value:
                setattr(builtins, key, value)
                found.append(f"the builtin {key}")
        return found

    def _module_problems(self) -> list[str]:
        """The watched modules, torch's classes and the global module hooks."""
        found: list[str] = []
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
        return found

    def _name_problems(self, used: set[str]) -> list[str]:
        """The setup's names the check reads, and what those read in turn."""
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
                if not kept.unchanged(ns.get(name, MISSING)):
                    kept.restore(ns, name)
                    found.append(f"{name}, which the check uses (from the setup)")
                todo += sorted(dependencies(kept.value))
            elif name in self._builtins and name in ns and ns[name] is not self._builtins[name]:
                del ns[name]
                found.append(f"the builtin {name} (with a variable or function of that name)")
        return found

    @staticmethod
    def _failure(found: list[str]) -> str:
        shown = ", ".join(found[:4]) + (f" and {len(found) - 4} more" if len(found) > 4 else "")
        return f"your code replaced {shown}: {ADVICE}"

    def _verify_end(self) -> None:
        cell = self._cell
        found = []
        if self._hooks is not None and (cell is None or not cell.checked or self._checked_serial != self._serial):
            found.append("the grader's hooks in IPython (the check ran without them)")
        found += self.problems(cell.used if cell is not None else ())
        if found:
            raise AssertionError(self._failure(found))
        escapes = containment.ESCAPES[cell.escapes_before :] if cell is not None else []
        if escapes:  # refused, and the check may have caught the refusal: the task fails all the same
            raise AssertionError(f"your code started {escapes[0]} while the check ran: {containment.ADVICE}")

    # -- IPython ------------------------------------------------------------------------------
    def _uninstall(self) -> None:
        """Take the hooks out of IPython (a newer session takes over)."""
        if self._hooks is not None:
            self._hooks.uninstall()
            self._hooks = None

    def _pre_run_cell(self, info: Any) -> None:
        self._running += 1
        try:
            self._between_tasks(getattr(info, "raw_cell", "") or "")
        except Exception:  # noqa: BLE001, S110 - a hook that raises would fail the learner's cell
            pass
        try:
            self._before_cell(info)
        except Exception:  # noqa: BLE001 - a hook that raises would fail the learner's cell
            self._cell = None

    def _between_tasks(self, raw: str) -> None:
        """A cell that is no check, run after a check: the next task (or a setup cell before it)
        begins. Processes an earlier task's code left running (a DataLoader's persistent
        workers) are ended here: they have failed that task's checks, and must cost no other
        task its points (a check watching them could not tell whose work they do)."""
        check = is_check(raw)
        if self._after_check and not check and self._running == 1:
            containment.end_lingering()
        self._after_check = check

    def _before_cell(self, info: Any) -> None:
        raw = getattr(info, "raw_cell", "") or ""
        self._serial += 1
        expected = self._hooks.expected(raw) if self._hooks is not None else None
        source = expected.source if expected is not None else raw
        check = is_check(raw)
        _check_running(check)
        if check and not self._running > 1:
            active.DURING_CHECK.clear()
        used = cell_names(source)[0] if check else set()
        recorded = sets_names(source, self._record) if self._record and not check else set()
        self._cell = _Cell(
            raw,
            check,
            used,
            recorded,
            source=source if recorded else "",
            before=dict(self.namespace),
            escapes_before=len(containment.ESCAPES),
            check_source=raw if check else "",
            outer=self._cell if self._running > 1 or _inside_another_cell() else None,
        )
        if recorded:
            self._cell.watch = Watch(self.namespace, refuse=False)  # the check reads what it started
            self._cell.watch.start()
            if self._cell.outer is not None:
                # What the running cell did before it ran this one (a backward, say) is not in this
                # cell's record: its names were set out of sight.
                self._cell.watch.tampered = "a cell run from inside another cell (get_ipython().run_cell)"

    def _check_source(self) -> str | None:
        """The running cell's source when it is a check cell, else None."""
        cell = self._cell
        return cell.check_source if cell is not None and cell.is_check else None

    def _post_run_cell(self, result: Any) -> None:
        self._running = max(0, self._running - 1)
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
                self._sources[name] = cell.source
            cell.watch = None
        if cell.is_check:
            _check_running(False)
            # What a check defined (its helpers), as it defined it: later checks rely on them.
            self._keep_new_names()
        if cell.outer is not None:  # back in the cell that ran this one
            self._cell = cell.outer

    def _guard(self, node: ast.Module) -> ast.Module:
        """Run by IPython on every cell's code, right before it runs."""
        hooks, cell = self._hooks, self._cell
        assert hooks is not None  # the guard is IPython's: it runs only where the hooks are in
        if cell is None or cell.raw is None or not cell.is_check:
            if cell is not None:
                cell.raw = None  # once per cell
            found = hooks.problems()
            return failing(self._failure(found)) if found else node
        raw, cell.raw = cell.raw, None
        # Every check starts from a clean global state: grad mode, default dtype, autocast and
        # torch's process-wide settings as the setup left them, put back without a word (a
        # learner's own cell may try torch.set_float32_matmul_precision("high"), as chapter 04
        # does). One the answer changes while the check runs is named at its end (_verify_end).
        reset_global_state()
        settings_changed(self._settings)
        found = self.problems(cell.used)
        expected = hooks.expected(raw)
        if expected is not None and expected.dump != ast.dump(node):
            found.append("IPython's input transformers (the check cell was rewritten before it ran)")
        cell.checked, self._checked_serial = True, self._serial
        if found:
            return failing(self._failure(list(dict.fromkeys(found))))
        return node


def _check_running(running: bool) -> None:
    """A check cell starts (True) or another cell does, or it ended (False): its compiles skip
    Dynamo's guard timing (compiles.py), and containment notes what the notebook's code does
    meanwhile (``active.CHECK``)."""
    if running:
        compiles.leave_out()
    else:
        compiles.put_back()
    active.CHECK[0] = running


_getframe = sys._getframe  # as it was when the setup cell ran, before any answer
_main_thread, _current_thread = threading.main_thread, threading.current_thread


def _inside_another_cell() -> bool:
    """Whether the cell starting now was started by a running cell: IPython runs two cells
    on this stack (``get_ipython().run_cell`` inside a cell), or runs it on another thread
    than the kernel's. Read from the stack, which no answer can set as it can a counter."""
    if _current_thread() is not _main_thread():
        return True
    running = 0
    frame: types.FrameType | None = _getframe(1)
    while frame is not None:
        code = frame.f_code
        running += code.co_name == "run_cell_async" and code.co_filename.endswith("interactiveshell.py")
        frame = frame.f_back
    return running > 1


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

    def watch(self, quiet: bool = False, asks: tuple[str, ...] = ()) -> Watch:
        """A record of what runs in a ``with`` block (see Watch), in this process."""
        return Watch(sys._getframe(1).f_globals, quiet=quiet, asks=asks)
