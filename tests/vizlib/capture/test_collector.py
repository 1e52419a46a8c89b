"""A capture holds Python's garbage collector off while it runs, and only then; it leaves
nothing behind for the collector, and frees even a very long graph."""

import gc
import resource
import subprocess
import sys
import weakref

import pytest
import torch

import vizlib as vz


def test_collector_is_off_during_the_call_and_on_again_after():
    seen = []

    def f(x):
        seen.append(gc.isenabled())
        return (x * x).sum()

    assert gc.isenabled()
    vz.graph(f, torch.ones(3))
    assert seen == [False]
    assert gc.isenabled()


def test_collector_is_on_again_after_a_call_that_raises():
    def f(x):
        raise ValueError("the learner's own error")

    with pytest.raises(ValueError, match="own error"):
        vz.graph(f, torch.ones(3))
    assert gc.isenabled()


def test_a_collector_turned_off_by_the_caller_stays_off():
    gc.disable()
    try:
        vz.graph(lambda x: (x * x).sum(), torch.ones(3))
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_recording_leaves_nothing_behind(monkeypatch):
    """Its recorder, and with it the autograd graph and every record, is freed by
    reference counting when vz.graph returns (autograd's saved-tensor hooks once held the
    recorder: a cycle through C++ that no collection could free, one per drawing)."""
    from vizlib.capture.record import ForwardRecorder

    recorders = []
    enter = ForwardRecorder.__enter__

    def noted(self):
        recorders.append(weakref.ref(self))
        return enter(self)

    monkeypatch.setattr(ForwardRecorder, "__enter__", noted)
    vz.graph(lambda x, w: torch.tanh(x * w).sum(), torch.randn(4), torch.randn(4))
    assert len(recorders) == 1 and recorders[0]() is None
    gc.collect()
    assert not [o for o in gc.get_objects() if type(o).__name__ == "OpRecord"]


# Frees a 1,500-step loop's graph on a main thread with 512 KiB of stack (8 MiB is usual).
_DEEP = """
import resource, torch, vizlib as vz
def loop(x, w):
    for _ in range(1500):
        x = x + torch.tanh(x * w)
    return x.sum()
print(len(vz.graph(loop, torch.randn(8), torch.randn(8)).nodes))
"""


def test_a_long_loop_is_freed_without_deep_recursion():
    """Autograd's nodes that Python has seen free each other from inside their
    destructors: freed from the last one, a loop of thousands of steps overflows the C
    stack (16,666 steps did with 8 MiB). vizlib frees them newest first."""

    def small_stack() -> None:
        resource.setrlimit(resource.RLIMIT_STACK, (512 << 10, resource.getrlimit(resource.RLIMIT_STACK)[1]))

    done = subprocess.run(
        [sys.executable, "-c", _DEEP], capture_output=True, text=True, timeout=300, preexec_fn=small_stack
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert int(done.stdout.split()[-1]) < 20, done.stdout  # folded
