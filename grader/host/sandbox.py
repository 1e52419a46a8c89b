"""A sandbox of its own for each submission's kernel: bubblewrap (``bwrap``) on Linux.

Learners' code runs with the rights of whoever grades it, so the grader treats it as
hostile. Each kernel that runs a submission starts inside ``bwrap``:

- its own PID, IPC, UTS and network namespaces, a new session, every capability dropped:
  it sees only its own processes (it cannot signal the grader, nbval or another
  submission's kernel), and whatever it starts dies with it, however it was started
  (``setsid``, a clean environment): the namespace's first process is bwrap's, and when
  that goes, Linux kills every process left in the namespace. ``--die-with-parent`` ties
  the whole sandbox to the nbval process that started the kernel;
- no network but a loopback of its own (gloo ranks and torchrun still meet there); the
  grader talks to the kernel over unix sockets (Jupyter's ``ipc`` transport) in a folder
  of its own bound into the sandbox, holding the connection file and the sockets;
- a read-only view of the system (``/usr``, a few files of ``/etc``), of the Python it runs
  (the venv and its base interpreter) and of the course packages it imports (COURSE_PATHS);
  nothing else of the instructor's: the course's folder is an empty directory with only
  those bound back, so no ``solutions/``, no tests, no other submission, not nbval's
  folder with the verdicts it records;
- a private home (the working folder and ``HOME``) and ``/tmp``, both fresh, in memory
  (tmpfs, counted in the memory limit), gone with the kernel; an environment of its own;
- limits (`Limits`): memory of all its processes together, processes and threads, CPU time
  and file size per process. Memory and processes are counted in a control group made for
  each kernel where one can be made (cgroup v1 or v2, as root or delegated); elsewhere
  memory falls back to RLIMIT_DATA per process and processes to a watchdog that counts
  the kernel's descendants (plugin/recorder.py). CPU time and file size are rlimits.
  What a cell prints is capped inside the kernel (output_guard.py).

A limit reached fails the task that reached it, with its own reason (results.py), and the
submission's later tasks are graded in a fresh sandbox. `prepare` checks once, before any
grading, that a sandbox can be made here, and says how to fix it when not.

The grader's side (run.py) makes a control group per kernel and hands the nbval process a
`KernelBox` (JSON); plugin/recorder.py starts the kernel with the box's command in front of
ipykernel's own and reads the box's counters to tell a limit from a crash.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypedDict

from grader.host.errors import GraderError
from grader.host.notebook import COURSE_ROOT
from grader.host.records import Limit

GiB = 1 << 30
HOME = "/home/learner"  # the kernel's home and working folder, inside the sandbox
TMP = "/tmp"  # a private, empty tmpfs inside the sandbox; outside, where too long a socket path goes
# What the kernel may see of the course's folder (read-only): the packages it imports.
# Nothing a chapter's checks need lies elsewhere in the course (test_course.py grades every
# chapter in the sandbox, chapter 05 with its gloo ranks included).
COURSE_PATHS = ("vizlib", "coursekit", "grader")
# The system, read-only; on merged-/usr systems the top-level ones are symlinks.
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# The files of /etc a Python kernel reads (the dynamic loader, users, time zone, fonts,
# name resolution); not the rest (shadow, ssh and ssl keys, the instructor's settings).
ETC = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "alternatives",
    "localtime",
    "timezone",
    "passwd",
    "group",
    "nsswitch.conf",
    "host.conf",
    "hosts",
    "gai.conf",
    "fonts",
    "mime.types",
    "os-release",
)
# What torch reads about the CPUs, and GPUs where there are any.
DEVICES = ("/sys/devices/system/cpu", "/sys/devices/system/node")
GPU_DEVICES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset")
# The grader's environment variables a kernel inherits; every other one stays outside.
PASSED_ENV = (
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "OMP_NUM_THREADS",
    "OMP_WAIT_POLICY",
    "MKL_NUM_THREADS",
    "CUDA_VISIBLE_DEVICES",
    "PYTHONHASHSEED",
)
SOCKETS_PATH = 90  # the longest folder for a kernel's sockets: "/s-<port>" must still fit in 107 bytes
CPU_GRACE = 5  # seconds between SIGXCPU (a clear reason) and SIGKILL (a kernel that caught it)
FIX = (
    "install bubblewrap (Debian/Ubuntu: sudo apt-get install bubblewrap), or pass --no-sandbox "
    "to run learners' code with your own rights"
)


class SandboxError(GraderError):
    """No sandbox can be made here; the message says why and how to fix it, in one line."""


@dataclass(frozen=True)
class Limits:
    """What one kernel's sandbox may use. Memory and processes count everything in the
    sandbox together (the kernel, the ranks it forks, torchrun's children); a thread counts
    as a process, as the kernel counts them. CPU time and file size are per process."""

    memory: int = 4 * GiB  # bytes; home and /tmp (tmpfs) count in it
    processes: int = 1024
    cpu_seconds: int = 3600
    file_size: int = 1 * GiB  # the largest file a process may write


class KernelBox(TypedDict):
    """One kernel's sandbox, as the grader hands it to the nbval process (as JSON)."""

    command: list[str]  # goes in front of ipykernel's own command
    ip: str  # the ipc transport's socket path prefix, in `sockets`
    connection_file: str  # in `sockets`
    sockets: str  # the one folder of the grader's that the kernel can see (and write)
    cgroups: list[str]  # the kernel's control group folders; empty where none could be made
    processes: int  # the process limit, for the watchdog where there is no control group


@dataclass(frozen=True)
class Sandbox:
    """What every kernel's sandbox of a grading run shares (see `prepare`)."""

    bwrap: str
    limits: Limits
    cgroups: CgroupRoots | None  # where each kernel's control group is made; None: rlimits only

    def box(self, folder: Path, run_id: str) -> tuple[KernelBox, Cgroup | None]:
        """The sandbox of the kernel of one nbval run, whose files are in ``folder``; its
        sockets live in ``folder/k``, or in a folder of their own in /tmp where that path is
        too long for a unix socket's (107 bytes); the caller removes the folder."""
        sockets = folder / "k"
        if len(str(sockets)) > SOCKETS_PATH:
            sockets = Path(tempfile.mkdtemp(prefix="grader-k-", dir=TMP))
        else:
            sockets.mkdir()
        group = self.cgroups.create(f"grader-{run_id}", self.limits) if self.cgroups else None
        command = _limits_wrapper(self.limits, group) + [
            *bwrap_arguments(self.bwrap, self.limits),
            "--bind",
            str(sockets),
            str(sockets),
            "--setenv",
            "GRADER_RUN",
            run_id,
            "--remount-ro",
            "/",
            "--",
        ]
        box = KernelBox(
            command=command,
            ip=str(sockets / "s"),
            connection_file=str(sockets / "kernel.json"),
            sockets=str(sockets),
            cgroups=[str(path) for path in group.folders] if group else [],
            processes=self.limits.processes,
        )
        return box, group


def bwrap_arguments(bwrap: str, limits: Limits) -> list[str]:
    """bwrap and its options, up to the folder of the kernel's sockets: namespaces, the
    read-only views, the private home and /tmp, the environment. See the module's doc."""
    arguments = [
        bwrap,
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-net",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
    ]
    arguments += _system_views()
    # The private /tmp and home first: what is bound below comes after, on top of them, so a
    # course checked out under /tmp is still seen (a bind made first would be hidden).
    size = str(limits.memory)
    arguments += ["--size", size, "--tmpfs", TMP, "--size", size, "--tmpfs", HOME]
    arguments += _python_views()
    arguments += ["--chdir", HOME, "--clearenv"]
    for name, value in _environment().items():
        arguments += ["--setenv", name, value]
    return arguments


def _system_views() -> list[str]:
    """What the kernel sees of the system, read-only: /usr and its kin (kept as symlinks
    where /usr is merged), the few files of /etc it reads, /proc and /dev of its own, the
    CPUs' description and the GPUs, where there are any."""
    arguments: list[str] = []
    for path in SYSTEM:
        if os.path.islink(path):
            arguments += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            arguments += ["--ro-bind", path, path]
    for name in ETC:
        arguments += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    arguments += ["--proc", "/proc", "--dev", "/dev"]
    for path in DEVICES:
        arguments += ["--ro-bind-try", path, path]
    for path in [*GPU_DEVICES, *(str(p) for p in sorted(Path("/dev").glob("nvidia[0-9]*")))]:
        arguments += ["--dev-bind-try", path, path]
    return arguments


def _python_views() -> list[str]:
    """Python: the venv (or whatever prefix runs the grader) and the interpreter it was made
    from (pyvenv.cfg's home), then the course's packages. Where the venv lies inside the
    course's folder, binding it creates the course's folder as an empty directory."""
    arguments: list[str] = []
    for prefix in dict.fromkeys(os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)):
        arguments += ["--ro-bind", prefix, prefix]
    if os.path.realpath(sys.prefix) != sys.prefix:
        arguments += ["--symlink", os.path.realpath(sys.prefix), sys.prefix]
    for name in COURSE_PATHS:
        arguments += ["--ro-bind-try", str(COURSE_ROOT / name), str(COURSE_ROOT / name)]
    return arguments


