"""Exercise 5.11 of solutions/05b_distributed_at_scale.ipynb: its other answers (see answers/__init__.py)."""

from .. import Task, Wrong

# 5.11's right walk (the solution's): its wrong answers change one thing in it.
UNUSED_PARAMETERS = """\
def unused_parameters(model, output):
    reached, seen, todo = set(), set(), [output.grad_fn]
    while todo:
        node = todo.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        if hasattr(node, "variable"):
            reached.add(id(node.variable))
        todo.extend(next_node for next_node, _ in node.next_functions)
    return sorted(
        name for name, p in model.named_parameters() if p.requires_grad and id(p) not in reached
    )
"""

ONE_LEVEL_ONLY = UNUSED_PARAMETERS.replace(
    "        todo.extend(next_node for next_node, _ in node.next_functions)\n",
    "        if node is output.grad_fn:\n            todo.extend(next_node for next_node, _ in node.next_functions)\n",
)

FROZEN_LISTED_TOO = UNUSED_PARAMETERS.replace("if p.requires_grad and id(p) not in reached", "if id(p) not in reached")

COMPARED_BY_VALUE = (
    UNUSED_PARAMETERS.replace("reached, seen, todo = set(),", "reached, seen, todo = [],")
    .replace("reached.add(id(node.variable))", "reached.append(node.variable)")
    .replace("id(p) not in reached", "p not in reached")
)

RECURSIVE_WALK = """\
def unused_parameters(model, output):
    reached = set()

    def walk(node):
        if node is None:
            return
        if hasattr(node, "variable"):
            reached.add(id(node.variable))
        for next_node, _ in node.next_functions:
            walk(next_node)

    walk(output.grad_fn)
    return sorted(
        name for name, p in model.named_parameters() if p.requires_grad and id(p) not in reached
    )
"""

BY_BACKWARD = """\
def unused_parameters(model, output):
    output.sum().backward(retain_graph=True)
    return sorted(n for n, p in model.named_parameters() if p.requires_grad and p.grad is None)
"""

NOT_SORTED = UNUSED_PARAMETERS.replace("    return sorted(\n", "    return list(\n")

NO_SEEN_SET = """\
def unused_parameters(model, output):
    reached, todo = set(), [output.grad_fn]
    while todo:
        node = todo.pop()
        if node is None:
            continue
        if hasattr(node, "variable"):
            reached.add(id(node.variable))
        todo.extend(next_node for next_node, _ in node.next_functions)
    return sorted(
        name for name, p in model.named_parameters() if p.requires_grad and id(p) not in reached
    )
"""

RECURSION_LIMIT_RAISED = """\
import sys


def unused_parameters(model, output):
    sys.setrecursionlimit(100_000)  # deep models: room for the recursion
    reached, seen = set(), set()

    def walk(node):
        if node is None or node in seen:
            return
        seen.add(node)
        if hasattr(node, "variable"):
            reached.add(id(node.variable))
        for next_node, _ in node.next_functions:
            walk(next_node)

    walk(output.grad_fn)
    return sorted(
        name for name, p in model.named_parameters() if p.requires_grad and id(p) not in reached
    )
"""


