"""Exercise 2.2 of solutions/02_autograd.ipynb: its other answers (see answers/__init__.py)."""

from .. import Task, Wrong
from .shared import IN_AN_UNWATCHED_THREAD

# A tensor that "equals" and is "close to" anything: checks must insist on plain tensors.
CLOSE_TO_ANYTHING = """\
class Anything(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in (torch.allclose, torch.equal):
            return True
        return super().__torch_function__(func, types, args, kwargs or {})


"""

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


TASK = Task(
    alternative="""\
def manual_grads(X, y, W1, b1, W2):
    N = X.shape[0]
    h = torch.addmm(b1, X, W1)
    a = torch.relu(h)
    g_out = 2.0 * (a @ W2 - y) / N  # the tensor divided: N may be 0
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
        Wrong("Forward-mode autograd, one dual number per element.", hint="used autograd", code=FORWARD_MODE_AUTOGRAD),
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
)


# A red team's 2.2 that writes into an argument where torch cannot see it (NumPy's view of its memory).
TASK.wrong.extend(
    [
        Wrong(
            (
                "y's memory used as scratch through y.numpy(), put back afterwards: NumPy's writes bump no "
                "version counter and reach no dispatcher, but the caller's y changed during the call."
            ),
            hint="reached their memory outside torch",
            code="""\
def manual_grads(X, y, W1, b1, W2):
    h = X @ W1 + b1
    a = h.clamp(min=0)
    out = a @ W2
    # y's memory as scratch space through NumPy (y -= out), put back afterwards
    view = y.numpy()
    kept = view.copy()
    view -= out.numpy()
    dout = y.clone().mul(-2 / out.numel())
    view[:] = kept
    dW2 = a.T @ dout
    dh = (dout @ W2.T) * (h > 0)
    return X.T @ dh, dh.sum(dim=0), dW2
""",
        ),
    ]
)


# A red team's 2.2 that fails on an empty batch.
TASK.wrong.extend(
    [
        Wrong(
            (
                "The mean's factor as a Python number, 2 / N: with N = 0 (an empty batch) it raises "
                "ZeroDivisionError where autograd gives zeros."
            ),
            hint="With an empty batch (X of shape (0, 3)",
            code="""\
def manual_grads(X, y, W1, b1, W2):
    N = y.numel()
    h = X @ W1 + b1
    a = h.clamp(min=0)
    out = a @ W2
    dout = (2 / N) * (out - y)  # the mean divides by N
    dW2 = a.T @ dout
    da = dout @ W2.T
    dh = da * (h > 0)
    dW1 = X.T @ dh
    db1 = dh.sum(dim=0)
    return dW1, db1, dW2
""",
        ),
    ]
)


# A hidden layer of one unit, with several examples.
TASK.wrong.extend(
    [
        Wrong(
            (
                "da = dout @ W2.squeeze().unsqueeze(0): with H = 1, W2.squeeze() is 0-d, the product (N,) and da "
                "* relu' broadcasts to (N, N), wrong for N > 1 (right when N = 1 too, as in the one-unit case "
                "checked before)."
            ),
            hint="one example or one hidden unit",
            code="""\
def manual_grads(X, y, W1, b1, W2):
    h = X @ W1 + b1
    a = h.clamp(min=0)
    out = a @ W2
    dout = 2 * (out - y) / max(out.numel(), 1)
    dW2 = a.T @ dout
    da = dout @ W2.squeeze().unsqueeze(0)
    dh = da * (h > 0).to(h.dtype)
    dW1 = X.T @ dh
    db1 = dh.sum(0)
    return dW1, db1, dW2
""",
        ),
    ]
)


# Red team (round 2): each was accepted before its check was added.
TASK.wrong.extend(
    [
        Wrong(
            (
                "Recording switched off at the top and unconditionally back on at the end: called with recording off,"
                " it returns with recording on."
            ),
            hint="returned with recording on",
            code="""\
def manual_grads(X, y, W1, b1, W2):
    torch.set_grad_enabled(False)
    h = X @ W1 + b1
    a = h.clamp(min=0)
    out = a @ W2
    dout = 2 * (out - y) / out.numel()
    dW2 = a.T @ dout
    dh = (dout @ W2.T) * (h > 0)
    res = (X.T @ dh, dh.sum(dim=0), dW2)
    torch.set_grad_enabled(True)
    return res
""",
        ),
    ]
)


TASK.wrong.append(
    Wrong(
        "relu's derivative from torch._decomp's threshold_backward: autograd's own kernel in Python, not by hand.",
        hint="torch._decomp",
        code="""\
from torch._decomp import decompositions as _decomp


def manual_grads(X, y, W1, b1, W2):
    h = X @ W1 + b1
    a = h.clamp(min=0)
    out = a @ W2
    dout = 2 * (out - y) / out.numel()
    dW2 = a.T @ dout
    dh = _decomp.threshold_backward(dout @ W2.T, h, 0)
    return X.T @ dh, dh.sum(dim=0), dW2
""",
    )
)


# autograd only when no dispatch mode is on the stack, as in a plain training loop: the checks'
# watched calls see the chain rule by hand, and a call with the record made by the profile
# function alone sees autograd.
TASK.wrong.append(
    Wrong(
        "autograd's gradients unless a dispatch mode (the grader's) is on the stack.",
        hint="used autograd when no dispatch mode was on the stack",
        code="""\
def manual_grads(X, y, W1, b1, W2):
    if not torch._C._len_torch_dispatch_stack():
        # plain runs: autograd is exact and quick
        with torch.enable_grad():
            W1, b1, W2 = (p.detach().requires_grad_() for p in (W1, b1, W2))
            loss = ((torch.relu(X @ W1 + b1) @ W2 - y) ** 2).mean()
            return torch.autograd.grad(loss, (W1, b1, W2))
    h = X @ W1 + b1
    a = h.clamp(min=0)
    dout = 2 * (a @ W2 - y) / y.numel()
    dh = (dout @ W2.T) * (h > 0)
    return X.T @ dh, dh.sum(dim=0), a.T @ dout
""",
    )
)


# Red team (round 3): accepted before its check was added. Every check called manual_grads with
# tensors of its own, never the same ones twice.
TASK.wrong.append(
    Wrong(
        "Results cached by the ids of the arguments, the tensors kept: the same tensors updated in "
        "place (a training loop's weights) get the gradients of their old values.",
        hint="a cache keyed by id()",
        code="""\
_cache = {}


def manual_grads(X, y, W1, b1, W2):
    key = (id(X), id(y), id(W1), id(b1), id(W2))
    if key in _cache and all(a is b for a, b in zip(_cache[key][0], (X, y, W1, b1, W2))):
        return _cache[key][1]
    h = X @ W1 + b1
    a = h.clamp(min=0)
    out = a @ W2
    dout = 2 * (out - y) / out.numel()
    dW2 = a.T @ dout
    da = dout @ W2.T
    dh = da * (h > 0)
    dW1 = X.T @ dh
    db1 = dh.sum(dim=0)
    _cache[key] = ((X, y, W1, b1, W2), (dW1, db1, dW2))
    return dW1, db1, dW2
""",
    )
)


# Red team (round 4): hostile answers to the checks hardened in round 3; each that passed is marked so.
TASK.wrong.extend(
    [
        Wrong(
            (
                "Results cached by (id, _version) of the arguments: values changed through .data keep the "
                "version. Passed before."
            ),
            hint="a cache keyed by id() and ._version",
            code="""\
_cache = {}


def manual_grads(X, y, W1, b1, W2):
    args = (X, y, W1, b1, W2)
    key = tuple((id(t), t._version) for t in args)
    hit = _cache.get(key)
    if hit is not None and all(a is b for a, b in zip(hit[0], args)):
        return hit[1]
    h = X @ W1 + b1
    a = h.clamp(min=0)
    out = a @ W2
    dout = 2 * (out - y) / out.numel()
    dW2 = a.T @ dout
    dh = (dout @ W2.T) * (h > 0)
    grads = (X.T @ dh, dh.sum(dim=0), dW2)
    _cache[key] = (args, grads)
    return grads
""",
        ),
        Wrong(
            "Results cached by (data_ptr, shape, _version): reads the arguments' addresses.",
            hint="reached their memory outside torch",
            code="""\
_cache = {}


def manual_grads(X, y, W1, b1, W2):
    args = (X, y, W1, b1, W2)
    key = tuple((t.data_ptr(), tuple(t.shape), t._version) for t in args)
    hit = _cache.get(key)
    if hit is not None:
        return hit[1]
    h = X @ W1 + b1
    a = h.clamp(min=0)
    out = a @ W2
    dout = 2 * (out - y) / out.numel()
    dW2 = a.T @ dout
    dh = (dout @ W2.T) * (h > 0)
    grads = (X.T @ dh, dh.sum(dim=0), dW2)
    _cache[key] = (args, grads)
    return grads
""",
        ),
        Wrong(
            (
                "Gradients written into buffers kept from call to call (out=): an earlier call's results "
                "change. Passed before."
            ),
            hint="buffers kept from call to call",
            code="""\
_buffers = {}


def manual_grads(X, y, W1, b1, W2):
    h = X @ W1 + b1
    a = h.clamp(min=0)
    out = a @ W2
    dout = 2 * (out - y) / out.numel()
    dh = (dout @ W2.T) * (h > 0)
    key = (X.dtype, X.device, tuple(W1.shape), tuple(b1.shape), tuple(W2.shape))
    if key not in _buffers:
        _buffers[key] = (torch.empty_like(W1), torch.empty_like(b1), torch.empty_like(W2))
    dW1, db1, dW2 = _buffers[key]
    torch.mm(X.T, dh, out=dW1)
    torch.sum(dh, dim=0, out=db1)
    torch.mm(a.T, dout, out=dW2)
    return dW1, db1, dW2
""",
        ),
        Wrong(
            "dout from autograd's own kernel by name, torch.ops.aten.mse_loss_backward.",
            hint="aten.mse_loss_backward",
            code="""\
def manual_grads(X, y, W1, b1, W2):
    h = X @ W1 + b1
    a = h.clamp(min=0)
    out = a @ W2
    dout = torch.ops.aten.mse_loss_backward.default(torch.ones((), dtype=out.dtype), out, y, 1)
    dW2 = a.T @ dout
    dh = (dout @ W2.T) * (h > 0)
    return X.T @ dh, dh.sum(dim=0), dW2
""",
        ),
        Wrong(
            "torch.func.vjp: a function transform is autograd too.",
            hint="manual_grads used autograd",
            code="""\
def manual_grads(X, y, W1, b1, W2):
    def loss(W1, b1, W2):
        return ((torch.relu(X @ W1 + b1) @ W2 - y) ** 2).mean()

    value, pullback = torch.func.vjp(loss, W1, b1, W2)
    return pullback(torch.ones_like(value))
""",
        ),
        Wrong(
            "The gradients also stored in the arguments' .grad, as backward() would. Passed before.",
            hint="set the .grad of its arguments",
            code="""\
def manual_grads(X, y, W1, b1, W2):
    h = X @ W1 + b1
    a = h.clamp(min=0)
    out = a @ W2
    dout = 2 * (out - y) / out.numel()
    dW2 = a.T @ dout
    dh = (dout @ W2.T) * (h > 0)
    W1.grad, b1.grad, W2.grad = X.T @ dh, dh.sum(dim=0), dW2  # as backward would
    return W1.grad, b1.grad, W2.grad
""",
        ),
        Wrong(
            "torch.set_default_dtype(X.dtype) inside manual_grads, never undone.",
            hint="torch's default dtype",
            code="""\
def manual_grads(X, y, W1, b1, W2):
    torch.set_default_dtype(X.dtype)
    h = X @ W1 + b1
    a = h.clamp(min=0)
    out = a @ W2
    dout = 2 * (out - y) / out.numel()
    dW2 = a.T @ dout
    dh = (dout @ W2.T) * (h > 0)
    return X.T @ dh, dh.sum(dim=0), dW2
""",
        ),
    ]
)
