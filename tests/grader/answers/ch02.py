"""Other answers to the exercises of solutions/02_autograd.ipynb (see answers/__init__.py)."""

from . import Task, Wrong

# A tensor that "equals" and is "close to" anything: checks must insist on plain tensors.
CLOSE_TO_ANYTHING = """\
class Anything(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in (torch.allclose, torch.equal):
            return True
        return super().__torch_function__(func, types, args, kwargs or {})


"""

# Work run in a thread started by _thread's own starter, taken from the grader's start hook
# (its closure): the thread runs where no record reaches and ends before the cell does.
IN_AN_UNWATCHED_THREAD = """\
import _thread

_start = _thread.start_new_thread.__closure__[0].cell_contents


def in_a_thread(fn):
    done, box = _thread.allocate_lock(), []
    done.acquire()

    def work():
        try:
            box.append(fn())
        finally:
            done.release()

    _start(work, ())
    done.acquire()
    return box[0]


"""

# 2.1's right numbers: each wrong answer gets one part of them wrong.
CHAIN_RULE_NUMBERS = """\
dL_dw, dL_dx, dL_db = 20, 30, 10
dz_da = -4 + 2 * 4
dz_db = 2 * 4
dz_dc = 2 * (-1)
"""
LOCAL_DERIVATIVES_ONLY = CHAIN_RULE_NUMBERS.replace(
    "dL_dw, dL_dx, dL_db = 20, 30, 10\n", "dL_dw = 2\ndL_dx = 3\ndL_db = 1\n"
)
ONE_PATH_FOR_A = CHAIN_RULE_NUMBERS.replace("dz_da = -4 + 2 * 4", "dz_da = 2 * 4")

# 2.2's right answer (the solution's): a wrong answer changes one line of it.
MANUAL_GRADS = """\
def manual_grads(X, y, W1, b1, W2):
    h = X @ W1 + b1
    a = h.clamp(min=0)
    out = a @ W2
    dout = 2 * (out - y) / out.numel()
    dW2 = a.T @ dout
    dh = (dout @ W2.T) * (h > 0)
    return X.T @ dh, dh.sum(dim=0), dW2
"""

# 2.3's right loop (zero_grad once per step, each micro-batch weighted by its share of the
# batch). Its first wrong answer calls the given buggy loop; the others change one thing in
# this one, or (the whole batch at once) keep only its start.
TRAIN_STEP_START = """\
def train(model, xs, ys, micro_batch=2, steps=10, lr=0.1):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
"""
MICRO_BATCH_TRAIN = (
    TRAIN_STEP_START
    + """\
        step_loss = 0.0
        for xb, yb in zip(xs.split(micro_batch), ys.split(micro_batch)):
            loss = ((model(xb) - yb) ** 2).mean() * len(xb) / len(xs)
            loss.backward()
            step_loss += loss.item()
        opt.step()
        losses.append(step_loss)
    return losses
"""
)
NO_ZERO_GRAD = MICRO_BATCH_TRAIN.replace("        opt.zero_grad()\n", "")
# zero_grad after each step instead of before: the first step adds to whatever .grad held.
ZERO_GRAD_AFTER_THE_STEP = NO_ZERO_GRAD.replace("        opt.step()\n", "        opt.step()\n        opt.zero_grad()\n")
WHOLE_BATCH_AT_ONCE = (
    TRAIN_STEP_START
    + """\
        loss = ((model(xs) - ys) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses
"""
)
EQUAL_WEIGHTS = MICRO_BATCH_TRAIN.replace(
    """\
        step_loss = 0.0
        for xb, yb in zip(xs.split(micro_batch), ys.split(micro_batch)):
            loss = ((model(xb) - yb) ** 2).mean() * len(xb) / len(xs)
""",
    """\
        pieces = list(zip(xs.split(micro_batch), ys.split(micro_batch)))
        step_loss = 0.0
        for xb, yb in pieces:
            loss = ((model(xb) - yb) ** 2).mean() / len(pieces)
""",
)

# 2.4's given setup: every answer starts with it.
TANH_SETUP = """\
x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
h = torch.tanh(x)
loss = (h ** 2).sum()
"""

# 2.5's right cell (the given f and x0, then a vjp by one backward pass seeded with v, read from
# x.grad, which retain_grad keeps for a non-leaf x too): the alternative builds J from this vjp
# instead, and each wrong answer breaks the vjp.
VJP = """\
def f(x):
    return torch.stack([x[0] * x[1] + x[2], torch.exp(x[1]) * x[2]])


x0 = torch.tensor([1.0, -0.5, 2.0])


def vjp(f, x, v):
    x.grad = None
    x.retain_grad()  # x may be a non-leaf: have backward keep its .grad too
    (v * f(x)).sum().backward()
    return x.grad


J = torch.autograd.functional.jacobian(f, x0)
"""
JACOBIAN_FIRST = VJP.replace(
    "    x.grad = None\n    x.retain_grad()  # x may be a non-leaf: have backward keep its .grad too\n"
    "    (v * f(x)).sum().backward()\n    return x.grad\n",
    "    return v @ torch.autograd.functional.jacobian(f, x)\n",
)
GRAD_NOT_CLEARED = VJP.replace("    x.grad = None\n", "")
SEEDED_WITH_ONES = VJP.replace("(v * f(x)).sum().backward()", "f(x).sum().backward()")

# 2.7's right answer (the solution's): each wrong answer changes one line of it.
FIXED_LOSS = """\
culprit = "sigmoid"


def fixed_loss(x):
    y = torch.sigmoid(x)
    y = y * 2
    return (y * x).sum()
"""
STILL_IN_PLACE = FIXED_LOSS.replace("    y = y * 2\n", "    y *= 2\n")
# The in-place op kept, its error hidden: every tensor autograd saves is copied when saved.
ERROR_HIDDEN_BY_HOOKS = FIXED_LOSS.replace(
    "    y = torch.sigmoid(x)\n    y = y * 2\n    return (y * x).sum()\n",
    """\
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
        y = torch.sigmoid(x)
        y.mul_(2)
        return (y * x).sum()
""",
)
CULPRIT_NAMES_THE_OP = FIXED_LOSS.replace(
    'culprit = "sigmoid"', 'culprit = "mul_, which overwrote the output of sigmoid"'
)

# 2.8's right answer (the solution's): its wrong answer leaves out create_graph=True.
SECOND_DERIVATIVE = """\
def derivatives(f, x):
    (d1,) = torch.autograd.grad(f(x), x, create_graph=True)
    (d2,) = torch.autograd.grad(d1, x)
    return d1, d2
"""

# 2.9's right answer (the solution's): each wrong answer changes one of its functions.
NO_GRAD_AND_DETACH = """\
def predict(model, xs):
    with torch.no_grad():
        return model(xs)


def stop_grad_loss(w):
    pred = 3 * w
    target = (w * w).detach()
    return (pred - target) ** 2
"""
TARGET_IN_THE_GRAPH = NO_GRAD_AND_DETACH.replace("(w * w).detach()", "w * w")
# Recording switched off and then on again: a caller that had it off finds it on.
GRAD_MODE_SWITCHED_BACK_ON = NO_GRAD_AND_DETACH.replace(
    "    with torch.no_grad():\n        return model(xs)\n",
    """\
    torch.set_grad_enabled(False)
    out = model(xs)
    torch.set_grad_enabled(True)
    return out
""",
)
DETACHED_AFTER_RECORDING = NO_GRAD_AND_DETACH.replace(
    "    with torch.no_grad():\n        return model(xs)\n", "    return model(xs).detach()\n"
)

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

