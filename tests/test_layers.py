"""The repository's imports run one way (docs/ARCHITECTURE.md draws them):

- between folders: vizlib imports none of the repository's other code, coursekit only vizlib,
  the shipped packages nothing that is not shipped (harness, bench, scripts, tests) and no
  test-only dependency; the notebooks and scripts of course/ and solutions/ only vizlib,
  coursekit and grader; nothing but tests imports tests;
- into vizlib: code outside it (coursekit, grader, harness, bench, scripts, and the code cells
  of course/ and solutions/) uses only public names: those that ``vizlib`` or one of its
  stage packages (``vizlib.plots``, ``vizlib.render``, ...) lists in ``__all__``;
- inside vizlib: no arrow from a lower stage to a higher one;
- inside each package: no circle.

Imports are read from the source with ``ast``, every one of them: at module level, inside
functions, and under ``TYPE_CHECKING``, because a lazy import is still a dependency. Each
failure names the file, the line and the import.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest
from IPython.core.inputtransformer2 import TransformerManager

from harness.paths import REPO

PACKAGES = ("vizlib", "grader", "coursekit")  # shipped in the wheel (pyproject.toml)
FOLDERS = (*PACKAGES, "harness", "bench", "scripts")  # the code besides tests/
NOTEBOOKS = ("course", "solutions")  # their notebooks and scripts; exercises/ are written from solutions/
# What each folder may import of the others (its own modules aside). A new arrow needs a reason:
# vizlib is a library on its own, the shipped packages run where no checkout is around them.
MAY_IMPORT = {
    "vizlib": set(),
    "coursekit": {"vizlib"},
    "grader": set(),
    "harness": set(),
    "bench": {"vizlib", "coursekit", "grader", "harness"},
    "scripts": {"coursekit", "harness"},
    # A chapter uses what a learner has installed; a check cell calls the grader.
    "course": {"vizlib", "coursekit", "grader"},
    "solutions": {"vizlib", "coursekit", "grader"},
}
TOP_LEVEL = {*FOLDERS, *NOTEBOOKS, "tests"}
# Installed by the `test` extras only: a package the wheel ships cannot count on them.
TEST_ONLY = {"playwright", "pytest_playwright", "hypothesis", "xdist", "torchviz"}

# The grader's sub-packages, by the process they run in (docs/ARCHITECTURE.md), and what each
# may import of the others: the kernel's code is loaded into a learner's kernel, where the
# host's has no business; the plugin shares the host's process tools (sandbox, records,
# processes); the host reads the output guard's limit and starts the plugin by name only.
GRADER_MAY_IMPORT = {"kernel": set(), "plugin": {"host"}, "host": {"kernel"}}

# vizlib's stages, lowest first. A module may import its own stage and lower ranks; two
# stages of one rank know nothing of each other.
VIZLIB_RANK = {
    "errors": 0,
    "text": 0,
    "memory": 1,
    "data": 1,
    "capture": 2,
    "transform": 2,
    "render": 2,
    "plots": 2,
    "api": 3,
    "views": 4,
    "__init__": 5,
}


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def python_files(folder: str) -> list[Path]:
    return sorted((REPO / folder).rglob("*.py"))


def imports(path: Path, tree: ast.AST) -> Iterator[tuple[ast.stmt, str, list[str]]]:
    """Each import statement in ``tree`` (the source of ``path``): the statement, the module
    it imports from written out in full, and the names it takes (empty for ``import m``)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node, alias.name, []
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            yield node, base, [alias.name for alias in node.names]


def parse(path: Path, source: str | None = None) -> ast.Module:
    return ast.parse(path.read_text() if source is None else source, filename=str(path))


def imports_of(path: Path, source: str | None = None) -> set[str]:
    """Every module of our packages that ``path`` (or ``source`` as if it were there)
    imports, written out in full."""
    found = set()
    for _, base, names in imports(path, parse(path, source)):
        found.add(base)
        # `from . import x` / `from .render import dot`: x may itself be a module.
        found |= {f"{base}.{name}" for name in names}
    return {m for m in found if m in our_modules() and m != module_name(path)}


@cache
def our_modules() -> frozenset[str]:
    return frozenset(module_name(p) for pkg in PACKAGES for p in python_files(pkg))


@cache
def import_graph() -> dict[str, set[str]]:
    return {module_name(p): imports_of(p) for pkg in PACKAGES for p in python_files(pkg)}


