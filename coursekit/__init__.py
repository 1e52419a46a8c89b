"""Helpers the course notebooks, their scripts and the benchmarks share.

- ``models``: the models the chapters build and the benchmarks draw (an MLP, a small CNN,
  a nanoGPT-style GPT with its config dataclass), written out so every op is visible;
- ``gpu``: the one-line "no GPU: skipped ..." message of cells that need CUDA;
- ``training``: the training loop of chapter 03b (``train``, ``evaluate``), with a progress
  bar that prints the same line on every run;
- ``launch``: ``torchrun(script, ...)`` from a notebook (chapter 05): output streamed, a time
  limit, no process left behind, one ``LaunchError`` naming the rank that failed or hung;
- ``ranks``: ``run_ranks(fn)`` runs a function defined in a cell on forked CPU processes
  joined by gloo (chapters 05, 05b and 05c: demos and exercise checks), with the same guarantees;
- ``draw_ranks``: pictures of each rank's tensor before and after a collective, and of a
  ring all-reduce step by step;
- ``memory``: the bytes a model and its optimizer hold, by role and dtype (a DTensor by its
  local shard, padding included), for chapter 05c's bytes-per-parameter and ZeRO counts;
- ``comms``: ``CollectiveLog``, the collectives a block of code really issues (DDP's,
  FSDP's, ``dist.*``) with the bytes each moves under the ring algorithm;
- ``generated_code``: the forward and backward modules Inductor wrote for one small function
  (stored text, real: exercise 6.5 reads them);
- ``saved_views``: notebooks saved with their live views as pictures (`make lab`'s save hook,
  and scripts/execute_notebooks.py), so a notebook reopened without its kernel shows them.

Notebooks import it like any installed package (``from coursekit.models import GPT``):
`make lab` installs it with vizlib and the grader.
"""
