"""run_all runs every benchmark script in its own process and gathers their sections."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import torch

from bench import run_all


def _script(path: Path, body: str) -> None:
    path.write_text(textwrap.dedent(body))


def test_run_all_runs_each_script_and_concatenates_sections_in_order(tmp_path):
    _script(
        tmp_path / "bench_b.py",
        """
        from pathlib import Path
        out = Path(__file__).parent / "results"
        out.mkdir(exist_ok=True)
        (out / "b.md").write_text("## section b\\n")
    """,
    )
    _script(
        tmp_path / "bench_a.py",
        """
        from pathlib import Path
        out = Path(__file__).parent / "results"
        out.mkdir(exist_ok=True)
        (out / "a.md").write_text("## section a\\n")
    """,
    )
    status = run_all.run_scripts(tmp_path)
    assert status == {"a": 0, "b": 0}
    text = run_all.results_text(tmp_path, status, "# header")
    assert text == "# header\n\n## section a\n\n## section b\n"


def test_run_all_reports_a_failing_script_instead_of_its_old_section(tmp_path):
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "broken.md").write_text("## stale numbers from last week\n")
    _script(tmp_path / "bench_broken.py", "raise SystemExit(3)\n")
    status = run_all.run_scripts(tmp_path)
    assert status == {"broken": 3}
    text = run_all.results_text(tmp_path, status, "# header")
    assert "stale" not in text
    assert "bench_broken.py failed (exit status 3)" in text


def test_run_all_header_names_the_machine():
    header = run_all.header()
    assert f"{os.cpu_count()} CPUs" in header
    assert f"torch {torch.__version__}" in header
    assert "graphviz" in header


def test_run_all_keeps_sections_recorded_on_another_machine_after_the_scripts(tmp_path):
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "gpu.md").write_text("## measured on a GPU machine\n")
    _script(
        tmp_path / "bench_a.py",
        """
        from pathlib import Path
        (Path(__file__).parent / "results" / "a.md").write_text("## section a\\n")
    """,
    )
    status = run_all.run_scripts(tmp_path)
    text = run_all.results_text(tmp_path, status, "# header")
    assert text == "# header\n\n## section a\n\n## measured on a GPU machine\n"
