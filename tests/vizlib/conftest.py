"""Shared fixtures: DOT read by Graphviz, and a count of the Graphviz runs that the layout
cache makes. (Autograd's reference numbers are in ``autograd_ref.py``, a plain module.)"""

from __future__ import annotations

import json
import subprocess

import pytest

from vizlib.render import svg_patch
from vizlib.render.graphviz import dot_to


def _dot_json(dot_source: str) -> tuple[dict[str, dict], list[tuple[str, str, dict]]]:
    proc = subprocess.run(["dot", "-Tjson"], input=dot_source, capture_output=True, text=True, check=True)
    data = json.loads(proc.stdout)
    objects = data.get("objects", [])
    nodes = {o["name"]: o for o in objects if "nodes" not in o}  # subgraphs list their nodes
    by_gvid = {o["_gvid"]: o["name"] for o in objects}
    edges = [(by_gvid[e["tail"]], by_gvid[e["head"]], e) for e in data.get("edges", [])]
    return nodes, edges


@pytest.fixture
def dot_json():
    """Parse DOT text with Graphviz itself: ``(nodes by name -> attrs, [(tail, head, attrs)])``."""
    return _dot_json


@pytest.fixture
def dot_runs(monkeypatch):
    """Counts the Graphviz runs the layout cache makes."""
    runs = []

    def counting(source, fmt_name):
        runs.append(fmt_name)
        return dot_to(source, fmt_name)

    monkeypatch.setattr(svg_patch, "dot_to", counting)
    return runs
