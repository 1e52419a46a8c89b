"""Every bad input gets one clear vz.VizlibError that says what to do; learners' errors pass through."""

import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import vizlib as vz
from vizlib.render import engines


def _line(x, w):
    return w * x


def _posthoc_graph():
    x = torch.ones(2, requires_grad=True)
    return vz.graph((x * 2).sum())


WRONG_TYPES = {
    "vz.graph(42)": lambda: vz.graph(42),
    "vz.graph(None)": lambda: vz.graph(None),
    "vz.graph(a string)": lambda: vz.graph("y = x * 2"),
    "vz.graph(tensor, more inputs)": lambda: vz.graph(torch.ones(2, requires_grad=True), 3.0),
    "params= a list": lambda: vz.graph(lambda x: x.sum(), torch.ones(2), params=["x"]),
    "grad_output= a string": lambda: vz.graph(lambda x: x * 2, torch.ones(2), grad_output="ones"),
    "vz.explore(not a function)": lambda: vz.explore(42, x=1.0),
    "vz.explore with a string input": lambda: vz.explore(_line, x="2", w=1.0),
    "vz.explore with an argument fn does not take": lambda: vz.explore(_line, x=1.0, z=2.0),
    "vz.replay(not a graph)": lambda: vz.replay("g"),
    "vz.grad_flow(not a module)": lambda: vz.grad_flow(42),
    "vz.GradFlowMonitor(not a module)": lambda: vz.GradFlowMonitor([torch.ones(2)]),
    "vz.GradFlowMonitor(scaler= not a GradScaler)": lambda: vz.GradFlowMonitor(torch.nn.Linear(1, 1), scaler=2.0**16),
    "vz.tensor_layout(a list)": lambda: vz.tensor_layout([1, 2, 3]),
    "vz.timeline(a list of intervals)": lambda: vz.timeline([(0.0, 1.0, "a")]),
    "g.save(a number)": lambda: _posthoc_graph().save(3),
    "g.find(None)": lambda: _posthoc_graph().find(None),
    "vz.explore of a module with an input its forward does not take": lambda: vz.explore(torch.nn.Linear(1, 1), x=1.0),
}
WRONG_VALUES = {
    "a tensor that does not require grad": lambda: vz.graph(torch.ones(3) * 2),
    "a non-scalar result without grad_output": lambda: vz.graph(lambda x: x * 2, torch.ones(2, 3)),
    "grad_output of the wrong shape": lambda: vz.graph(lambda x: x * 2, torch.ones(2), grad_output=torch.ones(3)),
    "a range with low > high": lambda: vz.explore(_line, x=(5, -5), w=1.0),
    "a tensor input to a slider": lambda: vz.explore(_line, x=torch.ones(3), w=1.0),
    "replay of a post-hoc graph": lambda: vz.replay(_posthoc_graph()),
    "grad_flow before backward": lambda: vz.grad_flow(torch.nn.Linear(2, 2)),
    "a model with every parameter frozen": lambda: vz.grad_flow(torch.nn.Linear(2, 2).requires_grad_(False)),
    "a sparse tensor to tensor_layout": lambda: vz.tensor_layout(torch.eye(2).to_sparse()),
    "an unknown file suffix": lambda: _posthoc_graph().save("graph.jpeg"),
    "a timeline interval that ends before it starts": lambda: vz.timeline({"lane": [(2.0, 1.0, "x")]}),
    "grad_output for a graph drawn after the fact": lambda: vz.graph(
        (torch.ones(2, requires_grad=True) * 2), grad_output=torch.ones(2)
    ),
}


@pytest.mark.parametrize("call", WRONG_TYPES.values(), ids=WRONG_TYPES)
def test_an_argument_of_the_wrong_type_is_a_type_error(call):
    with pytest.raises(TypeError) as info:
        call()
    assert isinstance(info.value, vz.VizlibError) and not isinstance(info.value, ValueError)


@pytest.mark.parametrize("call", WRONG_VALUES.values(), ids=WRONG_VALUES)
def test_an_argument_with_a_wrong_value_is_a_value_error(call):
    with pytest.raises(ValueError) as info:
        call()
    assert isinstance(info.value, vz.VizlibError) and not isinstance(info.value, TypeError)


def test_tensor_that_does_not_require_grad():
    with pytest.raises(vz.VizlibError, match="requires_grad=True"):
        vz.graph(torch.ones(3) * 2)


def test_result_that_does_not_depend_on_the_inputs():
    with pytest.raises(vz.VizlibError, match="requir"):
        vz.graph(lambda x: torch.ones(()), torch.ones(2))


def test_result_that_is_not_a_tensor():
    with pytest.raises(vz.VizlibError):
        vz.graph(lambda x: x.sum().item(), torch.ones(2))


@pytest.mark.parametrize("target", ["y = x * 2", 3.0, None, [1, 2]])
def test_not_a_tensor_function_or_module(target):
    with pytest.raises(vz.VizlibError, match="tensor"):
        vz.graph(target)


def test_graph_freed_by_an_earlier_backward():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(vz.VizlibError, match="backward") as info:
        vz.graph(y, show_saved=True)
    assert "retain_graph=True" in str(info.value)


def test_function_that_runs_backward_itself():
    def f(x):
        y = (x.exp() * x).sum()
        y.backward()
        return y

    with pytest.raises(vz.VizlibError, match="backward"):
        vz.graph(f, torch.tensor([1.0, 2.0]))


@pytest.mark.parametrize("shape", [(3,), ()])
def test_grad_output_on_another_device_than_the_result_says_where_to_make_it(shape):
    # (a model moved to the GPU, its grad_output made on the CPU: here the meta device stands in)
    def f(x):
        return (x * 2).reshape(shape) if shape else (x * 2).sum()

    with pytest.raises(ValueError, match=r"grad_output is on meta, but the result it seeds is on cpu") as info:
        vz.graph(f, torch.ones(3), grad_output=torch.ones(shape, device="meta"))
    assert isinstance(info.value, vz.VizlibError)
    suggested = str(info.value).split("e.g. grad_output=", 1)[1].split(", or move", 1)[0]
    g = vz.graph(f, torch.ones(3), grad_output=eval(suggested, {"torch": torch}))  # the advice, followed
    assert g.find("x")[0].grad == [2.0, 2.0, 2.0]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (run on a GPU machine)")
def test_a_one_number_grad_output_on_the_cpu_seeds_a_loss_on_the_gpu():
    # autograd moves a 0-d gradient to its output's device itself: no refusal of vizlib's
    g = vz.graph(lambda x: (x * 2).sum(), torch.ones(3, device="cuda"), grad_output=torch.tensor(1.0))
    assert g.find("x")[0].grad == [2.0, 2.0, 2.0]


def test_the_suggested_grad_output_is_made_on_the_results_device():
    with pytest.raises(vz.VizlibError, match=r"e.g. grad_output=torch.ones\(3, device='meta'\)"):
        vz.graph(lambda x: x * 2, torch.ones(3, device="meta"))


def test_non_scalar_result_without_grad_output():
    with pytest.raises(vz.VizlibError, match="grad_output") as info:
        vz.graph(lambda x: x * 2, torch.ones(2, 3))
    assert "[2, 3]" in str(info.value) or "(2, 3)" in str(info.value), "the message shows the shape"


@pytest.mark.parametrize("grad_output", [torch.ones(3), [torch.ones(2), torch.ones(2)], "ones"])
def test_grad_output_of_the_wrong_shape(grad_output):
    with pytest.raises(vz.VizlibError, match="grad_output"):
        vz.graph(lambda x: x * 2, torch.ones(2), grad_output=grad_output)


def test_params_of_the_wrong_type():
    with pytest.raises(vz.VizlibError, match="params"):
        vz.graph(lambda x: x.sum(), torch.ones(2), params=["x"])


def test_no_graphviz_at_all_says_how_to_install_it(monkeypatch, tmp_path):
    g = vz.graph(lambda x: (x * 3).sum(), torch.ones(2))
    monkeypatch.setenv("PATH", str(tmp_path))  # no `dot` program
    monkeypatch.setattr(engines, "graphviz_pure_program", lambda: None)  # no graphviz-pure
    monkeypatch.setitem(sys.modules, "pygraphviz", None)  # and no pygraphviz: its import fails
    monkeypatch.delenv("VIZLIB_RENDERER", raising=False)
    with pytest.raises(vz.VizlibError, match="Graphviz") as info:
        g.to_svg()
    assert "install" in str(info.value)
    with pytest.raises(vz.VizlibError, match="Graphviz"):
        g.save(tmp_path / "g.png")
    assert not (tmp_path / "g.png").exists()
    bundle = g._repr_mimebundle_()
    assert "image/svg+xml" not in bundle and bundle["text/plain"] == repr(g)
    assert 'data-renderer="browser"' in bundle["text/html"], "Jupyter's front-end draws it instead"
    assert g.save(tmp_path / "g.dot").read_text() == g.to_dot(), ".dot needs no Graphviz"


def test_unknown_suffix(tmp_path):
    g = vz.graph(lambda x: (x * 3).sum(), torch.ones(2))
    for name in ("g.jpeg", "g"):
        with pytest.raises(vz.VizlibError, match=r"\.svg"):
            g.save(tmp_path / name)
        assert not (tmp_path / name).exists()


def test_a_file_named_only_by_a_suffix_is_told_to_get_a_name(tmp_path):
    g = vz.graph(lambda x: (x * 3).sum(), torch.ones(2))
    with pytest.raises(ValueError, match=r"'\.SVG' is a file name with no suffix.*e\.g\. .*graph\.SVG"):
        g.save(tmp_path / ".SVG")  # (Python reads '.SVG' as a hidden file's name, not a suffix)
    assert not (tmp_path / ".SVG").exists()


@pytest.mark.parametrize(
    "draw",
    [
        lambda layers: vz.graph(layers, torch.ones(2)),
        lambda layers: vz.explore(layers, x=1.0),
        lambda layers: vz.joint_graph(layers, torch.ones(2)),
        lambda layers: vz.compiled_graphs(layers, torch.ones(2)),
    ],
    ids=["graph", "explore", "joint_graph", "compiled_graphs"],
)
@pytest.mark.parametrize("layers", [torch.nn.ModuleList([torch.nn.Linear(2, 2)]), torch.nn.ModuleDict()])
def test_a_container_of_modules_is_told_to_draw_a_function_that_runs_them(draw, layers):
    """Calling a ModuleList raises torch's NotImplementedError, which says nothing of what to draw."""
    with pytest.raises(TypeError, match="has no forward of its own.*Draw a function that runs its modules") as info:
        draw(layers)
    assert isinstance(info.value, vz.VizlibError)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch.jit's own, on 2.13
def test_modules_with_a_forward_of_their_own_are_not_taken_for_containers():
    """A ScriptModule's class-level forward raises when read from the class, and a forward set
    on the module itself (m.forward = fn) is its forward: both draw as they did."""
    lin = torch.nn.Linear(2, 1)
    holder = torch.nn.Module()
    holder.lin = lin
    holder.forward = lambda x: holder.lin(x).sum()
    for model in (holder, torch.jit.script(torch.nn.Sequential(lin)), torch.jit.trace(lin, torch.ones(2))):
        assert {"lin.weight", "weight", "0.weight"} & {n.name for n in vz.graph(model, torch.ones(2)).nodes}
    assert vz.joint_graph(holder, torch.ones(2)).nodes


def test_a_number_used_where_torch_needs_a_plain_number_is_told_to_go_through_a_closure():
    """vz.graph makes a number argument a leaf that requires grad; one used as a setting (eps,
    dropout's p) or handed to NumPy cannot be a tensor: the error names it and the way out."""
    x = torch.ones(3)
    cases = {
        "eps": (lambda x, eps: F.layer_norm(x, (3,), eps=eps).sum(), 1e-5),
        "p": (lambda x, p: F.dropout(x, p).sum(), np.float32(0.5)),
        "s": (lambda x, s: (x * np.exp(s)).sum(), 2.0),
    }
    for name, (fn, number) in cases.items():
        with pytest.raises(vz.VizlibError, match=f"uses {name} where a plain number is needed") as info:
            vz.graph(fn, x, number)
        assert isinstance(info.value, TypeError)  # (as torch raised it)
        assert f"vz.graph(lambda x: f(x, {name}={float(number)!r}), x)" in str(info.value)
    fn, number = cases["eps"]
    assert vz.graph(lambda x: fn(x, number), x).nodes  # the way out draws

    def raises_its_own(x, k):
        raise TypeError("scale must be float, not Tensor")  # the function's own words, about x

    with pytest.raises(TypeError, match="^scale must be float") as info:
        vz.graph(raises_its_own, x, x)
    assert not isinstance(info.value, vz.VizlibError)


class LearnerError(Exception):
    pass


def test_saving_where_no_file_can_be_written_says_why(tmp_path):
    g = _posthoc_graph()
    with pytest.raises(vz.VizlibError, match="the folder .*missing does not exist. Create it first"):
        g.save(tmp_path / "missing" / "g.svg")
    (tmp_path / "a.svg").mkdir()
    with pytest.raises(vz.VizlibError, match="that is a folder"):
        g.save(tmp_path / "a.svg")
    assert not list((tmp_path / "a.svg").iterdir())


def test_saving_under_the_home_folder_expands_the_tilde(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    written = _posthoc_graph().save("~/graph.dot")
    assert written == tmp_path / "graph.dot" and written.read_text().startswith("digraph")


def test_learners_exception_propagates_unchanged():
    err = LearnerError("my own message")

    def f(x):
        raise err

    with pytest.raises(LearnerError) as info:
        vz.graph(f, torch.ones(2))
    assert info.value is err and str(info.value) == "my own message"


def test_learners_value_error_is_not_turned_into_a_vizlib_error():
    def f(x):
        raise ValueError("shapes do not match, says the learner")

    with pytest.raises(ValueError) as info:
        vz.graph(f, torch.ones(2))
    assert type(info.value) is ValueError


def test_torch_errors_inside_the_function_propagate_unchanged():
    def f(x):
        return x @ torch.ones(3, 3)  # shape error raised by torch, from the learner's code

    with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
        vz.graph(f, torch.ones(1, 2))


def test_errors_in_module_forward_propagate_unchanged():
    class Broken(torch.nn.Module):
        def forward(self, x):
            raise IndexError("bad index in forward")

    with pytest.raises(IndexError, match="bad index in forward"):
        vz.graph(Broken(), torch.ones(2))


# Run apart: reading a tensor whose memory was freed crashes the whole process (it did, in
# vizlib's reading of its values).
_FREED_BEFORE = """
import torch
import vizlib as vz
from vizlib.errors import VizlibValueError

def freed(t):
    t.untyped_storage().resize_(0)
    return t

lin = torch.nn.Linear(2, 2)
lin(torch.ones(1, 2)).sum().backward()
x = torch.ones(3, requires_grad=True)
y = (x * x).sum()
calls = {
    "layout": lambda: vz.tensor_layout(freed(torch.ones(3))),
    "after the fact": lambda: vz.graph(y) if freed(x) is x else None,
    "recorded": lambda: vz.graph(lambda a, b: (a * b).sum(), torch.ones(2), b=freed(torch.ones(2))),
    "grad_flow": lambda: vz.grad_flow(lin) if freed(lin.weight.grad) is not None else None,
}
for name, call in calls.items():
    try:
        call()
    except VizlibValueError as err:
        print(name, str(err)[: str(err).index(":")])
"""


def test_a_tensor_whose_memory_was_freed_is_refused_not_read():
    ran = subprocess.run([sys.executable, "-c", _FREED_BEFORE], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stdout.splitlines() == [
        "layout t has no memory for its values",
        "after the fact The leaf tensor[3] has no memory for its values",
        "recorded The input b has no memory for its values",
        "grad_flow The gradient of weight has no memory for its values",
    ]
