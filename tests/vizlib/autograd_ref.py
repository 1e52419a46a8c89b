"""Autograd's own numbers to hold vizlib against.

The capture tests never trust vizlib's bookkeeping: ``measure`` re-runs the same
computation on fresh tensors and asks autograd itself (``torch.autograd.grad``, with a
``GradientEdge`` per op node) for every gradient, and ``assert_same_graph`` then demands
that vizlib's graph is the same graph, node for node and edge for edge, with the same
values and gradients. ``check`` does both for one ``vz.graph`` call.
"""

from __future__ import annotations

import copy
import inspect
from collections import Counter
from dataclasses import dataclass, field

import pytest
import torch
from torch.autograd.graph import GradientEdge
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_leaves

import vizlib as vz
from vizlib.capture.summary import SMALL_NUMEL
from vizlib.text import dtype_name


@dataclass
class RefNode:
    """One autograd node of the reference run, with autograd's numbers for it."""

    kind: str  # "leaf" or "op"
    name: str  # the leaf's name, or the grad_fn class name ("MulBackward0")
    value: torch.Tensor | None  # forward output (output 0), if the tensor was ever seen
    grad: torch.Tensor | None  # d(result)/d(output 0); None where autograd sends no gradient
    inputs: list[int] = field(default_factory=list)  # position of the node behind each edge
    produced: bool = True  # a torch call returned (or changed in place) its output
    outputs: int = 1  # how many differentiable outputs the forward op had


class _Outputs(TorchFunctionMode):
    """Copies, at the moment it appears, the value of every tensor that has a grad_fn."""

    def __init__(self):
        super().__init__()
        self.values: dict = {}  # grad_fn -> clone of its output 0
        self.produced: set = set()  # grad_fns whose output a torch call returned or changed

    def see(self, tensors, produced: bool = True) -> None:
        for t in tree_leaves(tensors):
            if isinstance(t, torch.Tensor) and t.grad_fn is not None and t.output_nr == 0:
                self.values.setdefault(t.grad_fn, t.detach().clone())
                if produced:
                    self.produced.add(t.grad_fn)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.see((args, kwargs), produced=False)  # e.g. a custom Function's output, first seen here
        before = [(t, t.grad_fn) for t in tree_leaves(args) if isinstance(t, torch.Tensor)]
        out = func(*args, **(kwargs or {}))
        # in-place ops such as x[0] = ... give their input a new grad_fn
        self.see([out] + [t for t, fn in before if t.grad_fn is not fn])
        return out


def measure(call, leaves: dict[str, torch.Tensor], grad_output=None) -> list[RefNode]:
    """Run ``call()`` and return its autograd graph with autograd's own values and gradients.

    ``leaves`` names the tensors (requiring grad) that ``call`` uses, as vizlib should name
    them. The result's gradient is computed with ``torch.autograd.grad`` with respect to
    every leaf and, through a ``GradientEdge``, to the output of every op node.
    """
    with _Outputs() as rec:
        result = call()
    outs = [t for t in tree_leaves(result) if isinstance(t, torch.Tensor) and t.requires_grad]
    rec.see(outs, produced=False)
    fns: list = []
    index: dict = {}
    stack = [o.grad_fn for o in outs if o.grad_fn is not None]
    while stack:
        fn = stack.pop()
        if fn in index:
            continue
        index[fn] = len(fns)
        fns.append(fn)
        stack += [nxt for nxt, _ in fn.next_functions if nxt is not None]
    names = {id(t): n for n, t in leaves.items()}
    nodes = []
    targets = []
    for fn in fns:
        if type(fn).__name__ == "AccumulateGrad":
            leaf = fn.variable
            nodes.append(RefNode("leaf", names.get(id(leaf), "?"), leaf.detach().clone(), None))
            targets.append(leaf)
        else:
            nodes.append(
                RefNode(
                    "op",
                    type(fn).__name__,
                    rec.values.get(fn),
                    None,
                    produced=fn in rec.produced,
                    outputs=len(fn._input_metadata),
                )
            )
            targets.append(GradientEdge(fn, 0))
        nodes[-1].inputs = [index[nxt] for nxt, _ in fn.next_functions if nxt is not None]
    if grad_output is None:
        grad_output = [torch.ones_like(o) for o in outs]
    elif isinstance(grad_output, torch.Tensor):
        grad_output = [grad_output]
    grads = torch.autograd.grad(outs, targets, grad_output, allow_unused=True)
    for node, grad in zip(nodes, grads, strict=True):
        node.grad = grad
    return nodes


