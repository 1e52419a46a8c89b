"""Pure Graph -> Graph rewrites: collapse modules into boxes, keep pictures readable.

A transformer has thousands of autograd nodes; nobody reads that picture. Every op knows
the chain of modules it ran in (``Node.modules``, outermost first), so collapsing to a
depth is a group-by on one element of that chain. A deep model is mostly the same block
again and again, so a run of identical blocks, each feeding the next, is then drawn as
one box that says how many there are ("Block ×12"); a deeper ``depth`` opens them up.
A loop written without modules has no chain to group by: there the same ops come again
and again in the order they ran, and a run of them folds into one box ("mul → tanh",
loop ×300), so that ``max_nodes`` holds and `dot` lays out a handful of nodes, not the
thousands whose edges from one shared weight made its time grow with the square of the steps.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import accumulate
from operator import add

from .data import GraphData, ModuleSpec, Node

_CALL = re.compile(r"(.*) \(call (\d+)\)")  # the k-th call of a module run several times
_INDEX = re.compile(r"(.*\.)?(\d+)")  # the i-th child of a list of modules: "blocks.3", "0"
_UNNAMED = re.compile(r"(.+)#\d+")  # a module no name was given for, made unique: "Linear#2"


@dataclass(frozen=True)
class _Run:
    """Consecutive identical blocks that collapse into one box."""

    name: str  # "blocks.0-11", or "cell (calls 1-3)"
    spec: ModuleSpec
    paths: tuple[str, ...]


def collapse(g: GraphData, depth: int, drawn_as: dict[int, int] | None = None) -> GraphData:
    """Draw every module nested ``depth`` levels deep as one box (0: the outermost module).

    Nodes outside such modules (inputs, ops written in the outer function) stay as they
    are. A box takes the smallest id of its members, the shape, values and gradient of
    the member whose output leaves the box, and the sum of their saved bytes. Boxes of
    consecutive siblings (``blocks.0``, ``blocks.1``, ... or the calls of one module) with
    the same class and parameter shapes, each feeding the next, become a single box with
    ``repeats`` set to their number; the ops outside boxes that feed one of its calls each,
    alike for every call (``x[t]``), become one loop box beside it (``_fed_alike``).
    ``drawn_as`` (see ``fold``) follows each node into its box.
    """
    path_of = {n.id: n.modules[depth] for n in g.nodes if len(n.modules) > depth}
    if not path_of:
        return g
    runs = _runs(g, path_of)
    group, fed = _groups(g, path_of, runs)
    members: dict[tuple, list[Node]] = {}
    for n in g.nodes:
        members.setdefault(group[n.id], []).append(n)
    leaving = {s for s, d in g.edges if group[s] != group[d]}

    boxes = {}
    for k, ms in members.items():
        kind, name = k
        if kind == "run":
            run = runs[path_of[ms[0].id]]
            boxes[k] = _box(name, ms, depth, leaving, run.spec.type, len(run.paths))
        elif kind == "box":
            spec = _spec(g, name)
            boxes[k] = _box(name, ms, depth, leaving, spec.type if spec else None, 1)
    for run, calls in fed.items():
        k = ("fed", run.name)
        boxes[k] = _box(_fed_name(calls, members[k]), members[k], depth, leaving, LOOP, len(calls))
    return _merge(g, group, boxes, drawn_as)


def _groups(
    g: GraphData, path_of: dict[int, str], runs: dict[str, _Run]
) -> tuple[dict[int, tuple], dict[_Run, list[list[int]]]]:
    """What each node is drawn in: ("node", id) as itself, ("box", path) its module's box,
    ("run", name) a run's, ("fed", name) the loop box of what feeds a run's calls; and those
    ops by run and call (``_fed_alike``)."""
    group: dict[int, tuple] = {}
    for n in g.nodes:
        path = path_of.get(n.id)
        if path is None:
            group[n.id] = ("node", n.id)
        elif path in runs:
            group[n.id] = ("run", runs[path].name)
        else:
            group[n.id] = ("box", path)
    fed = _fed_alike(g, group, path_of, runs)
    for run, calls in fed.items():
        group.update({i: ("fed", run.name) for ids in calls for i in ids})
    return group, fed


def _fed_name(calls: list[list[int]], members: list[Node]) -> str:
    """The name of the loop box of the ops that feed each call of a run (``getitem → mul``):
    the label of each of their steps, across the calls."""
    by_id = {n.id: n for n in members}
    return _loop_name([_label([by_id[ids[j]] for ids in calls]) for j in range(len(calls[0]))])


def _fed_alike(
    g: GraphData, group: dict[int, tuple], path_of: dict[int, str], runs: dict[str, _Run]
) -> dict[_Run, list[list[int]]]:
    """For each run of calls folded into one box, the ops drawn outside any box that feed
    one call each, where every call is fed by the same ops: ``h = cell(x[t], h)`` selects a
    step of ``x`` for each call. Those fold into one loop box beside the run's ("getitem",
    loop ×50): drawn one by one, they would line up side by side, all feeding the one box.

    An op feeds a call when each of its consumers is that call, or an op that feeds it
    (``x[t] * 2``: the select and the mul). Each run maps to the ids of the ops feeding each
    of its calls, in order. Folding them draws no cycle that was not there: each of them
    reaches the run's box, so a path from that box back to one of them would be one already.
    """
    if not runs:
        return {}
    call_at = {p: (run, k) for run in runs.values() for k, p in enumerate(run.paths)}
    call_of = {i: call_at[p] for i, p in path_of.items() if p in call_at}
    consumers: dict[int, list[int]] = {}
    producers: dict[int, list[int]] = {}
    for s, d in g.edges:
        consumers.setdefault(s, []).append(d)
        producers.setdefault(d, []).append(s)
    ops = {n.id for n in g.nodes if n.kind == "op" and group[n.id][0] == "node"}
    feeds: dict[int, tuple[_Run, int]] = {}
    pending = [s for s, d in g.edges if d in call_of and s in ops]
    while pending:  # (an op is asked again once one more of its consumers is found to feed a call)
        s = pending.pop()
        fed = [call_of.get(d) or feeds.get(d) for d in consumers[s]]
        if s not in feeds and fed[0] is not None and all(call == fed[0] for call in fed):
            feeds[s] = fed[0]
            pending += [p for p in producers.get(s, ()) if p in ops]
    calls: dict[_Run, list[list[int]]] = {run: [[] for _ in run.paths] for run in dict.fromkeys(runs.values())}
    for i in sorted(feeds):
        run, k = feeds[i]
        calls[run][k].append(i)
    by_id = {n.id: n for n in g.nodes}
    return {run: ids for run, ids in calls.items() if _alike(g, ids, by_id)}


def _alike(g: GraphData, calls: list[list[int]], by_id: dict[int, Node]) -> bool:
    """Whether every call is fed by ops, the same ops in the same order."""
    steps = {tuple(_signature(g, by_id[i]) for i in ids) for ids in calls}
    return len(steps) == 1 and bool(calls[0])


def _loop_name(unit: list[str]) -> str:
    """The name of a loop box from the labels of the steps of one turn (``mul → tanh``)."""
    return " → ".join(unit[:3]) + (" → …" if len(unit) > 3 else "")


def _merge(
    g: GraphData, group: dict[int, tuple], boxes: dict[tuple, Node], drawn_as: dict[int, int] | None
) -> GraphData:
    """``g`` with each group of nodes drawn as its box (``group[id]`` is ("node", id) for a
    node that stays as it is); edges between groups kept once, in order. ``drawn_as``: each
    node of the graph ``g`` was folded from -> the id it has in ``g``, moved on to its box."""
    new_id = {k: box.id for k, box in boxes.items()}
    nodes = [n for n in g.nodes if group[n.id] not in boxes] + list(boxes.values())
    for n in g.nodes:
        new_id.setdefault(group[n.id], n.id)
    if drawn_as is not None:
        for first, now in drawn_as.items():
            drawn_as[first] = new_id[group[now]]
    nodes.sort(key=lambda n: n.id)

    edges, edge_grads, seen = [], [], set()
    for (s, d), eg in zip(g.edges, g.edge_grads, strict=True):
        e = (new_id[group[s]], new_id[group[d]])
        if e[0] != e[1] and e not in seen:
            seen.add(e)
            edges.append(e)
            edge_grads.append(eg)
    order = list(dict.fromkeys(new_id[group[i]] for i in g.backward_order))
    return replace(g, nodes=nodes, edges=edges, edge_grads=edge_grads, backward_order=order, notes=list(g.notes))


def _box(name: str, members: list[Node], depth: int, leaving: set[int], module_type: str | None, repeats: int) -> Node:
    out = [m for m in members if m.is_output] or [m for m in members if m.id in leaving] or members
    # The box shows what leaves it: the shape, dtype, values and gradient of that member.
    return replace(
        out[-1],
        id=min(m.id for m in members),
        kind="module",
        name=name,
        op=None,  # a module's box: no one op made it (and its members may have run unwatched)
        saved_bytes=sum(m.saved_bytes for m in members),
        saved=[],
        module=name,
        modules=out[-1].modules[:depth] + (name,),
        members=sum(m.members for m in members),
        module_type=module_type,
        repeats=repeats,
        is_output=any(m.is_output for m in members),
    )


def _spec(g: GraphData, path: str) -> ModuleSpec | None:
    """The class and parameter shapes of the module at ``path`` (a call's path included)."""
    return g.module_specs.get(_called(path))


def _runs(g: GraphData, path_of: dict[int, str]) -> dict[str, _Run]:
    """Each box path that belongs to a run of identical blocks -> its run."""
    paths = list(dict.fromkeys(path_of[n.id] for n in g.nodes if n.id in path_of))
    called_again = {m[1] for p in paths if (m := _CALL.fullmatch(p))}
    feeds = {(path_of[s], path_of[d]) for s, d in g.edges if s in path_of and d in path_of}
    series: dict[tuple[str, str], list[tuple[int, str]]] = {}
    for path in paths:
        if m := _CALL.fullmatch(path):
            series.setdefault(("calls", m[1]), []).append((int(m[2]), path))
        elif path in called_again:
            series.setdefault(("calls", path), []).append((1, path))
        elif m := _INDEX.fullmatch(path):
            series.setdefault(("index", m[1] or ""), []).append((int(m[2]), path))
    runs: dict[str, _Run] = {}

    def fold(how: str, base: str, run: list[tuple[int, str]]) -> None:
        spec = _spec(g, run[0][1])
        if len(run) > 1 and spec is not None and not _leaves_and_returns(g, path_of, {p for _, p in run}):
            first, end = run[0][0], run[-1][0]
            name = f"{base} (calls {first}-{end})" if how == "calls" else f"{base}{first}-{end}"
            folded = _Run(name, spec, tuple(p for _, p in run))
            runs.update(dict.fromkeys(folded.paths, folded))

    for (how, base), items in series.items():
        items.sort()
        run = [items[0]]
        for pos, path in items[1:]:
            last_pos, last = run[-1]
            spec = _spec(g, last)
            if pos == last_pos + 1 and spec is not None and _spec(g, path) == spec and (last, path) in feeds:
                run.append((pos, path))
            else:
                fold(how, base, run)
                run = [(pos, path)]
        fold(how, base, run)
    return runs


def _leaves_and_returns(g: GraphData, path_of: dict[int, str], paths: set[str]) -> bool:
    """True when a path leads from these boxes out and back in (folding them would draw a cycle)."""
    inside = {i for i, p in path_of.items() if p in paths}
    consumers: dict[int, list[int]] = {}
    for s, d in g.edges:
        consumers.setdefault(s, []).append(d)
    stack = [d for s in inside for d in consumers.get(s, ()) if d not in inside]
    seen = set(stack)
    while stack:
        for d in consumers.get(stack.pop(), ()):
            if d in inside:
                return True
            if d not in seen:
                seen.add(d)
                stack.append(d)
    return False


def simplify(g: GraphData, depth: int | None, max_nodes: int | None) -> GraphData:
    """Apply ``depth``; without one, collapse as little as needed to fit ``max_nodes``:
    modules first, deepest level first; then runs of repeated ops (loops) folded."""
    return fold(g, depth, max_nodes)[0]


def fold(g: GraphData, depth: int | None, max_nodes: int | None) -> tuple[GraphData, dict[int, int]]:
    """``simplify(g, depth, max_nodes)``, and the id of the node each of ``g``'s nodes is
    drawn as (its own, or its box's): what a second picture of the same structure with
    other numbers needs (``DrawnNumbers.picture``) to skip folding again."""
    drawn_as = {n.id: n.id for n in g.nodes}
    if depth is not None:
        return collapse(g, depth, drawn_as), drawn_as
    if max_nodes is None or _count(g) <= max_nodes:
        return g, drawn_as
    small, how, tangled = g, "", ""
    for d in _depths_worth_trying(g, max_nodes):
        drawn_as = {n.id: n.id for n in g.nodes}  # (each depth is collapsed from g)
        small = collapse(g, d, drawn_as)
        how = f"modules nested {d} level{'s' if d != 1 else ''} deep are drawn as one box each"
        if _count(small) <= max_nodes:
            if len(small.edges) <= EDGES_PER_NODE * max_nodes or d == 0:
                break
            # (a DenseNet's layers each feed every later one: 93 boxes, 627 edges, a hairball)
            tangled = tangled or f"; {d} levels deep would draw {len(small.edges)} edges"
    if _count(small) > max_nodes:
        folded_as = dict(drawn_as)
        folded = fold_repeats(small, max_nodes, folded_as)
        if len(folded.nodes) < len(small.nodes):
            small, drawn_as = folded, folded_as
            how = f"{how} and " if how else ""
            how += "ops repeated in a row (a loop) are drawn as one box each"
    if not how:
        how = "no modules ran and no run of ops repeats enough to draw as a loop, so nothing could be collapsed"
    small.notes.append(
        f"{_count(g)} nodes is more than max_nodes={max_nodes}, so {how} ({_count(small)} nodes{tangled}); "
        "pass depth= to choose, or max_nodes=None to see every op"
    )
    return small, drawn_as


# A depth whose boxes fit ``max_nodes`` is still passed over for a shallower one where it
# would draw more than this many edges per node allowed: the eye cannot follow them.
EDGES_PER_NODE = 2


def _count(g: GraphData) -> int:
    """The nodes ``g`` stands for (see ``_stands_for``)."""
    return sum(map(_stands_for, g.nodes))


def _stands_for(n: Node) -> int:
    """How many nodes ``n`` is drawn as where no box holds it: an op node made of several
    (the ops of a module call run unwatched, capture.build's ``_Built``) as all of them,
    each as itself; a leaf or a box as one."""
    return n.members if n.kind == "op" else 1


def _depths_worth_trying(g: GraphData, max_nodes: int) -> list[int]:
    """The depths to collapse ``g`` to, deepest first, ending with 0 (none without modules).
    Nodes run ``d`` or fewer modules deep stay as they are in ``collapse(g, d)``: where they
    alone are more than ``max_nodes``, that depth is passed over without drawing it."""
    levels = max(len(n.modules) for n in g.nodes)
    at_most = [0] * (levels + 1)
    for n in g.nodes:
        at_most[len(n.modules)] += _stands_for(n)
    for d in range(1, levels + 1):
        at_most[d] += at_most[d - 1]
    return [d for d in range(levels - 1, 0, -1) if at_most[d] <= max_nodes] + [0] if levels else []


# ---------------------------------------------------------------- numbers worth reading


class DrawnNumbers:
    """Which numbers ``simplify(g, depth, max_nodes)`` will draw, known while ``g`` is recorded.

    A box shows the numbers of one member (what leaves it), a drawn edge the gradient of
    one edge it stands for; the rest are dropped. Reducing a tensor to its numbers is most
    of a recording's cost on a GPU, so a capture asks this first. Before the graph is whole
    (the forward), it can only rule out: ``op`` and ``module_output`` say False only where
    no depth ``simplify`` could choose would draw the numbers. Once the graph is whole
    (before backward), ``of`` says exactly which nodes and edges are drawn.

    Ruling out: ``collapse(g, d)`` draws every op run ``d`` or fewer modules deep as a node
    of its own, and every module run ``d`` deep as a box, one per run of identical blocks:
    so at least as many nodes as such ops, plus such modules that cannot be part of a run
    (the first call of a module whose name is not a list index). Once that is more than
    ``max_nodes`` for every depth from ``d`` on, ``simplify`` picks a shallower one (or
    depth 0 and folds loops, whose boxes show ops run outside any module, always read).
    What modules yet to run will add is expected too: ``blocks.1`` to ``blocks.11``, of
    ``blocks.0``'s class and parameters, as many ops and boxes as ``blocks.0`` ran, counted
    as ``blocks.0`` runs them (GPT-12 is then known too big to draw its blocks' insides a
    few ops into its first block, not after five blocks). Each such guess gives way to the
    count of what the module really runs.

    A guess can be wrong: an op run for nothing (its result never reaches the output)
    counts, and a module expected may never run. Then the picture may draw a node whose
    numbers were passed over: the recording reads them late if its tensor (or what
    autograd saved of it) is still there, and otherwise runs the call again reading every
    number (capture.build), so the picture is always the one all numbers would give.
    """

    def __init__(self, depth: int | None, max_nodes: int | None) -> None:
        self.depth, self.max_nodes = depth, max_nodes
        # Of the ops and of the modules that cannot fold into a run, by how many modules deep
        # they ran: those recorded so far, and those expected of modules yet to run.
        self._ops, self._boxes = [0], [0]
        self._expected_ops, self._expected_boxes = [0], [0]
        self._expected: dict[object, tuple[list[int], list[int]]] = {}  # module key -> its share
        # Each open module: the counts when it began, and its twins (modules yet to run
        # expected to do as it does); ``_twins`` of all open modules, each of whose ops and
        # boxes is expected that many times more.
        self._starts: list[tuple[list[int], list[int], list[object]]] = []
        self._twins = 0
        self._too_deep: int | None = None  # from this depth on, no collapse fits
        self._plan: _Plan | None = None  # what ``of`` folded, for ``picture``

    @property
    def predicts(self) -> bool:
        """Whether counting (and expecting) ops can rule anything out."""
        return self.depth is None and self.max_nodes is not None

    def op(self, level: int) -> bool:
        """Note an op run ``level`` modules deep; False when no picture could draw it as a node."""
        self.ops_ran(level, 1)
        return self.may_draw(level)

    def may_draw(self, level: int) -> bool:
        """Whether an op run ``level`` modules deep could still be drawn as a node of its own
        (asked before a module's ops run: none of them is counted)."""
        if self.depth is not None:
            return level <= self.depth
        return self.max_nodes is None or self._may_draw(level)

    def ops_ran(self, level: int, k: int) -> None:
        """Note ``k`` ops run ``level`` modules deep: one for ``op``, or all those of a
        module call the recorder did not watch, knowing none of them could be drawn."""
        if self.depth is not None or self.max_nodes is None or k <= 0:
            return
        _add(self._ops, level, k)
        if self._twins:
            _add(self._expected_ops, level, k * self._twins)
        if self._too_deep is None or level < self._too_deep:  # else it only adds to depths already too deep
            self._update()

    def module_entered(self, key: object, alike: Sequence[object] = ()) -> None:
        """A module starts: what was expected of it gives way to what it runs. ``alike``
        are modules yet to run beside it with the same class and parameters, expected to
        run as many ops as it does: each op it runs is expected of them too."""
        if not self.predicts:
            return
        share = self._expected.pop(key, None)
        if share is None:  # a twin of a module still running (it calls its sibling)?
            share = self._twin_of_open(key)
        if share is not None:
            self._expect(share, -1)
            self._update()
        twins = [k for k in alike if k not in self._expected]
        self._starts.append((list(self._ops), list(self._boxes), twins))
        self._twins += len(twins)

    def module_left(self, level: int, path: str, ran_ops: bool) -> bool:
        """A module run ``level`` modules deep (0: the outermost) ends, having recorded ops or
        not. Whether it may be drawn as a box, which shows its output's numbers."""
        if self.depth is not None:
            return ran_ops and level == self.depth
        if self.max_nodes is None:
            return False  # nothing is collapsed: every op is drawn as itself
        start, boxes, twins = self._starts.pop() if self._starts else ([], [], [])
        self._twins -= len(twins)
        if twins:  # expected of them as it ran (ops_ran): now each has its share to give way
            share = (_minus(self._ops, start), _minus(self._boxes, boxes))
            self._expected.update(dict.fromkeys(twins, share))
        if ran_ops and not _INDEX.fullmatch(path) and not _CALL.fullmatch(path):
            _add(self._boxes, level, 1)
            if self._twins:
                _add(self._expected_boxes, level, self._twins)
            self._update()
        return ran_ops and self._may_draw(level)

    def _twin_of_open(self, key: object) -> tuple[list[int], list[int]] | None:
        """What was expected so far of ``key`` as the twin of an open module, taken out of
        that module's twins; None where it is none's."""
        for start, boxes, twins in self._starts:
            if key in twins:
                twins.remove(key)
                self._twins -= 1
                return _minus(self._ops, start), _minus(self._boxes, boxes)
        return None

    def _may_draw(self, level: int) -> bool:
        return level == 0 or self._too_deep is None or level < self._too_deep

    def _expect(self, share: tuple[list[int], list[int]], sign: int) -> None:
        """Add (``sign`` 1) or take away (-1) what one module yet to run is expected to record."""
        for counts, expected in zip(share, (self._expected_ops, self._expected_boxes), strict=True):
            for level, k in enumerate(counts):
                _add(expected, level, sign * k)

    def _update(self) -> None:
        """Find the depth from which no collapse fits: where the ops drawn as nodes of
        their own, and the boxes, recorded and expected, are more than ``max_nodes``."""
        assert self.max_nodes is not None
        counts = (self._ops, self._expected_ops, self._boxes, self._expected_boxes)
        levels = max(map(len, counts))
        for c in counts:
            c += [0] * (levels - len(c))
        # (asked after nearly every op and module a forward runs: sums made by map, not a loop)
        ops = accumulate(map(add, self._ops, self._expected_ops))  # ops at most d deep, each depth d
        least = list(map(add, ops, map(add, self._boxes, self._expected_boxes)))
        self._too_deep = None
        for d in range(levels - 1, -1, -1):
            if least[d] <= self.max_nodes:
                break
            self._too_deep = d

    def of(self, g: GraphData) -> tuple[set[int], set[int], set[int], int | None]:
        """The ids of the nodes whose numbers the picture of ``g`` draws, those of them it
        draws as nodes of their own (not as a box), the positions in ``g.edges`` of the
        edges whose gradients it draws, and the depth of the modules it draws as boxes
        (0 where none; None where it folds loops, boxes of ops that repeat).

        ``simplify`` runs with each node carrying its id in place of its gradient (``g`` has
        no numbers yet; they are put back to None) and each edge its position in place of
        its norm: a box is a copy of the member it shows, and a drawn edge keeps the
        gradient of the first edge it stands for.
        """
        for n in g.nodes:
            n.grad = n.id
        try:
            positions: list[float | None] = list(range(len(g.edges)))
            small, drawn_as = fold(replace(g, edge_grads=positions, notes=[]), self.depth, self.max_nodes)
            shows = {n.id: n.grad for n in small.nodes if isinstance(n.grad, int)}
            self._plan = _Plan(g, small, shows, drawn_as)
            ids = set(shows.values())
            own = {n.grad for n in small.nodes if isinstance(n.grad, int) and n.kind != "module"}
            boxes = [n for n in small.nodes if n.kind == "module"]
            depth = (
                None
                if any(n.module_type == LOOP for n in boxes)
                else min((len(n.modules) - 1 for n in boxes), default=0)
            )
            return ids, own, {int(k) for k in small.edge_grads if k is not None}, depth
        finally:
            for n in g.nodes:
                n.grad = None

    def picture(self, g: GraphData) -> GraphData:
        """``simplify(g, self.depth, self.max_nodes)``. Where ``of`` was asked about this
        very graph, its structure is folded already (only numbers came since, and the
        bytes autograd's names gave what each drawn node saved): those are put into that
        fold, not folded again (a tenth of a recording's bookkeeping for GPT-12)."""
        plan, self._plan = self._plan, None
        if plan is None or plan.graph is not g or plan.small.nodes is g.nodes:  # (the last: nothing folded)
            return simplify(g, self.depth, self.max_nodes)
        saved_bytes: dict[int, int] = {}
        for n in g.nodes:
            k = plan.drawn_as[n.id]
            saved_bytes[k] = saved_bytes.get(k, 0) + n.saved_bytes
        by_id = {n.id: n for n in g.nodes}
        for n in plan.small.nodes:
            shown = by_id.get(plan.shows.get(n.id, -1))
            if shown is None or shown is n:  # a node drawn as itself: its numbers are in place
                continue
            n.value, n.value_stats, n.grad, n.grad_stats = shown.value, shown.value_stats, shown.grad, shown.grad_stats
            n.saved_bytes = saved_bytes[n.id]
        return replace(
            g,
            nodes=plan.small.nodes,
            edges=plan.small.edges,
            edge_grads=[None if k is None else g.edge_grads[int(k)] for k in plan.small.edge_grads],
            backward_order=list(dict.fromkeys(plan.drawn_as[i] for i in g.backward_order)),
            notes=g.notes + plan.small.notes,
        )


@dataclass
class _Plan:
    """What ``DrawnNumbers.of`` folded: the graph, its fold (each node holding the id of
    the node whose numbers it shows in place of its gradient, ``shows``), and the id each
    node of the graph is drawn as."""

    graph: GraphData
    small: GraphData
    shows: dict[int, int]
    drawn_as: dict[int, int]


def _add(counts: list[int], level: int, k: int) -> None:
    while len(counts) <= level:
        counts.append(0)
    counts[level] += k


def _at(counts: list[int], level: int) -> int:
    return counts[level] if level < len(counts) else 0


def _minus(now: list[int], before: list[int]) -> list[int]:
    return [k - _at(before, level) for level, k in enumerate(now)]


# ---------------------------------------------------------------- loops without modules

LOOP = "loop"  # the module_type of a box that stands for ops repeated in a row
_MAX_UNIT = 64  # the longest run of ops recognised as one turn of a loop
# Folding stops once the best run saves less than this share (1/N) of the nodes over max_nodes.
_FEWEST_SAVED = 100


def fold_repeats(g: GraphData, max_nodes: int, drawn_as: dict[int, int] | None = None) -> GraphData:
    """Fold runs of the same ops again and again (a loop's turns, a recurrent cell called
    in a loop) into one box each, the run saving most nodes first, until ``g`` fits
    ``max_nodes`` or nothing repeats. Box ``mul → tanh`` with ``repeats=300`` stands for
    300 turns of ``mul``, ``tanh``; a loop of loops folds again around the inner boxes.

    The ops of a run are consecutive in a topological order (leaves aside, which have no
    inputs), so no path leaves the box and comes back: folding never draws a cycle.
    ``drawn_as`` (see ``fold``) follows each node into its box.
    """
    while len(g.nodes) > max_nodes:
        found = _best_repeat(g)
        # A run that saves too few of the nodes over the limit is not a loop worth a box, and
        # a chain of ops that never repeats would fold one such pair at a time, each pass
        # reading the whole graph again (20,000 ops: over a minute, and still far over).
        if found is None or (len(found[0]) - 1) * _FEWEST_SAVED < len(g.nodes) - max_nodes:
            break
        g = _fold(g, *found, drawn_as)
    return g


def _best_repeat(g: GraphData) -> tuple[list[Node], int] | None:
    """The run of repeated ops that saves most nodes: its ops in order, and its turns."""
    import numpy as np  # here: transform imports no NumPy until a graph needs folding

    ops = [n for n in _topological(g) if n.kind != "leaf"]
    codes_of: dict[tuple, int] = {}
    codes = np.array([codes_of.setdefault(_signature(g, n), len(codes_of)) for n in ops], dtype=np.int64)
    best: tuple[int, int, int, int] | None = None  # (saving, unit, start, turns)
    for unit in range(1, min(_MAX_UNIT, len(ops) // 2) + 1):
        same = np.concatenate(([0], (codes[:-unit] == codes[unit:]).astype(np.int8), [0]))
        edges = np.diff(same)
        starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
        if not len(starts):
            continue
        all_turns = (ends - starts + unit) // unit
        k = int(np.argmax(all_turns))
        saving = int(all_turns[k]) * unit - 1
        if all_turns[k] >= 2 and (best is None or saving > best[0]):
            best = (saving, unit, int(starts[k]), int(all_turns[k]))
    if best is None:
        return None
    _, size, start, turns = best
    return ops[start : start + size * turns], turns


def _fold(g: GraphData, run: list[Node], turns: int, drawn_as: dict[int, int] | None) -> GraphData:
    """``g`` with the ops of ``run`` (and the leaves each turn has its own of) drawn as one loop box."""
    consumers: dict[int, set[int]] = {}
    for s, d in g.edges:
        consumers.setdefault(s, set()).add(d)
    members = run + _leaves_of_each_turn(g, run, turns, consumers)
    ids = {n.id for n in members}
    size = len(run) // turns
    name = _loop_name([_label(run[j::size]) for j in range(size)])
    leaving = [n for n in run if n.is_output or consumers.get(n.id, set()) - ids] or run
    prefix = _common_prefix([n.modules for n in members])
    box = replace(
        leaving[-1],
        id=min(ids),
        kind="module",
        name=name,
        saved_bytes=sum(n.saved_bytes for n in members),
        saved=[],
        module=name,
        modules=prefix + (name,),
        members=sum(n.members for n in members),
        module_type=LOOP,
        repeats=turns,
        is_output=any(n.is_output for n in members),
    )
    group: dict[int, tuple] = {n.id: ("loop", box.id) if n.id in ids else ("node", n.id) for n in g.nodes}
    return _merge(g, group, {("loop", box.id): box}, drawn_as)


def _leaves_of_each_turn(g: GraphData, run: list[Node], turns: int, consumers: dict[int, set[int]]) -> list[Node]:
    """The leaves that go inside a loop's box: those each turn has its own of (a weight per
    step, ``layers.3.weight``): used by that turn alone, at the same step of every turn, of
    one shape and dtype. The rest stay outside, with their gradients: a weight every turn
    shares, and the loop's input, which only the first turn uses and no other turn has the
    like of (where it looks like a turn's own weight, the first such leaf of that turn stays out)."""
    size = len(run) // turns
    at = {n.id: divmod(k, size) for k, n in enumerate(run)}  # op -> (its turn, its step in it)
    own: dict[tuple, list[list[Node]]] = {}  # (step, shape, dtype) -> each turn's leaves of it
    for n in g.nodes:
        used_by = consumers.get(n.id, set())
        if n.kind != "leaf" or not used_by or not used_by <= at.keys():
            continue
        places = [at[d] for d in used_by]
        if len({turn for turn, _ in places}) == 1:  # one turn's own
            kind = (min(step for _, step in places), n.shape, n.dtype)
            own.setdefault(kind, [[] for _ in range(turns)])[places[0][0]].append(n)
    inside = []
    for per_turn in own.values():
        each = min(len(leaves) for leaves in per_turn)  # how many of the kind every turn has
        inside += [n for leaves in per_turn for n in leaves[len(leaves) - each :]]
    return inside


def _signature(g: GraphData, n: Node) -> tuple:
    """What makes two nodes the same step of a loop: the op, or the module: any call of it,
    and any module of a list, or any module no name was given for, of one class and
    parameter shapes (``for layer in layers: x = torch.tanh(layer(x))`` runs ``layers.0``,
    ``layers.1``, ... or ``Linear``, ``Linear#2``, ...: one step each, turn after turn)."""
    if n.kind == "module":
        path = _called(n.name)
        return ("module", _kin_name(path), n.module_type, n.repeats, g.module_specs.get(path))
    return ("op", n.name, n.op)


def _called(name: str) -> str:
    """A box's module path without the call (``cell (call 2)`` -> ``cell``)."""
    m = _CALL.fullmatch(name)
    return m[1] if m else name


def _kin_name(path: str) -> str:
    """What the modules of one list, or the unnamed modules of one class, share:
    ``layers.3`` -> ``layers.#``, ``Linear#2`` -> ``Linear``; any other path as it is."""
    if m := _INDEX.fullmatch(path):
        return f"{m[1] or ''}#"
    m = _UNNAMED.fullmatch(path)
    return m[1] if m else path


def _label(turns: list[Node]) -> str:
    """The name a loop box gives one step of its turn (``turns``: that step in each turn):
    the op, the module called each turn, or the list's modules run in turn (``layers.0-199``),
    or the class of unnamed ones (``Linear``)."""
    n = turns[0]
    if n.kind != "module":
        return n.op or n.name
    paths = [_called(t.name) for t in turns]
    if len(set(paths)) == 1:
        return paths[0]
    first, last = _INDEX.fullmatch(paths[0]), _INDEX.fullmatch(paths[-1])
    if first and last:
        return f"{first[1] or ''}{first[2]}-{last[2]}"
    return _kin_name(paths[0])


def _common_prefix(chains: list[tuple[str, ...]]) -> tuple[str, ...]:
    first = chains[0] if chains else ()
    k = 0
    while k < len(first) and all(len(c) > k and c[k] == first[k] for c in chains):
        k += 1
    return first[:k]


def _topological(g: GraphData) -> list[Node]:
    """The nodes inputs first, ties broken by id (the order the ops ran)."""
    import heapq

    by_id = {n.id: n for n in g.nodes}
    pending = {n.id: 0 for n in g.nodes}
    consumers: dict[int, list[int]] = {}
    for s, d in g.edges:
        pending[d] += 1
        consumers.setdefault(s, []).append(d)
    ready = [i for i, k in pending.items() if k == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        i = heapq.heappop(ready)
        order.append(by_id[i])
        for d in consumers.get(i, ()):
            pending[d] -= 1
            if pending[d] == 0:
                heapq.heappush(ready, d)
    return order
