"""Open the course in JupyterLab, safely: `make lab` runs
`python scripts/lab.py . --open course/00_welcome.ipynb`.

It serves the repository's top folder, so a chapter's "Next: exercises/..." link opens
the exercise notebook (served from course/ alone, the link led nowhere). Before starting, it
trusts the course's own notebooks (course/, exercises/, solutions/): JupyterLab shows
stored SVG and HTML outputs only from trusted notebooks, so without this a chapter
opened fresh shows the text fallback of each graph instead of its picture. The file browser
opens at that top folder, where course/ and exercises/ are both in sight (opening a notebook
by its URL would otherwise take the browser to the notebook's own folder). Every notebook is
saved with its live views as pictures (coursekit/saved_views.py): reopened, a chapter shows
its graphs, not "Error displaying widget: model not found".

Why a script and not a bare `jupyter lab`: the server must listen on 127.0.0.1 only, with
token authentication on and a fresh random token that never appears on the command line
(other users of the machine can read argv with `ps`; the environment they cannot). It must
also start as root in containers (`--allow-root`), not try to open a browser on a machine
without a display, and not phone home for news or updates. The URL with its token is
printed last, so it is easy to find in the log.

The browser tests start JupyterLab through this very script, so they prove `make lab` works.
"""

from __future__ import annotations

import argparse
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterable, Iterator
from pathlib import Path

DEFAULT_PORT = 8888
HOST = "127.0.0.1"
START_TIMEOUT_S = 120
COURSE_FOLDERS = ("course", "exercises", "solutions")  # the notebooks the course ships, trusted at start
TOP_FOLDER_QUERY = "file-browser-path=/"  # JupyterLab's URL parameter for the file browser's folder
SAVE_HOOK = "coursekit.saved_views.pre_save_hook"


def port_is_free(port: int) -> bool:
    """True when nothing listens on ``HOST:port`` yet."""
    with socket.socket() as s:
        try:
            s.bind((HOST, port))
        except OSError:
            return False
        return True


def free_port() -> int:
    """A port the operating system says is free right now."""
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def has_display() -> bool:
    """Whether opening a browser can work: macOS/Windows always, Linux only with a display."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def trust_course_notebooks(folder: Path) -> int:
    """Sign the notebooks in ``folder``'s course folders as trusted; how many were signed.

    Signatures go to the Jupyter data directory the server reads (``JUPYTER_DATA_DIR``);
    the notebooks themselves are not written. A learner's own later outputs are trusted
    anyway (their kernel made them). A file that does not read as a notebook is left
    untrusted with a note, and the Lab still starts (it shows what is wrong when opened).
    """
    import nbformat  # here, not at the top: `--help` and argument errors stay instant
    from nbformat.sign import NotebookNotary

    notary = NotebookNotary()
    signed = 0
    for path in sorted(p for name in COURSE_FOLDERS for p in (folder / name).glob("*.ipynb")):
        try:
            notebook = nbformat.read(path, as_version=nbformat.NO_CONVERT)
        except Exception as err:  # any reason a file is not a notebook: not JSON, not UTF-8, unreadable
            print(f"Not trusting {path.relative_to(folder)}: it does not read as a notebook ({err})", file=sys.stderr)
            continue
        notary.sign(notebook)
        signed += 1
    return signed


def landing(notebook: str | None) -> str:
    """Where the browser lands (no token): the Lab with ``notebook`` (relative to the served
    folder) open, or the Lab itself; the file browser at the top folder either way."""
    path = f"/lab/tree/{urllib.parse.quote(notebook)}" if notebook else "/lab"
    return f"{path}?{TOP_FOLDER_QUERY}"


def lab_command(folder: Path, port: int, open_browser: bool, notebook: str | None = None) -> list[str]:
    """The JupyterLab command line; it holds no secret (the token travels in the environment)."""
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        f"--ServerApp.ip={HOST}",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--ServerApp.root_dir={folder}",
        f"--ServerApp.open_browser={open_browser}",
        f"--LabApp.default_url={landing(notebook)}",  # where the browser lands
        f"--ContentsManager.pre_save_hook={SAVE_HOOK}",  # live views saved as their pictures
        # No news feed, no update check, no extension listing fetched from PyPI.
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")  # containers and CI run as root; JupyterLab refuses otherwise
    return cmd


def wait_until_ready(proc: subprocess.Popen, url: str, token: str) -> bool:
    """Poll the server's status API (with the token) until it answers or the process dies."""
    deadline = time.monotonic() + START_TIMEOUT_S
    request = urllib.request.Request(f"{url}/api/status", headers={"Authorization": f"token {token}"})
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            urllib.request.urlopen(request, timeout=2).read()
            return True
        except OSError:
            time.sleep(0.25)
    return False


