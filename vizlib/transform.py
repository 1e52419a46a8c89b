"""Pure Graph -> Graph rewrites: collapse modules into boxes, keep pictures readable.

A transformer has thousands of autograd nodes; nobody reads that picture. Every op knows
the chain of modules it ran in (``Node.modules``, outermost first), so collapsing to a
depth is a group-by on one element of that chain.
"""

from __future__ import annotations

from dataclasses import replace

from .data import Graph, Node


def collapse(g: Graph, depth: int) -> Graph:
    """Draw every module nested ``depth`` levels deep as one box (0: the outermost module).

    Nodes outside such modules (inputs, ops written in the outer function) stay as they
    are. A box takes the smallest id of its members, the shape, values and gradient of
    the member whose output leaves the box, and the sum of their saved bytes.
    """
    key = {n.id: n.modules[depth] for n in g.nodes if len(n.modules) > depth}
    if not key:
        return g
    group = {n.id: key.get(n.id, n.id) for n in g.nodes}
    members: dict = {}
    for n in g.nodes:
        members.setdefault(group[n.id], []).append(n)
    leaving = {s for s, d in g.edges if group[s] != group[d]}

    new_id, nodes = {}, []
    for k, ms in members.items():
        if not isinstance(k, str):  # a node outside every box keeps its own id as key
            nodes.append(ms[0])
            new_id[k] = ms[0].id
            continue
        nodes.append(_box(k, ms, depth, leaving))
        new_id[k] = nodes[-1].id
    nodes.sort(key=lambda n: n.id)

    edges, edge_grads, seen = [], [], set()
    for (s, d), eg in zip(g.edges, g.edge_grads):
        e = (new_id[group[s]], new_id[group[d]])
        if e[0] != e[1] and e not in seen:
            seen.add(e)
            edges.append(e)
            edge_grads.append(eg)
    order = list(dict.fromkeys(new_id[group[i]] for i in g.backward_order))
    return replace(g, nodes=nodes, edges=edges, edge_grads=edge_grads, backward_order=order,
                   notes=list(g.notes))


def _box(path: str, members: list[Node], depth: int, leaving: set[int]) -> Node:
    out = [m for m in members if m.is_output] or [m for m in members if m.id in leaving] or members
    rep = out[-1]
    return Node(id=min(m.id for m in members), kind="module", name=path, shape=rep.shape, dtype=rep.dtype,
                value=rep.value, grad=rep.grad, value_stats=rep.value_stats, grad_stats=rep.grad_stats,
                saved_bytes=sum(m.saved_bytes for m in members), op=rep.op, module=path,
                modules=rep.modules[:depth + 1], members=sum(m.members for m in members),
                is_output=any(m.is_output for m in members))


def simplify(g: Graph, depth: int | None, max_nodes: int | None) -> Graph:
    """Apply ``depth``; without one, collapse as little as needed to fit ``max_nodes``."""
    if depth is not None:
        return collapse(g, depth)
    if max_nodes is None or len(g.nodes) <= max_nodes:
        return g
    levels = max(len(n.modules) for n in g.nodes)
    for d in range(levels - 1, -1, -1):
        small = collapse(g, d)
        if len(small.nodes) <= max_nodes or d == 0:
            small.notes.append(
                f"{len(g.nodes)} nodes is more than max_nodes={max_nodes}, so modules nested {d} "
                f"level{'s' if d != 1 else ''} deep are drawn as one box each "
                f"({len(small.nodes)} nodes); pass depth= to choose, or max_nodes=None to see every op")
            return small
    g = replace(g, notes=g.notes + [
        f"{len(g.nodes)} nodes is more than max_nodes={max_nodes}, but no modules ran to collapse; "
        "showing every op (pass max_nodes=None to silence this note)"])
    return g
