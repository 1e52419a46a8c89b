"""Which box a module's ops are drawn in, and what its parameters are called, however the call
reaches the module: handed as the call (``vz.graph(model, x)``), named by ``params=``, or, as
an outside user writes it, through a closure (``lambda ids: model(ids).logits.sum()``), an
argument, a bound method or a container. Two modules are never one box because they were
named alike, or not named at all."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from torch import nn

import vizlib as vz
from vizlib.capture.inputs import _held_tensors, _list_of_modules
from vizlib.capture.specs import ModuleSpecs


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(8, 8), nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(5):
            x = torch.tanh(self.b(torch.relu(self.a(x)))) * 1.01 + 0.1
        return x


def blocks(n: int = 6) -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(*[Block() for _ in range(n)])


def drawn(g: vz.Graph) -> list[tuple]:
    return [(n.kind, n.name, n.repeats, n.modules) for n in g.nodes]


def boxes(g: vz.Graph) -> list[tuple[str, int]]:
    return [(n.name, n.repeats) for n in g.nodes if n.kind == "module"]


def test_a_closure_over_a_model_is_drawn_as_params_would_name_it():
    """Six blocks reached through a closure, folded: one box of six, as with ``params=`` (not
    one box with every block's ops in it, drawn as if each block fed the next through it)."""
    net, x = blocks(), torch.randn(2, 8)
    g = vz.graph(lambda x: net(x).sum(), x)
    assert boxes(g) == [("0-5", 6)], drawn(g)
    assert drawn(g) == drawn(vz.graph(lambda x: net(x).sum(), x, params=net))


def test_a_closure_over_a_model_names_its_parameters():
    net, x = blocks(2), torch.randn(2, 8)
    g = vz.graph(lambda x: net(x).sum(), x, depth=None, max_nodes=None)
    leaves = {n.name for n in g.nodes if n.kind == "leaf"}
    assert leaves == {"x"} | {f"{k}.{layer}.{p}" for k in (0, 1) for layer in "ab" for p in ("weight", "bias")}


def test_two_models_of_a_closure_are_named_by_their_variables():
    """Both have a ``0`` inside: under their own names, they stay apart."""
    net, head, x = blocks(2), nn.Sequential(nn.Linear(8, 2)), torch.randn(2, 8)
    g = vz.graph(lambda x: head(net(x)).sum(), x, max_nodes=None)
    modules = {m for n in g.nodes for m in n.modules}
    assert {"net", "net.0", "net.1", "head", "head.0"} <= modules, modules
    assert g.find("head.0.weight") and g.find("net.1.b.bias")


def test_a_model_handed_as_an_argument_or_a_method_is_named():
    net, x = blocks(), torch.randn(2, 8)
    want = drawn(vz.graph(net, x, grad_output=torch.ones(2, 8)))
    assert drawn(vz.graph(lambda m, input: m(input), net, x, grad_output=torch.ones(2, 8))) == want
    # (a method called as it is runs none of its module's hooks: no box for the whole model)
    method = vz.graph(net.forward, x, grad_output=torch.ones(2, 8))
    assert [(kind, name, k, modules[-1:]) for kind, name, k, modules in drawn(method)] == [
        (kind, name, k, modules[-1:]) for kind, name, k, modules in want
    ]


class _Holder:
    """A plain object holding modules: no name of the user's reaches them."""


def test_modules_no_name_reaches_are_named_apart_when_they_run():
    """Held by a plain object, or made inside the call: each is named by its class, made
    unique, when it first runs, and so are its parameters, drawn inside its box."""
    holder, x = _Holder(), torch.randn(2, 8)
    holder.first, holder.second = blocks(1)[0], blocks(1)[0]
    g = vz.graph(lambda x: holder.second(holder.first(x)).sum(), x, depth=0)
    assert boxes(g) == [("Block", 1), ("Block#2", 1)], drawn(g)
    assert [n.name for n in g.nodes if n.kind == "leaf"] == ["x"], drawn(g)
    g = vz.graph(lambda x: holder.second(holder.first(x)).sum(), x, max_nodes=None)
    assert {n.name: n.modules[0] for n in g.nodes if n.name.endswith("a.weight")} == {
        "Block.a.weight": "Block",
        "Block#2.a.weight": "Block#2",
    }

    def made_inside(x: torch.Tensor) -> torch.Tensor:
        torch.manual_seed(1)
        return nn.Linear(8, 8)(nn.Linear(8, 8)(x)).sum()

    g = vz.graph(made_inside, x, max_nodes=None)
    assert {m for n in g.nodes for m in n.modules} == {"Linear", "Linear#2"}


def test_modules_of_a_list_named_as_they_run_are_grouped_once_each(monkeypatch):
    """Each module of a list no name reaches is named as it first runs, and its first call asks which
    of its siblings are yet to run: every sibling was grouped by its spec anew for each (2,000
    Linears took seconds, growing with their square). Now each module's spec is asked once
    when it joins its siblings and once when the recording ends."""
    torch.manual_seed(0)
    holder = _Holder()
    holder.layers = [nn.Linear(8, 8) for _ in range(40)]
    asked = 0
    of = ModuleSpecs.of

    def counted(self: ModuleSpecs, module: nn.Module) -> object:
        nonlocal asked
        asked += 1
        return of(self, module)

    monkeypatch.setattr(ModuleSpecs, "of", counted)

    def run(x: torch.Tensor) -> torch.Tensor:
        for layer in holder.layers:
            x = torch.tanh(layer(x))
        return x.sum()

    g = vz.graph(run, torch.randn(4, 8))
    assert asked == 2 * len(holder.layers)
    assert [name for name, _ in boxes(g)][:3] == ["Linear", "Linear#2", "Linear#3"]


class _Looked(dict):
    """``calls``, counting how often a module is looked up in it."""

    looked = 0

    def __contains__(self, key: object) -> bool:
        self.looked += 1
        return super().__contains__(key)


def test_a_first_call_reads_only_the_siblings_yet_to_run():
    """``alike`` hands a module's first call its siblings of its spec yet to run, reading no
    sibling that ran before it (each read all of them: the square of their number)."""
    torch.manual_seed(0)
    given = [nn.Linear(8, 8) for _ in range(3)]
    names: dict = {m: f"blocks.{k}" for k, m in enumerate(given)}
    specs, calls = ModuleSpecs(names), _Looked()
    for k, m in enumerate(given):
        calls[m] = 1
        assert specs.alike(m, calls) == given[k + 1 :]
    for k in range(1, 201):  # a list's, each named as it runs (ForwardRecorder._name_unnamed)
        m = nn.Linear(8, 8)
        names[m] = f"Linear#{k}"
        specs.named({m: names[m]})
        calls.looked, calls[m] = 0, 1
        assert specs.alike(m, calls) == [] and calls.looked <= 1


def test_inputs_nested_in_lists_and_dicts_are_named_as_python_reaches_them():
    """A detection model's targets: a list of dicts; a batch: a dict of lists."""
    images = [torch.randn(3), torch.randn(3)]
    targets = [{"boxes": torch.randn(3)}, {"boxes": torch.randn(3)}]

    def loss(images: list, targets: list) -> torch.Tensor:
        return sum((i * t["boxes"]).sum() for i, t in zip(images, targets, strict=True))

    g = vz.graph(loss, images, targets)
    assert g.find("targets[1]['boxes']") and g.find("images[0]")
    g = vz.graph(lambda batch: batch["x"][0] * batch["x"][1], {"x": [torch.tensor(1.0), torch.tensor(2.0)]})
    assert sorted(n.name for n in g.nodes if n.kind == "leaf") == ["batch['x'][0]", "batch['x'][1]"]


class PlainMLP:
    """A model as micrograd (and many a first PyTorch notebook) writes one: tensors held as
    attributes of a plain object, no nn.Module; two of them of one shape."""

    def __init__(self) -> None:
        torch.manual_seed(0)
        self.W1, self.b1 = torch.randn(3, 3, requires_grad=True), torch.zeros(3, requires_grad=True)
        self.W2, self.b2 = torch.randn(3, 3, requires_grad=True), torch.zeros(3, requires_grad=True)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return ((x @ self.W1 + self.b1).tanh() @ self.W2 + self.b2).sum()


def leaf_names(g: vz.Graph) -> list[str]:
    return sorted(n.name for n in g.nodes if n.kind == "leaf")


def test_tensors_a_call_reaches_by_a_name_are_named_so_not_by_their_shape():
    """Not ``tensor[3, 3]`` twice: two leaves of one shape would be drawn alike."""
    mlp, x = PlainMLP(), torch.randn(2, 3)
    assert leaf_names(vz.graph(mlp, x)) == ["W1", "W2", "b1", "b2", "x"]
    assert leaf_names(vz.graph(mlp.__call__, x)) == ["W1", "W2", "b1", "b2", "x"]
    assert leaf_names(vz.graph(lambda x: mlp(x), x)) == ["mlp.W1", "mlp.W2", "mlp.b1", "mlp.b2", "x"]
    ws = [mlp.W1, mlp.W2]
    bias = {"first": mlp.b1}
    g = vz.graph(lambda x: ((x @ ws[0] + bias["first"]) @ ws[1]).sum(), x)
    assert leaf_names(g) == ["bias['first']", "ws[0]", "ws[1]", "x"]
    assert g.find("ws[1]")[0].grad is not None and mlp.W2.grad is None
    g = vz.graph(lambda x: (x @ mlp.W1).sum(), x, params={"first layer": mlp.W1})
    assert leaf_names(g) == ["first layer", "x"]  # params= names it first


def test_a_big_list_is_not_read_through_for_tensors():
    vocabulary = _Counted(["a", "b"] * 100)
    assert _held_tensors("vocabulary", vocabulary) == [] and vocabulary.read == 1
    dataset = _Counted([torch.zeros(1)] * 100_000)  # data, not weights
    assert _held_tensors("dataset", dataset) == [] and dataset.read == 0


def test_a_model_beside_the_one_params_names_is_named_under_its_variable():
    """A student named by ``params=``, its teacher reached through the closure: the teacher's
    modules and parameters under ``teacher.``, never in the student's boxes."""
    torch.manual_seed(0)
    student = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    teacher = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
    x = torch.randn(3, 4)
    distill = lambda x: (student(x) - teacher(x)).square().mean()  # noqa: E731
    g = vz.graph(distill, x, params=student, max_nodes=None)
    leaves = [n.name for n in g.nodes if n.kind == "leaf"]
    assert len(leaves) == len(set(leaves)) and "teacher.0.weight" in leaves and "0.weight" in leaves
    g = vz.graph(distill, x, params=student, depth=1)
    assert {name for name, _ in boxes(g)} == {"0", "1", "2", "teacher.0", "teacher.1", "teacher.2"}


@pytest.mark.parametrize("kind", [list, tuple, nn.ModuleList])
def test_lists_and_dicts_of_modules_are_named_as_a_module_list_would_name_them(kind):
    """A plain list, tuple or dict of modules, or an ``nn.ModuleList``, that the call reaches by
    a name (closure, argument) is never called itself: its modules go under that name, as
    ``layers.0``, ``heads.enc``, with their parameters (``layers.0.a.weight``)."""
    x, layers, kept = torch.randn(2, 8), kind(blocks(2)), blocks(2)
    g = vz.graph(lambda x: layers[1](layers[0](x)).sum(), x, max_nodes=None)
    assert {n.modules[0] for n in g.nodes if n.kind == "op" and n.modules} == {"layers.0", "layers.1"}
    assert g.find("layers.0.a.weight") and g.find("layers.1.b.bias")
    g = vz.graph(lambda x: layers[1](layers[0](x)).sum(), x, depth=0)
    assert boxes(g) == [("layers.0-1", 2)], drawn(g)  # two alike in a row: one box, as blocks.0-11
    heads = {"enc": kept[0], "dec": kept[1]}
    g = vz.graph(lambda x, heads: heads["dec"](heads["enc"](x)).sum(), x, heads, max_nodes=None)
    assert {n.modules[0] for n in g.nodes if n.kind == "op" and n.modules} == {"heads.enc", "heads.dec"}


class _Counted(list):
    """A list that counts the items read from it."""

    read = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        for item in super().__iter__():
            self.read += 1
            yield item


def test_a_big_list_is_not_read_through_for_modules():
    """Asked of every list a call reaches (a vocabulary of millions of words too): the first
    item that is no module settles it."""
    vocabulary = _Counted(["a", "b"] * 100_000)
    assert _list_of_modules(vocabulary) is None and vocabulary.read == 1
    assert _list_of_modules({"a.b": nn.Linear(1, 1)}) is None  # no module may be named so
    assert _list_of_modules([]) is None


def _small() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))


def _names(g: vz.Graph) -> list[tuple[str, str, tuple]]:
    return [(n.kind, n.name, n.modules) for n in g.nodes]


@pytest.mark.parametrize("reached", ["closure", "argument", "params"])
def test_a_compiled_model_is_named_as_its_original(reached):
    """``model = torch.compile(model)`` keeps the model as ``_orig_mod`` inside a wrapper that is
    a module too: reached by a name of the user's or named by ``params=``, its modules and
    parameters are named as the model's own (``0.weight``, box ``0``), never ``_orig_mod.0``,
    and the wrapper is no box around them."""
    plain, x = _small(), torch.randn(5, 3)
    model = torch.compile(plain)
    calls = {
        "closure": lambda **kw: vz.graph(lambda x: model(x).sum(), x, **kw),
        "argument": lambda **kw: vz.graph(lambda m, x: m(x).sum(), model, x, **kw),
        "params": lambda **kw: vz.graph(lambda x: model(x).sum(), x, params=model, **kw),
    }
    originals = {
        "closure": lambda **kw: vz.graph(lambda x: plain(x).sum(), x, **kw),
        "argument": lambda **kw: vz.graph(lambda m, x: m(x).sum(), plain, x, **kw),
        "params": lambda **kw: vz.graph(lambda x: plain(x).sum(), x, params=plain, **kw),
    }
    for kw in ({"max_nodes": None}, {"depth": 1}):
        assert _names(calls[reached](**kw)) == _names(originals[reached](**kw)), kw
    assert boxes(calls[reached](depth=1)) == [("0", 1), ("1", 1), ("2", 1)]


