"""The stored Inductor code of exercise 6.5 is what the pinned PyTorch writes.

The exercise asks what Inductor fused, saved and left to a library, read from stored text;
that text must be PyTorch's, not a hand-edited copy. Compiling attend again here (about
3 s on 2 cores) must give the same Python modules, C++ sources aside (their vector width
and thread loops follow the CPU)."""

import pytest

from coursekit.generated_code import PARTS, attend, capture, python_part, stored


def test_the_stored_modules_are_what_inductor_writes_now():
    fresh = capture()
    for part in PARTS:
        assert python_part(stored(part)) == python_part(fresh[part]), (
            f"Inductor writes another {part} module for attend than the one stored: if PyTorch "
            "changed, run `python -m coursekit.generated_code` and review exercise 6.5"
        )


def test_the_comparison_leaves_out_what_varies_by_machine_and_process():
    """The C++ sources follow the CPU; the AOT ID's number counts the graphs the process
    compiled before (other tests compile in the same process)."""
    one = "# AOT ID: ['0_forward']\nsrc = r'''avx512 loop'''\ncall = 1\n"
    other = "# AOT ID: ['10_forward']\nsrc = r'''avx2 loop'''\ncall = 1\n"
    assert python_part(one) == python_part(other)
    assert python_part(one) != python_part(other.replace("call = 1", "call = 2"))


def test_the_stored_forward_is_attends_training_forward():
    forward = stored("forward")
    assert forward.startswith("# AOT ID: ['0_forward']") and "class Runner:" in forward
    assert "cpp_fused__softmax_mul_relu_sum_0(" in forward
    assert attend.__code__.co_varnames[:2] == ("x", "w")


def test_an_unknown_part_is_refused_with_the_parts_that_exist():
    with pytest.raises(ValueError, match="forward"):
        stored("inference")
