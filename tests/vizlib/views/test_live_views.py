"""vz.explore and vz.replay without a browser: what their widgets hold after each change,
their static fallback, their errors, and that replay's steps reuse one layout.
(tests/browser/ drives the same widgets in a real JupyterLab.)"""

from __future__ import annotations

import re

import pytest
import torch

import vizlib as vz
from vizlib.render.dot import to_dot
from vizlib.render.graphviz import dot_to

from ..svg_parts import drawn_attrs, node_texts


def line(x, w, b):
    return w * x + b


def test_replay_steps_reuse_one_layout(dot_runs):
    g = vz.graph(line, x=2.0, w=3.0, b=1.0)
    player = vz.replay(g)
    order = g.backward_order
    for k in range(len(order) + 1):
        dot = to_dot(g, current=order[k - 1] if k else None, done=set(order[:k]))
        fresh = dot_to(dot, "svg").decode()
        assert node_texts(player.step_svg(k)) == node_texts(fresh)
        assert drawn_attrs(player.step_svg(k)) == drawn_attrs(fresh)
    assert len(dot_runs) == 1


def test_explore_redraws_with_new_values_and_gradients():
    explorer = vz.explore(line, x=2.0, w=3.0, b=(-5, 5))
    assert explorer.values() == {"x": 2.0, "w": 3.0, "b": 0.0}
    explorer._sliders["x"].value = 2.1
    leaves = {n.name: n for n in explorer.graph.nodes}
    assert leaves["x"].value == pytest.approx(2.1)
    assert leaves["w"].grad == pytest.approx(2.1)  # dy/dw = x
    assert "grad 2.1" in explorer._picture.value
    assert 'class="vizlib-error"' not in explorer._picture.value


def test_explore_ranges():
    explorer = vz.explore(line, x=2.0, w=(-5, 5), b=(0, 1, 0.25))
    x, w, b = (explorer._sliders[n] for n in "xwb")
    assert (x.min, x.max, x.value) == (-2.0, 6.0, 2.0)
    assert (w.min, w.max, w.step, w.value) == (-5.0, 5.0, 0.1, 0.0)
    assert (b.min, b.max, b.step, b.value) == (0.0, 1.0, 0.25, 0.5)


def test_explore_shows_errors_in_place_and_recovers():
    def root(x):
        if x < 0:
            raise ValueError("root needs x >= 0")
        return torch.sqrt(x)

    explorer = vz.explore(root, x=(-1, 3, 0.5))
    good = explorer.graph
    explorer._sliders["x"].value = -0.5
    assert "ValueError: root needs x &gt;= 0" in explorer._picture.value
    assert "<svg" not in explorer._picture.value
    assert explorer.graph is good  # the last graph that worked
    explorer._sliders["x"].value = 0.5
    assert "<svg" in explorer._picture.value
    assert explorer.graph.find("x")[0].grad == pytest.approx(0.5 / 0.5**0.5)


@pytest.mark.parametrize(
    "inputs, message",
    [
        ({"x": 2.0, "w": 3.0, "b": 1.0, "z": 1.0}, "unexpected keyword argument 'z'"),
        ({"x": 2.0, "w": 3.0}, "missing a required argument: 'b'"),
        ({"x": torch.ones(3), "w": 3.0, "b": 1.0}, "x is a tensor of shape [3]"),
        ({"x": "2", "w": 3.0, "b": 1.0}, "x is str '2'"),
        ({"x": (5, -5), "w": 3.0, "b": 1.0}, "needs low < high"),
    ],
)
def test_explore_refuses_calls_that_cannot_work(inputs, message):
    with pytest.raises(vz.VizlibError, match=re.escape(message)):
        vz.explore(line, **inputs)


def test_explore_lets_the_learners_own_exception_through_at_creation():
    def broken(x):
        raise ZeroDivisionError("mine")

    with pytest.raises(ZeroDivisionError, match="mine"):
        vz.explore(broken, x=1.0)


def test_replay_step_texts_follow_the_backward_order():
    g = vz.graph(line, x=2.0, w=3.0, b=1.0)
    player = vz.replay(g)
    names = [g.node(i).name for i in g.backward_order]
    assert player._text.value.startswith(f"step 0/{len(names)}: before backward")
    for k, name in enumerate(names, 1):
        player._slider.value = k
        assert player._text.value.startswith(f"step {k}/{len(names)}: {name} — grad ")
    assert player._text.value == "step 5/5: x — grad 3 is complete: backward would add it to x.grad"


def test_replay_refuses_graphs_without_backward_order():
    x = torch.tensor(2.0, requires_grad=True)
    with pytest.raises(vz.VizlibError, match="no backward order"):
        vz.replay(vz.graph(x * x))
    with pytest.raises(vz.VizlibError, match="needs a vz.Graph"):
        vz.replay(x)


@pytest.mark.parametrize(
    "make", [lambda: vz.explore(line, x=2.0, w=3.0, b=1.0), lambda: vz.replay(vz.graph(line, x=2.0, w=3.0, b=1.0))]
)
def test_widgets_carry_a_static_picture_and_a_stable_text(make):
    bundle = make()._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["image/svg+xml"].startswith("<?xml") and "</svg>" in bundle["image/svg+xml"]
    assert bundle["text/plain"] == make()._repr_mimebundle_()["text/plain"]  # nbval compares it
    assert "running notebook" in bundle["text/plain"].splitlines()[0]
    assert "w: 3, grad 2" in bundle["text/plain"]
