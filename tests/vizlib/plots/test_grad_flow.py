"""grad_flow and GradFlowMonitor: the numbers equal autograd's, problems get flagged,
the model and its .grad are never touched, and hooks go away when asked."""

import copy
import gc
import io
import math
import pickle
import re
import sys
import warnings
import weakref

import matplotlib.pyplot as plt
import pytest
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from torch import nn
from torch.optim.optimizer import _global_optimizer_pre_hooks
from torch.utils._python_dispatch import TorchDispatchMode

import vizlib as vz
from vizlib.plots.grad_flow import EXPLODING, VANISHING, GradFlowMonitor, grad_flow, grad_magnitudes
from vizlib.plots.style import NOTEBOOK_WIDTH


def mlp(depth: int, act=nn.Sigmoid, width: int = 16, seed: int = 0) -> nn.Sequential:
    torch.manual_seed(seed)
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), act()]
    return nn.Sequential(*layers, nn.Linear(width, 1))


def backward(model: nn.Module, seed: int = 1) -> None:
    """One regression loss on random data, backpropagated into the model's .grad."""
    width = next(m for m in model.modules() if isinstance(m, nn.Linear)).in_features
    g = torch.Generator().manual_seed(seed)
    out = model(torch.randn(32, width, generator=g))
    nn.functional.mse_loss(out, torch.randn(out.shape, generator=g)).backward()


class WithUnused(nn.Module):
    """A model with a layer its forward never uses: that layer gets no gradient."""

    def __init__(self) -> None:
        super().__init__()
        self.used = nn.Linear(4, 1)
        self.unused = nn.Linear(4, 4)

    def forward(self, x):
        return self.used(x)


def snapshot(model: nn.Module) -> list:
    return [
        (n, p.detach().clone(), None if p.grad is None else p.grad.clone(), p.grad, p.requires_grad)
        for n, p in model.named_parameters()
    ]


def assert_unchanged(model: nn.Module, before: list) -> None:
    for (n, value, grad, grad_obj, req), (n2, p) in zip(before, model.named_parameters(), strict=True):
        assert n == n2 and p.requires_grad == req and torch.equal(p, value)
        assert p.grad is grad_obj  # the very same .grad object, not a replacement
        assert (grad is None) == (p.grad is None)
        if grad is not None:
            assert torch.equal(p.grad, grad)


def test_magnitudes_equal_autograd_grads_in_registration_order():
    model = mlp(3)
    backward(model)
    found = grad_magnitudes(model)
    assert [p.name for p in found] == [n for n, _ in model.named_parameters()]
    for p, (_, param) in zip(found, model.named_parameters(), strict=True):
        assert p.mean == pytest.approx(param.grad.abs().mean().item(), rel=1e-6)
        assert p.max == param.grad.abs().max().item()


def test_frozen_parameters_are_left_out_and_unused_ones_say_no_grad():
    model = WithUnused()
    model.used.bias.requires_grad_(False)
    backward(model)
    found = {p.name: p.status for p in grad_magnitudes(model)}
    assert found == {"used.weight": "ok", "unused.weight": "no grad", "unused.bias": "no grad"}


def test_deep_sigmoid_network_flags_its_first_layers_as_vanishing():
    model = mlp(10)
    backward(model)
    found = grad_magnitudes(model)
    statuses = [p.status for p in found]
    assert statuses[0] == "vanishing" and statuses[-1] == "ok"
    # Gradients shrink on the way back: the flagged layers are exactly the first ones.
    flagged = statuses.count("vanishing")
    assert statuses == ["vanishing"] * flagged + ["ok"] * (len(statuses) - flagged)
    assert all(p.mean < VANISHING for p in found[:flagged])


def test_shallow_healthy_network_flags_nothing():
    model = mlp(2, act=nn.ReLU)
    backward(model)
    assert {p.status for p in grad_magnitudes(model)} == {"ok"}


def test_gradients_that_grow_on_the_way_back_are_flagged_exploding():
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Linear(8, 8) for _ in range(8)])
    with torch.no_grad():
        for layer in model:
            nn.init.orthogonal_(layer.weight, gain=4.0)  # backward multiplies by 4 per layer
            layer.bias.zero_()
    x = torch.randn(32, 8) / 4**8  # small input, so the output (and loss gradient) is O(1)
    model(x).pow(2).mean().backward()
    found = {p.name: p for p in grad_magnitudes(model)}
    assert found["0.bias"].status == "exploding" and found["7.bias"].status == "ok"
    assert found["0.bias"].mean > EXPLODING


def test_nan_gradient_is_flagged_and_drawn(tmp_path):
    model = mlp(1)
    backward(model)
    model[0].weight.grad[0, 0] = math.nan
    statuses = {p.name: p.status for p in grad_magnitudes(model)}
    assert statuses["0.weight"] == "non-finite" and statuses["0.bias"] == "ok"
    fig = grad_flow(model)
    assert "NaN/Inf" in [t.get_text() for t in fig.axes[0].texts]
    fig.savefig(tmp_path / "nan.png")


