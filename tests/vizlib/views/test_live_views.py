"""vz.explore and vz.replay without a browser: what their widgets hold after each change,
their static fallback, their errors, and that replay's steps reuse one layout.
(tests/browser/ drives the same widgets in a real JupyterLab.)"""

from __future__ import annotations

import operator
import re

import numpy as np
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
    two_points = vz.explore(line, x=(0.1, 0.3, 0.2), w=1.0, b=0.0)._sliders["x"]  # (0.3 - 0.1 < 0.2 in floats)
    assert (two_points.min, two_points.max, two_points.step) == (0.1, 0.3, 0.2)


def root(x):
    if x < 0:
        raise ValueError("root needs x >= 0")
    return torch.sqrt(x)


def test_explore_shows_errors_in_place_and_recovers():
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
        ({"x": (0, 1, 5), "w": 3.0, "b": 1.0}, "a positive step no longer than high - low"),
    ],
)
def test_explore_refuses_calls_that_cannot_work(inputs, message):
    with pytest.raises(vz.VizlibError, match=re.escape(message)):
        vz.explore(line, **inputs)


def test_explore_of_a_module_checks_the_names_its_forward_takes():
    class Double(torch.nn.Module):
        def forward(self, x):
            return x * 2

    with pytest.raises(vz.VizlibError, match=re.escape("Linear(input) cannot be called with x")):
        vz.explore(torch.nn.Linear(1, 1), x=1.0)
    assert vz.explore(Double(), x=1.5).graph.find("x")[0].grad == 2.0


def scaled(x, /, w, *, b=0.0):
    return w * x + b


def test_explore_hands_arguments_taken_by_position_only_by_position():
    explorer = vz.explore(operator.mul, a=2.0, b=3.0)  # (a, b, /): no keyword reaches it
    assert explorer.graph.find("a")[0].grad == 3.0 and explorer.graph.find("b")[0].grad == 2.0
    explorer = vz.explore(scaled, x=2.0, w=3.0, b=1.0)
    explorer._sliders["x"].value = 1.0
    assert explorer.graph.find("x")[0].grad == 3.0 and explorer.graph.find("w")[0].grad == 1.0
    assert 'class="vizlib-error"' not in explorer._picture.value
    with pytest.raises(vz.VizlibError, match=re.escape("missing a required argument: 'x'")):
        vz.explore(scaled, w=3.0)


def test_explore_starts_at_the_exact_value_given_whatever_its_grid():
    calls = []

    def f(x):
        calls.append(x.item())
        return x * x

    explorer = vz.explore(f, x=0.123)
    slider = explorer._sliders["x"]
    assert calls == [pytest.approx(0.123, rel=1e-7)] and explorer.values() == {"x": 0.123}  # (x is float32)
    slider.value = slider.value + slider.step  # one step on: still on the grid through 0.123
    assert explorer.values() == {"x": 0.143} and slider.readout_format == ".3f"


@pytest.mark.parametrize("given", [1e-300, 1e300, 1e-40], ids=repr)
def test_explore_keeps_a_number_float32_cannot_hold_as_given(given):
    """1e-300 lies on no grid of steps of 0.02 (it was read back as 0.0), and float32 would
    make 1e300 inf and 1e-40 a subnormal of few digits: the call and values() keep them."""
    calls = []

    def f(x):
        calls.append((x.item(), x.dtype))
        return x * 2

    explorer = vz.explore(f, x=given)
    assert calls == [(given, torch.float64)] and explorer.values() == {"x": given}
    assert explorer.graph.find("x")[0].value == given and "as float64" in explorer.graph.notes[0]


@pytest.mark.parametrize("given", [1e-300, 1.2345678e-200, -3.3e-12, 1e-5], ids=repr)
def test_explore_readout_tells_a_value_off_the_sliders_grid(given):
    """x=1e-300 slides over -1..1 by 0.02, and the readout's two decimals wrote it 0.00: the
    readout writes the value itself (d3-format writes a number as Python's format does, less
    the trailing zeros Python's "g" drops), in scientific notation where it is that small."""
    slider = vz.explore(lambda x: x * x, x=given)._sliders["x"]
    assert float(format(slider.value, slider.readout_format)) == given


def test_explore_keeps_the_digits_of_a_tiny_range():
    explorer = vz.explore(lambda x: x * x, x=(0, 1e-9))
    explorer._sliders["x"].value = 3.3e-10
    assert explorer.values() == {"x": 3.3e-10} and explorer._sliders["x"].readout_format.endswith("e")


