"""Where a captured graph's nodes go: what each op saved, the bytes autograd keeps, the
module each node belongs to and the one that owns each parameter."""

from __future__ import annotations

from collections.abc import Iterable

from ..data import Node, SavedTensor


def attach_saved(node: Node, saved: list) -> None:
    if saved:  # (most nodes of a model saved nothing: they keep the defaults)
        node.saved = [s for s, _ in saved]
        node.saved_bytes = total_saved(saved)


def total_saved(saved: Iterable[tuple[SavedTensor, tuple]]) -> int:
    """Bytes kept alive for backward, each storage counted once however many nodes (or
    tensors of one node) saved it."""
    return sum({key: s.bytes for s, key in saved}.values())


def consumers_of(edges: list[tuple[int, int, int]]) -> dict[int, list[int]]:
    """Each node's consumers, by position, from ``Walked.edges``."""
    consumers: dict[int, list[int]] = {}
    for s, d, _ in edges:
        consumers.setdefault(s, []).append(d)
    return consumers


def inherit_modules(
    nodes: list[Node], node_at: list[Node], consumers: dict[int, list[int]], recorded: set[int]
) -> None:
    """Ops created inside a composite call (no record of their own) belong to their consumer's
    module (``node_at``: the node each position of the walk is drawn as; ``consumers``:
    ``consumers_of`` the walk's edges)."""
    for n in reversed(nodes):
        if n.kind == "op" and n.id not in recorded:
            n.modules = next((node_at[d].modules for d in consumers.get(n.id, ()) if node_at[d].modules), ())


def place_params(
    nodes: list[Node], node_at: list[Node], consumers: dict[int, list[int]], param_names: set[str]
) -> None:
    """A parameter belongs to the module that owns it: 'blocks.0.attn.c_attn.weight' to
    'blocks.0.attn.c_attn', a parameter of the model itself to the model. A parameter
    used outside its owner (a tied weight: registered under the head, used first by the
    embedding) goes to the innermost module holding its owner and every op that uses it,
    so that no collapsed box feeds a box that feeds it back."""
    chains: dict[str, tuple[str, ...]] = {}
    for modules in dict.fromkeys(n.modules for n in nodes):  # each chain once, in order (most nodes share one)
        for k in range(len(modules)):
            chains.setdefault(modules[k], modules[: k + 1])
    if not chains:
        return
    root = next(iter(chains.values()))[:1]
    for n in nodes:
        if n.kind != "leaf" or n.name not in param_names:
            continue
        n.modules, path = root, n.name
        while "." in path:
            path = path.rsplit(".", 1)[0]
            if path in chains:
                n.modules = chains[path]
                break
        for d in consumers.get(n.id, ()):
            n.modules = _common_prefix(n.modules, node_at[d].modules)


def _common_prefix(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    k = 0
    while k < min(len(a), len(b)) and a[k] == b[k]:
        k += 1
    return a[:k]
