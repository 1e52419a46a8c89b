"""Further wrong answers to exercise 3.3 of solutions/03_modules.ipynb, after those of task_3_3.py."""

from .. import Wrong

WRONG: list[Wrong] = []

WRONG.extend(
    [
        Wrong(
            "A copy of x in eval mode (x.clone()), not x itself.",
            hint="return x itself, as nn.Dropout does",
            code="""\
class MyDropout(nn.Module):
    def __init__(self, p=0.5):
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"dropout probability must be between 0 and 1, got {p}")
        self.p = p

    def forward(self, x):
        if not self.training:
            return x.clone()
        if self.p == 0:
            return x
        if self.p == 1:
            return torch.zeros_like(x)
        keep = torch.rand_like(x) >= self.p
        return x * keep / (1 - self.p)
""",
        ),
        Wrong(
            "x * 1 in eval mode, not x itself.",
            hint="return x itself, as nn.Dropout does",
            code="""\
class MyDropout(nn.Module):
    def __init__(self, p=0.5):
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"dropout probability must be between 0 and 1, got {p}")
        self.p = p

    def forward(self, x):
        if not self.training:
            return x * 1
        if self.p == 0:
            return x
        if self.p == 1:
            return torch.zeros_like(x)
        keep = torch.rand_like(x) >= self.p
        return x * keep / (1 - self.p)
""",
        ),
    ]
)
