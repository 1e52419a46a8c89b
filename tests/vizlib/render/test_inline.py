"""A graph in Jupyter is inline SVG that fits the output's width, whose nodes carry their
tooltip as an SVG <title>, with a legend naming the shapes and colours the picture uses."""

from __future__ import annotations

import base64
import html
import re

import torch

import vizlib as vz


def picture_and_legend(g: vz.Graph) -> tuple[str, str]:
    page = g._repr_mimebundle_()["text/html"]
    legend = re.search(r'<div class="vizlib-legend"[^>]*>(.*)</div>', page)
    assert legend, page[-500:]
    return page[: legend.start()], re.sub(r"<[^>]+>", "", html.unescape(legend[1])).replace("\xa0", "")


def test_inline_svg_scales_to_the_output_width():
    picture, _ = picture_and_legend(vz.graph(lambda x, w: (w * x).sum(), torch.ones(3), torch.ones(3)))
    assert picture.startswith('<div class="vizlib-graph"')
    assert "<?xml" not in picture and "<!DOCTYPE" not in picture, "an element, not a document"
    assert re.search(r'<svg style="max-width:100%;height:auto" width="\d+pt" height="\d+pt"', picture)


def test_an_untrusted_front_end_gets_a_still_copy_of_the_same_picture():
    """A sanitizer (an untrusted notebook) keeps inline styles and data-URI images and drops
    <style> and SVG: the live picture is hidden by its own style and shown by the <style>,
    and the still copy is the same SVG as an image (tests/browser/test_pictures.py looks)."""
    page = vz.graph(lambda x, w: (w * x).sum(), torch.ones(3), torch.ones(3))._repr_mimebundle_()["text/html"]
    style = re.search(r'<style class="vizlib-trusted">(.*?)</style><div class="vizlib-live"', page)
    assert style and ".vizlib-trusted+.vizlib-live{display:block!important}" in style[1]
    assert ".vizlib-trusted~.vizlib-still{display:none!important}" in style[1], "its own output's, not every one's"
    live = re.search(r'<div class="vizlib-live" style="display:none">(<svg.*?</svg>)\s*</div>', page, re.S)
    still = re.search(r'<div class="vizlib-still"><img [^>]*src="data:image/svg\+xml;base64,([^"]+)"', page)
    assert live and still, page[:300]
    copy = base64.b64decode(still[1]).decode()
    assert copy.startswith("<svg") and copy.rstrip().endswith("</svg>")
    labels = re.findall(r"<text[^>]*>([^<]*)</text>", copy)
    assert labels and labels == re.findall(r"<text[^>]*>([^<]*)</text>", live[1])


def test_every_node_hovers_with_its_tooltip_as_an_svg_title():
    g = vz.graph(lambda x, w: (w * x).sum(), torch.ones(2, 3), torch.ones(2, 3))
    picture, _ = picture_and_legend(g)
    anchors = re.findall(r'<a xlink:title="([^"]*)">\s*<title>([^<]*)</title>', picture)
    assert len(anchors) == len(g.nodes)
    assert all(attr == title for attr, title in anchors)
    w_tip = next(html.unescape(t) for t, _ in anchors if t.startswith("w "))
    assert "shape: 2×3" in w_tip and "dtype: float32" in w_tip and "grad" in w_tip


def test_legend_names_only_what_the_picture_uses():
    _, plain = picture_and_legend(vz.graph(lambda x: (x * 2).sum(), torch.ones(2)))
    assert plain.split(" · ") == [
        "leaf",
        "op",
        "result",
        "heavier arrow: bigger gradient",
        "hover a node for its details",
    ]

    model = torch.nn.Linear(2, 2)
    _, boxes = picture_and_legend(vz.graph(lambda x: model(x).sum(), torch.ones(1, 2), params=model, depth=0))
    assert "module" in boxes.split(" · ")

    def mixed(x, w):
        return (x.bfloat16() * w.bfloat16()).float().log().sum()  # log(0) = -inf

    _, rich = picture_and_legend(vz.graph(mixed, torch.zeros(2), torch.ones(2), show_saved=True))
    for item in ("fill colour: dtype (key in the picture)", "saved for backward", "NaN or Inf"):
        assert item in rich.split(" · "), rich


def test_the_same_graph_gives_the_same_legend():
    def one():
        return picture_and_legend(vz.graph(lambda x: (x * 2).sum(), torch.ones(2)))[1]

    assert one() == one()
