"""A capture holds Python's garbage collector off while it runs, and only then."""

import gc

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