def differs(recorded, st, ref: torch.Tensor | None, require: bool, rtol: float, atol: float) -> str | None:
    """Why vizlib's ``recorded`` value (or its Stats ``st``) is not the tensor ``ref``; None if it is."""
    if ref is None:
        return _differs_from_nothing(recorded, st)
    ref = ref.detach().double()
    if recorded is None and st is None:
        return "missing" if require else None
    if ref.numel() <= SMALL_NUMEL:
        return _differs_exactly(recorded, ref, rtol, atol)
    if recorded is not None:
        return f"an exact value for a {ref.numel()}-element tensor (expected None + stats)"
    if st is None:
        return "no statistics"
    return _differs_in_statistics(st, ref, atol)


def _differs_from_nothing(recorded, st) -> str | None:
    """Where autograd has no tensor, vizlib may show none, or zeros (an all-zero value or
    statistics of norm 0), and nothing else."""
    if recorded is not None and torch.as_tensor(recorded, dtype=torch.float64).abs().sum() != 0:
        return f"vizlib has {recorded}, autograd has nothing"
    if st is not None and st.norm != 0:
        return f"vizlib has {st}, autograd has nothing"
    return None


def _differs_exactly(recorded, ref: torch.Tensor, rtol: float, atol: float) -> str | None:
    """A small tensor (up to SMALL_NUMEL elements) is recorded whole: it must be there, with
    autograd's shape and values."""
    if recorded is None:
        return f"no exact value for a {ref.numel()}-element tensor"
    got = torch.as_tensor(recorded, dtype=torch.float64)
    if got.shape != ref.shape or not torch.allclose(got, ref, rtol=rtol, atol=atol, equal_nan=True):
        return f"vizlib {recorded} != autograd {ref.tolist()}"
    return None


def _differs_in_statistics(st, ref: torch.Tensor, atol: float) -> str | None:
    """A big tensor is recorded as statistics: each one vizlib gives must be autograd's, to a
    tolerance scaled by the tensor's largest element (its sums are in float32)."""
    if not torch.isfinite(ref).all():  # statistics of NaN/Inf only need to say so
        return None if not st.finite else f"vizlib says finite ({st}), autograd has NaN/Inf"
    want = {"mean": ref.mean(), "std": ref.std(correction=0), "norm": ref.norm(), "min": ref.min(), "max": ref.max()}
    scale = ref.abs().max().item()
    for key, w in want.items():
        got = getattr(st, key)
        if got is None and key != "norm" and st.mean is None:
            continue  # a gradient's statistics are its norm alone
        slack = 1e-3 if key == "std" else 1e-5  # std: see test_statistics_of_big_tensors_are_accurate
        if not torch.isclose(
            torch.tensor(got, dtype=torch.float64), w, rtol=1e-4, atol=max(atol, slack * scale), equal_nan=True
        ):
            return f"{key}: vizlib {got} != autograd {w.item()}"
    return None


