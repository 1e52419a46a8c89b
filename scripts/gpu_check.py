"""Check the course on this machine: run every chapter, grade every reference solution, and
write a summary. Made for a lab's GPU machines (`make gpu-check`), where the course's own
tests never run (CI has no GPU), but it runs anywhere.

    .venv/bin/python scripts/gpu_check.py                  # everything, results in gpu-check/
    .venv/bin/python scripts/gpu_check.py --only '05*'     # the chapters and solutions matching 05*
    python3 scripts/gpu_check.py --no-sandbox --out DIR    # a machine without bubblewrap

Each chapter runs top to bottom in a fresh kernel, in its own folder, as JupyterLab runs it,
with errors allowed so that every failing cell shows (the stored notebooks are not touched:
outputs are not compared here; on a GPU the GPU cells print what a CPU cannot). The grader
grades solutions/ as it grades a class. The summary says, per chapter, the seconds it took,
every cell that raised, and the cells that skipped a GPU part ("no GPU: skipped ..."); per
solution, each task's points. The exit status is 0 only when no cell raised and every
reference solution got full marks.

Written to --out: summary.json, summary.md (the table to paste into bench/RESULTS.md),
grades.json and the grader's output, and each chapter executed (chapters/NAME.ipynb).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from datetime import date
from pathlib import Path

import nbformat
import torch
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # coursekit, also where the project is not installed

from coursekit.gpu import SKIP_PREFIX  # noqa: E402 - after the path it is found on

CELL_TIMEOUT = 600  # seconds: a GPU machine's first CUDA or Triton call compiles for a while


def machine() -> dict[str, object]:
    """What ran the check: the GPU(s), PyTorch and its CUDA, Python, the CPU."""
    gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return {
        "date": date.today().isoformat(),
        "gpus": gpus,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "cpu": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
    }


def run_chapter(path: Path, out: Path) -> dict[str, object]:
    """Execute one chapter in a fresh kernel, errors allowed; what raised and what skipped."""
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    failure = None
    try:
        client = NotebookClient(
            nb,
            timeout=CELL_TIMEOUT,
            kernel_name="python3",
            allow_errors=True,
            resources={"metadata": {"path": str(path.parent)}},
        )
        client.execute()
    except Exception as error:  # noqa: BLE001 - a dead kernel or a timeout is part of the report
        failure = f"{type(error).__name__}: {str(error)[:500]}"
    seconds = round(time.perf_counter() - start, 1)
    nbformat.write(nb, out / "chapters" / path.name)
    errors, skipped = [], []
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if output.get("output_type") == "error" and "raises-exception" not in cell.metadata.get("tags", []):
                errors.append({"cell": index, "error": f"{output['ename']}: {output['evalue']}"[:600]})
            text = output.get("text", "") if output.get("output_type") == "stream" else ""
            skipped += [line for line in text.splitlines() if line.startswith(SKIP_PREFIX)]
    return {"seconds": seconds, "errors": errors, "skipped": skipped, "failure": failure}


def grade(solutions: list[Path], out: Path, sandbox: bool, jobs: int) -> dict[str, object]:
    """Grade the reference solutions with the course's grader; each task's points."""
    report = out / "grades.json"
    command = [sys.executable, "-m", "grader", "grade", *map(str, solutions), "--report", str(report)]
    command += ["--jobs", str(jobs)] + ([] if sandbox else ["--no-sandbox"])
    with open(out / "grader.txt", "w") as log:
        code = subprocess.run(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT).returncode
    if not report.exists():
        return {"exit_code": code, "submissions": {}, "note": f"no report: see {out / 'grader.txt'}"}
    submissions = {
        Path(entry["file"]).name: {task["task"]: [task["score"], task["points"]] for task in entry["tasks"]}
        for entry in json.loads(report.read_text())["submissions"]
    }
    return {"exit_code": code, "sandbox": sandbox, "submissions": submissions}


def markdown(summary: dict) -> str:
    """The summary as the tables bench/RESULTS.md records."""
    m = summary["machine"]
    gpus = ", ".join(m["gpus"]) or "no GPU"
    lines = [
        f"{m['date']}: {gpus}, PyTorch {m['torch']} (CUDA {m['cuda']}), Python {m['python']}, "
        f"{m['cpu_count']} CPUs; `scripts/gpu_check.py`",
        "",
        "| chapter | seconds | cells that raised | GPU parts skipped |",
        "|---|---|---|---|",
    ]
    for name, chapter in summary["chapters"].items():
        raised = ", ".join(f"{e['cell']} ({e['error'].split(':')[0]})" for e in chapter["errors"]) or "none"
        if chapter["failure"]:
            raised += f"; stopped: {chapter['failure'][:120]}"
        lines.append(f"| {name} | {chapter['seconds']} | {raised} | {len(chapter['skipped'])} |")
    grades = summary["grades"]
    if not grades["submissions"]:
        return "\n".join(lines + ["", "No reference solution graded.", ""])
    lines += ["", f"Reference solutions graded ({'sandboxed' if grades.get('sandbox') else 'unsandboxed'}):", ""]
    lines += ["| solution | points | tasks below full marks |", "|---|---|---|"]
    for name, tasks in grades["submissions"].items():
        got = sum(p for p, _ in tasks.values())
        full = sum(m for _, m in tasks.values())
        short = ", ".join(t for t, (p, m) in tasks.items() if p < m) or "none"
        lines.append(f"| {name} | {got:g}/{full:g} | {short} |")
    return "\n".join(lines) + "\n"


def save(summary: dict, out: Path) -> None:
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    (out / "summary.md").write_text(markdown(summary))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "gpu-check", help="folder for the results")
    parser.add_argument("--only", default="*", help="chapters and solutions whose names match (a glob)")
    parser.add_argument("--no-sandbox", action="store_true", help="grade without bubblewrap")
    parser.add_argument("--jobs", type=int, default=4, help="chapters run (and solutions graded) at once")
    options = parser.parse_args()
    if options.jobs < 1:
        parser.error("--jobs must be at least 1")
    out = options.out.resolve()
    (out / "chapters").mkdir(parents=True, exist_ok=True)
    chapters = sorted((ROOT / "course").glob(f"{options.only}.ipynb"))
    solutions = sorted((ROOT / "solutions").glob(f"{options.only}.ipynb"))
    if not chapters and not solutions:
        parser.error(f"no chapter or solution matches {options.only!r}")
    summary: dict = {"machine": machine(), "chapters": {}, "grades": {"submissions": {}}}
    print("machine:", summary["machine"], flush=True)
    with ThreadPoolExecutor(max_workers=options.jobs) as pool:
        graded = pool.submit(grade, solutions, out, not options.no_sandbox, options.jobs) if solutions else None
        runs = {pool.submit(run_chapter, path, out): path.stem for path in chapters}
        for run in as_completed(runs):  # each result saved as it comes: a run cut short keeps them
            summary["chapters"][runs[run]] = result = run.result()
            print(f"{runs[run]}: {result['seconds']} s, {len(result['errors'])} cells raised", flush=True)
            save(summary, out)
        if graded is not None:
            summary["grades"] = graded.result()
    summary["chapters"] = dict(sorted(summary["chapters"].items()))
    save(summary, out)
    print(markdown(summary))
    chapters_ok = all(not c["errors"] and not c["failure"] for c in summary["chapters"].values())
    grades = summary["grades"]["submissions"].values()
    full_marks = all(p == m for tasks in grades for p, m in tasks.values()) and len(grades) == len(solutions)
    return 0 if chapters_ok and full_marks else 1


if __name__ == "__main__":
    sys.exit(main())