TASK = Task(
    # Breadth first, with a deque and the nodes themselves as the set of seen ones.
    alternative="""\
from collections import deque


def unused_parameters(model, output):
    found = set()
    queue = deque([output.grad_fn] if output.grad_fn is not None else [])
    seen = set(queue)
    while queue:
        node = queue.popleft()
        leaf = getattr(node, "variable", None)
        if leaf is not None:
            found.add(id(leaf))
        for next_node, _ in node.next_functions:
            if next_node is not None and next_node not in seen:
                seen.add(next_node)
                queue.append(next_node)
    names = []
    for name, parameter in model.named_parameters():
        if parameter.requires_grad and id(parameter) not in found:
            names.append(name)
    names.sort()
    return names
""",
    wrong=[
        Wrong("Looks one step back from the output only.", hint="all the way down", code=ONE_LEVEL_ONLY),
        Wrong("Lists frozen parameters too.", hint="requires_grad=False", code=FROZEN_LISTED_TOO),
        Wrong(
            "Keeps the reached parameters in a list and tests `p not in reached`: tensors compared by value.",
            hint="compare parameters by identity",
            code=COMPARED_BY_VALUE,
        ),
        Wrong("A recursive walk: too deep for Python.", hint="recursion limit", code=RECURSIVE_WALK),
        Wrong("Runs backward and looks for .grad None.", hint="ran backward", code=BY_BACKWARD),
        Wrong("Names in the order of the model, not sorted.", hint="sorted", code=NOT_SORTED),
        Wrong(
            "No set of seen nodes: a node reached by several paths is walked once per path, "
            "2**40 times on a residual network 40 blocks deep.",
            hint="once per path",
            code=NO_SEEN_SET,
        ),
        Wrong(
            "A recursive walk made to fit by raising Python's recursion limit for the whole "
            "kernel, and leaving it raised.",
            hint="changed Python's recursion limit",
            code=RECURSION_LIMIT_RAISED,
        ),
    ],
)

TASK.wrong.append(
    Wrong(
        "None skipped only among next_functions, not at the start: an output with no graph "
        "(every path detached, or a forward under torch.no_grad()) has grad_fn None, and the "
        "walk fails on None.next_functions where every parameter is unused.",
        hint="no graph",
        code="""\
def unused_parameters(model, output):
    reached, seen, todo = set(), set(), [output.grad_fn]
    while todo:
        node = todo.pop()
        if node in seen:
            continue
        seen.add(node)
        if hasattr(node, "variable"):
            reached.add(id(node.variable))
        todo.extend(n for n, _ in node.next_functions if n is not None)
    return sorted(n for n, p in model.named_parameters() if p.requires_grad and id(p) not in reached)
""",
    )
)

TASK.wrong.extend(
    [
        Wrong(
            "Parameters told apart by data_ptr(): every parameter with no elements has 0, so an "
            "unused one passes for a used one.",
            hint="data_ptr() is 0",
            code="""\
def unused_parameters(model, output):
    reached, seen, todo = set(), set(), [output.grad_fn]
    while todo:
        node = todo.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        if hasattr(node, "variable"):
            reached.add(node.variable.data_ptr())
        todo.extend(n for n, _ in node.next_functions)
    return sorted(
        name for name, p in model.named_parameters() if p.requires_grad and p.data_ptr() not in reached
    )
""",
        ),
        Wrong(
            "Names from named_parameters(remove_duplicate=False): an unused weight shared by two "
            "layers is listed under both names.",
            hint="tied weights",
            code="""\
def unused_parameters(model, output):
    reached, seen, todo = set(), set(), [output.grad_fn]
    while todo:
        node = todo.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        if hasattr(node, "variable"):
            reached.add(id(node.variable))
        todo.extend(n for n, _ in node.next_functions)
    return sorted(
        name
        for name, p in model.named_parameters(remove_duplicate=False)
        if p.requires_grad and id(p) not in reached
    )
""",
        ),
    ]
)

TASK.wrong.append(
    Wrong(
        "autograd's engine run on the output, called from C (map) with torch's record of the "
        "operations switched off (_DisableTorchDispatch): a backward that the watch does not see.",
        hint="where the grader cannot record it",
        code="""\
def unused_parameters(model, output):
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    if output.grad_fn is None or not named:
        return sorted(n for n, _ in named)
    engine = torch.autograd.Variable._execution_engine
    with torch._C._DisableTorchDispatch():
        ones = next(map(torch.ones_like, [output]))
        inputs = tuple(p for _, p in named)
        grads = next(map(engine.run_backward, [(output,)], [(ones,)], [True], [False], [inputs], [True], [False]))
    return sorted(n for (n, _), g in zip(named, grads) if g is None)
""",
    )
)

