"""Processes a grading run leaves behind: found by a marker in their environment, killed.

Learners' code can start processes that outlive the kernel that started them: a torchrun
launch (torchrun puts each rank in a session of its own), a detached subprocess, forked
ranks whose kernel died. Killing the kernel's process group does not reach the first two,
and once their parent is gone they are no longer anybody's descendants we could walk to.
So every process of a grading run inherits one marker in its environment,
``GRADER_RUN=<run id>`` (set on the nbval subprocess; kernels and whatever they start copy
it), and ``kill_marked`` finds them wherever they ended up. The grader calls it when a
notebook's kernel has been stopped and when an nbval run ends, however it ended.
"""

from __future__ import annotations

import os

import psutil

MARKER = "GRADER_RUN"


def kill_marked(run_id: str, spare: int | None = None) -> list[int]:
    """SIGKILL every live process whose environment has ``GRADER_RUN=run_id``, except
    ``spare`` (the caller's own process, when it carries the marker), and wait for them.
    Returns their pids."""
    found = []
    for process in psutil.process_iter():
        if process.pid in (spare, os.getpid()):
            continue
        try:
            if process.environ().get(MARKER) == run_id and process.status() != psutil.STATUS_ZOMBIE:
                process.kill()
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    psutil.wait_procs(found, timeout=10)
    return [process.pid for process in found]
