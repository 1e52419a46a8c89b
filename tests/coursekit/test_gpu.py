"""GPU-only cells guard themselves with has_cuda, which says in one line what it skips."""

import torch

from coursekit.gpu import SKIP_PREFIX, has_cuda


def test_has_cuda_answers_for_this_machine_and_says_what_it_skips(capsys):
    assert has_cuda("the fp16 run") is torch.cuda.is_available()
    printed = capsys.readouterr().out
    assert printed == ("" if torch.cuda.is_available() else f"{SKIP_PREFIX} the fp16 run\n")
