"""The kernel's own threads (IOPub, Control, Shell channel, the copiers of file descriptors 1
and 2, IPython's history thread), started before the grader's setup, record into a Watch like
the threads started after it: work an answer hands them is seen (kernel_threads.py). A real
ipykernel runs the cells."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from jupyter_client.manager import start_new_kernel

ROOT = Path(__file__).resolve().parents[2]

SETUP = """\
import threading

import torch
import torch.nn.functional as F

from grader.kernel import kernel_threads
from grader.kernel.session import Grading

_grading = Grading(globals())
x = torch.ones(8)


def handed(route):
    # Run F.dropout on a kernel thread through `route`, under a watch; what the watch saw.
    done = threading.Event()

    def work(*args, **kwargs):
        if threading.current_thread() is not threading.main_thread() and not done.is_set():
            F.dropout(x, 0.5, training=True)
            done.set()

    with _grading.watch() as watch:
        undo = route(work)
        assert done.wait(10), "the kernel thread never ran the work"
    undo()
    return watch.ran("torch.nn.functional:dropout")
"""

ROUTES = {
    "an event loop's callback (IOPub)": """\
loop = get_ipython().kernel.iopub_thread.io_loop
print(handed(lambda work: loop.add_callback(work) or (lambda: None)))
""",
    "the copier of file descriptor 1": """\
import os, sys

def through_stdout(work, write=sys.stdout.write):
    sys.stdout.write = lambda text: work() or write(text)
    os.write(1, b".")
    return lambda: vars(sys.stdout).pop("write")

print(handed(through_stdout))
""",
    "IPython's history thread": """\
manager = get_ipython().history_manager

def through_history(work, save=manager.writeout_cache):
    manager.writeout_cache = lambda *args: work() or save(*args)
    manager.save_thread.save_flag.set()
    return lambda: vars(manager).pop("writeout_cache")

print(handed(through_history))
""",
}


@pytest.fixture(scope="module")
def kernel():
    # as a learner's kernel starts: ipykernel copies file descriptors 1 and 2 only outside pytest
    env = {**{k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}, "PYTHONPATH": str(ROOT)}
    manager, client = start_new_kernel(kernel_name="python3", cwd=str(ROOT), env=env)

    def run(code: str) -> str:
        client.execute(code)
        out = []
        while True:
            msg = client.get_iopub_msg(timeout=120)
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream" and content["name"] == "stdout":
                out.append(content["text"])
            elif kind == "error":
                out.append(f"{content['ename']}: {content['evalue']}")
            elif kind == "status" and content["execution_state"] == "idle":
                return "".join(out).replace("\x00", "")

    assert run(SETUP) == ""
    yield run
    manager.shutdown_kernel(now=True)


def test_the_setup_reaches_every_kernel_thread(kernel):
    reached = kernel("print(sorted(kernel_threads.watch_kernel_threads()))")
    for name in ("IOPub", "Control", "Shell channel", "_watch_pipe_fd", "IPythonHistorySavingThread"):
        assert name in reached, reached


@pytest.mark.parametrize("route", list(ROUTES))
def test_work_handed_to_a_kernel_thread_is_recorded(kernel, route):
    assert "['torch.nn.functional:dropout']" in kernel(ROUTES[route])
