"""The picture, tested as text: DOT (read back by Graphviz), SVG tooltips, saved files, repr."""

import re

import pytest
import torch
from torch import nn

import vizlib as vz
from vizlib.render.dot import FAST_LAYOUT, FAST_LAYOUT_ABOVE, layout_size, to_dot
from vizlib.text import fmt

from ..svg_parts import node_texts


def small(x, w, b):
    return (x * w + b).tanh().sum()


def small_graph():
    return vz.graph(small, torch.tensor([1.0, -2.0]), torch.tensor([0.5, 0.25]), 1.5)


def scalar_graph():
    return vz.graph(lambda x, w: x * w + x, 1.25, 3.5)  # grad x = 4.5, grad w = 1.25


def is_red(color: str) -> bool:
    color = color.strip('"').lower()
    if re.fullmatch(r"#[0-9a-f]{6}([0-9a-f]{2})?", color):
        r, g, b = (int(color[i : i + 2], 16) for i in (1, 3, 5))
        return r >= 0xB0 and g < 0x90 and b < 0x90
    return bool(re.fullmatch(r"(red\d?|crimson|firebrick\d?|tomato\d?|orangered\d?)", color))


def red_attrs(attrs: dict) -> bool:
    return any(is_red(attrs.get(k, "")) for k in ("color", "fillcolor", "fontcolor"))


def test_node_names_come_from_a_counter_not_addresses(dot_json):
    g = vz.graph(nn.Sequential(nn.Linear(3, 2), nn.ReLU()), torch.ones(4, 3), grad_output=torch.ones(4, 2))
    dot = g.to_dot()
    nodes, edges = dot_json(dot)
    assert {f"n{n.id}" for n in g.nodes} == set(nodes)
    assert sorted((f"n{s}", f"n{d}") for s, d in g.edges) == sorted((t, h) for t, h, _ in edges)
    # An address or an id() is a long run of digits of its own; a value's decimals (0.0001956) are not one.
    assert "0x" not in dot and not re.search(r"(?<![\d.])\d{7,}", dot), "no memory addresses or id() numbers"
    assert sorted(n.id for n in g.nodes) == list(range(len(g.nodes))), "ids are 0, 1, 2, ..."


def test_same_graph_gives_identical_dot_across_captures():
    dots = {vz.graph(small, torch.tensor([1.0, -2.0]), torch.tensor([0.5, 0.25]), 1.5).to_dot() for _ in range(2)}
    assert len(dots) == 1
    x = torch.tensor([1.0, -2.0], requires_grad=True)
    assert vz.graph(small(x, x, 1.0)).to_dot() == vz.graph(small(x, x, 1.0)).to_dot()


def test_kinds_are_visually_distinct(dot_json):
    model = nn.Sequential(nn.Sequential(nn.Linear(2, 2), nn.Tanh()), nn.Linear(2, 1))
    g = vz.graph(lambda x: model(x).sum(), torch.ones(1, 2), params=model, depth=1)
    nodes, _ = dot_json(g.to_dot())
    looks = {}
    for n in g.nodes:
        a = nodes[f"n{n.id}"]
        looks.setdefault(n.kind, set()).add((a.get("shape"), a.get("style")))
    assert set(looks) == {"leaf", "op", "module"}
    assert all(len(v) == 1 for v in looks.values()), f"one look per kind: {looks}"
    assert len({next(iter(v)) for v in looks.values()}) == 3, f"three different looks: {looks}"


def test_labels_are_short_and_scalars_show_value_and_grad(dot_json):
    g = scalar_graph()
    nodes, _ = dot_json(g.to_dot())
    x = nodes[f"n{g.find('x')[0].id}"]["label"]
    assert fmt(1.25) in x and fmt(4.5) in x
    big = vz.graph(lambda x: x.exp().sum(), torch.linspace(0, 1, 50).reshape(5, 10))
    for attrs in dot_json(big.to_dot())[0].values():
        lines = attrs["label"].split("\\n")
        assert len(lines) <= 4 and all(len(line) <= 40 for line in lines), attrs["label"]


