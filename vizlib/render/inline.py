"""A graph as HTML for Jupyter: the SVG inline (so hovering a node shows its tooltip), never
wider than the output area, with a small legend of what the colours and shapes mean.

JupyterLab draws ``image/svg+xml`` as an ``<img>``, and an image shows no tooltips; SVG put
into the page itself does. Graphviz gives its SVG a size in points: in the page it is scaled
down to the output's width instead (``max-width:100%``), keeping its proportions.

A front-end shows a notebook's stored HTML in full only when it trusts the notebook:
JupyterLab and Notebook trust what they ran and what this machine signed, and sanitize the
rest, which drops every SVG element and leaves its text (each tooltip, run together). A
notebook opened elsewhere (an instructor's copy of a submission, a colleague's, the course
opened without ``make lab``) is untrusted, so the picture comes twice (``_both_ways``):
inline, hidden by its own ``style``, and as an ``<img>`` of the same SVG (a data URI,
which the sanitizer keeps), and a ``<style>`` element, which the sanitizer removes, shows
the first and hides the second. Trusted: the live picture; untrusted: a still copy. A
``<style>`` holds for the whole page, so its rules name the element itself as the pictures'
sibling: a trusted output's (a cell run again, another notebook open) shows no other
output's sanitized picture.

Where no Graphviz runs in Python (``engines.renderer()`` is ``"browser"``), the HTML carries
the DOT text and a script that lays it out in the front-end with Graphviz compiled to
WebAssembly (``vizlib/render/wasm``, sent once per kernel: later pictures wait for it);
untrusted, the script does not run, and the placeholder says what to do.
"""

from __future__ import annotations

import base64
import json
import re
from functools import cache
from importlib import resources

from ..data import GraphData
from .dot import KIND_STYLE, to_dot
from .engines import dot_to, renderer

GRAPH_CLASS = "vizlib-graph"  # the stable CSS class browser tests and benchmarks look for
WASM_PACKAGE = "@hpcc-js/wasm-graphviz@1.29.2"  # wasm/README.md says how to vendor another
WASM_FILE = "graphviz.js"
_sent_library = False  # whether this kernel has already sent the WebAssembly Graphviz

# Small swatches drawn with CSS, in the picture's colours (vizlib.render.dot) and shapes.
_BOX = "display:inline-block;width:1.6em;height:0.9em;vertical-align:middle;margin-right:0.3em;"
_CORNERS = {"leaf": "4px", "op": "50%", "module": "0"}


def svg_for_html(svg: str) -> str:
    """Graphviz's SVG document as an inline element that shrinks to the output's width.

    Graphviz writes a node's tooltip as ``<a xlink:title=...>``, which not every browser
    shows, inside a group whose ``<title>`` is the DOT node name (``n12``), which every
    browser shows. A ``<title>`` with the tooltip, first in the ``<a>``, is the nearest one
    to whatever the pointer is over, so hovering a node shows its details everywhere.
    """
    body = svg[svg.index("<svg") :]
    body = _A_TITLE.sub(r"\1<title>\2</title>", body)
    return re.sub(r"<svg\b", '<svg style="max-width:100%;height:auto"', body, count=1)


_A_TITLE = re.compile(r'(<a xlink:title="([^"]*)">)')

# Shown where the output is trusted (a sanitizer drops <style> and its text): of its own output
# only, the pictures beside it; the still copy's note.
_TRUSTED_CSS = (
    '<style class="vizlib-trusted">.vizlib-trusted+.vizlib-live{display:block!important}'
    ".vizlib-trusted~.vizlib-still{display:none!important}</style>"
)
_STILL_NOTE = (
    "A still copy: this notebook is not trusted here, so its live picture is hidden. "
    "Run the cell again, or trust the notebook, to hover a node for its details."
)


def _both_ways(svg: str) -> str:
    """The live inline SVG for a trusted output, and a still image of it for an untrusted one."""
    still = base64.b64encode(svg[svg.index("<svg") :].encode()).decode()
    return (
        f'{_TRUSTED_CSS}<div class="vizlib-live" style="display:none">{svg_for_html(svg)}</div>'
        f'<div class="vizlib-still"><img style="max-width:100%;height:auto" alt="the graph (a still copy)" '
        f'src="data:image/svg+xml;base64,{still}"><div style="font-size:0.8em;color:#555">{_STILL_NOTE}</div></div>'
    )


def to_html(g: GraphData) -> str:
    """The picture of ``g`` and its legend as one HTML fragment, laid out by ``renderer()``."""
    dot = to_dot(g)
    if renderer() == "browser":
        picture = _browser_picture(dot)
    else:
        picture = _both_ways(dot_to(dot, "svg").decode())
    return (
        f'<div class="{GRAPH_CLASS}" style="max-width:100%;overflow-x:auto">{picture}</div>\n'
        f'<div class="vizlib-legend" style="font-size:0.8em;color:#555;margin-top:0.2em">{legend(g)}</div>'
    )


def legend(g: GraphData) -> str:
    """One line naming what this picture's shapes and colours mean (only those it uses)."""
    kinds = {n.kind for n in g.nodes}
    items = [_swatch(kind) for kind in KIND_STYLE if kind in kinds]
    if any(n.is_output for n in g.nodes):
        items.append(f'<span style="{_BOX}border:3px double #333"></span>result')
    if len({n.dtype for n in g.nodes if n.dtype}) > 1:
        items.append("fill colour: dtype (key in the picture)")
    if g.show_saved and any(n.saved for n in g.nodes):
        items.append(f'<span style="{_BOX}background:#ffd8a8;border:1px dashed #e8590c"></span>saved for backward')
    if any(n.nonfinite for n in g.nodes):
        items.append(f'<span style="{_BOX}background:#ffc9c9;border:2px solid #d00000"></span>NaN or Inf')
    if any(e is not None for e in g.edge_grads):
        items.append("heavier arrow: bigger gradient")
    items.append("hover a node for its details")
    return " &#160;·&#160; ".join(items)


def _swatch(kind: str) -> str:
    fill = re.search(r'fillcolor="([^"]+)"', KIND_STYLE[kind])
    background = f"background:{fill[1]};" if fill else ""
    return (
        f'<span style="{_BOX}{background}border:1px solid #333;border-radius:{_CORNERS.get(kind, "0")}"></span>{kind}'
    )


@cache
def _library_b64() -> str:
    """The vendored WebAssembly Graphviz (an ES module), base64 so no HTML parser trips on it."""
    source = resources.files(__package__).joinpath("wasm", WASM_FILE).read_bytes()
    return base64.b64encode(source).decode()


def _browser_picture(dot: str) -> str:
    """DOT text and the script that lays it out in the page (runs where outputs are trusted)."""
    global _sent_library
    library = "" if _sent_library else _library_b64()
    _sent_library = True
    # Inside <script> nothing is unescaped, so no "</script>" may appear: "<" is written as \\u003c.
    # The library first: base64 has no "_", so "__DOT__" cannot appear in it.
    dot_js = json.dumps(dot).replace("<", "\\u003c")
    script = _BROWSER_JS.replace("__LIBRARY__", json.dumps(library)).replace("__DOT__", dot_js)
    return (
        '<div class="vizlib-browser-layout" data-renderer="browser">'
        "laying the graph out in the browser (vizlib found no Graphviz in Python)… If this stays, the notebook "
        "is not trusted here and its script does not run: run the cell again, or trust the notebook.</div>"
        f"<script>{script}</script>"
    )


# Sets up window.vizlibGraphviz once (from the first picture that carries the library), then
# replaces the placeholder before this script by the SVG Graphviz-in-WebAssembly makes.
_BROWSER_JS = """(() => {
const here = document.currentScript.previousElementSibling;
const library = __LIBRARY__;
if (library && !window.vizlibGraphviz) {
  const bytes = Uint8Array.from(atob(library), c => c.charCodeAt(0));
  const url = URL.createObjectURL(new Blob([bytes], {type: "text/javascript"}));
  window.vizlibGraphviz = import(url).then(m => m.Graphviz.load());
}
if (!window.vizlibGraphviz) {
  here.textContent = "No picture: Graphviz for the browser comes with a kernel's first picture, and that " +
    "output is gone. Restart the kernel and run the cells again.";
  return;
}
window.vizlibGraphviz.then(gv => {
  // As svg_for_html does: each tooltip also as the <title> the browser shows on hover.
  const svg = gv.layout(__DOT__, "svg", "dot").replace(/(<a xlink:title="([^"]*)">)/g, "$1<title>$2</title>");
  here.innerHTML = svg.slice(svg.indexOf("<svg"));
  const element = here.querySelector("svg");
  element.style.maxWidth = "100%";
  element.style.height = "auto";
}).catch(err => { here.textContent = "Graphviz in the browser failed: " + err; });
})();"""