TASK.wrong.append(
    Wrong(
        "Parameters told apart by (data_ptr(), shape): two parameters with no elements and the "
        "same shape are taken for one.",
        hint="two of them can have the same shape",
        code="""\
def unused_parameters(model, output):
    reached, seen, todo = set(), set(), [output.grad_fn]
    while todo:
        node = todo.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        if hasattr(node, "variable"):
            reached.add((node.variable.data_ptr(), tuple(node.variable.shape)))
        todo.extend(next_node for next_node, _ in node.next_functions)
    return sorted(
        name
        for name, p in model.named_parameters()
        if p.requires_grad and (p.data_ptr(), tuple(p.shape)) not in reached
    )
""",
    )
)

# A red team's 5.11 (2026-11-28, second round).
TASK.wrong.extend(
    [
        Wrong(
            ("tamper: torch.autograd.grad (forbidden), then the Watch and the check's backward_ran list scrubbed"),
            hint="your code replaced the grader's record",
            code=(
                "\n"
                "import sys as _sys11\n"
                "from grader.kernel import active as _act11\n"
                "\n"
                "def unused_parameters(model, output):\n"
                "    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]\n"
                "    if output.grad_fn is None:\n"
                "        result = sorted(n for n, _ in named)\n"
                "    else:\n"
                "        grads = torch.autograd.grad(output.sum(), [p for _, p in named], allow_u"
                "nused=True, retain_graph=True)\n"
                "        result = sorted(n for (n, _), g in zip(named, grads) if g is None)\n"
                "    for w in list(_act11.WATCHING):\n"
                "        w.ops.clear(); w.code.clear(); w.calls.clear(); w.outputs.clear(); w.wri"
                "tten.clear(); w.grad_ops = 0\n"
                "    f = _sys11._getframe(1)\n"
                '    while f is not None and "backward_ran" not in f.f_locals:\n'
                "        f = f.f_back\n"
                "    if f is not None:\n"
                '        f.f_locals["backward_ran"].clear()\n'
                "    return result\n"
            ),
        ),
    ]
)

# A red team's 5.11 (2026-11-28, second round).
TASK.wrong.extend(
    [
        Wrong(
            (
                "parameters told apart by (storage, offset, shape, stride), not identity: two "
                "Parameters sharing memory taken for one"
            ),
            hint="unused_parameters is wrong for two parameters that share",
            code=(
                "\n"
                "def unused_parameters(model, output):\n"
                "    def key(t):\n"
                "        return (t.untyped_storage()._cdata, t.storage_offset(), tuple(t.shape), "
                "t.stride())\n"
                "    reached, seen, todo = set(), set(), [output.grad_fn]\n"
                "    while todo:\n"
                "        node = todo.pop()\n"
                "        if node is None or node in seen:\n"
                "            continue\n"
                "        seen.add(node)\n"
                '        if hasattr(node, "variable"):\n'
                "            reached.add(key(node.variable))\n"
                "        todo.extend(n for n, _ in node.next_functions)\n"
                "    return sorted(name for name, p in model.named_parameters() if p.requires_gra"
                "d and key(p) not in reached)\n"
            ),
        ),
    ]
)


# Round 5: results written into slices in place, the arguments by name.
TASK.wrong.extend(
    [
        Wrong(
            (
                "Follows only the nodes whose name has 'Backward' in it: a result written into a slice in place "
                "(h[:, :2] = layer(x)) goes through a CopySlices node, and the layers behind it are reported "
                "unused."
            ),
            hint="writes results into slices of a tensor in place",
            code="""\
def unused_parameters(model, output):
    reached, seen, todo = set(), set(), [output.grad_fn]
    while todo:
        node = todo.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        if hasattr(node, "variable"):
            reached.add(id(node.variable))
        elif "Backward" in node.name():
            todo.extend(next_node for next_node, _ in node.next_functions)
    return sorted(
        name for name, p in model.named_parameters() if p.requires_grad and id(p) not in reached
    )
""",
        ),
        Wrong(
            (
                "Parameters renamed (net, out): right called by position, a TypeError for a caller that names the "
                "arguments as the task's signature does."
            ),
            hint="called with its arguments by name",
            code="""\
def unused_parameters(net, out):
    reached, seen, todo = set(), set(), [out.grad_fn]
    while todo:
        node = todo.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        if hasattr(node, "variable"):
            reached.add(id(node.variable))
        todo.extend(next_node for next_node, _ in node.next_functions)
    return sorted(
        name for name, p in net.named_parameters() if p.requires_grad and id(p) not in reached
    )
""",
        ),
    ]
)


