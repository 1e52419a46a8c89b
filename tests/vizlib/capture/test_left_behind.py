"""What a drawn call leaves behind that a plain call would leave for good: the memory it freed
under a tensor (``untyped_storage().resize_(0)``, as FSDP frees a parameter) and an autocast
it entered and never left. vizlib puts both back as soon as the call returns, and says so."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

import vizlib as vz

# Run apart: without its memory a tensor read crashes the whole process (a segmentation fault,
# in vizlib's reading of the values as in the learner's own print(x)).
_FREED = """
import torch
from torch import nn
import vizlib as vz

def frees(t):
    def f(x):
        y = (x * x).sum() + lin(x).sum()  # x is saved for backward: its memory is read again
        (x if t is None else t()).untyped_storage().resize_(0)
        return y
    return f

def frees_then_raises(x):
    x.untyped_storage().resize_(0)
    raise KeyError("the learner's own")

torch.manual_seed(0)
lin = nn.Linear(3, 1)
x = torch.randn(3, requires_grad=True)
plain = torch.randn(3)  # vizlib hands the call a copy of it that requires grad: the copy is freed
before = {"x": x.clone(), "plain": plain.clone(), "weight": lin.weight.detach().clone()}
for name, t, given in [("x", None, x), ("weight", lambda: lin.weight, x), ("copy", None, plain)]:
    g = vz.graph(frees(t), given)
    grad = torch.tensor(g.find("x")[0].grad)
    print(name, torch.allclose(grad, 2 * given + lin.weight[0]), g.notes[0][:41])
try:
    vz.graph(frees_then_raises, x)
except KeyError as err:
    print("raised", err)
print(all(torch.equal(before[k], t) for k, t in [("x", x), ("plain", plain), ("weight", lin.weight)]))
print("resize_" in torch.UntypedStorage.__dict__)
"""


def test_memory_a_call_frees_under_a_tensor_is_given_back_with_its_values():
    """Freed under the caller's input, a parameter, vizlib's copy of an input, and before the
    call raises: each tensor holds its values again, and the picture says why."""
    ran = subprocess.run([sys.executable, "-c", _FREED], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stdout.splitlines() == [
        "x True The function freed the memory of 1 tensor",
        "weight True The function freed the memory of 1 tensor",
        "copy True The function freed the memory of 1 tensor",
        'raised "the learner\'s own"',
        "True",
        "False",
    ]


# FSDP2 on one process: each Linear's full parameters are gathered for its forward and for
# its backward and freed after each (untyped_storage().resize_(0)), the model's own way.
_FSDP = """
import torch, torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import fully_shard
import vizlib as vz

dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
for layer in (model[0], model[2], model):
    fully_shard(layer)
x = torch.randn(3, 4)
watched = []
torch.UntypedStorage.resize_, resize = (lambda s, n: watched.append(n) or resize(s, n)), torch.UntypedStorage.resize_
g = vz.graph(model, x, grad_output=torch.ones(3, 2))
del torch.UntypedStorage.resize_
params = [n for n in g.nodes if n.kind == "leaf" and n.name != "input"]
print(len(params), all(n.value is None and n.value_stats is None and n.grad_stats for n in params))
print(g.notes[0][:40], watched.count(0) >= 8)
print(sorted(n.name for n in params))
model(x).sum().backward()
print(all(p.grad is not None for p in model.parameters()))
outer = nn.Sequential(nn.Linear(4, 8), nn.Sequential(nn.ReLU(), nn.Linear(8, 2)))  # 1.1: the outer one's
for layer in (outer[0], outer):
    fully_shard(layer)
