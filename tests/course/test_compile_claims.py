"""Chapter 06's claims about torch.compile and torch.export, held to the pinned PyTorch.

The chapter's cells print the evidence (nbval compares it); these pin each corrected claim
on its own, with Dynamo's cheap backends (no C++ compiler), so that a PyTorch upgrade that
changes one names it: sizes 0 and 1 stay specialised under dynamic=True; two views of one
storage reuse a graph and one tensor passed twice does not; past recompile_limit the
graphs keep running and only misses run eagerly (an error under fullgraph=True);
cache_size_limit is the old name of recompile_limit; global state is one guard; export is
non-strict by default and runs Python at trace time; torch._check lets export decide a
data-dependent `if`; TorchScript's warning is hidden by the default filters; DDPOptimizer
splits a graph at bucket boundaries; blocks compiled one by one share one graph."""

from __future__ import annotations

import contextlib
import inspect
import io
import logging
import warnings

import pytest
import torch
import torch._dynamo
from torch._dynamo.eval_frame import _debug_get_cache_entry_list


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    quiet = logging.getLogger("torch._dynamo")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # the recompile-limit warning is expected here
    yield
    quiet.setLevel(level)
    torch._dynamo.reset()


def compiled(fn, **options):
    """fn compiled with a backend that numbers its graphs; (compiled fn, graphs, ran)."""
    graphs: list[torch.fx.GraphModule] = []
    ran: list[int] = []

    def backend(gm, example_inputs):
        number = len(graphs)
        graphs.append(gm)

        def run(*args):
            ran.append(number)
            return gm.forward(*args)

        return run

    return torch.compile(fn, backend=backend, **options), graphs, ran


def scale(x, n):
    return x * n + 1


def add(a, b):
    return a + b


def test_sizes_0_and_1_recompile_even_with_dynamic_true():
    fn, graphs, _ = compiled(scale, dynamic=True)
    counts = []
    for size in [4, 8, 1, 0, 2]:
        fn(torch.randn(size), 2)
        counts.append(len(graphs))
    assert counts == [1, 1, 2, 3, 3]
    failures = torch._dynamo.utils.guard_failures[scale.__code__]
    assert failures[0].startswith("0/0: 2 <= x.size()[0]")


def test_views_of_one_storage_reuse_the_graph_and_one_tensor_twice_does_not():
    fn, graphs, _ = compiled(add)
    storage, t = torch.randn(8), torch.randn(4)
    fn(torch.randn(4), torch.randn(4))
    fn(storage[:4], storage[4:])
    assert len(graphs) == 1
    fn(t, t)
    assert len(graphs) == 2
    assert "Duplicate tensors" in torch._dynamo.utils.guard_failures[add.__code__][-1]


def test_past_the_recompile_limit_compiled_graphs_keep_running_and_misses_run_eagerly():
    with torch._dynamo.config.patch(recompile_limit=2):
        fn, graphs, ran = compiled(scale, dynamic=False)
        which = []
        for size in [4, 8, 16, 4, 8, 32]:
            ran.clear()
            fn(torch.randn(size), 2)
            which.append(ran[0] if ran else None)
        assert which == [0, 1, None, 0, 1, None] and len(graphs) == 2
        torch._dynamo.reset()
        strict = torch.compile(scale, backend="eager", dynamic=False, fullgraph=True)
        strict(torch.randn(4), 2)
        strict(torch.randn(8), 2)
        with pytest.raises(Exception, match="fullgraph=True"):
            strict(torch.randn(16), 2)


def test_cache_size_limit_is_the_old_name_of_recompile_limit():
    with torch._dynamo.config.patch(cache_size_limit=3):
        assert torch._dynamo.config.recompile_limit == 3


def test_grad_mode_dtype_and_autocast_are_one_guard_and_globals_are_guarded_by_identity():
    def f(x, w):
        return torch.relu(x @ w)

    torch.compile(f, backend="eager")(torch.randn(2, 3), torch.randn(3, 2))
    parts = _debug_get_cache_entry_list(f.__code__)[0].guard_manager.code_parts
    state = [p for p in parts if p.startswith("___check_global_state()")]
    assert len(state) == 1 and all(k in state[0] for k in ("grad_mode", "default_dtype", "autocast"))
    identity = [p for p in parts if p.startswith("___check_obj_id(G['torch']")]
    assert len(identity) == 2 and any(".relu" in p for p in identity)