def test_a_very_long_name_is_shortened_in_its_label_and_whole_in_its_tooltip(dot_json):
    """A name of 3,000 characters (a generated key, a path built in a loop) drew a box 3,000
    characters wide, and the picture, scaled to the output area, became unreadable."""
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    name = "encoder." + "very_" * 600 + "deep.layers.11.weight"
    g = vz.graph((x * 3).sum(), params={name: x})
    assert g.find(name)[0].name == name  # the data keeps it whole
    nodes, _ = dot_json(g.to_dot())
    leaf = nodes[f"n{g.find(name)[0].id}"]
    shown = leaf["label"].split("\\n")[0]
    assert len(shown) <= 40 and shown.startswith("encoder.") and shown.endswith("deep.layers.11.weight")
    assert "…" in shown and name in leaf["tooltip"]
    width = float(re.search(r'<svg width="([\d.]+)pt"', g.to_svg())[1])
    assert width < 500


def test_nan_and_inf_nodes_are_red_and_only_those(dot_json):
    g = vz.graph(lambda x, w: (x * w).log().sum() + w.sum(), torch.tensor([1.0, 2.0]), torch.tensor([-1.0, 1.0]))
    nodes, _ = dot_json(g.to_dot())
    flagged = {n.name for n in g.nodes if red_attrs(nodes[f"n{n.id}"])}
    nonfinite = {n.name for n in g.nodes if n.nonfinite}
    assert nonfinite >= {"LogBackward0", "AddBackward0"}
    assert flagged == nonfinite
    assert not any(red_attrs(a) for a in dot_json(small_graph().to_dot())[0].values())


def test_larger_gradients_draw_heavier_edges(dot_json):
    g = vz.graph(lambda a, b: (a * 100.0).sum() + (b * 0.01).sum(), torch.ones(3), torch.ones(3))
    _, edges = dot_json(g.to_dot())
    width = {t: float(attrs.get("penwidth", 1)) for t, _, attrs in edges}
    a, b = g.find("a")[0].id, g.find("b")[0].id
    assert width[f"n{a}"] > width[f"n{b}"]


def test_dtype_legend_only_when_more_than_one_dtype():
    def mixed(x, w):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            h = x @ w
        return h.float().sum()

    x, w = torch.ones(2, 3), torch.ones(3, 2)
    one = small_graph().to_dot()
    two = vz.graph(mixed, x, w).to_dot()
    assert "legend" not in one.lower() and "bfloat16" not in one
    assert "legend" in two.lower()
    legend = two[two.lower().index("legend") :]
    assert "bfloat16" in legend and "float32" in legend


def test_svg_has_tooltips_with_shape_and_dtype():
    g = vz.graph(lambda w: (w * 2).sum(), torch.ones(2, 3))
    svg = g.to_svg()
    assert svg.lstrip().startswith(("<?xml", "<svg")) and svg.rstrip().endswith("</svg>")
    titles = re.findall(r'xlink:title="([^"]*)"', svg)
    w_tips = [t for t in titles if t.startswith("w")]
    assert w_tips and "float32" in w_tips[0] and re.search(r"2\s*[×x,]\s*3", w_tips[0])
    for n in g.nodes:
        assert f"<title>n{n.id}</title>" in svg, "Graphviz puts the DOT name n{id} in each node's <title>"


@pytest.mark.parametrize(
    "suffix, magic", [(".svg", b"<"), (".png", b"\x89PNG\r\n\x1a\n"), (".pdf", b"%PDF"), (".dot", b"digraph")]
)
def test_save_picks_the_format_by_suffix(tmp_path, suffix, magic):
    path = small_graph().save(tmp_path / f"graph{suffix}")
    data = path.read_bytes()
    assert path == tmp_path / f"graph{suffix}" and data.startswith(magic)
    if suffix == ".svg":
        assert b"<svg" in data[:400]


def test_save_accepts_a_string_path(tmp_path):
    assert small_graph().save(str(tmp_path / "g.svg")).read_bytes().startswith(b"<")


def test_replay_view_shows_gradients_only_of_done_nodes(dot_json):
    g = scalar_graph()
    x = g.find("x")[0]

    def label_of_x(**kw):
        return dot_json(to_dot(g, **kw))[0][f"n{x.id}"]

    assert fmt(4.5) in label_of_x()["label"]
    assert fmt(4.5) not in label_of_x(done=set())["label"]
    assert fmt(4.5) in label_of_x(done={x.id})["label"]
    plain = label_of_x(done={x.id})
    current = label_of_x(current=x.id, done={x.id})
    looks = ("fillcolor", "color", "penwidth", "style")
    assert [plain.get(k) for k in looks] != [current.get(k) for k in looks], "the current node is highlighted"


