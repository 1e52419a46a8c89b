"""What a Watch reads at torch's dispatcher beyond an operation's name: the memory an
operation writes into, and whether dispatch to Python (every dispatch mode, the Watch's
recorder among them) is switched off.

Dispatch to Python is switched off by C functions the profile function sees, and by C
context managers it does not (entering a C type's ``with`` is no call event). ``guard_switches``
puts a subclass of each such guard in torch's place, which tells every Watch when the
notebook's own code enters one and dispatch to Python is then off: ``with
torch._C._DisableTorchDispatch(): list(map(torch.relu, xs))`` calls nothing the profile
function sees, and runs torch unrecorded.
"""

from __future__ import annotations

import sys
from typing import Any

import torch
import torch.utils._mode_utils
from torch._C import DispatchKey

from grader.kernel import active

# operation -> the positions and names of the arguments it writes into (from its schema)
_WRITES: dict[Any, tuple[tuple[int, str], ...]] = {}

# torch._C's context managers that can leave dispatch to Python off (one that excludes keys,
# sets the excluded set, or keeps it while a function changes it)
SWITCHES = (
    "_DisableTorchDispatch",
    "_ExcludeDispatchKeyGuard",
    "ExcludeDispatchKeyGuard",
    "_ForceDispatchKeyGuard",
    "_SetExcludeDispatchKeyGuard",
)


# torch's query, taken once: the Watch asks at every C function's return, and a learner's
# replacement of torch._C's attribute changes nothing here.
_excluded = torch._C._dispatch_tls_is_dispatch_key_excluded
_PYTHON = DispatchKey.Python


def python_dispatch_off() -> bool:
    """Whether operations run now would skip every dispatch mode (a Watch's recorder too)."""
    return _excluded(_PYTHON)


def written_arguments(func: Any, args: tuple, kwargs: dict) -> list[torch.Tensor]:
    """The tensors ``func`` writes into, by its schema: ``self`` of an in-place operation,
    ``out=``; none for a higher-order operator (its inner operations are recorded)."""
    if func not in _WRITES:
        schema = getattr(func, "_schema", None)
        arguments = schema.arguments if schema is not None else []
        _WRITES[func] = tuple(
            (k, a.name) for k, a in enumerate(arguments) if a.alias_info is not None and a.alias_info.is_write
        )
    found = []
    for k, name in _WRITES[func]:
        value = args[k] if k < len(args) else kwargs.get(name)
        found += [v for v in (value if isinstance(value, (list, tuple)) else [value]) if isinstance(v, torch.Tensor)]
    return found


def storage(tensor: torch.Tensor) -> int:
    """The address of the memory under ``tensor`` (0 where it has none to compare: meta, a
    wrapper)."""
    try:
        return tensor.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):
        return 0


def _noted(guard: Any, name: str) -> type:
    """``guard`` as a subclass whose entry by the notebook's code, leaving dispatch to
    Python off, makes every Watch's record incomplete."""

    def __enter__(self: Any) -> Any:  # noqa: N807 - the context manager's own method
        entered = guard.__enter__(self)
        if active.WATCHING and python_dispatch_off():
            caller = sys._getframe(1).f_globals
            for watch in list(active.WATCHING):
                if caller is watch.namespace and watch.unrecorded is None:
                    watch.unrecorded = f"torch._C.{name} switched dispatch to Python off"
        return entered

    return type(guard.__name__, (guard,), {"__enter__": __enter__, "__module__": guard.__module__})


def guard_switches() -> None:
    """Put a noted subclass of each of torch's switches in its place, once: in torch._C and
    where torch keeps its own name for one (``torch.utils._mode_utils.no_dispatch``)."""
    for name in SWITCHES:
        guard = getattr(torch._C, name, None)
        if isinstance(guard, type) and not getattr(guard, "_grader_noted", False):
            noted = _noted(guard, name)
            noted._grader_noted = True  # type: ignore[attr-defined]
            setattr(torch._C, name, noted)
            if torch.utils._mode_utils.no_dispatch is guard:
                torch.utils._mode_utils.no_dispatch = noted  # type: ignore[assignment]
