"""Flag solution code that reaches into the checking machinery.

The checks are plain ``assert`` statements that run in the learner's kernel, so an
answer could make them pass without being right: patch a function the checks call
(``torch.allclose = ...``), rebind a module they use (``torch = Fake()``), patch builtins,
swap modules in ``sys.modules``, or hook the kernel (``get_ipython()``) to rewrite the
check cells before they run. A flagged solution is not run and its task fails with the
reason, because once such code has run no verdict in that kernel can be trusted.

Harmless parts of those modules stay open (SAFE_PARTS: ``from IPython.display import
display``, ``importlib.metadata.version``), reached only through their harmless names, and
so do torch's switches set to a plain value (``torch.backends.cudnn.deterministic = True``,
``torch._dynamo.config.cache_size_limit = 64``): a flag or a number that changes how torch
computes, never what a check calls.

This is a static scan of the source, so it is a tripwire for the obvious routes rather
than a sandbox; the rest of the protection is that every check comes from the
instructor's copy.
"""

from __future__ import annotations

import ast
import re

from IPython.core.inputtransformer2 import TransformerManager

FORBIDDEN_MODULES = {
    "builtins": "the builtins module",
    "__builtin__": "the builtins module",
    "grader": "the grader",
    "nbval": "nbval, which runs the checks",
    "pytest": "pytest, which runs the checks",
    "_pytest": "pytest, which runs the checks",
    "IPython": "the IPython kernel, which runs the check cells",
    "ipykernel": "the IPython kernel, which runs the check cells",
    "importlib": "importlib (imports by name hide what is imported)",
}
FORBIDDEN_NAMES = {
    "__builtins__": "__builtins__",
    "__import__": "__import__ (imports by name hide what is imported)",
    "get_ipython": "get_ipython() (kernel hooks can rewrite the check cells)",
    "exec": "exec() (code built at run time cannot be checked)",
    "eval": "eval() (code built at run time cannot be checked)",
    "compile": "compile() (code built at run time cannot be checked)",
    "_grading": "_grading (the checks' own references, see grader/kernel/session.py)",
}
# Reading these is enough to swap or trace the checks' code, or to see the profile function
# of the grader's record (a check's quiet watch) and take a forbidden route where none is there;
# *assigning* any sys attribute (sys.stdout = ...) is caught as a change to a module.
FORBIDDEN_SYS = {"modules", "meta_path", "path_hooks", "settrace", "setprofile", "gettrace", "getprofile"}
# The harmless parts of forbidden modules, and the names of each a learner may use (None:
# any public name): showing things (IPython.display reaches no hook of the kernel's) and
# asking an installed package's version (importlib.metadata less its imports by name:
# import_module, EntryPoint.load). Reached only through these names: ``import IPython.display``
# binds ``IPython``, whose other attributes (IPython.core) stay forbidden.
SAFE_PARTS: dict[str, frozenset[str] | None] = {
    "IPython.display": None,
    # A version's string only: a Distribution's entry points load any module by name.
    "importlib.metadata": frozenset({"version", "PackageNotFoundError"}),
}
# torch's switches a learner may set to a plain value: the flags of torch.backends (not its
# functions: ``is_available = True`` would break every later call of it), and one level of a
# compiler's config (``torch._dynamo.config.cache_size_limit = 64``; not ``cpp.cxx``, a
# command line). A number or a flag changes how torch computes, never what a check calls.
BACKEND_FLAGS = frozenset(
    {
        *("deterministic", "benchmark", "benchmark_limit", "enabled", "allow_tf32"),
        *("allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction"),
    }
)
TORCH_SETTINGS = re.compile(
    rf"torch\.backends\.[A-Za-z]\w*(?:\.matmul)?\.(?:{'|'.join(sorted(BACKEND_FLAGS))})"
    r"|torch\.(?:_dynamo|_inductor|_functorch|fx\.experimental\._config)\.config\.[A-Za-z]\w*"
)


def module_aliases(sources: list[str]) -> dict[str, str]:
    """Names bound by imports in the given cells -> what they name ('np' -> 'numpy',
    'nn' -> 'torch.nn' for ``from torch import nn``)."""
    aliases: dict[str, str] = {}
    for source in sources:
        tree = _parse(source)
        for node in ast.walk(tree) if tree else ():
            if isinstance(node, ast.Import):
                for alias in node.names:
                    bound = alias.asname or alias.name.split(".")[0]
                    aliases[bound] = alias.name if alias.asname else alias.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return aliases


