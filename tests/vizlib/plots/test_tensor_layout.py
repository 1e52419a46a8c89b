"""tensor_layout: the strides, offsets and storage cells it reports are torch's own, views
and copies are told apart, and every kind of tensor draws without touching the tensor."""

import io
import itertools
import re
import warnings

import matplotlib.pyplot as plt
import pytest
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg

import vizlib as vz
from vizlib.errors import VizlibValueError
from vizlib.plots.style import NOTEBOOK_WIDTH
from vizlib.plots.tensor_layout import MAX_COLS, MAX_ROWS, MAX_SLICES, MAX_STORAGE_CELLS, layouts, tensor_layout
from vizlib.text import dtype_name

X = torch.arange(12.0).reshape(3, 4)
VIEWS = {
    "x.T": X.T,
    "x[1]": X[1],
    "x[:, 1:]": X[:, 1:],
    "x[::2, ::3]": X[::2, ::3],
    "x.view(2, 6)": X.view(2, 6),
    "x.unsqueeze(0)": X.unsqueeze(0),
    "x.diagonal()": X.diagonal(),
    "x.narrow(1, 2, 2)": X.narrow(1, 2, 2),
    "x[0, 0]": X[0, 0],
    "x[:, :1].expand(3, 5)": X[:, :1].expand(3, 5),
    "x.reshape(2, 2, 3).permute(2, 0, 1)": X.reshape(2, 2, 3).permute(2, 0, 1),
    "x.view(torch.int16)": X.view(torch.int16),
}


def cell_address(t: torch.Tensor, index: tuple) -> int:
    """Where torch itself put element ``index``: from data pointers, not from strides."""
    return (t[index].data_ptr() - t.untyped_storage().data_ptr()) // t.element_size()


@pytest.mark.parametrize("name", VIEWS)
def test_reported_layout_equals_torch_for_views(name):
    view = VIEWS[name]
    base, lay = layouts(X, view, names=["x", name])
    assert (base.shape, base.stride, base.offset, base.contiguous) == ((3, 4), (4, 1), 0, True)
    assert lay.name == name
    assert lay.shape == tuple(view.shape) and lay.stride == view.stride()
    assert lay.offset == view.storage_offset() and lay.contiguous == view.is_contiguous()
    assert lay.storage == 0  # a view: the same memory as x
    assert lay.storage_numel == X.untyped_storage().nbytes() // view.element_size()
    for index in itertools.product(*map(range, view.shape)):
        assert lay.storage_index(index) == cell_address(view, index), index


@pytest.mark.parametrize(
    "make, is_copy",
    [
        (lambda x: x.clone(), True),
        (lambda x: x.T.contiguous(), True),
        (lambda x: x.T.reshape(-1), True),  # reshape of a non-contiguous tensor must copy
        (lambda x: x.reshape(-1), False),  # ... of a contiguous one it is a view
        (lambda x: x.contiguous(), False),  # already contiguous: returns x itself
        (lambda x: x + 0, True),
        (lambda x: x.detach(), False),
        (lambda x: x.to(torch.float64), True),
    ],
)
def test_copies_are_told_apart_from_views(make, is_copy):
    other = make(X)
    _, lay = layouts(X, other)
    assert (lay.storage != 0) == is_copy
    assert (lay.storage != 0) == (other.untyped_storage().data_ptr() != X.untyped_storage().data_ptr())


def test_views_of_a_copy_share_the_copy_storage():
    c = X.clone()
    found = layouts(X, c, c.T, X.T)
    assert [lay.storage for lay in found] == [0, 1, 1, 0]
    assert [lay.name for lay in found] == ["t", "v1", "v2", "v3"]


def texts(fig) -> list[str]:
    return [t.get_text() for t in fig.axes[0].texts]


def cells_drawn(fig) -> int:
    (cells,) = fig.axes[0].collections
    return len(cells.get_paths())


