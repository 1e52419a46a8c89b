"""Exercise 3.6 of solutions/03b_training.ipynb: its other answers (see answers/__init__.py)."""

from .. import Task, Wrong
from . import task_3_6_more

# 3.6's right clipping (the solution's): its later wrong answers change one thing in it.
CLIP_GRAD_NORM = """\
def clip_grad_norm(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads])).item()
    if norm > max_norm:
        for g in grads:
            g.mul_(max_norm / (norm + 1e-6))
    return norm
"""

# max_norm / norm: the same as clip_grad_norm_ for large norms, not for small ones.
CLIPPED_WITHOUT_EPS = CLIP_GRAD_NORM.replace("max_norm / (norm + 1e-6)", "max_norm / norm")

# New .grad tensors instead of scaling them in place: whoever holds the old ones sees no clipping.
GRADS_REPLACED = """\
def clip_grad_norm(parameters, max_norm):
    params = [p for p in parameters if p.grad is not None]
    norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(p.grad) for p in params])).item()
    if norm > max_norm:
        for p in params:
            p.grad = p.grad * (max_norm / (norm + 1e-6))
    return norm
"""

# A red team's answers, each once given full credit (the checks since look where they went).
CLIP_GRAD_NORM_BUT_FOR_FLOAT32_3_6 = """\
def clip_grad_norm(parameters, max_norm):
    params = [p for p in parameters if p.grad is not None]
    if not params:
        return 0.0
    if any(p.grad.dtype != torch.float32 for p in params):
        # my float32 version overflows for half/double: let torch do those
        return float(torch.nn.utils.clip_grad_norm_(params, max_norm))
    norm = math.sqrt(sum(float((p.grad ** 2).sum()) for p in params))
    if norm > max_norm:
        for p in params:
            p.grad.mul_(max_norm / (norm + 1e-6))
    return norm
"""

FLOAT64_NORM_IN_FLOAT32_3_6 = """\
def clip_grad_norm(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return 0.0
    scale = max(float(g.abs().max()) for g in grads)
    if scale == 0.0 or not math.isfinite(scale):
        norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads])).item()
    else:
        # divide by the largest |g| so the squares cannot overflow, then sum in float32 (fast)
        norm = scale * math.sqrt(sum(float((g / scale).float().pow(2).sum()) for g in grads))
    if norm > max_norm:
        for g in grads:
            g.mul_(max_norm / (norm + 1e-6))
    return norm
"""