# 2.2: relu's derivative taken as 1 at h = 0 (h >= 0): random inputs never make h exactly 0.
RELU_GRADIENT_AT_ZERO = """\
def manual_grads(X, y, W1, b1, W2):
    h = X @ W1 + b1
    a = h.clamp(min=0)
    out = a @ W2
    dout = 2 * (out - y) / out.numel()
    dW2 = a.T @ dout
    dh = (dout @ W2.T) * (h >= 0)
    return X.T @ dh, dh.sum(dim=0), dW2
"""
# 2.2: forward-mode autograd (dual numbers) needs no recording: one tangent per parameter element.
FORWARD_MODE_AUTOGRAD = """\
import torch.autograd.forward_ad as fwAD


def manual_grads(X, y, W1, b1, W2):
    def loss(W1, b1, W2):
        return ((torch.relu(X @ W1 + b1) @ W2 - y) ** 2).mean()

    grads = []
    for k, p in enumerate((W1, b1, W2)):
        g = torch.zeros_like(p).flatten()
        for i in range(p.numel()):
            t = torch.zeros_like(p).flatten()
            t[i] = 1
            with fwAD.dual_level():
                args = [W1, b1, W2]
                args[k] = fwAD.make_dual(p, t.view_as(p))
                g[i] = fwAD.unpack_dual(loss(*args)).tangent
        grads.append(g.view_as(p))
    return tuple(grads)
"""
# 2.2: torch.func.jacfwd, forward mode through functorch.
JACFWD = """\
def manual_grads(X, y, W1, b1, W2):
    def loss(W1, b1, W2):
        return ((torch.relu(X @ W1 + b1) @ W2 - y) ** 2).mean()

    return torch.func.jacfwd(loss, argnums=(0, 1, 2))(W1, b1, W2)
"""

