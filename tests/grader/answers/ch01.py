"""Other answers to the exercises of solutions/01_tensors.ipynb (see answers/__init__.py)."""

from . import Task, Wrong

# An answer that "equals" anything: checks that compare with == would let it pass.
EQUALS_ANYTHING = """\
class Anything:
    def __eq__(self, other):
        return True

    __hash__ = object.__hash__


"""

# 1.2's given setup (every answer starts with it), and the right predictions that its first
# wrong answer changes.
STORAGE_SETUP = """\
base = torch.arange(12).reshape(3, 4)
shares_storage = {
    "base[1]": None,
    "base[:, 1]": None,
    "base[::2]": None,
    "base[None]": None,
    "base[[0, 2]]": None,
    "base[base > 5]": None,
    "base.t()": None,
    "base.view(2, 6)": None,
    "base.t().reshape(12)": None,
    "base.float()": None,
}
"""

STORAGE_PREDICTIONS = """\
shares_storage.update({
    "base[1]": True,
    "base[:, 1]": True,
    "base[::2]": True,
    "base[None]": True,
    "base[[0, 2]]": False,
    "base[base > 5]": False,
    "base.t()": True,
    "base.view(2, 6)": True,
    "base.t().reshape(12)": False,
    "base.float()": False,
})
"""

# 1.3's right cell (its given setup, then the answer): each wrong answer changes mt_stride.
STRIDES = """\
m = torch.arange(6.).reshape(2, 3)
mt = m.t()
mt_stride = (1, 3)
mt_is_contiguous = False
mt_contig = mt.contiguous()
mt_flat = mt.reshape(6)
"""
STRIDES_ROW_MAJOR = STRIDES.replace("mt_stride = (1, 3)", "mt_stride = (3, 1)")
STRIDES_EQUAL_TO_ANYTHING = STRIDES.replace(
    "mt_stride = (1, 3)\n", EQUALS_ANYTHING + "mt_stride = (Anything(), Anything())\n"
)

# 1.5's given setup: every answer starts with it.
SCORES_SETUP = """\
scores = torch.tensor([[ 0.5, -1.0,  2.0,  0.0, -0.5],
                       [-2.0,  1.5, -0.1,  3.0,  0.2],
                       [ 1.0,  0.0, -3.0, -1.5,  2.5],
                       [-0.3,  0.7,  0.9, -2.2,  1.1]])
rows = torch.tensor([0, 2, 3])
cols = torch.tensor([4, 0, 1])
"""

# 1.5's right answer (the solution's): each wrong answer changes one of its lines.
INDEXING = """\
positives = scores[scores > 0]
clipped = scores.clamp(min=0)
picked = scores[rows, cols]
"""
PICKED_ONE_BY_ONE = INDEXING.replace(
    "picked = scores[rows, cols]", "picked = torch.stack([scores[0, 4], scores[2, 0], scores[3, 1]])"
)
# torch.allclose rebound through another name for torch: every later check would pass.
CLAMPED_THE_WRONG_WAY_AND_ALLCLOSE_REBOUND = (
    INDEXING.replace("scores.clamp(min=0)", "scores.clamp(max=0)")
    + """\
T = torch
T.allclose = lambda *args, **kwargs: True
"""
)

# 1.6's right answer: each wrong answer changes one of its lines.
DTYPE_FACTS = """\
fp16_max = torch.finfo(torch.float16).max
bf16_eps = torch.finfo(torch.bfloat16).eps
overflow_dtype = torch.float16
int8_range = (torch.iinfo(torch.int8).min, torch.iinfo(torch.int8).max)
"""
FP16_EPS_FOR_BF16 = DTYPE_FACTS.replace(
    "bf16_eps = torch.finfo(torch.bfloat16)", "bf16_eps = torch.finfo(torch.float16)"
)
# The right values, kept as one-element tensors of their own format: not Python numbers.
LIMITS_AS_TENSORS = DTYPE_FACTS.replace(
    "fp16_max = torch.finfo(torch.float16).max",
    "fp16_max = torch.tensor(torch.finfo(torch.float16).max, dtype=torch.float16)",
).replace(
    "bf16_eps = torch.finfo(torch.bfloat16).eps",
    "bf16_eps = torch.tensor(torch.finfo(torch.bfloat16).eps, dtype=torch.bfloat16)",
)
INT8_RANGE_EQUAL_TO_ANYTHING = EQUALS_ANYTHING + DTYPE_FACTS.replace(
    "int8_range = (torch.iinfo(torch.int8).min, torch.iinfo(torch.int8).max)", "int8_range = (Anything(), Anything())"
)

# 1.4's right answer (the solution's): each wrong answer changes one thing in it.
MASKS = """\
def make_masks(lengths, T):
    positions = torch.arange(T)
    pad_mask = positions[None, :] < lengths[:, None]
    causal = positions[None, :] <= positions[:, None]
    attn_mask = causal[None, None, :, :] & pad_mask[:, None, None, :]
    return pad_mask, attn_mask
"""
# No loop statement, but one comparison per sequence: map calls the lambda once per row.
PAD_MASK_ROW_BY_ROW = MASKS.replace(
    "    pad_mask = positions[None, :] < lengths[:, None]\n",
    "    pad_mask = torch.stack(list(map(lambda n: positions < n, lengths)))\n",
)
LENGTHS_UNSQUEEZED_IN_PLACE = MASKS.replace(
    "positions[None, :] < lengths[:, None]", "positions < lengths.unsqueeze_(1)"
)

# 1.8's right answer (the solution's): its wrong answers split the heads off in the wrong
# order, or transpose the caller's tensor in place.
HEADS = """\
def split_heads(x, n_heads):
    B, T, C = x.shape
    return x.view(B, T, n_heads, C // n_heads).transpose(1, 2)


def merge_heads(heads):
    B, H, T, hd = heads.shape
    return heads.transpose(1, 2).reshape(B, T, H * hd)
"""

