"""A learner's session with course/00_welcome.ipynb in a real JupyterLab and Chromium:
run it all, move vz.explore's sliders, play vz.replay, see the plots.

The expected numbers come from autograd itself (computed here, in float32 like vizlib's
inputs), formatted the way the picture's labels show numbers (4 significant digits).
"""

from __future__ import annotations

import re

import pytest
import torch
from playwright.sync_api import Locator, Page, expect

from harness.lab_session import WAIT_MS, notebook_run, wait_until

pytestmark = pytest.mark.browser

HIGHLIGHT = "#fff176"  # vizlib.render's colour for the node backward is running
# Each node of the picture: first label line (its name) -> the other lines.
LABELS_JS = """root => Object.fromEntries([...root.querySelectorAll('svg g.node')].map(g => {
    const lines = [...g.querySelectorAll('text')].map(t => t.textContent);
    return [lines[0], lines.slice(1)];
}))"""
# Record, at every redraw of the replay's picture, its step line and the highlighted node.
RECORD_STEPS_JS = """root => {
    window.replaySteps = [];
    const record = () => {
        const text = root.querySelector('.vizlib-replay-step').textContent;
        const lit = [...root.querySelectorAll('.vizlib-graph svg g.node')]
            .filter(g => g.querySelector('[fill="HIGHLIGHT"]'))
            .map(g => g.querySelector('text').textContent);
        window.replaySteps.push([text, lit]);
    };
    new MutationObserver(record).observe(root.querySelector('.vizlib-graph'), {childList: true, subtree: true});
}""".replace("HIGHLIGHT", HIGHLIGHT)


@pytest.fixture(scope="module")
def welcome(browser, lab):
    """One page with 00_welcome.ipynb opened and run from the top; the JS errors it raised."""
    with notebook_run(browser, lab, "00_welcome.ipynb") as (page, errors):
        yield page, errors


def fmt(t: torch.Tensor) -> str:
    return format(t.item(), ".4g")


def line_labels(x: float, w: float, b: float) -> dict[str, list[str]]:
    """The labels of y = w*x + b's graph, from autograd."""
    xt, wt, bt = (torch.tensor(v, requires_grad=True) for v in (x, w, b))
    wx = wt * xt
    y = wx + bt
    for t in (wx, y):
        t.retain_grad()
    y.backward()
    return {
        name: [f"= {fmt(t)}", f"grad {fmt(t.grad)}"]
        for name, t in [("x", xt), ("w", wt), ("b", bt), ("MulBackward0", wx), ("AddBackward0", y)]
    }


def root_labels(x: float) -> dict[str, list[str]]:
    xt = torch.tensor(x, requires_grad=True)
    y = torch.sqrt(xt)
    y.backward()
    return {"x": [f"= {fmt(xt)}", f"grad {fmt(xt.grad)}"], "SqrtBackward0": [f"= {fmt(y)}", "grad 1"]}


def labels(widget: Locator) -> dict[str, list[str]]:
    return widget.locator(".vizlib-graph").first.evaluate(LABELS_JS)


def slider(widget: Locator, name: str) -> Locator:
    return widget.locator(".widget-slider").filter(
        has=widget.page.locator(".widget-label", has_text=re.compile(f"^{name}$"))
    )


def press(widget: Locator, name: str, key: str, times: int) -> float:
    """Move slider ``name`` with the keyboard, as a learner can; its new value."""
    s = slider(widget, name)
    handle = s.locator(".noUi-handle").first
    handle.focus()
    before = s.locator(".widget-readout").inner_text()
    for _ in range(times):
        handle.press(key)
    readout = s.locator(".widget-readout")
    expect(readout).not_to_have_text(before, timeout=WAIT_MS)
    return number(readout)


def number(readout: Locator) -> float:
    expect(readout).to_have_text(re.compile(r"\d"), timeout=WAIT_MS)
    return float(readout.text_content().replace("\u2212", "-"))  # d3-format writes a real minus sign


def readouts(widget: Locator, names: str) -> dict[str, float]:
    return {n: number(slider(widget, n).locator(".widget-readout")) for n in names}


def screenshot(page: Page, widget: Locator, path) -> None:
    widget.scroll_into_view_if_needed()
    page.screenshot(path=str(path))
    print(f"screenshot: {path}")


