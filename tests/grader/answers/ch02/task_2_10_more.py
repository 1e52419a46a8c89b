"""Further wrong answers to exercise 2.10 of solutions/02_autograd.ipynb, after those of task_2_10.py."""

from .. import Wrong

WRONG: list[Wrong] = [
    Wrong(
        "Consumers counted per distinct node (a set): a * a sends two gradients to a's node, one is dropped.",
        hint="a set of nodes keeps only one",
        code="""\
def count_consumers(root):
    waiting, stack = {root: 0}, [root]
    while stack:
        node = stack.pop()
        for nxt in {n for n, _ in node.next_functions if n is not None}:
            if nxt not in waiting:
                waiting[nxt] = 0
                stack.append(nxt)
            waiting[nxt] += 1
    return waiting


def backprop(loss, leaves):
    waiting = count_consumers(loss.grad_fn)
    arrived = {loss.grad_fn: torch.ones_like(loss)}
    ready, found = [loss.grad_fn], {}
    with torch.no_grad():
        while ready:
            node = ready.pop()
            grad = arrived.pop(node, None)
            if hasattr(node, "variable"):
                found[id(node.variable)] = grad
                continue
            outs = node(grad) if grad is not None else ()
            outs = outs if isinstance(outs, tuple) else (outs,)
            seen = set()
            for k, (nxt, nr) in enumerate(node.next_functions):
                if nxt is None or nxt in seen:
                    continue
                seen.add(nxt)
                g = outs[k] if k < len(outs) else None
                if g is not None:
                    g = g.sum_to_size(nxt._input_metadata[nr].shape)
                    arrived[nxt] = arrived[nxt] + g if nxt in arrived else g
                waiting[nxt] -= 1
                if waiting[nxt] == 0:
                    ready.append(nxt)
    return [found.get(id(t)) for t in leaves]
""",
    ),
    Wrong(
        "Recording switched off and on by hand (set_grad_enabled): inside a caller's no_grad it is left on.",
        hint="switched recording on",
        code="""\
def count_consumers(root):
    waiting, stack = {root: 0}, [root]
    while stack:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            if nxt not in waiting:
                waiting[nxt] = 0
                stack.append(nxt)
            waiting[nxt] += 1
    return waiting


def backprop(loss, leaves):
    waiting = count_consumers(loss.grad_fn)
    arrived = {loss.grad_fn: torch.ones_like(loss)}
    ready, found = [loss.grad_fn], {}
    torch.set_grad_enabled(False)  # recording off, as the engine does
    if True:
        while ready:
            node = ready.pop()
            grad = arrived.pop(node, None)
            if hasattr(node, "variable"):
                found[id(node.variable)] = grad
                continue
            outs = node(grad) if grad is not None else ()
            outs = outs if isinstance(outs, tuple) else (outs,)
            for k, (nxt, nr) in enumerate(node.next_functions):
                if nxt is None:
                    continue
                g = outs[k] if k < len(outs) else None
                if g is not None:
                    g = g.sum_to_size(nxt._input_metadata[nr].shape)
                    arrived[nxt] = arrived[nxt] + g if nxt in arrived else g
                waiting[nxt] -= 1
                if waiting[nxt] == 0:
                    ready.append(nxt)
    torch.set_grad_enabled(True)
    return [found.get(id(t)) for t in leaves]
""",
    ),
    Wrong(
        "Gradients never cast to their input's dtype: float64 for a float32 leaf times a float64 tensor.",
        hint="float64 tensor",
        code="""\
def count_consumers(root):
    # How many consumers will send each node a gradient (every edge of the graph, counted once).
    waiting, stack = {root: 0}, [root]
    while stack:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            if nxt not in waiting:
                waiting[nxt] = 0
                stack.append(nxt)
            waiting[nxt] += 1
    return waiting


def backprop(loss, leaves):
    waiting = count_consumers(loss.grad_fn)
    # Run each node once everything has arrived, passing its results down next_functions.
    arrived = {loss.grad_fn: torch.ones_like(loss)}
    ready, found = [loss.grad_fn], {}
    with torch.no_grad():
        while ready:
            node = ready.pop()
            grad = arrived.pop(node, None)
            if hasattr(node, "variable"):  # AccumulateGrad: the leaf's gradient is complete
                found[id(node.variable)] = grad
                continue
            outs = (node(grad) if callable(node) else node.apply(grad)) if grad is not None else ()
            outs = outs if isinstance(outs, tuple) else (outs,)
            for k, (nxt, nr) in enumerate(node.next_functions):
                if nxt is None:
                    continue
                g = outs[k] if k < len(outs) else None
                if g is not None:
                    # the forward may have broadcast this input: back to the shape it had
                    g = g.sum_to_size(nxt._input_metadata[nr].shape)
                    arrived[nxt] = arrived[nxt] + g if nxt in arrived else g
                waiting[nxt] -= 1
                if waiting[nxt] == 0:
                    ready.append(nxt)
    return [found.get(id(t)) for t in leaves]


""",
    ),
    Wrong(
        "Gradients added up in place (+=): the tensor an add node sent to two inputs changes for both.",
        hint="Add up out of place",
        code="""\
def count_consumers(root):
    # How many consumers will send each node a gradient (every edge of the graph, counted once).
    waiting, stack = {root: 0}, [root]
    while stack:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            if nxt not in waiting:
                waiting[nxt] = 0
                stack.append(nxt)
            waiting[nxt] += 1
    return waiting


def backprop(loss, leaves):
    waiting = count_consumers(loss.grad_fn)
    # Run each node once everything has arrived, passing its results down next_functions.
    arrived = {loss.grad_fn: torch.ones_like(loss)}
    ready, found = [loss.grad_fn], {}
    with torch.no_grad():
        while ready:
            node = ready.pop()
            grad = arrived.pop(node, None)
            if hasattr(node, "variable"):  # AccumulateGrad: the leaf's gradient is complete
                found[id(node.variable)] = grad
                continue
            outs = (node(grad) if callable(node) else node.apply(grad)) if grad is not None else ()
            outs = outs if isinstance(outs, tuple) else (outs,)
            for k, (nxt, nr) in enumerate(node.next_functions):
                if nxt is None:
                    continue
                g = outs[k] if k < len(outs) else None
                if g is not None:
                    # the forward may have broadcast this input, or promoted its dtype: back to
                    # the shape and the dtype it had
                    meta = nxt._input_metadata[nr]
                    g = g.sum_to_size(meta.shape).to(meta.dtype)
                    if nxt in arrived:
                        arrived[nxt] += g
                    else:
                        arrived[nxt] = g
                waiting[nxt] -= 1
                if waiting[nxt] == 0:
                    ready.append(nxt)
    return [found.get(id(t)) for t in leaves]


""",
    ),
    Wrong(
        "Every node called as node(grad): a custom autograd.Function's node is not callable.",
        hint="node.apply(grad)",
        code="""\
def count_consumers(root):
    # How many consumers will send each node a gradient (every edge of the graph, counted once).
    waiting, stack = {root: 0}, [root]
    while stack:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            if nxt not in waiting:
                waiting[nxt] = 0
                stack.append(nxt)
            waiting[nxt] += 1
    return waiting


def backprop(loss, leaves):
    waiting = count_consumers(loss.grad_fn)
    # Run each node once everything has arrived, passing its results down next_functions.
    arrived = {loss.grad_fn: torch.ones_like(loss)}
    ready, found = [loss.grad_fn], {}
    with torch.no_grad():
        while ready:
            node = ready.pop()
            grad = arrived.pop(node, None)
            if hasattr(node, "variable"):  # AccumulateGrad: the leaf's gradient is complete
                found[id(node.variable)] = grad
                continue
            outs = node(grad) if grad is not None else ()
            outs = outs if isinstance(outs, tuple) else (outs,)
            for k, (nxt, nr) in enumerate(node.next_functions):
                if nxt is None:
                    continue
                g = outs[k] if k < len(outs) else None
                if g is not None:
                    # the forward may have broadcast this input, or promoted its dtype: back to
                    # the shape and the dtype it had
                    meta = nxt._input_metadata[nr]
                    g = g.sum_to_size(meta.shape).to(meta.dtype)
                    arrived[nxt] = arrived[nxt] + g if nxt in arrived else g
                waiting[nxt] -= 1
                if waiting[nxt] == 0:
                    ready.append(nxt)
    return [found.get(id(t)) for t in leaves]


""",
    ),
]


