"""Properties of a vz.Graph that several tests ask about."""

from __future__ import annotations

import vizlib as vz


def acyclic(g: vz.Graph) -> bool:
    """True when the graph's edges form no cycle (Kahn's algorithm on node ids)."""
    inputs = {n.id: {s for s, d in g.edges if d == n.id} for n in g.nodes}
    done: set[int] = set()
    while len(done) < len(inputs):
        ready = [i for i, ins in inputs.items() if i not in done and ins <= done]
        if not ready:
            return False
        done.update(ready)
    return True