@pytest.mark.parametrize("width", [1e-12, 1e-20])
def test_explore_slides_over_a_range_narrower_than_1e_10(width):
    explorer = vz.explore(lambda x: x * x, x=(0, width))  # (its step, width / 100, was rounded to 0)
    slider = explorer._sliders["x"]
    assert slider.step == pytest.approx(width / 100)
    slider.value = 3 * slider.step
    assert explorer.values() == {"x": pytest.approx(0.03 * width)}


@pytest.mark.parametrize("spec", [1e308, (-1e308, 1e308)], ids=repr)
def test_explore_refuses_a_range_wider_than_a_float_with_advice(spec):
    with pytest.raises(vz.VizlibError, match=r"too large for a slider.*Give a narrower range") as err:
        vz.explore(lambda x: x * x, x=spec)  # (was an OverflowError from math.floor)
    assert isinstance(err.value, ValueError)


@pytest.mark.parametrize("number", [np.float32(2.0), np.int64(2), torch.tensor(2), torch.tensor(2.0)], ids=repr)
def test_explore_takes_any_real_number_for_a_slider(number):
    assert vz.explore(line, x=number, w=3.0, b=1.0).values()["x"] == 2.0


@pytest.mark.parametrize(
    "name, given, advice",
    [
        ("flag", True, "vz.explore(lambda x: f(x, flag=True), x=2.0)"),
        ("mode", "fast", "vz.explore(lambda x: f(x, mode='fast'), x=2.0)"),
        ("x", None, "vz.explore(lambda y: f(y, x=None), y=2.0)"),
        ("x", float("nan"), "not a finite number to slide around. Give a finite one (x=2.0)"),
        ("x", float("inf"), "not a finite number to slide around. Give a finite one (x=2.0)"),
    ],
    ids=repr,
)
def test_explore_says_how_to_pass_what_no_slider_moves_over(name, given, advice):
    """A flag or a mode is fixed in a lambda, not given a number (the advice was "flag=2.0")."""
    with pytest.raises(vz.VizlibError, match=re.escape(advice)):
        vz.explore(lambda x, flag=False, mode="a": x, **{"x": 1.0, name: given})


def test_explore_refuses_a_boolean_tensor_naming_its_dtype():
    with pytest.raises(vz.VizlibError, match=re.escape("x is a tensor of shape [] and dtype bool")):
        vz.explore(line, x=torch.tensor(True), w=3.0, b=1.0)


def test_explore_after_an_error_says_what_its_static_picture_shows():
    explorer = vz.explore(root, x=(-1, 3, 0.5))
    explorer._sliders["x"].value = 2.0
    explorer._sliders["x"].value = -0.5
    text = explorer._repr_mimebundle_()["text/plain"]
    assert "root(x=-0.5) raised ValueError: root needs x >= 0; the picture shows x=2." in text
    assert "x: 2, grad" in text
    explorer._sliders["x"].value = 1.0
    assert "raised" not in explorer._repr_mimebundle_()["text/plain"]


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


@pytest.mark.parametrize("step", [-1, 6, 1.5])
def test_replay_refuses_a_step_it_does_not_have(step):
    player = vz.replay(vz.graph(line, x=2.0, w=3.0, b=1.0))  # 5 backward steps
    for method in (player.step_text, player.step_svg):
        with pytest.raises(vz.VizlibError, match="step"):
            method(step)


def test_replay_refuses_graphs_without_backward_order():
    x = torch.tensor(2.0, requires_grad=True)
    with pytest.raises(vz.VizlibError, match="no backward order"):
        vz.replay(vz.graph(x * x))
    with pytest.raises(vz.VizlibError, match="needs a vz.Graph"):
        vz.replay(x)


def _twice(x: torch.Tensor) -> torch.Tensor:
    return (x * 2).sum()


