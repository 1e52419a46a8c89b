"""Run nbval on a grading notebook in a pytest subprocess and collect its verdicts.

The subprocess is isolated from any project's pytest configuration (its own empty
pytest.ini in a temporary folder, no plugin autoloading, only nbval and the grader's
recording plugin), gets a sanitize file of its own (the rules shipped with the grader
plus one, see sanitize_rules), and is killed, kernels included, if it outlives a
generous deadline. Its kernel runs in a sandbox (sandbox.py) unless grading was told
--no-sandbox; the subprocess, its folder and the records it writes stay outside. Whatever
the run leaves behind is killed when it ends: the sandbox's control group, and the
processes that carry the run's marker (processes.py: all there is without a sandbox).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import uuid
from pathlib import Path

import nbformat
import psutil
from nbformat import NotebookNode

from grader.host.errors import GraderError
from grader.host.notebook import COURSE_ROOT
from grader.host.processes import MARKER, kill_marked
from grader.host.records import CellRecord, RecordLine
from grader.host.sandbox import Cgroup, KernelBox, Sandbox

SANITIZE = Path(__file__).with_name("nbval-sanitize.cfg")  # package data
# The nbval processes running now (several grading threads start them), so that an
# interrupted grading can end them all at once (stop_all).
_running: set[subprocess.Popen[bytes]] = set()
_lock = threading.Lock()
_stopped = threading.Event()


def sanitize_rules(notebooks: list[NotebookNode]) -> str:
    """The grader's sanitize rules plus one: keep of a cell's output only the lines that
    checks print ('Exercise 1.1 passed'), wherever they appear, so a learner's debug print
    inside a function the check calls costs nothing (a blank line, text printed with
    ``end="; "`` that the check's line is glued to, a background thread's output) while the
    check's own line is still compared: it must appear, and exactly as often as the
    instructor's run printed it (a learner's code printing it too fails the check)."""
    rules = SANITIZE.read_text(encoding="utf-8")
    patterns = re.findall(r"^regex: (.*)$\n^replace: (.*)$", rules, flags=re.MULTILINE)
    kept: set[str] = set()
    for cell in (cell for nb in notebooks for cell in nb.cells):
        if cell.cell_type != "code" or "nbval-ignore-output" in cell.metadata.get("tags", []):
            continue
        for output in cell.outputs:
            texts = [output.get("text", "")] + [v for v in output.get("data", {}).values() if isinstance(v, str)]
            for text in texts:
                for regex, replace in patterns:
                    text = re.sub(regex, replace, text)
                kept.update(line for line in text.split("\n") if line.strip())
    if not kept:
        return rules
    return (
        rules + "\n[grader: keep only the lines that checks print, wherever they appear]\n"
        f"regex: {keep_only(kept)}\nreplace: \\1\n"
    )


def keep_only(lines: set[str]) -> str:
    """A regex that, replaced by ``\\1``, leaves of a text only its occurrences of ``lines``,
    in order: each occurrence is group 1; anything else is one character and the run after it
    that cannot start a line (so a long output costs one match per possible start, not per
    character). The longest lines come first, so none is cut short by another it starts with."""
    alternatives = "|".join(re.escape(line) for line in sorted(lines, key=lambda line: (-len(line), line)))
    starts = "".join(sorted({re.escape(line[0]) for line in lines}))
    return f"(?s)({alternatives})|.[^{starts}]*"


def run_nbval(
    name: str, nb: NotebookNode, cell_timeout: float, sandbox: Sandbox | None = None, time_limit: float | None = None
) -> dict[int, CellRecord]:
    """Run nbval on one grading notebook in a fresh kernel (in its own sandbox, unless
    ``sandbox`` is None: --no-sandbox), isolated from any project's pytest configuration.
    Returns nbval's cell number -> the plugin's record, for the cells the run reached.

    One nbval process per notebook: whatever a submission does to its run (kills its
    kernel, floods it with output) ends that run only, and grade.py runs several at once.
    ``time_limit``: the seconds the submission has left; the run is killed then, and the
    cells it did not record are for grade.py to report."""
    _require_nbval()
    if _stopped.is_set():
        raise GraderError("grading was stopped")
    with tempfile.TemporaryDirectory(prefix="grader-") as tmp:
        folder = Path(tmp)
        path = folder / f"{name}.ipynb"
        nbformat.write(nb, path)
        sanitize, results = folder / "sanitize.cfg", folder / "results.jsonl"
        sanitize.write_text(sanitize_rules([nb]), encoding="utf-8")
        (folder / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        run_id = uuid.uuid4().hex
        box, group, options = _sandbox_options(sandbox, folder, run_id)
        command = _command(path, folder, sanitize, results, cell_timeout, options)
        env = _environment(run_id)
        log_path = folder / "pytest.log"
        code_cells = sum(cell.cell_type == "code" for cell in nb.cells)
        # A backstop only: the plugin itself ends runs whose kernel is lost.
        deadline = code_cells * (cell_timeout + 60) + 120
        if time_limit is not None:
            deadline = min(deadline, time_limit)
        try:
            returncode = _run(command, folder, env, log_path, deadline)
        finally:
            _clean_up(run_id, folder, box, group)
        if _stopped.is_set():
            raise GraderError("grading was stopped")
        return _read_records(results, returncode, log_path)


def _require_nbval() -> None:
    """Grading needs pytest and nbval, which only the course's extras install: say which."""
    missing = [module for module in ("pytest", "nbval") if importlib.util.find_spec(module) is None]
    if missing:
        raise GraderError(
            f"grading runs nbval, but {' and '.join(missing)} is not installed here: "
            "`make lab` or `make test` installs them (or pip install -e '.[course]')."
        )


