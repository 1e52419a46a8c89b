"""``vz.replay(g)``: watch backward run one autograd node at a time.

Step k of the player shows the graph after the engine ran the first k nodes of
``g.backward_order``: the node running now is highlighted, only nodes already run show
their gradients, and a line of text says what happened at this step. Every step is drawn
on the layout of the finished picture (see ``vizlib.render.svg_patch``), so the boxes stay put while the
gradients fill in, and stepping costs a few milliseconds instead of a Graphviz run.
"""

from __future__ import annotations

import numbers

import ipywidgets as widgets

from ..data import GraphData, Node
from ..errors import VizlibTypeError, VizlibValueError
from ..render import LayoutCache, to_dot
from ..text import fmt, fmt_value
from .widgets import GRAPH_CLASS, StaticFallback, svg_for_html

STEP_CLASS = "vizlib-replay-step"  # the text line saying which node runs, for readers and tests
INTERVAL_MS = 1000  # time per step while playing: long enough to read the step's line


class Replay(StaticFallback, widgets.VBox):
    """The widget ``vz.replay`` returns: Play button and step slider above the graph."""

    def __init__(self, g: GraphData):
        self.graph = g
        self._layout = LayoutCache()
        self._layout.svg(to_dot(g))  # the finished picture fixes the layout every step reuses
        self._svgs: dict[int, str] = {}
        n = len(g.backward_order)
        self._play = widgets.Play(value=0, min=0, max=n, step=1, interval=INTERVAL_MS, description="Play")
        self._slider = widgets.IntSlider(value=0, min=0, max=n, description="step")
        widgets.jslink((self._play, "value"), (self._slider, "value"))  # moves together in the browser
        self._text = widgets.HTML()
        self._text.add_class(STEP_CLASS)
        self._picture = widgets.HTML()
        self._picture.add_class(GRAPH_CLASS)
        self._slider.observe(lambda change: self._show(change["new"]), names="value")
        self._show(0)
        super().__init__(children=[widgets.HBox([self._play, self._slider]), self._text, self._picture])
        self.add_class("vizlib-replay")

    def step_svg(self, k: int) -> str:
        """The picture after the first ``k`` backward steps (computed once, then cached)."""
        self._check_step(k)
        if k not in self._svgs:
            order = self.graph.backward_order
            current = order[k - 1] if k else None
            self._svgs[k] = self._layout.svg(to_dot(self.graph, current=current, done=set(order[:k])))
        return self._svgs[k]

    def step_text(self, k: int) -> str:
        """What happens at step ``k``, e.g. 'step 3/5: MulBackward0 — grad 1 ...'."""
        self._check_step(k)
        order = self.graph.backward_order
        n = len(order)
        if k == 0:
            return f"step 0/{n}: before backward — press Play to run it one node at a time"
        node = self.graph.node(order[k - 1])
        if node.kind == "leaf":
            what = f"grad {_grad(node)} is complete: backward would add it to {node.name}.grad"
        else:
            what = f"grad {_grad(node)} arrives; it passes gradients on to its inputs"
        return f"step {k}/{n}: {node.name} — {what}"

    def _check_step(self, k: int) -> None:
        """Refuse a step the replay does not have (0 is before backward, n after its last node)."""
        n = len(self.graph.backward_order)
        if isinstance(k, bool) or not isinstance(k, numbers.Integral):
            raise VizlibTypeError(f"A replay's step is a whole number from 0 to {n}; got {type(k).__name__} {k!r:.40}.")
        if not 0 <= k <= n:
            raise VizlibValueError(f"This replay has steps 0 (before backward) to {n}; got step {k}.")

    def _show(self, k: int) -> None:
        self._text.value = self.step_text(k)
        self._picture.value = svg_for_html(self.step_svg(k))

    def _static_svg(self) -> str:
        return self.step_svg(self._slider.value)

    def _static_text(self) -> str:
        return (
            f"vz.replay: {len(self.graph.backward_order)} backward steps; the player needs a running "
            f"notebook. Shown: {self.step_text(self._slider.value)}\n{self.graph!r}"
        )


def replay(g: GraphData) -> Replay:
    """A player that steps through ``g.backward_order``: the chain rule, one node at a time.

    ``g`` must come from a recorded call (``vz.graph(fn, x, w)`` or ``vz.graph(model,
    batch)``), which is when vizlib watched the backward pass. Returns a widget.
    """
    if not isinstance(g, GraphData):
        raise VizlibTypeError(
            f"vz.replay needs a vz.Graph, e.g. vz.replay(vz.graph(fn, x, w)); got {type(g).__name__}."
        )
    if not g.backward_order:
        raise VizlibValueError(f"This graph has no backward order to replay: {_why_no_backward(g)}")
    return Replay(g)


def _why_no_backward(g: GraphData) -> str:
    """Why no backward ran while ``g`` was drawn, and what to draw instead: each kind of graph
    that has no order (a compiler's, a call on the meta device, a tensor's) has its own cause."""
    if any(n.role for n in g.nodes):  # (only a compiler graph's nodes have roles: input, call_function...)
        return (
            "it is a graph PyTorch's compiler holds (from vz.compiled_graphs, vz.joint_graph, an FX GraphModule "
            "or an ExportedProgram), which vizlib draws as it is, running nothing: a joint graph's backward part "
            "is the ops backward would run, not a run of them. Record the eager call, so vizlib can watch "
            "backward run: vz.replay(vz.graph(fn, x))."
        )
    if any(n.device == "meta" for n in g.nodes):
        return (
            "its tensors are on the meta device, which holds shapes but no values, so vizlib ran no backward. "
            "Record the call on real tensors (on the CPU, or a small model built there): vz.replay(vz.graph(fn, x))."
        )
    return (
        "it was drawn from a tensor after the fact, when backward was not watched. Record the call instead, so "
        "vizlib can watch backward run: vz.replay(vz.graph(fn, x, w))."
    )


def _grad(node: Node) -> str:
    if node.grad is not None:
        return fmt_value(node.grad)
    if node.grad_stats is not None:
        return f"with norm {fmt(node.grad_stats.norm)}"
    return "?"