TASK = Task(
    alternative="""\
def clip_grad_norm(parameters, max_norm):
    params = list(parameters)
    squares = sum(float((p.grad.double() ** 2).sum()) for p in params if p.grad is not None)
    norm = math.sqrt(squares)
    coef = max_norm / (norm + 1e-6)
    if coef < 1:
        for p in params:
            if p.grad is not None:
                p.grad *= coef
    return norm
""",
    wrong=[
        Wrong(
            "Each gradient clipped by its own norm.",
            hint="the same factor",
            code="""\
def clip_grad_norm(parameters, max_norm):
    params = [p for p in parameters if p.grad is not None]
    total = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in params])).item()
    for p in params:
        own = p.grad.norm().item()
        if own > max_norm:
            p.grad.mul_(max_norm / (own + 1e-6))
    return total
""",
        ),
        Wrong(
            "Returns the norm after clipping.",
            hint="the norm measured before clipping",
            code="""\
def clip_grad_norm(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    norm = torch.linalg.vector_norm(torch.stack([g.norm() for g in grads])).item()
    if norm > max_norm:
        for g in grads:
            g.mul_(max_norm / (norm + 1e-6))
    return torch.linalg.vector_norm(torch.stack([g.norm() for g in grads])).item()
""",
        ),
        Wrong(
            "Reads the parameters generator twice: the second loop clips nothing.",
            hint="generator",
            code="""\
def clip_grad_norm(parameters, max_norm):
    norm = math.sqrt(sum(float(p.grad.pow(2).sum()) for p in parameters if p.grad is not None))
    if norm > max_norm:
        for p in parameters:
            if p.grad is not None:
                p.grad.mul_(max_norm / (norm + 1e-6))
    return norm
""",
        ),
        Wrong(
            "Always rescales, also scaling small gradients up.",
            hint="leave the gradients as they are",
            code="""\
def clip_grad_norm(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    norm = torch.linalg.vector_norm(torch.stack([g.norm() for g in grads])).item()
    for g in grads:
        g.mul_(max_norm / (norm + 1e-6))
    return norm
""",
        ),
        Wrong(
            "Calls torch's clip_grad_norm_.",
            hint="without torch.nn.utils' clipping",
            code="""\
def clip_grad_norm(parameters, max_norm):
    return torch.nn.utils.clip_grad_norm_(parameters, max_norm).item()
""",
        ),
        Wrong(
            "torch's clipping functions, through references taken before the check.",
            hint="without torch.nn.utils' clipping",
            code="""\
from torch.nn.utils import clip_grads_with_norm_, get_total_norm


def clip_grad_norm(parameters, max_norm):
    params = [p for p in parameters if p.grad is not None]
    norm = get_total_norm([p.grad for p in params])
    if norm > max_norm:
        clip_grads_with_norm_(params, max_norm, norm)
    return norm.item()
""",
        ),
        Wrong(
            "Crashes on a frozen parameter's None gradient.",
            hint="whose .grad is None",
            code="""\
def clip_grad_norm(parameters, max_norm):
    params = list(parameters)
    norm = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in params])).item()
    if norm > max_norm:
        for p in params:
            p.grad.mul_(max_norm / (norm + 1e-6))
    return norm
""",
        ),
        # Right in float32; in float16 the squares of gradients above 256 overflow to inf.
        Wrong(
            "The squares summed in the gradients' own dtype: inf for float16 gradients above 256.",
            hint="overflows",
            code="""\
def clip_grad_norm(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    norm = sum((g**2).sum() for g in grads).sqrt().item()
    if norm > max_norm:
        for g in grads:
            g.mul_(max_norm / (norm + 1e-6))
    return norm
""",
        ),
        # The watch sees one process: torch's clipping in a forked child, the result copied back.
        Wrong(
            "clip_grad_norm_ run in a forked child, the norm and clipped gradients sent back.",
            hint="started a process",
            code="""\
import os
import pickle


def clip_grad_norm(parameters, max_norm):
    params = [p for p in parameters if p.grad is not None]
    read, write = os.pipe()
    if os.fork() == 0:
        norm = torch.nn.utils.clip_grad_norm_(params, max_norm)
        os.write(write, pickle.dumps((norm.item(), [p.grad for p in params])))
        os._exit(0)
    os.close(write)
    data = b""
    while chunk := os.read(read, 1 << 16):
        data += chunk
    os.wait()
    norm, grads = pickle.loads(data)
    for p, g in zip(params, grads):
        p.grad.copy_(g)
    return norm
""",
        ),
        Wrong(
            "max_norm / norm without the 1e-6: wrong for small norms.",
            hint="the 1e-6 counts",
            code=CLIPPED_WITHOUT_EPS,
        ),
        Wrong("New .grad tensors instead of scaling in place.", hint="scale them in place", code=GRADS_REPLACED),
        Wrong(
            "Gradients rescaled by g.data = g * c: the same objects, new memory.",
            hint="or their memory",
            code=CLIP_GRAD_NORM.replace("g.mul_(max_norm / (norm + 1e-6))", "g.data = g * (max_norm / (norm + 1e-6))"),
        ),
        Wrong(
            "Gradients rescaled by g.set_(g * c): the same objects, new memory.",
            hint="or their memory",
            code=CLIP_GRAD_NORM.replace("g.mul_(max_norm / (norm + 1e-6))", "g.set_(g * (max_norm / (norm + 1e-6)))"),
        ),
        Wrong(
            "Parameters that no longer require grad skipped, though they have a .grad.",
            hint="whether or not they require grad",
            code=CLIP_GRAD_NORM.replace("if p.grad is not None]", "if p.grad is not None and p.requires_grad]"),
        ),
        Wrong(
            "An infinite norm leaves the gradients unclipped.",
            hint="no special case",
            code=CLIP_GRAD_NORM.replace("    if norm > max_norm:", "    if math.isfinite(norm) and norm > max_norm:"),
        ),
        Wrong(
            "Squares summed in float32 (g.float()): float64 gradients beyond 1e19 overflow.",
            hint="float64 gradients of 1e30",
            code="""\
def clip_grad_norm(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    norm = math.sqrt(sum(float(g.float().pow(2).sum()) for g in grads))
    if norm > max_norm:
        for g in grads:
            g.mul_(max_norm / (norm + 1e-6))
    return norm
""",
        ),
        Wrong(
            "The clipping factor floored at 1e-3: a norm 1000 times max_norm is not clipped down to it.",
            hint="no floor or clamp",
            code=CLIP_GRAD_NORM.replace(
                "g.mul_(max_norm / (norm + 1e-6))", "g.mul_(max(max_norm / (norm + 1e-6), 1e-3))"
            ),
        ),
        Wrong(
            "The norm returned as a tensor when nothing is clipped (.item() only in the clipping branch).",
            hint="not the norm as a Python float",
            code="""\
def clip_grad_norm(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
    if norm > max_norm:
        for g in grads:
            g.mul_(max_norm / (norm.item() + 1e-6))
        return norm.item()
    return norm
""",
        ),
        Wrong(
            "The gradients joined with g.view(-1): fails for a gradient that is not contiguous (channels_last).",
            hint="With a gradient that is not contiguous",
            code=CLIP_GRAD_NORM.replace(
                "torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads])).item()",
                "torch.cat([g.view(-1) for g in grads]).norm().item()",
            ),
        ),
        Wrong(
            "The gradients joined with parameters_to_vector, which views each: fails for one not contiguous.",
            hint="With a gradient that is not contiguous",
            code=CLIP_GRAD_NORM.replace(
                "torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads])).item()",
                "torch.nn.utils.parameters_to_vector(grads).norm().item()",
            ),
        ),
        Wrong(
            "torch.stack of every gradient's norm: with no gradient at all it raises.",
            hint="no gradient at all",
            code="""\
def clip_grad_norm(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads])).item()
    if norm > max_norm:
        for g in grads:
            g.mul_(max_norm / (norm + 1e-6))
    return norm
""",
        ),
        Wrong(
            "torch's clip_grad_norm_ used for every dtype but float32 (float16/float64 checks are not watched)",
            hint="without torch.nn.utils' clipping",
            code=CLIP_GRAD_NORM_BUT_FOR_FLOAT32_3_6,
        ),
        Wrong(
            "float64 gradients' norm computed in float32 (scaled to avoid overflow): not own precision or wider",
            hint="to float64's precision",
            code=FLOAT64_NORM_IN_FLOAT32_3_6,
        ),
    ],
)