def folder_violations(path: Path, trees: list[tuple[str, ast.Module]]) -> list[str]:
    """The imports in ``trees`` (the code of ``path``: see ``code``) that cross a folder
    boundary the wrong way, or bring a test-only dependency into a shipped package."""
    folder = path.relative_to(REPO).parts[0]
    wrong = []
    for place, tree in trees:
        for node, base, _ in imports(path, tree):
            top = base.split(".")[0]
            here = f"{path.relative_to(REPO)}{place}:{node.lineno}: `{ast.unparse(node)}`"
            if top in TOP_LEVEL and top != folder and top not in MAY_IMPORT[folder]:
                allowed = ", ".join(sorted(MAY_IMPORT[folder])) or "nothing"
                wrong.append(f"{here}: {folder}/ imports {top}/ (it may import {allowed} of ours)")
            elif top in TEST_ONLY and folder in PACKAGES:
                wrong.append(f"{here}: {top} is a test-only dependency, and {folder} ships in the wheel")
    return wrong


def stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def stage_violations(module: str, deps: set[str]) -> list[str]:
    """vizlib's imports of ``module`` that run against the flow of stages."""
    wrong = []
    for dep in deps:
        if dep.split(".")[0] != "vizlib":
            continue  # another folder: folder_violations' business
        if dep == "vizlib" or stage(dep) == stage(module):
            if dep == "vizlib" and stage(module) != "__init__":
                wrong.append(f"{module} -> vizlib (the package's façade)")
            continue
        if VIZLIB_RANK[stage(dep)] >= VIZLIB_RANK[stage(module)]:
            wrong.append(f"{module} -> {dep}")
    return wrong


def grader_context(module: str) -> str | None:
    """The sub-package a grader module belongs to (``python -m grader`` is the host's)."""
    parts = module.split(".")
    if parts[:2] == ["grader", "__main__"]:
        return "host"
    return parts[1] if len(parts) > 2 else None


def grader_violations(module: str, deps: set[str]) -> list[str]:
    """The grader's imports of ``module`` that cross from one process's code to another's."""
    here = grader_context(module)
    wrong = []
    for dep in sorted(deps):
        there = grader_context(dep) if dep.split(".")[0] == "grader" else None
        if here and there and there != here and there not in GRADER_MAY_IMPORT[here]:
            allowed = ", ".join(sorted(GRADER_MAY_IMPORT[here])) or "nothing"
            wrong.append(f"{module} imports {dep}: grader/{here}/ may import {allowed} of the grader's other code")
    return wrong


# --- vizlib's public names -------------------------------------------------------------------


@cache
def public_modules() -> dict[str, frozenset[str]]:
    """vizlib and each of its stage packages, with the names its ``__all__`` lists."""
    found = {}
    for init in [REPO / "vizlib" / "__init__.py", *sorted((REPO / "vizlib").glob("*/__init__.py"))]:
        [names] = [
            ast.literal_eval(node.value)
            for node in parse(init).body
            if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["__all__"]
        ]
        found[module_name(init)] = frozenset(names)
    return found


def attribute_chain(node: ast.Attribute) -> tuple[str, list[str]] | None:
    """`vz.plots.NOTEBOOK_WIDTH` -> ("vz", ["plots", "NOTEBOOK_WIDTH"])."""
    attrs: list[str] = []
    value: ast.expr = node
    while isinstance(value, ast.Attribute):
        attrs.insert(0, value.attr)
        value = value.value
    return (value.id, attrs) if isinstance(value, ast.Name) else None


def private_use(module: str, attrs: list[str]) -> str | None:
    """Where ``module.attrs[0].attrs[1]...`` leaves vizlib's public names, the name it reaches;
    else None."""
    for attr in attrs:
        if attr.startswith("__"):  # vz.__file__, vz.__version__
            return None
        if f"{module}.{attr}" in public_modules():
            module = f"{module}.{attr}"
        elif attr in public_modules()[module]:
            return None
        else:
            return f"{module}.{attr}"
    return None


def vizlib_violations(label: str, trees: list[tuple[str, ast.Module]]) -> list[str]:
    """Uses of vizlib in ``trees`` (one file, or a notebook's code cells in order, so that
    `import vizlib as vz` in one cell binds `vz` in the next) beyond its public names."""
    bound: dict[str, str] = {}  # a name in the code -> the public vizlib module it stands for
    wrong = []
    for place, tree in trees:
        outer = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        for node in ast.walk(tree):
            reached = None
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                reached = import_reach(node, bound)
            elif isinstance(node, ast.Attribute) and id(node) not in outer:
                chain = attribute_chain(node)
                if chain and chain[0] in bound:
                    reached = private_use(bound[chain[0]], chain[1])
            if reached:
                wrong.append(
                    f"{label}{place}:{getattr(node, 'lineno', '?')}: `{ast.unparse(node)}` reaches {reached}, "
                    "which is not a public name of vizlib (use what `vizlib` or its stage package lists in "
                    "__all__, or export it there)"
                )
    return wrong


