"""``vz.explore(fn, x=2.0, w=3.0)``: sliders for a function's scalar inputs, and its live graph.

Moving a slider re-runs ``vz.graph(fn, **values)`` and redraws the picture with the new
forward values and gradients, so a learner sees the chain rule respond to the numbers.
To feel instant, a drag sends one update when it ends (``continuous_update=False``; the
arrow keys step at once), and the Graphviz layout is reused while only numbers change
(see ``vizlib.render.svg_patch``). If ``fn`` raises for some slider values, the message takes the
picture's place and the picture comes back when the sliders move on; calls that can
never work (an argument ``fn`` does not take, an input that is not a number) are refused
when the explorer is made, with a VizlibError that says what to pass instead.
"""

from __future__ import annotations

import inspect
import math
import numbers
from collections.abc import Callable
from typing import TypeGuard

import ipywidgets as widgets
import torch
from torch import nn

from ..api import Graph, graph_of_call, refuse_module_without_forward
from ..errors import NotScalarResult, VizlibTypeError, VizlibValueError
from ..render import LayoutCache, to_dot
from ..text import dims, fmt
from .widgets import GRAPH_CLASS, StaticFallback, error_html, svg_for_html

# A bare number x gets a slider over [x - span, x + span] with span = max(2|x|, 1),
# cut into about this many steps.
STEPS = 100
# What a range (low, high) or (low, high, step) must be (``_is_range``).
RANGE_NEEDS = "needs low < high and a positive step no longer than high - low"


class Explorer(StaticFallback, widgets.VBox):
    """The widget ``vz.explore`` returns: one slider per input above the live graph.

    ``explorer.graph`` is the Graph of the last call that worked.
    """

    def __init__(
        self,
        fn: Callable,
        sliders: dict[str, widgets.FloatSlider | widgets.IntSlider],
        by_position: tuple[str, ...],
    ):
        self._fn = fn
        self._sliders = sliders
        self._by_position = by_position  # the inputs fn takes by position only (_by_position)
        self._layout = LayoutCache()
        self._given = {name: s.value for name, s in sliders.items()}  # the values fn was first given
        self._picture = widgets.HTML()
        self._picture.add_class(GRAPH_CLASS)
        self._shown = self.values()  # the values the picture was drawn at
        self._failed = ""  # what the call at the sliders' values raised, if it raised
        self.graph, self._svg = self._draw(self._shown)  # the learner's own exception propagates here
        self._picture.value = svg_for_html(self._svg)
        for s in sliders.values():
            s.observe(self._on_slide, names="value")
        super().__init__(children=[*sliders.values(), self._picture])
        self.add_class("vizlib-explore")

    def values(self) -> dict[str, float]:
        """The sliders' current values, rounded to their grid (no 0.30000000000000004); an
        integer slider's as a Python int (a count, an index: no gradient). A slider still at
        the value it was given keeps it as given: x=1e-300 lies on no grid of steps of 0.02."""
        return {
            name: s.value
            if isinstance(s, widgets.IntSlider) or s.value == self._given[name]
            else round(s.value, _grid_digits(s.step, s.min))
            for name, s in self._sliders.items()
        }

    def _draw(self, values: dict[str, float]) -> tuple[Graph, str]:
        try:
            args, kwargs = _split(values, self._by_position)  # values bind to fn's own parameters
            g = graph_of_call(self._fn, args, kwargs)
        except NotScalarResult as err:  # vz.graph's advice (grad_output=) does not apply here
            shapes = ", ".join(map(dims, err.shapes))
            raise VizlibValueError(
                f"vz.explore draws a function that returns a single number, but {_name(self._fn)} returned "
                f"{'a tensor' if len(err.shapes) == 1 else 'tensors'} of shape {shapes}. Return a scalar, "
                f"e.g. vz.explore(lambda {', '.join(values)}: f({', '.join(values)}).sum(), ...) for a function f."
            ) from None
        return g, self._layout.svg(to_dot(g))

    def _on_slide(self, change: dict) -> None:
        values = self.values()
        try:
            self.graph, self._svg = self._draw(values)
        except Exception as err:  # noqa: BLE001 - any failure of the learner's fn is shown, not raised
            self._failed = f"{_name(self._fn)}({_call(values)}) raised {type(err).__name__}: {err}"
            self._picture.value = error_html(
                f"{self._failed}\nMove a slider to other values: the graph comes back when the call works."
            )
            return
        self._shown, self._failed = values, ""
        self._picture.value = svg_for_html(self._svg)

    def _static_svg(self) -> str:
        return self._svg

    def _static_text(self) -> str:
        failed = f"at the sliders' values {self._failed}; " if self._failed else ""
        return (
            f"vz.explore({_name(self._fn)}): live sliders need a running notebook; "
            f"{failed}the picture shows {_call(self._shown)}.\n{self.graph!r}"
        )