def test_compiled_modules_inside_a_model_or_a_list_are_named_as_their_originals():
    """A block compiled on its own (``model.block = torch.compile(block)``), a list of compiled
    layers: ``1.weight`` and ``layers.0.weight``, as without torch.compile."""
    plain, x = _small(), torch.randn(5, 3)
    model = nn.Sequential(plain[0], plain[1], torch.compile(plain[2]))
    g = vz.graph(lambda x: model(x).sum(), x, max_nodes=None)
    assert _names(g) == _names(vz.graph(lambda x: plain(x).sum(), x, max_nodes=None))
    layers = [torch.compile(nn.Linear(3, 3)) for _ in range(2)]
    g = vz.graph(lambda x: layers[1](layers[0](x)).sum(), x, max_nodes=None)
    assert {n.name for n in g.nodes if n.kind == "leaf"} == {"x"} | {
        f"layers.{k}.{p}" for k in (0, 1) for p in ("weight", "bias")
    }
    assert {m for n in g.nodes for m in n.modules} == {"layers.0", "layers.1"}


_NO_DYNAMO = """
import sys, torch, vizlib as vz
from torch import nn
model = nn.Sequential(nn.Linear(3, 4), nn.ReLU())
vz.graph(lambda x: model(x).sum(), torch.randn(2, 3), params=model)
print("torch._dynamo" in sys.modules)
"""


