"""What makes two module calls the same block (``ModuleSpec``), and which modules yet to
run are expected to do as one that just ran (``DrawnNumbers``' predictions)."""

from __future__ import annotations

from torch import nn
from torch.nn.parameter import is_lazy

from ..data import ModuleSpec


class ModuleSpecs:
    """The specs of one model's modules, each made once, from its children's."""

    def __init__(self, module_names: dict) -> None:
        self._names = module_names  # nn.Module -> path
        self._children: dict[str, list[nn.Module]] | None = None  # parent path -> its modules (see alike)
        self._groups: dict[str, dict[ModuleSpec, list[nn.Module]]] = {}  # parent path -> its children by spec
        self._grouped: dict[str, int] = {}  # parent path -> how many of its children are in _groups
        self._kin: dict[nn.Module, list[nn.Module]] = {}  # module -> its parent's children of its spec (see alike)
        self._params: dict[int, list] = {}  # what ``of`` has listed of each module
        self._specs: dict[nn.Module, ModuleSpec] = {}

    def of(self, module: nn.Module) -> ModuleSpec:
        """The class and every parameter's name and shape, as ``named_parameters()`` lists them."""
        spec = self._specs.get(module)
        if spec is None:
            listed = _params(module, self._params)
            spec = ModuleSpec(type(module).__name__, tuple((n, shape) for n, shape, _ in listed))
            if id(module) in self._params:  # (not kept while a lazy parameter has no shape yet)
                self._specs[module] = spec
        return spec

    def named(self, paths: dict[nn.Module, str]) -> None:
        """Modules given names (``paths``) since the children of each path were listed."""
        if self._children is not None:
            for m, p in paths.items():
                self._children.setdefault(p.rpartition(".")[0], []).append(m)

    def alike(self, module: nn.Module, calls: dict) -> list[object]:
        """The modules beside ``module`` (children of one parent, as ``blocks.1`` ... ``blocks.11``
        beside ``blocks.0``) of its class and parameter shapes that have not run yet
        (``calls``: module -> how many times it ran)."""
        path = self._names.get(module)
        if not path or calls.get(module) != 1:
            return []
        if module not in self._kin:
            self._group(path.rpartition(".")[0])
        kin = self._kin[module]
        # Those that ran are let go (a first call comes once): each first call reads only the
        # modules yet to run, not every one before it (2,000 Linears of a list: the square).
        kin[:] = [m for m in kin if m not in calls]
        return list(kin)

    def _group(self, parent: str) -> None:
        """The children of the module at path ``parent`` not grouped yet, each with those of
        its spec (itself included): each grouped once, since every module's first call asks
        (comparing each sibling's spec anew cost a tenth of GPT-12's module hooks). A module
        named as it runs (``ForwardRecorder._name_unnamed``) joins the groups of those named
        before it: grouping them all anew for each took 2,000 Linears of a list seconds."""
        if self._children is None:
            self._children = {}
            for m, p in self._names.items():
                self._children.setdefault(p.rpartition(".")[0], []).append(m)
        children = self._children.get(parent, [])
        groups = self._groups.setdefault(parent, {})
        for m in children[self._grouped.get(parent, 0) :]:
            self._kin[m] = groups.setdefault(self.of(m), [])
            self._kin[m].append(m)
        self._grouped[parent] = len(children)


def _params(m: nn.Module, made: dict[int, list]) -> list[tuple[str, tuple[int, ...], int]]:
    """(name, shape, id) of each of ``m``'s parameters, made once per module from its
    children's (``made``: id(module) -> its list): asked of every module,
    ``named_parameters()`` walks each subtree again (GPT-12's 125 modules: a tenth of a
    recording's bookkeeping)."""
    listed = made.get(id(m))
    if listed is None:
        # A lazy module's parameters (nn.LazyLinear) have no shape until its first call: listed
        # as shape (), and not kept, so that the list is made anew once they have one.
        lazy = any(p is not None and is_lazy(p) for p in m._parameters.values())
        listed = [(name, _shape(p), id(p)) for name, p in m._parameters.items() if p is not None]
        for child_name, child in m._modules.items():
            if child is not None:
                listed += [(f"{child_name}.{name}", shape, i) for name, shape, i in _params(child, made)]
                lazy = lazy or id(child) not in made
        seen: set[int] = set()  # a parameter shared by two children is listed once, as torch does
        listed = [p for p in listed if not (p[2] in seen or seen.add(p[2]))]  # type: ignore[func-returns-value]
        if not lazy:
            made[id(m)] = listed
    return listed


def _shape(p: nn.Parameter) -> tuple[int, ...]:
    return () if is_lazy(p) else tuple(p.shape)