def explore(fn: Callable, /, **inputs: object) -> Explorer:
    """Sliders for ``fn``'s scalar inputs and the graph of ``fn`` at their values.

    Each keyword names an argument of ``fn``: a number (``x=2.0``, the slider ranges around
    it) or a range ``x=(-5, 5)`` / ``x=(-5, 5, 0.1)`` (start in the middle). Returns a
    widget; display it (make it a cell's last expression) to use it.
    """
    if not callable(fn):
        raise VizlibTypeError(f"vz.explore needs a function first, e.g. vz.explore(f, x=2.0); got {type(fn).__name__}.")
    if not inputs:
        raise VizlibTypeError(
            "vz.explore needs at least one input to make a slider for, e.g. vz.explore(f, x=2.0, w=(-5, 5))."
        )
    refuse_module_without_forward(fn, "vz.explore", "x=1.0")
    inputs = {name: _as_number(spec) for name, spec in inputs.items()}
    sig = _signature(fn)
    counts = _counts(sig)
    # Every name written whole (ipywidgets gives a label 80 px: "learning_r…"), and the
    # sliders' tracks lined up after the longest.
    style = {"description_width": f"{max(map(len, inputs)) + 2}ch"}
    sliders = {name: _slider(name, spec, style, name in counts) for name, spec in inputs.items()}
    by_position = _by_position(sig, inputs)
    _check_call(fn, sig, inputs, by_position)
    try:
        return Explorer(fn, sliders, by_position)
    except Exception as err:
        floats = [n for n, spec in inputs.items() if n not in counts and _is_integral(spec)]
        if floats:  # (the learner's own exception, with the way out where a count got a float)
            err.add_note(_COUNT_HINT.format(name=floats[0], fn=_name(fn)))
        raise


# Said beside an error of the first call where an input was given as an integer: it slid over
# floats, and a count or an index given a float tensor fails in the learner's code.
_COUNT_HINT = (
    "vz.explore: {name} was given as an integer but slides over real numbers and reaches {fn} as a "
    "float tensor that requires grad (a number vz.explore can draw the gradient of). If {name} is a "
    "count, a size or an index, annotate it as one, def {fn}(..., {name}: int), for a slider of integers "
    "that hands {fn} a Python int."
)


def _signature(fn: Callable) -> inspect.Signature | None:
    """``fn``'s signature (a module's own is (*args, **kwargs): its forward's names its
    inputs); None for a builtin that has none (the call will tell)."""
    try:
        return inspect.signature(fn.forward if isinstance(fn, nn.Module) else fn)
    except (TypeError, ValueError):
        return None


def _counts(sig: inspect.Signature | None) -> set[str]:
    """The arguments the function annotates as ``int``: their sliders move over integers and
    hand it Python ints (a count, a size, an index), where any other number is a real one
    whose gradient the picture draws (``b=(-5, 5)`` slides over floats)."""
    if sig is None:
        return set()
    return {name for name, p in sig.parameters.items() if p.annotation in (int, "int")}


def _as_number(spec: object) -> object:
    """A one-element real tensor (``torch.tensor(3)``, ``x.sum()``) as the Python number it
    holds, also inside a range: a slider moves over numbers, and the function is handed the
    slider's number anyway. An integer tensor gives an int, so a count annotated ``int``
    takes it. Anything else is left as it is, for ``_slider`` to judge."""
    if isinstance(spec, tuple):
        return tuple(map(_as_number, spec))
    if _is_scalar_tensor(spec):
        return spec.item()
    return spec