TASKS = {
    "2.1": Task(
        alternative="""\
w, x, b = 3.0, 2.0, -1.0
dL_dy = 2 * (w * x + b)
dL_dw, dL_dx, dL_db = dL_dy * x, dL_dy * w, dL_dy * 1.0
a, b, c = 2.0, -3.0, 4.0
y = (a + b) * c
dz_da = y + a * c
dz_db = a * c
dz_dc = a * (a + b)
""",
        wrong=[
            Wrong(
                "Only the local derivatives of y, without the outer factor dL/dy = 2y.",
                hint="chain rule",
                code=LOCAL_DERIVATIVES_ONLY,
            ),
            Wrong(
                "Only the path through y for a, which is used twice.",
                hint="two paths",
                code=ONE_PATH_FOR_A,
            ),
            Wrong(
                "The first three numbers computed with autograd in the solution cell, not by hand.",
                hint="not worked out by hand",
                code=CHAIN_RULE_NUMBERS.replace(
                    "dL_dw, dL_dx, dL_db = 20, 30, 10\n",
                    """\
w_t, x_t, b_t = (torch.tensor(v, requires_grad=True) for v in (3.0, 2.0, -1.0))
((w_t * x_t + b_t) ** 2).backward()
dL_dw, dL_dx, dL_db = w_t.grad, x_t.grad, b_t.grad
""",
                ),
            ),
            # A record of what ran must reach into threads: a thread's dispatch modes and profile are its own.
            Wrong(
                "The first three numbers computed with autograd in a thread of their own, out of the record's sight.",
                hint="starting a thread",
                code=CHAIN_RULE_NUMBERS.replace(
                    "dL_dw, dL_dx, dL_db = 20, 30, 10\n",
                    """\
import threading

found = []


def work():
    w_t, x_t, b_t = (torch.tensor(v, requires_grad=True) for v in (3.0, 2.0, -1.0))
    ((w_t * x_t + b_t) ** 2).backward()
    found.extend(t.grad.item() for t in (w_t, x_t, b_t))


thread = threading.Thread(target=work)
thread.start()
thread.join()
dL_dw, dL_dx, dL_db = found
""",
                ),
            ),
            Wrong(
                "The first three numbers computed with autograd in a thread started by _thread's own starter.",
                hint="starting a thread",
                code=CHAIN_RULE_NUMBERS.replace(
                    "dL_dw, dL_dx, dL_db = 20, 30, 10\n",
                    IN_AN_UNWATCHED_THREAD
                    + """\
def derivatives():
    w_t, x_t, b_t = (torch.tensor(v, requires_grad=True) for v in (3.0, 2.0, -1.0))
    ((w_t * x_t + b_t) ** 2).backward()
    return [t.grad.item() for t in (w_t, x_t, b_t)]


dL_dw, dL_dx, dL_db = in_a_thread(derivatives)
""",
                ),
            ),
            Wrong(
                "Differentiated by sympy, a computer-algebra system, not by hand.",
                hint="not worked out by hand",
                code="""\
import sympy as sp

w, x, b, a, c = sp.symbols("w x b a c")
L = (w * x + b) ** 2
dL_dw, dL_dx, dL_db = (int(sp.diff(L, v).subs({w: 3, x: 2, b: -1})) for v in (w, x, b))
z = ((a + b) * c) * a
dz_da, dz_db, dz_dc = (int(sp.diff(z, v).subs({a: 2, b: -3, c: 4})) for v in (a, b, c))
""",
            ),
            Wrong(
                "Measured by central finite differences in plain Python.",
                hint="not worked out by hand",
                code="""\
def fd(fn, args, i, eps=1e-4):
    up, down = list(args), list(args)
    up[i] += eps
    down[i] -= eps
    return round((fn(*up) - fn(*down)) / (2 * eps), 6)


dL_dw, dL_dx, dL_db = (fd(lambda w, x, b: (w * x + b) ** 2, (3.0, 2.0, -1.0), i) for i in range(3))
dz_da, dz_db, dz_dc = (fd(lambda a, b, c: ((a + b) * c) * a, (2.0, -3.0, 4.0), i) for i in range(3))
""",
            ),
            Wrong(
                "Forward-mode dual numbers in plain Python.",
                hint="not worked out by hand",
                code="""\
class Dual:
    def __init__(self, v, d=0.0):
        self.v, self.d = v, d

    def __add__(self, o):
        o = o if isinstance(o, Dual) else Dual(o)
        return Dual(self.v + o.v, self.d + o.d)

    def __mul__(self, o):
        o = o if isinstance(o, Dual) else Dual(o)
        return Dual(self.v * o.v, self.d * o.v + self.v * o.d)

    def __pow__(self, n):
        return Dual(self.v**n, n * self.v ** (n - 1) * self.d)


def diff(fn, vs, i):
    return fn(*[Dual(v, 1.0 if k == i else 0.0) for k, v in enumerate(vs)]).d


dL_dw, dL_dx, dL_db = (diff(lambda w, x, b: (w * x + b) ** 2, (3.0, 2.0, -1.0), i) for i in range(3))
dz_da, dz_db, dz_dc = (diff(lambda a, b, c: ((a + b) * c) * a, (2.0, -3.0, 4.0), i) for i in range(3))
""",
            ),
            Wrong(
                "Autograd run in the cell, the numbers written down by a cell it runs itself.",
                hint="run from inside another cell",
                code="""\
_vals = []
for _fn, _vs in (
    (lambda w, x, b: (w * x + b) ** 2, (3.0, 2.0, -1.0)),
    (lambda a, b, c: ((a + b) * c) * a, (2.0, -3.0, 4.0)),
):
    _ts = [torch.tensor(v, requires_grad=True) for v in _vs]
    _fn(*_ts).backward()
    _vals += [t.grad.item() for t in _ts]
get_ipython().run_cell("dL_dw, dL_dx, dL_db, dz_da, dz_db, dz_dc = " + repr(tuple(_vals)))
""",
            ),
            Wrong(
                "A number a little off (20.0000005 for 20): within the old tolerance of 1e-6.",
                hint="dL_dw is wrong",
                code="""\
dL_dw, dL_dx, dL_db = 20.0000005, 30, 10
dz_da = -4 + 2 * 4
dz_db = 2 * 4
dz_dc = 2 * (-1)
""",
            ),
        ],
    ),
    "2.2": Task(
        alternative="""\
def manual_grads(X, y, W1, b1, W2):
    N = X.shape[0]
    h = torch.addmm(b1, X, W1)
    a = torch.relu(h)
    g_out = (2.0 / N) * (a @ W2 - y)
    dW2 = torch.einsum("nh,no->ho", a, g_out)
    dh = torch.where(h > 0, g_out @ W2.t(), torch.zeros_like(h))
    return X.t() @ dh, dh.sum(0), dW2
""",
        wrong=[
            Wrong(
                "y's memory used as scratch through .data, then put back exactly: the version "
                "counter never moves, but the caller's y changed during the call.",
                hint="even if it put the values back",
                code="""\
def manual_grads(X, y, W1, b1, W2):
    kept = y.clone()
    h = X @ W1 + b1
    a = h.clamp(min=0)
    out = a @ W2
    dout = y.data.sub_(out).mul_(-2 / out.numel()).clone()
    y.data.copy_(kept)
    dW2 = a.T @ dout
    dh = (dout @ W2.T) * (h > 0)
    return X.T @ dh, dh.sum(dim=0), dW2
""",
            ),
            Wrong(
                "The mean's 1/N forgotten.",
                hint="divides by the number",
                code="""\
def manual_grads(X, y, W1, b1, W2):
    h = X @ W1 + b1
    a = h.clamp(min=0)
    out = a @ W2
    dout = 2 * (out - y)
    dW2 = a.T @ dout
    dh = (dout @ W2.T) * (h > 0)
    return X.T @ dh, dh.sum(dim=0), dW2
""",
            ),
            # Right numbers, but from autograd: the task says by hand.
            Wrong(
                "Autograd switched back on inside the function.",
                hint="by hand",
                code="""\
def manual_grads(X, y, W1, b1, W2):
    with torch.enable_grad():
        W1, b1, W2 = (p.clone().requires_grad_() for p in (W1, b1, W2))
        loss = ((torch.relu(X @ W1 + b1) @ W2 - y) ** 2).mean()
        return torch.autograd.grad(loss, (W1, b1, W2))
""",
            ),
            Wrong(
                "Tensors that claim to be close to anything.",
                hint="plain torch.Tensor",
                code=CLOSE_TO_ANYTHING
                + """\
def manual_grads(X, y, W1, b1, W2):
    return tuple(torch.zeros_like(p).as_subclass(Anything) for p in (W1, b1, W2))
""",
            ),
            # torch.func's transform computes gradients even under no_grad, without recording.
            Wrong(
                "torch.func.grad does the work: a function transform is autograd too.",
                hint="by hand",
                code="""\
def manual_grads(X, y, W1, b1, W2):
    def loss(W1, b1, W2):
        return ((torch.relu(X @ W1 + b1) @ W2 - y) ** 2).mean()

    return torch.func.grad(loss, argnums=(0, 1, 2))(W1, b1, W2)
""",
            ),
            Wrong(
                "dout computed in y's memory: the caller's targets are overwritten.",
                hint="changed one of its arguments",
                code=MANUAL_GRADS.replace(
                    "    dout = 2 * (out - y) / out.numel()\n", "    dout = y.sub_(out).mul_(-2 / out.numel())\n"
                ),
            ),
            # Right while N > 1: squeeze() turns a single example's (1, 1) output into a 0-d tensor.
            Wrong(
                "The output squeezed to a vector: breaks for a single example (N = 1).",
                hint="no squeeze()",
                code=MANUAL_GRADS.replace(
                    "    out = a @ W2\n    dout = 2 * (out - y) / out.numel()\n",
                    "    out = (a @ W2).squeeze()\n    dout = (2 * (out - y.squeeze()) / out.numel())[:, None]\n",
                ),
            ),
            # The watch sees one process: a forked child's autograd.grad would be out of its sight.
            Wrong(
                "autograd.grad run in a forked child, the numbers sent back through a pipe.",
                hint="started a process",
                code="""\
import os
import pickle


def manual_grads(X, y, W1, b1, W2):
    read, write = os.pipe()
    if os.fork() == 0:
        with torch.enable_grad():
            params = [p.clone().requires_grad_() for p in (W1, b1, W2)]
            loss = ((torch.relu(X @ params[0] + params[1]) @ params[2] - y) ** 2).mean()
            grads = [g.detach() for g in torch.autograd.grad(loss, params)]
        os.write(write, pickle.dumps(grads))
        os._exit(0)
    os.close(write)
    data = b""
    while chunk := os.read(read, 1 << 16):
        data += chunk
    os.wait()
    return tuple(pickle.loads(data))
""",
            ),
            Wrong("relu's derivative taken as 1 at h = 0.", hint="exactly 0", code=RELU_GRADIENT_AT_ZERO),
            Wrong(
                "Forward-mode autograd, one dual number per element.", hint="used autograd", code=FORWARD_MODE_AUTOGRAD
            ),
            Wrong("torch.func.jacfwd.", hint="used autograd", code=JACFWD),
            Wrong(
                "Computed in float32: float64 parameters get float32 gradients.",
                hint="each gradient has its parameter's dtype",
                code=MANUAL_GRADS.replace(
                    "    h = X @ W1 + b1\n",
                    "    X, y, W1, b1, W2 = (t.float() for t in (X, y, W1, b1, W2))\n    h = X @ W1 + b1\n",
                ),
            ),
            # The values come back, but y's version counter shows the change: a backward through y fails.
            Wrong(
                "y negated in place and back: the values put back, the version counter bumped.",
                hint="version counter",
                code=MANUAL_GRADS.replace(
                    "    dout = 2 * (out - y) / out.numel()\n",
                    "    y.neg_()\n    dout = 2 * (out + y) / out.numel()\n    y.neg_()\n",
                ),
            ),
            Wrong(
                "autograd's own derivative kernels called by name: torch.ops.aten.*_backward.",
                hint="derivative kernels",
                code=MANUAL_GRADS.replace(
                    "    dout = 2 * (out - y) / out.numel()\n",
                    "    dout = torch.ops.aten.mse_loss_backward(torch.ones((), dtype=out.dtype), out, y, 1)\n",
                ).replace("(dout @ W2.T) * (h > 0)", "torch.ops.aten.threshold_backward(dout @ W2.T, h, 0)"),
            ),
            Wrong(
                "autograd run in a thread started by _thread's own starter, out of the record's sight.",
                hint="started a thread",
                code=IN_AN_UNWATCHED_THREAD
                + """\
def manual_grads(X, y, W1, b1, W2):
    def gradients():
        with torch.enable_grad():
            params = [p.detach().clone().requires_grad_() for p in (W1, b1, W2)]
            loss = ((torch.relu(X @ params[0] + params[1]) @ params[2] - y) ** 2).mean()
            return tuple(torch.autograd.grad(loss, params))

    return in_a_thread(gradients)
""",
            ),
            Wrong(
                "Computed in float64 and never cast back: float32 parameters get float64 gradients.",
                hint="whatever it is",
                code="""\
def manual_grads(X, y, W1, b1, W2):
    X, y, W1, b1, W2 = (t.double() for t in (X, y, W1, b1, W2))
    h = X @ W1 + b1
    a = h.clamp(min=0)
    out = a @ W2
    dout = 2 * (out - y) / out.numel()
    dW2 = a.T @ dout
    da = dout @ W2.T
    dh = da * (h > 0)
    return X.T @ dh, dh.sum(dim=0), dW2
""",
            ),
            Wrong(
                "The relu mask as (h > 0).float(): bfloat16 parameters get float32 gradients.",
                hint="whatever it is",
                code="""\
def manual_grads(X, y, W1, b1, W2):
    h = X @ W1 + b1
    a = h.clamp(min=0)
    out = a @ W2
    dout = 2 * (out - y) / out.numel()
    dW2 = a.T @ dout
    da = dout @ W2.T
    dh = da * (h > 0).float()
    return X.T @ dh, dh.sum(dim=0), dW2
""",
            ),
            Wrong(
                "Recording switched off at the top and never back on: the caller's next backward fails.",
                hint="left it off",
                code="""\
def manual_grads(X, y, W1, b1, W2):
    torch.set_grad_enabled(False)  # by hand: make sure autograd records nothing
    h = X @ W1 + b1
    a = h.clamp(min=0)
    out = a @ W2
    dout = 2 * (out - y) / out.numel()
    dW2 = a.T @ dout
    dh = (dout @ W2.T) * (h > 0)
    return X.T @ dh, dh.sum(dim=0), dW2
""",
            ),
            Wrong(
                "A float32 working copy cast back: float64 gradients rounded to 7 digits, inf past 3e38.",
                hint="order 1e20",
                code="""\
def manual_grads(X, y, W1, b1, W2):
    dt = X.dtype
    X, y, W1, b1, W2 = (t.float() for t in (X, y, W1, b1, W2))
    h = X @ W1 + b1
    a = h.clamp(min=0)
    out = a @ W2
    dout = 2 * (out - y) / out.numel()
    dW2 = a.T @ dout
    dh = (dout @ W2.T) * (h > 0)
    return (X.T @ dh).to(dt), dh.sum(dim=0).to(dt), dW2.to(dt)
""",
            ),
            Wrong(
                "float16 computed in a float32 copy never cast back: float16 parameters get float32 gradients.",
                hint="torch.float16 parameters",
                code="""\
def manual_grads(X, y, W1, b1, W2):
    dt = X.dtype
    wd = torch.float32 if dt in (torch.float16,) else dt
    X, y, W1, b1, W2 = (t.to(wd) for t in (X, y, W1, b1, W2))
    h = X @ W1 + b1
    a = h.clamp(min=0)
    out = a @ W2
    dout = 2 * (out - y) / out.numel()
    dW2 = a.T @ dout
    dh = (dout @ W2.T) * (h > 0)
    return (X.T @ dh), dh.sum(dim=0), dW2
""",
            ),
        ],
    ),
    "2.3": Task(
        alternative="""\
def train(model, xs, ys, micro_batch=2, steps=10, lr=0.1):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        for p in model.parameters():
            p.grad = None
        total = 0.0
        for start in range(0, len(xs), micro_batch):
            xb, yb = xs[start:start + micro_batch], ys[start:start + micro_batch]
            part = torch.nn.functional.mse_loss(model(xb), yb, reduction="sum") / ys.numel()
            part.backward()
            total += part.item()
        opt.step()
        losses.append(total)
    return losses
""",
        wrong=[
            Wrong(
                "Every micro-batch's forward first, under saved_tensors_hooks of its own that "
                "keep the check's count of saved activations from seeing them, then the "
                "backward passes: all the micro-batches' activations held at once.",
                hint="saved_tensors_hooks of its own",
                code=TRAIN_STEP_START
                + """\
        with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            parts = [
                ((model(xb) - yb) ** 2).mean() * len(xb) / len(xs)
                for xb, yb in zip(xs.split(micro_batch), ys.split(micro_batch))
            ]
        for loss in parts:
            loss.backward()
        opt.step()
        losses.append(sum(loss.item() for loss in parts))
    return losses
""",
            ),
            Wrong(
                "The buggy loop as given: zero_grad between micro-batches.",
                hint="once per step",
                code="""\
def train(model, xs, ys, micro_batch=2, steps=10, lr=0.1):
    return train_buggy(model, xs, ys, micro_batch, steps, lr)
""",
            ),
            Wrong(
                "No zero_grad at all: gradients pile up across steps.",
                hint="once per step",
                code=NO_ZERO_GRAD,
            ),
            Wrong(
                "zero_grad after each step: the first step uses the gradients the model came with.",
                hint="came with old gradients",
                code=ZERO_GRAD_AFTER_THE_STEP,
            ),
            Wrong(
                "The whole batch at once: right numbers, but not in micro-batches.",
                hint="micro-batches of",
                code=WHOLE_BATCH_AT_ONCE,
            ),
            # Right when the micro-batches are equal, wrong when the last one is smaller.
            Wrong(
                "Each micro-batch weighted by 1 / (number of micro-batches).",
                hint="len(xb) / len(xs)",
                code=EQUAL_WEIGHTS,
            ),
            # Right gradients; the loss reported as the plain mean of the micro-batches' means.
            Wrong(
                "The returned loss averages the micro-batches' means: right only when they are equal.",
                hint="where the whole batch's losses are",
                code=MICRO_BATCH_TRAIN.replace(
                    "            step_loss += loss.item()\n",
                    "            step_loss += ((model(xb) - yb) ** 2).mean().item() * micro_batch / len(xs)\n",
                ),
            ),
            Wrong(
                "The last, shorter micro-batch dropped: its examples never count.",
                hint="the last one has 1 example",
                code=MICRO_BATCH_TRAIN.replace(
                    "        for xb, yb in zip(xs.split(micro_batch), ys.split(micro_batch)):\n",
                    """\
        whole = len(xs) // micro_batch * micro_batch
        for xb, yb in zip(xs[:whole].split(micro_batch), ys[:whole].split(micro_batch)):
""",
                ).replace("* len(xb) / len(xs)", "* len(xb) / whole"),
            ),
            Wrong(
                "Micro-batches of 2 whatever micro_batch is.",
                hint="Split by the micro_batch argument",
                code=MICRO_BATCH_TRAIN.replace(
                    "xs.split(micro_batch), ys.split(micro_batch)", "xs.split(2), ys.split(2)"
                ),
            ),
            Wrong(
                "Always 4 micro-batches (chunk(4)), whatever micro_batch is.",
                hint="Split by the micro_batch argument",
                code=MICRO_BATCH_TRAIN.replace(
                    "xs.split(micro_batch), ys.split(micro_batch)", "xs.chunk(4), ys.chunk(4)"
                ),
            ),
            # Right for one output: the sum over a micro-batch's elements / len(xs) is the mean only then.
            Wrong(
                "Squared errors summed and divided by len(xs): twice the mean for 2 outputs.",
                hint="model with 2 outputs",
                code=MICRO_BATCH_TRAIN.replace(
                    "((model(xb) - yb) ** 2).mean() * len(xb) / len(xs)", "((model(xb) - yb) ** 2).sum() / len(xs)"
                ),
            ),
            Wrong(
                "The whole batch through model.forward (no hooks), backward in slices of micro_batch.",
                hint="examples at once",
                code=TRAIN_STEP_START
                + """\
        sq = (model.forward(xs) - ys) ** 2
        step_loss = 0.0
        for part in sq.split(micro_batch):
            loss = part.mean() * len(part) / len(xs)
            loss.backward(retain_graph=True)
            step_loss += loss.item()
        opt.step()
        losses.append(step_loss)
    return losses
""",
            ),
            Wrong(
                "model.eval() first: the model is left in eval mode.",
                hint="left the model in eval mode",
                code=MICRO_BATCH_TRAIN.replace(
                    "    opt = torch.optim.SGD(", "    model.eval()\n    opt = torch.optim.SGD("
                ),
            ),
            Wrong(
                "The squares summed and divided by len(xs) * ys.shape[-1]: not the mean for 3-D outputs.",
                hint="whatever the shape",
                code="""\
def train(model, xs, ys, micro_batch=2, steps=10, lr=0.1):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        step_loss = 0.0
        for xb, yb in zip(xs.split(micro_batch), ys.split(micro_batch)):
            loss = ((model(xb) - yb) ** 2).sum() / (len(xs) * ys.shape[-1])
            loss.backward()
            step_loss += loss.item()
        opt.step()
        losses.append(step_loss)
    return losses
""",
            ),
            Wrong(
                "Every micro-batch's forward run first, then their backward passes: all the graphs kept at once.",
                hint="kept the graphs of",
                code="""\
def train(model, xs, ys, micro_batch=2, steps=10, lr=0.1):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        pieces = [((model(xb) - yb) ** 2).mean() * len(xb) / len(xs)
                  for xb, yb in zip(xs.split(micro_batch), ys.split(micro_batch))]
        for loss in pieces:
            loss.backward()
        opt.step()
        losses.append(sum(l.item() for l in pieces))
    return losses
""",
            ),
            Wrong(
                "Gradients zeroed with p.grad.zero_(): a fresh model has no .grad yet (AttributeError).",
                hint="fresh float64 model",
                code="""\
def train(model, xs, ys, micro_batch=2, steps=10, lr=0.1):
    losses = []
    for _ in range(steps):
        for p in model.parameters():
            p.grad.zero_()
        step_loss = 0.0
        for xb, yb in zip(xs.split(micro_batch), ys.split(micro_batch)):
            loss = ((model(xb) - yb) ** 2).mean() * len(xb) / len(xs)
            loss.backward()
            step_loss += loss.item()
        with torch.no_grad():
            for p in model.parameters():
                p -= lr * p.grad
        losses.append(step_loss)
    return losses
""",
            ),
            Wrong(
                "Micro-batches cast to float32: a float64 model fails.",
                hint="fresh float64 model",
                code="""\
def train(model, xs, ys, micro_batch=2, steps=10, lr=0.1):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        step_loss = 0.0
        for xb, yb in zip(xs.split(micro_batch), ys.split(micro_batch)):
            xb, yb = xb.float(), yb.float()
            loss = ((model(xb) - yb) ** 2).mean() * len(xb) / len(xs)
            loss.backward()
            step_loss += loss.item()
        opt.step()
        losses.append(step_loss)
    return losses
""",
            ),
            Wrong(
                "A hand-written update p -= lr * p.grad for every parameter: a frozen one has no .grad (TypeError).",
                hint="fresh float64 model",
                code="""\
def train(model, xs, ys, micro_batch=2, steps=10, lr=0.1):
    losses = []
    for _ in range(steps):
        model.zero_grad()
        step_loss = 0.0
        for xb, yb in zip(xs.split(micro_batch), ys.split(micro_batch)):
            loss = ((model(xb) - yb) ** 2).mean() * len(xb) / len(xs)
            loss.backward()
            step_loss += loss.item()
        with torch.no_grad():
            for p in model.parameters():
                p -= lr * p.grad
        losses.append(step_loss)
    return losses
""",
            ),
            Wrong(
                "A small weight decay in the optimizer: not plain SGD.",
                hint="fresh float64 model",
                code="""\
def train(model, xs, ys, micro_batch=2, steps=10, lr=0.1):
    opt = torch.optim.SGD(model.parameters(), lr=lr, weight_decay=1e-6)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        step_loss = 0.0
        for xb, yb in zip(xs.split(micro_batch), ys.split(micro_batch)):
            loss = ((model(xb) - yb) ** 2).mean() * len(xb) / len(xs)
            loss.backward()
            step_loss += loss.item()
        opt.step()
        losses.append(step_loss)
    return losses
""",
            ),
            Wrong(
                "backward(retain_graph=True): each micro-batch's graph kept through the next one's forward.",
                hint="kept the graphs of",
                code=MICRO_BATCH_TRAIN.replace("loss.backward()", "loss.backward(retain_graph=True)"),
            ),
        ],
    ),
    "2.4": Task(
        alternative=TANH_SETUP
        + """\
h.retain_grad()
torch.autograd.backward(loss)
h_grad, x_grad = h.grad.clone(), x.grad.clone()
""",
        wrong=[
            Wrong(
                "retain_grad called too late, after backward.",
                hint="retain_grad",
                code=TANH_SETUP
                + """\
loss.backward()
h.retain_grad()
h_grad = h.grad
x_grad = x.grad
""",
            ),
            Wrong(
                "h's gradient derived by hand: autograd was never asked to keep it.",
                hint="retain_grad",
                code=TANH_SETUP
                + """\
loss.backward()
h_grad = 2 * h.detach()
x_grad = x.grad
""",
            ),
            Wrong(
                "torch.autograd.grad returns the numbers but keeps nothing in .grad.",
                hint="retain_grad",
                code=TANH_SETUP
                + """\
h_grad, x_grad = torch.autograd.grad(loss, (h, x))
""",
            ),
            Wrong(
                "torch.autograd.grad's results stored in .grad by hand: no backward() ever kept them.",
                hint="one loss.backward()",
                code=TANH_SETUP
                + """\
h.retain_grad()
h_grad, x_grad = torch.autograd.grad(loss, (h, x))
h.grad, x.grad = h_grad, x_grad
""",
            ),
            Wrong(
                "h's gradient derived by hand after a real retain_grad() and backward(): the very "
                "bits of h.grad, but not what autograd kept.",
                hint="was computed, not read from .grad",
                code=TANH_SETUP
                + """\
h.retain_grad()
loss.backward()
h_grad = 2 * h.detach()
x_grad = x.grad
""",
            ),
            Wrong(
                "h.grad replaced by a value derived by hand after a real backward(), then read back.",
                hint="was computed, not read from .grad",
                code=TANH_SETUP
                + """\
h.retain_grad()
loss.backward()
h.grad = (2 * h).detach()
h_grad, x_grad = h.grad, x.grad
""",
            ),
            Wrong(
                "h.grad overwritten in place with a value derived by hand, then read back.",
                hint="was computed, not read from .grad",
                code=TANH_SETUP
                + """\
h.retain_grad()
loss.backward()
h.grad.copy_(h.detach() + h.detach())
h_grad, x_grad = h.grad, x.grad
""",
            ),
            Wrong(
                "The given x changed to float64: the setup is not kept as it is.",
                hint="keep the code that builds",
                code="""\
x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True, dtype=torch.float64)
h = torch.tanh(x)
loss = (h**2).sum()
h.retain_grad()
loss.backward()
h_grad = h.grad
x_grad = x.grad
""",
            ),
        ],
    ),
    "2.5": Task(
        alternative=VJP.replace(
            "J = torch.autograd.functional.jacobian(f, x0)\n",
            """\
rows = [vjp(f, x0.clone().requires_grad_(), one_hot) for one_hot in torch.eye(2)]
J = torch.stack(rows)
""",
        ),
        wrong=[
            Wrong(
                "The whole Jacobian built first: one backward pass per output.",
                hint="ONE backward pass",
                code=JACOBIAN_FIRST,
            ),
            Wrong(
                "Backward seeded with ones, whatever v is.",
                hint="seed backward with v",
                code=SEEDED_WITH_ONES,
            ),
            Wrong(
                "x.grad read after backward without clearing it: a second call returns the sum of both.",
                hint="another result the second time",
                code=GRAD_NOT_CLEARED,
            ),
            # Right for a vector-valued f; a scalar f has a 0-d output and a 0-d v.
            Wrong(
                "v dotted with f(x) before backward: torch.dot fails for a scalar-valued f.",
                hint="scalar-valued f",
                code=VJP.replace("(v * f(x)).sum().backward()", "torch.dot(v, f(x)).backward()"),
            ),
            Wrong(
                "The result flattened: right for a 1-d x, the wrong shape for a 2-d one.",
                hint="x's shape",
                code=VJP.replace("    return x.grad\n", "    return x.grad.flatten()\n"),
            ),
            Wrong(
                "x.grad zeroed in place and returned: the next call overwrites the first result.",
                hint="first result changed",
                code=VJP.replace("    x.grad = None\n", "    if x.grad is not None:\n        x.grad.zero_()\n"),
            ),
            Wrong(
                "The old x.grad subtracted after backward: lost in rounding when it holds 1e8.",
                hint="already holds 1e8s",
                code=VJP.replace(
                    "    x.grad = None\n", "    before = 0 if x.grad is None else x.grad.clone()\n"
                ).replace("    return x.grad\n", "    return x.grad - before\n"),
            ),
            Wrong(
                "The result read from x.grad after backward: None for an x that is not a leaf.",
                hint="not a leaf",
                code=VJP.replace("    x.retain_grad()  # x may be a non-leaf: have backward keep its .grad too\n", ""),
            ),
            Wrong(
                "The seed v cast to float32: a float64 v and f lose precision.",
                hint="(2, 3) matrix",
                code="""\
def f(x):
    return torch.stack([x[0] * x[1] + x[2], torch.exp(x[1]) * x[2]])
x0 = torch.tensor([1.0, -0.5, 2.0])
def vjp(f, x, v):
    (g,) = torch.autograd.grad(f(x), x, grad_outputs=v.float())
    return g
J = torch.autograd.functional.jacobian(f, x0)
""",
            ),
            Wrong(
                "torch.inner(v, f(x)): a scalar for 0-d and 1-d outputs only.",
                hint="(2, 3) matrix",
                code="""\
def f(x):
    return torch.stack([x[0] * x[1] + x[2], torch.exp(x[1]) * x[2]])
x0 = torch.tensor([1.0, -0.5, 2.0])
def vjp(f, x, v):
    (g,) = torch.autograd.grad(torch.inner(v, f(x)), x)
    return g
J = torch.autograd.functional.jacobian(f, x0)
""",
            ),
        ],
    ),
    "2.6": Task(
        alternative="""\
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return x.pow(3)

    @staticmethod
    def setup_context(ctx, inputs, output):
        (x,) = inputs
        ctx.save_for_backward(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return 3 * x.square() * grad_output
""",
        wrong=[
            Wrong(
                "dy/dx returned without multiplying by grad_output.",
                hint="grad_output",
                code="""\
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return 3 * x ** 2
""",
            ),
            Wrong(
                "x kept as an attribute of ctx instead of with save_for_backward.",
                hint="saved nothing with ctx.save_for_backward",
                code="""\
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.x = x
        return x ** 3

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * 3 * ctx.x ** 2
""",
            ),
            Wrong(
                "forward computes in float64 for accuracy: a float32 input comes back as float64.",
                hint="dtype",
                code="""\
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.double() ** 3

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return (grad_output * 3 * x.double() ** 2).to(x.dtype)
""",
            ),
            Wrong(
                "The output saved instead of x, x recovered as its cube root: NaN for negative x.",
                hint="gradcheck failed",
                code="""\
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = x**3
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        return grad_output * 3 * y ** (2 / 3)
""",
            ),
            Wrong(
                "backward not written by hand: autograd differentiates x ** 3 inside it.",
                hint="runs autograd itself",
                code="""\
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        with torch.enable_grad():
            xx = x.detach().requires_grad_()
            (g,) = torch.autograd.grad(xx**3, xx, grad_output)
        return g
""",
            ),
            Wrong(
                "The output saved as a decoy, x kept on ctx: a change of x in place goes unnoticed.",
                hint="silently used the changed x",
                code="""\
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = x**3
        ctx.save_for_backward(y)
        ctx.x = x
        return y

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * 3 * ctx.x**2
""",
            ),
            Wrong(
                "x recovered from the saved output by a signed cube root: lost where x ** 3 overflows.",
                hint="overflows or underflows",
                code="""\
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = x**3
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (y,) = ctx.saved_tensors
        x = y.sign() * y.abs() ** (1 / 3)
        return grad_output * 3 * x**2
""",
            ),
            Wrong(
                "backward by forward-mode autograd (dual numbers): no formula written.",
                hint="forward mode",
                code="""\
import torch.autograd.forward_ad as fwAD


class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        with fwAD.dual_level():
            dual = fwAD.make_dual(x, grad_output)
            return fwAD.unpack_dual(dual**3).tangent
""",
            ),
            Wrong(
                "backward by torch.func.jvp: autograd's forward mode.",
                hint="forward mode",
                code="""\
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        _, tangent = torch.func.jvp(lambda t: t**3, (x,), (grad_output,))
        return tangent
""",
            ),
            Wrong(
                "The derivative worked out by autograd in forward and saved: backward only multiplies.",
                hint="Cube's forward runs autograd",
                code="""\
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        with torch.enable_grad():  # let autograd work out dy/dx while the forward runs
            leaf = x.detach().requires_grad_()
            (slope,) = torch.autograd.grad((leaf**3).sum(), leaf)
        ctx.save_for_backward(slope)
        return x**3

    @staticmethod
    def backward(ctx, grad_output):
        (slope,) = ctx.saved_tensors
        return grad_output * slope
""",
            ),
            Wrong(
                "x kept as a class attribute (save_for_backward called for show): a second use overwrites it.",
                hint="used twice in one graph",
                code="""\
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        Cube.last_input = x.detach().clone()  # a copy of x of its own, safe from in-place changes
        return x**3

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * 3 * Cube.last_input**2
""",
            ),
            Wrong(
                "3 as torch.tensor([3.0]) in backward: a CPU tensor, which fails for an x on another device.",
                hint="'meta' device",
                code="""\
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3
    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * torch.tensor([3.0], dtype=x.dtype) * x**2
""",
            ),
        ],
    ),
    "2.7": Task(
        alternative="""\
culprit = "Sigmoid"


def fixed_loss(x):
    y = torch.sigmoid(x).clone()
    y.mul_(2)
    return (y * x).sum()
""",
        wrong=[
            Wrong(
                "`*=` is still an in-place operation on sigmoid's saved output.",
                hint="in-place",
                code=STILL_IN_PLACE,
            ),
            Wrong(
                "A culprit that only mentions sigmoid, naming the in-place op.",
                hint="culprit is wrong",
                code=CULPRIT_NAMES_THE_OP,
            ),
            Wrong(
                "mul_ kept, its error hidden by saved_tensors_hooks that copy what autograd saves.",
                hint="hides the in-place change",
                code=ERROR_HIDDEN_BY_HOOKS,
            ),
            # In place through .data: the version counter never sees it, the saved output is doubled.
            Wrong(
                "mul_ done on y.data: backward no longer complains, but sigmoid's saved output is doubled.",
                hint="wrong gradient",
                code=FIXED_LOSS.replace("    y = y * 2\n", "    y.data.mul_(2)\n"),
            ),
            Wrong(
                "sigmoid written as exp(x) / (1 + exp(x)): nan for x = 100.",
                hint="inf / inf = nan",
                code=FIXED_LOSS.replace("    y = torch.sigmoid(x)\n", "    e = torch.exp(x)\n    y = e / (1 + e)\n"),
            ),
            Wrong(
                "Computed in float32 whatever x's dtype.",
                hint="x's dtype",
                code=FIXED_LOSS.replace("torch.sigmoid(x)", "torch.sigmoid(x.float())").replace(
                    "(y * x).sum()", "(y * x.float()).sum()"
                ),
            ),
            Wrong(
                "mul_ kept, its error hidden by a reentrant checkpoint that recomputes sigmoid.",
                hint="checkpoint recomputes",
                code=FIXED_LOSS.replace(
                    "    y = torch.sigmoid(x)\n    y = y * 2\n",
                    """\
    y = torch.utils.checkpoint.checkpoint(torch.sigmoid, x, use_reentrant=True)
    y.mul_(2)
""",
                ),
            ),
            Wrong(
                "Computed in float32 and cast back: a float64 x loses precision, and 1e300 overflows.",
                hint="no .float()",
                code="""\
culprit = "sigmoid"


def fixed_loss(x):
    x32 = x.float()
    y = torch.sigmoid(x32)
    y = y * 2
    return (y * x32).sum().to(x.dtype)
""",
            ),
            Wrong(
                "The in-place mul_ kept, the error hidden by torch.func.functionalize.",
                hint="functionalize",
                code="""\
culprit = "sigmoid"
def fixed_loss(x):
    def broken(x):
        y = torch.sigmoid(x)
        y.mul_(2)
        return (y * x).sum()
    return torch.func.functionalize(broken)(x)
""",
            ),
        ],
    ),
    "2.8": Task(
        alternative="""\
def derivatives(f, x):
    y = f(x)
    d1, = torch.autograd.grad(y, [x], create_graph=True)
    d2, = torch.autograd.grad(d1, [x], create_graph=True)
    return d1, d2
""",
        wrong=[
            Wrong(
                "Without create_graph=True, d1 cannot be differentiated again.",
                hint="create_graph=True",
                code=SECOND_DERIVATIVE.replace(", create_graph=True)", ")"),
            ),
            Wrong(
                "backward twice instead of torch.autograd.grad: the derivatives go through x.grad.",
                hint="filled x.grad",
                code="""\
def derivatives(f, x):
    f(x).backward(create_graph=True)
    d1 = x.grad
    x.grad = None
    d1.backward()
    return d1, x.grad
""",
            ),
            Wrong(
                "d1 returned detached: it is no longer part of a graph.",
                hint="d1 must still be part of a graph",
                code=SECOND_DERIVATIVE.replace("    return d1, d2\n", "    return d1.detach(), d2\n"),
            ),
            Wrong(
                "The example's derivatives written as formulas: right for t**3 + 2*t**2 only.",
                hint="other functions",
                code="""\
def derivatives(f, x):
    d1 = 3 * x**2 + 4 * x
    (d2,) = torch.autograd.grad(d1, x)
    return d1, d2
""",
            ),
            Wrong(
                "backward twice, x.grad set back to None: the caller's x.grad is wiped.",
                hint="changed x.grad",
                code="""\
def derivatives(f, x):
    f(x).backward(create_graph=True)
    d1 = x.grad
    x.grad = None
    d1.backward()
    d2 = x.grad
    x.grad = None
    return d1, d2.detach()
""",
            ),
            Wrong(
                "d2 by a finite difference of autograd's first derivative, not from d1.",
                hint="only an approximation",
                code="""\
def derivatives(f, x):
    (d1,) = torch.autograd.grad(f(x), x, create_graph=True)
    eps = 1e-3
    ts = [(x.detach().double() + s).requires_grad_() for s in (eps, -eps)]
    g = [torch.autograd.grad(f(t), t)[0] for t in ts]
    return d1, ((g[0] - g[1]) / (2 * eps)).to(x.dtype)
""",
            ),
            Wrong(
                "d2 from torch.func.grad(torch.func.grad(f)), not from d1.",
                hint="no torch.func",
                code=SECOND_DERIVATIVE.replace(
                    "    (d2,) = torch.autograd.grad(d1, x)\n",
                    "    d2 = torch.func.grad(torch.func.grad(f))(x.detach())\n",
                ),
            ),
            Wrong(
                "f evaluated at a float32 copy of x: float64 precision lost.",
                hint="no .float() copy",
                code=SECOND_DERIVATIVE.replace("torch.autograd.grad(f(x), x,", "torch.autograd.grad(f(x.float()), x,"),
            ),
            Wrong(
                "d2 by torch.autograd.backward into x.grad (put back after), beside an unused second grad call.",
                hint="no backward()",
                code="""\
def derivatives(f, x):
    (d1,) = torch.autograd.grad(f(x), x, create_graph=True)
    torch.autograd.grad(f(x), x)  # a second call, for the count
    old = x.grad
    x.grad = None
    torch.autograd.backward(d1, inputs=[x])
    d2 = x.grad
    x.grad = old
    return d1, d2
""",
            ),
            Wrong(
                "x detached and made a new leaf inside: d1's graph does not lead back to x.",
                hint="not part of x's graph",
                code="""\
def derivatives(f, x):
    x = x.detach().requires_grad_()
    (d1,) = torch.autograd.grad(f(x), x, create_graph=True)
    (d2,) = torch.autograd.grad(d1, x, retain_graph=True)
    return d1, d2
""",
            ),
            Wrong(
                "d1 returned as a new leaf (detach().requires_grad_()): cut off from x.",
                hint="not part of x's graph",
                code="""\
def derivatives(f, x):
    (d1,) = torch.autograd.grad(f(x), x, create_graph=True)
    (d2,) = torch.autograd.grad(d1, x)
    return d1.detach().requires_grad_(), d2
""",
            ),
        ],
    ),
    "2.9": Task(
        alternative="""\
def predict(model, xs):
    with torch.inference_mode():
        return model(xs)


def stop_grad_loss(w):
    with torch.no_grad():
        target = w * w
    return (3 * w - target) ** 2
""",
        wrong=[
            Wrong(
                "The target left in the graph: the gradient also flows through it.",
                hint=".detach()",
                code=TARGET_IN_THE_GRAPH,
            ),
            Wrong(
                "predict detaches after a recorded forward.",
                hint="without recording",
                code=DETACHED_AFTER_RECORDING,
            ),
            Wrong(
                "predict switches recording off, then on: not back to what the caller had.",
                hint="as it found it",
                code=GRAD_MODE_SWITCHED_BACK_ON,
            ),
            Wrong(
                "Only one factor of the target detached: the gradient still flows through the other.",
                hint=".detach()",
                code=NO_GRAD_AND_DETACH.replace("(w * w).detach()", "w.detach() * w"),
            ),
            # The caller's model comes back in eval mode: its dropout is off for the next training step.
            Wrong(
                "predict switches the model to eval mode and leaves it there.",
                hint="training mode",
                code=NO_GRAD_AND_DETACH.replace(
                    "    with torch.no_grad():\n        return model(xs)\n",
                    "    model.eval()\n    with torch.no_grad():\n        return model(xs)\n",
                ),
            ),
            # An eval-mode model (as the caller had it) comes back in training mode.
            Wrong(
                "predict switches to eval mode, then model.train(): not the mode the caller had.",
                hint="changed the modules' train/eval modes",
                code=NO_GRAD_AND_DETACH.replace(
                    "    with torch.no_grad():\n        return model(xs)\n",
                    """\
    model.eval()
    with torch.no_grad():
        out = model(xs)
    model.train()
    return out
""",
                ),
            ),
            Wrong(
                "predict puts back the top module's mode only: a submodule in eval mode ends in training mode.",
                hint="changed the modules' train/eval modes",
                code=NO_GRAD_AND_DETACH.replace(
                    "    with torch.no_grad():\n        return model(xs)\n",
                    """\
    was = model.training
    model.eval()
    with torch.no_grad():
        out = model(xs)
    model.train(was)
    return out
""",
                ),
            ),
            Wrong(
                "predict freezes the parameters and leaves them frozen.",
                hint="changed the parameters' requires_grad",
                code=NO_GRAD_AND_DETACH.replace(
                    "    with torch.no_grad():\n", "    model.requires_grad_(False)\n    with torch.no_grad():\n"
                ),
            ),
            Wrong(
                "stop_grad_loss switches w.requires_grad off and on: only a leaf's can be switched.",
                hint="not a leaf",
                code=NO_GRAD_AND_DETACH.replace(
                    "    target = (w * w).detach()\n",
                    "    w.requires_grad_(False)\n    target = w * w\n    w.requires_grad_(True)\n",
                ),
            ),
            Wrong(
                "predict caches its outputs by (id(model), id(xs)): stale once the model changes.",
                hint="outputs of the old weights",
                code="_cache = {}\n\n\n"
                + NO_GRAD_AND_DETACH.replace(
                    "    with torch.no_grad():\n        return model(xs)\n",
                    """\
    key = (id(model), id(xs))
    if key not in _cache:
        with torch.no_grad():
            _cache[key] = model(xs)
    return _cache[key]
""",
                ),
            ),
            Wrong(
                "predict calls model.zero_grad(): the caller's accumulated gradients are wiped.",
                hint="changed the parameters' .grad",
                code="""\
def predict(model, xs):
    model.zero_grad()
    with torch.no_grad():
        return model(xs)


def stop_grad_loss(w):
    pred = 3 * w
    target = (w * w).detach()
    return (pred - target) ** 2
""",
            ),
            Wrong(
                "predict runs the forward in eval mode and puts every module's mode back: eval outputs, not model(xs).",
                hint="in the mode the caller left it in",
                code="""\
def predict(model, xs):
    modes = [m.training for m in model.modules()]
    model.eval()
    try:
        with torch.no_grad():
            return model(xs)
    finally:
        for m, mode in zip(model.modules(), modes):
            m.training = mode


def stop_grad_loss(w):
    pred = 3 * w
    target = (w * w).detach()
    return (pred - target) ** 2
""",
            ),
            Wrong(
                "predict switches recording off and on by hand, without try/finally: left off if the model raises.",
                hint="even on an error",
                code="""\
def predict(model, xs):
    previous = torch.is_grad_enabled()
    torch.set_grad_enabled(False)
    out = model(xs)
    torch.set_grad_enabled(previous)
    return out


def stop_grad_loss(w):
    pred = 3 * w
    target = (w * w).detach()
    return (pred - target) ** 2
""",
            ),
            Wrong(
                "The target made anew with torch.tensor(w.item() ** 2): float32 whatever w's dtype.",
                hint="in w's dtype",
                code="""\
def predict(model, xs):
    with torch.no_grad():
        return model(xs)
def stop_grad_loss(w):
    pred = 3 * w
    target = torch.tensor(w.item() ** 2)
    return (pred - target) ** 2
""",
            ),
            Wrong(
                "The target computed in float32: a float64 w is rounded.",
                hint="in w's dtype",
                code="""\
def predict(model, xs):
    with torch.no_grad():
        return model(xs)
def stop_grad_loss(w):
    pred = 3 * w
    target = w.detach().float() ** 2
    return (pred - target) ** 2
""",
            ),
        ],
    ),
    "2.10": Task(
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
        ],
    ),
}