def mismatch(node, ref: RefNode, require: bool, rtol: float, atol: float) -> str | None:
    """Why vizlib's ``node`` is not the reference node; None when it is the same."""
    if node.kind != ref.kind:
        return f"kind {node.kind} != {ref.kind}"
    if ref.name != "?" and node.name != ref.name:
        return f"name {node.name} != {ref.name}"
    if ref.value is not None and node.shape is not None and tuple(node.shape) != tuple(ref.value.shape):
        return f"shape {node.shape} != {tuple(ref.value.shape)}"
    if ref.value is not None and node.dtype is not None and node.dtype != dtype_name(ref.value.dtype):
        return f"dtype {node.dtype} != {dtype_name(ref.value.dtype)}"
    why = differs(node.value, node.value_stats, ref.value, require and ref.produced, rtol, atol)
    if why:
        return f"value: {why}"
    why = differs(node.grad, node.grad_stats, ref.grad, require, rtol, atol)
    return f"grad: {why}" if why else None


def assert_same_graph(
    g, ref: list[RefNode], *, require: bool = True, rtol: float = 1e-5, atol: float = 1e-6
) -> dict[int, int]:
    """Assert vizlib's graph ``g`` is the reference graph: same nodes, edges, values, grads.

    A vizlib node matches a reference node with the same kind, name, shape, dtype, value,
    gradient and (already matched) inputs; nodes are matched inputs-first, backtracking
    where look-alike siblings were paired the wrong way round. With ``require=False``
    (post-hoc graphs) missing values/gradients are allowed, wrong ones not. Returns the
    matching, vizlib id -> reference position.
    """
    ids = {n.id for n in g.nodes}
    assert len(ids) == len(g.nodes), "node ids are not unique"
    assert all(s in ids and d in ids for s, d in g.edges), "an edge names an unknown node"
    assert not [n for n in g.nodes if n.kind == "module"], "module boxes in a graph that shows every op"
    inputs: dict[int, list[int]] = {i: [] for i in ids}
    for s, d in g.edges:
        inputs[d].append(s)
    order = _inputs_first(g, ids, inputs)
    assert len(g.nodes) == len(ref), (
        f"vizlib has {len(g.nodes)} nodes, autograd {len(ref)}: "
        f"{sorted(n.name for n in g.nodes)} vs {sorted(r.name for r in ref)}"
    )
    matcher = _Matcher(order, inputs, ref, require, rtol, atol)
    assert matcher.place(0), matcher.failure
    _assert_edge_grads(g, ref, matcher.match, require, atol)
    return matcher.match


def _inputs_first(g, ids: set[int], inputs: dict[int, list[int]]) -> list:
    """vizlib's nodes in rounds, each node after all its inputs; a round with no node ready
    is a cycle, which a graph of autograd's ops cannot have."""
    order: list = []
    placed: set[int] = set()
    while len(order) < len(g.nodes):
        ready = [n for n in g.nodes if n.id not in placed and all(s in placed for s in inputs[n.id])]
        assert ready, f"the graph has a cycle among {sorted(ids - placed)}"
        order += ready
        placed.update(n.id for n in ready)
    return order


