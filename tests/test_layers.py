"""The packages' imports run one way: no circle, and in vizlib no arrow from a lower stage
to a higher one (docs/ARCHITECTURE.md draws the stages).

Imports are read from the source with ``ast``, every one of them: at module level, inside
functions, and under ``TYPE_CHECKING``, because a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("vizlib", "grader", "coursekit")

# vizlib's stages, lowest first. A module may import its own stage and lower ranks; two
# stages of one rank know nothing of each other.
VIZLIB_RANK = {
    "errors": 0,
    "text": 0,
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


def imports_of(path: Path, source: str | None = None) -> set[str]:
    """Every module of our packages that ``path`` (or ``source`` as if it were there)
    imports, written out in full."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text() if source is None else source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            found.add(base)
            # `from . import x` / `from .render import dot`: x may itself be a module.
            found |= {f"{base}.{alias.name}" for alias in node.names}
    ours = {module_name(p) for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py")}
    return {m for m in found if m in ours and m != name}


def import_graph() -> dict[str, set[str]]:
    return {module_name(p): imports_of(p) for pkg in PACKAGES for p in sorted((REPO / pkg).rglob("*.py"))}


def stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_vizlib_module_has_a_stage():
    modules = [m for m in import_graph() if m.startswith("vizlib")]
    assert {stage(m) for m in modules} <= set(VIZLIB_RANK), "a new vizlib module needs a rank in VIZLIB_RANK"


def test_vizlib_imports_only_its_own_or_a_lower_stage():
    wrong = []
    for module, deps in import_graph().items():
        if not module.startswith("vizlib"):
            continue
        for dep in deps:
            if dep == "vizlib" or stage(dep) == stage(module):
                if dep == "vizlib" and stage(module) != "__init__":
                    wrong.append(f"{module} -> vizlib (the package's façade)")
                continue
            if VIZLIB_RANK[stage(dep)] >= VIZLIB_RANK[stage(module)]:
                wrong.append(f"{module} -> {dep}")
    assert not wrong, "imports against the flow of stages:\n" + "\n".join(sorted(wrong))


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


def test_the_check_sees_a_lazy_import():
    """A function-level import counts: the check would catch data.py importing render."""
    source = "def f():\n    from .render import to_dot\n    return to_dot\n"
    assert "vizlib.render" in imports_of(REPO / "vizlib" / "data.py", source)