def test_picture_states_strides_and_who_shares_memory(tmp_path):
    x = X[:2, :3]  # 2 x 3, itself a view of a 12-element storage
    fig = tensor_layout(x, x.T, x.T.contiguous(), names=["x", "x.T", "x.T.contiguous()"])
    words = texts(fig)
    assert "shape (2, 3)  stride (4, 1)  offset 0" in words
    assert "shape (3, 2)  stride (1, 4)  offset 0" in words
    assert "shape (3, 2)  stride (2, 1)  offset 0" in words
    # x = X[:2, :3] skips the end of each row of X: it is not contiguous either.
    assert words.count("NOT contiguous") == 2 and words.count("contiguous") == 1
    assert "a view: shares x's memory" in words
    assert "its own memory, not x's (a copy): changes to x do not reach it" in " ".join(words)
    assert any(w.startswith("storage of x: 12 x float32 = 48 bytes") for w in words)
    assert "uses part of a 12-element storage: itself a view" in " ".join(words)
    assert any(w.startswith("storage 2 (first used by x.T.contiguous()): 6 x float32") for w in words)
    # Each element's cell label is the storage cell it reads, in the order drawn (row by row).
    at = [int(w[1:]) for w in words if w.startswith("@")]
    assert at == [0, 1, 2, 4, 5, 6] + [0, 4, 1, 5, 2, 6] + [0, 1, 2, 3, 4, 5]
    fig.savefig(tmp_path / "layout.png")
    assert (tmp_path / "layout.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_expanded_tensor_repeats_cells_and_says_so():
    row = torch.tensor([1.0, 2.0, 3.0])
    fig = tensor_layout(row, row.expand(4, 3), names=["row", "row.expand(4, 3)"])
    words = texts(fig)
    assert not any("uses part" in w for w in words)
    assert "shape (4, 3)  stride (0, 1)  offset 0" in words
    assert "stride 0 in dim 0: repeats the same cells (expand)" in " ".join(words)
    at = [int(w[1:]) for w in words if w.startswith("@")]
    assert at == [0, 1, 2] + [0, 1, 2] * 4


@pytest.mark.parametrize(
    "t",
    [
        torch.tensor(3.5),
        torch.arange(5),
        torch.arange(6.0).reshape(2, 3),
        torch.arange(24).reshape(2, 3, 4),
        torch.randn(1, 3, 2, 2),
        torch.tensor([True, False]),
        torch.zeros(0, 3),
        torch.randn(3, 4, dtype=torch.complex64),
        torch.randn(4, 4, requires_grad=True).T,
    ],
    ids=["0d", "1d", "2d", "3d", "4d", "bool", "empty", "complex", "requires-grad"],
)
def test_every_kind_of_tensor_draws_without_being_changed(t, tmp_path):
    before, grad_fn, requires_grad = t.detach().clone(), t.grad_fn, t.requires_grad
    open_figures = plt.get_fignums()
    fig = tensor_layout(t)
    assert plt.get_fignums() == open_figures  # closed: Jupyter shows it once, via the return value
    assert torch.equal(t.detach(), before)
    assert t.grad_fn is grad_fn and t.requires_grad == requires_grad
    storage = t.untyped_storage().nbytes() // t.element_size()
    assert cells_drawn(fig) == storage + t.numel()  # small enough: every cell and element drawn
    fig.savefig(tmp_path / "t.png")


def test_big_tensor_is_capped_and_says_what_was_drawn(tmp_path):
    z = torch.randn(100, 50)
    big = torch.randn(6, 20, 30)
    fig = tensor_layout(z[10:], big, names=["z[10:]", "big"])
    words = texts(fig)
    assert any(w.endswith(f"cells 500..{500 + MAX_STORAGE_CELLS - 1} drawn") for w in words)
    assert f"first {MAX_ROWS} x {MAX_COLS} of 90 x 50 drawn" in words
    assert f"first {MAX_SLICES} of 6 slices drawn" in words
    assert cells_drawn(fig) == 2 * MAX_STORAGE_CELLS + MAX_ROWS * MAX_COLS * (1 + MAX_SLICES)
    at = [int(w[1:]) for w in words if w.startswith("@")]
    assert at[:3] == [500, 501, 502] and at[MAX_COLS] == 550  # z[10:] starts at cell 500
    width, height = fig.get_size_inches()
    assert width < 12 and height < 25
    fig.savefig(tmp_path / "big.png")


def test_same_input_gives_the_same_picture():
    a = tensor_layout(X, X.T)
    b = tensor_layout(X, X.T)
    assert repr(a) == repr(b) and texts(a) == texts(b)
    assert repr(a).startswith("<Figure size ") and repr(a).endswith(" with 1 Axes>")


def test_names_with_dollar_signs_are_written_as_they_are():
    """A name holding two '$' was drawn by matplotlib as TeX math ("$x$" as an italic x)."""
    x = torch.arange(6.0).reshape(2, 3)
    fig = tensor_layout(x, x.T, names=["$x$", "cost$x$.T"])
    buf = io.StringIO()
    with plt.rc_context({"svg.fonttype": "none"}):
        fig.savefig(buf, format="svg")
    plt.close(fig)
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", buf.getvalue())
    assert "$x$" in texts and "cost$x$.T" in texts, texts


def test_bad_input_is_a_clear_error():
    with pytest.raises(vz.VizlibError, match="expects tensors, but t is of type list"):
        tensor_layout([[1, 2], [3, 4]])
    with pytest.raises(vz.VizlibError, match="view 2 is of type ndarray"):
        tensor_layout(X, X.T, X.numpy())
    with pytest.raises(vz.VizlibError, match="one name per tensor"):
        tensor_layout(X, X.T, names=["x"])
    with pytest.raises(vz.VizlibError, match="one name per tensor"):
        tensor_layout(X, names="x")
    with pytest.raises(vz.VizlibError, match=r"to_dense\(\)"):
        tensor_layout(X.to_sparse())


def test_lazy_negation_and_conjugate_views_show_their_memory_as_it_is():
    """``c.conj()`` and the imaginary part of it read memory through a sign flip that the
    memory does not hold: the storage row shows the memory, the tensor its values."""
    c = torch.tensor([1 + 2j, 3 - 1j])
    imag = c.conj().imag
    words = texts(tensor_layout(imag, names=["c.conj().imag"]))
    storage = words[1 : words.index("c.conj().imag")]
    assert storage[0::2] == ["1", "2", "3", "-1"]  # (value, cell index) per cell: the memory itself
    assert words[-4:] == ["-2", "@1", "1", "@3"]  # the values the tensor reads
    assert "a lazy negation: memory holds the" in words
    conj = layouts(c, c.conj(), imag)
    assert [lay.lazy for lay in conj] == ["", "conjugate", "negation"]


def test_a_quantized_tensor_says_what_to_draw_instead():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (PyTorch deprecates the quantized dtypes)
        q = torch.quantize_per_tensor(torch.tensor([0.5, -1.0]), 0.1, 0, torch.qint8)
    with pytest.raises(vz.VizlibError, match=r"int_repr\(\).*dequantize\(\)"):
        tensor_layout(q)
    assert texts(tensor_layout(q.int_repr()))[1:5:2] == ["5", "-10"]


def test_a_wrapper_subclass_says_to_draw_the_tensors_it_is_made_of():
    """A TwoTensor's storage only stands in (torch refuses its ``data_ptr()``): drawing it
    failed with torch's words about an invalid python storage."""
    from torch.testing._internal.two_tensor import TwoTensor

    t = TwoTensor(torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0]))
    with pytest.raises(vz.VizlibError, match=r"Draw those instead: vz.tensor_layout\(t.a, t.b\)"):
        tensor_layout(t)
    assert texts(tensor_layout(t.a, t.b))[1:5:2] == ["1", "2"]