def _parse(source: str) -> ast.Module | None:
    """Parse a cell as IPython would run it (magics become plain calls); None if invalid:
    a syntax error then fails the task when it runs, with Python's own message."""
    try:
        return ast.parse(TransformerManager().transform_cell(source))
    except (SyntaxError, ValueError):
        return None


def _root(node: ast.AST) -> ast.AST:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.value if not isinstance(node, ast.Call) else node.func
    return node


def findings(source: str, modules: dict[str, str]) -> list[str]:
    """What in a solution's source reaches into the checking machinery, one line each
    ('line 3: assigns to torch.allclose'); empty when nothing does. `modules` are the
    module names the instructor's cells bind (see module_aliases)."""
    found: list[str] = []
    if re.search(r"\bget_ipython\b", source):
        found.append("uses get_ipython() (kernel hooks can rewrite the check cells)")
    tree = _parse(source)
    if tree is None:
        return found
    safe = _safe_bindings(tree)
    for node in ast.walk(tree):
        line = getattr(node, "lineno", "?")
        found += [f"line {line}: {what}" for what in (*_reads(node, modules), *_changes(node, modules))]
    found += _unsafe_uses(tree, safe)
    return sorted(set(found), key=found.index)


def _safe_part(dotted: str) -> tuple[str, frozenset[str] | None] | None:
    """The harmless part (SAFE_PARTS) that ``dotted`` ('IPython.display', 'importlib.metadata.version')
    is or lies in, with the names allowed there; None when it is in none."""
    for part, names in SAFE_PARTS.items():
        if dotted == part or dotted.startswith(part + "."):
            return part, names
    return None


def _allowed(dotted: str) -> bool:
    """Whether ``dotted`` is a harmless part, or one of its allowed names with no private
    attribute after it (``display.__globals__`` reaches IPython's own modules)."""
    found = _safe_part(dotted)
    if found is None:
        return False
    part, names = found
    rest = dotted[len(part) + 1 :].split(".") if dotted != part else []
    if not rest:
        return True
    if names is not None and rest[0] not in names:
        return False
    return not any(name.startswith("_") for name in rest)


def _safe_bindings(tree: ast.Module) -> dict[str, str]:
    """The names a solution's own imports of a harmless part bind -> the dotted path they
    name ('IPython' for ``import IPython.display``, 'display' -> 'IPython.display.display')."""
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _safe_part(alias.name) is not None:
                    top = alias.name.split(".")[0]
                    bound[alias.asname or top] = alias.name if alias.asname else top
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                if alias.name != "*" and _allowed(f"{node.module}.{alias.name}"):
                    bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return bound


def _unsafe_uses(tree: ast.Module, safe: dict[str, str]) -> list[str]:
    """Uses of a name bound by an import of a harmless part that leave it (``IPython.core``
    after ``import IPython.display``, ``metadata.import_module``): each whole chain of
    attributes is read, never its inner parts alone."""
    inner = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    found = []
    for node in ast.walk(tree):
        if id(node) in inner or not isinstance(node, (ast.Attribute, ast.Name)):
            continue
        root = _root(node)
        if not isinstance(root, ast.Name) or root.id not in safe or not isinstance(node.ctx, ast.Load):
            continue
        chain = ast.unparse(node)
        dotted = safe[root.id] + chain[len(root.id) :]
        if re.fullmatch(r"[\w.]+", chain) and not _allowed(dotted):
            found.append(f"line {node.lineno}: uses {chain} ({dotted}), which reaches the checking machinery")
    return found


