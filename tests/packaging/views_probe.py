"""Run vz.explore and vz.replay kernel-side and print what happened, as JSON.

Run by tests/packaging/test_widget_versions.py under each ipywidgets version it checks:
build each view, move its sliders as the front-end would (by setting their values), and
record the pictures, texts and display bundles, for the test to judge.
"""

from __future__ import annotations

import json

import ipywidgets
import torch
from IPython.core.interactiveshell import InteractiveShell
from IPython.display import display
from IPython.utils.capture import capture_output

import vizlib as vz


def shown(widget: ipywidgets.Widget) -> list[dict]:
    """What a notebook would store when the widget is displayed."""
    with capture_output() as out:
        display(widget)
    return [{key: value for key, value in o.data.items()} for o in out.outputs]


def root(x):
    if x < 0:
        raise ValueError("root needs x >= 0")
    return torch.sqrt(x)


def explore_facts() -> dict:
    explorer = vz.explore(lambda x, w: torch.tanh(w * x), x=2.0, w=0.5)
    x_slider, w_slider, picture = explorer.children
    facts: dict = {"descriptions": [x_slider.description, w_slider.description]}
    facts["pictures"] = [picture.value]
    facts["graphs"] = [repr(explorer.graph)]
    x_slider.value = 1.0
    facts["pictures"].append(picture.value)
    facts["graphs"].append(repr(explorer.graph))
    facts["shown"] = shown(explorer)

    roots = vz.explore(root, x=1.0)
    slider, picture = roots.children
    facts["root_pictures"] = []
    for x in (-0.5, 0.5):
        slider.value = x
        facts["root_pictures"].append(picture.value)
    return facts


def replay_facts() -> dict:
    player = vz.replay(vz.graph(lambda x, w, b: w * x + b, 2.0, 3.0, 1.0))
    controls, text, picture = player.children
    play, step = controls.children
    facts: dict = {"play": [type(play).__name__, play.max], "steps": [], "pictures": []}
    for k in range(step.max + 1):
        step.value = k
        facts["steps"].append(text.value)
        facts["pictures"].append(picture.value)
    facts["shown"] = shown(player)
    return facts


if __name__ == "__main__":
    InteractiveShell.instance()  # a shell for display() to publish to, as in a kernel
    print(
        json.dumps(
            {
                "ipywidgets": ipywidgets.__version__,
                "vizlib": vz.__file__,
                "explore": explore_facts(),
                "replay": replay_facts(),
            }
        )
    )