def test_big_integers_and_storage_indices_are_shortened_to_fit_their_cells():
    ids = torch.tensor([1700000000123, 2**40, -(2**62), 123456789, 5], dtype=torch.int64)
    big = torch.zeros(20_000_000, dtype=torch.uint8)
    fig = vz.tensor_layout(ids, big[10_000_005:10_001_005].view(-1, 100), torch.tensor([1.5e7, -2.5e-9]))
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    ax = fig.axes[0]
    cell_px = ax.transData.transform((1, 0))[0] - ax.transData.transform((0, 0))[0]
    cell_texts = [t for t in ax.texts if t.get_fontsize() <= 7]
    too_wide = [t.get_text() for t in cell_texts if t.get_window_extent(canvas.get_renderer()).width > 0.95 * cell_px]
    assert not too_wide
    written = {t.get_text() for t in cell_texts}
    assert {"1.7e12", "1.1e12", "-4.6e18", "1.23e8", "5", "1.5e7", "-2.5e-9"} <= written
    assert {"@…00005", "@…00105", "…00005", "…00006"} <= written  # the tail of an index: its neighbours differ
    assert any("offset 10000005" in t.get_text() for t in ax.texts)  # the whole number, on the panel


@pytest.mark.parametrize("dtype", [torch.float4_e2m1fn_x2, torch.uint4, torch.bits8, torch.bits16])
def test_a_tensor_of_raw_bits_says_to_view_it_as_unsigned_integers(dtype):
    bits = torch.tensor([0x12, 0x34, 0x56, 0x78], dtype=torch.uint8).view(dtype)
    unsigned = {1: "uint8", 2: "uint16"}[bits.element_size()]
    with pytest.raises(VizlibValueError, match=rf"{dtype_name(dtype)}.*t\.view\(torch\.{unsigned}\)"):
        vz.tensor_layout(bits)
    assert vz.tensor_layout(bits.view(getattr(torch, unsigned)))  # the advice works


@pytest.mark.parametrize(
    "tensors",
    [
        (
            torch.zeros(20, dtype=torch.int64),
            torch.arange(4.0).view(torch.int32),
            torch.zeros(1000, dtype=torch.uint8)[5:].view(-1, 5),
        ),
        (torch.zeros(3, 4, 8),),
        (torch.zeros(40),),
    ],
    ids=["three storages", "3-d slices", "1-d"],
)
def test_figure_is_no_wider_than_a_notebook_shows(tensors):
    fig = vz.tensor_layout(*tensors, names=[f"a tensor named at some length, number {i}" for i in range(len(tensors))])
    assert fig.get_figwidth() <= NOTEBOOK_WIDTH
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    assert fig.get_tightbbox(canvas.get_renderer()).x1 <= fig.get_figwidth() + 0.01  # nothing cut at the right