def import_reach(node: ast.Import | ast.ImportFrom, bound: dict[str, str]) -> str | None:
    """The private vizlib module or name an import reaches (None if it stays public); the
    public modules it binds go into ``bound``."""
    public = public_modules()
    reached = None
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name.split(".")[0] != "vizlib":
                continue
            if alias.name not in public:
                reached = alias.name
            else:
                bound[alias.asname or "vizlib"] = alias.name if alias.asname else "vizlib"
        return reached
    if (node.module or "").split(".")[0] != "vizlib" or node.level:
        return None
    if node.module not in public:
        reached = node.module
    for alias in node.names:
        if f"{node.module}.{alias.name}" in public:
            bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif node.module in public and alias.name not in public[node.module]:
            reached = f"{node.module}.{alias.name}"
    return reached


def cell_tree(source: str, where: str) -> ast.Module:
    """A code cell as Python; where it is not (IPython's `%magic` and `!command` lines), as
    the kernel turns it into Python first."""
    try:
        return ast.parse(source, filename=where)
    except SyntaxError:
        return ast.parse(TransformerManager().transform_cell(source), filename=where)


def notebook_trees(path: Path) -> list[tuple[str, ast.Module]]:
    """A notebook's code cells, in order, labelled by cell number."""
    cells = json.loads(path.read_text())["cells"]
    return [
        (f", cell {n}", cell_tree("".join(cell["source"]), f"{path} cell {n}"))
        for n, cell in enumerate(cells)
        if cell["cell_type"] == "code"
    ]


@cache
def code(folder: str) -> list[tuple[Path, list[tuple[str, ast.Module]]]]:
    """Each Python file and notebook of ``folder`` with its code: one tree for a file, one
    per code cell for a notebook."""
    files = [(path, [("", parse(path))]) for path in python_files(folder)]
    return files + [(path, notebook_trees(path)) for path in sorted((REPO / folder).glob("*.ipynb"))]


# --- the checks ----------------------------------------------------------------------------


@pytest.mark.parametrize("folder", [*FOLDERS, *NOTEBOOKS])
def test_each_folder_imports_only_what_it_may(folder):
    wrong = [v for path, trees in code(folder) for v in folder_violations(path, trees)]
    assert not wrong, "imports against the flow between folders:\n" + "\n".join(wrong)


@pytest.mark.parametrize("folder", [f for f in (*FOLDERS, *NOTEBOOKS) if f != "vizlib"])
def test_code_outside_vizlib_uses_its_public_names(folder):
    wrong = [v for path, trees in code(folder) for v in vizlib_violations(str(path.relative_to(REPO)), trees)]
    assert not wrong, "\n".join(wrong)


def test_every_vizlib_module_has_a_stage():
    modules = [m for m in import_graph() if m.startswith("vizlib")]
    assert {stage(m) for m in modules} <= set(VIZLIB_RANK), "a new vizlib module needs a rank in VIZLIB_RANK"


def test_vizlib_imports_only_its_own_or_a_lower_stage():
    wrong = [
        w
        for module, deps in import_graph().items()
        if module.startswith("vizlib")
        for w in stage_violations(module, deps)
    ]
    assert not wrong, "imports against the flow of stages:\n" + "\n".join(sorted(wrong))


def test_the_graders_code_stays_with_the_process_it_runs_in():
    modules = [m for m in import_graph() if m.startswith("grader.")]
    assert {grader_context(m) for m in modules} - {None} == set(GRADER_MAY_IMPORT), "a grader module outside them"
    wrong = [w for module in modules for w in grader_violations(module, import_graph()[module])]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize(
    ("file", "source", "message"),
    [
        (
            "grader/kernel/session.py",
            "from grader.host.errors import GraderError\n",
            "grader.kernel.session imports grader.host.errors: grader/kernel/ may import nothing",
        ),
        (
            "grader/host/run.py",
            "def f():\n    from grader.plugin import recorder\n",
            "grader.host.run imports grader.plugin.recorder: grader/host/ may import kernel",
        ),
        (
            "grader/plugin/recorder.py",
            "from grader.kernel.watch import Watch\n",
            "grader.plugin.recorder imports grader.kernel.watch: grader/plugin/ may import host",
        ),
    ],
)
def test_a_planted_import_across_the_graders_processes_fails_with_a_message(file, source, message):
    path = REPO / file
    assert any(message in w for w in grader_violations(module_name(path), imports_of(path, source)))


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_circle(package):
    graph = {m: {d for d in deps if d.split(".")[0] == package} for m, deps in import_graph().items()}
    graph = {m: deps for m, deps in graph.items() if m.split(".")[0] == package}
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> None:
        if module in path:
            raise AssertionError("import circle: " + " -> ".join(path[path.index(module) :] + [module]))
        if module in done:
            return
        for dep in sorted(graph.get(module, ())):
            visit(dep, path + [module])
        done.add(module)

    for module in sorted(graph):
        visit(module, [])


