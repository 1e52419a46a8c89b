"""How Graphviz attributes change `dot`'s time on the full op-level graphs of big GPTs.

A GPT's autograd graph is a long chain of blocks: thousands of ranks, two or three nodes
wide, with residual edges skipping ahead. Graphviz 2.43's `dot` spends nearly all its time
on such a graph in network simplex (the rank assignment, and above all the x-coordinate
phase, whose feasible-tree search grows superlinearly), not in crossing minimisation or
edge routing. This script times `dot -Tsvg` on the DOT that torchviz and vizlib produce
for GPT-12/48/96 under many attribute sets. A second, smaller graph has the other shape
that makes `dot` slow: a weight shared by every step of a loop, whose edges span the whole
picture. Writes bench/results/layout.md.

    .venv/bin/python -m bench.bench_layout
"""

from __future__ import annotations

import gc
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torchviz import make_dot

import vizlib as vz
from bench.report import DotRun, median, run_dot, table, write_section
from coursekit.models import GPTConfig, make_gpt
from vizlib.render import FAST_LAYOUT, FAST_LAYOUT_ABOVE, layout_size

SIZES = (12, 48, 96)  # GPT blocks
REPEATS = 3
LIMIT = 60.0  # seconds of wall-clock time before a `dot` run is stopped
SLOW = 5.0  # a run slower than this (CPU seconds) is not repeated
# Graph attributes that are a layout choice, removed from vizlib's DOT to get its plain form.
LAYOUT_ATTRS = (
    "splines",
    "nslimit",
    "nslimit1",
    "mclimit",
    "newrank",
    "searchsize",
    "remincross",
    "ordering",
    "concentrate",
)
# The study's finding (see the notes below), as vizlib.render.dot uses it for big graphs (FAST_LAYOUT).
FAST = dict(item.split("=") for item in FAST_LAYOUT.split(", "))
LOOP_STEPS = 80


@dataclass
class Variant:
    """One way to run Graphviz: graph attributes, a rewrite of the DOT, or another command."""

    label: str
    attrs: dict[str, str] = field(default_factory=dict)
    rewrite: Callable[[str], str] | None = None
    command: list[str] = field(default_factory=lambda: ["-Tsvg"])
    sources: tuple[str, ...] = ("vizlib",)


def plain_dot(dot: str) -> str:
    """The DOT without any of LAYOUT_ATTRS on its `graph [...]` line: Graphviz's defaults."""
    names = "|".join(LAYOUT_ATTRS)
    return re.sub(r"(?m)^(\s*graph \[.*)$", lambda m: re.sub(rf",\s*(?:{names})=[^,\]]+", "", m.group(1)), dot)


def with_attrs(dot: str, attrs: dict[str, str]) -> str:
    """Append a `graph [...]` statement; it overrides earlier values of the same attributes."""
    if not attrs:
        return dot
    line = "  graph [" + ", ".join(f'{k}="{v}"' for k, v in attrs.items()) + "];\n"
    head, _, _ = dot.rstrip().rpartition("}")
    return head + line + "}\n"


def without_tooltips(dot: str) -> str:
    return re.sub(r', tooltip="(?:[^"\\]|\\.)*"', "", dot)


def one_line_labels(dot: str) -> str:
    """Labels cut to their first line (the op name): how much text layout costs."""
    return re.sub(r'label="((?:[^"\\]|\\.)*?)\\n(?:[^"\\]|\\.)*"', r'label="\1"', dot)


def html_labels(dot: str) -> str:
    """Each label as an HTML-like table of its lines: a richer label format's cost."""

    def table_label(m: re.Match) -> str:
        rows = "".join(f"<TR><TD>{line}</TD></TR>" for line in m.group(1).split("\\n"))
        return f'label=<<TABLE BORDER="0" CELLSPACING="0">{rows}</TABLE>>'

    return re.sub(r'label="((?:[^"\\<>&]|\\.)*)"', table_label, dot)


def positioned(dot: str) -> str:
    """The DOT with every position already computed (by the fast attributes), for neato -n2."""
    out = run_dot(with_attrs(dot, FAST), ["-Tdot"], LIMIT).output
    if out is None:
        raise RuntimeError("dot -Tdot timed out while precomputing positions")
    return out.decode()