def _environment() -> dict[str, str]:
    """The kernel's whole environment (bwrap clears the grader's): its own home and /tmp, a
    PATH to this Python, the course importable, and only the PASSED_ENV variables."""
    return {
        "HOME": HOME,
        "USER": "learner",
        "TMPDIR": TMP,
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"]),
        "PYTHONPATH": str(COURSE_ROOT),  # grader.kernel: the output guard and the checks' session
        "PYTHONDONTWRITEBYTECODE": "1",  # the packages are read-only
        **{name: os.environ[name] for name in PASSED_ENV if name in os.environ},
    }


def _limits_wrapper(limits: Limits, group: Cgroup | None) -> list[str]:
    """A Python that joins the control group, sets the rlimits and becomes bwrap (exec: the
    same process, so jupyter_client's Popen is bwrap's). Without a control group, memory
    is limited per process (RLIMIT_DATA)."""
    rlimits = [
        ("RLIMIT_CORE", 0, 0),
        ("RLIMIT_CPU", limits.cpu_seconds, limits.cpu_seconds + CPU_GRACE),
        ("RLIMIT_FSIZE", limits.file_size, limits.file_size),
    ]
    if group is None:
        rlimits.append(("RLIMIT_DATA", limits.memory, limits.memory))
    setup = {"cgroups": [str(path) for path in group.folders] if group else [], "rlimits": rlimits}
    return [sys.executable, "-I", "-S", "-c", WRAPPER, json.dumps(setup)]


