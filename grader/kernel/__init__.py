"""What runs inside the learner's kernel while it is graded (and while the learner works):

- ``output_guard``: caps what one cell may print (installed by the grader before any
  learner code runs);
- ``session``: ``_grading = Grading(globals())``, made by each exercise notebook's first
  setup cell, keeps the checks honest (its docstring tells how);
- ``watch`` and ``threads``: a record of what really ran, in every thread;
- ``snapshots``, ``names``, ``shell``, ``torch_state``, ``rules``: what the session
  compares and puts back.

Nothing here imports the rest of the grader (which runs on the host, outside the kernel),
and this file imports nothing, so that ``grader.kernel.output_guard`` loads without torch.
"""