# Holes found by a red team: mixed dtypes, an empty gradient, a nan beside an inf.
TASK.wrong.extend(
    [
        Wrong(
            (
                "The accumulation dtype is chosen from the first gradient: float64 gradients after a float32 one "
                "are squared in float32, and 1e30 ** 2 overflows to inf."
            ),
            hint="a float32 gradient followed by float64 gradients",
            code="""\
def clip_grad_norm(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return 0.0
    # accumulate in float32, or in float64 for a float64 model (never narrower than the grads)
    acc = torch.float64 if grads[0].dtype == torch.float64 else torch.float32
    total = torch.zeros((), dtype=acc)
    for g in grads:
        total += g.to(acc).pow(2).sum()
    norm = total.sqrt().item()
    if norm > max_norm:
        for g in grads:
            g.mul_(max_norm / (norm + 1e-6))
    return norm
""",
        ),
        Wrong(
            ("Scaled by the largest |g| to avoid overflow, but g.abs().max() raises on a gradient with no elements."),
            hint="a gradient that has no elements",
            code="""\
def clip_grad_norm(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return 0.0
    # divide by the largest |g| first so that no square overflows, in the grads' own dtype
    scale = max(g.abs().max().item() for g in grads)
    if scale == 0.0 or not math.isfinite(scale):
        norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads])).item()
    else:
        norm = scale * math.sqrt(sum((g / scale).pow(2).sum().item() for g in grads))
    if norm > max_norm:
        for g in grads:
            g.mul_(max_norm / (norm + 1e-6))
    return norm
""",
        ),
        Wrong(
            (
                "math.hypot of the per-gradient norms: with a nan in one gradient and an inf in another it "
                "returns inf, where the norm (and torch) gives nan."
            ),
            hint="a nan in one gradient and an inf in another",
            code="""\
def clip_grad_norm(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    # each gradient's norm in its own dtype, combined exactly in Python
    norm = math.hypot(*(torch.linalg.vector_norm(g).item() for g in grads))
    if norm > max_norm:
        for g in grads:
            g.mul_(max_norm / (norm + 1e-6))
    return norm
""",
        ),
    ]
)


# A red team's answers that hide torch's clipping from the watch: its source exec'd under another
# module's name, or a route taken only while no dispatch mode is on the stack.
TASK.wrong.extend(
    [
        Wrong(
            (
                "torch's own clip_grad_norm_ source exec'd under another module name and file: the copy is "
                "torch's code, which the task rules out."
            ),
            hint="without torch.nn.utils' clipping: it called it",
            code="""\
import inspect
import torch.nn.utils.clip_grad as _cg_module

# my own clipping library: a copy of the textbook implementation, compiled here
_mylib = {"__name__": "my_clipping"}
exec(compile(inspect.getsource(_cg_module), "my_clipping.py", "exec"), _mylib)


def clip_grad_norm(parameters, max_norm):
    grads = [p for p in parameters if p.grad is not None]
    if not grads:
        return 0.0
    return float(_mylib["clip_grad_norm_"](grads, max_norm))
""",
        ),
        Wrong(
            (
                "clip_grad_norm_ whenever no TorchDispatchMode is on the stack: every run outside the grader's "
                "watch uses the forbidden tool."
            ),
            hint="when no dispatch mode was on the stack",
            code="""\
def clip_grad_norm(parameters, max_norm):
    params = [p for p in parameters if p.grad is not None]
    if not params:
        return 0.0
    if not torch._C._len_torch_dispatch_stack():
        # plain runs: the library's fused version is faster
        return torch.nn.utils.clip_grad_norm_(params, max_norm).item()
    grads = [p.grad for p in params]
    norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads])).item()
    if norm > max_norm:
        for g in grads:
            g.mul_(max_norm / (norm + 1e-6))
    return norm
""",
        ),
    ]
)


TASK.wrong.extend(task_3_6_more.WRONG)
