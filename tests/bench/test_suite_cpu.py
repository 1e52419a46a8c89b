"""suite_cpu puts each process in its group by its command line and its ancestors'."""

from __future__ import annotations

from bench.suite_cpu import Process, by_group, group_of, sampled_commands

KERNEL = "/repo/.venv/bin/python -m ipykernel_launcher -f kernel-1.json"
WORKER = "/repo/.venv/bin/python -u -c import sys;exec(eval(sys.stdin.readline()))"


def test_a_kernel_is_grouped_by_who_started_it():
    assert group_of(KERNEL, "/usr/bin/bwrap --unshare-pid ... " + WORKER) == "kernels the grader graded"
    assert group_of(KERNEL, "python -m jupyterlab --ServerApp.ip=127.0.0.1").startswith("kernels of the browser")
    assert group_of(KERNEL, WORKER).startswith("kernels of nbval")
    assert group_of("python -B -c from multiprocessing.forkserver import main", KERNEL).startswith("ranks")
    assert group_of("/repo/.venv/bin/python -c print(1)", WORKER).startswith("other")


def test_the_sampled_command_line_and_first_parent_win_over_the_record(tmp_path):
    samples = tmp_path / "ps.txt"
    # A process seen twice: its command line grows once exec'd, its parent dies (init adopts it).
    samples.write_text(f"  10     1 {WORKER}\n  11    10 python\n  11    10 {KERNEL}\n  11     1 {KERNEL}\nnot a row\n")
    commands, parents = sampled_commands(samples)
    assert commands == {10: WORKER, 11: KERNEL}
    assert parents == {10: 1, 11: 10}
    records = {10: Process("python", 2.5, 1), 11: Process("python", 4.0, 1), 12: Process("dot", 0.5, 11)}
    cpu, count = by_group(records, commands, parents)
    assert cpu == {
        "pytest-xdist workers (collection, nbval's comparisons, in-process tests)": 2.5,
        "kernels of nbval (course/, solutions/), answer runs and other tests": 4.0,
        "Graphviz dot": 0.5,
    }
    assert sum(count.values()) == 3
