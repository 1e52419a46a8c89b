"""The grader's hooks in IPython, and a guard over IPython's own machinery.

A check cell runs in the learner's kernel, after the learner's code could have changed how
IPython turns a cell's source into code: an input transformer, an AST transformer, a method
of the shell or of its transformer manager. ``ShellHooks`` puts the grader's AST transformer
(the last step before a cell runs) and its pre/post-run hooks in place, remembers how the
rest of that machinery was, and puts back (naming it) whatever has changed since.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any, NamedTuple

from grader.kernel import failures
from grader.kernel.rules import SHELL_METHODS
from grader.kernel.snapshots import Owner

# How many cells' expected code ShellHooks keeps (a chapter has a few dozen cells).
_KEPT_SOURCES = 512


class Expected(NamedTuple):
    """The code IPython should make of a cell: its source, and its tree as ``ast.dump``."""

    source: str
    dump: str


def find_shell() -> Any:
    """The running IPython shell, or None outside IPython (tests, ranks)."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - the course always has IPython
        return None
    return get_ipython()


def failing(message: str) -> ast.Module:
    """A cell that fails with ``message`` (an assert: no name a learner could replace)."""
    return ast.Module(body=[ast.Assert(test=ast.Constant(False), msg=ast.Constant(message))], type_ignores=[])


class _CheckGuard(ast.NodeTransformer):
    """The grader's AST transformer: IPython calls ``visit`` with each cell's code."""

    def __init__(self, guard: Callable[[ast.Module], ast.Module]) -> None:
        self.guard = guard

    def visit(self, node: ast.AST) -> ast.AST:
        if isinstance(node, ast.Module):
            try:
                return self.guard(node)
            except Exception as error:  # noqa: BLE001 - IPython drops a transformer that raises
                return failing(f"the grader could not check the kernel ({type(error).__name__}: {error})")
        return node


class _RememberedTransforms:
    """IPython's input transformers' work, kept per cell source while they are the setup's.

    ipykernel transforms every cell's source twice before it runs (to decide whether to run
    it as a coroutine, then to run it), and a kernel that grades runs the same check cells
    again and again: with the setup's transformers (pure functions of the source) each
    source's code is made once. Where the lists have changed since (a transformer added),
    every cell is transformed afresh; the guard compares a check's code with what it should
    be either way."""

    def __init__(self, manager: Any) -> None:
        self._manager = manager
        self._setup = self._transformers()
        self._made: dict[str, str] = {}

    def _transformers(self) -> tuple[tuple[Any, ...], ...]:
        m = self._manager
        return tuple(m.cleanup_transforms), tuple(m.line_transforms), tuple(m.token_transformers)

    def __call__(self, cell: str) -> str:
        transform = type(self._manager).transform_cell
        if self._transformers() != self._setup:
            return transform(self._manager, cell)
        made = self._made.get(cell)
        if made is None:
            if len(self._made) >= _KEPT_SOURCES:
                self._made.clear()
            made = self._made[cell] = transform(self._manager, cell)
        return made