def no_raw_errors(page: Page, errors: list[str]) -> None:
    """No stderr or traceback in any output, no uncaught JavaScript error."""
    expect(page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")).to_have_count(0)
    assert not errors, errors


def test_explore_slider_redraws_values_and_gradients(welcome, tmp_path):
    page, errors = welcome
    explorer = page.locator(".vizlib-explore").first
    expect(explorer.locator(".vizlib-graph svg")).to_be_visible(timeout=WAIT_MS)
    start = readouts(explorer, "xwb")
    assert start == {"x": 2.0, "w": 3.0, "b": 0.0}
    assert labels(explorer) == line_labels(**start)

    x = press(explorer, "x", "ArrowRight", 3)
    assert x == pytest.approx(2.3)
    wait_until(
        lambda: labels(explorer),
        lambda got: got == line_labels(**readouts(explorer, "xwb")),
        "the graph to show x=2.3: grad of w = x, y = w*x + b",
    )
    w = press(explorer, "w", "ArrowLeft", 2)
    assert w < 3.0
    now = readouts(explorer, "xwb")
    got = wait_until(lambda: labels(explorer), lambda got: got == line_labels(**now), f"the graph for {now}")
    assert got["w"][1] == f"grad {format(torch.tensor(now['x']).item(), '.4g')}"  # dy/dw = x
    screenshot(page, explorer, tmp_path / "explore.png")
    no_raw_errors(page, errors)


def test_explore_shows_errors_in_place_and_recovers(welcome, tmp_path):
    page, errors = welcome
    explorer = page.locator(".vizlib-explore").nth(1)
    expect(explorer.locator(".vizlib-graph svg")).to_be_visible(timeout=WAIT_MS)
    assert labels(explorer) == root_labels(1.0)

    assert press(explorer, "x", "ArrowLeft", 3) == -0.5
    error = explorer.locator(".vizlib-error")
    expect(error).to_contain_text("ValueError: root needs x >= 0", timeout=WAIT_MS)
    expect(explorer.locator(".vizlib-graph svg")).to_have_count(0)
    screenshot(page, explorer, tmp_path / "explore-error.png")

    assert press(explorer, "x", "ArrowRight", 2) == 0.5
    expect(explorer.locator(".vizlib-graph svg")).to_be_visible(timeout=WAIT_MS)
    expect(error).to_have_count(0)
    wait_until(lambda: labels(explorer), lambda got: got == root_labels(0.5), "the graph back at x=0.5")
    no_raw_errors(page, errors)


def engine_order() -> list[str]:
    """The order autograd's engine runs y = w*x + b's backward nodes, from hooks on them."""
    leaves = {name: torch.tensor(v, requires_grad=True) for name, v in (("x", 2.0), ("w", 3.0), ("b", 1.0))}
    y = leaves["w"] * leaves["x"] + leaves["b"]
    order: list[str] = []
    seen, todo = set(), [y.grad_fn]
    while todo:
        fn = todo.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        var = getattr(fn, "variable", None)
        name = next(n for n, t in leaves.items() if t is var) if var is not None else type(fn).__name__
        fn.register_prehook(lambda grads, name=name: order.append(name))
        todo += [nxt for nxt, _ in fn.next_functions]
    y.backward()
    return order


def test_replay_play_walks_the_whole_backward_order(welcome, tmp_path):
    page, errors = welcome
    player = page.locator(".vizlib-replay").first
    step = player.locator(".vizlib-replay-step")
    expected = engine_order()
    n = len(expected)
    expect(step).to_have_text(re.compile(f"^step 0/{n}: before backward"), timeout=WAIT_MS)

    player.evaluate(RECORD_STEPS_JS)
    player.locator(".widget-play button").first.click()
    steps = wait_until(
        lambda: page.evaluate("window.replaySteps"),
        lambda seen: bool(seen) and seen[-1][0].startswith(f"step {n}/{n}"),
        "the player to reach the last step",
        timeout_s=n * 5 + 10,
    )
    shown = [s for i, s in enumerate(steps) if i == 0 or s != steps[i - 1]]
    assert [text.split(" — ")[0] for text, _ in shown] == [
        f"step {k}/{n}: {name}" for k, name in enumerate(expected, 1)
    ]
    assert [lit for _, lit in shown] == [[name] for name in expected]
    assert shown[-1][0] == f"step {n}/{n}: x — grad 3 is complete: backward would add it to x.grad"
    screenshot(page, player, tmp_path / "replay.png")
    no_raw_errors(page, errors)


def test_plots_render_as_png(welcome, tmp_path):
    page, errors = welcome
    pngs = page.locator(".jp-OutputArea-output img[src^='data:image/png']")
    expect(pngs).to_have_count(3, timeout=WAIT_MS)  # grad_flow, GradFlowMonitor.plot, tensor_layout
    sizes = pngs.evaluate_all("imgs => imgs.map(i => [i.naturalWidth, i.naturalHeight])")
    assert all(w > 200 and h > 200 for w, h in sizes), sizes
    screenshot(page, pngs.nth(1), tmp_path / "plots.png")
    no_raw_errors(page, errors)