WRAPPER = """\
import json, os, resource, sys
setup = json.loads(sys.argv[1])
for folder in setup["cgroups"]:
    with open(os.path.join(folder, "cgroup.procs"), "w") as procs:
        procs.write(str(os.getpid()))
for name, soft, hard in setup["rlimits"]:
    resource.setrlimit(getattr(resource, name), (soft, hard))
os.execv(sys.argv[2], sys.argv[2:])
"""


# Control groups --------------------------------------------------------------------------


@dataclass(frozen=True)
class CgroupRoots:
    """Where this process may make control groups: cgroup v1, one folder per controller
    (memory and pids); or v2, one folder with both controllers enabled for its children."""

    version: Literal[1, 2]
    memory: Path
    pids: Path

    @staticmethod
    def find() -> CgroupRoots | None:
        """This process's own control groups, if it may make children under them."""
        try:
            lines = Path("/proc/self/cgroup").read_text().splitlines()
        except OSError:
            return None
        v1 = {}
        for line in lines:
            _, controllers, path = line.split(":", 2)
            for controller in controllers.split(","):
                v1[controller] = path
        base = Path("/sys/fs/cgroup")
        if "memory" in v1 and "pids" in v1 and (base / "pids" / "cgroup.procs").exists():
            roots = CgroupRoots(1, base / "memory" / v1["memory"].lstrip("/"), base / "pids" / v1["pids"].lstrip("/"))
        elif "" in v1 and (base / "cgroup.controllers").exists():
            own = base / v1[""].lstrip("/")
            roots = CgroupRoots(2, own, own)
        else:
            return None
        try:  # can a control group be made and limited here?
            probe = roots.create(f"grader-probe-{uuid.uuid4().hex[:8]}", Limits())
        except OSError:
            return None
        probe.remove()
        return roots

    def create(self, name: str, limits: Limits) -> Cgroup:
        """A new control group with these limits (OSError where not allowed)."""
        if self.version == 2:
            control = self.memory / "cgroup.subtree_control"
            if not {"memory", "pids"} <= set(control.read_text().split()):
                control.write_text("+memory +pids")
            folders = [self.memory / name]
        else:
            folders = [self.memory / name, self.pids / name]
        group = Cgroup(self.version, folders)
        try:
            for folder in folders:
                folder.mkdir()
            if self.version == 2:
                (folders[0] / "memory.max").write_text(str(limits.memory))
                (folders[0] / "memory.swap.max").write_text("0")
                (folders[0] / "pids.max").write_text(str(limits.processes))
            else:
                (folders[0] / "memory.limit_in_bytes").write_text(str(limits.memory))
                swap = folders[0] / "memory.memsw.limit_in_bytes"
                if swap.exists():
                    swap.write_text(str(limits.memory))
                (folders[1] / "pids.max").write_text(str(limits.processes))
        except OSError:
            group.remove()
            raise
        return group


