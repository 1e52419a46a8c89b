"""What runs in the pytest process that grades one batch of submissions.

host/run.py starts ``python -m pytest --nbval -p grader.plugin.recorder`` outside the
sandbox; recorder.py starts each notebook's kernel inside it (host/sandbox.py's KernelBox),
writes one record per judged cell (host/records.py) and gives up on a lost kernel. It
imports from grader.host only the tools it shares with the host (sandbox, records,
processes), never the kernel's modules: those run in the kernel.
"""