def test_naming_modules_imports_no_dynamo():
    """Telling a compiled module from a model imports nothing of torch.compile's: whoever never
    compiled pays no import of Dynamo (seconds), and PyTorch's cond fails where it is loaded
    (test_torch_cond_run_eagerly_draws_as_one_node)."""
    ran = subprocess.run([sys.executable, "-c", _NO_DYNAMO], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stdout.strip() == "False"


def _stands_in_for_its_weight(module: nn.Module, args: tuple) -> None:
    """A pre-hook that puts another parameter in the weight's place for the call, as FSDP puts
    the gathered one in its shard's (and accelerate an offloaded one's copy on the device)."""
    module.kept = module._parameters["weight"]
    module._parameters["weight"] = nn.Parameter(module.kept.detach().clone())


def _puts_the_weight_back(module: nn.Module, args: tuple, output: object) -> None:
    module._parameters["weight"] = module.kept


@pytest.mark.parametrize("reached", ["as the call", "through a closure"])
def test_a_parameter_a_pre_hook_puts_in_its_place_is_named_as_the_one_it_stands_in_for(reached):
    """The stand-in, made after vizlib had named the module's parameters, was named by its
    shape: it is the leaf the graph holds, and it is drawn as the parameter it stands for."""
    model = nn.Sequential(nn.Linear(3, 2), nn.ReLU(), nn.Linear(2, 1))
    for layer in (model[0], model[2]):
        layer.register_forward_pre_hook(_stands_in_for_its_weight)
        layer.register_forward_hook(_puts_the_weight_back)
    x = torch.randn(4, 3)
    if reached == "as the call":
        g = vz.graph(model, x, grad_output=torch.ones(4, 1))
        expected = ["0.bias", "0.weight", "2.bias", "2.weight", "input"]
    else:
        g = vz.graph(lambda x: model(x).sum(), x)
        expected = ["0.bias", "0.weight", "2.bias", "2.weight", "x"]
    assert sorted(n.name for n in g.nodes if n.kind == "leaf") == expected
