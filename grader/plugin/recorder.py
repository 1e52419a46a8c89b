"""pytest plugin for the nbval run that grades notebooks (``-p grader.plugin.recorder``).

It writes one JSON line per code cell as soon as nbval has judged it, so the grader has
every verdict reached so far even when the run is cut short, and it stops trusting a
notebook's kernel once it is lost:

- a cell timed out: nbval interrupts the kernel and would only mark every later cell as
  "expected to fail", so the rest of that notebook is skipped;
- the kernel process died (``os._exit``, a segfault, out of memory) while a cell ran:
  nbval would wait out the whole cell timeout for a reply that never comes, so a
  watchdog thread notices the death within a fraction of a second and ends the run;
- a cell outlived its timeout by GRACE seconds (it swallowed the interrupt and keeps
  printing): the watchdog kills the kernel and ends the run.

Whenever a kernel is given up on (stopped by nbval at the end of its notebook, or killed
by the watchdog), the processes its code started and left behind are killed too (a
torchrun launch, a detached subprocess: see processes.py), so they cannot eat the CPU
while later submissions are graded.

The grader then resumes from the next task in a fresh kernel, and grades the notebooks
an ended run did not reach in the next one.

A task's verdict is its first failing cell, so once a task has failed (its solution or a
check), its hidden checks are skipped: they cannot change the verdict, and an answer that
fails its check often deadlocks or loops in a hidden check too, which would cost the class
the time limit and the learner the check's message. No later cell may rely on what a
hidden check defines (tests/grader/test_hidden_cells.py reads that from the chapters' code).

nbval waits only 5 s for a cell's output messages once the kernel has replied, and
treats a longer wait as a timeout; on a busy machine that happens to correct answers,
so the plugin lets it wait OUTPUT_WAIT seconds.

With ``--grader-sandbox BOX.json`` (a sandbox.KernelBox) the kernel starts inside its
sandbox (sandbox.py): jupyter_client's KernelManager is told to talk to it over unix
sockets in the box's folder (the sandbox has no network to reach) and to put the box's
command in front of ipykernel's own; interrupts go as a message (a signal to bwrap would
not reach the kernel, which runs in a session of its own). A limit the sandbox runs into
(its control group's counters: an out-of-memory kill, a process refused; the kernel
killed by RLIMIT_CPU's SIGXCPU) ends the run like a lost kernel, and the cell's record
says which limit (``limit``). This process and its folder, with the records, stay outside
the sandbox.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any, Protocol

import pluggy
import psutil
import pytest

from grader.host.processes import MARKER, kill_marked
from grader.host.records import CellError, Fatal, Limit, RecordLine
from grader.host.sandbox import KernelBox, exceeded, kill_pids

OUTPUT_WAIT = 15.0
GRACE = OUTPUT_WAIT + 5.0
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--grader-results", default=None, help="JSON-lines file that receives one verdict per notebook cell"
    )
    parser.addoption("--grader-sandbox", default=None, help="JSON file: the sandbox to start kernels in")


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("grader_results")
    box_path = config.getoption("grader_sandbox")
    box: KernelBox | None = json.loads(Path(box_path).read_text(encoding="utf-8")) if box_path else None
    if box is not None:
        import nbval.kernel

        nbval.kernel.KernelManager = sandboxed_kernel_manager(box)
    if path:
        timeout = float(config.getoption("nbval_cell_timeout"))
        config.pluginmanager.register(Recorder(Path(path), timeout, box), "grader-recorder")


def sandboxed_kernel_manager(box: KernelBox) -> type:
    """nbval's KernelManager, made to start the kernel in the box's sandbox."""
    from jupyter_client.manager import KernelManager

    class SandboxedKernelManager(KernelManager):
        def __init__(self, **kwargs: Any) -> None:
            kwargs.update(transport="ipc", ip=box["ip"], connection_file=box["connection_file"])
            super().__init__(**kwargs)

        @property
        def kernel_spec(self) -> Any:
            spec = super().kernel_spec
            if spec is not None:
                spec.interrupt_mode = "message"
            return spec

        def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
            return box["command"] + super().format_kernel_cmd(extra_arguments)

        async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
            # Nothing of the kernel's reaches this process's files, and bwrap starts in
            # no folder of the grader's (nbval would give it this run's).
            kw.update(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/")
            await super()._async_launch_kernel(kernel_cmd, **kw)

    return SandboxedKernelManager


class NbvalCell(Protocol):
    """What this plugin uses of the test item nbval makes of a notebook cell
    (``nbval.plugin.IPyNbCell``, which has no type information): every item of a grading
    run is one, since the run collects nothing but notebooks."""

    @property
    def path(self) -> Path: ...

    @property
    def parent(self) -> pytest.Collector | None: ...

    cell: Any  # the notebook cell (an nbformat NotebookNode)
    cell_num: int  # the cell's index among the notebook's code cells
    output_timeout: float  # how long nbval waits for the cell's output once the kernel replied
    compare_outputs: Callable[..., bool]  # whether the cell's outputs match the reference's


def _role(item: NbvalCell) -> tuple[str | None, str | None]:
    """The task a cell grades and its kind ("solution", "check", "hidden"), as the grading
    notebook's metadata says (assemble.py); (None, None) for the guard and setup cells."""
    meta = item.cell.metadata.get("grader") or {}
    return meta.get("task"), meta.get("kind")