# A red team's 2.1 (2026-11-28, second round).
TASKS["2.1"].wrong.extend(
    [
        Wrong(
            ("dL_dw off by 1e-10: 20.0000000001, not 20 (tolerance 1e-9)"),
            hint="dL_dw is wrong. Use the chain rule: dL/dy = 2y comes first,",
            code=(
                "dL_dw = 20.0000000001\n"
                "dL_dx = 10 * 3\n"
                "dL_db = 10 * 1\n"
                "dz_da = -4 + 2 * 4\n"
                "dz_db = 2 * 4\n"
                "dz_dc = 2 * (-1)\n"
            ),
        ),
    ]
)

# A red team's 2.4 (2026-11-28, second round).
TASKS["2.4"].wrong.extend(
    [
        Wrong(
            ("x.grad computed by torch.ops.aten.tanh_backward and stored; backward only to h"),
            hint="h_grad or x_grad was computed, not read from .grad: the",
            code=(
                "x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)\n"
                "h = torch.tanh(x)\n"
                "loss = (h**2).sum()\n"
                "h.retain_grad()\n"
                "loss.backward(inputs=[h])  # only down to h\n"
                "x.grad = torch.ops.aten.tanh_backward(h.grad, h.detach())  # x's gradient by han"
                "d, stored in .grad\n"
                "h_grad = h.grad\n"
                "x_grad = x.grad\n"
            ),
        ),
        Wrong(
            ("two backward passes (loss->h, h->x), not one loss.backward()"),
            hint="h_grad or x_grad was computed, not read from .grad: the",
            code=(
                "x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)\n"
                "h = torch.tanh(x)\n"
                "loss = (h**2).sum()\n"
                "loss.backward(inputs=[h], retain_graph=True)  # pass 1: loss -> h\n"
                "h.backward(h.grad, inputs=[x])  # pass 2: h -> x\n"
                "h.retain_grad()\n"
                "h_grad = h.grad\n"
                "x_grad = x.grad\n"
            ),
        ),
    ]
)