# The same leaf listed twice in leaves.
WRONG.extend(
    [
        Wrong(
            (
                "Each leaf's gradient looked up with found.pop: a leaf listed twice gets None the second time, "
                "where torch.autograd.grad(loss, [w, w]) gives the gradient at both places."
            ),
            hint="the same leaf listed twice",
            code="""\
def count_consumers(root):
    # How many consumers will send each node a gradient (every edge of the graph, counted once).
    waiting, stack = {root: 0}, [root]
    while stack:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            if nxt not in waiting:
                waiting[nxt] = 0
                stack.append(nxt)
            waiting[nxt] += 1
    return waiting


def backprop(loss, leaves):
    waiting = count_consumers(loss.grad_fn)
    # Run each node once everything has arrived, passing its results down next_functions.
    arrived = {loss.grad_fn: torch.ones_like(loss)}
    ready, found = [loss.grad_fn], {}
    with torch.no_grad():
        while ready:
            node = ready.pop()
            grad = arrived.pop(node, None)
            if hasattr(node, "variable"):  # AccumulateGrad: the leaf's gradient is complete
                found[id(node.variable)] = grad
                continue
            # a custom autograd.Function's node is not callable: its apply runs its backward
            run = node if callable(node) else node.apply
            outs = run(grad) if grad is not None else ()
            outs = outs if isinstance(outs, tuple) else (outs,)
            for k, (nxt, nr) in enumerate(node.next_functions):
                if nxt is None:
                    continue
                g = outs[k] if k < len(outs) else None
                if g is not None:
                    # the forward may have broadcast this input, or promoted its dtype: back to
                    # the shape and the dtype it had
                    meta = nxt._input_metadata[nr]
                    g = g.sum_to_size(meta.shape).to(meta.dtype)
                    arrived[nxt] = arrived[nxt] + g if nxt in arrived else g
                waiting[nxt] -= 1
                if waiting[nxt] == 0:
                    ready.append(nxt)
    return [found.pop(id(t), None) for t in leaves]
""",
        ),
    ]
)