class _Matcher:
    """Pairs vizlib's nodes (inputs first) with reference nodes by backtracking, because
    look-alike siblings (same op, same inputs) can only be told apart by their values
    further down the graph. Remembers, for the failure message, the deepest node that
    matched nothing and why each candidate did not fit it."""

    def __init__(
        self, order: list, inputs: dict[int, list[int]], ref: list[RefNode], require: bool, rtol: float, atol: float
    ) -> None:
        self.order, self.inputs, self.ref = order, inputs, ref
        self.require, self.rtol, self.atol = require, rtol, atol
        self.ref_inputs = [Counter(r.inputs) for r in ref]
        self.why: dict[tuple[int, int], str | None] = {}
        self.match: dict[int, int] = {}
        self.used: set[int] = set()
        self.deepest = -1  # the deepest position in `order` that matched nothing yet
        self.failure = ""

    def place(self, k: int) -> bool:
        """Match ``order[k:]``, given the matches of ``order[:k]``; True when all matched."""
        if k == len(self.order):
            return True
        node = self.order[k]
        free = self._candidates(node)
        for i in (i for i in free if self.why[node.id, i] is None):
            self.match[node.id] = i
            self.used.add(i)
            if self.place(k + 1):
                return True
            del self.match[node.id]
            self.used.discard(i)
        if k > self.deepest:
            self._note_deepest(k, node, free)
        return False

    def _candidates(self, node) -> list[int]:
        """Unused reference nodes whose inputs are the matches of the node's inputs, each
        compared with the node once (the comparison is kept across backtracking)."""
        want = Counter(self.match[s] for s in self.inputs[node.id])
        free = [i for i in range(len(self.ref)) if i not in self.used and self.ref_inputs[i] == want]
        for i in free:
            if (node.id, i) not in self.why:
                self.why[node.id, i] = mismatch(node, self.ref[i], self.require, self.rtol, self.atol)
        return free

    def _note_deepest(self, k: int, node, free: list[int]) -> None:
        """The failure message: the node and why each same-named candidate did not fit."""
        reasons = "; ".join(
            f"{self.ref[i].name}: {self.why[node.id, i]}"
            for i in free
            if self.ref[i].name in (node.name, "?") and self.why[node.id, i]
        )
        self.deepest = k
        self.failure = (
            f"vizlib node {node.id} {node.name!r} (shape {node.shape}) matches no "
            f"autograd node: {reasons or 'none with the same name and inputs'}"
        )


def _assert_edge_grads(g, ref: list[RefNode], match: dict[int, int], require: bool, atol: float) -> None:
    """Each edge's gradient norm is autograd's where autograd's tells it exactly."""
    assert len(g.edge_grads) == len(g.edges)
    for (src, dst), norm in zip(g.edges, g.edge_grads, strict=True):
        # an output used once sends its whole gradient along its one edge
        r = ref[match[src]]
        if require and r.outputs == 1 and [s for s, _ in g.edges].count(src) == 1:
            want = None if r.grad is None else r.grad.double().norm().item()
            assert (
                (norm is None or norm == 0)
                if want is None
                else norm is not None and (norm == pytest.approx(want, rel=1e-4, abs=atol, nan_ok=True))
            ), f"edge {g.node(src).name} -> {g.node(dst).name}: vizlib norm {norm}, autograd {want}"


def _leaf_copy(value) -> torch.Tensor:
    """What vizlib makes of an argument: floats become 0-d float32 leaves, float tensors leaves."""
    t = torch.tensor(value, dtype=torch.float32) if isinstance(value, float) else value
    if isinstance(t, torch.Tensor) and t.is_floating_point():
        return t.detach().clone().requires_grad_(True)
    return t


def check(target, *args, grad_output=None, seed: int = 0, rtol: float = 1e-5, atol: float = 1e-6, **kwargs):
    """``vz.graph(target, *args, **kwargs)`` against autograd on fresh copies of the inputs.

    ``target`` is a function or an nn.Module (reference run on a deep copy, leaves named by
    ``named_parameters``). Both runs start from the same RNG seed. Returns (graph, reference).
    """
    module = target if isinstance(target, torch.nn.Module) else None
    ref_target = copy.deepcopy(module) if module is not None else target
    params = inspect.signature(module.forward if module is not None else target).parameters
    names = [p.name for p in params.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    ref_args = [_leaf_copy(a) for a in args]
    ref_kwargs = {k: _leaf_copy(v) for k, v in kwargs.items()}
    leaves = {
        n: a
        for n, a in [*zip(names, ref_args, strict=False), *ref_kwargs.items()]
        if isinstance(a, torch.Tensor) and a.requires_grad
    }
    if module is not None:
        leaves.update(ref_target.named_parameters())
    torch.manual_seed(seed)
    g = vz.graph(target, *args, grad_output=grad_output, **kwargs)
    torch.manual_seed(seed)
    ref = measure(lambda: ref_target(*ref_args, **ref_kwargs), leaves, grad_output)
    assert_same_graph(g, ref, rtol=rtol, atol=atol)
    return g, ref
