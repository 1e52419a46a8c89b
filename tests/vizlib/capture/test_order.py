"""The order a recorded graph's nodes are listed in (walk._as_ran): as the ops ran, each
node after its inputs. A plain sort gives it whenever the sort already puts every input
first; these tests hold that to the order a ready-queue gives, on random graphs."""

from __future__ import annotations

import heapq
import random

from vizlib.capture.walk import _as_ran


def by_ready_queue(order: list, ran_at: dict, inputs: dict) -> list:
    """The least (when, position) among the nodes whose inputs are all listed, again and again."""
    consumers: dict = {}
    for fn in order:
        for nxt in inputs[fn]:
            consumers.setdefault(nxt, []).append(fn)
    when: dict = {}
    for fn in reversed(order):
        at = ran_at.get(fn)
        when[fn] = at if at is not None else min((when[c] for c in consumers.get(fn, ())), default=float("inf"))
    position = {fn: i for i, fn in enumerate(order)}
    pending = {fn: len(inputs[fn]) for fn in order}
    ready = [(when[fn], position[fn], k) for k, fn in enumerate(order) if pending[fn] == 0]
    heapq.heapify(ready)
    result = []
    while ready:
        *_, k = heapq.heappop(ready)
        fn = order[k]
        result.append(fn)
        for c in consumers.get(fn, ()):
            pending[c] -= 1
            if pending[c] == 0:
                heapq.heappush(ready, (when[c], position[c], order.index(c)))
    return result


def random_graph(rng: random.Random, as_ran: bool) -> tuple[list, dict, dict]:
    """Nodes in a topological order, each with up to 3 inputs listed before it, and when each
    of most of them ran: in that order (as a recording notes them), or at random."""
    nodes = [f"node{i}" for i in range(rng.randint(1, 40))]
    inputs = {fn: rng.sample(nodes[:i], k=min(i, rng.randint(0, 3))) for i, fn in enumerate(nodes)}
    ran_at = {fn: (i if as_ran else rng.random() * len(nodes)) for i, fn in enumerate(nodes) if rng.random() < 0.7}
    return nodes, ran_at, inputs


def test_the_order_is_the_ready_queues_whether_a_sort_can_give_it_or_not():
    rng = random.Random(2026)
    for as_ran in (True, False):
        for _ in range(300):
            order, ran_at, inputs = random_graph(rng, as_ran)
            position = {fn: i for i, fn in enumerate(order)}
            listed = [order[i] for i in _as_ran(order, ran_at, [[position[n] for n in inputs[fn]] for fn in order])]
            assert listed == by_ready_queue(order, ran_at, inputs)
            place = {fn: i for i, fn in enumerate(listed)}
            assert all(place[nxt] < place[fn] for fn in listed for nxt in inputs[fn])
