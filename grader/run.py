"""Run nbval on grading notebooks in a pytest subprocess and collect its verdicts.

The subprocess is isolated from any project's pytest configuration (its own empty
pytest.ini in a temporary folder, no plugin autoloading, only nbval and the grader's
recording plugin), gets a sanitize file of its own (the rules shipped with the grader
plus one, see sanitize_rules), and is killed, kernels included, if it outlives a
generous deadline. Whatever it leaves behind (processes that learners' code started and
that outlived their kernel) is killed when it ends: see processes.py.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import nbformat
import psutil
from nbformat import NotebookNode

from grader.errors import GraderError
from grader.notebook import COURSE_ROOT
from grader.processes import MARKER, kill_marked
from grader.records import CellRecord, RecordLine

SANITIZE = Path(__file__).with_name("nbval-sanitize.cfg")  # package data


def sanitize_rules(notebooks: list[NotebookNode]) -> str:
    """The grader's sanitize rules plus one: drop every line of output that no check
    prints, so a learner's debug print inside a function the check calls costs nothing
    while the check's own line ('Exercise 1.1 passed') is still compared."""
    rules = SANITIZE.read_text(encoding="utf-8")
    patterns = re.findall(r"^regex: (.*)$\n^replace: (.*)$", rules, flags=re.MULTILINE)
    kept = set()
    for cell in (cell for nb in notebooks for cell in nb.cells):
        if cell.cell_type != "code" or "nbval-ignore-output" in cell.metadata.get("tags", []):
            continue
        for output in cell.outputs:
            texts = [output.get("text", "")] + [v for v in output.get("data", {}).values() if isinstance(v, str)]
            for text in texts:
                for regex, replace in patterns:
                    text = re.sub(regex, replace, text)
                kept.update(text.split("\n"))
    if not kept:
        return rules
    alternatives = "|".join(sorted(re.escape(line) for line in kept))
    return (
        rules + "\n[grader: keep only lines that a check prints]\n"
        f"regex: (?m)^(?!(?:{alternatives})$).*(?:\\n|$)\nreplace: \n"
    )


def run_nbval(notebooks: dict[str, NotebookNode], cell_timeout: float) -> dict[str, dict[int, CellRecord]]:
    """Run nbval on the notebooks (a fresh kernel each), isolated from any project's
    pytest configuration. Returns notebook name -> nbval cell number -> the plugin's
    record; a notebook the run did not reach is absent."""
    missing = [name for name in ("pytest", "nbval") if importlib.util.find_spec(name) is None]
    if missing:
        raise GraderError(
            f"grading runs nbval, but {' and '.join(missing)} is not installed here: "
            "`make lab` or `make test` installs them (or pip install -e '.[course]')."
        )
    with tempfile.TemporaryDirectory(prefix="grader-") as tmp:
        folder = Path(tmp)
        paths = []
        for name, nb in notebooks.items():
            paths.append(folder / f"{name}.ipynb")
            nbformat.write(nb, paths[-1])
        sanitize, results = folder / "sanitize.cfg", folder / "results.jsonl"
        sanitize.write_text(sanitize_rules(list(notebooks.values())), encoding="utf-8")
        (folder / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        command = [
            sys.executable,
            "-m",
            "pytest",
            *map(str, paths),
            "-q",
            "-c",
            str(folder / "pytest.ini"),
            "--rootdir",
            str(folder),
            "-o",
            "addopts=",
            "-p",
            "no:cacheprovider",
            "-p",
            "nbval.plugin",
            "-p",
            "grader.nbval_plugin",
            "--nbval",
            "--nbval-current-env",
            "--nbval-sanitize-with",
            str(sanitize),
            "--nbval-cell-timeout",
            str(cell_timeout),
            "--grader-results",
            str(results),
        ]
        env = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_")}
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        env[MARKER] = run_id = uuid.uuid4().hex  # inherited by the kernels and all they start
        # The subprocess and its kernels import this very grader (plugin, output guard).
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(COURSE_ROOT), env.get("PYTHONPATH")]))
        log_path = folder / "pytest.log"
        code_cells = sum(cell.cell_type == "code" for nb in notebooks.values() for cell in nb.cells)
        # A backstop only: the plugin itself ends runs whose kernel is lost.
        deadline = code_cells * (cell_timeout + 60) + 60 * (1 + len(notebooks))
        with log_path.open("w") as log:
            process = subprocess.Popen(
                command, cwd=folder, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
            try:
                process.wait(timeout=deadline)
            except subprocess.TimeoutExpired:
                _kill_tree(process)
            finally:
                kill_marked(run_id)
        lines = results.read_text(encoding="utf-8").splitlines() if results.exists() else []
        records: dict[str, dict[int, CellRecord]] = {}
        for text in lines:
            line: RecordLine = json.loads(text)  # written by nbval_plugin.py
            cells = records.setdefault(Path(line["file"]).stem, {})
            if line["cell"] not in cells or "fatal" in line:
                cells[line["cell"]] = line
        if not records:
            output = log_path.read_text(encoding="utf-8", errors="replace")[-3000:]
            raise GraderError(f"nbval did not run the notebooks (pytest exit code {process.returncode}):\n{output}")
        return records


def _kill_tree(process: subprocess.Popen[bytes]) -> None:
    """Kill pytest and its kernels (which run in sessions of their own)."""
    children = psutil.Process(process.pid).children(recursive=True)
    os.killpg(process.pid, signal.SIGKILL)
    for child in children:
        try:
            child.kill()
        except psutil.NoSuchProcess:
            pass
    process.wait()