@pytest.mark.parametrize(
    "make, reason",
    [
        (lambda: vz.compiled_graphs(_twice, torch.ones(2))[0], "compiler"),
        (lambda: vz.graph(torch.fx.symbolic_trace(_twice)), "compiler"),
        (lambda: vz.graph(_twice, torch.ones(2, device="meta")), "meta device"),
    ],
    ids=["compiled_graphs", "fx", "meta"],
)
def test_replay_says_why_a_graph_has_no_backward_order(make, reason):
    """A compiler's graph is drawn as it is (nothing ran backward), a call on the meta device ran
    no backward: each is told so, not that it was drawn from a tensor after the fact."""
    with pytest.raises(vz.VizlibError, match="no backward order") as refused:
        vz.replay(make())
    assert reason in str(refused.value) and "after the fact" not in str(refused.value)


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


def copies(x, n: int):
    return torch.stack([x] * n).sum()


def test_an_input_annotated_int_gets_a_slider_of_integers_handing_a_python_int():
    """A count (``n: int``) slid over floats reached the function as a float tensor, which
    ``[x] * n`` cannot use; its slider moves over integers and hands it an int."""
    explorer = vz.explore(copies, x=2.0, n=3)
    assert explorer.values() == {"x": 2.0, "n": 3} and type(explorer.values()["n"]) is int
    assert explorer.graph.find("x")[0].grad == 3.0
    explorer._sliders["n"].value = 5
    assert explorer.graph.find("x")[0].grad == 5.0
    ranged = vz.explore(copies, x=2.0, n=(0, 64, 8))._sliders["n"]
    assert (ranged.min, ranged.max, ranged.step, ranged.value) == (0, 64, 8, 32)
    with pytest.raises(vz.VizlibError, match=r"n is annotated as an int.*n=\(1, 8\)"):
        vz.explore(copies, x=2.0, n=2.5)
    with pytest.raises(vz.VizlibError, match="a positive step no longer than high - low"):
        vz.explore(copies, x=2.0, n=(0, 4, 8))  # a slider that could not move


def test_a_one_element_integer_tensor_for_an_int_argument_is_the_int_it_holds():
    """``n=torch.tensor(3)`` (a count read off a tensor, ``x.shape[0]`` kept as one) was
    refused as no integer; it slides as 3 does, and the function is handed Python ints."""
    explorer = vz.explore(copies, x=torch.tensor(2.0), n=torch.tensor(3))
    assert explorer.values() == {"x": 2.0, "n": 3} and type(explorer.values()["n"]) is int
    assert explorer.graph.find("x")[0].grad == 3.0
    ranged = vz.explore(copies, x=2.0, n=(torch.tensor(0), torch.tensor(64), torch.tensor(8)))._sliders["n"]
    assert (ranged.min, ranged.max, ranged.step, ranged.value) == (0, 64, 8, 32)
    assert vz.explore(copies, x=2.0, n=torch.tensor([4], dtype=torch.uint8)).values()["n"] == 4
    with pytest.raises(vz.VizlibError, match=r"n is annotated as an int.*given 2\.5.*n=3"):
        vz.explore(copies, x=2.0, n=torch.tensor(2.5))  # a real number is still no count


def test_an_integer_given_to_an_unannotated_count_gets_the_way_out_beside_the_error():
    """``b=(-5, 5)`` is a real number's range: an integer slides over floats unless the
    argument says it is an int; where that breaks the call, the learner's own error says so."""
    with pytest.raises(TypeError) as caught:
        vz.explore(lambda x, n: torch.stack([x] * n).sum(), x=2.0, n=3)
    assert any("annotate it as one" in note and "n: int" in note for note in caught.value.__notes__)


def test_slider_names_are_written_whole_and_their_tracks_lined_up():
    """ipywidgets gives a description 80 px: "learning_r…" in JupyterLab."""
    explorer = vz.explore(lambda learning_rate, w: learning_rate * w, learning_rate=0.1, w=1.0)
    widths = {s.style.description_width for s in explorer._sliders.values()}
    assert widths == {f"{len('learning_rate') + 2}ch"}


def test_explore_of_a_function_of_star_args_says_how_to_name_them():
    def product(*args):
        return args[0] * args[1]

    with pytest.raises(vz.VizlibError) as err:
        vz.explore(product, x=1.0, w=3.0)
    message = str(err.value)  # (was "product(args) cannot be called...": args read as a name to give)
    assert "product(*args) cannot be called with x, w" in message
    assert "vz.explore(lambda x, w: product(x, w), x=..., w=...)" in message
    hinted = vz.explore(lambda x, w: product(x, w), x=1.0, w=3.0)
    assert [n.grad for n in hinted.graph.nodes if n.kind == "leaf"] == [3.0, 1.0]