def test_names_with_quotes_and_backslashes_are_escaped(dot_json):
    x = torch.tensor(2.0, requires_grad=True)
    name = 'my "x" \\ leaf {a|b} <c>'
    g = vz.graph(x * 3, params={name: x})
    nodes, _ = dot_json(g.to_dot())
    assert any(name in a["label"].replace("\\\\", "\\") for a in nodes.values())
    g.to_svg()


def test_names_that_look_like_html_entities_are_drawn_as_they_are():
    x = torch.tensor(2.0, requires_grad=True)
    name = "p&lt; a&b &amp;"  # Graphviz would draw '&lt;' as '<' and '&amp;' as '&'
    g = vz.graph(x * 3, params={name: x})
    assert name in node_texts(g.to_svg())[f"n{g.find(name)[0].id}"]


def test_repr_is_a_short_deterministic_summary():
    g = scalar_graph()
    text = repr(g)
    assert text == repr(scalar_graph())
    assert "2 leaves" in text and "2 ops" in text and "0x" not in text
    assert re.search(rf"x: {fmt(1.25)}, grad {fmt(4.5)}", text)
    assert re.search(rf"w: {fmt(3.5)}, grad {fmt(1.25)}", text)
    assert len(text.splitlines()) <= 6


def test_repr_of_a_big_graph_stays_short():
    model = nn.Sequential(*[nn.Linear(4, 4) for _ in range(20)])
    g = vz.graph(lambda x: model(x).sum(), torch.ones(1, 4), params=model)
    assert len(repr(g).splitlines()) <= 5, "no per-leaf lines for 41 leaves"


def test_jupyter_bundle_has_inline_svg_and_text():
    g = small_graph()
    bundle = g._repr_mimebundle_()
    assert set(bundle) == {"text/html", "text/plain"}
    assert "<svg" in bundle["text/html"] and bundle["text/plain"] == repr(g)


def shared_weight_loop(x, w):
    h = x
    for _ in range(60):  # w feeds every step: edges from the top of the picture to its bottom
        h = (h * w).tanh() + h
    return h.sum()


def long_chain(x):
    for _ in range(300):
        x = x.sin()
    return x.sum()


def test_graphs_that_are_slow_to_lay_out_get_the_fast_layout(dot_json):
    """Graphviz's default layout takes minutes once edges skip thousands of ranks in all
    (bench_layout.py), however few the nodes: a weight shared by 60 steps of a loop is enough.
    The fast layout must still put every op below its inputs, with no two nodes on one spot."""
    # max_nodes=None: every op, as a reader who asks for them gets (else both fold into a loop box)
    loop = vz.graph(shared_weight_loop, torch.ones(3), torch.full((3,), 0.5), max_nodes=None)
    chain = vz.graph(long_chain, torch.ones(3), max_nodes=None)
    assert len(loop.nodes) < len(chain.nodes)
    assert layout_size(loop) > FAST_LAYOUT_ABOVE >= layout_size(chain)
    assert FAST_LAYOUT in loop.to_dot()
    assert FAST_LAYOUT not in chain.to_dot() and FAST_LAYOUT not in small_graph().to_dot()
    nodes, edges = dot_json(loop.to_dot())
    pos = {name: tuple(map(float, attrs["pos"].split(","))) for name, attrs in nodes.items()}
    assert len(set(pos.values())) == len(pos)
    assert all(pos[tail][1] > pos[head][1] for tail, head, _ in edges), "an edge points upwards"


def test_layout_size_counts_a_rank_for_each_skipped_one():
    """x feeds sin -> cos -> exp -> mul -> add, and add directly: that edge skips four ranks.
    The leaf w, used only by mul, sits just above it and skips none."""
    g = vz.graph(lambda x, w: (x.sin().cos().exp() * w + x).sum(), torch.ones(2), torch.ones(2))
    assert len(g.nodes) == 8 and layout_size(g) == 8 + 4
