"""The code Inductor wrote for one small function, stored as it came (exercise 6.5).

Exercise 6.5 has the learner read real generated code for what Inductor decided: what it
fused, what the forward saves for the backward, what stayed a library call. Compiling it in
the exercise would cost seconds and give C++ that differs from CPU to CPU, so the forward
and backward modules PyTorch 2.13 wrote on a 2-core x86-64 CPU are stored here as text
(``generated/attend_forward.txt``, ``generated/attend_backward.txt``). ``capture`` writes them again; a test
checks that the pinned PyTorch still writes the same Python around the C++ kernels.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent / "generated"
PARTS = ("forward", "backward")


def attend(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """The function the stored code was generated for (x, w requiring grad)."""
    h = torch.relu(x @ w)
    return (h.softmax(-1) * h).sum()


def stored(part: str) -> str:
    """The stored module Inductor wrote for attend's forward or backward, as text."""
    if part not in PARTS:
        raise ValueError(f"part must be one of {PARTS}, not {part!r}")
    return (HERE / f"attend_{part}.txt").read_text()


def capture(device: str = "cpu") -> dict[str, str]:
    """Compile attend (x of 64x32, w of 32x16, on ``device``) with Inductor now: {part: the
    module's text}. On a GPU the modules launch Triton kernels where a CPU's run C++."""
    from torch._inductor.utils import run_and_get_code

    torch._dynamo.reset()
    x = torch.randn(64, 32, device=device, requires_grad=True)
    w = torch.randn(32, 16, device=device, requires_grad=True)
    with torch._inductor.config.patch(fx_graph_cache=False):
        _, codes = run_and_get_code(lambda: torch.compile(attend)(x, w).backward())
    torch._dynamo.reset()
    return dict(zip(PARTS, codes, strict=True))


def python_part(code: str) -> str:
    """The module without its C++ sources (between r''' and '''), which vary with the CPU,
    and without the number in its AOT ID, which counts the graphs the process compiled before."""
    code = re.sub(r"^# AOT ID: \['\d+_", "# AOT ID: ['N_", code, flags=re.M)
    return re.sub(r"r'''.*?'''", "r'''<C++>'''", code, flags=re.S)


if __name__ == "__main__":  # python -m coursekit.generated_code [DEVICE [FOLDER]]: store it again
    device = sys.argv[1] if len(sys.argv) > 1 else "cpu"
    folder = Path(sys.argv[2]) if len(sys.argv) > 2 else HERE
    suffix = "" if device == "cpu" else f"_{torch.device(device).type}"
    folder.mkdir(parents=True, exist_ok=True)
    for part, code in capture(device).items():
        (folder / f"attend_{part}{suffix}.txt").write_text(code)
