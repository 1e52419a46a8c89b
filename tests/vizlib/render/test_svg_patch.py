"""The layout cache: a redraw that only changes numbers patches the cached SVG, and the
result is what a fresh Graphviz run would draw."""

from __future__ import annotations

import pytest
import torch

import vizlib as vz
from vizlib.render.dot import to_dot
from vizlib.render.graphviz import dot_to
from vizlib.render.svg_patch import LayoutCache

from ..svg_parts import drawn_attrs, node_texts


def line(x, w, b):
    return w * x + b


@pytest.mark.parametrize(
    "renderer", ["dot", "graphviz-pure", "pygraphviz"]
)  # Graphviz 2.4x, 16.1 (Rust), 14.x write SVG alike
def test_patched_layout_draws_what_graphviz_draws(dot_runs, monkeypatch, renderer):
    monkeypatch.setenv("VIZLIB_RENDERER", renderer)
    cache = LayoutCache()
    for x, w in [(2.0, 3.0), (2.1, 3.0), (2.2, 2.8), (-3.5, 2.8), (10.25, -1.5), (0.0, -1.5)]:
        dot = to_dot(vz.graph(line, x=x, w=w, b=1.0))
        fresh = dot_to(dot, "svg").decode()
        patched = cache.svg(dot)
        assert node_texts(patched) == node_texts(fresh)
        assert drawn_attrs(patched) == drawn_attrs(fresh)
    assert 1 <= len(dot_runs) < 6  # some redraws reused the layout


def test_a_patched_name_that_looks_like_an_html_entity_is_what_graphviz_draws():
    cache = LayoutCache()
    for value in (3.0, 2.5):  # the same picture with another number: patched
        w = torch.tensor(value, requires_grad=True)
        dot = to_dot(vz.graph(w * 2, params={"w&lt;": w}))
        assert node_texts(cache.svg(dot)) == node_texts(dot_to(dot, "svg").decode())
