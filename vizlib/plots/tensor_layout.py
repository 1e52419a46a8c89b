"""Where does each element of a tensor live? Storage, shape, strides and offset, drawn.

A tensor is a window onto a flat block of memory (its storage): element ``[i, j]`` lives
at ``offset + i * stride[0] + j * stride[1]``. Views (``x.T``, ``x[1]``, ``x.view(...)``,
``x.expand(...)``) are new windows onto the same storage, which is why writing through
one changes the other; copies (``.clone()``, often ``.contiguous()``, ``.reshape()`` of a
non-contiguous tensor) get their own storage.

``tensor_layout(t, *views)`` draws each storage as a row of numbered cells and each
tensor as its shape grid; every element shows its value and the storage cell it reads
(``@5``) in that cell's colour, so a transpose visibly walks memory column-wise and an
expanded tensor visibly repeats cells. Tensors are only read (through ``.detach()``),
never written, and their autograd state is left as it was.
"""

from __future__ import annotations

import functools
import itertools
import math
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import matplotlib.pyplot as plt
import torch
from matplotlib.axes import Axes
from matplotlib.collections import PatchCollection
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from ..errors import VizlibTypeError, VizlibValueError
from ..memory import refuse_without_memory
from ..text import dtype_name
from .style import NOTEBOOK_WIDTH

# Caps that keep the picture readable; what is left out is said on the picture.
STORAGE_CELLS_PER_ROW = 16
MAX_STORAGE_CELLS = 32
MAX_ROWS = 6
MAX_COLS = 8
MAX_COLS_1D = 16
MAX_SLICES = 3

# One colour map per storage: a copy's cells never look like the original's.
STORAGE_CMAPS = ("viridis", "autumn", "cool", "spring")
CELL = 1.0  # a storage cell is the drawing unit
INCH_PER_CELL = 0.5
MARGIN = 0.3
# cells: the widest page, as wide as a notebook shows a figure at full size; tensor panels wrap
# to a new row beyond it, and a line of text longer than it onto the next line
MAX_PAGE_WIDTH = NOTEBOOK_WIDTH / INCH_PER_CELL
NOTE_CHARS = 34
SLICES_WIDTH = MAX_PAGE_WIDTH - 2 * MARGIN  # cells: slices of a >2-d tensor wrap to a new row beyond this
# Width of a character, in ems, near enough to size the page (DejaVu Sans; bold is wider).
CHAR_EMS = {"normal": 0.62, "bold": 0.75}


@dataclass(frozen=True)
class TensorLayout:
    """How one tensor maps onto its storage: the numbers behind one panel of the picture."""

    name: str
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    offset: int  # storage_offset(), in elements
    contiguous: bool
    dtype: str
    storage: int  # which storage it reads: 0 is t's, 1 the next one met, ...
    storage_numel: int  # size of that storage, in elements of this tensor's dtype
    # "negation" or "conjugate" where reading applies one the memory does not hold (a lazy
    # view: ``x.conj()``, the imaginary part of one), else ""
    lazy: str = ""

    def storage_index(self, index: Sequence[int]) -> int:
        """The storage cell holding element ``index``: offset + sum(index * stride)."""
        return self.offset + sum(i * s for i, s in zip(index, self.stride, strict=True))


def layouts(t: torch.Tensor, *views: torch.Tensor, names: Sequence[str] | None = None) -> list[TensorLayout]:
    """The layout of ``t`` and of each view, grouping tensors that share a storage."""
    tensors = (t, *views)
    names = _checked_names(tensors, names)
    storages: list[int] = []  # data pointer of each distinct storage, in order met
    result = []
    for name, x in zip(names, tensors, strict=True):
        memory = x.untyped_storage()
        # Empty storages all have data pointer 0; they share nothing, so each is its own.
        key = memory.data_ptr() if memory.nbytes() else -len(storages) - 1
        if key not in storages:
            storages.append(key)
        result.append(
            TensorLayout(
                name=name,
                shape=tuple(x.shape),
                stride=tuple(x.stride()),
                offset=int(x.storage_offset()),
                contiguous=x.is_contiguous(),
                dtype=dtype_name(x.dtype),
                storage=storages.index(key),
                storage_numel=memory.nbytes() // x.element_size(),
                lazy="negation" if x.is_neg() else "conjugate" if x.is_conj() else "",
            )
        )
    return result


def _has_memory(x: torch.Tensor) -> bool:
    """Whether ``x``'s storage is memory: not a wrapper subclass's stand-in (TwoTensor's, a
    DTensor's), whose ``data_ptr()`` torch refuses."""
    try:
        x.untyped_storage().data_ptr()
    except RuntimeError:
        return False
    return True


@functools.cache
def _readable(dtype: torch.dtype) -> bool:
    """Whether torch can read an element of ``dtype`` as a Python number: not the raw-bits
    (``bits8``) and sub-byte (``uint4``, ``float4_e2m1fn_x2``) dtypes, which it only stores."""
    try:
        torch.empty(1, dtype=dtype).tolist()
    except RuntimeError:
        return False
    return True


def _check_memory(what: str, x: torch.Tensor) -> None:
    """Refuse a tensor whose storage holds no memory to draw: a wrapper subclass's stands in for
    the tensors it is made of, and a freed one's (``resize_(0)``) would crash Python when read."""
    if not _has_memory(x):
        inner = x.__tensor_flatten__()[0] if hasattr(x, "__tensor_flatten__") else []
        them = f"vz.tensor_layout({', '.join(f'{what}.{n}' for n in inner)})" if inner else "the tensors it holds"
        raise VizlibValueError(
            f"{what} is a {type(x).__name__}, a tensor subclass with no memory of its own: its storage only "
            f"stands in for the tensors it is made of. Draw those instead: {them}."
        )
    refuse_without_memory(x, what)


def _check_values_readable(what: str, x: torch.Tensor) -> None:
    """Refuse, saying what to draw instead, a tensor whose elements are not numbers torch reads
    one by one: a quantized tensor's, raw bits, sub-byte ones."""
    if x.is_quantized:
        raise VizlibValueError(
            f"{what} is a quantized tensor: its memory holds {x.dtype} integers that stand for numbers "
            "through a scale and zero point. Draw the integers, vz.tensor_layout(q.int_repr()), or the "
            "numbers, vz.tensor_layout(q.dequantize()), for a quantized tensor q."
        )
    if not _readable(x.dtype):
        unsigned = f"torch.uint{8 * x.element_size()}"
        raise VizlibValueError(
            f"{what} holds {dtype_name(x.dtype)}, raw bits (or numbers packed several to a byte) that torch "
            f"cannot read one by one. Draw its bytes as unsigned integers: vz.tensor_layout(t.view({unsigned})) "
            f"for such a tensor t."
        )


def _checked_names(tensors: tuple, names: Sequence[str] | None) -> list[str]:
    """The tensors' names, after checking that every argument can be drawn."""
    for i, x in enumerate(tensors):
        what = "t" if i == 0 else f"view {i}"
        if not isinstance(x, torch.Tensor):
            raise VizlibTypeError(
                f"tensor_layout expects tensors, but {what} is of type {type(x).__name__}. "
                "Pass tensors, e.g. vz.tensor_layout(x, x.T, x[1])."
            )
        if x.is_nested:
            raise VizlibValueError(
                f"tensor_layout draws one shape and one set of strides over a storage, but {what} is a nested "
                "tensor: its pieces have different shapes. Draw its pieces instead: vz.tensor_layout(*nt.unbind()) "
                "for a nested tensor nt."
            )
        if x.layout != torch.strided:
            raise VizlibValueError(
                f"tensor_layout draws strided tensors, but {what} has layout {x.layout}, which has "
                "no strides. Draw x.to_dense() instead."
            )
        if x.device.type == "meta":
            raise VizlibValueError(f"{what} is on the meta device: it has no values to draw. Use a real tensor.")
        _check_memory(what, x)
        _check_values_readable(what, x)
    if names is None:
        return ["t"] + [f"v{i}" for i in range(1, len(tensors))]
    if isinstance(names, str) or len(names) != len(tensors):
        raise VizlibValueError(
            f"names needs one name per tensor ({len(tensors)}), e.g. names=['x', 'x.T'] "
            f"for vz.tensor_layout(x, x.T); got {names!r}."
        )
    return [str(n) for n in names]


def tensor_layout(t: torch.Tensor, *views: torch.Tensor, names: Sequence[str] | None = None) -> Figure:
    """Draw the storage of ``t`` (and of ``views``) and how each tensor's elements map onto it.

    ``names`` labels the tensors in the picture (default ``t, v1, v2, ...``), e.g.
    ``vz.tensor_layout(x, x.T, x.T.contiguous(), names=["x", "x.T", "x.T.contiguous()"])``.
    Storages are drawn on top, one row of numbered cells each; below, one panel per
    tensor states shape, stride, offset, whether it is contiguous and whether it shares
    memory with ``t`` (a view) or has its own (a copy).
    """
    tensors = (t, *views)
    found = layouts(t, *views, names=names)
    owners: dict[int, int] = {}  # storage number -> position of the first tensor using it
    for i, lay in enumerate(found):
        owners.setdefault(lay.storage, i)

    page = _Canvas()
    for number, first in owners.items():
        # A big storage is drawn from the first cell any of its tensors reads.
        itemsize = tensors[first].element_size()
        start = min(
            (
                lay.offset * x.element_size() // itemsize
                for x, lay in zip(tensors, found, strict=True)
                if lay.storage == number
            ),
            default=0,
        )
        _draw_storage(page, number, tensors[first], found[first], start)
    panels = []
    for x, lay in zip(tensors, found, strict=True):
        first = owners[lay.storage]
        panels.append(_tensor_panel(x, lay, found[first], tensors[first].element_size(), found[0].name))
    _flow(page, panels)

    # Sizes rounded to 0.1 inch keep the figure's text/plain repr short.
    fig = plt.figure(figsize=(round(page.width * INCH_PER_CELL, 1), round(page.y * INCH_PER_CELL, 1)))
    page.paint(fig.add_axes((0, 0, 1, 1)))
    plt.close(fig)  # shown once in Jupyter, through the returned value
    return fig


class _Canvas:
    """Texts and cells in cell units (x right, y down), collected and then painted at once,
    so that the figure can be sized to what was drawn."""

    def __init__(self) -> None:
        self.y = MARGIN  # where the next line goes
        self.width = 0.0
        self.items: list[tuple[str, float, float, tuple, dict]] = []

    def label(self, x: float, y: float, s: str, size: float = 8, **style: Any) -> None:
        # (written as it is: a name with two '$' would otherwise be read as TeX math)
        self.items.append(("text", x, y, (s,), dict(fontsize=size, va="center", parse_math=False, **style)))
        self.width = max(self.width, x + len(s) * _char_cells(size, style) + MARGIN)

    def line(self, s: str, size: float = 8, **style: Any) -> None:
        """A line of text below what is drawn, wrapped onto more lines where it is longer than
        a page can be (a storage's header, a long name)."""
        fits = max(10, int((MAX_PAGE_WIDTH - 2 * MARGIN) / _char_cells(size, style)))
        for part in textwrap.wrap(s, fits) or [""]:
            self.label(MARGIN, self.y + 0.3, part, size, **style)
            self.y += 0.6

    def cell(self, x: float, y: float, colour: tuple, value: str, index: str) -> None:
        self.items.append(("cell", x, y, (colour, value, index), {}))
        self.width = max(self.width, x + CELL + MARGIN)

    def place(self, other: _Canvas, dx: float, dy: float) -> None:
        """Copy another canvas's drawing here, its top-left corner at (dx, dy)."""
        self.items += [(kind, x + dx, y + dy, args, style) for kind, x, y, args, style in other.items]
        self.width = max(self.width, dx + other.width)

    def paint(self, ax: Axes) -> None:
        ax.set_xlim(0, self.width)
        ax.set_ylim(self.y, 0)
        ax.axis("off")
        boxes, colours = [], []
        for kind, x, y, args, style in self.items:
            if kind == "text":
                ax.text(x, y, *args, **style)
                continue
            colour, value, index = args
            boxes.append(Rectangle((x, y), CELL, CELL))
            colours.append(colour)
            ax.text(x + CELL / 2, y + 0.38, value, ha="center", va="center", fontsize=7)
            ax.text(x + CELL / 2, y + 0.78, index, ha="center", va="center", fontsize=6, color="dimgrey")
        # One collection draws every cell: far faster than one patch per cell.
        ax.add_collection(PatchCollection(boxes, facecolors=colours, edgecolors="black", linewidths=0.6))


def _char_cells(size: float, style: dict[str, Any]) -> float:
    """Width of a character of text drawn ``size`` points high in ``style``, in cells."""
    return size * CHAR_EMS["bold" if style.get("weight") == "bold" else "normal"] / 72 / INCH_PER_CELL


def _flow(page: _Canvas, panels: list[_Canvas]) -> None:
    """Place the tensor panels left to right below the storages, wrapping like text at the
    page's widest (MAX_PAGE_WIDTH)."""
    x, top, height = 0.0, page.y + 0.3, 0.0
    for panel in panels:
        if x > 0 and x + panel.width > MAX_PAGE_WIDTH:
            x, top, height = 0.0, top + height + 0.3, 0.0
        page.place(panel, x, top)
        x += panel.width + 0.6
        height = max(height, panel.y)
    page.y = top + height + MARGIN


def _colour(storage: int, index: int, numel: int) -> tuple:
    """The colour of storage cell ``index``, shared by every element that reads it.

    Colours run along the storage and repeat every MAX_STORAGE_CELLS cells, so that
    neighbouring cells differ visibly even in a large storage.
    """
    cmap = plt.get_cmap(STORAGE_CMAPS[storage % len(STORAGE_CMAPS)])
    period = min(numel, MAX_STORAGE_CELLS)
    rgba = cmap(0.15 + 0.8 * (index % period) / max(period - 1, 1))
    return (*rgba[:3], 0.45)


# Characters a cell has room for: its value's (7 pt) and its storage index's (6 pt).
VALUE_CHARS = 7
INDEX_DIGITS = 5


def _show(v: object) -> str:
    """A value as its cell writes it: in at most VALUE_CHARS characters for a real number (an
    id, a timestamp or a float's bits as int64 written in full ran over the next cells)."""
    if isinstance(v, bool):
        return "T" if v else "F"
    if isinstance(v, complex):
        return format(v, ".2g")
    if isinstance(v, int) and len(str(v)) <= VALUE_CHARS:
        return str(v)
    if isinstance(v, int | float):
        short = _compact(format(v, ".3g"))
        return short if len(short) <= VALUE_CHARS else _compact(format(v, ".2g"))
    return str(v)


def _compact(number: str) -> str:
    """A number written with ``g`` without its exponent's '+' and leading zeros: '1.7e+12' is '1.7e12'."""
    mantissa, e, exponent = number.partition("e")
    if not e:
        return number
    sign = "-" if exponent.startswith("-") else ""
    return f"{mantissa}e{sign}{exponent.lstrip('+-').lstrip('0') or '0'}"


def _index(i: int) -> str:
    """A storage index as a cell writes it: its last INDEX_DIGITS digits after '…' when it has
    more (neighbouring cells differ there; the panel's offset and the storage's header give the
    whole number)."""
    text = str(i)
    return text if len(text) <= INDEX_DIGITS else "…" + text[-INDEX_DIGITS:]


def _draw_storage(page: _Canvas, number: int, x: torch.Tensor, lay: TensorLayout, start: int) -> None:
    """One storage: a header, then up to MAX_STORAGE_CELLS cells from ``start`` on, in index
    order, wrapped into rows."""
    start = max(0, min(start, lay.storage_numel - MAX_STORAGE_CELLS))
    shown = min(lay.storage_numel, MAX_STORAGE_CELLS)
    whose = f"storage of {lay.name}" if number == 0 else f"storage {number + 1} (first used by {lay.name})"
    more = f", cells {start}..{start + shown - 1} drawn" if shown < lay.storage_numel else ""
    nbytes = x.untyped_storage().nbytes()
    page.line(f"{whose}: {lay.storage_numel} x {lay.dtype} = {nbytes} bytes{more}", size=9, weight="bold")
    # The memory as it is: a tensor over the storage alone, without a view's neg or conj bit.
    memory = torch.empty(0, dtype=x.dtype, device=x.device).set_(x.untyped_storage(), start, (shown,), (1,))
    values = memory.cpu().tolist()
    for i, v in enumerate(values):
        row, col = divmod(i, STORAGE_CELLS_PER_ROW)
        page.cell(
            MARGIN + col * CELL,
            page.y + row * CELL,
            _colour(number, start + i, lay.storage_numel),
            _show(v),
            _index(start + i),
        )
    page.y += math.ceil(shown / STORAGE_CELLS_PER_ROW) * CELL + 0.2


def _notes(lay: TensorLayout, owner: TensorLayout, first: str) -> list[str]:
    """What a learner should notice about this tensor's relation to memory."""
    notes = []
    if lay.storage == 0 and lay is not owner:
        notes.append(f"a view: shares {first}'s memory")
    elif lay.storage == 0 and math.prod(lay.shape) < lay.storage_numel:
        notes.append(f"uses part of a {lay.storage_numel}-element storage: itself a view")
    elif lay is owner and lay.storage != 0:
        notes.append(f"its own memory, not {first}'s (a copy): changes to {first} do not reach it")
    elif lay.storage != 0:
        notes.append(f"a view of {owner.name}, which does not share {first}'s memory")
    if lay.dtype != owner.dtype:
        notes.append(f"reads the bytes as {lay.dtype}")
    if lay.lazy:
        notes.append(f"a lazy {lay.lazy}: memory holds the {lay.lazy}s of the values shown")
    repeated = [str(d) for d, (n, s) in enumerate(zip(lay.shape, lay.stride, strict=True)) if s == 0 and n > 1]
    if repeated:
        notes.append(f"stride 0 in dim {', '.join(repeated)}: repeats the same cells (expand)")
    return notes


def _tensor_panel(x: torch.Tensor, lay: TensorLayout, owner: TensorLayout, owner_itemsize: int, first: str) -> _Canvas:
    """One tensor: its numbers and notes, then its elements as a grid (2-d slices of
    higher-dimensional tensors), each showing its value and storage cell."""
    panel = _Canvas()
    panel.line(lay.name, size=9, weight="bold")
    panel.line(f"shape {lay.shape}  stride {lay.stride}  offset {lay.offset}")
    panel.line("contiguous" if lay.contiguous else "NOT contiguous", color="darkgreen" if lay.contiguous else "darkred")
    for note in _notes(lay, owner, first):
        for part in textwrap.wrap(note, NOTE_CHARS):
            panel.line(part, style="italic")
    if x.numel() == 0:
        panel.line("(empty: no elements to draw)")
        return panel
    itemsize = x.element_size()
    values = x.detach()

    def cell(index: tuple[int, ...], cx: float, cy: float) -> None:
        # Index in the storage row's units (they differ only after a .view(dtype)).
        at = lay.storage_index(index) * itemsize // owner_itemsize
        panel.cell(cx, cy, _colour(lay.storage, at, owner.storage_numel), _show(values[index].item()), f"@{_index(at)}")

    if x.dim() <= 1:
        _draw_row(panel, x, cell)
    else:
        _draw_slices(panel, x, cell)
    return panel


def _draw_row(panel: _Canvas, x: torch.Tensor, cell: Callable[[tuple[int, ...], float, float], None]) -> None:
    """A 0-d or 1-d tensor: its elements in one row, the first MAX_COLS_1D of them (a line
    under it says so)."""
    top = panel.y + 0.1
    cols = min(x.numel(), MAX_COLS_1D)
    for j in range(cols):
        cell((j,) if x.dim() else (), MARGIN + j * CELL, top)
    panel.y = top + CELL + MARGIN
    if cols < x.numel():  # under the row: right of it, a full row is wider than a notebook
        panel.line(f"first {cols} of {x.numel()} drawn", color="dimgrey")
        panel.y += MARGIN


def _draw_slices(panel: _Canvas, x: torch.Tensor, cell: Callable[[tuple[int, ...], float, float], None]) -> None:
    """A tensor of 2 or more dimensions: its 2-d slices side by side, wrapping to keep the
    panel narrow, each cut to MAX_ROWS x MAX_COLS, with a line saying what was left out."""
    top = panel.y + 0.1
    leading = x.shape[:-2]
    slices = list(itertools.islice(itertools.product(*map(range, leading)), MAX_SLICES))
    rows, cols = min(x.shape[-2], MAX_ROWS), min(x.shape[-1], MAX_COLS)
    slice_width = (cols + 0.8) * CELL
    slice_height = (0.6 if leading else 0.0) + (rows + (rows < x.shape[-2])) * CELL + 0.3
    per_row = max(1, int(SLICES_WIDTH // slice_width))
    for k, lead in enumerate(slices):
        left = MARGIN + (k % per_row) * slice_width
        label_top = top + (k // per_row) * slice_height
        grid_top = label_top + (0.6 if leading else 0.0)
        if leading:
            panel.label(left, label_top + 0.3, f"[{', '.join(map(str, lead))}, :, :]")
        for i in range(rows):
            for j in range(cols):
                cell((*lead, i, j), left + j * CELL, grid_top + i * CELL)
        if cols < x.shape[-1]:
            panel.label(left + cols * CELL + 0.05, grid_top + 0.5, "…")
        if rows < x.shape[-2]:
            panel.label(left + 0.3, grid_top + rows * CELL + 0.3, "⋮")
    panel.y = top + math.ceil(len(slices) / per_row) * slice_height
    dropped = []
    if rows < x.shape[-2] or cols < x.shape[-1]:
        dropped.append(f"first {rows} x {cols} of {x.shape[-2]} x {x.shape[-1]} drawn")
    if len(slices) < math.prod(leading):
        dropped.append(f"first {len(slices)} of {math.prod(leading)} slices drawn")
    for part in dropped:
        panel.line(part, color="dimgrey")
    panel.y += MARGIN