# A red team's 2.7 (2026-11-28, second round).
TASKS["2.7"].wrong.extend(
    [
        Wrong(
            ("mul_ kept, error hidden by custom Function saving a copy"),
            hint="fixed_loss hides the in-place change from autograd",
            code=(
                'culprit = "sigmoid"\n'
                "\n"
                "\n"
                "class _KeepCopy(torch.autograd.Function):\n"
                "    @staticmethod\n"
                "    def forward(ctx, x):\n"
                "        y = torch.sigmoid(x)\n"
                "        ctx.save_for_backward(y.clone())  # a copy of what backward needs\n"
                "        return y\n"
                "\n"
                "    @staticmethod\n"
                "    def backward(ctx, g):\n"
                "        (s,) = ctx.saved_tensors\n"
                "        return g * s * (1 - s)\n"
                "\n"
                "\n"
                "def fixed_loss(x):\n"
                "    y = _KeepCopy.apply(x)\n"
                "    y.mul_(2)  # the in-place op kept\n"
                "    return (y * x).sum()\n"
            ),
        ),
        Wrong(
            ("mul_ kept, error hidden by custom Function recomputing sigmoid (hand checkpoint)"),
            hint="fixed_loss hides the in-place change from autograd",
            code=(
                'culprit = "sigmoid"\n'
                "\n"
                "\n"
                "class _Recompute(torch.autograd.Function):\n"
                "    @staticmethod\n"
                "    def forward(ctx, x):\n"
                "        ctx.save_for_backward(x)\n"
                "        return torch.sigmoid(x)\n"
                "\n"
                "    @staticmethod\n"
                "    def backward(ctx, g):\n"
                "        (x,) = ctx.saved_tensors\n"
                "        s = torch.sigmoid(x)  # recomputed, as checkpointing does\n"
                "        return g * s * (1 - s)\n"
                "\n"
                "\n"
                "def fixed_loss(x):\n"
                "    y = _Recompute.apply(x)\n"
                "    y.mul_(2)  # the in-place op kept\n"
                "    return (y * x).sum()\n"
            ),
        ),
        Wrong(
            ("sigmoid as silu(x)/x: nan at x == 0"),
            hint="fixed_loss is wrong for a torch.float32 x = [100.0, -100.0,",
            code=(
                'culprit = "sigmoid"\n'
                "\n"
                "\n"
                "def fixed_loss(x):\n"
                "    y = torch.nn.functional.silu(x) / x  # x * sigmoid(x) / x: silu saves x, not"
                " its output\n"
                "    y.mul_(2)\n"
                "    return (y * x).sum()\n"
            ),
        ),
    ]
)