@dataclass(frozen=True)
class Cgroup:
    """One kernel's control group(s): v1, [memory, pids]; v2, [the one folder]."""

    version: Literal[1, 2]
    folders: list[Path]

    def exceeded(self) -> Limit | None:
        """The limit the group has run into since it was made, if any."""
        return exceeded([str(path) for path in self.folders])

    def pids(self) -> list[int]:
        try:
            return [int(pid) for pid in (self.folders[-1] / "cgroup.procs").read_text().split()]
        except OSError:
            return []

    def kill(self, timeout: float = 10.0) -> None:
        """SIGKILL every process in the group, until none is left (it may be forking)."""
        end = time.monotonic() + timeout
        while (pids := self.pids()) and time.monotonic() < end:
            kill = self.folders[0] / "cgroup.kill"
            if self.version == 2 and kill.exists():
                kill.write_text("1")
            else:
                kill_pids(pids)
            time.sleep(0.02)

    def remove(self) -> None:
        """Kill what is left and remove the folders."""
        self.kill()
        for folder in reversed(self.folders):
            for _ in range(50):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:  # the last processes are still being torn down
                    time.sleep(0.02)


def exceeded(folders: list[str]) -> Limit | None:
    """The limit a kernel's control group (KernelBox.cgroups) has run into, if any: an
    out-of-memory kill, or a process or thread refused. Read by the nbval process too."""
    counts = {"oom_kill": 0, "max": 0}
    for folder in folders:
        for name, key in (("memory.events", "oom_kill"), ("memory.oom_control", "oom_kill"), ("pids.events", "max")):
            try:
                lines = Path(folder, name).read_text().splitlines()
            except OSError:
                continue
            for line in lines:
                word, _, value = line.partition(" ")
                if word == key and value.strip().isdigit():
                    counts[key] += int(value)
    if counts["oom_kill"]:
        return "memory"
    if counts["max"]:
        return "processes"
    return None


# Is a sandbox possible here? -------------------------------------------------------------


def prepare(limits: Limits | None = None) -> Sandbox:
    """The sandbox every kernel of this grading run gets. Raises SandboxError, in one line
    that says how to fix it, where none can be made: not Linux, no bwrap, namespaces
    refused, or the kernel cannot start inside."""
    limits = limits or Limits()
    if not sys.platform.startswith("linux"):
        raise SandboxError(f"the grader's sandbox needs Linux (bubblewrap), not {sys.platform}: {FIX}.")
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxError(f"bubblewrap (bwrap) is not installed, and the grader runs learners' code in it: {FIX}.")
    probe = [
        *bwrap_arguments(bwrap, limits),
        "--",
        sys.executable,
        "-c",
        "import ipykernel, grader.kernel.output_guard",
    ]
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=120)
        problem = done.returncode and (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
    except (OSError, subprocess.TimeoutExpired) as error:
        problem = str(error)
    if problem:
        raise SandboxError(
            f"bubblewrap cannot make the grader's sandbox here ({problem}; are user namespaces refused?): {FIX}."
        )
    return Sandbox(bwrap, limits, CgroupRoots.find())


def fallback_note(sandbox: Sandbox) -> str | None:
    """What the instructor should know when limits fall back to rlimits, else None."""
    if sandbox.cgroups is not None:
        return None
    return (
        "no control group can be made here (not root, no delegated cgroup): memory is limited per "
        "process (RLIMIT_DATA) and processes by a watchdog, rather than per sandbox"
    )


def kill_pids(pids: list[int]) -> None:
    """SIGKILL each of these processes; one already gone is no error."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
