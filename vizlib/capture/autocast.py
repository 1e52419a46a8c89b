"""Autocast's thread-wide state, read and put back: a call may enter ``torch.autocast`` and
never leave it (``left_behind``), and vizlib's own arithmetic on what it recorded must not
run under the caller's autocast (``Summaries.fetch``: float16 autocast refuses to join the
bfloat16 tensors an inner autocast made)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

# Where autocast may be on (torch keeps a flag and a dtype per device type).
_DEVICES = tuple(
    d for d in ("cpu", "cuda", "xpu", "mps", "hpu", "mtia", "maia", "xla", "ipu") if torch.amp.is_autocast_available(d)
)

# (per device: whether autocast is on, and its dtype), whether its cache is on, its nesting
Autocast = tuple[tuple[tuple[str, bool, torch.dtype], ...], bool, int]


def autocast_state() -> Autocast:
    devices = tuple((d, torch.is_autocast_enabled(d), torch.get_autocast_dtype(d)) for d in _DEVICES)
    return devices, torch.is_autocast_cache_enabled(), _nesting()


def _nesting() -> int:
    """How many ``torch.autocast`` blocks are open (torch tells it only by changing it)."""
    depth = torch.autocast_increment_nesting() - 1
    torch.autocast_decrement_nesting()
    return depth


def put_back_autocast(before: Autocast) -> list[str]:
    """Put autocast back as ``before`` had it (``autocast_state()`` before the call); the note
    that says so, where the call left it on."""
    now = autocast_state()
    if now == before:
        return []
    devices, cache, depth = before
    for device, enabled, dtype in devices:
        torch.set_autocast_enabled(device, enabled)
        torch.set_autocast_dtype(device, dtype)
    torch.set_autocast_cache_enabled(cache)
    while _nesting() > depth:  # as torch.autocast's __exit__: the cache goes with the last block
        if torch.autocast_decrement_nesting() == 0:
            torch.clear_autocast_cache()
    while _nesting() < depth:
        torch.autocast_increment_nesting()
    return _note([d for (d, on, _), (_, was, _) in zip(now[0], devices, strict=True) if on and not was])


def _note(left_on: list[str]) -> list[str]:
    if not left_on:
        return []
    where = " and ".join(repr(d) for d in left_on)
    return [
        f"The function entered torch.autocast({where}) and did not leave it: a plain call leaves autocast on for "
        "what runs next; vizlib put it back as it was when the call returned (the dtypes drawn are the call's)."
    ]


@contextmanager
def autocast_off() -> Iterator[None]:
    """Autocast off on every device while active, then on again where it was."""
    on = [d for d in _DEVICES if torch.is_autocast_enabled(d)]
    for d in on:
        torch.set_autocast_enabled(d, False)
    try:
        yield
    finally:
        for d in on:
            torch.set_autocast_enabled(d, True)