# Red team (round 2): accepted before its check was added.
WRONG.append(
    Wrong(
        "Results cached by id(loss): a new loss that takes a freed loss's place in memory gets its gradients.",
        hint="a cache keyed by id(loss)",
        code="""\
_cache = {}


def backprop(loss, leaves):
    key = (id(loss), tuple(id(t) for t in leaves))
    if key in _cache:
        return list(_cache[key])
    waiting, stack = {loss.grad_fn: 0}, [loss.grad_fn]
    while stack:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            if nxt not in waiting:
                waiting[nxt] = 0
                stack.append(nxt)
            waiting[nxt] += 1
    arrived = {loss.grad_fn: torch.ones_like(loss)}
    ready, found = [loss.grad_fn], {}
    with torch.no_grad():
        while ready:
            node = ready.pop()
            grad = arrived.pop(node, None)
            if hasattr(node, "variable"):
                found[id(node.variable)] = grad
                continue
            run = node if callable(node) else node.apply
            outs = run(grad) if grad is not None else ()
            outs = outs if isinstance(outs, tuple) else (outs,)
            for k, (nxt, nr) in enumerate(node.next_functions):
                if nxt is None:
                    continue
                g = outs[k] if k < len(outs) else None
                if g is not None:
                    meta = nxt._input_metadata[nr]
                    g = g.sum_to_size(meta.shape).to(meta.dtype)
                    arrived[nxt] = arrived[nxt] + g if nxt in arrived else g
                waiting[nxt] -= 1
                if waiting[nxt] == 0:
                    ready.append(nxt)
    result = [found.get(id(t)) for t in leaves]
    _cache[key] = list(result)
    return result
""",
    )
)


WRONG.append(
    Wrong(
        "A recursive walk, Python's recursion limit raised for the call and put back after: still recursion.",
        hint="walks the graph by recursion",
        code="""\
import sys


def backprop(loss, leaves):
    _old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(_old, 100000))
    try:
        return _backprop(loss, leaves)
    finally:
        sys.setrecursionlimit(_old)


def _backprop(loss, leaves):
    waiting = {}

    def count(node):
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            first = nxt not in waiting
            waiting[nxt] = waiting.get(nxt, 0) + 1
            if first:
                count(nxt)

    waiting[loss.grad_fn] = 0
    count(loss.grad_fn)
    arrived = {loss.grad_fn: torch.ones_like(loss)}
    found = {}

    def run(node):
        grad = arrived.pop(node, None)
        if hasattr(node, "variable"):
            found[id(node.variable)] = grad
            return
        call = node if callable(node) else node.apply
        outs = call(grad) if grad is not None else ()
        outs = outs if isinstance(outs, tuple) else (outs,)
        for k, (nxt, nr) in enumerate(node.next_functions):
            if nxt is None:
                continue
            g = outs[k] if k < len(outs) else None
            if g is not None:
                meta = nxt._input_metadata[nr]
                g = g.sum_to_size(meta.shape).to(meta.dtype)
                arrived[nxt] = arrived[nxt] + g if nxt in arrived else g
            waiting[nxt] -= 1
            if waiting[nxt] == 0:
                run(nxt)

    with torch.no_grad():
        run(loss.grad_fn)
    return [found.get(id(t)) for t in leaves]
""",
    )
)