def _error_of(item: NbvalCell) -> CellError | None:
    for output in getattr(item, "test_outputs", None) or []:
        if output.get("output_type") == "error":
            return {"ename": output.get("ename", ""), "evalue": output.get("evalue", "")}
    return None


def _compare_printed_text_only(item: NbvalCell) -> None:
    """Make nbval compare only the text a check cell printed (its stream outputs): a figure,
    a progress bar or a value that the learner's function displays while the check calls it
    (``plt.show()``, tqdm) is no output of the check's and costs nothing. What the check
    prints is still compared, reduced to the checks' own lines (run.py's sanitize rule)."""
    compare = item.compare_outputs

    def printed_text_only(test: list[Any], ref: list[Any], skip_compare: Any = None) -> bool:
        return bool(compare(_printed(test), _printed(ref), skip_compare))

    item.compare_outputs = printed_text_only


def _printed(outputs: list[Any]) -> list[Any]:
    """The stream outputs (and errors) among a cell's outputs."""
    return [output for output in outputs if output.get("output_type") in ("stream", "error")]


class Recorder:
    def __init__(self, path: Path, timeout: float, box: KernelBox | None = None) -> None:
        self.file = path.open("a", encoding="utf-8")
        self.timeout = timeout
        self.box = box
        self.lock = threading.Lock()
        # The cell running now: notebook, cell number, start time, the kernel's process.
        self.running: tuple[str, int, float, subprocess.Popen[bytes] | None] | None = None
        self.lost: set[str] = set()  # notebooks whose kernel timed out
        self.failed: set[tuple[str, str]] = set()  # (notebook, task) with a cell that failed
        threading.Thread(target=self.watch, daemon=True).start()

    def write(self, record: RecordLine) -> None:
        with self.lock:
            self.file.write(json.dumps(record) + "\n")
            self.file.flush()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: NbvalCell) -> None:
        if str(item.path) in self.lost:
            pytest.skip("an earlier cell lost the kernel")
        task, kind = _role(item)
        if kind == "hidden" and (str(item.path), task) in self.failed:
            pytest.skip(f"Exercise {task} has already failed: its hidden checks cannot change that")
        item.output_timeout = OUTPUT_WAIT
        if kind in ("check", "hidden"):
            _compare_printed_text_only(item)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item: NbvalCell) -> Generator[None, pluggy.Result[None], None]:
        kernel = getattr(item.parent, "kernel", None)
        process = kernel.km.provisioner.process if kernel is not None and kernel.is_alive() else None
        self.running = (str(item.path), item.cell_num, time.monotonic(), process)
        try:
            yield
        finally:
            self.running = None

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_teardown(
        self, item: NbvalCell, nextitem: NbvalCell | None
    ) -> Generator[None, pluggy.Result[None], None]:
        yield
        if nextitem is None or nextitem.parent is not item.parent:
            self.kill_leftovers()  # nbval has just stopped this notebook's kernel

    def kill_leftovers(self) -> None:
        """Kill what the kernels of this run left behind (not this pytest process)."""
        for folder in self.box["cgroups"] if self.box else []:
            _kill_group(Path(folder))
        if os.environ.get(MARKER):
            kill_marked(os.environ[MARKER], spare=os.getpid())

    def limit(self, process: subprocess.Popen[bytes] | None) -> Limit | None:
        """The sandbox limit the kernel has run into, if any (never without a sandbox)."""
        if self.box is None:
            return None
        if self.box["cgroups"]:
            reached = exceeded(self.box["cgroups"])
            if reached:
                return reached
        elif process is not None and process.poll() is None and _descendants(process.pid) > self.box["processes"]:
            return "processes"  # no control group here: the watchdog counts them
        if process is not None and process.poll() in (128 + signal.SIGXCPU, -signal.SIGXCPU):
            return "cpu_time"  # bwrap exits 128 + the signal that killed the kernel
        return None

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(
        self, item: NbvalCell, call: pytest.CallInfo[None]
    ) -> Generator[None, pluggy.Result[pytest.TestReport], None]:
        outcome = yield
        report = outcome.get_result()
        if call.when == "teardown" or (call.when == "setup" and report.passed) or str(item.path) in self.lost:
            return
        record: RecordLine = {
            "file": str(item.path),
            "cell": item.cell_num,
            "outcome": report.outcome,
            "error": _error_of(item),
        }
        if call.excinfo is not None:
            exc = call.excinfo.value
            record["problem"] = ANSI.sub("", str(exc)).strip()
            detail = getattr(exc, "inner_traceback", None)
            if detail and record["problem"] == "Cell outputs differ":
                record["diff"] = ANSI.sub("", detail)[:2000]
        kernel = getattr(item.parent, "kernel", None)
        process = _process(kernel)
        if getattr(item.parent, "timed_out", False):
            record["fatal"] = "timeout"
        elif kernel is None or not kernel.is_alive():
            record["fatal"] = "died"
        reached = self.limit(process)
        if reached:
            # The sandbox stopped the cell's code: the kernel is not trusted any further.
            record["fatal"], record["limit"] = "died", reached
        self.write(record)
        task, _ = _role(item)
        if task is not None and call.when == "call" and (report.failed or record["error"]):
            self.failed.add((str(item.path), task))
        if "fatal" in record:
            self.lost.add(str(item.path))
        if reached and process is not None:
            self.end(process)

    def watch(self) -> None:
        """Watchdog thread: ends the run when the kernel dies, a cell will not stop, or the
        sandbox's limits stop the cell's code."""
        while True:
            time.sleep(0.1)
            running = self.running
            if running is None:
                continue
            file, cell, started, process = running
            if process is None:
                continue
            elapsed = time.monotonic() - started
            # Past the timeout nbval is interrupting (and may stop) the kernel itself.
            if elapsed < self.timeout and process.poll() is not None:
                self.stop(file, cell, "died", process)
            elif elapsed > self.timeout + GRACE:
                self.stop(file, cell, "timeout", process)
            elif self.limit(process):
                self.stop(file, cell, "died", process)

    def stop(self, file: str, cell: int, fatal: Fatal, process: subprocess.Popen[bytes]) -> None:
        """Record the lost cell (and the sandbox limit that stopped it, if one did), kill the
        kernel, end the run."""
        record: RecordLine = {"file": file, "cell": cell, "outcome": "failed", "error": None, "fatal": fatal}
        reached = self.limit(process)
        if reached:
            record["limit"] = reached
        self.write(record)
        self.end(process)

    def end(self, process: subprocess.Popen[bytes]) -> None:
        """Kill the kernel's process group (bwrap's, in a sandbox: the sandbox goes with it)
        and what it left behind; end the run. The kernel's Popen is not reaped yet, so its
        pid (= its group id) cannot have been reused."""
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except OSError:
            pass
        self.kill_leftovers()
        os._exit(3)


def _process(kernel: Any) -> subprocess.Popen[bytes] | None:
    """The kernel's process (bwrap's, in a sandbox), while nbval still has one."""
    manager = getattr(kernel, "km", None)
    provisioner = getattr(manager, "provisioner", None)
    return getattr(provisioner, "process", None)


def _descendants(pid: int) -> int:
    try:
        return len(psutil.Process(pid).children(recursive=True))
    except psutil.Error:
        return 0


def _kill_group(folder: Path) -> None:
    """SIGKILL every process in a control group (the sandbox's); they may be forking."""
    for _ in range(500):
        try:
            pids = [int(pid) for pid in (folder / "cgroup.procs").read_text().split()]
        except OSError:
            return
        if not pids:
            return
        kill_pids(pids)
        time.sleep(0.02)
