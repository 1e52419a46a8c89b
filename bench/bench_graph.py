"""vizlib against torchviz on the same models: capture time, render time, size, memory.

For each model (coursekit/models.py) and each tool, a fresh Python process builds the model
and its batch, runs one plain forward + backward (warm-up, and the memory baseline), then
times the tool once. The runs go in rounds, every tool once per round, so that a change in
the machine's load (it is shared) reaches all tools alike. vizlib's cost relative to plain is
the median over its runs of the call → SVG time over a second plain forward + backward timed
just before it in the same process:

- plain:     forward + torch.autograd.grad over the parameters; what any tool must at
             least spend, since drawing a model's graph means running it;
- torchviz:  forward + make_dot(loss, params) (capture), then `dot -Tsvg` on its source;
- vizlib:    vz.graph(model, *batch) in its default view (capture), then g.to_svg();
- vizlib full: the same with depth=None, max_nodes=None: every op (GPT-48/96).

Memory: ru_maxrss (the process's peak resident memory) after the tool minus ru_maxrss after
the warm-up, i.e. how far the tool pushes the peak above what a plain forward + backward of
the same model already needed; `dot` runs in its own process and is not counted. A fresh
process per run keeps one run's peak from hiding the next one's. Writes
bench/results/graph.md.

    .venv/bin/python -m bench.bench_graph [--cases MLP GPT-12 ...] [--repeats 3]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable

import torch

from bench.report import median, run_dot, table, write_section
from coursekit.models import GPTConfig, make_cnn, make_gpt, make_mlp

REPEATS = 3
DOT_LIMIT = 300.0  # seconds before torchviz's `dot` run is stopped

CASES: dict[str, Callable[[], tuple[torch.nn.Module, tuple]]] = {
    "MLP": make_mlp,
    "CNN": make_cnn,
    "GPT-12": lambda: make_gpt(GPTConfig(n_layer=12)),
    "GPT-48": lambda: make_gpt(GPTConfig(n_layer=48)),
    "GPT-96": lambda: make_gpt(GPTConfig(n_layer=96)),
}
TOOLS = ("plain", "torchviz", "vizlib", "vizlib full")
FULL_ONLY_FOR = ("GPT-48", "GPT-96")  # the default view is the picture for the small ones


def forward_backward(model: torch.nn.Module, batch: tuple) -> None:
    """A plain training step's autograd work, without touching any .grad."""
    loss = model(*batch)
    torch.autograd.grad(loss, list(model.parameters()))


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def one_run(case: str, tool: str) -> dict:
    """Time ``tool`` once on ``case``, in this (fresh) process."""
    # Imported before the baseline: their import time and memory are not the call's.
    from torchviz import make_dot

    import vizlib as vz

    # vizlib's first call in a process pays one-time costs (torch imports sympy the first
    # time autograd.grad gets explicit grad_outputs; the first drawing imports the renderer);
    # they are measured here, not below.
    load = os.getloadavg()[0]
    start, before = time.perf_counter(), peak_mb()
    vz.graph(lambda x: (x * x).sum(), torch.ones(2)).to_svg()
    first_call, first_call_mb = time.perf_counter() - start, peak_mb() - before

    model, batch = CASES[case]()
    forward_backward(model, batch)
    # The yardstick for vizlib's cost, in this process: a second plain forward + backward.
    start = time.perf_counter()
    forward_backward(model, batch)
    plain_here = time.perf_counter() - start
    gc.collect()
    baseline = peak_mb()
    start = time.perf_counter()
    if tool == "plain":
        forward_backward(model, batch)
        captured = time.perf_counter()
        render, nodes, edges, dot_cpu, saved_mb = 0.0, 0, 0, 0.0, 0.0
    elif tool == "torchviz":
        source = make_dot(model(*batch), params=dict(model.named_parameters())).source
        captured = time.perf_counter()
        run = run_dot(source, ["-Tsvg"], DOT_LIMIT)
        if run.output is None:
            return {"stopped": DOT_LIMIT}
        render, dot_cpu, saved_mb = run.wall, run.cpu, 0.0
        edges = sum("->" in line for line in source.splitlines())
        nodes = sum("[label=" in line and "->" not in line for line in source.splitlines())
    else:
        if tool == "vizlib full":
            g = vz.graph(model, *batch, depth=None, max_nodes=None)
        else:
            g = vz.graph(model, *batch)
        captured = time.perf_counter()
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        g.to_svg()
        render = time.perf_counter() - captured
        done = resource.getrusage(resource.RUSAGE_CHILDREN)
        dot_cpu = done.ru_utime - children.ru_utime + done.ru_stime - children.ru_stime
        nodes, edges, saved_mb = len(g.nodes), len(g.edges), g.saved_bytes / 2**20
    return {
        "capture": captured - start,
        "render": render,
        "dot_cpu": dot_cpu,
        "nodes": nodes,
        "edges": edges,
        "saved_mb": saved_mb,
        "extra_mb": max(peak_mb() - baseline, 0.0),
        "peak_mb": peak_mb(),
        "first_call": first_call,
        "first_call_mb": first_call_mb,
        "load": load,
        "plain_here": plain_here,
    }