def test_grad_flow_figure_is_log_scaled_marks_no_grad_and_renders(tmp_path):
    model = WithUnused()
    backward(model)
    open_figures = plt.get_fignums()
    before = snapshot(model)
    fig = vz.grad_flow(model)
    assert_unchanged(model, before)
    assert plt.get_fignums() == open_figures  # closed: Jupyter shows it once, via the return value
    ax = fig.axes[0]
    assert ax.get_yscale() == "log"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["used.weight", "used.bias", "unused.weight", "unused.bias"]
    assert [t.get_text() for t in ax.texts].count("no grad") == 2
    low, high = ax.get_ylim()
    assert low < VANISHING and high > EXPLODING  # both danger zones are on the picture
    fig.savefig(tmp_path / "flow.png")
    assert (tmp_path / "flow.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_grad_flow_of_a_model_with_many_parameters_thins_its_labels(tmp_path):
    model = mlp(30, act=nn.Tanh)
    backward(model)
    fig = grad_flow(model)
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert 20 <= len(labels) <= 40 and labels[0] == "0.weight"
    fig.savefig(tmp_path / "many.png")


def svg_texts(fig) -> list[str]:
    """The texts of ``fig`` as matplotlib writes them into an SVG with its fonts as text: a
    string drawn as TeX math is written as glyph paths instead, and is not among them."""
    buf = io.StringIO()
    with plt.rc_context({"svg.fonttype": "none"}):
        fig.savefig(buf, format="svg")
    return re.findall(r"<text[^>]*>([^<]*)</text>", buf.getvalue())


def test_parameter_names_with_dollar_signs_are_written_as_they_are():
    """A name holding two '$' (a ParameterDict key "cost$x$") was drawn by matplotlib as TeX
    math: "costx" in italics. The axes of both plots write it as it is."""
    model = nn.Module()
    model.p = nn.ParameterDict({"cost$x$": nn.Parameter(torch.ones(2)), "$b$": nn.Parameter(torch.ones(2))})
    with GradFlowMonitor(model) as mon:
        sum((p * p).sum() for p in model.parameters()).backward()
        mon.record()
    for fig in (grad_flow(model), mon.plot()):
        texts = svg_texts(fig)
        assert "p.cost$x$" in texts and "p.$b$" in texts, texts
        plt.close(fig)


def test_grad_flow_before_backward_says_to_call_backward():
    model = mlp(1)
    with pytest.raises(vz.VizlibError, match=r"grad_flow: no parameter .* Call loss\.backward\(\) first"):
        grad_flow(model)
    assert all(p.grad is None for p in model.parameters())


def test_grad_flow_of_a_non_module_says_what_to_pass():
    model = mlp(1)
    with pytest.raises(vz.VizlibError, match=r"grad_flow expects an nn.Module \(got Parameter\)"):
        grad_flow(model[0].weight)
    with pytest.raises(vz.VizlibError, match="nn.Module"):
        grad_flow(model.parameters())


def test_model_without_trainable_parameters_is_a_clear_error():
    model = mlp(1).requires_grad_(False)
    with pytest.raises(vz.VizlibError, match="no parameter that requires grad"):
        grad_flow(model)
    with pytest.raises(vz.VizlibError, match="no parameter that requires grad"):
        GradFlowMonitor(nn.ReLU())


def train(model: nn.Module, steps: int, check=None) -> None:
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(steps):
        opt.zero_grad()
        backward(model, seed=step)
        if check is not None:
            check(model)
        opt.step()


def test_monitor_records_every_optimizer_step_with_the_gradients_the_step_used():
    model = mlp(3)
    expected = []

    def remember(m):
        expected.append([(p.grad.abs().mean().item(), p.grad.abs().max().item()) for p in m.parameters()])

    with vz.GradFlowMonitor(model) as mon:
        train(model, steps=5, check=remember)
    assert mon.layers == [n for n, _ in model.named_parameters()]
    assert len(mon.history) == 5 and all(len(row) == len(mon.layers) for row in mon.history)
    for row, want in zip(mon.history, expected, strict=True):
        assert [p.name for p in row] == mon.layers
        assert [p.mean for p in row] == pytest.approx([m for m, _ in want], rel=1e-6)
        assert [p.max for p in row] == [m for _, m in want]


def test_monitor_does_not_change_training():
    watched, plain = mlp(3, seed=7), mlp(3, seed=7)
    with GradFlowMonitor(watched):
        train(watched, steps=4)
    train(plain, steps=4)
    for (n, a), (_, b) in zip(watched.named_parameters(), plain.named_parameters(), strict=True):
        assert torch.equal(a, b), n
        assert torch.equal(a.grad, b.grad), n


def test_monitor_ignores_optimizers_of_other_models():
    model, other = mlp(1), mlp(1, seed=3)
    with GradFlowMonitor(model) as mon:
        train(other, steps=3)
        assert mon.history == []
        train(model, steps=2)
    assert len(mon.history) == 2


def test_monitor_ignores_a_step_that_vz_graph_draws_and_undoes():
    model, x = mlp(1), torch.randn(4, 16)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def step(x: torch.Tensor) -> torch.Tensor:
        opt.zero_grad()
        model(x).square().mean().backward()
        opt.step()
        return model(x).square().mean()

    with GradFlowMonitor(model) as mon:
        step(x)
        vz.graph(step, x, params=model)
        step(x)
    assert len(mon.history) == 2


def test_close_and_with_block_remove_the_hook():
    hooks = len(_global_optimizer_pre_hooks)
    model = mlp(1)
    mon = GradFlowMonitor(model)
    assert len(_global_optimizer_pre_hooks) == hooks + 1 and mon.recording
    train(model, steps=2)
    mon.close()
    assert len(_global_optimizer_pre_hooks) == hooks and not mon.recording
    train(model, steps=2)
    assert len(mon.history) == 2  # the history stays, nothing more is recorded
    mon.close()  # closing twice is harmless

    with GradFlowMonitor(model) as mon2:
        assert len(_global_optimizer_pre_hooks) == hooks + 1
    assert len(_global_optimizer_pre_hooks) == hooks and "closed" in repr(mon2)


def test_a_dropped_monitor_is_freed_and_removes_its_hook():
    hooks = len(_global_optimizer_pre_hooks)
    model = mlp(1)
    dropped = weakref.ref(GradFlowMonitor(model))  # created and forgotten, as in a re-run cell
    gc.collect()
    assert dropped() is None  # the global hook did not keep it (and its model) alive
    assert len(_global_optimizer_pre_hooks) == hooks
    train(model, steps=1)  # no dead hook fires


def test_record_by_hand_for_a_hand_written_update():
    model = WithUnused()
    mon = GradFlowMonitor(model)
    for step in range(3):
        model.zero_grad()
        backward(model, seed=step)
        mon.record()
        with torch.no_grad():
            for p in model.used.parameters():
                p -= 0.1 * p.grad
    mon.close()
    assert len(mon.history) == 3
    assert [p.status for p in mon.history[-1]] == ["ok", "ok", "no grad", "no grad"]
    assert mon.history[-1][0].mean == pytest.approx(model.used.weight.grad.abs().mean().item(), rel=1e-6)


def test_monitor_plot_is_a_layers_by_steps_heatmap(tmp_path):
    model = WithUnused()
    with GradFlowMonitor(model) as mon:
        train(model, steps=6)
    open_figures = plt.get_fignums()
    fig = mon.plot()
    assert plt.get_fignums() == open_figures
    image = fig.axes[0].images[0]
    grid = image.get_array()
    assert grid.shape == (len(mon.layers), 6)
    assert grid.mask[2:].all() and not grid.mask[:2].any()  # unused layer: "no grad" cells
    assert grid[0, 0] == pytest.approx(mon.history[0][0].mean)
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == mon.layers
    fig.savefig(tmp_path / "monitor.png")
    assert (tmp_path / "monitor.png").stat().st_size > 1000


def test_monitor_plot_of_vanishing_network_puts_first_layers_below_the_colour_scale():
    model = mlp(10)
    with GradFlowMonitor(model) as mon:
        train(model, steps=3)
    image = mon.plot().axes[0].images[0]
    grid, norm = image.get_array(), image.norm
    assert (grid[0] < norm.vmin).all()  # drawn in the "vanishing" colour
    assert (grid[-1] >= norm.vmin).all()


def test_monitor_plot_before_any_step_says_how_to_record():
    mon = GradFlowMonitor(mlp(1))
    with pytest.raises(vz.VizlibError, match=r"optimizer\.step\(\)|record\(\)"):
        mon.plot()
    mon.close()


def test_monitor_labels_of_a_long_run_on_a_deep_model_stay_readable_at_the_notebook_width():
    model = mlp(15)  # 32 rows of labels, about as many as a small GPT has
    backward(model)
    with GradFlowMonitor(model) as mon:
        for _ in range(300):  # a long run: as wide as the notebook, not wider
            mon.record()
    fig = mon.plot()
    shown_px = 860  # JupyterLab's output area: a wider figure is scaled down to it
    scale = min(1.0, shown_px / (fig.get_figwidth() * fig.dpi))
    labels = fig.axes[0].get_yticklabels()
    assert len(labels) == 32
    heights_px = [label.get_fontsize() / 72 * fig.dpi * scale for label in labels]
    assert min(heights_px) >= 10
    row_px = fig.axes[0].get_window_extent().height / 32 * scale
    assert row_px >= max(heights_px)  # one row per label: they do not overlap


def _texts_inside_the_figure(fig) -> bool:
    """Whether everything drawn of ``fig`` (titles, labels, the colour bar's) lies within it:
    none cut at an edge."""
    canvas = FigureCanvasAgg(fig)  # (a figure closed by pyplot has no canvas that draws)
    canvas.draw()
    drawn, page = fig.get_tightbbox(canvas.get_renderer()), fig.bbox_inches
    return (
        page.x0 - 0.01 <= drawn.x0
        and drawn.x1 <= page.x1 + 0.01
        and page.y0 - 0.01 <= drawn.y0
        and drawn.y1 <= page.y1 + 0.01
    )


def test_sparse_gradients_are_measured_over_every_element_without_densifying():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(10, 3, sparse=True), nn.Linear(3, 1))
    with GradFlowMonitor(model) as mon:
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        model(torch.tensor([1, 2, 2])).sum().backward()  # row 2 twice: a sparse gradient sums the repeats
        opt.step()  # the monitor's hook runs inside the user's step: it must not raise there
    dense = model[0].weight.grad.to_dense().abs()
    found = grad_magnitudes(model)[0]
    assert found.mean == pytest.approx(dense.mean().item(), rel=1e-6) and found.max == dense.max().item()
    assert mon.history[0][0] == found and grad_flow(model)


