"""How long from a slider move in vz.explore to the redrawn graph, in a real browser.

A learner feels the delay between pressing a key on a slider and seeing new numbers in the
graph, so that is what this measures: in the page, ``performance.now()`` when the key goes
down, and again when a MutationObserver sees the graph's SVG replaced. Between the two:
the comm message to the kernel, ``vz.graph`` re-running the function, the SVG redraw
(Graphviz layout reused where only numbers changed), and the browser swapping the SVG in.
The kernel-side part alone (the same slider changes made in-process, no browser) is
measured too, to show where the time goes.

Runs JupyterLab through scripts/lab.py in a sandbox (as the browser tests do) on a
temporary notebook; writes bench/results/latency.md.

    .venv/bin/python -m bench.bench_latency [--moves 15]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import jupyterlab
import nbformat
import torch
from playwright.sync_api import sync_playwright

from harness.lab_session import CHROMIUM_ARGS, WAIT_MS, chromium, lab_server, open_notebook, run_all
from harness.paths import REPO

RESULT = REPO / "bench" / "results" / "latency.md"
TARGET_MS = 300  # the goal for y = w*x + b

# The two functions explored; the notebook and the in-process measurement share this code.
SETUP = """\
import torch
from torch import nn

import vizlib as vz

def line(x, w, b):
    return w * x + b

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))

def mlp(x1, x2, x3):
    return net(torch.stack([x1, x2, x3])).sum()
"""
CASES = [  # (what the table calls it, the explore call, the slider moved)
    ("y = w*x + b", "vz.explore(line, x=2.0, w=3.0, b=1.0)", "x"),
    ("2-layer MLP (3 scalar inputs → 8 tanh → 1)", "vz.explore(mlp, x1=0.5, x2=-1.0, x3=2.0)", "x1"),
]

# In the page: time each keydown on the slider's handle until the graph's SVG changes.
INSTALL_JS = """(root, name) => {
    const handle = [...root.querySelectorAll('.widget-slider')]
        .find(s => s.querySelector('.widget-label').textContent === name)
        .querySelector('.noUi-handle');
    const graph = root.querySelector('.vizlib-graph');
    window.latencies = [];
    let pressed = null;
    handle.addEventListener('keydown', () => { pressed = performance.now(); }, true);
    new MutationObserver(() => {
        if (pressed !== null) { window.latencies.push(performance.now() - pressed); pressed = null; }
    }).observe(graph, {childList: true, subtree: true, characterData: true});
}"""


def browser_latencies(moves: int) -> tuple[list[list[float]], str]:
    """Milliseconds per move for each case, measured in Chromium; and the browser version."""
    with tempfile.TemporaryDirectory() as tmp:
        sandbox = Path(tmp)
        folder = sandbox / "notebooks"
        folder.mkdir()
        cells = [nbformat.v4.new_code_cell(SETUP)] + [nbformat.v4.new_code_cell(call) for _, call, _ in CASES]
        kernel = {"kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}}
        nbformat.write(nbformat.v4.new_notebook(cells=cells, metadata=kernel), folder / "latency.ipynb")
        with lab_server(folder, sandbox) as lab, sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            open_notebook(page, lab, "latency.ipynb")
            run_all(page)
            results = []
            for i, (_, _, name) in enumerate(CASES):
                root = page.locator(".vizlib-explore").nth(i)
                root.locator(".vizlib-graph svg").wait_for(timeout=WAIT_MS)
                root.evaluate(INSTALL_JS, name)
                handle = root.locator(".widget-slider").nth(_slider_index(root, name)).locator(".noUi-handle")
                handle.focus()
                for k in range(moves):
                    handle.press("ArrowRight" if k % 2 == 0 else "ArrowLeft")  # stay near the start
                    page.wait_for_function(f"window.latencies.length >= {k + 1}", timeout=WAIT_MS)
                    time.sleep(0.05)  # let the kernel go idle between moves
                results.append(page.evaluate("window.latencies"))
            version = browser.version
            browser.close()
    return results, version


def _slider_index(root, name: str) -> int:
    labels = root.locator(".widget-slider .widget-label").all_text_contents()
    return labels.index(name)


def kernel_latencies(moves: int) -> list[list[float]]:
    """Milliseconds per slider change made in-process: vz.graph + SVG, no browser, no comm."""
    namespace: dict = {}
    exec(SETUP, namespace)  # noqa: S102 - our own setup code, shared with the notebook
    results = []
    for _, call, name in CASES:
        explorer = eval(call, namespace)  # noqa: S307
        slider = explorer._sliders[name]
        times = []
        for k in range(moves):
            start = time.perf_counter()
            slider.value = round(slider.value + (slider.step if k % 2 == 0 else -slider.step), 6)
            times.append((time.perf_counter() - start) * 1000)
        results.append(times)
    return results


def report(browser_ms: list[list[float]], kernel_ms: list[list[float]], browser_version: str, moves: int) -> str:
    rows = []
    for (label, call, name), b, k in zip(CASES, browser_ms, kernel_ms, strict=True):
        rows.append(
            f"| {label} | `{call}` | {name} | {len(b)} | {statistics.median(b):.0f} | "
            f"{max(b):.0f} | {statistics.median(k):.0f} |"
        )
    return "\n".join(
        [
            "## Slider → redrawn graph latency (vz.explore)",
            "",
            f"How measured: `.venv/bin/python -m bench.bench_latency --moves {moves}`: JupyterLab via scripts/lab.py, "
            "headless Chromium via Playwright; each move is one ArrowRight/ArrowLeft on the slider, timed in the page "
            "with performance.now() from keydown to the MutationObserver seeing the new SVG. Kernel-side: the same "
            f"slider changes in-process (vz.graph + SVG redraw). Target: median ≤ {TARGET_MS} ms for y = w*x + b.",
            "",
            "| graph | call | slider | moves | median ms (browser) | max ms (browser) | median ms (kernel side) |",
            "|---|---|---|---|---|---|---|",
            *rows,
            "",
            f"Machine: {platform.platform()}, {platform.machine()}, {os.cpu_count()} CPUs; "
            f"Python {platform.python_version()}, "
            f"torch {torch.__version__}, JupyterLab {jupyterlab.__version__}, Chromium {browser_version}.",
            f"Date: {datetime.date.today().isoformat()}",
            "",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--moves", type=int, default=15, help="slider moves per graph (at least 10)")
    args = parser.parse_args()
    moves = max(args.moves, 10)
    kernel_ms = kernel_latencies(moves)
    browser_ms, version = browser_latencies(moves)
    text = report(browser_ms, kernel_ms, version, moves)
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
