"""Two threads drawing at once: module hooks are global in PyTorch, so vizlib hands each
module call to the recording of the thread it runs on; neither graph sees the other's modules."""

from __future__ import annotations

import sys
import threading
import time

import torch
import torch.nn.modules.module as module_hooks
from torch import nn

import vizlib as vz


class Tower(nn.Module):
    """A model whose module names say which thread's it is, and which lets other threads run
    between its layers (as a model reading data or waiting on a device would)."""

    def __init__(self, prefix: str, layers: int):
        super().__init__()
        self.prefix = prefix
        for k in range(layers):
            self.add_module(f"{prefix}{k}", nn.Linear(8, 8))

    def forward(self, x):
        for layer in self.children():
            x = torch.tanh(layer(x))
            time.sleep(0)
        return x.sum()


def test_two_threads_drawing_at_once_keep_their_modules_apart():
    models = {"a": Tower("a", 6), "b": Tower("b", 9)}
    results: dict[str, list] = {"a": [], "b": []}
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def draw(name: str) -> None:
        try:
            start.wait()
            for _ in range(12):
                g = vz.graph(models[name], torch.randn(4, 8), max_nodes=None)
                results[name].append({m for n in g.nodes for m in n.modules})
        except BaseException as err:  # noqa: BLE001 - reported below, on the test's thread
            errors.append(err)

    threads = [threading.Thread(target=draw, args=(name,)) for name in models]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # threads take turns often, as they would on a busy machine
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors, errors
    for name, model in models.items():
        expected = {"Tower"} | {child for child, _ in model.named_children()}
        wrong = [sorted(found ^ expected) for found in results[name] if found != expected]
        assert len(results[name]) == 12 and not wrong, f"thread {name}: {len(wrong)} of 12 graphs wrong: {wrong[:2]}"
    assert not module_hooks._global_forward_pre_hooks and not module_hooks._global_forward_hooks


def test_no_global_module_hook_is_left_once_drawing_ends():
    vz.graph(Tower("c", 2), torch.randn(2, 8))
    assert not module_hooks._global_forward_pre_hooks and not module_hooks._global_forward_hooks


class _Slow(nn.Module):
    """Slow enough for two threads' calls of it to overlap."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        time.sleep(0.3)
        return self.lin(x)


class _SlowWithHook(nn.Module):
    """A model whose slow part has a forward hook of the user's."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = _Slow(), nn.Linear(4, 2)
        self.a.register_forward_hook(lambda m, i, o: o * 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.relu(self.a(x))).sum()


def test_two_threads_drawing_a_module_with_its_own_forward_hook_get_one_picture():
    """vizlib's hook after the module's own runs for every call of it, on every thread: one
    thread left a module for the other too, and drew the rest of its model outside the box."""
    torch.manual_seed(0)
    model = _SlowWithHook()

    def drawn() -> list:
        g = vz.graph(model, torch.randn(3, 4), max_nodes=None)
        return sorted((n.name, n.modules) for n in g.nodes if n.kind == "op")

    alone, found = drawn(), {}

    def draw(k: int) -> None:
        time.sleep(0.1 * k)  # the second starts while the first sleeps in `a`
        found[k] = drawn()

    threads = [threading.Thread(target=draw, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert found == {0: alone, 1: alone}
    assert len(model.a._forward_hooks) == 1
