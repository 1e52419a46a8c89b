"""What makes two module calls the same block (``ModuleSpec``), and which modules yet to
run are expected to do as one that just ran (``DrawnNumbers``' predictions)."""

from __future__ import annotations

from torch import nn

from ..data import ModuleSpec


class ModuleSpecs:
    """The specs of one model's modules, each made once, from its children's."""

    def __init__(self, module_names: dict) -> None:
        self._names = module_names  # nn.Module -> path
        self._children: dict[str, list[nn.Module]] | None = None  # parent path -> its modules (see alike)
        self._params: dict[int, list] = {}  # what ``of`` has listed of each module
        self._specs: dict[nn.Module, ModuleSpec] = {}

    def of(self, module: nn.Module) -> ModuleSpec:
        """The class and every parameter's name and shape, as ``named_parameters()`` lists them."""
        spec = self._specs.get(module)
        if spec is None:
            listed = _params(module, self._params)
            spec = self._specs[module] = ModuleSpec(type(module).__name__, tuple((n, shape) for n, shape, _ in listed))
        return spec

    def alike(self, module: nn.Module, calls: dict) -> list[object]:
        """The modules beside ``module`` (children of one parent, as ``blocks.1`` ... ``blocks.11``
        beside ``blocks.0``) of its class and parameter shapes that have not run yet
        (``calls``: module -> how many times it ran)."""
        path = self._names.get(module)
        if not path or calls.get(module) != 1:
            return []
        if self._children is None:
            self._children = {}
            for m, p in self._names.items():
                self._children.setdefault(p.rpartition(".")[0], []).append(m)
        beside = self._children.get(path.rpartition(".")[0], [])
        if len(beside) < 2:
            return []
        spec = self.of(module)
        return [m for m in beside if m is not module and m not in calls and self.of(m) == spec]


def _params(m: nn.Module, made: dict[int, list]) -> list[tuple[str, tuple[int, ...], int]]:
    """(name, shape, id) of each of ``m``'s parameters, made once per module from its
    children's (``made``: id(module) -> its list): asked of every module,
    ``named_parameters()`` walks each subtree again (GPT-12's 125 modules: a tenth of a
    recording's bookkeeping)."""
    listed = made.get(id(m))
    if listed is None:
        listed = [(name, tuple(p.shape), id(p)) for name, p in m._parameters.items() if p is not None]
        for child_name, child in m._modules.items():
            if child is not None:
                listed += [(f"{child_name}.{name}", shape, i) for name, shape, i in _params(child, made)]
        seen: set[int] = set()  # a parameter shared by two children is listed once, as torch does
        listed = made[id(m)] = [p for p in listed if not (p[2] in seen or seen.add(p[2]))]  # type: ignore[func-returns-value]
    return listed
