"""Import a script of scripts/ (a folder of programs, not a package) as a module."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from harness.paths import SCRIPTS


def load_script(name: str) -> ModuleType:
    """scripts/<name>.py as a module, imported once per process."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]