VARIANTS = [
    Variant("Graphviz defaults", sources=("torchviz", "vizlib")),
    Variant("splines=line", {"splines": "line"}),
    Variant("splines=polyline", {"splines": "polyline"}),
    Variant("splines=false", {"splines": "false"}),
    Variant("splines=ortho", {"splines": "ortho"}),
    Variant(
        "nslimit=2, mclimit=0.5, splines=line (vizlib.render.dot before this study)",
        {"splines": "line", "nslimit": "2", "mclimit": "0.5"},
    ),
    Variant("nslimit=0.1", {"nslimit": "0.1"}),
    Variant("nslimit=0", {"nslimit": "0"}),
    Variant("nslimit1=1", {"nslimit1": "1"}),
    Variant("mclimit=0.1", {"mclimit": "0.1"}),
    Variant("remincross=false", {"remincross": "false"}),
    Variant("searchsize=5", {"searchsize": "5"}),
    Variant("ordering=out", {"ordering": "out"}),
    Variant("concentrate=true", {"concentrate": "true"}),
    Variant("rankdir=LR", {"rankdir": "LR"}),
    Variant('size="7.5,10" (only scales the drawing)', {"size": "7.5,10"}),
    Variant("newrank=true", {"newrank": "true"}),
    Variant("newrank=true, nslimit=0", {"newrank": "true", "nslimit": "0"}, sources=("torchviz", "vizlib")),
    Variant(f"**{FAST_LAYOUT} (vizlib's fast layout)**", FAST, sources=("torchviz", "vizlib")),
    Variant("fast layout with splines=polyline", {**FAST, "splines": "polyline"}),
    Variant("fast layout, ordering=out", {**FAST, "ordering": "out"}),
    Variant("fast layout, without tooltips", FAST, rewrite=without_tooltips),
    Variant("fast layout, one-line labels", FAST, rewrite=one_line_labels),
    Variant("fast layout, HTML-table labels", FAST, rewrite=html_labels),
    Variant("fast layout, `dot -y`", FAST, command=["-y", "-Tsvg"]),
    Variant("fast layout, `-Tplain` (layout, no SVG)", FAST, command=["-Tplain"]),
    Variant(
        "positions precomputed, `neato -n2 -Tsvg` (drawing only)",
        rewrite=positioned,
        command=["-Kneato", "-n2", "-Tsvg"],
    ),
]


# The loop's few variants: the defaults, and each part of the fast layout with and without the rest.
LOOP_VARIANTS = [
    v
    for v in VARIANTS
    if v.label
    in ("Graphviz defaults", "splines=line", "newrank=true, nslimit=0", f"**{FAST_LAYOUT} (vizlib's fast layout)**")
]


