"""Helpers the course notebooks, their scripts and the benchmarks share.

- ``models``: the models the chapters build and the benchmarks draw (an MLP, a small CNN,
  a nanoGPT-style GPT with its config dataclass), written out so every op is visible;
- ``gpu``: the one-line "no GPU: skipped ..." message of cells that need CUDA.

Notebooks import it like any installed package (``from coursekit.models import GPT``):
`make lab` installs it with vizlib and the grader.
"""