def _is_scalar_tensor(spec: object) -> TypeGuard[torch.Tensor]:
    """A tensor of one real number, on a device that holds values (a meta tensor holds none)."""
    return (
        isinstance(spec, torch.Tensor)
        and spec.numel() == 1
        and not spec.is_meta
        and not spec.is_complex()
        and spec.dtype != torch.bool
    )


def _is_integral(spec: object) -> bool:
    """An input given as an integer, or as a range of integers."""
    values = spec if isinstance(spec, tuple) else (spec,)
    return all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in values)


def _by_position(sig: inspect.Signature | None, inputs: dict) -> tuple[str, ...]:
    """The inputs that ``fn`` takes by position only (``operator.mul(a, b, /)``, ``def f(x, /)``),
    in order: its first positional-only parameters, up to the first not given (one after
    it cannot be reached by position, and binding it by keyword is refused)."""
    if sig is None:
        return ()
    names = []
    for name, p in sig.parameters.items():
        if p.kind != p.POSITIONAL_ONLY or name not in inputs:
            break
        names.append(name)
    return tuple(names)


def _split(values: dict, by_position: tuple[str, ...]) -> tuple[tuple, dict]:
    """The call's arguments: those taken by position only, in order, and the rest by keyword."""
    return tuple(values[name] for name in by_position), {k: v for k, v in values.items() if k not in by_position}


def _check_call(fn: Callable, sig: inspect.Signature | None, inputs: dict, by_position: tuple[str, ...]) -> None:
    """Refuse names ``fn`` (of signature ``sig``) does not take, and arguments it needs but
    lacks, up front."""
    if sig is None:
        return
    try:
        args, kwargs = _split(inputs, by_position)
        sig.bind(*args, **kwargs)
    except TypeError as err:
        takes = ", ".join(map(_written, sig.parameters.values()))
        raise VizlibTypeError(
            f"vz.explore: {_name(fn)}({takes}) cannot be called with {', '.join(inputs)} ({err}). "
            f"Give one keyword per argument of {_name(fn)}, named like the argument.{_wrap_hint(fn, sig, inputs)}"
        ) from None


def _written(p: inspect.Parameter) -> str:
    """A parameter as its ``def`` writes it, without annotation or default: ``*args`` says a
    learner why a keyword cannot reach it, where a bare ``args`` looked like a name to give."""
    if p.kind == p.VAR_POSITIONAL:
        return f"*{p.name}"
    return f"**{p.name}" if p.kind == p.VAR_KEYWORD else p.name


def _wrap_hint(fn: Callable, sig: inspect.Signature, inputs: dict) -> str:
    """For a function that takes its inputs as ``*args`` (no names for sliders to bind to),
    the lambda that names them."""
    if not any(p.kind == p.VAR_POSITIONAL for p in sig.parameters.values()):
        return ""
    names = ", ".join(inputs)
    return (
        f" {_name(fn)} takes its inputs by position (*args): name them in a lambda, "
        f"vz.explore(lambda {names}: {_name(fn)}({names}), {', '.join(f'{n}=...' for n in inputs)})."
    )


def _slider(name: str, spec: object, style: dict, count: bool = False) -> widgets.FloatSlider | widgets.IntSlider:
    """The slider of one input: of integers for a count (``count``), else of real numbers."""
    if count:
        return _int_slider(name, spec, style)
    lo, hi, step, value = _range(name, spec)
    return widgets.FloatSlider(
        value=value,
        min=lo,
        max=hi,
        step=step,
        description=name,
        continuous_update=False,
        readout_format=_readout(lo, hi, step, value),
        style=style,
    )