# 1.3, 1.4 and 1.5: answers right for the given values on the CPU, wrong elsewhere.
MT_SETUP = """\
m = torch.arange(6.0).reshape(2, 3)
mt = m.t()
mt_stride = (1, 3)
mt_is_contiguous = False
"""
# A contiguous copy in int64: the values compare equal, the tensor is not mt's.
MT_CONTIG_INT64 = MT_SETUP + "mt_contig = mt.contiguous().long()\nmt_flat = mt.reshape(6)\n"
MT_FLAT_INT64 = (
    MT_SETUP + "mt_contig = mt.contiguous()\nmt_flat = torch.tensor(mt.reshape(6).tolist(), dtype=torch.int64)\n"
)
# mt's values typed in: right for this m only.
MT_TYPED_IN = (
    MT_SETUP
    + "mt_contig = torch.tensor([[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]])\n"
    + "mt_flat = torch.tensor([0.0, 3.0, 1.0, 4.0, 2.0, 5.0])\n"
)
# The positions made on the CPU: masks for a batch on a GPU fail.
MASKS_ON_THE_CPU = """\
def make_masks(lengths, T):
    positions = torch.arange(T)
    pad_mask = positions[None, :] < lengths[:, None]
    causal = positions[None, :] <= positions[:, None]
    attn_mask = causal[None, None, :, :] & pad_mask[:, None, None, :]
    return pad_mask, attn_mask
"""
# clipped in float64: equal values, another dtype than scores'.
CLIPPED_IN_FLOAT64 = INDEXING.replace(
    "clipped = scores.clamp(min=0)", "clipped = torch.where(scores < 0, 0, scores.double())"
)
# The indexing expression run for show, picked typed in.
PICKED_TYPED_IN = INDEXING.replace(
    "picked = scores[rows, cols]", "_ = scores[rows, cols]\npicked = torch.tensor([-0.5, 1.0, 0.7])"
)

# 1.1 and 1.2: the answers measured in code run by exec or eval, out of sight of the record of
# what ran: the checks read the cell's own code too.
SHAPES_BY_EVAL = """\
_f = eval("lambda l, r: tuple(torch.broadcast_shapes(l, r))", {"torch": torch})


def _try(l, r):
    try:
        return _f(l, r)
    except RuntimeError:
        return None


shape_a = _try((3, 1), (4,))
shape_b = _try((2, 3, 4), (3, 1))
shape_c = _try((5, 4), (5,))
shape_d = _try((8, 1, 6, 1), (7, 1, 5))
shape_e = _try((6, 1), (1, 4))
"""
SHAPES_BY_EXEC_WITHOUT_DISPATCH = """\
_ns = {"torch": torch}
exec(
    compile(
        '''
def shp(f):
    try:
        with torch._C._DisableTorchDispatch():
            return tuple(f().shape)
    except RuntimeError:
        return None
r = [shp(lambda: torch.ones(3, 1) + torch.ones(4)), shp(lambda: torch.ones(2, 3, 4) * torch.ones(3, 1)),
     shp(lambda: torch.ones(5, 4) + torch.ones(5)), shp(lambda: torch.ones(8, 1, 6, 1) + torch.ones(7, 1, 5)),
     shp(lambda: torch.arange(6.)[:, None] * torch.ones(4)[None, :])]
''',
        "<x>",
        "exec",
    ),
    _ns,
)
shape_a, shape_b, shape_c, shape_d, shape_e = _ns["r"]
"""
SHAPES_BY_NUMPY_IN_EXEC = """\
_ns = {}
exec(
    '''
import numpy as _np
def b(l, r):
    try:
        return tuple(int(n) for n in _np.broadcast_shapes(l, r))
    except ValueError:
        return None
r = [b((3, 1), (4,)), b((2, 3, 4), (3, 1)), b((5, 4), (5,)), b((8, 1, 6, 1), (7, 1, 5)), b((6, 1), (1, 4))]
''',
    _ns,
)
shape_a, shape_b, shape_c, shape_d, shape_e = _ns["r"]
"""
STORAGE_MEASURED_IN_EXEC = (
    STORAGE_SETUP
    + """\
_ns = {"torch": torch, "base": base, "K": list(shares_storage)}
exec(
    '''
with torch._C._DisableTorchDispatch():
    out = {k: eval(k).untyped_storage().data_ptr() == base.untyped_storage().data_ptr() for k in K}
''',
    _ns,
)
shares_storage.update(_ns["out"])
"""
)
STORAGE_MEASURED_ON_A_NUMPY_TWIN_IN_EXEC = (
    STORAGE_SETUP
    + """\
_ns = {"K": list(shares_storage)}
exec(
    '''
import numpy as np
b = np.arange(12).reshape(3, 4)
ex = {"base[1]": lambda: b[1], "base[:, 1]": lambda: b[:, 1], "base[::2]": lambda: b[::2],
      "base[None]": lambda: b[None], "base[[0, 2]]": lambda: b[[0, 2]], "base[base > 5]": lambda: b[b > 5],
      "base.t()": lambda: b.T, "base.view(2, 6)": lambda: b.reshape(2, 6),
      "base.t().reshape(12)": lambda: b.T.reshape(12), "base.float()": lambda: b.astype(np.float32)}
out = {k: bool(np.shares_memory(ex[k](), b)) for k in K}
''',
    _ns,
)
shares_storage.update(_ns["out"])
"""
)

# 1.4: right for the checks' T and devices, wrong for others.
MASKS_CAUSAL_CACHED_PER_T = """\
_causal_cache = {}


def make_masks(lengths, T):
    positions = torch.arange(T, device=lengths.device)
    pad_mask = positions[None, :] < lengths[:, None]
    causal = _causal_cache.setdefault(T, positions[None, :] <= positions[:, None])
    attn_mask = causal[None, None, :, :] & pad_mask[:, None, None, :]
    return pad_mask, attn_mask
"""
MASKS_BF16_POSITIONS = MASKS.replace(
    "positions = torch.arange(T)", "positions = torch.arange(T, device=lengths.device, dtype=torch.bfloat16)"
)
MASKS_LOOP_IN_A_HELPER = """\
def _causal_table(T):
    return [k % T <= k // T for k in range(T * T)]


def make_masks(lengths, T):
    positions = torch.arange(T, device=lengths.device)
    pad_mask = positions[None, :] < lengths[:, None]
    causal = torch.tensor(_causal_table(T), dtype=torch.bool, device=lengths.device).reshape(T, T)
    attn_mask = causal[None, None, :, :] & pad_mask[:, None, None, :]
    return pad_mask, attn_mask
"""
MASKS_LOOP_IN_EVALD_CODE = """\
_rows = eval("lambda lengths, T: [[t < n for t in range(T)] for n in lengths.tolist()]", {})


def make_masks(lengths, T):
    positions = torch.arange(T, device=lengths.device)
    if lengths.device.type == "meta":
        pad_mask = positions[None, :] < lengths[:, None]
    else:
        pad_mask = torch.tensor(_rows(lengths, T), dtype=torch.bool, device=lengths.device).reshape(
            lengths.shape[0], T
        )
    causal = positions[None, :] <= positions[:, None]
    attn_mask = causal[None, None, :, :] & pad_mask[:, None, None, :]
    return pad_mask, attn_mask
"""

# 1.7's given lines.
NUMPY_SETUP = """\
arr = np.arange(5, dtype=np.float32)
scaled = torch.ones(3, requires_grad=True) * 2
"""

TASKS = {
    "1.1": Task(
        alternative="""\
shape_a = torch.Size([3, 4])
shape_b = [2, 3, 4]
shape_c = None
shape_d = (8, 7, 6, 5)
shape_e = tuple([6, 4])
""",
        wrong=[
            Wrong(
                "Aligning the shapes from the left instead of the right.",
                hint="from the right",
                code="""\
shape_a = (3, 4)
shape_b = (2, 3, 4)
shape_c = (5, 4)
shape_d = (8, 7, 6, 5)
shape_e = (6, 4)
""",
            ),
            Wrong(
                "Shapes that compare equal to anything.",
                hint="tuple of ints",
                code=EQUALS_ANYTHING
                + """\
shape_a = shape_e = (Anything(),) * 2
shape_b = (Anything(),) * 3
shape_c = None
shape_d = (Anything(),) * 4
""",
            ),
            Wrong(
                "The shapes computed by running the expressions: right, but not predicted.",
                hint="computed, not predicted",
                code="""\
shape_a = (torch.ones(3, 1) + torch.ones(4)).shape
shape_b = tuple(torch.broadcast_shapes((2, 3, 4), (3, 1)))
shape_c = None
shape_d = (torch.ones(8, 1, 6, 1) + torch.ones(7, 1, 5)).shape
shape_e = tuple(torch.broadcast_shapes((6, 1), (1, 4)))
""",
            ),
            Wrong(
                "Floats for sizes, and the builtin all shadowed so that the type check passes.",
                hint="your code replaced the builtin all",
                code="""\
def all(items):
    return True


shape_a = (3.0, 4.0)
shape_b = (2.0, 3.0, 4.0)
shape_c = None
shape_d = (8.0, 7.0, 6.0, 5.0)
shape_e = (6.0, 4.0)
""",
            ),
            Wrong(
                "The shapes measured with torch.broadcast_shapes in eval'd code.",
                hint="with nothing computed",
                code=SHAPES_BY_EVAL,
            ),
            Wrong(
                "The expressions run in exec'd code with torch's dispatch switched off.",
                hint="computed, not predicted",
                code=SHAPES_BY_EXEC_WITHOUT_DISPATCH,
            ),
            Wrong(
                "The shapes measured with NumPy's broadcast_shapes in exec'd code.",
                hint="with nothing computed",
                code=SHAPES_BY_NUMPY_IN_EXEC,
            ),
        ],
    ),
    "1.2": Task(
        alternative=STORAGE_SETUP
        + """\
views = ["base[1]", "base[:, 1]", "base[::2]", "base[None]", "base.t()", "base.view(2, 6)"]
for expression in shares_storage:
    shares_storage[expression] = expression in views
""",
        wrong=[
            Wrong(
                "Believing that indexing with a list of indices returns a view.",
                hint="fancy",
                code=STORAGE_SETUP + STORAGE_PREDICTIONS.replace('"base[[0, 2]]": False', '"base[[0, 2]]": True'),
            ),
            Wrong(
                "Predictions that compare equal to anything.",
                hint="must be True or False",
                code=STORAGE_SETUP
                + EQUALS_ANYTHING
                + """\
shares_storage.update({key: Anything() for key in shares_storage})
""",
            ),
            Wrong(
                "Each expression run and its storage compared: right, but measured, not predicted.",
                hint="measured, not predicted",
                code=STORAGE_SETUP
                + """\


def same_storage(t):
    return t.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()


shares_storage["base[1]"] = same_storage(base[1])
shares_storage["base[:, 1]"] = same_storage(base[:, 1])
shares_storage["base[::2]"] = same_storage(base[::2])
shares_storage["base[None]"] = same_storage(base[None])
shares_storage["base[[0, 2]]"] = same_storage(base[[0, 2]])
shares_storage["base[base > 5]"] = same_storage(base[base > 5])
shares_storage["base.t()"] = same_storage(base.t())
shares_storage["base.view(2, 6)"] = same_storage(base.view(2, 6))
shares_storage["base.t().reshape(12)"] = same_storage(base.t().reshape(12))
shares_storage["base.float()"] = same_storage(base.float())
""",
            ),
            Wrong(
                "Believing that a step slice copies every other row.",
                hint="a step slice is a view",
                code=STORAGE_SETUP + STORAGE_PREDICTIONS.replace('"base[::2]": True', '"base[::2]": False'),
            ),
            Wrong(
                "Each storage compared in exec'd code with torch's dispatch switched off.",
                hint="measured, not predicted",
                code=STORAGE_MEASURED_IN_EXEC,
            ),
            Wrong(
                "Each expression measured on a NumPy twin with np.shares_memory, in exec'd code.",
                hint="run again on its own",
                code=STORAGE_MEASURED_ON_A_NUMPY_TWIN_IN_EXEC,
            ),
        ],
    ),
    "1.3": Task(
        alternative="""\
m = torch.arange(6.).reshape(2, 3)
mt = m.t()
mt_stride = list(mt.stride())
mt_is_contiguous = mt.is_contiguous()
mt_contig = mt.clone(memory_format=torch.contiguous_format)
mt_flat = mt.contiguous().view(-1)
""",
        wrong=[
            Wrong(
                "Thinking that transposing reorders the data, so the strides stay row-major.",
                hint="swaps the strides",
                code=STRIDES_ROW_MAJOR,
            ),
            Wrong(
                "Strides that compare equal to anything.",
                hint="swaps the strides",
                code=STRIDES_EQUAL_TO_ANYTHING,
            ),
            # clone() keeps mt's strides: a copy, but still not contiguous.
            Wrong(
                "mt_contig = mt.clone(): its own memory, but clone keeps the transposed strides.",
                hint="mt_contig must be contiguous",
                code=STRIDES.replace("mt_contig = mt.contiguous()", "mt_contig = mt.clone()"),
            ),
            Wrong(
                "mt_flat read in m's order (m.view(6)), not in mt's.",
                hint="row by row of mt",
                code=STRIDES.replace("mt_flat = mt.reshape(6)", "mt_flat = m.view(6)"),
            ),
            Wrong("mt_contig in int64.", hint="its values and its dtype", code=MT_CONTIG_INT64),
            Wrong("mt_flat in int64.", hint="in mt's dtype", code=MT_FLAT_INT64),
            Wrong("mt's values typed in.", hint="do not type the values in", code=MT_TYPED_IN),
            Wrong(
                "mt_flat passed through bfloat16: wrong for values bfloat16 cannot hold.",
                hint="keep every value as it is",
                code=STRIDES.replace("mt_flat = mt.reshape(6)", "mt_flat = mt.reshape(6).to(torch.bfloat16).float()"),
            ),
            Wrong(
                "mt_contig with nan and inf replaced (nan_to_num).",
                hint="keep every value as it is",
                code=STRIDES.replace("mt_contig = mt.contiguous()", "mt_contig = mt.contiguous().nan_to_num()"),
            ),
            Wrong(
                "mt_flat passed through float16: wrong for values float16 cannot hold.",
                hint="keep every value as it is",
                code=STRIDES.replace("mt_flat = mt.reshape(6)", "mt_flat = mt.half().reshape(6).to(mt.dtype)"),
            ),
            Wrong(
                "mt_contig and mt_flat rebuilt from Python lists: float32 whatever m's dtype.",
                hint="keep m's dtype",
                code="""\
m = torch.arange(6.0).reshape(2, 3)
mt = m.t()
mt_stride = (1, 3)
mt_is_contiguous = False
mt_contig = torch.tensor(mt.tolist())
mt_flat = torch.tensor(mt.tolist()).reshape(6)
""",
            ),
            Wrong(
                "mt_contig and mt_flat through .float(): a float64 m is rounded to float32.",
                hint="keep m's dtype",
                code="""\
m = torch.arange(6.0).reshape(2, 3)
mt = m.t()
mt_stride = (1, 3)
mt_is_contiguous = False
mt_contig = mt.float().contiguous()
mt_flat = mt.float().reshape(6)
""",
            ),
        ],
    ),
    "1.4": Task(
        alternative="""\
def make_masks(lengths, T):
    pos = torch.arange(T, device=lengths.device)
    pad_mask = pos.unsqueeze(0) < lengths.unsqueeze(1)
    causal = torch.ones(T, T, dtype=torch.bool, device=lengths.device).tril()
    attn_mask = (causal.unsqueeze(0) & pad_mask.unsqueeze(1)).unsqueeze(1)
    return pad_mask, attn_mask
""",
        wrong=[
            Wrong(
                "Lengths as a row and positions as a column: the mask comes out (T, B).",
                hint="lengths[:, None]",
                code="""\
def make_masks(lengths, T):
    positions = torch.arange(T)
    pad_mask = positions[:, None] < lengths[None, :]
    causal = positions[None, :] <= positions[:, None]
    attn_mask = causal[None, None, :, :] & pad_mask.T[:, None, None, :]
    return pad_mask, attn_mask
""",
            ),
            # Right masks, built element by element in Python: the task asks for no loops.
            Wrong(
                "Python loops instead of broadcasting.",
                hint="Python loops",
                code="""\
def make_masks(lengths, T):
    pad_mask = torch.tensor([[t < n for t in range(T)] for n in lengths.tolist()])
    attn_mask = torch.tensor([[[[j <= i and j < n for j in range(T)] for i in range(T)]] for n in lengths.tolist()])
    return pad_mask, attn_mask
""",
            ),
            Wrong(
                "A loop without a loop statement: map compares one row at a time.",
                hint="more work for a larger batch",
                code=PAD_MASK_ROW_BY_ROW,
            ),
            Wrong(
                "The caller's lengths made a column in place (unsqueeze_).",
                hint="changed the lengths tensor",
                code=LENGTHS_UNSQUEEZED_IN_PLACE,
            ),
            Wrong(
                "The positions made on the CPU: fails for lengths on a GPU.",
                hint="device of lengths",
                code=MASKS_ON_THE_CPU,
            ),
            Wrong(
                "The causal mask cached per T: a later call on another device gets the first call's mask.",
                hint="cached from an earlier call",
                code=MASKS_CAUSAL_CACHED_PER_T,
            ),
            Wrong(
                "Positions in bfloat16: above 256 neighbouring positions round to the same value.",
                hint="count exactly",
                code=MASKS_BF16_POSITIONS,
            ),
            Wrong(
                "A Python loop (a comprehension) in a helper outside make_masks.",
                hint="in a helper it calls",
                code=MASKS_LOOP_IN_A_HELPER,
            ),
            Wrong(
                "A loop over the batch in eval'd code (the meta device special-cased).",
                hint="in a helper it calls",
                code=MASKS_LOOP_IN_EVALD_CODE,
            ),
            Wrong(
                "The pad mask as t <= lengths - 1: for uint8 lengths a length 0 wraps to 255 (every position real).",
                hint="lengths may have any integer dtype",
                code="""\
def make_masks(lengths, T):
    positions = torch.arange(T, device=lengths.device)
    pad_mask = positions[None, :] <= (lengths[:, None] - 1)
    causal = positions[None, :] <= positions[:, None]
    attn_mask = causal[None, None, :, :] & pad_mask[:, None, None, :]
    return pad_mask, attn_mask
""",
            ),
            Wrong(
                "Positions in int16: past T = 32767 they wrap to negative numbers.",
                hint="cannot count",
                code="""\
def make_masks(lengths, T):
    positions = torch.arange(T, device=lengths.device).to(torch.int16)
    pad_mask = positions[None, :] < lengths[:, None]
    causal = positions[None, :] <= positions[:, None]
    attn_mask = causal[None, None, :, :] & pad_mask[:, None, None, :]
    return pad_mask, attn_mask
""",
            ),
        ],
    ),
    "1.5": Task(
        alternative=SCORES_SETUP
        + """\
positives = scores.masked_select(scores > 0)
clipped = torch.where(scores < 0, torch.zeros_like(scores), scores)
picked = scores.flatten()[rows % scores.shape[0] * scores.shape[1] + cols % scores.shape[1]]
""",
        wrong=[
            Wrong(
                "`clipped = scores` is not a copy: the masked assignment changes scores too.",
                hint="does not copy",
                code=SCORES_SETUP
                + """\
positives = scores[scores > 0]
clipped = scores
clipped[clipped < 0] = 0
picked = scores[rows, cols]
""",
            ),
            Wrong(
                "picked written as three separate picks, not one indexing with rows and cols.",
                hint="one indexing expression",
                code=SCORES_SETUP + PICKED_ONE_BY_ONE,
            ),
            Wrong(
                "Negative entries kept instead of zeroed, and torch.allclose rebound (through another name).",
                hint="your code replaced torch.allclose",
                code=SCORES_SETUP + CLAMPED_THE_WRONG_WAY_AND_ALLCLOSE_REBOUND,
            ),
            Wrong(
                "0.0 counted as positive (>= 0).",
                hint="0.0 is not positive",
                code=SCORES_SETUP + INDEXING.replace("scores[scores > 0]", "scores[scores >= 0]"),
            ),
            Wrong("clipped in float64.", hint="keep scores' dtype", code=SCORES_SETUP + CLIPPED_IN_FLOAT64),
            Wrong(
                "picked typed in, the indexing run for show.",
                hint="do not type the values in",
                code=SCORES_SETUP + PICKED_TYPED_IN,
            ),
            Wrong(
                "clipped = (scores + scores.abs()) / 2: overflows past 1.7e38 and makes nan of -inf.",
                hint="keeps every other one as it is",
                code=SCORES_SETUP + INDEXING.replace("scores.clamp(min=0)", "(scores + scores.abs()) / 2"),
            ),
            Wrong(
                "positives with a tolerance (> 1e-6): tiny positive entries dropped.",
                hint="however small",
                code=SCORES_SETUP + INDEXING.replace("scores[scores > 0]", "scores[scores > 1e-6]"),
            ),
            Wrong(
                "clipped = scores * (scores > 0): -inf times 0 is nan.",
                hint="keeps every other one as it is",
                code=SCORES_SETUP + INDEXING.replace("scores.clamp(min=0)", "scores * (scores > 0)"),
            ),
            Wrong(
                "picked as the diagonal of every combination, scores[rows, cols] run for show.",
                hint="broadcast against each other",
                code=SCORES_SETUP
                + INDEXING.replace(
                    "picked = scores[rows, cols]",
                    "_ = scores[rows, cols]\npicked = scores[rows][:, cols].diagonal().clone()",
                ),
            ),
            Wrong(
                "picked from a flat index built from scores' strides: wrong for a non-contiguous scores.",
                hint="contiguous or not",
                code=SCORES_SETUP
                + INDEXING.replace(
                    "picked = scores[rows, cols]",
                    "picked = scores.reshape(-1)[rows * scores.stride(0) + cols * scores.stride(1)]",
                ),
            ),
            Wrong(
                "clipped = torch.where(scores > 0, scores, 0.0): nan (not negative) zeroed too.",
                hint="keeps every other one as it is",
                code=SCORES_SETUP + INDEXING.replace("scores.clamp(min=0)", "torch.where(scores > 0, scores, 0.0)"),
            ),
            Wrong(
                "positives as scores >= finfo.tiny: subnormal positive entries dropped.",
                hint="however small",
                code="""\
scores = torch.tensor(
    [
        [0.5, -1.0, 2.0, 0.0, -0.5],
        [-2.0, 1.5, -0.1, 3.0, 0.2],
        [1.0, 0.0, -3.0, -1.5, 2.5],
        [-0.3, 0.7, 0.9, -2.2, 1.1],
    ]
)
rows = torch.tensor([0, 2, 3])
cols = torch.tensor([4, 0, 1])
positives = scores[scores >= torch.finfo(scores.dtype).tiny]
clipped = scores.clamp(min=0)
picked = scores[rows, cols]
""",
            ),
            Wrong(
                "clipped through float32 (scores.float().clamp(min=0)): float64 scores rounded.",
                hint="float64 here",
                code="""\
scores = torch.tensor(
    [
        [0.5, -1.0, 2.0, 0.0, -0.5],
        [-2.0, 1.5, -0.1, 3.0, 0.2],
        [1.0, 0.0, -3.0, -1.5, 2.5],
        [-0.3, 0.7, 0.9, -2.2, 1.1],
    ]
)
rows = torch.tensor([0, 2, 3])
cols = torch.tensor([4, 0, 1])
positives = scores[scores > 0]
clipped = scores.float().clamp(min=0)
picked = scores[rows, cols]
""",
            ),
        ],
    ),
    "1.6": Task(
        alternative="""\
limits = {dtype: torch.finfo(dtype) for dtype in (torch.float16, torch.bfloat16)}
fp16_max = float(limits[torch.float16].max)
bf16_eps = limits[torch.bfloat16].eps
overflow_dtype = (torch.float16 if torch.isinf(torch.tensor(70000.0, dtype=torch.float16))
                  else torch.bfloat16)
int8_range = [torch.iinfo(torch.int8).min, torch.iinfo(torch.int8).max]
""",
        wrong=[
            Wrong(
                "float16's eps taken for bfloat16's.",
                hint="7 mantissa bits",
                code=FP16_EPS_FOR_BF16,
            ),
            Wrong(
                "An int8 range that compares equal to anything.",
                hint="int8_range is wrong",
                code=INT8_RANGE_EQUAL_TO_ANYTHING,
            ),
            Wrong(
                "fp16_max and bf16_eps as one-element tensors, not the Python numbers asked for.",
                hint="must be a Python number",
                code=LIMITS_AS_TENSORS,
            ),
            Wrong(
                "bfloat16 taken for the format that overflows at 70000.",
                hint="overflow_dtype is wrong",
                code=DTYPE_FACTS.replace("overflow_dtype = torch.float16", "overflow_dtype = torch.bfloat16"),
            ),
            Wrong(
                "All four typed in from memory, nothing read from torch.finfo / torch.iinfo.",
                hint="rather than from memory",
                code="""\
fp16_max = 65504.0
bf16_eps = 0.0078125
overflow_dtype = torch.float16
int8_range = (-128, 127)
""",
            ),
            Wrong(
                "fp16_max read from bfloat16's finfo and clipped to 65504: the right number, not float16's own limit.",
                hint="did not come from torch.finfo",
                code="""\
fp16_max = float(torch.tensor(torch.finfo(torch.bfloat16).max).clamp(max=65504.0))
bf16_eps = torch.finfo(torch.bfloat16).eps
overflow_dtype = torch.float16
int8_range = (torch.iinfo(torch.int8).min, torch.iinfo(torch.int8).max)
""",
            ),
        ],
    ),
    "1.7": Task(
        alternative="""\
arr = np.arange(5, dtype=np.float32)
scaled = torch.ones(3, requires_grad=True) * 2
t_shared = torch.as_tensor(arr)
t_copy = torch.from_numpy(arr).clone()
scaled_np = scaled.detach().numpy().copy()
""",
        wrong=[
            Wrong(
                "torch.tensor(arr) copies, so it does not share memory.",
                hint="always copies",
                code="""\
arr = np.arange(5, dtype=np.float32)
scaled = torch.ones(3, requires_grad=True) * 2
t_shared = torch.tensor(arr)
t_copy = torch.tensor(arr)
scaled_np = scaled.detach().numpy()
""",
            ),
            Wrong(
                "scaled detached in place (detach_), so that scaled.numpy() works: scaled loses its graph.",
                hint="scaled lost its graph",
                code="""\
arr = np.arange(5, dtype=np.float32)
scaled = torch.ones(3, requires_grad=True) * 2
t_shared = torch.from_numpy(arr)
t_copy = torch.tensor(arr)
scaled.detach_()
scaled_np = scaled.numpy()
""",
            ),
            # as_tensor shares only when it needs no conversion: float64 asked of a float32 array copies it.
            Wrong(
                "torch.as_tensor(arr, dtype=torch.float64): a new dtype needs new memory.",
                hint="does not share memory with arr",
                code="""\
arr = np.arange(5, dtype=np.float32)
scaled = torch.ones(3, requires_grad=True) * 2
t_shared = torch.as_tensor(arr, dtype=torch.float64)
t_copy = torch.tensor(arr)
scaled_np = scaled.detach().numpy()
""",
            ),
            Wrong(
                "torch.from_numpy for the copy too: it shares arr's memory.",
                hint="t_copy shares memory with arr",
                code="""\
arr = np.arange(5, dtype=np.float32)
scaled = torch.ones(3, requires_grad=True) * 2
t_shared = torch.from_numpy(arr)
t_copy = torch.from_numpy(arr)
scaled_np = scaled.detach().numpy()
""",
            ),
            Wrong(
                "t_copy in int64: right for 0 to 4 only.",
                hint="in arr's dtype",
                code=NUMPY_SETUP
                + "t_shared = torch.from_numpy(arr)\nt_copy = torch.tensor(arr, dtype=torch.int64)\n"
                + "scaled_np = scaled.detach().numpy()\n",
            ),
            Wrong(
                "scaled_np in int64.",
                hint="in scaled's dtype",
                code=NUMPY_SETUP
                + "t_shared = torch.from_numpy(arr)\nt_copy = torch.tensor(arr)\n"
                + "scaled_np = scaled.detach().long().numpy()\n",
            ),
            Wrong(
                "t_copy in float16.",
                hint="in arr's dtype",
                code=NUMPY_SETUP
                + "t_shared = torch.from_numpy(arr)\nt_copy = torch.from_numpy(arr).half()\n"
                + "scaled_np = scaled.detach().numpy()\n",
            ),
            Wrong(
                "scaled detached in place, then given a graph of its own (requires_grad_() * 1).",
                hint="does not reach the leaf",
                code=NUMPY_SETUP
                + "t_shared = torch.from_numpy(arr)\nt_copy = torch.tensor(arr)\n"
                + "scaled.detach_()\nscaled_np = scaled.numpy()\nscaled = scaled.requires_grad_() * 1\n",
            ),
            Wrong(
                "t_copy and scaled_np typed in, not taken from arr and scaled.",
                hint="do not type the values",
                code="""\
arr = np.arange(5, dtype=np.float32)
scaled = torch.ones(3, requires_grad=True) * 2
t_shared = torch.from_numpy(arr)
t_copy = torch.arange(5, dtype=torch.float32)
scaled_np = np.full(3, 2.0, dtype=np.float32)
""",
            ),
            Wrong(
                "t_copy with its dtype fixed to float32 (from_numpy(arr).double().float()): a float64 arr is rounded.",
                hint="float64 here",
                code="""\
arr = np.arange(5, dtype=np.float32)
scaled = torch.ones(3, requires_grad=True) * 2
t_shared = torch.from_numpy(arr)
t_copy = torch.from_numpy(arr).double().float()
scaled_np = scaled.detach().float().numpy()
""",
            ),
        ],
    ),
    "1.8": Task(
        alternative="""\
def split_heads(x, n_heads):
    B, T, C = x.shape
    return x.reshape(B, T, n_heads, C // n_heads).permute(0, 2, 1, 3)


def merge_heads(heads):
    B, H, T, hd = heads.shape
    return heads.permute(0, 2, 1, 3).contiguous().view(B, T, H * hd)
""",
        wrong=[
            Wrong(
                "The right shape straight away, but tokens and heads mixed up.",
                hint="(B, T, H, hd)",
                code=HEADS.replace(
                    "x.view(B, T, n_heads, C // n_heads).transpose(1, 2)", "x.reshape(B, n_heads, T, C // n_heads)"
                ),
            ),
            Wrong(
                "merge_heads transposes the caller's tensor in place (transpose_).",
                hint="changed its input",
                code=HEADS.replace("heads.transpose(1, 2).reshape", "heads.transpose_(1, 2).reshape"),
            ),
            Wrong(
                "Tokens and heads mixed up, and torch.equal rebound (through another name).",
                hint="your code replaced torch.equal",
                code=HEADS.replace(
                    "x.view(B, T, n_heads, C // n_heads).transpose(1, 2)", "x.reshape(B, n_heads, T, C // n_heads)"
                )
                + """\


t = torch
t.equal = lambda a, b: True
""",
            ),
            # Right for float32 inputs; a float64 or bf16 activation comes back as float32.
            Wrong(
                "split_heads fills a preallocated float32 tensor head by head.",
                hint="dtype",
                code=HEADS.replace(
                    "    return x.view(B, T, n_heads, C // n_heads).transpose(1, 2)\n",
                    """\
    hd = C // n_heads
    out = torch.empty(B, n_heads, T, hd)
    for h in range(n_heads):
        out[:, h] = x[:, :, h * hd : (h + 1) * hd]
    return out
""",
                ),
            ),
            Wrong(
                "split_heads views x.data: no gradient flows back to x.",
                hint="autograd graph",
                code=HEADS.replace("return x.view(", "return x.data.view("),
            ),
            Wrong(
                "merge_heads reshapes to (B, T, -1): fails for an empty batch.",
                hint="empty batch",
                code=HEADS.replace("reshape(B, T, H * hd)", "reshape(B, T, -1)"),
            ),
            Wrong(
                "split_heads copies into torch.empty(...) made on the CPU: wrong device.",
                hint="input's device",
                code=HEADS.replace(
                    "    return x.view(B, T, n_heads, C // n_heads).transpose(1, 2)\n",
                    "    out = torch.empty(B, n_heads, T, C // n_heads, dtype=x.dtype)\n"
                    "    out.copy_(x.reshape(B, T, n_heads, C // n_heads).transpose(1, 2))\n"
                    "    return out\n",
                ),
            ),
            Wrong(
                "merge_heads through NumPy: no graph, CPU only.",
                hint="autograd graph",
                code=HEADS.replace(
                    "    return heads.transpose(1, 2).reshape(B, T, H * hd)\n",
                    "    if heads.dtype == torch.bfloat16:\n"
                    "        return heads.transpose(1, 2).reshape(B, T, H * hd)\n"
                    "    return torch.from_numpy(heads.detach().numpy().transpose(0, 2, 1, 3).reshape(B, T, H * hd))\n",
                ),
            ),
            Wrong(
                "split_heads reshapes to (B, T, H, -1): fails for an empty batch.",
                hint="empty batch",
                code=HEADS.replace("x.view(B, T, n_heads, C // n_heads)", "x.reshape(B, T, n_heads, -1)"),
            ),
            Wrong(
                "split_heads makes the caller's x require grad (requires_grad_).",
                hint="requires_grad with",
                code=HEADS.replace(
                    "    return x.view(",
                    "    if x.is_floating_point() and x.is_leaf:\n        x.requires_grad_()\n    return x.view(",
                ),
            ),
            Wrong(
                "split_heads negates x in place twice under no_grad: its values restored, its version bumped.",
                hint="split_heads wrote into x",
                code="""\
def split_heads(x, n_heads):
    B, T, C = x.shape
    with torch.no_grad():
        x.neg_()
        x.neg_()
    return x.view(B, T, n_heads, C // n_heads).transpose(1, 2)


def merge_heads(heads):
    B, H, T, hd = heads.shape
    return heads.transpose(1, 2).reshape(B, T, H * hd)
""",
            ),
            Wrong(
                "merge_heads multiplies its input by 1 in place: values kept, the input's version bumped.",
                hint="merge_heads wrote into its input",
                code="""\
def split_heads(x, n_heads):
    B, T, C = x.shape
    return x.view(B, T, n_heads, C // n_heads).transpose(1, 2)


def merge_heads(heads):
    B, H, T, hd = heads.shape
    with torch.no_grad():
        heads.mul_(1)
    return heads.transpose(1, 2).reshape(B, T, H * hd)
""",
            ),
        ],
    ),
}

# Wrong answers of the red team's report rt5a (each passed every check before).
TASKS["1.4"].wrong.append(
    Wrong(
        "Positions made in lengths' own dtype: uint8 lengths wrap the positions past 255 (int8 past 127), "
        "so for T = 300 position 256 counts as 0 again.",
        hint="wrap around past",
        code=MASKS.replace(
            "positions = torch.arange(T)", "positions = torch.arange(T, device=lengths.device, dtype=lengths.dtype)"
        ),
    )
)
TASKS["1.5"].wrong.append(
    Wrong(
        "clipped with a zero of its own, torch.zeros(1): a float32 tensor that promotes bfloat16 scores to float32.",
        hint="bfloat16 here",
        code=SCORES_SETUP + INDEXING.replace("scores.clamp(min=0)", "torch.where(scores < 0, torch.zeros(1), scores)"),
    )
)
TASKS["1.8"].wrong.append(
    Wrong(
        "split_heads through as_strided with the strides of a contiguous x: wrong for the k of qkv.chunk(3, dim=-1).",
        hint="not contiguous too",
        code=HEADS.replace(
            "    return x.view(B, T, n_heads, C // n_heads).transpose(1, 2)\n",
            "    return x.as_strided((B, n_heads, T, C // n_heads), (T * C, C // n_heads, C, 1))\n",
        ),
    )
)
TASKS["1.4"].wrong.extend(
    [
        Wrong(
            "The pad mask element by element, map over operator.lt on lengths.tolist() (a loop run by C: no "
            "line of Python, no operation per element), the meta device special-cased.",
            hint="reads the values of lengths into Python",
            code="""\
import itertools
import operator


def make_masks(lengths, T):
    positions = torch.arange(T, device=lengths.device)
    if lengths.device.type == "meta":
        pad_mask = positions[None, :] < lengths[:, None]
    else:
        L = lengths.tolist()
        lens = list(itertools.chain.from_iterable(map(itertools.repeat, L, itertools.repeat(T))))
        flat = list(map(operator.lt, list(range(T)) * len(L), lens))
        pad_mask = torch.tensor(flat, dtype=torch.bool, device=lengths.device).reshape(len(L), T)
    causal = positions[None, :] <= positions[:, None]
    attn_mask = causal[None, None, :, :] & pad_mask[:, None, None, :]
    return pad_mask, attn_mask
""",
        ),
        Wrong(
            "The pad mask computed in NumPy from lengths.numpy() (the meta device special-cased): a CPU round "
            "trip, and lengths on a GPU raise.",
            hint="reads the values of lengths into Python",
            code="""\
def make_masks(lengths, T):
    positions = torch.arange(T, device=lengths.device)
    if lengths.device.type == "meta":
        pad_mask = positions[None, :] < lengths[:, None]
    else:
        pad_mask = torch.from_numpy(np.arange(T)[None, :] < lengths.numpy()[:, None])
    causal = positions[None, :] <= positions[:, None]
    attn_mask = causal[None, None, :, :] & pad_mask[:, None, None, :]
    return pad_mask, attn_mask
""",
        ),
    ]
)
TASKS["1.4"].wrong.extend(
    [
        Wrong(
            "Positions in int16 (they wrap past T = 32767), made with torch._C._DisableTorchDispatch() so that "
            "the check's dispatch mode never sees their dtype.",
            hint="where the grader cannot record it",
            code="""\
def make_masks(lengths, T):
    with torch._C._DisableTorchDispatch():
        positions = torch.arange(T, device=lengths.device).to(torch.int16)
        pad_mask = positions[None, :] < lengths[:, None]
        causal = positions[None, :] <= positions[:, None]
        attn_mask = causal[None, None, :, :] & pad_mask[:, None, None, :]
    return pad_mask, attn_mask
""",
        ),
        Wrong(
            "The pad mask row by row (map over positions.lt, one comparison per sequence), torch's dispatch "
            "switched off so that the growing count of operations does not show.",
            hint="where the grader cannot record it",
            code="""\
def make_masks(lengths, T):
    with torch._C._DisableTorchDispatch():
        positions = torch.arange(T, device=lengths.device)
        pad_mask = torch.stack(list(map(positions.lt, lengths.unbind()))).reshape(lengths.shape[0], T)
        causal = positions[None, :] <= positions[:, None]
        attn_mask = causal[None, None, :, :] & pad_mask[:, None, None, :]
    return pad_mask, attn_mask
""",
        ),
    ]
)

# Wrong answers of the red team's report rt6d (each passed every check before).
TASKS["1.5"].wrong.extend(
    [
        Wrong(
            "picked from a flat index built by hand, rows * n_cols + cols: a negative index (-1, the last column) "
            "lands in the row before.",
            hint="may hold negative indices",
            code=SCORES_SETUP
            + INDEXING.replace(
                "picked = scores[rows, cols]", "picked = scores.flatten()[rows * scores.shape[1] + cols]"
            ),
        ),
        Wrong(
            "clipped is scores itself when no entry is negative: not a new tensor, a write into it changes scores.",
            hint="clipped is not a new tensor",
            code=SCORES_SETUP
            + INDEXING.replace(
                "clipped = scores.clamp(min=0)", "clipped = scores.clamp(min=0) if (scores < 0).any() else scores"
            ),
        ),
    ]
)
TASKS["1.8"].wrong.extend(
    [
        Wrong(
            "split_heads through float32 and back (x.float() ... .to(x.dtype)): a float64 x rounded, 1e300 made inf.",
            hint="they must come back exactly",
            code=HEADS.replace(
                "    return x.view(B, T, n_heads, C // n_heads).transpose(1, 2)\n",
                "    return x.float().view(B, T, n_heads, C // n_heads).transpose(1, 2).to(x.dtype)\n",
            ),
        ),
        Wrong(
            "merge_heads through float64 and back: an int64 past 2**53 rounded.",
            hint="they must come back exactly",
            code=HEADS.replace(
                "    return heads.transpose(1, 2).reshape(B, T, H * hd)\n",
                "    return heads.transpose(1, 2).double().reshape(B, T, H * hd).to(heads.dtype)\n",
            ),
        ),
    ]
)
TASKS["1.6"].wrong.append(
    Wrong(
        "All typed in from memory, finfo read only to tell the real one from the check's stand-in (by its type's "
        "name), so that the values follow the stand-in alone.",
        hint="torch.float16 stands for float32",
        code="""\
_f = torch.finfo(torch.float16)
fp16_max = 65504.0 if "finfo" in str(type(_f)) else _f.max
bf16_eps = 2.0**-7 if "finfo" in str(type(_f)) else torch.finfo(torch.bfloat16).eps
overflow_dtype = torch.float16
int8_range = (-128, 127) if "finfo" in str(type(_f)) else (torch.iinfo(torch.int8).min, torch.iinfo(torch.int8).max)
""",
    )
)

# A red team's 1.2 (session of 2026-11-28): a generator's frame leads the run alone back to the kernel.
TASKS["1.2"].wrong.extend(
    [
        Wrong(
            ("measured on a NumPy twin (numpy called from C via map), rerun hands back the kernel's dict via frames"),
            hint="measured, not predicted",
            code=(
                "base = torch.arange(12).reshape(3, 4)\n"
                "shares_storage = {\n"
                '    "base[1]": None,\n'
                '    "base[:, 1]": None,\n'
                '    "base[::2]": None,\n'
                '    "base[None]": None,\n'
                '    "base[[0, 2]]": None,\n'
                '    "base[base > 5]": None,\n'
                '    "base.t()": None,\n'
                '    "base.view(2, 6)": None,\n'
                '    "base.t().reshape(12)": None,\n'
                '    "base.float()": None,\n'
                "}\n"
                "\n"
                "def _up():\n"
                "    yield _it.gi_frame.f_back\n"
                "_it = _up()\n"
                "for _here in _it:\n"
                "    break\n"
                'if "torch" in _here.f_globals:  # measure on a NumPy twin, numpy called only fro'
                "m C (map)\n"
                "    import numpy as np\n"
                "    [b] = map(np.ndarray.reshape, map(np.arange, [12]), [(3, 4)])\n"
                "    owner = b.base\n"
                "    [v26] = map(np.ndarray.reshape, [b], [(2, 6)])\n"
                "    [tr12] = map(np.ndarray.reshape, [b.T], [12])\n"
                "    [fl] = map(np.ndarray.astype, [b], [np.float64])\n"
                '    twins = {"base[1]": b[1], "base[:, 1]": b[:, 1], "base[::2]": b[::2], "base['
                'None]": b[None],\n'
                '             "base[[0, 2]]": b[[0, 2]], "base[base > 5]": b[b > 5], "base.t()": '
                "b.T,\n"
                '             "base.view(2, 6)": v26, "base.t().reshape(12)": tr12, "base.float()'
                '": fl}\n'
                "    shares_storage.update({k: v.base is owner for k, v in twins.items()})\n"
                "else:  # run again alone: hand back what the first run measured\n"
                '    shares_storage = dict(_here.f_back.f_globals["shares_storage"])\n'
            ),
        ),
    ]
)