g = vz.graph(outer, x, grad_output=torch.ones(3, 2))
print(sorted(n.name for n in g.nodes if n.kind == "leaf" and n.name != "input"))
dist.destroy_process_group()
"""


def test_a_model_that_frees_its_parameters_on_purpose_is_drawn_without_their_values():
    """FSDP frees each parameter it gathered once forward or backward is done with it: vizlib
    leaves that to FSDP (no copy, nothing given back: its memory saving stays) and draws those
    parameters with shapes and gradients, no values, instead of reading freed memory (which
    crashed the process), under their own names (FSDP's pre-forward hooks put the gathered
    parameters in the places of the shards vizlib had named: they were named by shape); the
    model trains on after."""
    ran = subprocess.run([sys.executable, "-c", _FSDP], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stdout.splitlines() == [
        "4 True",
        "The values of 4 leaf tensor(s) are not d True",
        "['0.bias', '0.weight', '2.bias', '2.weight']",
        "True",
        "['0.bias', '0.weight', '1.1.bias', '1.1.weight']",
    ]


# A leaf of the call's own, freed on another thread once used (a worker the call starts; on a
# GPU, autograd's device thread, where FSDP frees the parameters it gathered for backward).
_FREED_ON_ANOTHER_THREAD = """
import threading
import torch
import vizlib as vz

def f(x):
    w = torch.randn(3, requires_grad=True)
    y = (x + w).sum()  # AddBackward0 saves neither: a plain call and its backward never read w again
    worker = threading.Thread(target=w.untyped_storage().resize_, args=(0,))
    worker.start()
    worker.join()
    return y

x = torch.randn(3, requires_grad=True)
f(x).backward()
g = vz.graph(f, x)
leaf = [n for n in g.nodes if n.kind == "leaf" and n.name != "x"][0]
print(leaf.value is None, leaf.grad == [1.0, 1.0, 1.0], g.notes[0][:40])
"""


def test_memory_freed_on_another_thread_is_not_read():
    """No capture runs on the thread that freed it, so none can tell whose memory it was: every
    capture running notes it, and the leaf is drawn without its values (reading them crashed)."""
    ran = subprocess.run([sys.executable, "-c", _FREED_ON_ANOTHER_THREAD], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stdout.splitlines() == ["True True The values of 1 leaf tensor(s) are not d"]


def test_memory_a_call_grows_is_left_grown():
    """A tensor given memory by the call (made empty, then given room: the reverse of freeing)
    is drawn with it, not shrunk back under the graph's feet."""

    def f(x):
        buf = torch.empty(0).set_(torch.UntypedStorage(0), 0, (3,), (1,))
        buf.untyped_storage().resize_(12)
        buf.copy_(x)
        return (buf * x).sum()

    x = torch.tensor([1.0, 2.0, 3.0])
    g = vz.graph(f, x)
    assert g.find("x")[0].grad == [2.0, 4.0, 6.0] and not g.notes


def test_a_call_that_patches_resize_itself_is_drawn():
    """The call wraps UntypedStorage.resize_ (vizlib's, in place while it captures) to count
    resizes, and deletes its wrapper when done, the usual way: vizlib finds no wrapper of its
    own to take away, and neither raises nor leaves one on the class."""
    counted = []

    def f(x):
        resize = torch.UntypedStorage.resize_
        torch.UntypedStorage.resize_ = lambda s, n: counted.append(n) or resize(s, n)
        try:
            return (x * x).sum()
        finally:
            del torch.UntypedStorage.resize_

    g = vz.graph(f, torch.ones(3))
    assert g.find("x")[0].grad == [2.0, 2.0, 2.0] and "resize_" not in torch.UntypedStorage.__dict__


def test_a_wrapper_of_resize_a_call_leaves_on_the_class_stays_and_works():
    """Left on the class, the call's wrapper (around vizlib's, in place while it captured) is
    the caller's: it stays, and a later capture through it neither recurses nor loses a resize."""
    counted = []

    def leaves_a_wrapper(x):
        resize = torch.UntypedStorage.resize_
        torch.UntypedStorage.resize_ = lambda s, n: counted.append(n) or resize(s, n)
        return (x * x).sum()

    def frees(x):
        y = (x * x).sum()
        x.untyped_storage().resize_(0)
        return y

    try:
        vz.graph(leaves_a_wrapper, torch.ones(3))
        assert "resize_" in torch.UntypedStorage.__dict__
        x = torch.ones(3, requires_grad=True)
        g = vz.graph(frees, x)
        assert counted == [0] and torch.equal(x, torch.ones(3)) and "freed the memory of 1" in g.notes[0]
    finally:
        del torch.UntypedStorage.resize_


def _autocast() -> tuple:
    depth = torch.autocast_increment_nesting() - 1
    torch.autocast_decrement_nesting()
    return torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu"), depth


