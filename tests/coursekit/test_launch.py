"""coursekit.launch.torchrun under real torchrun (2 gloo processes): output streamed, and a
failed, hung or interrupted run ends in one LaunchError (or the KeyboardInterrupt) with
no process left behind.

Each run's processes carry a token in their environment, so the tests can look for
survivors anywhere, even after they were orphaned."""

import textwrap
import uuid

import psutil
import pytest

import coursekit.launch
from coursekit.launch import LaunchError, Rejoined, torchrun

HEADER = """\
import sys, time
import torch, torch.distributed as dist
dist.init_process_group("gloo")
rank = dist.get_rank()
"""


def script(tmp_path, body: str):
    path = tmp_path / "job.py"
    path.write_text(HEADER + textwrap.dedent(body))
    return path


def survivors(token: str) -> list[int]:
    """Live (non-zombie) processes that carry the run's token."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.environ().get("LAUNCH_TEST_TOKEN") == token and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process.pid)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


@pytest.fixture
def token():
    value = uuid.uuid4().hex
    yield value
    assert survivors(value) == []


def test_a_run_streams_each_ranks_lines_and_returns_them(tmp_path, token, capsys):
    path = script(
        tmp_path,
        """
        total = torch.tensor([rank + 1.0])
        dist.all_reduce(total)
        print(f"rank {rank} of {dist.get_world_size()}: sum {total.item():g}, RANK={__import__('os').environ['RANK']}")
        dist.destroy_process_group()
    """,
    )
    output = torchrun(path, env={"LAUNCH_TEST_TOKEN": token})
    assert sorted(output.splitlines()) == [
        "[default0]:rank 0 of 2: sum 3, RANK=0",
        "[default1]:rank 1 of 2: sum 3, RANK=1",
    ]
    assert sorted(capsys.readouterr().out.splitlines()) == sorted(output.splitlines())


def test_script_arguments_reach_the_ranks(tmp_path, token):
    path = script(
        tmp_path,
        """
        if rank == 0:
            print(sys.argv[1:])
        # Both ranks through a collective first: a rank that closes its connections while the
        # other is still making its own fails that one ("Gloo connectFullMesh failed ...
        # Connection closed by peer", seen in a CI run on a loaded machine).
        dist.barrier()
        dist.destroy_process_group()
    """,
    )
    assert torchrun(path, "--epochs", "3", nproc=2, echo=False, env={"LAUNCH_TEST_TOKEN": token}) == (
        "[default0]:['--epochs', '3']\n"
    )


def test_a_failing_rank_is_named_with_its_last_lines(tmp_path, token):
    path = script(
        tmp_path,
        """
        print(f"rank {rank} starts")
        if rank == 1:
            raise ValueError("a corrupt batch")
        time.sleep(600)  # rank 0 is busy: torchrun must stop it
    """,
    )
    with pytest.raises(LaunchError) as caught:
        torchrun(path, echo=False, env={"LAUNCH_TEST_TOKEN": token})
    error = caught.value
    assert (error.reason, error.ranks) == ("failed", [1])
    lines = str(error).splitlines()
    assert lines[0] == (
        "torchrun job.py failed: rank 1 exited with code 1, the first rank to fail "
        "(the other ranks were stopped). Its last lines:"
    )
    # torchrun tees a rank's stdout and stderr separately: their order in the quote may vary.
    quoted = lines[1:]
    assert "    [default1]:rank 1 starts" in quoted
    assert any(line.endswith("ValueError: a corrupt batch") for line in quoted)
    assert not any("[default0]" in line for line in lines)


def test_a_hung_run_ends_at_the_timeout_naming_the_ranks_still_running(tmp_path, token):
    path = script(
        tmp_path,
        """
        print(f"rank {rank} waiting", flush=True)
        if rank == 1:
            time.sleep(600)  # never joins the all-reduce
        dist.all_reduce(torch.ones(1))
    """,
    )
    with pytest.raises(LaunchError) as caught:
        torchrun(path, timeout=15, echo=False, env={"LAUNCH_TEST_TOKEN": token})
    error = caught.value
    assert (error.reason, error.ranks) == ("timeout", [0, 1])
    message = str(error)
    assert message.startswith("torchrun job.py timed out after 15 s and was stopped; rank 0 and rank 1 still running.")
    assert "last lines of rank 1:\n    [default1]:rank 1 waiting" in message
    # `token` checks, once the test is over, that no process of the run survives.


def test_an_interrupt_stops_every_process_and_propagates(tmp_path, token, monkeypatch):
    path = script(
        tmp_path,
        """
        print(f"rank {rank} up", flush=True)
        time.sleep(600)
    """,
    )

    def stop_button(*args, **kwargs):  # the notebook's stop button, once a rank has printed
        raise KeyboardInterrupt

    monkeypatch.setattr(coursekit.launch, "print", stop_button, raising=False)
    with pytest.raises(KeyboardInterrupt):
        torchrun(path, env={"LAUNCH_TEST_TOKEN": token})


def test_a_bad_command_line_is_a_clear_error(tmp_path, token):
    path = script(tmp_path, "")
    with pytest.raises(FileNotFoundError, match=r"no script \S*missing.py"):
        torchrun(tmp_path / "missing.py")
    with pytest.raises(ValueError, match="nproc must be a positive int"):
        torchrun(path, nproc=0)


def test_a_ranks_line_torchrun_copied_in_two_reads_is_one_line_again():
    """Under PYTHONUNBUFFERED a rank's print writes its text and its newline apart; torchrun's
    --tee, reading between them, marks both pieces: "[default0]:text[default0]:" came out
    where the chapter's stored output has "[default0]:text" (a failed nbval run of chapter 05)."""
    joined = Rejoined()
    assert joined.lines("[default0]:rank 0 loaded: True[default0]:") == ["[default0]:rank 0 loaded: True"]
    # another rank's whole line between the two pieces: it comes first, the first rank's after
    assert joined.lines("[default0]:rank 0 saved[default1]:rank 1 saved") == ["[default1]:rank 1 saved"]
    assert joined.lines("[default0]: a checkpoint") == ["[default0]:rank 0 saved a checkpoint"]
    assert joined.lines("torchrun's own words [default0]: quoted") == ["torchrun's own words [default0]: quoted"]
    # torch's own marks in a rank's text are text
    assert joined.lines("[default1]:[rank1]: ValueError: no") == ["[default1]:[rank1]: ValueError: no"]
    # a piece whose newline never came (the run ended): a line of its own at the end
    assert joined.lines("[default1]:unfinished[default0]:last") == ["[default0]:last"]
    assert joined.rest() == ["[default1]:unfinished"]
