"""A learner's function may name its parameters like vizlib's own options.

vz.graph's options never take the function's arguments: a clash is refused with a
message that says how to pass the argument, and vz.explore binds every slider to the
parameter of the function that bears its name. Every option name is tried.
"""

from __future__ import annotations

import inspect

import pytest
import torch
from torch import nn

import vizlib as vz
from vizlib.api import OPTIONS

NAMES = sorted(OPTIONS)


def test_options_are_the_signature_of_vz_graph():
    sig = inspect.signature(vz.graph)
    keyword_only = {p.name: p.default for p in sig.parameters.values() if p.kind is p.KEYWORD_ONLY}
    assert keyword_only == OPTIONS


def function_with(name: str, default: str = "", keyword_only: bool = False):
    """``def f(x, <name>): return x * <name>`` (optionally keyword-only, with a default)."""
    namespace: dict = {}
    star = "*, " if keyword_only else ""
    exec(f"def f(x, {star}{name}{default}):\n    return x * {name}\n", namespace)
    return namespace["f"]


def leaves(g: vz.Graph) -> dict:
    return {n.name: (n.value, n.grad) for n in g.nodes if n.kind == "leaf"}


@pytest.mark.parametrize("name", NAMES)
def test_an_argument_named_like_an_option_is_passed_by_position(name):
    g = vz.graph(function_with(name), 2.0, 3.0)
    assert leaves(g) == {"x": (2.0, 3.0), name: (3.0, 2.0)}


@pytest.mark.parametrize("name", NAMES)
def test_passing_it_by_keyword_is_refused_with_the_way_out(name):
    f = function_with(name)
    refused = rf"argument named '{name}'.*pass it by position: vz.graph\(f, x, {name}\)"
    with pytest.raises(vz.VizlibError, match=refused):
        vz.graph(f, 2.0, **{name: 3.0})
    with pytest.raises(ValueError, match=rf"f\(\) needs its argument '{name}'"):
        vz.graph(f, 2.0)


@pytest.mark.parametrize("name", NAMES)
def test_a_keyword_only_argument_named_like_an_option_is_refused(name):
    f = function_with(name, keyword_only=True)
    with pytest.raises(vz.VizlibError, match=f"rename f's keyword-only argument {name}"):
        vz.graph(f, 2.0, **{name: 3.0})


@pytest.mark.parametrize("name", NAMES)
def test_an_argument_with_a_default_keeps_it_when_the_option_is_not_given(name):
    g = vz.graph(function_with(name, default="=3.0"), 2.0)
    assert leaves(g) == {"x": (2.0, 3.0)}


@pytest.mark.parametrize("name", NAMES)
def test_explore_binds_each_slider_to_the_functions_own_parameter(name):
    explorer = vz.explore(function_with(name), x=2.0, **{name: 3.0})
    assert leaves(explorer.graph) == {"x": (2.0, 3.0), name: (3.0, 2.0)}
    explorer._sliders[name].value = 4.0
    assert leaves(explorer.graph) == {"x": (2.0, 4.0), name: (4.0, 2.0)}


def test_the_first_argument_of_graph_and_explore_is_positional_only():
    def f(target, fn):
        return target * fn

    assert leaves(vz.graph(f, target=2.0, fn=3.0)) == {"target": (2.0, 3.0), "fn": (3.0, 2.0)}
    assert leaves(vz.explore(f, target=2.0, fn=3.0).graph) == {"target": (2.0, 3.0), "fn": (3.0, 2.0)}


def test_a_function_taking_any_keyword_leaves_the_options_to_vizlib():
    def f(x, **extra):
        return x * 2

    g = vz.graph(f, 2.0, max_nodes=1)
    assert any("max_nodes=1" in note for note in g.notes)


def test_a_module_whose_forward_takes_depth():
    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.tensor(3.0))

        def forward(self, x, depth):
            return self.w * x * depth

    model = Scale()
    g = vz.graph(model, torch.tensor(2.0), 1.5, depth=None)
    assert leaves(g)["depth"] == (1.5, 6.0)
    with pytest.raises(vz.VizlibError, match="Scale\\(\\) has an argument named 'depth'"):
        vz.graph(model, torch.tensor(2.0), depth=1.5)
