"""vizlib never crashes and never disagrees with autograd on random programs.

Hypothesis draws three leaf shapes, a seed for their values and a chain of steps; each
step applies one of ~30 op kinds to tensors made so far (an op that does not fit the
shapes is skipped) and the program returns the sum of everything it made, so every
tensor, leaves included, reaches the result, often along several paths. The run is
derandomized: a failure prints the program (op names, operand picks, shapes, seed) and
reproduces on every machine.
"""

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .. import autograd_ref

MAX_NUMEL = 64
MAX_DIM = 4


def _bc(a, b) -> bool:
    try:
        torch.broadcast_shapes(a.shape, b.shape)
        return True
    except RuntimeError:
        return False


def _dim(a, k):
    return k % a.dim() if a.dim() else None


def _matmul(a, b, k):
    if a.dim() >= 1 and b.dim() >= 1 and a.shape[-1] == b.shape[-2 if b.dim() >= 2 else -1]:
        return torch.matmul(a.tanh(), b.tanh())
    return a @ a.mT if a.dim() >= 2 else None


def _cat(a, b, k):
    if a.dim() == 0:
        return None
    d = _dim(a, k)
    same = b.dim() == a.dim() and all(x == y for i, (x, y) in enumerate(zip(a.shape, b.shape, strict=True)) if i != d)
    return torch.cat([a, b if same else a.flip(d)], dim=d)


def _index(a, k):
    if a.dim() == 0:
        return None
    if k % 3 == 0:
        return a[k % a.shape[0]]
    if k % 3 == 1:
        return a[..., : max(1, a.shape[-1] - 1)]
    return a[a.shape[0] // 2 :]


def _in_place(a, k):
    h = a * 1.5
    h.add_(0.25)
    if h.dim():
        h[0] = h[-1] * 2
    return h.relu_()


OPS = {
    "add": lambda a, b, k: a + b if _bc(a, b) else None,
    "sub": lambda a, b, k: a - b if _bc(a, b) else None,
    "mul": lambda a, b, k: a * b if _bc(a, b) else None,
    "div": lambda a, b, k: a / (1 + b * b) if _bc(a, b) else None,
    "matmul": _matmul,
    "exp": lambda a, b, k: a.clamp(max=5).exp(),
    "log": lambda a, b, k: (a.abs() + 1).log(),
    "tanh": lambda a, b, k: a.tanh(),
    "sigmoid": lambda a, b, k: torch.sigmoid(a),
    "relu": lambda a, b, k: torch.relu(a),
    "sin": lambda a, b, k: a.sin(),
    "abs": lambda a, b, k: a.abs(),
    "neg": lambda a, b, k: -a,
    "sum_dim": lambda a, b, k: a.sum(dim=_dim(a, k), keepdim=k % 2 == 0) if a.dim() else a.sum(),
    "mean": lambda a, b, k: a.mean() if k % 2 or not a.dim() else a.mean(dim=_dim(a, k)),
    "transpose": lambda a, b, k: a.transpose(0, -1) if a.dim() >= 2 else a.t(),
    "reshape": lambda a, b, k: a.reshape(-1) if k % 2 else a.reshape(1, a.numel()),
    "view": lambda a, b, k: a.contiguous().view(a.numel(), 1),
    "index": lambda a, b, k: _index(a, k),
    "cat": _cat,
    "stack": lambda a, b, k: torch.stack([a, a * 2], dim=k % (a.dim() + 1)),
    "pow": lambda a, b, k: a.clamp(-3, 3).pow(2 + k % 2),
    "sqrt": lambda a, b, k: (a.abs() + 1e-3).sqrt(),
    "softmax": lambda a, b, k: a.softmax(dim=_dim(a, k)) if a.dim() else None,
    "where": lambda a, b, k: torch.where(a > 0, a, b) if _bc(a, b) else None,
    "max": lambda a, b, k: a.max(dim=_dim(a, k)).values if a.dim() and k % 2 else a.max(),
    "min": lambda a, b, k: torch.minimum(a, b) if _bc(a, b) and k % 2 else a.amin(),
    "unsqueeze": lambda a, b, k: a.unsqueeze(k % (a.dim() + 1)),
    "squeeze": lambda a, b, k: a.squeeze(),
    "clamp": lambda a, b, k: a.clamp(-0.5, 0.5),
    "expand": lambda a, b, k: a.expand(2, *a.shape),
    "in_place": lambda a, b, k: _in_place(a, k),
    "norm": lambda a, b, k: a.norm(),
}


def build(steps):
    """The program: apply each step to the tensors made so far, return the sum of all of them."""

    def program(a, b, c):
        made = [a, b, c]
        for name, i, j in steps:
            out = OPS[name](made[i % len(made)], made[j % len(made)], i + j)
            if out is not None and 0 < out.numel() <= MAX_NUMEL and out.dim() <= MAX_DIM:
                made.append(out)
        return sum(t.sum() for t in made)

    return program


shapes = st.lists(st.integers(1, 3), max_size=3).map(tuple)
steps = st.lists(
    st.tuples(st.sampled_from(sorted(OPS)), st.integers(0, 50), st.integers(0, 50)), min_size=1, max_size=10
)


@settings(max_examples=60, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(leaf_shapes=st.tuples(shapes, shapes, shapes), steps=steps, seed=st.integers(0, 2**16))
def test_random_programs_agree_with_autograd(leaf_shapes, steps, seed):
    gen = torch.Generator().manual_seed(seed)
    a, b, c = (torch.randn(s, generator=gen) for s in leaf_shapes)
    program = build(steps)
    g, _ = autograd_ref.check(program, a, b, c)  # every node, edge, value and gradient

    leaves = [t.clone().requires_grad_() for t in (a, b, c)]
    out = program(*leaves)
    grads = torch.autograd.grad(out, leaves)
    (result,) = [n for n in g.nodes if n.is_output]
    assert torch.allclose(torch.tensor(result.value), out.detach(), equal_nan=True)
    for name, grad in zip("abc", grads, strict=True):
        (leaf,) = g.find(name)
        assert autograd_ref.differs(leaf.grad, leaf.grad_stats, grad, True, 1e-5, 1e-6) is None, name

    at = {node_id: k for k, node_id in enumerate(g.backward_order)}
    assert sorted(at) == sorted(n.id for n in g.nodes)
    assert all(at[s] > at[d] for s, d in g.edges)
    assert g.to_dot().startswith("digraph") and repr(g)


@pytest.mark.parametrize("op", sorted(OPS))
def test_each_op_kind_agrees_with_autograd(op):
    """Every op kind, on shapes where it applies, whatever the random draws above favoured."""
    gen = torch.Generator().manual_seed(0)
    a, b, c = torch.randn(2, 3, generator=gen), torch.randn(3, generator=gen), torch.randn(3, 3, generator=gen)
    program = build([(op, 0, 1), (op, 2, 0), (op, 3, 1), (op, 4, 2)])
    assert OPS[op](a, b, 1) is not None or OPS[op](c, a, 2) is not None, f"{op} fits none of the inputs"
    autograd_ref.check(program, a, b, c)