def _reads(node: ast.AST, modules: dict[str, str]) -> list[str]:
    """What one node imports or names of the machinery: forbidden modules and names, the
    strings that reach builtins by name, and sys's import hooks and tracers."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return _imports(node, modules)
    if isinstance(node, ast.Name) and node.id in FORBIDDEN_NAMES and node.id != "get_ipython":
        return [f"uses {FORBIDDEN_NAMES[node.id]}"]
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in ("__builtins__", "builtins"):
        return [f"names {node.value!r}"]
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and modules.get(node.value.id, node.value.id) == "sys"
        and node.attr in FORBIDDEN_SYS
    ):
        return [f"uses sys.{node.attr}"]
    return []


def _imports(node: ast.Import | ast.ImportFrom, modules: dict[str, str]) -> list[str]:
    """An import of a forbidden module or of sys's hooks, or one that binds a name the
    checks use to another module (``import numpy as torch``)."""
    found = []
    names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
    for name in names:
        top = name.split(".")[0]
        if top in FORBIDDEN_MODULES and not _harmless_import(node, name):
            found.append(f"imports {FORBIDDEN_MODULES[top]}")
        if isinstance(node, ast.ImportFrom) and top == "sys":
            bad = {a.name for a in node.names} & FORBIDDEN_SYS
            if bad:
                found.append(f"imports sys.{sorted(bad)[0]}")
    for alias in node.names:
        bound = alias.asname or alias.name.split(".")[0]
        if (
            bound in modules
            and isinstance(node, ast.Import)
            and (alias.name if alias.asname else alias.name.split(".")[0]) != modules[bound]
        ):
            found.append(f"rebinds {bound}, which the checks use")
    return found


def _harmless_import(node: ast.Import | ast.ImportFrom, name: str) -> bool:
    """Whether importing ``name`` as ``node`` does takes only harmless parts (SAFE_PARTS):
    ``import IPython.display``, ``from IPython.display import display``, ``from importlib
    import metadata``; not ``from importlib.metadata import *`` nor ``import_module``."""
    if isinstance(node, ast.Import):
        return _safe_part(name) is not None
    if node.level:
        return False
    return all(alias.name != "*" and _allowed(f"{name}.{alias.name}") for alias in node.names) and (
        _safe_part(name) is not None or all(_safe_part(f"{name}.{alias.name}") for alias in node.names)
    )


def _changes(node: ast.AST, modules: dict[str, str]) -> list[str]:
    """What one node changes of the modules the checks use: an assignment or deletion, a
    def or class under a module's name, or setattr()/delattr() on one."""
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
        return _assigned(node, modules)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name in modules:
        return [f"rebinds {node.name}, which the checks use"]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("setattr", "delattr")
        and node.args
    ):
        root = _root(node.args[0])
        if isinstance(root, ast.Name) and root.id in modules:
            return [f"changes {ast.unparse(node.args[0])} with {node.func.id}()"]
    return []


def _assigned(node: ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete, modules: dict[str, str]) -> list[str]:
    """Targets that are part of a module the checks use (``torch.allclose = ...``,
    ``del torch.nn``), or that rebind its name (``torch = Fake()``)."""
    found = []
    targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
    for target in targets:
        for leaf in ast.walk(target):
            # Only what is stored or deleted: `keep[torch.randperm(n)[:k]] = False` only reads torch.
            if isinstance(leaf, (ast.Attribute, ast.Subscript)) and isinstance(leaf.ctx, (ast.Store, ast.Del)):
                root = _root(leaf)
                if isinstance(root, ast.Name) and root.id in modules and not _torch_setting(node, leaf, modules):
                    found.append(f"changes {ast.unparse(leaf)}, part of {modules[root.id]}")
            elif isinstance(leaf, ast.Name) and leaf.id in modules and isinstance(leaf.ctx, (ast.Store, ast.Del)):
                found.append(f"rebinds {leaf.id}, which the checks use")
    return found


def _torch_setting(node: ast.AST, target: ast.AST, modules: dict[str, str]) -> bool:
    """Whether ``target`` is one of torch's global settings (TORCH_SETTINGS) that ``node``
    sets to a plain value: a flag or a number, never a function the checks would then run,
    nor a string or a tuple (a compiler's command line)."""
    if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None or not isinstance(target, ast.Attribute):
        return False
    try:
        value = ast.literal_eval(node.value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    if not isinstance(value, (bool, int, float)):
        return False
    root = _root(target)
    chain = ast.unparse(target)
    if not isinstance(root, ast.Name) or not re.fullmatch(r"[\w.]+", chain):
        return False
    dotted = modules[root.id] + chain[len(root.id) :]
    return TORCH_SETTINGS.fullmatch(dotted) is not None
