"""Whose code a frame runs: a library's (torch, IPython, Python itself), or the learner's.

The Watch fails torch run where its record cannot reach (dispatch to Python switched off)
when the notebook's code runs it. The notebook's code is first what runs in the notebook's
namespace, but a learner can also run code under globals of their own:
``exec(source, {"torch": torch})``, ``types.FunctionType(code, {})``, a module written beside
the notebook. That code is theirs too. Code is a library's where it comes from a file of
Python, of an installed package, of the course's own packages or of Inductor's generated
code, or where it was made at run time (``<string>``) in the namespace of a module loaded
from such a file (a dataclass's ``__init__``, made by ``exec`` in its module's namespace).
"""

from __future__ import annotations

import getpass
import os
import site
import sys
import sysconfig
import tempfile
import types
from functools import cache

# The course's packages: the models and helpers the tasks hand in, and the checks' own code.
_COURSE_PACKAGES = ("grader", "coursekit", "vizlib", "harness")
# Code torch makes at run time and names so: an FX GraphModule's forward, a frozen module.
_LIBRARY_PSEUDO_FILES = ("<frozen ", "<eval_with_key>")


@cache
def _library_roots() -> tuple[str, ...]:
    paths = {sysconfig.get_paths().get(key) for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    paths |= set(site.getsitepackages()) | {site.getusersitepackages(), sys.prefix, sys.base_prefix}
    # Inductor writes the code it generates into a cache folder and imports it from there.
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a sandbox's own user)
        user = str(os.getuid())
    paths.add(os.environ.get("TORCHINDUCTOR_CACHE_DIR") or os.path.join(tempfile.gettempdir(), f"torchinductor_{user}"))
    return tuple(os.path.realpath(path) + os.sep for path in paths if path)


def _course_roots() -> tuple[str, ...]:
    return _roots_of(tuple(package for package in _COURSE_PACKAGES if package in sys.modules))


@cache
def _roots_of(packages: tuple[str, ...]) -> tuple[str, ...]:
    """The folders of these imported packages (asked again once another is imported)."""
    paths = (getattr(sys.modules[package], "__file__", None) for package in packages)
    return tuple(os.path.realpath(os.path.dirname(path)) + os.sep for path in paths if path)


def course_file(filename: str) -> bool:
    """Whether ``filename`` is a file of the course's own packages (the grader's guards that run
    inside torch's work, coursekit's helpers): code that is nobody's answer."""
    return os.path.isabs(filename) and os.path.realpath(filename).startswith(_course_roots())


def _library_file(filename: str) -> bool:
    if filename.startswith(_LIBRARY_PSEUDO_FILES):
        return True
    if not os.path.isabs(filename):
        return False
    path = os.path.realpath(filename)
    return path.startswith(_library_roots()) or path.startswith(_course_roots())


class Authors:
    """``library(frame)``, remembered per code object and globals (asked at every call)."""

    def __init__(self) -> None:
        self._known: dict[tuple[types.CodeType, int], bool] = {}

    def library(self, frame: types.FrameType) -> bool:
        """Whether ``frame`` runs a library's code rather than the learner's."""
        key = (frame.f_code, id(frame.f_globals))
        known = self._known.get(key)
        if known is None:
            known = self._known[key] = _library_code(frame.f_code.co_filename, frame.f_globals)
        return known


def _library_code(filename: str, namespace: dict) -> bool:
    if _library_file(filename):
        return True
    if os.path.isabs(filename):  # a file of the learner's own
        return False
    # Made at run time ('<string>'): a library's in a library module's own namespace.
    name = namespace.get("__name__")
    module = sys.modules.get(name) if isinstance(name, str) else None
    path = getattr(module, "__file__", None)
    return module is not None and vars(module) is namespace and isinstance(path, str) and _library_file(path)
