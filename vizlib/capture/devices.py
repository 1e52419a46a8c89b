"""What a graph says about where its tensors live.

A tensor on the ``meta`` device has a shape and a dtype but no memory and no values:
a model built there (``with torch.device("meta"):``) can be drawn however big it is,
and the picture must say why it shows no numbers. A graph whose tensors live on several
devices says so, and the picture marks each edge along which a tensor moved.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..data import Node


def device_notes(nodes: list[Node], seen: Iterable[str], recorded: bool) -> list[str]:
    """The notes for a graph with ``nodes``, whose tensors were seen on devices ``seen``."""
    devices = sorted(set(seen) | {n.device for n in nodes if n.device})
    notes = []
    if "meta" in devices:
        notes.append(
            "tensors on the meta device have shapes and dtypes but no values: values and gradients are left out"
            + (" (backward was not run)" if recorded else "")
        )
    if len(devices) > 1:
        where = ", ".join(devices)
        notes.append(f"tensors on {len(devices)} devices ({where}); an edge labelled a → b moved its tensor")
    return notes