def test_gradients_on_the_meta_device_are_refused_with_the_way_out():
    model = nn.Linear(3, 3, device="meta")
    model(torch.randn(2, 3, device="meta")).sum().backward()
    with pytest.raises(vz.VizlibError, match=r"meta device: it has a shape but no values.*to_empty"):
        grad_flow(model)


@pytest.mark.parametrize("size", [1e-300, 1e290])
def test_extreme_gradients_draw_without_overflow_warnings_or_a_figure_left_open(size):
    model = nn.Linear(2, 2).double()
    model.weight.grad = torch.full((2, 2), size, dtype=torch.float64)
    model.bias.grad = torch.ones(2, dtype=torch.float64)
    open_figures = plt.get_fignums()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig = grad_flow(model)
    assert plt.get_fignums() == open_figures
    low, high = fig.axes[0].get_ylim()
    assert 1e-210 < low < VANISHING and EXPLODING < high < 1e210
    assert grad_magnitudes(model)[0].mean == size  # the numbers themselves are not clipped


def test_a_figure_whose_drawing_fails_is_not_left_open(monkeypatch):
    model = mlp(1)
    backward(model)
    open_figures = plt.get_fignums()
    monkeypatch.setattr(sys.modules["vizlib.plots.grad_flow"], "_name_ticks", lambda *a: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        grad_flow(model)
    assert plt.get_fignums() == open_figures


def test_monitor_follows_layers_replaced_or_added_during_training():
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 1))
    with GradFlowMonitor(model) as mon:
        train(model, steps=1)
        model[0] = nn.Linear(2, 2)  # a new layer, new parameters, the same names
        model.add_module("2", nn.Linear(1, 1))  # and one more
        train(model, steps=1)
    assert mon.layers == ["0.weight", "0.bias", "1.weight", "1.bias", "2.weight", "2.bias"]
    last = {p.name: p for p in mon.history[-1]}
    assert last["0.weight"].mean == pytest.approx(model[0].weight.grad.abs().mean().item(), rel=1e-6)
    assert last["2.bias"].status == "ok" and len(mon.history[0]) == 4
    fig = mon.plot()
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()][2:] == [
        "no grad, or not a parameter at that step"
    ]


def test_monitor_records_what_a_closure_optimizer_step_computed_last():
    """LBFGS evaluates its closure inside ``step()``: the row is of its last evaluation."""
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    x, y = torch.randn(8, 3), torch.randn(8, 1)
    opt = torch.optim.LBFGS(model.parameters(), max_iter=2)
    seen = []

    def closure():
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        seen.append(model.weight.grad.abs().mean().item())
        return loss

    with GradFlowMonitor(model) as mon:
        for _ in range(3):
            before = len(seen)
            opt.step(closure)
            assert mon.history[-1][0].mean == pytest.approx(seen[-1], rel=1e-6) and len(seen) > before
    assert len(mon.history) == 3


@pytest.mark.parametrize("layers", [1, 2, 30])
def test_monitor_plot_keeps_every_text_inside_the_figure(layers):
    model = mlp(layers - 1) if layers > 1 else nn.Linear(16, 1)
    backward(model)
    with GradFlowMonitor(model) as mon:
        for _ in range(5):
            mon.record()
    assert _texts_inside_the_figure(mon.plot())


def test_monitor_records_the_gradients_before_a_step_that_changes_them_in_place():
    """SGD with Nesterov momentum on its multi-tensor path adds to ``.grad`` in place as it
    steps: the row is of the gradients backward made."""
    torch.manual_seed(0)
    model = nn.Linear(4, 1, bias=False)
    x, y = torch.randn(8, 4), torch.randn(8, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, foreach=True)
    made = []
    with GradFlowMonitor(model) as mon:
        for _ in range(2):
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            made.append(model.weight.grad.abs().mean().item())
            opt.step()
    assert model.weight.grad.abs().mean().item() != pytest.approx(made[-1])  # the step did change it
    assert [row[0].mean for row in mon.history] == pytest.approx(made, rel=1e-6)


