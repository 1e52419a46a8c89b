"""Print the project's requirements, one a line, for `pip install -r`: its own dependencies
and those of the extras named, without the packages named after ``--without``.

Why: the course extra pins ``torch==2.13.0`` (its stored outputs are that version's), so
``pip install -e .[course,test]`` would replace any other torch. To run the course on
another PyTorch (``make test-torch-floor``), torch is installed first and the project after
it with ``--no-deps`` and these requirements, torch left out:

    python scripts/project_requirements.py course,test --without torch
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the same parser, as pip carries it
    from pip._vendor import tomli as tomllib  # type: ignore[no-redef]

# A script knows the checkout by its own place: harness.paths is imported from it (this runs
# before the project is installed).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.paths import REPO  # noqa: E402 - after the path it is found on


def distribution_name(requirement: str) -> str:
    """The normalised name a requirement string starts with (PEP 503: `Foo_bar` -> `foo-bar`)."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    if not match:
        raise ValueError(f"not a requirement: {requirement!r}")
    return re.sub(r"[-_.]+", "-", match.group(1)).lower()


def requirements(pyproject: dict, extras: list[str], without: set[str]) -> list[str]:
    """The project's dependencies and its extras', in order, each once, minus ``without``."""
    optional = pyproject["project"].get("optional-dependencies", {})
    unknown = [name for name in extras if name not in optional]
    if unknown:
        raise ValueError(f"pyproject.toml has no extra {', '.join(unknown)}; it has: {', '.join(sorted(optional))}")
    skip = {distribution_name(name) for name in without}
    chosen: list[str] = []
    for requirement in [*pyproject["project"]["dependencies"], *(r for name in extras for r in optional[name])]:
        if distribution_name(requirement) not in skip and requirement not in chosen:
            chosen.append(requirement)
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("extras", help="comma-separated extras of pyproject.toml, e.g. course,test")
    parser.add_argument("--without", action="append", default=[], help="a package to leave out (repeatable)")
    parser.add_argument("--pyproject", type=Path, default=REPO / "pyproject.toml")
    args = parser.parse_args(argv)
    pyproject = tomllib.loads(args.pyproject.read_text())
    try:
        lines = requirements(pyproject, [e for e in args.extras.split(",") if e], set(args.without))
    except ValueError as error:
        print(error, file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