def test_export_is_non_strict_by_default_and_runs_python_at_trace_time():
    assert inspect.signature(torch.export.export).parameters["strict"].default is False
    printed = []

    class Talkative(torch.nn.Module):
        def forward(self, x):
            printed.append(type(x).__name__)
            return x * 2

    program = torch.export.export(Talkative(), (torch.randn(3),))
    assert printed == ["FakeTensor"]
    program.module()(torch.ones(3))
    assert printed == ["FakeTensor"]  # not in the graph


def test_torch_check_lets_export_decide_a_data_dependent_if():
    class FirstK(torch.nn.Module):
        def __init__(self, checked):
            super().__init__()
            self.checked = checked

        def forward(self, x, n):
            k = n.item()
            if self.checked:
                torch._check(k >= 0)
                torch._check(k <= x.shape[0])
            elif k > x.shape[0]:
                raise ValueError("n is larger than the batch")
            return x[:k] * 2

    rows = torch.randn(6, 2)
    with contextlib.redirect_stderr(io.StringIO()), pytest.raises(Exception, match="data-dependent"):
        torch.export.export(FirstK(False), (rows, torch.tensor(3)))
    with contextlib.redirect_stderr(io.StringIO()):
        program = torch.export.export(FirstK(True), (rows, torch.tensor(3)))
    assert program.module()(rows, torch.tensor(4)).shape == (4, 2)
    with pytest.raises(RuntimeError, match="u0 <= 6"):
        program.module()(rows, torch.tensor(9))


def test_torchscript_deprecation_is_hidden_by_the_default_filters():
    class Double(torch.nn.Module):
        def forward(self, x):
            return x * 2

    with warnings.catch_warnings(record=True) as caught:
        warnings.resetwarnings()
        warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")
        warnings.filterwarnings("ignore", category=DeprecationWarning)  # Python's defaults
        # called from __main__, as a notebook cell calls it
        exec("torch.jit.script(Double())", {"__name__": "__main__", "torch": torch, "Double": Double})
    assert caught == []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.jit.script(Double())
    assert any(issubclass(w.category, DeprecationWarning) and "torch.jit.script" in str(w.message) for w in caught)


def test_ddp_optimizer_splits_a_graph_at_bucket_boundaries():
    from torch._dynamo.backends.distributed import DDPOptimizer

    assert torch._dynamo.utils.get_optimize_ddp_mode() == "ddp_optimizer"
    torch.manual_seed(0)
    layers = torch.nn.Sequential(*[torch.nn.Linear(512, 512) for _ in range(4)])
    layer_bytes = sum(p.nbytes for p in layers[0].parameters())
    pieces: list[torch.fx.GraphModule] = []

    def backend(gm, example_inputs):
        pieces.append(gm)
        return gm.forward

    splitter = DDPOptimizer(bucket_bytes_cap=2 * layer_bytes, backend_compile_fn=backend, first_bucket_cap=layer_bytes)
    torch.compile(layers, backend=splitter.compile_fn)(torch.randn(8, 512)).sum().backward()
    assert [b.size for b in splitter.buckets] == [layer_bytes, 2 * layer_bytes, layer_bytes]
    linear = torch.nn.functional.linear
    assert [sum(n.target is linear for n in g.graph.nodes) for g in pieces] == [1, 2, 1]


def test_blocks_compiled_one_by_one_share_one_graph():
    from coursekit.models import Block, GPTConfig

    torch.manual_seed(0)
    stack = torch.nn.Sequential(*[Block(GPTConfig(n_layer=1, n_embd=32, n_head=4, block_size=8)) for _ in range(3)])
    graphs: list[torch.fx.GraphModule] = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    for block in stack:
        block.compile(backend=backend)
    with torch.no_grad():
        stack(torch.randn(2, 8, 32))
        stack(torch.randn(2, 8, 32))
    assert len(graphs) == 1