def run_once(case: str, tool: str) -> dict:
    """Time ``tool`` once on ``case``, in a fresh process."""
    proc = subprocess.run(
        [sys.executable, "-m", "bench.bench_graph", "--one", case, tool], capture_output=True, text=True
    )
    if proc.returncode:
        raise RuntimeError(f"{case} / {tool} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.splitlines()[-1])


def rounds(case: str, tools: list[str], repeats: int) -> dict[str, list[dict]]:
    """``repeats`` rounds, each timing every tool once in turn; a tool whose run was
    stopped is not run again."""
    out: dict[str, list[dict]] = {tool: [] for tool in tools}
    for _ in range(repeats):
        for tool in tools:
            if not any("stopped" in r for r in out[tool]):
                out[tool].append(run_once(case, tool))
    return out


def vs_plain(vizlib: list[dict]) -> list[float]:
    """Each run's call → SVG time over a plain forward + backward timed just before it, in
    the same process."""
    return [(v["capture"] + v["render"]) / v["plain_here"] for v in vizlib]


def summarize(rs: list[dict]) -> dict:
    if any("stopped" in r for r in rs):
        return {"stopped": rs[-1]["stopped"]}
    keys = (
        "capture",
        "render",
        "dot_cpu",
        "saved_mb",
        "extra_mb",
        "peak_mb",
        "first_call",
        "first_call_mb",
        "load",
        "plain_here",
    )
    s = {k: median([r[k] for r in rs]) for k in keys}
    s["total"] = median([r["capture"] + r["render"] for r in rs])
    s["nodes"], s["edges"] = rs[0]["nodes"], rs[0]["edges"]
    return s


def target_rows(res: dict) -> list[list[str]]:
    """The issue's targets: measured value, met or missed, by how much, and why."""
    rows = []

    def add(name: str, key: tuple[str, str], field: str, limit: float, unit: str, why: Callable[[dict], str]):
        s = res.get(key)
        if s is None:
            rows.append([name, "not measured (case not run)", "—", ""])
            return
        if "stopped" in s:
            rows.append([name, f"> {s['stopped']:.0f} s (stopped)", "missed", why(s)])
            return
        value = s[field]
        met = value <= limit
        verdict = "met" if met else f"missed by {value - limit:.2f} {unit} ({value / limit:.1f}× the target)"
        rows.append([name, f"{value:.2f} {unit}", verdict, "" if met else why(s)])

    def floor_reason(case: str) -> Callable[[dict], str]:
        def why(s: dict) -> str:
            plain = res.get((case, "plain"))
            floor = f"a plain forward+backward of the model takes {plain['capture']:.2f} s here; " if plain else ""
            return (
                f"{floor}recording took {s['capture']:.2f} s and drawing {s['render']:.2f} s "
                f"(`dot` CPU {s['dot_cpu']:.2f} s)"
            )

        return why

    def add_ratio(name: str, case: str, limit: float) -> None:
        s = res.get((case, "vizlib"))
        if s is None:
            rows.append([name, "not measured (case not run)", "—", ""])
            return
        ratio = median(s["vs_plain"])
        each = ", ".join(f"{r:.2f}" for r in s["vs_plain"])
        measured = f"{ratio:.2f}× (runs: {each}; call → SVG {s['total']:.2f} s, plain {s['plain_here']:.2f} s)"
        met = ratio <= limit
        why = (
            f"recording took {s['capture']:.2f} s and drawing {s['render']:.2f} s (`dot` CPU {s['dot_cpu']:.2f} s); "
            f"load average {s['load']:.1f}"
        )
        rows.append([name, measured, "met" if met else f"missed by {ratio - limit:.2f}×", "" if met else why])

    def render_reason(s: dict) -> str:
        loaded = " (wall well above `dot`'s CPU time: the machine was busy)" if s["render"] > 1.5 * s["dot_cpu"] else ""
        return f"`dot` used {s['dot_cpu']:.2f} s CPU for {s['nodes']} nodes{loaded}"

    add(
        "GPT-12 recorded with values and gradients, default view, call → SVG ≤ 0.5 s",
        ("GPT-12", "vizlib"),
        "total",
        0.5,
        "s",
        floor_reason("GPT-12"),
    )
    add_ratio(
        "GPT-12 recorded with values and gradients, default view, call → SVG ≤ 1.2× a plain forward+backward, "
        "same process (median over runs of the two times' ratio)",
        "GPT-12",
        1.2,
    )
    add(
        "GPT-48 full op-level graph → SVG (g.to_svg()) ≤ 1 s",
        ("GPT-48", "vizlib full"),
        "render",
        1.0,
        "s",
        render_reason,
    )
    add(
        "GPT-96 full op-level graph → SVG (g.to_svg()) ≤ 3 s",
        ("GPT-96", "vizlib full"),
        "render",
        3.0,
        "s",
        render_reason,
    )
    add(
        "extra peak memory while recording GPT-12 ≤ 50 MB",
        ("GPT-12", "vizlib"),
        "extra_mb",
        50.0,
        "MB",
        lambda s: (
            f"recording raised the peak {s['extra_mb']:.0f} MB above a plain forward+backward, "
            f"in which autograd saved {s['saved_mb']:.0f} MB of tensors for backward"
        ),
    )
    return rows


def first_call_note(res: dict) -> str:
    """The one-time cost of vizlib's first call in a process, kept out of the table."""
    firsts = [s for s in res.values() if "first_call" in s]
    if not firsts:
        return ""
    return (
        f"Not in the table: vizlib's first call in a fresh process (on a 2-element function) takes "
        f"{median([s['first_call'] for s in firsts]):.2f} s and raises the peak by "
        f"{median([s['first_call_mb'] for s in firsts]):.0f} MB, once: torch imports sympy the first "
        "time torch.autograd.grad is given explicit grad_outputs. Every run above pays it before "
        "its baseline."
    )


def main(cases: list[str], repeats: int, command: str) -> None:
    res, loads = {}, []
    for case in cases:
        tools = [t for t in TOOLS if t != "vizlib full" or case in FULL_ONLY_FOR]
        runs = rounds(case, tools, repeats)
        for tool in tools:
            res[(case, tool)] = summarize(runs[tool])
            loads += [r["load"] for r in runs[tool] if "load" in r]
            print(case, tool, res[(case, tool)], flush=True)
        res[(case, "vizlib")]["vs_plain"] = vs_plain(runs["vizlib"])
    rows = []
    for (case, tool), s in res.items():
        if "stopped" in s:
            rows.append([case, tool, "", f"> {s['stopped']:.0f} (stopped)", "", "", "", ""])
            continue
        render = "" if tool == "plain" else f"{s['render']:.2f} ({s['dot_cpu']:.2f})"
        counts = "" if tool == "plain" else f"{s['nodes']} / {s['edges']}"
        rows.append(
            [
                case,
                tool,
                f"{s['capture']:.2f}",
                render,
                f"{s['total']:.2f}",
                counts,
                f"{s['extra_mb']:.0f}",
                f"{s['peak_mb']:.0f}",
            ]
        )
    body = "\n\n".join(
        [
            "Targets (from the issue):",
            table(["target", "measured", "result", "why (when missed)"], target_rows(res)),
            "All figures:",
            table(
                [
                    "model",
                    "tool",
                    "capture s",
                    "render s (`dot` CPU s)",
                    "total s",
                    "nodes / edges",
                    "extra peak MB",
                    "process peak MB",
                ],
                rows,
            ),
            "capture: from the call to a graph in memory (the forward pass included; for torchviz, the "
            "forward and make_dot; for plain, forward + torch.autograd.grad). render: graph to SVG text, "
            "with the CPU time of the `dot` process in parentheses (wall time above it means the machine "
            "was busy). extra peak MB: how far the run raised the process's peak resident memory above a "
            "plain forward + backward of the same model in the same process.",
            first_call_note(res),
        ]
    )
    write_section(
        "graph",
        "vizlib vs torchviz: capture and render",
        f"Median of {repeats} rounds; each round runs every tool once in turn, each run in a fresh "
        "process after one warm-up forward + backward (see bench/README.md). Load average (1 min) at "
        f"the start of the runs: median {median(loads):.1f}, {min(loads):.1f} to {max(loads):.1f} "
        f"(2 shared cores: above 1, other work was running). Command: `{command}`.",
        body,
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", nargs="+", choices=list(CASES), default=list(CASES))
    parser.add_argument("--repeats", type=int, default=REPEATS, help="rounds of runs (default %(default)s)")
    parser.add_argument("--one", nargs=2, metavar=("CASE", "TOOL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_run(*args.one)))
    else:
        main(args.cases, args.repeats, " ".join([".venv/bin/python -m bench.bench_graph", *sys.argv[1:]]))