def _sandbox_options(
    sandbox: Sandbox | None, folder: Path, run_id: str
) -> tuple[KernelBox | None, Cgroup | None, list[str]]:
    """The kernel's sandbox for this run (none with --no-sandbox), its control group, and
    the option that hands it to the plugin, which starts the kernel inside it."""
    if sandbox is None:
        return None, None, []
    box, group = sandbox.box(folder, run_id)
    (folder / "sandbox.json").write_text(json.dumps(box), encoding="utf-8")
    return box, group, ["--grader-sandbox", str(folder / "sandbox.json")]


def _command(
    path: Path, folder: Path, sanitize: Path, results: Path, cell_timeout: float, options: list[str]
) -> list[str]:
    """pytest with nbval and the recording plugin only, configured by the run's own empty
    pytest.ini so no project's settings (addopts, plugins, a cache) reach the run."""
    return [
        sys.executable,
        "-c",
        PYTEST,
        str(path),
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
        "grader.plugin.recorder",
        "--nbval",
        "--nbval-current-env",
        "--nbval-sanitize-with",
        str(sanitize),
        "--nbval-cell-timeout",
        str(cell_timeout),
        "--grader-results",
        str(results),
        *options,
    ]


def _environment(run_id: str) -> dict[str, str]:
    """The grader's environment less pytest's own variables, with plugin autoloading off,
    the run's marker (so whatever it starts can be found and killed) and this grader
    importable."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_")}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    env[MARKER] = run_id  # inherited by the kernels and all they start (also set in a sandbox)
    # The subprocess and its kernels import this very grader (plugin, output guard).
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(COURSE_ROOT), env.get("PYTHONPATH")]))
    return env


def _run(command: list[str], folder: Path, env: dict[str, str], log_path: Path, deadline: float) -> int | None:
    """Run pytest to its end (or kill it, kernels included, past the deadline), registered in
    _running meanwhile so that stop_all can end it; its exit status."""
    with log_path.open("w") as log, _lock:
        process = subprocess.Popen(
            command, cwd=folder, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        _running.add(process)
    try:
        process.wait(timeout=deadline)
    except subprocess.TimeoutExpired:
        _kill_tree(process)
    finally:
        with _lock:
            _running.discard(process)
    return process.returncode


def _clean_up(run_id: str, folder: Path, box: KernelBox | None, group: Cgroup | None) -> None:
    """Nothing of the run outlives it: the sandbox's processes (its control group), and
    anything else that carries the run's marker (all of it, unsandboxed)."""
    if group is not None:
        group.remove()
    kill_marked(run_id)
    if box is not None and not Path(box["sockets"]).is_relative_to(folder):
        shutil.rmtree(box["sockets"], ignore_errors=True)


def _read_records(results: Path, returncode: int | None, log_path: Path) -> dict[int, CellRecord]:
    """The plugin's record per cell (a cell's fatal record wins over its first); a run that
    recorded nothing because pytest itself failed is an error quoting pytest's log."""
    lines = results.read_text(encoding="utf-8").splitlines() if results.exists() else []
    records: dict[int, CellRecord] = {}
    for text in lines:
        line: RecordLine = json.loads(text)  # written by plugin/recorder.py
        if line["cell"] not in records or "fatal" in line:
            records[line["cell"]] = line
    if not records and returncode in (2, 4, 5):  # interrupted, a usage error, nothing collected
        output = log_path.read_text(encoding="utf-8", errors="replace")[-3000:]
        raise GraderError(f"nbval did not run the notebook (pytest exit code {returncode}):\n{output}")
    return records


# pytest, started without the IRI grammar that would cost every nbval start 1.4 s (see
# grader/host/__init__.py): the package is imported before pytest loads nbval.
PYTEST = "import sys, grader.host, pytest; sys.exit(pytest.main())"


def stop_all() -> None:
    """End every nbval run now and start no more in this process (grading was interrupted,
    or a run failed in a way that stops grading): each run's own cleanup then removes its
    sandbox."""
    _stopped.set()
    with _lock:
        for process in _running:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except OSError:
                pass


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