@pytest.mark.filterwarnings("ignore:Initializing zero-element tensors is a no-op")
def test_an_empty_parameter_has_no_gradient_to_flag():
    model = nn.Sequential(nn.Linear(0, 3), nn.Linear(3, 1))
    model(torch.randn(2, 0)).sum().backward()
    assert [p.name for p in grad_magnitudes(model)] == ["0.bias", "1.weight", "1.bias"]


def train_scaled(
    model: nn.Module, opt: torch.optim.Optimizer, scaler: torch.amp.GradScaler, steps: int, overflow_at: int
) -> list[list[float]]:
    """GradScaler's recipe on the CPU, whose loss at step ``overflow_at`` is multiplied by inf:
    that step's gradients are Inf/NaN and GradScaler skips its optimizer step. Returns each
    step's mean |grad| per parameter as the step used them (unscaled: SGD and a fused step
    leave them so)."""
    used = []
    for step in range(steps):
        opt.zero_grad()
        loss = nn.functional.mse_loss(*_batch(model, seed=step))
        scaler.scale(loss * (math.inf if step == overflow_at else 1.0)).backward()
        scaler.step(opt)
        scaler.update()
        used.append([p.grad.abs().mean().item() for p in model.parameters()])
    return used


def _batch(model: nn.Module, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The model's output on random data, and a random target."""
    g = torch.Generator().manual_seed(seed)
    out = model(torch.randn(32, 16, generator=g))
    return out, torch.randn(out.shape, generator=g)


def test_monitor_records_a_step_that_grad_scaler_skips_as_skipped_with_its_inf_nan_gradients():
    model = mlp(2, act=nn.ReLU)
    opt, scaler = torch.optim.SGD(model.parameters(), lr=0.05), torch.amp.GradScaler("cpu")
    with GradFlowMonitor(model, scaler=scaler) as mon:
        used = train_scaled(model, opt, scaler, steps=5, overflow_at=2)
    assert scaler.get_scale() == 2.0**15  # GradScaler did skip one step, and backed off
    assert len(mon.history) == 5 and mon.skipped == [2]
    assert {p.status for p in mon.history[2]} == {"non-finite"}
    assert not any(math.isfinite(p.mean) or math.isfinite(p.max) for p in mon.history[2])
    for step in (0, 1, 3, 4):  # the others as before: the unscaled gradients the step used
        assert [p.status for p in mon.history[step]] == ["ok"] * len(mon.layers)
        assert [p.mean for p in mon.history[step]] == pytest.approx(used[step], rel=1e-6)
    assert "5 steps (1 skipped by GradScaler)" in repr(mon)


def test_monitor_watching_a_scaler_does_not_change_training_and_puts_its_step_back():
    watched, plain = mlp(2, seed=7), mlp(2, seed=7)
    scaler = torch.amp.GradScaler("cpu")
    with GradFlowMonitor(watched, scaler=scaler):
        assert "step" in vars(scaler)  # watched on this instance, never on GradScaler itself
        train_scaled(watched, torch.optim.SGD(watched.parameters(), lr=0.05), scaler, steps=4, overflow_at=1)
    assert "step" not in vars(scaler)
    plain_scaler = torch.amp.GradScaler("cpu")
    train_scaled(plain, torch.optim.SGD(plain.parameters(), lr=0.05), plain_scaler, steps=4, overflow_at=1)
    assert scaler.get_scale() == plain_scaler.get_scale()
    for (n, a), (_, b) in zip(watched.named_parameters(), plain.named_parameters(), strict=True):
        assert torch.equal(a, b), n


@pytest.mark.parametrize("watched", [True, False], ids=["scaler passed", "no scaler passed"])
def test_monitor_unscales_a_fused_step_and_marks_the_one_its_kernel_skips(watched):
    """A fused optimizer takes the gradients still scaled, and the scale and the Inf/NaN flag
    with them: its step runs even when GradScaler found Inf/NaN (its kernel skips the update)."""
    model = mlp(2, act=nn.ReLU)
    opt = torch.optim.AdamW(model.parameters(), lr=0.01, fused=True)
    scaler = torch.amp.GradScaler("cpu")
    with GradFlowMonitor(model, scaler=scaler if watched else None) as mon:
        used = train_scaled(model, opt, scaler, steps=4, overflow_at=1)
    assert len(mon.history) == 4 and mon.skipped == [1]
    assert {p.status for p in mon.history[1]} == {"non-finite"}
    for step in (0, 2, 3):  # not 65536 times too big
        assert [p.mean for p in mon.history[step]] == pytest.approx(used[step], rel=1e-5)


def test_monitor_without_a_scaler_records_the_steps_that_ran():
    """Without ``scaler=``, a step GradScaler skips runs no optimizer code to notice."""
    model = mlp(1)
    opt, scaler = torch.optim.SGD(model.parameters(), lr=0.05), torch.amp.GradScaler("cpu")
    with GradFlowMonitor(model) as mon:
        train_scaled(model, opt, scaler, steps=3, overflow_at=1)
    assert len(mon.history) == 2 and mon.skipped == []
    assert "skipped" not in repr(mon)


def test_a_disabled_scaler_skips_nothing_so_no_step_is_marked_skipped():
    """``GradScaler(enabled=False)`` (the idiom for code that also trains in bf16 or fp32)
    steps the optimizer whatever the gradients hold."""
    model = mlp(1)
    opt, scaler = torch.optim.SGD(model.parameters(), lr=0.05), torch.amp.GradScaler("cpu", enabled=False)
    with GradFlowMonitor(model, scaler=scaler) as mon:
        train_scaled(model, opt, scaler, steps=3, overflow_at=1)
    assert len(mon.history) == 3 and mon.skipped == []
    assert {p.status for p in mon.history[1]} == {"non-finite"}


def test_monitors_sharing_a_scaler_each_record_its_skips_until_closed_or_dropped():
    model = mlp(1)
    opt, scaler = torch.optim.SGD(model.parameters(), lr=0.05), torch.amp.GradScaler("cpu")
    first, second = GradFlowMonitor(model, scaler=scaler), GradFlowMonitor(model, scaler=scaler)
    train_scaled(model, opt, scaler, steps=2, overflow_at=0)
    first.close()
    train_scaled(model, opt, scaler, steps=2, overflow_at=0)
    assert first.skipped == [0] and second.skipped == [0, 2] and len(second.history) == 4
    dropped = weakref.ref(second)
    del second
    gc.collect()
    assert dropped() is None and "step" not in vars(scaler)


def test_monitor_ignores_a_skipped_step_that_vz_graph_draws_and_undoes():
    model, x = mlp(1), torch.randn(4, 16)
    opt, scaler = torch.optim.SGD(model.parameters(), lr=0.1), torch.amp.GradScaler("cpu")

    def overflowing_step(x: torch.Tensor) -> torch.Tensor:
        opt.zero_grad()
        scaler.scale(model(x).square().mean() * math.inf).backward()
        scaler.step(opt)
        scaler.update()
        return model(x).square().mean()

    with GradFlowMonitor(model, scaler=scaler) as mon:
        vz.graph(overflowing_step, x, params=model)
        overflowing_step(x)
    assert len(mon.history) == 1 and mon.skipped == [0]


def test_monitor_plot_hatches_the_columns_of_skipped_steps(tmp_path):
    model = WithUnused()  # a "no grad" legend entry too
    opt, scaler = torch.optim.SGD(model.parameters(), lr=0.05), torch.amp.GradScaler("cpu")
    width = model.used.in_features
    with GradFlowMonitor(model, scaler=scaler) as mon:
        for step in range(6):
            opt.zero_grad()
            x = torch.randn(8, width)
            x[0, 0] = math.inf if step in (1, 4) else 1.0  # an Inf in the input: Inf/NaN gradients
            scaler.scale(model(x).square().mean()).backward()
            scaler.step(opt)
            scaler.update()
    assert mon.skipped == [1, 4]
    fig = mon.plot()
    ax = fig.axes[0]
    grid, norm = ax.images[0].get_array(), ax.images[0].norm
    assert (grid[:2, [1, 4]] > norm.vmax).all()  # Inf/NaN: the "exploding" red, drawn, no crash
    hatched = [p for p in ax.patches if p.get_hatch()]
    assert sorted(p.get_x() + p.get_width() / 2 for p in hatched) == [2, 5]  # columns are numbered from 1
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        f"vanishing (< {VANISHING:g})",
        f"exploding (> {EXPLODING:g}) or NaN/Inf",
        "no grad",
        "skipped by GradScaler (Inf/NaN): no update",
    ]
    assert _texts_inside_the_figure(fig)
    fig.savefig(tmp_path / "skipped.png")
    assert (tmp_path / "skipped.png").stat().st_size > 1000


class _Outputs(TorchDispatchMode):
    """Records the number of elements of every tensor an op makes (views excepted: they copy nothing)."""

    def __init__(self) -> None:
        super().__init__()
        self.numels: list[tuple[str, int]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if not func.is_view:
            for t in out if isinstance(out, tuple | list) else (out,):
                if isinstance(t, torch.Tensor):
                    self.numels.append((str(func), t.numel()))
        return out


@pytest.mark.parametrize(
    "make",
    [
        lambda: torch.full((3_000, 1_500), -1e-3),  # 4.5 M elements: more than one chunk
        lambda: torch.randn(1_500, 3_000).t(),  # not contiguous: flattening it would copy it
        lambda: torch.randn(3_000, 3_000)[:, ::2],  # gaps between the rows
        lambda: torch.randn(2, 3_000_000)[:, ::2],  # one row bigger than a chunk
    ],
    ids=["contiguous", "transposed", "strided", "long rows"],
)
def test_measuring_a_gradient_makes_no_copy_of_it(make):
    model = nn.Linear(1, 1, bias=False)
    grad = make()
    model.weight = nn.Parameter(torch.zeros_like(grad))
    model.weight.grad = grad
    with _Outputs() as seen:
        found = grad_magnitudes(model)[0]
    biggest = max(seen.numels, key=lambda op: op[1])
    assert biggest[1] <= grad.numel() // 2, biggest  # in chunks: no temporary as big as the gradient
    expected = grad.abs().double()
    assert found.mean == pytest.approx(expected.mean().item(), rel=1e-9)
    assert found.max == expected.max().item()


def _old_mean_and_max(grad: torch.Tensor) -> tuple[float, float]:
    """What grad_magnitudes measured before it measured in chunks: the whole gradient at once."""
    if grad.layout == torch.sparse_coo:
        stored = grad.coalesce().values().abs()
        top = stored.max().double().item() if stored.numel() else 0.0
        return stored.sum(dtype=torch.float64).item() / grad.numel(), top
    size = grad.to_dense().abs() if grad.layout != torch.strided else grad.abs()
    return size.mean(dtype=torch.float64).item(), size.max().double().item()


@pytest.mark.parametrize(
    "grad",
    [
        torch.tensor([[1.0, -2.0], [3.0, math.nan]]),
        torch.tensor([[1.0, -math.inf], [3.0, 4.0]]),
        torch.tensor([math.inf, -math.inf]),
        torch.tensor([1e-3, -7.5, 2.0], dtype=torch.bfloat16),
        torch.tensor([1e-3, -7.5, 2.0], dtype=torch.float16),
        torch.tensor([3 + 4j, -1j, 0], dtype=torch.complex64),
        torch.tensor([[0.0, 0.0], [0.0, -0.0]]),
        torch.sparse_coo_tensor([[0, 2, 2]], [1.0, -2.0, 5.0], (4,)),
        torch.sparse_coo_tensor(torch.zeros(1, 0, dtype=torch.long), torch.zeros(0), (4,)),
        torch.tensor([[0.0, -3.0], [2.0, 0.0]]).to_sparse_csr(),
    ],
    ids=["nan", "-inf", "+-inf", "bf16", "fp16", "complex", "zeros", "coo", "empty coo", "csr"],
)
def test_chunked_measure_equals_the_whole_tensor_one(grad):
    model = nn.Linear(1, 1, bias=False)
    model.weight = nn.Parameter(torch.zeros_like(grad))
    model.weight.grad = grad
    found = grad_magnitudes(model)[0]
    mean, top = _old_mean_and_max(grad)
    assert found.mean == pytest.approx(mean, rel=1e-9, nan_ok=True)
    assert found.max == pytest.approx(top, rel=1e-9, nan_ok=True)


def _steps_normally_unwatched(copied: torch.amp.GradScaler) -> None:
    """``copied`` is a working GradScaler, watched by no monitor: stepping it records nothing anywhere."""
    model = mlp(1, act=nn.ReLU)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    before = [p.detach().clone() for p in model.parameters()]
    train_scaled(model, opt, copied, steps=3, overflow_at=1)  # one step skipped, two taken
    assert copied.get_scale() == 2.0**15
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
    assert type(vars(copied).get("step", None)).__name__ != "_SkipWatch"


def _torch_round_trip(scaler: torch.amp.GradScaler) -> torch.amp.GradScaler:
    buffer = io.BytesIO()
    torch.save(scaler, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=False)


@pytest.mark.parametrize(
    "copy_of",
    [copy.deepcopy, lambda s: pickle.loads(pickle.dumps(s)), _torch_round_trip],
    ids=["deepcopy", "pickle", "torch.save"],
)
def test_a_watched_scaler_copies_as_if_it_were_not_watched(copy_of):
    model = mlp(2, act=nn.ReLU)
    scaler = torch.amp.GradScaler("cpu")
    with GradFlowMonitor(model, scaler=scaler) as mon:
        copied = copy_of(scaler)
        _steps_normally_unwatched(copied)
        assert mon.history == []  # the copy's steps are not the watched scaler's
        train_scaled(model, torch.optim.SGD(model.parameters(), lr=0.05), scaler, steps=3, overflow_at=1)
        assert mon.skipped == [1]  # the original is still watched
    assert "step" not in vars(scaler)


def test_grad_flow_legend_is_outside_the_axes_and_names_no_grad_only_when_there_is_some():
    model = mlp(3, act=nn.ReLU)
    backward(model)
    fig = grad_flow(model)
    ax = fig.axes[0]
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    legend = ax.get_legend()
    assert not legend.get_window_extent().overlaps(ax.get_window_extent())  # hides no point
    assert [t.get_text() for t in legend.get_texts()] == ["mean |grad|", "max |grad|"]
    assert _texts_inside_the_figure(fig)
    unused = WithUnused()
    backward(unused)
    assert "no grad" in [t.get_text() for t in grad_flow(unused).axes[0].get_legend().get_texts()]


def _heatmap(model: nn.Module):
    with GradFlowMonitor(model) as mon:
        mon.record()
    return mon.plot()


@pytest.mark.parametrize("draw", [grad_flow, _heatmap], ids=["grad_flow", "GradFlowMonitor"])
@pytest.mark.parametrize("make", [lambda: mlp(3, act=nn.ReLU), WithUnused], ids=["mlp", "with no grad"])
def test_legend_leaves_room_for_a_title_set_afterwards_and_hides_no_name(draw, make):
    """A learner retitles the figure the usual way, matplotlib's default pad: the legend is
    neither over that title nor over the axes or the names along them."""
    model = make()
    backward(model)
    fig = draw(model)
    ax = fig.axes[0]
    ax.set_title("my own title, set after")
    FigureCanvasAgg(fig).draw()
    legend = ax.get_legend().get_window_extent()
    assert not legend.overlaps(ax.title.get_window_extent())
    assert not any(legend.overlaps(axis.get_tightbbox()) for axis in (ax.xaxis, ax.yaxis))
    assert not legend.overlaps(ax.get_window_extent())
    assert all(not t.get_window_extent().overlaps(ax.title.get_window_extent()) for t in ax.texts if t.get_text())
    assert _texts_inside_the_figure(fig)


def _hugging_face_like(layers: int = 12) -> nn.Module:
    """Parameters named as a Hugging Face model's are: 'bert.encoder.layer.11.attention.output.dense.weight'."""

    class Layer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attention = nn.Module()
            self.attention.output = nn.Module()
            self.attention.output.dense = nn.Linear(2, 2)

        def forward(self, x):
            return self.attention.output.dense(x)

    model = nn.Module()
    model.bert = nn.Module()
    model.bert.encoder = nn.Module()
    model.bert.encoder.layer = nn.ModuleList(Layer() for _ in range(layers))
    model.bert.pooler = nn.Linear(2, 2)
    x = torch.randn(3, 2)
    for layer in model.bert.encoder.layer:
        x = layer(x)
    model.bert.pooler(x).sum().backward()
    return model


def test_long_parameter_names_are_shortened_on_the_axis_and_kept_whole_in_the_data():
    model = _hugging_face_like()
    names = [n for n, _ in model.named_parameters()]
    assert names[-3] == "bert.encoder.layer.11.attention.output.dense.bias"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib's "Tight layout not applied" among them
        fig = grad_flow(model)
        with GradFlowMonitor(model) as mon:
            for _ in range(5):
                mon.record()
        heatmap = mon.plot()
    assert [p.name for p in mon.history[0]] == names == mon.layers
    for figure, labels in ((fig, fig.axes[0].get_xticklabels()), (heatmap, heatmap.axes[0].get_yticklabels())):
        shown = [t.get_text() for t in labels]
        assert len(set(shown)) == len(names)  # each still told apart
        assert all(len(s) <= 36 for s in shown)
        assert shown[-3] == "…11.attention.output.dense.bias"  # the distinctive tail kept
        assert shown[-1] == "pooler.bias"
        assert "'bert.'" in figure.axes[0].get_xlabel() + figure.axes[0].get_ylabel()  # the prefix left out
        assert figure.get_figwidth() <= NOTEBOOK_WIDTH
        assert _texts_inside_the_figure(figure)
        plot = figure.axes[0].get_window_extent()
        assert plot.width >= 0.35 * figure.bbox.width and plot.height >= 0.35 * figure.bbox.height


def test_monitor_history_stays_small_over_a_long_run():
    import tracemalloc

    model = nn.Sequential(*[nn.Linear(2, 2) for _ in range(10)])  # 20 parameters
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    x = torch.randn(4, 2)

    def step():
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()

    with vz.GradFlowMonitor(model) as mon:
        step()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            for _ in range(300):
                step()
            grown = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
    assert len(mon.history) == 301
    # two floats and a shared name per parameter per step: ~120 B (was ~215 B: a __dict__ per
    # record, and a fresh name string per parameter per step; 10k steps of a ResNet-50, 350 MB)
    assert grown / (300 * 20) < 150
    assert mon.history[0][0].name is mon.history[-1][0].name