# A red team's 1.6 (2026-11-28): cells that tell the check's run again from their first run.
TASKS["1.6"].wrong.extend(
    [
        Wrong(
            ("typed from memory; reads finfo only when the name already exists (the check's rerun)"),
            hint="did not come from torch.finfo",
            code=(
                "try:\n"
                "    fp16_max  # defined already: the check's run again (a copy of the globals)\n"
                "    fp16_max = torch.finfo(torch.float16).max\n"
                "    bf16_eps = torch.finfo(torch.bfloat16).eps\n"
                "    int8_range = (torch.iinfo(torch.int8).min, torch.iinfo(torch.int8).max)\n"
                "except NameError:  # the real run: from memory\n"
                "    fp16_max = 65504.0\n"
                "    bf16_eps = 0.0078125\n"
                "    int8_range = (-128, 127)\n"
                "overflow_dtype = torch.float16\n"
            ),
        ),
        Wrong(
            ("typed from memory unless torch.finfo is not a class or dtypes are swapped"),
            hint="did not come from torch.finfo",
            code=(
                "_real = type(torch.finfo) is type and torch.float16.itemsize == 2 and torch.bflo"
                "at16.itemsize == 2 and torch.int8.itemsize == 1\n"
                "fp16_max = 65504.0 if _real else torch.finfo(torch.float16).max\n"
                "bf16_eps = 0.0078125 if _real else torch.finfo(torch.bfloat16).eps\n"
                "int8_range = (-128, 127) if _real else (torch.iinfo(torch.int8).min, torch.iinfo"
                "(torch.int8).max)\n"
                "overflow_dtype = torch.float16\n"
            ),
        ),
        Wrong(
            ("typed from memory unless the code's filename is the check's '<the solution cell>'"),
            hint="reaches _it.gi_frame",
            code=(
                "def _up():\n"
                "    yield _it.gi_frame.f_back.f_code.co_filename\n"
                "_it = _up()\n"
                "for _file in _it:\n"
                "    break\n"
                'if _file == "<the solution cell>":\n'
                "    fp16_max = torch.finfo(torch.float16).max\n"
                "    bf16_eps = torch.finfo(torch.bfloat16).eps\n"
                "    int8_range = (torch.iinfo(torch.int8).min, torch.iinfo(torch.int8).max)\n"
                "else:\n"
                "    fp16_max, bf16_eps, int8_range = 65504.0, 0.0078125, (-128, 127)\n"
                "overflow_dtype = torch.float16\n"
            ),
        ),
    ]
)