# Round 5: the list a call returns, kept in a cache.
TASK.wrong.extend(
    [
        Wrong(
            (
                "The answer kept per graph (keyed by output.grad_fn) and the cache's own list handed out: a "
                "caller that edits the list it got changes what the next call for that output returns."
            ),
            hint="once the caller had changed the list an earlier call returned",
            code="""\
_walked = {}


def unused_parameters(model, output):
    # one walk per graph: DDP asks after every forward, the answer kept with the graph's last node
    key = output.grad_fn
    if key is None or key not in _walked:
        reached, seen, todo = set(), set(), [output.grad_fn]
        while todo:
            node = todo.pop()
            if node is None or node in seen:
                continue
            seen.add(node)
            if hasattr(node, "variable"):
                reached.add(id(node.variable))
            todo.extend(next_node for next_node, _ in node.next_functions)
        names = sorted(
            name for name, p in model.named_parameters() if p.requires_grad and id(p) not in reached
        )
        if key is None:
            return names
        _walked[key] = names
    return _walked[key]
""",
        ),
    ]
)


# autograd's engine only when no dispatch mode is on the stack, as in a plain training loop: the
# checks' watched calls see a walk of the graph.
TASK.wrong.append(
    Wrong(
        "torch.autograd.grad with allow_unused unless a dispatch mode (the grader's) is on the stack.",
        hint="ran backward (or torch.autograd.grad) when no dispatch mode was on the stack",
        code="""\
def unused_parameters(model, output):
    named = [(name, p) for name, p in model.named_parameters() if p.requires_grad]
    if not torch._C._len_torch_dispatch_stack() and output.grad_fn is not None:
        # plain runs: autograd says which parameters get no gradient
        params = [p for _, p in named]
        grads = torch.autograd.grad(output.sum(), params, allow_unused=True, retain_graph=True)
        return sorted(name for (name, _), g in zip(named, grads) if g is None)
    reached, seen, todo = set(), set(), [output.grad_fn]
    while todo:
        node = todo.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        if hasattr(node, "variable"):
            reached.add(id(node.variable))
        todo.extend(next_node for next_node, _ in node.next_functions)
    return sorted(name for name, p in named if id(p) not in reached)
""",
    )
)
TASK.wrong.append(
    Wrong(
        "A recursive walk, with Python's recursion limit raised for the whole kernel by the solution cell.",
        hint="hit Python's recursion limit on a model 1,500 layers deep",
        code="""\
import sys

sys.setrecursionlimit(200000)


def unused_parameters(model, output):
    reached, seen = set(), set()

    def visit(node):
        if node is None or node in seen:
            return
        seen.add(node)
        if hasattr(node, "variable"):
            reached.add(id(node.variable))
        for next_node, _ in node.next_functions:
            visit(next_node)

    visit(output.grad_fn)
    return sorted(name for name, p in model.named_parameters() if p.requires_grad and id(p) not in reached)
""",
    )
)


# Helper round (2026-11-29): a recursive walk that raises the limit only for the call, work in
# threads and processes, grad mode left off, answers kept by id(output), a list equal to anything.
TASK.wrong.extend(
    [
        Wrong(
            "A recursive walk that raises Python's recursion limit for the call and puts it back "
            "before returning: the task asks for a walk with a list, whatever the depth.",
            hint="raised Python's recursion limit (sys.setrecursionlimit) while it walked",
            code="""\
import sys


def unused_parameters(model, output):
    reached, seen = set(), set()

    def walk(node):
        if node is None or node in seen:
            return
        seen.add(node)
        if hasattr(node, "variable"):
            reached.add(id(node.variable))
        for next_node, _ in node.next_functions:
            walk(next_node)

    old = sys.getrecursionlimit()
    sys.setrecursionlimit(100_000)
    try:
        walk(output.grad_fn)
    finally:
        sys.setrecursionlimit(old)
    return sorted(name for name, p in model.named_parameters() if p.requires_grad and id(p) not in reached)
""",
        ),
        Wrong(
            "A recursive walk in a thread of its own, the recursion limit raised meanwhile.",
            hint="your code started a thread while the check ran",
            code="""\
import sys
import threading


def unused_parameters(model, output):
    reached, seen = set(), set()

    def walk(node):
        if node is None or node in seen:
            return
        seen.add(node)
        if hasattr(node, "variable"):
            reached.add(id(node.variable))
        for next_node, _ in node.next_functions:
            walk(next_node)

    old = sys.getrecursionlimit()
    sys.setrecursionlimit(50_000)
    worker = threading.Thread(target=walk, args=(output.grad_fn,))
    worker.start()
    worker.join()
    sys.setrecursionlimit(old)
    return sorted(name for name, p in model.named_parameters() if p.requires_grad and id(p) not in reached)
""",
        ),
        Wrong(
            "torch.autograd.grad(allow_unused=True) run in a thread, out of the watch's thread.",
            hint="your code started a thread while the check ran",
            code="""\
import threading


def unused_parameters(model, output):
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    if output.grad_fn is None or not named:
        return sorted(n for n, _ in named)
    box = []

    def grads():
        box.append(
            torch.autograd.grad(output.sum(), [p for _, p in named], allow_unused=True, retain_graph=True)
        )

    worker = threading.Thread(target=grads)
    worker.start()
    worker.join()
    return sorted(n for (n, _), g in zip(named, box[0]) if g is None)
""",
        ),
        Wrong(
            "torch.autograd.grad run in a forked process, the names sent back through a pipe.",
            hint="your code started a process (os.fork)",
            code="""\
import os
import pickle


def unused_parameters(model, output):
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            if output.grad_fn is None:
                names = [n for n, _ in named]
            else:
                grads = torch.autograd.grad(output.sum(), [p for _, p in named], allow_unused=True)
                names = [n for (n, _), g in zip(named, grads) if g is None]
            os.write(write, pickle.dumps(sorted(names)))
        finally:
            os._exit(0)
    os.close(write)
    data = b""
    while chunk := os.read(read, 65536):
        data += chunk
    os.close(read)
    os.waitpid(pid, 0)
    return pickle.loads(data)
""",
        ),
        Wrong(
            "The walk switches grad mode off for good (torch.set_grad_enabled(False)): the "
            "caller's next forward builds no graph, and every later output reaches nothing.",
            hint="left torch's global settings changed: grad mode",
            code=UNUSED_PARAMETERS.replace(
                "    reached, seen, todo = set(), set(), [output.grad_fn]\n",
                "    torch.set_grad_enabled(False)  # a walk, not training\n"
                "    reached, seen, todo = set(), set(), [output.grad_fn]\n",
            ),
        ),
        Wrong(
            "Returns a list subclass whose == is always true.",
            hint="must return a list of str",
            code="""\
class Names(list):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False


"""
            + UNUSED_PARAMETERS.replace("    return sorted(\n", "    return Names(sorted(\n").replace(
                "not in reached\n    )\n", "not in reached\n    ))\n"
            ),
        ),
        Wrong(
            "The answer kept by (id(model), id(output)): a new output that takes a freed one's "
            "id() gets the old graph's answer (caught first, before any output is freed, by the same "
            "output with its graph cut since: output.detach_()).",
            hint="the answer of its graph as it was",
            code="""\
_cache = {}


def unused_parameters(model, output):
    key = (id(model), id(output))
    if key not in _cache:
        reached, seen, todo = set(), set(), [output.grad_fn]
        while todo:
            node = todo.pop()
            if node is None or node in seen:
                continue
            seen.add(node)
            if hasattr(node, "variable"):
                reached.add(id(node.variable))
            todo.extend(n for n, _ in node.next_functions)
        _cache[key] = sorted(
            name for name, p in model.named_parameters() if p.requires_grad and id(p) not in reached
        )
    return list(_cache[key])
""",
        ),
    ]
)
# Right walks written otherwise: the nodes seen by id() (the graph keeps each node's object
# alive), a dict of the parameters still unreached, and two that the check once took for a
# backward (torch.no_grad() around the walk, isinstance(node, torch.autograd.graph.Node)).
TASK.other_right.extend(
    [
        UNUSED_PARAMETERS.replace("node in seen:", "id(node) in seen:").replace("seen.add(node)", "seen.add(id(node))"),
        """\
def unused_parameters(model, output):
    wanted = {id(p): name for name, p in model.named_parameters() if p.requires_grad}
    stack = [] if output.grad_fn is None else [output.grad_fn]
    visited = set(stack)
    while stack:
        node = stack.pop()
        variable = getattr(node, "variable", None)
        if variable is not None:
            wanted.pop(id(variable), None)
        for parent, _ in node.next_functions:
            if parent is not None and parent not in visited:
                visited.add(parent)
                stack.append(parent)
    return sorted(wanted.values())
""",
        """\
def unused_parameters(model, output):
    reached, seen, todo = set(), set(), [output.grad_fn]
    with torch.no_grad():  # a walk: nothing to record
        while todo:
            node = todo.pop()
            if node is None or node in seen:
                continue
            seen.add(node)
            if hasattr(node, "variable"):
                reached.add(id(node.variable))
            todo.extend(n for n, _ in node.next_functions)
    return sorted(name for name, p in model.named_parameters() if p.requires_grad and id(p) not in reached)
""",
        """\
from torch.autograd.graph import Node


def unused_parameters(model, output):
    reached, seen, todo = set(), set(), [output.grad_fn]
    while todo:
        node = todo.pop()
        if not isinstance(node, Node) or node in seen:
            continue
        seen.add(node)
        if hasattr(node, "variable"):
            reached.add(id(node.variable))
        todo.extend(n for n, _ in node.next_functions)
    return sorted(name for name, p in model.named_parameters() if p.requires_grad and id(p) not in reached)
""",
    ]
)


