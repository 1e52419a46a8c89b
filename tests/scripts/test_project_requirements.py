"""scripts/project_requirements.py: the project's requirements without torch, so that
`make test-torch-floor` installs the course around another PyTorch than its pin."""

from __future__ import annotations

import subprocess
import sys

import pytest
from packaging.requirements import Requirement

from harness.paths import REPO
from tests.scripts.helpers import load_script

project_requirements = load_script("project_requirements")
PYPROJECT = project_requirements.tomllib.loads((REPO / "pyproject.toml").read_text())


def test_every_requirement_of_the_project_and_its_extras_but_torch():
    printed = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "project_requirements.py"), "course,test", "--without", "torch"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    project = PYPROJECT["project"]
    declared = [*project["dependencies"], *project["optional-dependencies"]["course"]]
    declared += project["optional-dependencies"]["test"]
    assert {Requirement(line).name for line in printed} == {Requirement(r).name for r in declared} - {"torch"}
    assert len(printed) == len(set(printed)), "each requirement once"
    assert all(r in printed for r in declared if Requirement(r).name != "torch")


def test_without_it_the_course_pin_of_torch_stays():
    lines = project_requirements.requirements(PYPROJECT, ["course"], set())
    assert any(
        Requirement(line).name == "torch" and str(Requirement(line).specifier).startswith("==") for line in lines
    )


@pytest.mark.parametrize("name", ["Torch", "torch"])
def test_names_compare_as_pip_compares_them(name):
    lines = project_requirements.requirements(PYPROJECT, ["course"], {name})
    assert all(Requirement(line).name != "torch" for line in lines)


def test_an_unknown_extra_names_those_there_are(capsys):
    assert project_requirements.main(["course,gpu"]) == 2
    err = capsys.readouterr().err
    assert "no extra gpu" in err and "course, test" in err