def _int_slider(name: str, spec: object, style: dict) -> widgets.IntSlider:
    """A slider of integers for an argument annotated ``int``: ``n=3`` slides over 0 to
    max(2n, 10), ``n=(1, 8)`` or ``n=(0, 64, 8)`` over that range, starting in its middle."""
    if isinstance(spec, numbers.Integral) and not isinstance(spec, bool):
        n = int(spec)
        lo, hi, step, value = min(0, 2 * n), max(2 * n, 10), 1, n
    elif isinstance(spec, tuple) and len(spec) in (2, 3) and _is_integral(spec):
        lo, hi = int(spec[0]), int(spec[1])
        step = int(spec[2]) if len(spec) == 3 else 1
        if not _is_range(lo, hi, step):
            raise VizlibValueError(f"vz.explore: the range {name}={spec} {RANGE_NEEDS}, e.g. {name}=(1, 8).")
        value = lo + (hi - lo) // 2 // step * step
    else:
        raise VizlibValueError(
            f"vz.explore: {name} is annotated as an int, so its slider moves over integers, but it was given "
            f"{spec!r:.40}. Give an integer ({name}=3) or a range of integers ({name}=(1, 8) or {name}=(0, 64, 8))."
        )
    return widgets.IntSlider(
        value=value, min=lo, max=hi, step=step, description=name, continuous_update=False, style=style
    )


def _is_range(lo: float, hi: float, step: float) -> bool:
    """Whether a slider over ``lo``..``hi`` by ``step`` can move: a step longer than the range
    would leave it where it starts. (Within rounding: 0.3 - 0.1 is 0.19999999999999998, and
    (0.1, 0.3, 0.2) is a range of two points.)"""
    return lo < hi and 0 < step <= (hi - lo) * (1 + 1e-9)


def _readout(lo: float, hi: float, step: float, value: float) -> str:
    """How the slider writes its value (a d3-format spec): enough decimals for the grid (at most
    6: the value passed is exact), or a number of significant digits in a range of tiny numbers,
    or where the value given lies on no grid those decimals write (``x=1e-300`` read 0.00)."""
    biggest = max(abs(lo), abs(hi))
    if biggest < 1e-3:
        return f".{min(max(math.ceil(math.log10(biggest / step)), 1), 6)}e"
    decimals = min(_grid_digits(step, lo), 6)
    if round(value, decimals) == value:
        return f".{decimals}f"
    # As many significant digits as the grid's points and the value need, in scientific
    # notation where the value is very small or very big (d3-format's "g", as JavaScript's
    # toPrecision: 1e-300 reads 1.00e-300, 0.46 reads 0.460).
    grid = max(math.floor(math.log10(biggest)) + 1, 1) + decimals
    return f".{min(max(grid, _significant_digits(value)), 8)}g"


def _significant_digits(x: float) -> int:
    """Significant digits that write ``x`` exactly (at most 17, which write any float64)."""
    return next((p for p in range(1, 17) if float(f"{x:.{p}g}") == x), 17)


def _range(name: str, spec: object) -> tuple[float, float, float, float]:
    """(min, max, step, start) of the slider for one input."""
    if _is_number(spec):
        # The grid goes through the value itself: the first call is fn at the value given.
        value = float(spec)
        span = max(2 * abs(value), 1.0)
        _refuse_overflow(name, spec, value - span, value + span)
        step = _nice(2 * span / STEPS)
        return _snap(value - span, step, math.floor, value), _snap(value + span, step, math.ceil, value), step, value
    if isinstance(spec, tuple) and len(spec) in (2, 3) and all(map(_is_number, spec)):
        lo, hi = float(spec[0]), float(spec[1])
        _refuse_overflow(name, spec, lo, hi)
        step = float(spec[2]) if len(spec) == 3 else _nice((hi - lo) / STEPS) if lo < hi else 0.0
        if not _is_range(lo, hi, step):
            raise VizlibValueError(f"vz.explore: the range {name}={spec} {RANGE_NEEDS}, e.g. {name}=(-5, 5, 0.1).")
        return lo, hi, step, _snap((lo + hi) / 2, step, round, lo)
    what = (
        f"a tensor of shape {list(spec.shape)} and dtype {str(spec.dtype).removeprefix('torch.')}"
        if isinstance(spec, torch.Tensor)
        else f"{type(spec).__name__} {spec!r:.40}"
    )
    # A tensor, a tuple or a number of the wrong size is a wrong value; a string, a list... a wrong type.
    error = VizlibValueError if isinstance(spec, (torch.Tensor, tuple, int, float)) else VizlibTypeError
    raise error(f"vz.explore makes one slider per scalar input, but {name} is {what}{_why_no_slider(name, spec)}")