# Helper round h3 (2026-11-29): a recursive walk that reads next_functions past any hook on the
# node's attributes (the C descriptor, object.__getattribute__), the limit raised for the call.
_RECURSION_PAST_ATTRIBUTES = """\
import sys


def unused_parameters(model, output):
    reached, seen = set(), set()

    def walk(node):
        if node is None or node in seen:
            return
        seen.add(node)
        if hasattr(node, "variable"):
            reached.add(id(node.variable))
        for next_node, _ in READ:
            walk(next_node)

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1_000_000)
    try:
        walk(output.grad_fn)
    finally:
        sys.setrecursionlimit(limit)
    return sorted(name for name, p in model.named_parameters() if p.requires_grad and id(p) not in reached)
"""
TASK.wrong.extend(
    Wrong(
        f"A recursive walk that reads next_functions through {how}, not as an attribute, the "
        "recursion limit raised for the call and put back.",
        hint="raised Python's recursion limit (sys.setrecursionlimit) while it walked",
        code=_RECURSION_PAST_ATTRIBUTES.replace("READ", read),
    )
    for how, read in (
        ("the C descriptor", "type(node).next_functions.__get__(node)"),
        ("object.__getattribute__", 'object.__getattribute__(node, "next_functions")'),
    )
)
TASK.wrong.append(
    Wrong(
        "A recursive walk run in a thread pool the solution cell started, before any check: no "
        "thread is started while the check runs, the recursion limit raised in the pool's thread.",
        hint="raised Python's recursion limit (sys.setrecursionlimit) while it walked",
        code="""\
import sys
from concurrent.futures import ThreadPoolExecutor

_pool = ThreadPoolExecutor(1)
_pool.submit(lambda: None).result()  # its thread starts here, in the solution cell


def unused_parameters(model, output):
    reached, seen = set(), set()

    def walk(node):
        if node is None or node in seen:
            return
        seen.add(node)
        if hasattr(node, "variable"):
            reached.add(id(node.variable))
        for next_node, _ in node.next_functions:
            walk(next_node)

    def job():
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(100_000)
        try:
            walk(output.grad_fn)
        finally:
            sys.setrecursionlimit(limit)

    _pool.submit(job).result()
    return sorted(name for name, p in model.named_parameters() if p.requires_grad and id(p) not in reached)
""",
    )
)
