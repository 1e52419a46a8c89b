"""Walk the autograd graph behind some tensors: the only place that reads autograd nodes.

Starting from each root tensor's ``grad_fn``, follow ``next_functions`` down to the
leaves (``AccumulateGrad`` nodes, whose ``.variable`` is the leaf tensor). The result
lists the nodes in forward topological order (inputs before the ops that use them), so
ids handed out by a counter are deterministic and read naturally from top to bottom.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

import torch

from ..data import SavedTensor, Shape
from ..errors import VizlibTypeError, VizlibValueError
from ..memory import in_own_storage
from ..text import device_name, dtype_name
from .nested import named_sizes, tensor_shape

# An autograd graph node (a tensor's grad_fn), or a leaf tensor that has none; autograd's
# node classes are made in C++ and typed by nothing mypy can read.
AutogradNode = Any


@dataclass
class Walked:
    """The raw structure: autograd nodes (live objects) in forward order, and edges by index."""

    fns: list  # autograd nodes (grad_fn or AccumulateGrad); a root leaf tensor appears as itself
    edges: list[tuple[int, int, int]]  # (input pos, consumer pos, slot in consumer.next_functions)
    index: dict = field(default_factory=dict)  # autograd node -> position in fns

    def leaf_tensor(self, i: int) -> torch.Tensor | None:
        """The leaf tensor at position i, or None if that node is an op."""
        fn = self.fns[i]
        if isinstance(fn, torch.Tensor):
            return fn
        return fn.variable if type(fn).__name__ == "AccumulateGrad" else None


def root_of(t: torch.Tensor) -> AutogradNode:
    """What the walk starts from for tensor t: its grad_fn, or the tensor if it is a leaf."""
    if not isinstance(t, torch.Tensor):
        raise VizlibTypeError(f"vz.graph expected a tensor (or a function and its inputs), got {type(t).__name__}.")
    if not t.requires_grad:
        raise VizlibValueError(
            "This tensor does not require grad, so autograd recorded no graph behind it. "
            "Create its inputs with requires_grad=True (e.g. torch.tensor(2.0, requires_grad=True)), "
            "or pass the function and its inputs instead: vz.graph(fn, x, w)."
        )
    return t.grad_fn if t.grad_fn is not None else t


class Positions(Protocol):
    """When each recorded node ran (``dict.get``'s way): a dict, or ``unwatched.RanAt``."""

    def get(self, fn: AutogradNode, /) -> float | None: ...

    def __bool__(self) -> bool: ...


def walk(roots: list, ran_at: Positions | None = None) -> Walked:
    """Collect every autograd node reachable from ``roots`` in forward topological order.

    Iterative post-order DFS over ``next_functions``: a node is emitted after all of its
    inputs, so deep graphs (thousands of ops) never hit Python's recursion limit. With
    ``ran_at`` (autograd node -> position in the recorded forward pass) the order follows
    the code as it ran, so node ids read like the program.
    """
    order: list = []
    index: dict = {}
    visiting: set = set()
    # Each node's next_functions, read once: every read makes a new tuple of new tuples.
    nexts: dict = {}
    for root in roots:
        if root in index:
            continue
        stack = [(root, False)]
        while stack:
            fn, children_done = stack.pop()
            if fn in index:
                continue
            if children_done:
                index[fn] = len(order)
                order.append(fn)
                continue
            if fn in visiting:
                continue
            visiting.add(fn)
            stack.append((fn, True))
            nexts[fn] = () if isinstance(fn, torch.Tensor) else fn.next_functions
            for nxt, _ in reversed(nexts[fn]):
                if nxt is not None and nxt not in index:
                    stack.append((nxt, False))
    reached = _leaf_roots_reached(roots, order)
    order, index = _without(reached, order, index)
    if ran_at:
        inputs = [[index[nxt] for nxt, _ in nexts[fn] if nxt is not None] for fn in order]
        order = [order[i] for i in _as_ran(order, ran_at, inputs)]
        index = {fn: i for i, fn in enumerate(order)}
    edges = [
        (index[nxt], index[fn], slot) for fn in order for slot, (nxt, _) in enumerate(nexts[fn]) if nxt is not None
    ]
    index.update({t: index[accumulate] for t, accumulate in reached.items()})
    return Walked(fns=order, edges=edges, index=index)


def _without(reached: dict, order: list, index: dict) -> tuple[list, dict]:
    """``order`` and ``index`` without the leaf roots ``reached`` another way (a tensor root
    has no inputs: dropping it leaves no edge behind)."""
    if not reached:
        return order, index
    order = [fn for fn in order if fn not in reached]
    return order, {fn: i for i, fn in enumerate(order)}


def _leaf_roots_reached(roots: list, order: list) -> dict:
    """The leaf tensors among ``roots`` that another root's graph reaches too, each with its
    ``AccumulateGrad`` node there (``vz.graph([w, w * 2])``, a call returning an input beside
    what it made of it): one leaf, drawn once, where the walk would have met it twice."""
    leaves = {id(r): r for r in roots if isinstance(r, torch.Tensor)}
    if not leaves:
        return {}
    return {
        leaves[id(fn.variable)]: fn
        for fn in order
        if type(fn).__name__ == "AccumulateGrad" and id(fn.variable) in leaves
    }


def _as_ran(order: list, ran_at: Positions, inputs: list[list[int]]) -> list[int]:
    """The positions of a topological order re-sorted by when each op ran; unrecorded nodes
    (leaves, the inner nodes of composite calls) go just before their first consumer.
    ``inputs[i]``: the positions of node i's input nodes. (Lists by position, not dicts by
    node: a model's graph has thousands of nodes, each looked up several times.)"""
    n = len(order)
    consumers: list[list[int]] = [[] for _ in range(n)]
    for i, ins in enumerate(inputs):
        for j in ins:
            consumers[j].append(i)
    when = [0.0] * n
    for i in range(n - 1, -1, -1):  # consumers before their inputs
        at = ran_at.get(order[i])
        when[i] = at if at is not None else min((when[c] for c in consumers[i]), default=float("inf"))
    # Nearly always the nodes sorted by when they ran (ties in topological order: the sort is
    # stable) already put every input before its consumers: then the heap below would take
    # them in that very order (the least left is always ready), so a sort does, in a fraction
    # of the time.
    ranked = sorted(range(n), key=when.__getitem__)
    place = [0] * n
    for k, i in enumerate(ranked):
        place[i] = k
    if all(place[j] < place[i] for i in range(n) for j in inputs[i]):
        return ranked
    pending = [len(ins) for ins in inputs]
    ready = [(when[i], i) for i in range(n) if pending[i] == 0]
    heapq.heapify(ready)
    result = []
    while ready:
        _, i = heapq.heappop(ready)
        result.append(i)
        for c in consumers[i]:
            pending[c] -= 1
            if pending[c] == 0:
                heapq.heappush(ready, (when[c], c))
    return result


def output_meta(fn: AutogradNode) -> tuple[Shape | None, str | None, str | None]:
    """Shape, dtype and device of an op's (first) forward output, from the node's own
    metadata (a jagged nested tensor's ragged dimension by torch's name of it, ``j1``)."""
    try:
        meta = fn._input_metadata[0]
        return named_sizes(meta.shape), dtype_name(meta.dtype), str(meta.device)
    except (AttributeError, IndexError, RuntimeError):
        return None, None, None


def storage_key(t: torch.Tensor) -> tuple:
    """Identifies the memory a tensor keeps alive, so shared storage is counted once.

    A meta tensor's storage has no address (every one says 0): it is named by the
    storage object itself, which lives as long as the tensors on it.
    """
    if in_own_storage(t):  # nearly every tensor: no list made
        s = t.untyped_storage()
        return (device_name(t.device), s._cdata if t.is_meta else s.data_ptr(), s.nbytes())
    return tuple(storage_key(p) for p in memory_parts(t))


def saved_entry(t: torch.Tensor, label: str) -> tuple[SavedTensor, tuple] | None:
    """A tensor saved for backward as a picture lists it (``label``, shape, dtype, bytes) and
    the memory it keeps alive (``storage_key``); None where it keeps none (a 0-byte
    placeholder). Asked of every tensor a forward saves: the storage is looked up once."""
    if in_own_storage(t):
        s = t.untyped_storage()
        size = s.nbytes()
        key: tuple = (device_name(t.device), s._cdata if t.is_meta else s.data_ptr(), size)
    else:
        size, key = nbytes(t), storage_key(t)
    return (SavedTensor(label, tensor_shape(t), dtype_name(t.dtype), size), key) if size else None


def nbytes(t: torch.Tensor) -> int:
    """Bytes of memory a tensor keeps alive: its storage's, or for a sparse, nested or
    wrapper-subclass tensor (which has no storage of its own) those of the tensors that
    make it."""
    if in_own_storage(t):
        return t.untyped_storage().nbytes()
    return sum(nbytes(p) for p in memory_parts(t))


def memory_parts(t: torch.Tensor) -> list[torch.Tensor]:
    """The tensors that hold a sparse, nested or wrapper-subclass tensor's memory.

    A wrapper subclass names its inner tensors in ``__tensor_flatten__`` (PyTorch's protocol
    for subclasses that torch.compile can trace); one without it holds tensors vizlib cannot
    find, so none of its memory is counted."""
    if t.is_nested:  # its elements lie in one tensor underneath (a strided one's components share it)
        return [t.values()]
    if t.layout == torch.strided:  # a wrapper subclass
        names = t.__tensor_flatten__()[0] if hasattr(t, "__tensor_flatten__") else []
        return [inner for name in names if isinstance(inner := getattr(t, name, None), torch.Tensor)]
    if t.layout == torch.sparse_coo:
        return [t._indices(), t._values()]
    if t.layout in (torch.sparse_csr, torch.sparse_bsr):
        return [t.crow_indices(), t.col_indices(), t.values()]
    if t.layout in (torch.sparse_csc, torch.sparse_bsc):
        return [t.ccol_indices(), t.row_indices(), t.values()]
    return []


class Saved(NamedTuple):
    """What an autograd node saved for backward, as ``saved_tensors`` reads it."""

    tensors: list[tuple[SavedTensor, tuple]]  # each as a picture lists it, and the memory it keeps alive
    recomputed: bool  # some are recomputed in backward (torch.utils.checkpoint): not read, not counted


# What torch says, in vizlib's words, when an unpack hook would run ops under saved-tensor
# hooks of its own: torch.utils.checkpoint(use_reentrant=False) recomputing its block.
_RECOMPUTES = "vizlib reads what autograd saved, but this saved tensor would be recomputed to be read"


def saved_tensors(fn: AutogradNode) -> Saved:
    """The tensors node ``fn`` saved for backward, read from its ``_saved_*`` attributes.

    An op inside a non-reentrant torch.utils.checkpoint block keeps nothing: its saved
    tensors went through checkpoint's hooks, whose unpack hook runs the block again to
    recompute them, the user's code with its hooks and BatchNorm updates, once per tensor
    read outside a backward. PyTorch 2.11 has no way to tell such a tensor without
    unpacking it (``SavedTensor.unpack_hook`` came later): each is read where no saved-tensor
    hooks may be pushed (``_hooks_refused``), so that checkpoint's unpack hook fails where it
    pushes the hooks that catch the recomputed tensors, before the block runs. Those are
    left out (``Saved.recomputed``). Other unpack hooks (the caller's ``save_on_cpu``) run
    as before.

    Raises VizlibValueError if an earlier backward() already freed them.
    """
    found, recomputed = [], False
    with _hooks_refused():
        for attr in _saved_attributes(type(fn)):
            try:
                value = getattr(fn, attr)
            except RuntimeError as err:
                if _RECOMPUTES in str(err):
                    recomputed = True
                    continue
                raise_if_freed(
                    err,
                    "The tensors this graph saved for backward were freed by an earlier backward(). "
                    "Call backward(retain_graph=True) the first time, or recompute the result "
                    "before drawing it with show_saved=True.",
                )
                raise
            items = value if isinstance(value, (tuple, list)) else (value,)
            name = attr.removeprefix("_saved_")
            for k, t in enumerate(items):
                label = name if len(items) == 1 else f"{name}[{k}]"
                if isinstance(t, torch.Tensor) and (entry := saved_entry(t, label)):
                    found.append(entry)
    return Saved(found, recomputed)


@contextmanager
def _hooks_refused() -> Iterator[None]:
    """No saved-tensor hooks may be pushed inside (torch raises ``_RECOMPUTES``), as under
    torch's ``disable_saved_tensors_hooks``, which refuses to start where hooks are pushed
    already (an outer recording's, the caller's ``save_on_cpu``): those stay as they are,
    as torch's own compiled code leaves them when it disables hooks."""
    autograd = torch._C._autograd
    before = autograd._saved_tensors_hooks_get_disabled_error_message()
    autograd._saved_tensors_hooks_disable(_RECOMPUTES, False)
    try:
        yield
    finally:
        if before is None:
            autograd._saved_tensors_hooks_enable()
        else:
            autograd._saved_tensors_hooks_disable(before, False)


_SAVED_ATTRIBUTES: dict[type, tuple[str, ...]] = {}


def _saved_attributes(node_type: type) -> tuple[str, ...]:
    """The ``_saved_*`` attributes of an autograd node class: ``dir()`` once per class, not
    once per node (a 10,000-step loop has 20,000 nodes of two classes)."""
    if node_type not in _SAVED_ATTRIBUTES:
        _SAVED_ATTRIBUTES[node_type] = tuple(attr for attr in dir(node_type) if attr.startswith("_saved_"))
    return _SAVED_ATTRIBUTES[node_type]


_RAW_SAVED: dict[type, tuple[str, ...]] = {}


def held_by_other_hooks(fn: AutogradNode, unpack: object) -> int:
    """How many of the tensors node ``fn`` saved went through saved-tensor hooks other than
    those whose unpack hook is ``unpack`` (vizlib's) and torch.utils.checkpoint's: a
    function's own ``save_on_cpu()`` or ``saved_tensors_hooks``, inside the call, where
    vizlib's pack hook never sees them. Read from autograd's raw saved tensors, which name
    their unpack hook without running it (it may be read-once); where a PyTorch's name
    none, none is found."""
    node_type = type(fn)
    if node_type not in _RAW_SAVED:
        _RAW_SAVED[node_type] = tuple(attr for attr in dir(node_type) if attr.startswith("_raw_saved_"))
    found = 0
    for attr in _RAW_SAVED[node_type]:
        try:
            raw = getattr(fn, attr)
        except RuntimeError:  # freed, or none saved there
            continue
        for saved in raw if isinstance(raw, (list, tuple)) else [raw]:
            hook = getattr(saved, "unpack_hook", None)
            theirs = getattr(hook, "__module__", "") or ""
            if hook is not None and hook != unpack and not theirs.startswith("torch.utils.checkpoint"):
                found += 1
    return found


def raise_if_freed(err: RuntimeError, advice: str) -> None:
    """Raise a VizlibValueError saying ``advice`` when ``err`` is autograd's error for a graph
    whose saved tensors an earlier backward() already freed; return for any other error."""
    if "freed" in str(err) or "second time" in str(err):
        raise VizlibValueError(advice) from None