# --- the checks catch what they are for: an import planted where it must not be -------------


def test_the_check_sees_a_lazy_import():
    """A function-level import counts: the check would catch data.py importing render."""
    source = "def f():\n    from .render import to_dot\n    return to_dot\n"
    assert "vizlib.render" in imports_of(REPO / "vizlib" / "data.py", source)


@pytest.mark.parametrize(
    ("file", "source", "message"),
    [
        (
            "vizlib/data.py",
            "def f():\n    from coursekit.models import make_mlp\n",
            "vizlib/data.py:2: `from coursekit.models import make_mlp`: vizlib/ imports coursekit/",
        ),
        (
            "vizlib/render/dot.py",
            "import grader.host.notebook\n",
            "vizlib/render/dot.py:1: `import grader.host.notebook`",
        ),
        (
            "coursekit/models.py",
            "from grader import cli\n",
            "coursekit/ imports grader/ (it may import vizlib of ours)",
        ),
        ("coursekit/ranks.py", "from harness.paths import REPO\n", "coursekit/ imports harness/"),
        ("bench/report.py", "from tests.scripts.helpers import ROOT\n", "bench/ imports tests/"),
        ("scripts/lab.py", "import tests\n", "scripts/lab.py:1: `import tests`: scripts/ imports tests/"),
        ("grader/host/run.py", "from playwright.sync_api import Page\n", "playwright is a test-only dependency"),
    ],
)
def test_a_planted_upward_import_fails_with_its_place(file, source, message):
    wrong = folder_violations(REPO / file, [("", parse(REPO / file, source))])
    assert any(message in v for v in wrong), wrong


def test_a_planted_import_in_a_notebook_cell_fails_with_its_cell():
    trees = [("", ast.parse("import vizlib as vz")), (", cell 3", ast.parse("x = 1\nfrom tests.grader import answers"))]
    assert folder_violations(REPO / "course" / "01_tensors.ipynb", trees) == [
        "course/01_tensors.ipynb, cell 3:2: `from tests.grader import answers`: course/ imports tests/ "
        "(it may import coursekit, grader, vizlib of ours)"
    ]


def test_a_planted_import_of_coursekit_in_vizlib_fails_the_stage_check_with_a_message():
    """Once a KeyError: stage() of coursekit.models is no vizlib stage."""
    deps = imports_of(REPO / "vizlib" / "data.py", "from coursekit.models import make_mlp\nfrom .api import graph\n")
    assert stage_violations("vizlib.data", deps) == ["vizlib.data -> vizlib.api"]


@pytest.mark.parametrize(
    ("source", "reached"),
    [
        ("from vizlib.plots.grad_flow import NOTEBOOK_WIDTH\n", "vizlib.plots.grad_flow"),
        ("from vizlib.render import layout_cache_secret\n", "vizlib.render.layout_cache_secret"),
        ("import vizlib.render.dot\n", "vizlib.render.dot"),
        ("import vizlib as vz\nvz.render.dot.FAST_LAYOUT\n", "vizlib.render.dot"),
        ("from vizlib import plots\nplots.style.NOTEBOOK_WIDTH\n", "vizlib.plots.style"),
    ],
)
def test_a_planted_private_vizlib_name_fails_with_its_place(source, reached):
    wrong = vizlib_violations("coursekit/x.py", [("", ast.parse(source))])
    assert len(wrong) == 1 and f"reaches {reached}, which is not a public name of vizlib" in wrong[0], wrong
    assert wrong[0].startswith("coursekit/x.py:"), wrong


def test_public_vizlib_names_pass():
    source = (
        "import vizlib as vz\nfrom vizlib.plots import NOTEBOOK_WIDTH\nfrom vizlib import plots\n"
        "vz.graph(f, x).to_svg()\nvz.plots.BIT_COLOURS\nplots.float_bits(0.1)\nvz.__file__\n"
    )
    assert vizlib_violations("coursekit/x.py", [("", ast.parse(source))]) == []


def test_a_notebook_cell_binds_vizlib_for_the_cells_after_it(tmp_path):
    cells = [
        {"cell_type": "code", "source": "%matplotlib inline\nimport vizlib as vz", "metadata": {}},
        {"cell_type": "markdown", "source": "vz.render.dot", "metadata": {}},
        {"cell_type": "code", "source": "!ls\nvz.render.dot.to_dot", "metadata": {}},
    ]
    notebook = tmp_path / "nb.ipynb"
    notebook.write_text(json.dumps({"cells": cells}))
    [wrong] = vizlib_violations("nb.ipynb", notebook_trees(notebook))
    assert wrong.startswith("nb.ipynb, cell 2:2: `vz.render.dot.to_dot` reaches vizlib.render.dot"), wrong
