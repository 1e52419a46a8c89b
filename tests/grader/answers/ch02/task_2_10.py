"""Exercise 2.10 of solutions/02_autograd.ipynb: its other answers (see answers/__init__.py).

Its further wrong answers are in task_2_10_more.py.
"""

from .. import Task, Wrong
from . import task_2_10_more

# 2.10: after the def line, the graph put in topological order by a recursive depth-first
# search (RecursionError on a deep graph), then walked from the loss down to the point where a
# node's gradient is used. BACKPROP starts so.
BACKPROP_DEF = "def backprop(loss, leaves):\n"

BACKPROP_WALK = """\
    order, seen = [], set()

    def visit(node):
        if node is None or node in seen:
            return
        seen.add(node)
        for nxt, _ in node.next_functions:
            visit(nxt)
        order.append(node)

    visit(loss.grad_fn)
    grads = {loss.grad_fn: torch.ones_like(loss)}
    found = {}
    with torch.no_grad():
        for node in reversed(order):
            grad = grads.get(node)
            if grad is None:
                continue
"""

# 2.10's engine as its wrong answers write it, each changing one line: right for the
# diamonds, but it sums gradients down to the leaves' shapes only, and it recurses.
BACKPROP = (
    BACKPROP_DEF
    + BACKPROP_WALK
    + """\
            if hasattr(node, "variable"):
                found[id(node.variable)] = grad.sum_to_size(node.variable.shape)
                continue
            outs = node(grad)
            outs = outs if isinstance(outs, tuple) else (outs,)
            for (nxt, _), g in zip(node.next_functions, outs):
                if nxt is not None and g is not None:
                    grads[nxt] = g if nxt not in grads else grads[nxt] + g
    return [found.get(id(t)) for t in leaves]
"""
)

KEPT_IN_BROADCAST_SHAPE = BACKPROP.replace(
    "found[id(node.variable)] = grad.sum_to_size(node.variable.shape)", "found[id(node.variable)] = grad"
)

# The nodes called while autograd records: right numbers, but a graph of the backward pass built too.
_WALK_HEAD, _WALK_BODY = BACKPROP.split("    with torch.no_grad():\n")

RECORDING_LEFT_ON = _WALK_HEAD + "".join(
    line[4:] if line.startswith("        ") else line for line in _WALK_BODY.splitlines(keepends=True)
)

# Every gradient summed down to the shape of the input it goes to: right, but still recursive.
RECURSIVE_WALK = (
    BACKPROP.replace(
        "found[id(node.variable)] = grad.sum_to_size(node.variable.shape)", "found[id(node.variable)] = grad"
    )
    .replace(
        "                if nxt is not None and g is not None:\n",
        "                if nxt is not None and g is not None:\n"
        "                    g = g.sum_to_size(nxt._input_metadata[nr].shape)\n",
    )
    .replace("for (nxt, _), g in zip(", "for (nxt, nr), g in zip(")
)

GRADIENTS_OVERWRITTEN = BACKPROP.replace("grads[nxt] = g if nxt not in grads else grads[nxt] + g", "grads[nxt] = g")