def _enters_autocast(x: torch.Tensor) -> torch.Tensor:
    torch.autocast("cpu", dtype=torch.bfloat16).__enter__()  # and never leaves it
    return (x @ torch.ones(3, 2)).float().sum()


def test_autocast_a_call_enters_and_never_leaves_is_put_back_and_said():
    before = _autocast()
    g = vz.graph(_enters_autocast, torch.ones(2, 3))
    assert _autocast() == before == (False, torch.bfloat16, 0)
    assert g.find("MmBackward0")[0].dtype == "bfloat16", "the call ran under its autocast"
    assert g.notes == [
        "The function entered torch.autocast('cpu') and did not leave it: a plain call leaves autocast on for "
        "what runs next; vizlib put it back as it was when the call returned (the dtypes drawn are the call's)."
    ]


def test_autocast_of_the_caller_stays_on_and_one_left_by_a_raising_call_is_put_back():
    def raises(x):
        torch.autocast("cpu").__enter__()
        raise KeyError("the learner's own")

    with torch.autocast("cpu", dtype=torch.float16):
        inside = _autocast()
        g = vz.graph(_enters_autocast, torch.ones(2, 3))
        assert _autocast() == inside == (True, torch.float16, 1) and not g.notes
    with pytest.raises(KeyError, match="the learner's own"):
        vz.graph(raises, torch.ones(2, 3))
    assert _autocast() == (False, torch.bfloat16, 0)


def test_explore_puts_autocast_back_after_every_call():
    explorer = vz.explore(lambda s: _enters_autocast(torch.ones(2, 3) * s), s=1.0)
    explorer._sliders["s"].value = 2.0
    assert _autocast() == (False, torch.bfloat16, 0) and "torch.autocast('cpu')" in explorer.graph.notes[0]
    assert explorer.graph.find("s")[0].grad == 12.0


# Dynamo traces ``untyped_storage().resize_(0)`` into its graph (``inductor.resize_storage_bytes_``),
# where the watch on ``UntypedStorage.resize_`` does not see it.
_FREED_IN_A_COMPILED_GRAPH = """
import torch
from torch import nn
import vizlib as vz

torch.manual_seed(0)
lin = nn.Linear(3, 1)
weight = lin.weight.detach().clone()

def frees(x):
    y = (x * x).sum() + lin(x).sum()
    lin.weight.untyped_storage().resize_(0)
    return y

(g,) = vz.compiled_graphs(frees, torch.randn(3))
print(lin.weight.untyped_storage().nbytes() == weight.nbytes and torch.equal(lin.weight, weight))
print(g.notes[-1][:41])
"""


def test_compiled_graphs_gives_back_memory_the_call_frees():
    """The caller's parameter, freed inside the graph Dynamo captured, holds its values again
    (it was left without memory, and the process crashed), and the graph says why."""
    ran = subprocess.run(
        [sys.executable, "-c", _FREED_IN_A_COMPILED_GRAPH], capture_output=True, text=True, timeout=120
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stdout.splitlines() == ["True", "The function freed the memory of 1 tensor"]


@pytest.mark.parametrize("draw", [vz.compiled_graphs, vz.joint_graph], ids=["compiled_graphs", "joint_graph"])
def test_the_compilers_pictures_put_back_autocast_the_call_enters(draw):
    """Dynamo and AOTAutograd run the call's Python, which enters autocast and never leaves it:
    each picture puts it back, as vz.graph does (it was left entered, once per trace). PyTorch
    2.11's AOTAutograd refuses to trace such a call (2.13's traces it): vz.joint_graph then says
    how to enter autocast instead, and puts it back all the same."""
    before = _autocast()
    try:
        draw(_enters_autocast, torch.ones(2, 3))
    except vz.VizlibError as err:
        assert draw is vz.joint_graph and "`with torch.autocast(...):` block" in str(err), err
    assert _autocast() == before == (False, torch.bfloat16, 0)


@pytest.fixture(autouse=True)
def _no_autocast_left():
    yield
    while _autocast()[2] > 0:  # (a failed test's, not the next test's)
        torch.autocast_decrement_nesting()
    torch.set_autocast_enabled("cpu", False)
    torch.set_autocast_dtype("cpu", torch.bfloat16)
    torch.clear_autocast_cache()
