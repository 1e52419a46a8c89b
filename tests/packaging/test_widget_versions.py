"""vizlib's live views on ipywidgets 8 (the course's pin) and 7.7 (Colab's), kernel-side:
build vz.explore and vz.replay, move their sliders, check the pictures and texts change
as autograd says, and that a notebook stores the same bundle (widget view, static
picture, text summary) under both versions.

ipywidgets 8 is the project's venv; the 7.7 venv is made in seconds (conftest.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from harness.paths import REPO

PROBE = Path(__file__).with_name("views_probe.py")
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def probe(python: Path, cwd: Path) -> dict:
    done = subprocess.run([str(python), str(PROBE)], capture_output=True, text=True, cwd=cwd, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def facts_8(tmp_path_factory):
    return probe(Path(sys.executable), tmp_path_factory.mktemp("ipywidgets8"))


@pytest.fixture(scope="module")
def facts_7_7(ipywidgets_7_7, tmp_path_factory):
    """The views run in a venv with ipywidgets 7.7 and this checkout's vizlib (conftest.py)."""
    return probe(ipywidgets_7_7, tmp_path_factory.mktemp("ipywidgets7"))


@pytest.fixture(params=["8", "7.7"])
def facts(request):
    return request.param, request.getfixturevalue({"8": "facts_8", "7.7": "facts_7_7"}[request.param])


def fmt(value: torch.Tensor) -> str:
    return format(value.item(), ".4g")


def test_views_run_on_this_ipywidgets_and_this_vizlib(facts):
    version, got = facts
    assert got["ipywidgets"].startswith(f"{version}.")
    assert Path(got["vizlib"]) == REPO / "vizlib" / "__init__.py"


def test_explore_slider_redraws_with_autograds_numbers(facts):
    _, got = facts
    ex = got["explore"]
    assert ex["descriptions"] == ["x", "w"]
    x, w = torch.tensor(1.0, requires_grad=True), torch.tensor(0.5, requires_grad=True)
    torch.tanh(w * x).backward()
    assert f"x: 1, grad {fmt(x.grad)}" in ex["graphs"][1]
    assert f"w: 0.5, grad {fmt(w.grad)}" in ex["graphs"][1]
    assert "x: 2," in ex["graphs"][0]
    before, after = ex["pictures"]
    assert "<svg" in before and "<svg" in after and before != after


def test_explore_shows_an_error_in_place_and_recovers(facts):
    _, got = facts
    error, back = got["explore"]["root_pictures"]
    assert "vizlib-error" in error and "ValueError: root needs x &gt;= 0" in error
    assert "<svg" in back and "vizlib-error" not in back


def test_replay_steps_through_backward(facts):
    _, got = facts
    rp = got["replay"]
    assert rp["play"] == ["Play", 5]
    assert rp["steps"][0].startswith("step 0/5: before backward")
    assert rp["steps"][-1] == "step 5/5: x — grad 3 is complete: backward would add it to x.grad"
    assert len(set(rp["steps"])) == 6 and len(set(rp["pictures"])) == 6


@pytest.mark.parametrize("view, note", [("explore", "vz.explore(<lambda>): "), ("replay", "vz.replay: 5 backward")])
def test_displayed_bundle_holds_widget_picture_and_summary(facts, view, note):
    _, got = facts
    [bundle] = got[view]["shown"]
    assert set(bundle) == {"text/plain", "image/svg+xml", WIDGET_VIEW}
    assert bundle["text/plain"].startswith(note)
    assert "<svg" in bundle["image/svg+xml"]
    assert bundle[WIDGET_VIEW]["model_id"] and bundle[WIDGET_VIEW]["version_major"] == 2


def test_views_are_the_same_on_7_7_as_on_8(facts_8, facts_7_7):
    """Everything the views show, except the widgets' random model ids."""

    def shown_without_ids(facts: dict) -> dict:
        views = {name: dict(facts[name]) for name in ("explore", "replay")}
        for view in views.values():
            view["shown"] = [{k: v for k, v in b.items() if k != WIDGET_VIEW} for b in view["shown"]]
        return views

    assert shown_without_ids(facts_7_7) == shown_without_ids(facts_8)
