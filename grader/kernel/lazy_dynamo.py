"""Dynamo imported only when the notebook needs it, not because a grader's recorder ran."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from collections.abc import Callable
from typing import Any

import torch


def imported_once(recorder: type) -> None:
    """Keep torch from importing Dynamo (about 800 modules, seconds of a kernel's start) just
    because a recorder ran an operation.

    torch wraps every dispatch mode's ``__torch_dispatch__`` so that Dynamo never compiles
    it, and the wrapper imports Dynamo on its first call to build the disabled version. Where
    Dynamo is not imported yet nothing can compile the recorder, so until it is, the wrapper
    is handed the recorder itself; the moment Dynamo's import ends (the notebook compiles
    something, or calls ``torch.cond``), the wrapper gets Dynamo's disabled version, as torch
    would have built it: Dynamo, tracing while a recorder is on, must find it disabled. A
    torch without this wrapper is left as it is."""
    raw = getattr(getattr(recorder, "__torch_dispatch__", None), "__wrapped__", None)
    if raw is None or "torch._dynamo" in sys.modules:
        return
    setattr(raw, "__dynamo_disable", raw)

    def disabled_by_dynamo() -> None:
        setattr(raw, "__dynamo_disable", torch._dynamo.disable(raw, recursive=True))

    sys.meta_path.insert(0, _AfterImport("torch._dynamo", disabled_by_dynamo))


class _AfterImport(importlib.abc.MetaPathFinder):
    """Calls ``then()`` once, right after the module ``name`` has been imported."""

    def __init__(self, name: str, then: Callable[[], None]) -> None:
        self.name, self.then = name, then

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if name != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        run_module, then = spec.loader.exec_module, self.then

        def exec_module(module: types.ModuleType) -> None:
            run_module(module)
            then()

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec
