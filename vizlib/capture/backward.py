"""Backward, as vizlib runs it: what each node received and sent, in the order the engine
ran them, and the tensors saved for it let go of as a plain backward would.

A hook after every op node records the gradient that reached it, the gradient it sent along
each edge (for the nodes and edges a picture draws), and when it ran. The tensors the
forward saved (``ForwardRecorder``'s pack hook hands them to ``SavedForBackward``) are
dropped once the node that used them is done.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch.utils.hooks import RemovableHandle

from .rows import Pending
from .summary import Summaries


class _Held:
    """One tensor saved for backward; ``tensor`` is None once it has been let go."""

    __slots__ = ("tensor", "__weakref__")

    def __init__(self, tensor: torch.Tensor):
        self.tensor = tensor


class SavedForBackward:
    """The tensors autograd saved during a recording, each let go once the backward node
    that unpacked it has run, as a plain ``backward()`` frees them.

    vizlib runs backward with ``retain_graph=True``: the graph may reach into tensors the
    caller made before the call, and their saved tensors must survive for the caller's own
    backward. Without this, everything saved inside the call would stay alive until
    backward ends: for a GPT-2-sized model, hundreds of MB above a plain training step.
    While ``in_backward``, each holder unpacked is noted, and the hook that runs after
    each node calls ``node_done`` to let go of what it unpacked (per thread: the engine
    runs each device's nodes on its own thread, a node's unpacking and its hook on one).
    """

    def __init__(self) -> None:
        self._local = threading.local()  # .unpacked: holders the running node unpacked
        self.in_backward = False  # False: unpacked by vizlib naming saved tensors, kept

    def pack(self, t: torch.Tensor) -> _Held:
        # Held detached, as autograd holds a saved output itself: the tensor's grad_fn may be
        # the very node saving it, and holding that would make a cycle that keeps the node and
        # its saved tensors alive after the graph lets go of it. Autograd gives the unpacked
        # tensor its grad_fn back.
        return _Held(t.detach())

    def unpack(self, held: _Held) -> torch.Tensor:
        if held.tensor is None:
            raise RuntimeError(
                "vz.graph already ran backward through this graph and let go of the tensors it "
                "saved, so it cannot be backpropagated again. Compute the result anew outside vz.graph."
            )
        if self.in_backward:
            unpacked = getattr(self._local, "unpacked", None)
            if unpacked is None:
                unpacked = self._local.unpacked = []
            unpacked.append(held)
        return held.tensor

    def node_done(self) -> None:
        unpacked = getattr(self._local, "unpacked", None)
        if unpacked:
            for held in unpacked:
                held.tensor = None
            unpacked.clear()


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
    edges_of: dict[int, list[tuple[int, int]]],
    saved: SavedForBackward,
    summaries: Summaries,
    drawn: tuple[set[int], set[tuple[int, int, int]]] | None = None,
) -> tuple[BackwardRecord, list[RemovableHandle]]:
    """Put a hook on every op node, run after it; return the record and the handles.

    ``edges_of[i]`` lists ``(slot, input position)`` for node i's next_functions, so the
    hook can say which gradient went down which edge. Each hook also tells ``saved`` that
    its node is done, so that it can let go of what the node has used. ``summaries``
    reduces each gradient's memory once, however many nodes and edges it passes through
    as a view. ``drawn`` (None: all) names the nodes whose gradients and the edges
    ``(src, dst, slot)`` whose norms the picture draws: only those are read. One hook per
    node, not a hook before and one after: the engine runs a thread's nodes one at a time,
    so the order they end in is the order they ran in.
    """
    rec = BackwardRecord()
    order = rec.order
    done = saved.node_done
    handles = []
    for i, fn in enumerate(fns):
        if isinstance(fn, torch.Tensor) or type(fn).__name__ == "AccumulateGrad":
            continue
        edges = edges_of.get(i, [])
        if drawn is not None:
            nodes, wanted = drawn
            edges = [(slot, src) for slot, src in edges if (src, i, slot) in wanted]
            if i not in nodes and not edges:
                handles.append(fn.register_hook(_only_order(i, order, done)))
                continue

        def post(
            grad_inputs: tuple[torch.Tensor | None, ...],
            grad_outputs: tuple[torch.Tensor | None, ...],
            i: int = i,
            edges: list[tuple[int, int]] = edges,
            read: bool = drawn is None or i in drawn[0],
        ) -> None:
            done()
            order.append(i)
            if read and grad_outputs and grad_outputs[0] is not None:
                rec.grads[i], rec.grad_stats[i] = summaries.describe(grad_outputs[0], gradient=True)
            last: tuple[torch.Tensor | None, Pending | None] = (None, None)  # an add sends one gradient down both edges
            for slot, src in edges:
                g = grad_inputs[slot] if slot < len(grad_inputs) else None
                if g is not None:
                    if g is not last[0]:
                        last = g, summaries.norm(g)
                    rec.edge_norms[(src, i, slot)] = last[1]

        handles.append(fn.register_hook(post))
    return rec, handles


def _only_order(i: int, order: list[int], done: Callable[[], None]) -> Callable[..., None]:
    """The hook of a node none of whose numbers are drawn: it only ran, at this point."""

    def post(grad_inputs: object, grad_outputs: object) -> None:
        done()
        order.append(i)

    return post