def _why_no_slider(name: str, spec: object) -> str:
    """What to give instead of ``spec``, which no slider moves over: a number that is not
    finite has no range around it; an argument that is no number (a flag, a mode, None) is
    fixed in a lambda, not slid over; anything else wants a number or a range."""
    if isinstance(spec, numbers.Real) and not isinstance(spec, bool):
        return f", not a finite number to slide around. Give a finite one ({name}=2.0) or a range ({name}=(-5, 5))."
    if isinstance(spec, (bool, str, bytes, type(None))):
        x = "y" if name == "x" else "x"  # (another input, to slide over)
        return (
            f", and a slider moves over numbers only. Give the function its {name} in a lambda and slide over "
            f"the rest: vz.explore(lambda {x}: f({x}, {name}={spec!r:.40}), {x}=2.0), f being your function."
        )
    return (
        f". Give a number ({name}=2.0) or a range ({name}=(-5, 5) or {name}=(-5, 5, 0.1)); "
        "to see a graph over tensors, use vz.graph(fn, ...)."
    )


def _refuse_overflow(name: str, spec: object, lo: float, hi: float) -> None:
    """Refuse a slider from ``lo`` to ``hi`` whose width overflows float64 (x=1e308 would
    slide from -2e308 to 2e308): its steps cannot be computed, and a learner gets a range to
    give instead of an OverflowError from inside vizlib."""
    if not math.isfinite(hi - lo):
        raise VizlibValueError(
            f"vz.explore: {name}={spec} is too large for a slider: the range around it, {lo:g} to {hi:g}, "
            f"is wider than a float64 can hold. Give a narrower range, e.g. {name}=(-1e300, 1e300)."
        )


def _is_number(x: object) -> TypeGuard[int | float]:
    """A finite real number, Python's or NumPy's (``np.float32(2.0)``); not a bool."""
    return isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(x)


def _nice(x: float) -> float:
    """The smallest of 1, 2, 5 times a power of ten that is at least x: steps a reader likes.
    (Cleaned to its one significant digit, 5.000000000000001e-14 -> 5e-14, not rounded to a
    number of decimals: that would make a step of 1e-14 zero.)"""
    power = 10.0 ** math.floor(math.log10(x))
    return next(float(f"{m * power:.1g}") for m in (1, 2, 5, 10) if m * power >= x * (1 - 1e-9))


def _snap(x: float, step: float, how: Callable, origin: float = 0.0) -> float:
    """The point of the grid ``origin + k * step`` next to ``x`` (``how``: which way)."""
    return round(origin + how((x - origin) / step) * step, _grid_digits(step, origin))


def _grid_digits(step: float, origin: float) -> int:
    """Digits after the point that write every point of the grid ``origin + k * step``."""
    return max(_decimals(step), _decimals(origin))


# Digits after the point of the smallest float64 (5e-324): enough to write any float.
_MOST_DECIMALS = 324


def _decimals(x: float) -> int:
    """Digits after the point that write ``x`` exactly (0.1 -> 1, 0.05 -> 2, 2.0 -> 0)."""
    for digits in range(_MOST_DECIMALS):  # a tiny step (1e-20) needs its 20 digits, or it rounds to 0
        if abs(round(x, digits) - x) <= 1e-12 * max(abs(x), 1e-300):
            return digits
    return _MOST_DECIMALS


def _call(values: dict[str, float]) -> str:
    """``x=1, w=0.5``: the keywords of one call."""
    return ", ".join(f"{k}={fmt(v)}" for k, v in values.items())


def _name(fn: Callable) -> str:
    return getattr(fn, "__name__", type(fn).__name__)
