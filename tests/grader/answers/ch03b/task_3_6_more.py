"""Further wrong answers to exercise 3.6 of solutions/03b_training.ipynb, after those of task_3_6.py."""

from .. import Wrong

WRONG: list[Wrong] = []


# Round 5: float64 gradients clipped by a factor rounded to float32.
WRONG.extend(
    [
        Wrong(
            (
                "The clipping factor made a float32 tensor, torch.tensor(max_norm / (norm + 1e-6)): float64 "
                "gradients are clipped by a rounded factor, off in the 8th digit."
            ),
            hint="to float64's precision: the factor",
            code="""\
def clip_grad_norm(parameters, max_norm):
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return 0.0
    norm = torch.linalg.vector_norm(
        torch.stack([torch.linalg.vector_norm(g) for g in grads])
    ).item()
    if norm > max_norm:
        factor = torch.tensor(max_norm / (norm + 1e-6))
        for g in grads:
            g.mul_(factor)
    return norm
""",
        ),
    ]
)