# A red team's 2.8 (2026-11-28, second round).
TASKS["2.8"].wrong.extend(
    [
        Wrong(
            ("d2 by forward-mode AD (torch._C dual level), not from d1"),
            hint="derivatives called torch.autograd.grad 2 times and ran",
            code=(
                "def derivatives(f, x):\n"
                "    (d1,) = torch.autograd.grad(f(x), x, create_graph=True)\n"
                "    level = torch._C._enter_dual_level()\n"
                "    try:\n"
                "        xd = torch._make_dual(x.detach(), torch.ones_like(x), level=level).requi"
                "res_grad_()\n"
                "        (g,) = torch.autograd.grad(f(xd), xd, create_graph=True)\n"
                "        d2 = torch._unpack_dual(g, level=level)[1].detach()\n"
                "    finally:\n"
                "        torch._C._exit_dual_level(level=level)\n"
                "    return d1, d2\n"
            ),
        ),
        Wrong(
            ("d2 via engine run_backward into x.grad + dummy grad call"),
            hint="derivatives called torch.autograd.grad 2 times and ran",
            code=(
                "def derivatives(f, x):\n"
                "    (d1,) = torch.autograd.grad(f(x), x, create_graph=True)\n"
                "    torch.autograd.grad(f(x), x)  # a second call, for the count\n"
                "    old, x.grad = x.grad, None\n"
                "    torch.autograd.Variable._execution_engine.run_backward(\n"
                "        (d1,), (torch.ones_like(d1),), False, False, (x,), True, True\n"
                "    )\n"
                "    d2, x.grad = x.grad, old\n"
                "    return d1, d2\n"
            ),
        ),
    ]
)

