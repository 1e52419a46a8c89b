"""What a recorded call may leave behind that vizlib puts back the moment it returns, before
reading anything of it.

Two things torch lets a function do that outlast the call and that ``guard.UserState``
cannot put back at the end of a capture, because vizlib's own reading and backward would
meet them first:

- memory taken from under a tensor (``t.untyped_storage().resize_(0)``): the tensor keeps
  its shape but has no values, and reading it or running a backward through it crashes the
  process. Torch hands ``resize_`` to no function or dispatch mode, so the recorder cannot
  see it; while a capture runs, ``UntypedStorage.resize_`` is watched:
  - the caller's tensors (their inputs, their model's parameters and buffers) and vizlib's
    copies of inputs: what such a storage holds is copied before the call first makes it
    smaller, and it is given back its size and values when the call returns;
  - any other tensor's, which a model frees on purpose (FSDP frees each parameter it
    gathered once forward or backward is done with it, and gathers it again when needed):
    left to the model, with no copy (that would undo what FSDP saves), and only noted:
    vizlib then reads no value from memory that is gone (``freed_elsewhere``). A storage made
    smaller on a thread that runs no capture of its own (a worker the call started; on a GPU,
    autograd's device thread, where FSDP frees what it gathered for backward) is noted by every
    capture running: none can tell whose it was.
- autocast entered and never left (``torch.autocast("cpu").__enter__()``): a plain call
  leaves it on for everything that runs next; vizlib, which puts back the grad mode it
  found, puts back autocast too, for each device, with its cache and its nesting.

Each is said in a note of the picture: what the call did is not what a plain call leaves.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch

from .autocast import autocast_state, put_back_autocast


class LeftBehind:
    """One capture's watch over what its call leaves behind (``watch``)."""

    def __init__(self, owned: Callable[[int], Sequence[torch.Tensor]], copies: Sequence[torch.Tensor]) -> None:
        # owned(n): the caller's tensors noted after the first n (the list grows as modules run);
        # copies: vizlib's of the caller's inputs, which stand in for them
        self._owned = owned
        self._copies = copies
        self._keys: set[int] | None = None  # their storages' keys, hashed as far as ``_hashed``
        self._hashed = 0
        self.kept: _Kept = {}
        self.calling = True  # until the call returns: then the caller's memory is given back
        self.freed_elsewhere = False  # memory of no tensor of the caller's was freed
        self._autocast = autocast_state()

    def shrinking(self, storage: torch.UntypedStorage, before: int) -> None:
        """``storage``, of ``before`` bytes, is about to be made smaller on this thread."""
        key = storage._cdata
        if self.calling and self._owns(key):
            if key not in self.kept:
                self.kept[key] = (storage, before, storage.clone() if before else None)
        else:
            self.freed_elsewhere = True

    def _owns(self, key: int) -> bool:
        """Whether ``key`` is the storage of a tensor of the caller's (asked only of a storage
        made smaller: each tensor's storage is asked for once, not on every capture)."""
        if self._keys is None:
            self._keys = {t.untyped_storage()._cdata for t in self._copies}
        new = self._owned(self._hashed)
        self._hashed += len(new)
        self._keys.update(t.untyped_storage()._cdata for t in new)
        return key in self._keys

    def call_returned(self) -> list[str]:
        """Put back autocast and the caller's memory the call freed; a note for each."""
        self.calling = False
        return put_back_autocast(self._autocast) + _put_back_storages(self.kept)


@contextmanager
def watch(owned: Callable[[int], Sequence[torch.Tensor]], copies: Sequence[torch.Tensor]) -> Iterator[LeftBehind]:
    """Watch what a capture's call frees and leaves on, from the call to vizlib's last read
    (``owned``, ``copies``: see LeftBehind); ``call_returned`` puts it back."""
    left = LeftBehind(owned, copies)
    with _storages_watched(left):
        yield left


# -- memory taken from under tensors --

# A storage of the caller's: its key (``_cdata``) -> the storage, its bytes before the call
# first resized it, and a copy of them (None where it had none).
_Kept = dict[int, tuple[torch.UntypedStorage, int, torch.UntypedStorage | None]]
# torch's own resize_, which the class inherits from its C base
_TORCH_RESIZE: Any = torch._C.StorageBase.resize_  # type: ignore[attr-defined]


class _Resizes(threading.local):
    """The captures running on this thread, inner last."""

    def __init__(self) -> None:
        self.stack: list[LeftBehind] = []
        self.inside = False  # in a call of the resize_ stood in for (_resize_keeping)


class _Installed:
    """Whether ``_resize_keeping`` stands in for ``UntypedStorage.resize_``: from the first
    recording that starts to the last that ends, on any thread, under ``lock``."""

    lock = threading.Lock()
    running: list[LeftBehind] = []  # every thread's captures (told of a resize on a thread with none)
    # the resize_ it stands in for: torch's own, or one set on the class before (kept for good:
    # a thread that is not recording may still be inside a call of it when the last ends)
    replaced: Any = _TORCH_RESIZE
    set_before = False


_RESIZES = _Resizes()


def _resize_keeping(storage: torch.UntypedStorage, size: int) -> Any:
    """``UntypedStorage.resize_`` while a capture runs: each capture on this thread is told
    of a storage about to be made smaller (LeftBehind.shrinking), and where this thread runs
    none, every thread's capture; growing is no concern."""
    if _RESIZES.inside:  # reached again from a wrapper a call left on the class, around this one
        return _TORCH_RESIZE(storage, size)
    if size < (before := storage.nbytes()):
        for left in _RESIZES.stack:
            left.shrinking(storage, before)
        if not _RESIZES.stack:
            for left in list(_Installed.running):
                left.freed_elsewhere = True
    _RESIZES.inside = True
    try:
        return _Installed.replaced(storage, size)
    finally:
        _RESIZES.inside = False


@contextmanager
def _storages_watched(left: LeftBehind) -> Iterator[None]:
    """``_resize_keeping`` in place while any thread captures, telling ``left`` of this one's."""
    with _Installed.lock:
        if not _Installed.running:
            own = torch.UntypedStorage.__dict__.get("resize_")
            _Installed.set_before = own is not None
            _Installed.replaced = own if own is not None else _TORCH_RESIZE
            torch.UntypedStorage.resize_ = _resize_keeping  # type: ignore[method-assign,assignment]
        _Installed.running.append(left)
    _RESIZES.stack.append(left)
    try:
        yield
    finally:
        _RESIZES.stack.pop()
        with _Installed.lock:
            _Installed.running.remove(left)
            # (a call that set its own resize_ on the class, or deleted one, keeps what it did)
            if not _Installed.running and torch.UntypedStorage.__dict__.get("resize_") is _resize_keeping:
                if _Installed.set_before:
                    torch.UntypedStorage.resize_ = _Installed.replaced  # type: ignore[method-assign]
                else:
                    del torch.UntypedStorage.resize_


def _put_back_storages(kept: _Kept) -> list[str]:
    """Give each storage the call made smaller its bytes back, and its values."""
    smaller = [(s, size, copy) for s, size, copy in kept.values() if s.nbytes() < size]
    for storage, size, copy in smaller:
        _TORCH_RESIZE(storage, size)
        if copy is not None:
            storage.copy_(copy)
    kept.clear()
    if not smaller:
        return []
    return [
        f"The function freed the memory of {len(smaller)} tensor(s) (untyped_storage().resize_): vizlib gave it "
        "back, with the values it held, when the call returned, to draw them and to leave your tensors as they were."
    ]