def shared_weight_loop(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """A residual recurrence whose weight w feeds every step, as in an RNN."""
    h = x
    for _ in range(LOOP_STEPS):
        h = (h * w).tanh() + h
    return h.sum()


def gpt_dots(n_layer: int) -> tuple[dict[str, str], int]:
    """torchviz's and vizlib's DOT for the full op-level graph of a GPT's loss, and
    vizlib's layout_size estimate for it."""
    model, (idx, targets) = make_gpt(GPTConfig(n_layer=n_layer))
    loss = model(idx, targets)
    # vizlib's post-hoc walk: the same nodes and edges as a recording, without gradients.
    g = vz.graph(loss, params=model, depth=None, max_nodes=None)
    dots = {"torchviz": make_dot(loss, params=dict(model.named_parameters())).source, "vizlib": plain_dot(g.to_dot())}
    estimate = layout_size(g)
    del model, loss, g
    gc.collect()
    return dots, estimate


def node_count(dot: str) -> int:
    return len(re.findall(r"(?m)^\s*\S+ \[", dot)) - len(re.findall(r"(?m)^\s*(?:graph|node|edge) \[", dot))


def measure(dot: str, variant: Variant) -> list[DotRun]:
    """Up to REPEATS runs; a slow or stopped run is not repeated."""
    source = with_attrs(variant.rewrite(dot) if variant.rewrite else dot, variant.attrs)
    runs = []
    for _ in range(REPEATS):
        run = run_dot(source, variant.command, LIMIT)
        runs.append(run)
        if run.output is None or run.cpu > SLOW:
            break
    return runs


def cell(runs: list[DotRun] | None, why_not: str = "") -> str:
    if runs is None:
        return why_not
    if runs[-1].output is None:
        return f"> {LIMIT:.0f} s wall (stopped)"
    note = "" if len(runs) == REPEATS else f", {len(runs)} run"
    return f"{median([r.cpu for r in runs]):.2f} ({median([r.wall for r in runs]):.2f}{note})"


def svg_inches(svg: bytes | None) -> str:
    """The drawing's width × height in inches, from the SVG's pt sizes."""
    if svg is None:
        return ""
    m = re.search(rb'<svg width="(\d+)pt" height="(\d+)pt"', svg)
    return f"{int(m[1]) / 72:.1f}×{int(m[2]) / 72:.1f}" if m else ""


def shape_row(name: str, source: str, dot: str, estimate: int | None) -> list[str]:
    """How tall and wide the layout problem is, from `dot -v` with the fast attributes.

    The x-coordinate problem has a node per real or virtual node and one per edge of the
    ranked graph (whose edges are the original ones plus one per virtual node), so the
    real + virtual count is nodes + (aux nodes - nodes - edges) / 2: what
    vizlib.render.layout_size estimates before any layout, to choose the fast one.
    """
    err = subprocess.run(
        ["dot", "-v", "-Tplain"], input=with_attrs(dot, FAST).encode(), capture_output=True, timeout=LIMIT
    ).stderr.decode()
    ranks = re.search(r"Maxrank = (\d+)", err)
    simplex = re.findall(r"network simplex:\s+(\d+) nodes (\d+) edges", err)
    nodes, edges = node_count(dot), dot.count("->")
    laid_out = f"{nodes + (int(simplex[-1][0]) - nodes - edges) // 2}" if simplex else "?"
    return [
        name,
        source,
        str(nodes),
        str(edges),
        str(int(ranks[1]) + 1) if ranks else "?",
        f"{simplex[-1][0]} nodes, {simplex[-1][1]} edges" if simplex else "?",
        laid_out,
        "" if estimate is None else str(estimate),
    ]


def main() -> None:
    torch.set_num_threads(1)  # DOT generation only; keeps the neighbours' cores free
    results: dict[tuple[str, str, int], list[DotRun] | None] = {}
    why: dict[tuple[str, str, int], str] = {}
    shapes = []
    for n in SIZES:
        dots, estimate = gpt_dots(n)
        for source, dot in dots.items():
            shapes.append(shape_row(f"GPT-{n}", source, dot, estimate if source == "vizlib" else None))
            for v in VARIANTS:
                if source not in v.sources:
                    continue
                smaller = results.get((v.label, source, SIZES[SIZES.index(n) - 1])) if n != SIZES[0] else None
                if smaller is not None and (smaller[-1].output is None or median([r.cpu for r in smaller]) > 10):
                    results[(v.label, source, n)] = None
                    why[(v.label, source, n)] = "not run (smaller graph already > 10 s)"
                    continue
                results[(v.label, source, n)] = measure(dot, v)
                print(f"GPT-{n} {source:8} {v.label}: {cell(results[(v.label, source, n)])}", flush=True)
    rows = []
    for v in VARIANTS:
        for source in v.sources:
            cells = [cell(results[(v.label, source, n)], why.get((v.label, source, n), "")) for n in SIZES]
            runs = results[(v.label, source, 48)]
            size = svg_inches(runs[-1].output) if runs else ""
            rows.append([v.label, source, *cells, size if v.command[-1] == "-Tsvg" else ""])
    loop = vz.graph(shared_weight_loop, torch.ones(3), torch.full((3,), 0.5))
    loop_dot = plain_dot(loop.to_dot())
    loop_name = f"loop of {LOOP_STEPS} steps sharing w"
    shapes.append(shape_row(loop_name, "vizlib", loop_dot, layout_size(loop)))
    loop_rows = []
    for v in LOOP_VARIANTS:
        loop_rows.append([v.label, cell(measure(loop_dot, v))])
        print(f"{loop_name} {v.label}: {loop_rows[-1][1]}", flush=True)
    body = "\n\n".join(
        [
            table(
                ["attributes", "DOT from", *(f"GPT-{n}: CPU s (wall s)" for n in SIZES), "GPT-48 drawing, inches"], rows
            ),
            f"The other slow shape: `h = (h * w).tanh() + h` for {LOOP_STEPS} steps ({len(loop.nodes)} nodes, "
            f"vizlib's DOT), where w feeds every step, so {LOOP_STEPS} edges leave the top of the picture for "
            "every rank below it:",
            table(["attributes", "CPU s (wall s)"], loop_rows),
            f"The layout problem each graph poses (from `dot -v` with {FAST_LAYOUT}): the x-coordinate "
            "problem is the auxiliary graph network simplex solves; 'laid out' counts the real nodes plus a "
            "virtual node per rank that an edge skips, and 'estimate' is vizlib's `layout_size` of the same "
            f"graph, which picks the fast layout above {FAST_LAYOUT_ABOVE}.",
            table(
                ["graph", "DOT from", "nodes", "edges", "ranks", "x-coordinate problem", "laid out", "estimate"], shapes
            ),
            FINDINGS,
        ]
    )
    write_section(
        "layout",
        "Graphviz layout time on big autograd graphs",
        f"`dot -Tsvg` (Graphviz's defaults unless named) on the full op-level graph of GPT-12/48/96 "
        f"(torchviz `make_dot`, and vizlib `vz.graph(loss, depth=None, max_nodes=None).to_dot()`), "
        f"median of {REPEATS} runs; CPU seconds are the `dot` process's user+system time (on an "
        f"idle machine wall ≈ CPU: `dot` is single-threaded), runs slower than {SLOW:.0f} s CPU are "
        f"not repeated, runs are stopped after {LIMIT:.0f} s wall. "
        "Command: `.venv/bin/python -m bench.bench_layout`.",
        body,
    )


FINDINGS = """\
What the numbers say (Graphviz 2.43; measured when this study was written, see the tables):

- On a GPT the time goes into network simplex, not into crossings or splines. `dot -v` shows
  mincross finding 0 crossings in ~0.01 s and spline routing taking ~0.1 s; the x-coordinate
  phase (network simplex on the auxiliary graph, ~3.5× the nodes) takes most of the rest, and
  the old rank assignment most of what remains. A chain of blocks is the worst shape for
  both: thousands of ranks, two or three nodes wide, and each residual edge adds a virtual
  node on every rank it skips, so the problems grow with the depth of the model, not its width.
- `nslimit=0` makes the x-coordinate phase skip its feasible-tree search and its iterations
  (Graphviz returns right after the initial ranking when the iteration budget is 0): each node
  keeps the leftmost x its constraints allow. Any positive nslimit (0.1, 2) still pays the
  feasible-tree search, the part that grows superlinearly.
- `newrank=true` replaces the old rank assignment by a single network simplex that starts from
  an almost-tight ranking; alone it does not help much, with nslimit=0 it removes most of what
  is left (GPT-96: 2.3 s with nslimit=0 alone, 0.8 s with both).
- A weight shared by every step of a loop is the other slow shape, with far fewer nodes: its
  edges span the picture, so the virtual nodes outnumber the real ones forty to one. Once the
  simplex phases are cut, spline routing is what is left (`dot -v` shows routesplines working
  through tens of thousands of boxes): 1.7 s for the 80-step loop, and `splines=line`, which
  draws the same edges straight, brings it to 0.1 s. On a GPT it saves a little too, so it is
  part of the fast layout.
- What decides the layout time is the real plus virtual node count, not the node count. vizlib
  estimates it before drawing (`layout_size`: ranks as `dot` would roughly assign them, exact
  on every graph above) and switches to the fast layout above 1000; GPT-12's full graph, just
  above that (1276), takes 0.21 s under the defaults and 0.08 s with the fast layout.
- `nslimit1=0` crashes Graphviz 2.43 (segmentation fault): do not use it.
- searchsize, ordering, size and concentrate change little or make it slower. mclimit,
  remincross and rankdir change the time only by chance: they change the node order mincross
  leaves (still 0 crossings), hence the x-coordinate problem; none of them gets GPT-96 under
  10 s. `splines=ortho` is much slower. Label text (one line vs three, HTML tables) and
  tooltips cost little next to the layout; with positions precomputed, drawing alone
  (`neato -n2`) costs most of what the whole fast layout does, so past this point the floor is
  parsing, text measuring and SVG output, not layout.
- The fast layout is a readable top-to-bottom picture: the main path of each block runs
  straight down the left, side branches (q/k/v, parameters) stand to its right, and it is
  narrower than the default layout, which drifts sideways block after block.
- Found later, with Graphviz 14–16 (pygraphviz's wheel, WebAssembly; bench_renderers.py):
  there `nslimit=0` no longer packs ranks to the left and the pictures come out about a
  hundred times wider; `mclimit=0.01` keeps them narrow in every version for a little time,
  so the fast layout includes it (the tables above may predate it: see their labels).
"""


if __name__ == "__main__":
    main()
