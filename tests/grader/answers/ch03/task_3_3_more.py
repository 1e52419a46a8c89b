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


# A sixth red team's wrong answers: state kept from a call, unwatched threads and callbacks, dtypes.
WRONG.extend(
    [
        Wrong(
            ("1 / (1 - p) cached on the module at the first call: a p set after a call is half followed."),
            hint="keep nothing from an earlier call",
            code="""\
class MyDropout(nn.Module):
    def __init__(self, p=0.5):
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"dropout probability must be between 0 and 1, got {p}")
        self.p = p

    def forward(self, x):
        if not self.training or self.p == 0:
            return x
        if self.p == 1:
            return torch.zeros_like(x)
        keep = torch.rand_like(x, dtype=torch.float32) >= self.p
        if not hasattr(self, 'scale'):
            self.scale = 1 / (1 - self.p)
        return x * keep * self.scale
""",
        ),
        Wrong(
            (
                "The mask kept in a buffer at every call: a model's state_dict() then holds it, and its "
                "checkpoints no longer load into a fresh model."
            ),
            hint="After a call in training mode, a model's state_dict()",
            code="""\
class MyDropout(nn.Module):
    def __init__(self, p=0.5):
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"dropout probability must be between 0 and 1, got {p}")
        self.p = p

    def forward(self, x):
        if not self.training or self.p == 0:
            return x
        if self.p == 1:
            return torch.zeros_like(x)
        keep = torch.rand_like(x, dtype=torch.float32) >= self.p
        self.register_buffer('mask', keep)
        return x * keep / (1 - self.p)
""",
        ),
        Wrong(
            ("bfloat16 and float16 inputs computed from x.detach() in float32: no gradient flows to x."),
            hint="gradients must flow to x in every dtype",
            code="""\
class MyDropout(nn.Module):
    def __init__(self, p=0.5):
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"dropout probability must be between 0 and 1, got {p}")
        self.p = p

    def forward(self, x):
        if not self.training or self.p == 0:
            return x
        if self.p == 1:
            return torch.zeros_like(x)
        keep = torch.rand_like(x, dtype=torch.float32) >= self.p
        if x.dtype in (torch.bfloat16, torch.float16):
            return torch.where(keep, x.detach().float() / (1 - self.p), 0.0).to(x.dtype)
        return x * keep / (1 - self.p)
""",
        ),
        Wrong(
            (
                "F.dropout in TorchScript, with torch._C._autograd._clear_callbacks() removing the profiler's "
                "callbacks first."
            ),
            hint="switched torch's profiler",
            code="""\
@torch.jit.script
def _ts_dropout(x: torch.Tensor, p: float, train: bool) -> torch.Tensor:
    return torch.nn.functional.dropout(x, p, train)


class MyDropout(nn.Module):
    def __init__(self, p=0.5):
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"dropout probability must be between 0 and 1, got {p}")
        self.p = p

    def forward(self, x):
        if not self.training or self.p == 0:
            return x
        if self.p == 1:
            return torch.zeros_like(x)
        torch._C._autograd._clear_callbacks()
        return _ts_dropout(x, float(self.p), True)
""",
        ),
        Wrong(
            ("F.dropout run in the kernel's IOPub thread (started before the grader's setup) through its event loop."),
            hint="used a ready-made dropout",
            code="""\
import threading as _threading


def _in_io(fn, *args):
    loop = get_ipython().kernel.iopub_thread.io_loop
    done, box = _threading.Event(), []

    def run():
        try:
            box.append(fn(*args))
        except BaseException as e:
            box.append(e)
        done.set()

    loop.add_callback(run)
    done.wait(30)
    return box[0]


class MyDropout(nn.Module):
    def __init__(self, p=0.5):
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"dropout probability must be between 0 and 1, got {p}")
        self.p = p

    def forward(self, x):
        if not self.training or self.p == 0:
            return x
        if self.p == 1:
            return torch.zeros_like(x)
        return _in_io(F.dropout, x, float(self.p), True)
""",
        ),
        Wrong(
            ("torch._refs' _dropout_helper draws the keep mask: a ready-made dropout's mask."),
            hint="used a ready-made dropout",
            code="""\
class MyDropout(nn.Module):
    def __init__(self, p=0.5):
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"dropout probability must be between 0 and 1, got {p}")
        self.p = p

    def forward(self, x):
        if not self.training or self.p == 0:
            return x
        if self.p == 1:
            return torch.zeros_like(x)
        import torch._refs.nn.functional as _r
        keep = _r._dropout_helper(x, 1 - self.p)
        return x * keep / (1 - self.p)
""",
        ),
        Wrong(
            (
                "The scale made as a tensor, torch.tensor(1 / (1 - p)): float32, so float64 survivors are scaled "
                "by a rounded 1 / (1 - p)."
            ),
            hint="rounded to float32's precision",
            code="""\
class MyDropout(nn.Module):
    def __init__(self, p=0.5):
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"dropout probability must be between 0 and 1, got {p}")
        self.p = p

    def forward(self, x):
        if not self.training or self.p == 0:
            return x
        if self.p == 1:
            return torch.zeros_like(x)
        keep = torch.rand_like(x, dtype=torch.float32) >= self.p
        return x * keep * torch.tensor(1 / (1 - self.p), device=x.device)
""",
        ),
    ]
)


# Masks of consecutive calls that depend on each other (each call alone looks random).
WRONG.extend(
    [
        Wrong(
            "Antithetic masks: every other call of a layer reuses the last call's uniform numbers, "
            "flipped (1 - u), so consecutive masks are exact complements.",
            hint="the masks of consecutive calls depend on each other",
            code="""\
class MyDropout(nn.Module):
    def __init__(self, p=0.5):
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"dropout probability must be between 0 and 1, got {p}")
        self.p = p
        self._last = None

    def forward(self, x):
        if not self.training or self.p == 0:
            return x
        if self.p == 1:
            return torch.zeros_like(x)
        last = self._last
        if (last is not None and last[1].shape == x.shape and last[1].device == x.device
                and torch.equal(torch.get_rng_state(), last[0])):
            u = 1 - last[1]  # antithetic: the last call's numbers, flipped (saves a draw)
            self._last = None
        else:
            u = torch.rand_like(x, dtype=torch.float32)
            self._last = (torch.get_rng_state(), u)
        return x * (u >= self.p) / (1 - self.p)
""",
        ),
        Wrong(
            "The last call's uniform numbers rolled by one element, a fresh draw only every 9 calls: "
            "consecutive masks are shifted copies.",
            hint="the masks of consecutive calls depend on each other",
            code="""\
class MyDropout(nn.Module):
    def __init__(self, p=0.5):
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"dropout probability must be between 0 and 1, got {p}")
        self.p = p
        self._last = None
        self._uses = 0

    def forward(self, x):
        if not self.training or self.p == 0:
            return x
        if self.p == 1:
            return torch.zeros_like(x)
        last = self._last
        if (last is not None and last[1].shape == x.shape and last[1].device == x.device
                and torch.equal(torch.get_rng_state(), last[0]) and self._uses < 8 and x.ndim > 0):
            u = last[1].flatten().roll(1).view(x.shape)  # the last numbers, shifted by one
            self._uses += 1
            self._last = (last[0], u)
        else:
            u = torch.rand_like(x, dtype=torch.float32)
            self._last = (torch.get_rng_state(), u)
            self._uses = 0
        return x * (u >= self.p) / (1 - self.p)
""",
        ),
    ]
)