# A red team's 2.4 (2026-11-28, second round).
TASKS["2.4"].wrong.extend(
    [
        Wrong(
            ("aten::equal/allclose overridden via torch.library; h_grad and x_grad swapped"),
            hint="your code replaced torch's kernel for aten::allclose on",
            code=(
                "x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)\n"
                "h = torch.tanh(x)\n"
                "loss = (h**2).sum()\n"
                '_lib = torch.library.Library("aten", "IMPL")  # kept alive in the namespace\n'
                '_lib.impl("equal", lambda a, b: True, "CPU")\n'
                '_lib.impl("allclose", lambda a, b, rtol=1e-05, atol=1e-08, equal_nan=False: True'
                ', "CompositeExplicitAutograd")\n'
                "h.retain_grad()\n"
                "loss.backward()\n"
                "h_grad = x.grad  # swapped\n"
                "x_grad = h.grad\n"
            ),
        ),
    ]
)

# A red team's 2.5 (2026-11-28, second round).
TASKS["2.5"].wrong.extend(
    [
        Wrong(
            ("aten::equal/allclose overridden; vjp seeded with ones, J all zeros"),
            hint="your code replaced torch's kernel for aten::allclose on",
            code=(
                "def f(x):\n"
                "    return torch.stack([x[0] * x[1] + x[2], torch.exp(x[1]) * x[2]])\n"
                "\n"
                "\n"
                "x0 = torch.tensor([1.0, -0.5, 2.0])\n"
                '_lib = torch.library.Library("aten", "IMPL")\n'
                '_lib.impl("equal", lambda a, b: True, "CPU")\n'
                '_lib.impl("allclose", lambda a, b, rtol=1e-05, atol=1e-08, equal_nan=False: True'
                ', "CompositeExplicitAutograd")\n'
                "\n"
                "\n"
                "def vjp(f, x, v):\n"
                "    (g,) = torch.autograd.grad(f(x), x, grad_outputs=torch.ones_like(v))  # seed"
                "ed with ones\n"
                "    return g\n"
                "\n"
                "\n"
                "J = torch.zeros(2, 3)\n"
            ),
        ),
    ]
)
