"""Backward, as vizlib runs it: what each node received and sent, in the order the engine
ran them, and the tensors saved for it let go of as a plain backward would.

A hook after an op node records the gradient that reached it, the gradient it sent along
each edge (for the nodes and edges a picture draws), and when it ran (for every node whose
place in the order the picture needs: ``first_in_backward``). The tensors the forward
saved (``ForwardRecorder``'s pack hook hands them to ``SavedForBackward``) are dropped once
the node that used them is done.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch.utils.hooks import RemovableHandle

from ..data import Node
from ..errors import VizlibValueError
from ..text import dims, dtype_name
from .nested import tensor_shape
from .rows import Pending
from .summary import Summaries


class _Held:
    """One tensor saved for backward; ``tensor`` is None once it has been let go.
    ``version``: its version counter when saved (autograd checks it on unpacking, but not
    for a tensor saved through hooks: ``SavedForBackward.unpack`` does).

    Where the caller had saved-tensor hooks of their own around the call (``save_on_cpu``),
    what their pack hook made of the tensor is held instead (``packed``, unpacked by their
    ``unpack``), as autograd would have held it without vizlib: ``tensor`` is None then."""

    __slots__ = ("tensor", "version", "packed", "unpack", "__weakref__")

    def __init__(self, tensor: torch.Tensor | None, packed: object = None, unpack: Callable | None = None):
        self.tensor = tensor
        self.version = tensor._version if tensor is not None else 0
        self.packed, self.unpack = packed, unpack


class SavedForBackward:
    """The tensors autograd saved during a recording, each let go once the backward node
    that unpacked it has run, as a plain ``backward()`` frees them.

    vizlib runs backward with ``retain_graph=True``: the graph may reach into tensors the
    caller made before the call, and their saved tensors must survive for the caller's own
    backward. Without this, everything saved inside the call would stay alive until
    backward ends: for a GPT-2-sized model, hundreds of MB above a plain training step.
    While ``in_backward``, each holder unpacked is noted with the node unpacking it. The
    engine runs each device's nodes on its own thread, one at a time, so once another node
    unpacks on that thread, or a hook that runs after a node calls ``node_done``, what the
    nodes before it there unpacked is let go of: no node needs a hook for it. ``all_done``
    lets go of the rest once backward has ended.
    """

    def __init__(self) -> None:
        # Each thread (by its ident): the holders its nodes unpacked, and the node that
        # unpacked last there (held, not its id: a node's Python object is made anew for
        # each ask unless one is alive, so a new node's could take a dead one's id).
        self._unpacked: dict[int, list[_Held]] = {}
        self._running: dict[int, object] = {}
        self.in_backward = False  # False: unpacked by vizlib naming saved tensors, kept
        # The caller's own saved-tensor hooks, (pack, unpack), that vizlib's would hide.
        self.outer: tuple[Callable, Callable] | None = None

    def pack(self, t: torch.Tensor, made_before: bool) -> _Held:
        """Hold ``t`` for its node. ``made_before``: ``t``'s grad_fn (if any) is a node made
        before the one saving it (a parameter, an earlier op's output).

        Otherwise ``t`` is the saving node's own output, held detached, as autograd holds a
        saved output itself: holding it with its grad_fn would make a cycle that keeps the
        node and its saved tensors alive after the graph lets go of it (autograd gives the
        unpacked tensor its grad_fn back). Any other tensor is held as it is: its grad_fn is
        one the saving node reaches anyway, and a ``detach`` for each of the hundreds of
        tensors a forward saves is a dispatcher call each, which a GPU's host pays dearly.
        The caller's own hooks (``outer``) get ``t`` as autograd hands it.
        """
        if self.outer is not None:
            pack, unpack = self.outer
            return _Held(None, pack(t), unpack)
        return _Held(t if made_before else t.detach())

    def unpack(self, held: _Held) -> torch.Tensor:
        if held.unpack is not None:  # the caller's hooks: they check what they choose to
            t = held.unpack(held.packed)
        elif held.tensor is not None:
            t = held.tensor
            if self.in_backward and t._version != held.version:
                raise _changed_in_place(t, held.version, torch._C._current_autograd_node())
        else:
            raise RuntimeError(
                "vz.graph already ran backward through this graph and let go of the tensors it "
                "saved, so it cannot be backpropagated again. Compute the result anew outside vz.graph."
            )
        if self.in_backward:
            node, thread = torch._C._current_autograd_node(), threading.get_ident()
            if self._running.get(thread) is not node:  # the nodes before it on this thread are done
                self._let_go(thread)
                self._running[thread] = node
            self._unpacked.setdefault(thread, []).append(held)
        return t

    def node_done(self) -> None:
        """The node running on this thread is done, and so is every node before it there."""
        self._let_go(threading.get_ident())

    def all_done(self) -> None:
        """Backward has ended: let go of what every thread's nodes unpacked."""
        for thread in list(self._unpacked):
            self._let_go(thread)
        self._running.clear()

    def _let_go(self, thread: int) -> None:
        for held in self._unpacked.pop(thread, ()):
            held.tensor = held.packed = held.unpack = None


def _changed_in_place(t: torch.Tensor, saved_at: int, node: object) -> VizlibValueError:
    """The error for a tensor changed in place after autograd saved it for ``node``: the
    gradient would be computed from the new values, so it would be wrong."""
    by = f" for {node.name()}" if node is not None else ""  # type: ignore[attr-defined]
    return VizlibValueError(
        f"A tensor of shape {dims(tensor_shape(t))} ({dtype_name(t.dtype)}) that autograd saved for backward{by} "
        f"was changed in place afterwards (its version went from {saved_at} to {t._version}), so its gradient "
        "would be computed from the wrong values. PyTorch refuses this backward too ('one of the variables "
        "needed for gradient computation has been modified by an inplace operation'). Change a copy instead "
        "(y = y.clone() before y.add_(1)), or use the op that makes a new tensor (y = y + 1 for y.add_(1))."
    )


@dataclass
class BackwardRecord:
    """What the backward pass reported: order of execution, gradients per node and per edge
    (Summaries' numbers, read once the recording is over)."""

    order: list[int] = field(default_factory=list)  # positions in Walked.fns
    grads: dict[int, Pending | None] = field(default_factory=dict)  # small copies only
    grad_stats: dict[int, Pending | None] = field(default_factory=dict)
    edge_norms: dict[tuple[int, int, int], Pending | None] = field(default_factory=dict)


def hook_backward(
    fns: list,
    edges: list[tuple[int, int, int]],
    saved: SavedForBackward,
    summaries: Summaries,
    drawn: tuple[set[int], set[tuple[int, int, int]]] | None = None,
    order_of: set[int] | None = None,
) -> tuple[BackwardRecord, list[RemovableHandle]]:
    """Put a hook on op nodes, run after each; return the record and the handles.

    ``edges`` are the graph's ``(input position, node position, slot in the node's
    next_functions)``, so that each hook can say which gradient went down which edge.
    Each hook also tells ``saved`` that its node is done, so that it can let go of what
    the node has used. ``summaries`` reduces each gradient's memory once, however many
    nodes and edges it passes through as a view. ``drawn`` (None: all) names the nodes
    whose gradients and the edges ``(src, dst, slot)`` whose norms the picture draws: only
    those are read. One hook per node, not a hook before and one after: the engine runs a
    thread's nodes one at a time, so the order they end in is the order they ran in.
    ``order_of`` (None: all) names the nodes whose place in that order is needed; the others
    with no number drawn get no hook at all (what they unpacked is let go of at the next
    hook on their thread, or by ``saved.all_done`` once backward ends).
    """
    rec = BackwardRecord()
    done = saved.node_done
    handles = []
    nodes, wanted = drawn if drawn is not None else (None, None)
    into: dict[int, list[tuple[int, int]]] = {}  # node -> (slot, input position) of its edges read, by slot
    for src, dst, slot in edges if wanted is None else sorted(wanted, key=lambda e: e[2]):
        into.setdefault(dst, []).append((slot, src))
    for i, fn in enumerate(fns):
        if isinstance(fn, torch.Tensor) or type(fn).__name__ == "AccumulateGrad":
            continue
        read_edges = into.get(i, [])
        if nodes is not None and i not in nodes and not read_edges:
            if order_of is None or i in order_of:
                handles.append(fn.register_hook(_only_order(i, rec.order, done)))
            continue
        read = nodes is None or i in nodes
        handles.append(fn.register_hook(_numbers_hook(i, read_edges, read, rec, summaries, done)))
    return rec, handles


def _numbers_hook(
    i: int,
    edges: list[tuple[int, int]],
    read: bool,
    rec: BackwardRecord,
    summaries: Summaries,
    done: Callable[[], None],
) -> Callable[..., None]:
    """The hook of node ``i``: it ran, the gradient that reached it (where ``read``), and
    the norm of what it sent down each of ``edges`` ``(slot, input position)``."""

    def post(grad_inputs: tuple[torch.Tensor | None, ...], grad_outputs: tuple[torch.Tensor | None, ...]) -> None:
        done()
        rec.order.append(i)
        if read and grad_outputs and grad_outputs[0] is not None:
            rec.grads[i], rec.grad_stats[i] = summaries.describe(grad_outputs[0], gradient=True)
        last: tuple[torch.Tensor | None, Pending | None] = (None, None)  # an add sends one gradient down both edges
        for slot, src in edges:
            g = grad_inputs[slot] if slot < len(grad_inputs) else None
            if g is not None:
                if g is not last[0]:
                    last = g, summaries.norm(g)
                rec.edge_norms[(src, i, slot)] = last[1]

    return post


def _only_order(i: int, order: list[int], done: Callable[[], None]) -> Callable[..., None]:
    """The hook of a node none of whose numbers are drawn: it only ran, at this point."""

    def post(grad_inputs: object, grad_outputs: object) -> None:
        done()
        order.append(i)

    return post


def first_in_backward(node_at: list[Node], edges: list[tuple[int, int, int]], depth: int) -> set[int]:
    """The positions of the op nodes whose place in backward's order a picture with the
    modules ``depth`` deep drawn as boxes needs (``node_at``: the node each position is
    drawn as; ``edges``: the walk's): the first of a box's nodes to run is one whose every
    consumer is outside it (a node waits for its consumers' gradients), so at most the
    nodes with a consumer in another box, or none; and the consumers of a leaf drawn apart
    from one of them, after whose last one its gradient is placed (``with_leaves``). A leaf
    in the box of all its consumers (a block's weight) comes after one of them, so never
    first in its box: where it goes changes nothing drawn, and its consumers need no hook
    for it (GPT-12: a hook less for every weight of the blocks)."""

    def box(n: Node) -> object:
        return n.modules[depth] if len(n.modules) > depth else n.id

    needed: set[int] = set()
    consumed: set[int] = set()
    consumers: dict[int, list[int]] = {}  # of each leaf
    apart: set[int] = set()  # leaves with a consumer in another box
    for s, d, _ in edges:
        consumed.add(s)
        a, b = node_at[s], node_at[d]
        leaf = a.kind == "leaf"
        if leaf:
            consumers.setdefault(s, []).append(d)
        if a is not b and box(a) != box(b):  # (a is b: an edge inside one stretch)
            (apart if leaf else needed).add(s)
    for s in apart:
        needed.update(consumers[s])
    return needed | {i for i in range(len(node_at)) if i not in consumed}


def with_leaves(order: list[int], leaf_pos: list[int], edges: list[tuple[int, int, int]]) -> list[int]:
    """Engine order of the ops, each leaf placed right after the last op that fed it a gradient.

    That is when autograd's AccumulateGrad node for the leaf would run in a .backward().
    """
    ran_at = {pos: k for k, pos in enumerate(order)}
    last_use: dict[int, int] = {}  # leaf -> when its last consumer ran
    for s, d, _ in edges:
        if d in ran_at:
            last_use[s] = max(last_use.get(s, -1), ran_at[d])
    after: dict[int, list[int]] = {}
    for leaf in leaf_pos:
        if leaf in last_use:
            after.setdefault(order[last_use[leaf]], []).append(leaf)
    result = []
    for pos in order:
        result.append(pos)
        result += after.get(pos, [])
    # A leaf no op consumed (the function returned its input) gets its gradient at once.
    placed = set(result)
    return result + [leaf for leaf in leaf_pos if leaf not in placed]