class ShellHooks:
    """The grader's hooks in one IPython shell: ``guard`` sees every cell's code right before
    it runs; ``pre_run_cell`` and ``post_run_cell`` are IPython's events; a failed check shows
    its message alone (failures.py), ``current_check()`` being the running check cell's
    source, or None."""

    def __init__(
        self,
        shell: Any,
        guard: Callable[[ast.Module], ast.Module],
        pre_run_cell: Callable[[Any], None],
        post_run_cell: Callable[[Any], None],
        current_check: Callable[[], str | None],
    ) -> None:
        from IPython.core.inputtransformer2 import TransformerManager

        self.shell = shell
        self._events = (("pre_run_cell", pre_run_cell), ("post_run_cell", post_run_cell))
        self._transformer = _CheckGuard(guard)
        shell.ast_transformers.append(self._transformer)
        for event, hook in self._events:
            shell.events.register(event, hook)
        self._custom_before = (shell.custom_exceptions, shell.CustomTB)
        shell.set_custom_exc((AssertionError,), failures.handler(current_check))
        self._custom = (shell.custom_exceptions, shell.CustomTB)
        shell._format_exception_for_storage = failures.for_storage
        manager = shell.input_transformer_manager
        manager.transform_cell = _RememberedTransforms(manager)
        self._class = type(shell)
        self._manager = manager
        self._post_transformers = list(shell.input_transformers_post)
        self._lists = [
            (shell, "input_transformers_post", self._post_transformers),
            (shell, "ast_transformers", list(shell.ast_transformers)),
            (manager, "cleanup_transforms", list(manager.cleanup_transforms)),
            (manager, "line_transforms", list(manager.line_transforms)),
            (manager, "token_transformers", list(manager.token_transformers)),
        ]
        self._overrides = {k: v for k, v in vars(shell).items() if k in SHELL_METHODS}
        self._manager_overrides = {k: v for k, v in vars(manager).items() if callable(v)}
        # The classes behind the shell and its transformer manager, as they were.
        self.owners = [
            Owner.of(f"{k.__module__}.{k.__qualname__}", k, True)
            for k in (*type(shell).__mro__[:-1], TransformerManager)
        ]
        self._expected = TransformerManager()
        self._expected.cleanup_transforms = list(manager.cleanup_transforms)
        self._expected.line_transforms = list(manager.line_transforms)
        self._expected.token_transformers = list(manager.token_transformers)
        self._made: dict[str, Expected | None] = {}  # see expected()

    def uninstall(self) -> None:
        """Take the hooks out of IPython (a newer session takes over)."""
        shell = self.shell
        if self._transformer in shell.ast_transformers:
            shell.ast_transformers.remove(self._transformer)
        for event, hook in self._events:
            try:
                shell.events.unregister(event, hook)
            except ValueError:
                pass
        if (shell.custom_exceptions, shell.CustomTB) == self._custom:
            shell.custom_exceptions, shell.CustomTB = self._custom_before

    def expected(self, raw: str) -> Expected | None:
        """The code IPython would make of ``raw`` with the transformers the setup left, as
        source and as ``ast.dump`` (None: IPython cannot parse it).

        Asked before each cell runs and again by the guard, for every cell; transforming and
        parsing a long check cell takes milliseconds, and a kernel that runs the same check
        cell again (a learner checking again, the test suite's runs of many answers in one
        kernel) asks for the same source, so each source's answer is kept (the transformers
        it depends on are the setup's, fixed for the session)."""
        if raw in self._made:
            return self._made[raw]
        try:
            cell = self._expected.transform_cell(raw)
            for transform in self._post_transformers:
                cell = "".join(transform(cell.splitlines(keepends=True)))
            tree = ast.parse(cell)
            made: Expected | None = Expected(ast.unparse(tree), ast.dump(tree))
        except Exception:  # noqa: BLE001 - a cell IPython cannot parse fails by itself
            made = None
        if len(self._made) >= _KEPT_SOURCES:
            self._made.clear()
        self._made[raw] = made
        return made

    def problems(self) -> list[str]:
        """What changed in IPython's machinery since the hooks went in (each put back)."""
        return (
            self._shell_problems()
            + self._list_problems()
            + self._method_problems()
            + self._event_problems()
            + self._failure_problems()
        )

    def _shell_problems(self) -> list[str]:
        shell, found = self.shell, []
        if type(shell) is not self._class:
            shell.__class__ = self._class
            found.append("IPython's shell (its class)")
        if shell.input_transformer_manager is not self._manager:
            shell.input_transformer_manager = self._manager
            found.append("IPython's input transformers (the transformer manager)")
        return found

    def _list_problems(self) -> list[str]:
        found = []
        for owner, attribute, items in self._lists:
            current = getattr(owner, attribute)
            if len(current) != len(items) or any(a is not b for a, b in zip(current, items, strict=True)):
                current[:] = items
                what = "AST transformers" if attribute == "ast_transformers" else "input transformers"
                found.append(f"IPython's {what} ({attribute})")
        return found

    def _method_problems(self) -> list[str]:
        shell, found = self.shell, []
        overrides = {k: v for k, v in vars(shell).items() if k in SHELL_METHODS}
        if overrides.keys() != self._overrides.keys() or any(overrides[k] is not self._overrides[k] for k in overrides):
            for key in overrides.keys() - self._overrides.keys():
                delattr(shell, key)
            for key, value in self._overrides.items():
                setattr(shell, key, value)
            found.append("IPython's way of running cells (a method of the shell)")
        manager_overrides = {k for k, v in vars(self._manager).items() if callable(v)}
        if manager_overrides != self._manager_overrides.keys():
            for key in manager_overrides - self._manager_overrides.keys():
                delattr(self._manager, key)
            found.append("IPython's input transformers (a method of the transformer manager)")
        return found

    def _event_problems(self) -> list[str]:
        found = []
        callbacks = self.shell.events.callbacks
        for event, hook in self._events:
            if not any(cb == hook for cb in callbacks.get(event, [])):
                self.shell.events.register(event, hook)
                found.append(f"IPython's hooks (the grader's {event} hook was removed)")
        return found

    def _failure_problems(self) -> list[str]:
        shell = self.shell
        if (shell.custom_exceptions, shell.CustomTB) == self._custom:
            return []
        shell.custom_exceptions, shell.CustomTB = self._custom
        return ["IPython's way of showing errors (set_custom_exc)"]