TASK = Task(
    alternative=BACKPROP_DEF
    + """\
    # Topological order by depth-first search, with a stack: every node after all of its consumers.
    order, seen, stack = [], set(), [(loss.grad_fn, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if node is None or node in seen:
            continue
        seen.add(node)
        stack.append((node, True))
        stack += [(nxt, False) for nxt, _ in node.next_functions]
    grads = {loss.grad_fn: torch.ones_like(loss)}
    found = {}
    with torch.no_grad():
        for node in reversed(order):
            grad = grads.get(node)
            if grad is None:
                continue
            if type(node).__name__ == "AccumulateGrad":
                found[id(node.variable)] = grad
                continue
            outs = node(grad) if callable(node) else node.apply(grad)
            if isinstance(outs, torch.Tensor):
                outs = (outs,)
            for (nxt, nr), g in zip(node.next_functions, outs):
                if nxt is not None and g is not None:
                    meta = nxt._input_metadata[nr]
                    g = g.sum_to_size(meta.shape).to(meta.dtype)
                    grads[nxt] = g if nxt not in grads else grads[nxt] + g
    return [found.get(id(leaf)) for leaf in leaves]
""",
    wrong=[
        Wrong(
            "autograd.grad does the work: the task is to be the engine.",
            hint="autograd's own engine",
            code="""\
def backprop(loss, leaves):
    needed = [leaf for leaf in leaves]
    grads = torch.autograd.grad(loss, needed, allow_unused=True, retain_graph=True)
    return list(grads)
""",
        ),
        # Right numbers, but a node runs once per path instead of once: exponential on deep graphs.
        Wrong(
            "Each arriving gradient pushed down at once, node by node, path by path.",
            hint="more than once",
            code="""\
def backprop(loss, leaves):
    found = {}

    def push(node, grad):
        if node is None or grad is None:
            return
        if hasattr(node, "variable"):
            g = grad.sum_to_size(node.variable.shape)
            found[id(node.variable)] = found[id(node.variable)] + g if id(node.variable) in found else g
            return
        outs = node(grad)
        outs = outs if isinstance(outs, tuple) else (outs,)
        for (nxt, _), g in zip(node.next_functions, outs):
            push(nxt, g)

    with torch.no_grad():
        push(loss.grad_fn, torch.ones_like(loss))
    return [found.get(id(t)) for t in leaves]
""",
        ),
        Wrong(
            "A broadcast leaf's gradient kept in the broadcast shape.",
            hint="sum_to_size",
            code=KEPT_IN_BROADCAST_SHAPE,
        ),
        Wrong(
            "Gradients from several consumers overwrite each other instead of adding up.",
            hint="added up",
            code=GRADIENTS_OVERWRITTEN,
        ),
        Wrong(
            "The nodes called with autograd recording: the gradients come back inside a graph.",
            hint="part of a graph",
            code=RECORDING_LEFT_ON,
        ),
        # Right while the leaves' .grad is None; a leaf with an existing .grad gets it added in.
        Wrong(
            "AccumulateGrad called too, each leaf's .grad read, then set back to None.",
            hint="existing .grad",
            code=BACKPROP.replace(
                "                found[id(node.variable)] = grad.sum_to_size(node.variable.shape)\n",
                "                node(grad.sum_to_size(node.variable.shape))\n",
            ).replace(
                "    return [found.get(id(t)) for t in leaves]\n",
                """\
    found = [t.grad for t in leaves]
    for t in leaves:
        t.grad = None
    return found
""",
            ),
        ),
        # Right while only leaves are broadcast: a broadcast m.sum() reaches SumBackward0 in the wrong shape.
        Wrong(
            "Gradients summed down to the leaves' shapes only, not at every edge.",
            hint="not only at the leaves",
            code=BACKPROP,
        ),
        Wrong(
            "Leaves' gradients summed over dimension 0: right for a bias of shape (5,) only.",
            hint="Summing over dimension 0",
            code=RECURSIVE_WALK.replace(
                "                found[id(node.variable)] = grad\n",
                "                found[id(node.variable)] = "
                "grad.sum(0) if grad.shape != node.variable.shape else grad\n",
            ).replace(
                "                    g = g.sum_to_size(nxt._input_metadata[nr].shape)\n",
                "                    g = g if hasattr(nxt, 'variable') "
                "else g.sum_to_size(nxt._input_metadata[nr].shape)\n",
            ),
        ),
        Wrong(
            "The topological order by a recursive depth-first search: RecursionError on a deep graph.",
            hint="recursion limit",
            code=RECURSIVE_WALK,
        ),
        Wrong(
            "The seed is torch.ones(()): a CPU tensor, whatever the device of loss.",
            hint="another device",
            code="""\
def backprop(loss, leaves):
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
    arrived = {loss.grad_fn: torch.ones(())}
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
    return [found.get(id(t)) for t in leaves]
""",
        ),
        Wrong(
            "Leaves matched by data_ptr(): two leaves sharing memory get each other's gradient.",
            hint="share memory",
            code="""\
def backprop(loss, leaves):
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
                found[node.variable.data_ptr()] = grad
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
    return [found.get(t.data_ptr()) for t in leaves]
""",
        ),
        Wrong(
            "Nodes called under torch.inference_mode(): the gradients are inference tensors.",
            hint="inference tensors",
            code="""\
def backprop(loss, leaves):
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
    with torch.inference_mode():
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
    return [found.get(id(t)) for t in leaves]
""",
        ),
    ],
)

TASK.wrong.extend(task_2_10_more.WRONG)


# Red team: None gradients, and dtypes inside the graph.
TASK.wrong.extend(
    [
        Wrong(
            (
                "A None gradient for an input that requires grad is not counted as an arrival: that input's node "
                "never runs."
            ),
            hint="A None gradient is an arrival too",
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
    with torch.no_grad():
        while ready:
            node = ready.pop()
            grad = arrived.pop(node)
            if hasattr(node, "variable"):
                found[id(node.variable)] = grad
                continue
            run = node if callable(node) else node.apply
            outs = run(grad)
            outs = outs if isinstance(outs, tuple) else (outs,)
            for (nxt, nr), g in zip(node.next_functions, outs):
                if nxt is None or g is None:
                    continue
                meta = nxt._input_metadata[nr]
                g = g.sum_to_size(meta.shape).to(meta.dtype)
                arrived[nxt] = arrived[nxt] + g if nxt in arrived else g
                waiting[nxt] -= 1
                if waiting[nxt] == 0:
                    ready.append(nxt)
    return [found.get(id(t)) for t in leaves]
""",
        ),
        Wrong(
            (
                "Casts gradients to the leaf's dtype only at the leaves: a float64 gradient reaches a float32 "
                "MmBackward and fails."
            ),
            hint="which MmBackward cannot mix",
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
    with torch.no_grad():
        while ready:
            node = ready.pop()
            grad = arrived.pop(node, None)
            if hasattr(node, "variable"):
                # a leaf: its gradient in the leaf's own dtype
                found[id(node.variable)] = None if grad is None else grad.to(node.variable.dtype)
                continue
            run = node if callable(node) else node.apply
            outs = run(grad) if grad is not None else ()
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
    return [found.get(id(t)) for t in leaves]
""",
        ),
    ]
)