# Ports tried in all when none was asked for: the one chosen can be taken by another program
# (a kernel's connection, a test's server) in the seconds before JupyterLab binds it.
PORT_TRIES = 5


def candidate_ports(asked: int | None) -> Iterator[int]:
    """The ports to try in turn: the one asked for alone; else the default if it is free, or
    a free one, then other free ones, each chosen when it is tried."""
    if asked is not None:
        yield asked
        return
    yield DEFAULT_PORT if port_is_free(DEFAULT_PORT) else free_port()
    for _ in range(PORT_TRIES - 1):
        yield free_port()


def start_lab(
    folder: Path,
    ports: Iterable[int],
    open_browser: bool,
    notebook: str | None,
    token: str,
    running: list[subprocess.Popen],
) -> tuple[subprocess.Popen, str | None]:
    """Start JupyterLab on the first of ``ports`` it can bind: the process and its URL once
    it answers (None: it stopped, or did not answer in time). A server that stops because
    its port was taken meanwhile is started again on the next port; each process started is
    appended to ``running`` (the one a SIGTERM stops)."""
    env = {**os.environ, "JUPYTER_TOKEN": token}
    for port in ports:
        url = f"http://{HOST}:{port}"
        proc = subprocess.Popen(lab_command(folder, port, open_browser, notebook), env=env)
        running.append(proc)
        if wait_until_ready(proc, url, token):
            return proc, url
        if proc.poll() is None or port_is_free(port):  # still starting, or stopped for another reason
            return proc, None
        print(f"Port {port} was taken just before JupyterLab could listen on it: trying another.", flush=True)
    return proc, None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Open the course in JupyterLab on 127.0.0.1 with a random token.")
    parser.add_argument("folder", type=Path, help="the folder to serve: the repository's top folder, `.`")
    parser.add_argument(
        "--open",
        metavar="NOTEBOOK",
        help="the notebook to open first, relative to folder, e.g. course/00_welcome.ipynb",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=None,
        help=f"port to listen on (default {DEFAULT_PORT}, or a free one if that is taken)",
    )
    parser.add_argument("--no-browser", action="store_true", help="do not open a browser window")
    args = parser.parse_args(argv)

    folder = args.folder.resolve()
    if not folder.is_dir():
        parser.error(f"{args.folder} is not a folder; run it from the repository root, e.g. `python scripts/lab.py .`")
    if args.open and not (folder / args.open).is_file():
        parser.error(f"--open {args.open}: no such notebook in {folder}; give a path relative to the folder served")
    if args.port is not None and not port_is_free(args.port):
        parser.error(f"port {args.port} is already in use; pick another with --port, or leave it out to get a free one")

    token = secrets.token_urlsafe(24)
    if trusted := trust_course_notebooks(folder):
        print(f"Trusted the course's {trusted} notebooks: their stored pictures show before you run them.", flush=True)
    open_browser = has_display() and not args.no_browser
    # A `kill` of this script stops the server too; Ctrl-C reaches both, and JupyterLab
    # handles it itself (it asks for confirmation), so this script just keeps waiting.
    running: list[subprocess.Popen] = []
    signal.signal(signal.SIGTERM, lambda *_: running[-1].terminate() if running else None)
    try:
        proc, url = start_lab(folder, candidate_ports(args.port), open_browser, args.open, token, running)
        if url is not None:
            print(
                f"\n    JupyterLab is serving {folder}\n"
                f"    Open this URL in your browser (the token is the password):\n\n"
                f"        {url}{landing(args.open)}&token={token}\n\n"
                f"    Stop it with Ctrl-C (twice).\n",
                flush=True,
            )
        while True:
            try:
                return proc.wait()
            except KeyboardInterrupt:
                continue
    finally:
        for started in running:  # (a Ctrl-C while it starts: the server started so far too)
            if started.poll() is None:
                started.terminate()
                started.wait()


if __name__ == "__main__":
    sys.exit(main())
