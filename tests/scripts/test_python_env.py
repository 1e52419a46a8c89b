"""scripts/python_env.sh refuses to start an install the disk cannot hold, and says what to do."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path

import pytest

from harness.paths import REPO, SCRIPTS


def _with_free_disk(tmp_path: Path, free_mb: int) -> dict[str, str]:
    """An environment whose `df` reports `free_mb` free wherever it is asked (a full disk is
    not something a test can make of the real one)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    df = bin_dir / "df"
    df.write_text(
        "#!/bin/sh\n"
        "echo 'Filesystem 1024-blocks Used Available Capacity Mounted on'\n"
        f"echo '/dev/x 100000000 90000000 {free_mb * 1024} 99% /'\n"
    )
    df.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


@pytest.mark.parametrize(
    "build, free_mb, need_mb",
    [
        ("cpu", 1024, 2500),
        pytest.param(
            "cuda",
            3000,
            8000,
            marks=pytest.mark.skipif(
                platform.machine() != "x86_64", reason="TORCH=cuda is refused off x86_64 before the disk is asked"
            ),
        ),
    ],
)
def test_an_install_the_disk_cannot_hold_stops_before_pip_and_says_what_to_do(
    tmp_path: Path, build: str, free_mb: int, need_mb: int
) -> None:
    venv = tmp_path / "venv"
    done = subprocess.run(
        ["bash", str(SCRIPTS / "python_env.sh"), str(venv), "course", build],
        cwd=REPO,
        env=_with_free_disk(tmp_path, free_mb=free_mb),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"the {build} build needs about {need_mb} MB free" in done.stderr
    assert f"{free_mb} MB are free there" in done.stderr
    assert "VENV=" in done.stderr
    assert "Installing" not in done.stdout  # pip never started
    site = subprocess.run(
        [str(venv / "bin/python"), "-c", "import importlib.util as u; print(u.find_spec('torch'))"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert site.stdout.strip() == "None"
