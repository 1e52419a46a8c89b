"""Exercise 1.4 of solutions/01_tensors.ipynb: its other answers (see answers/__init__.py)."""

from .. import Task, Wrong

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

# The positions made on the CPU: masks for a batch on a GPU fail.
MASKS_ON_THE_CPU = """\
def make_masks(lengths, T):
    positions = torch.arange(T)
    pad_mask = positions[None, :] < lengths[:, None]
    causal = positions[None, :] <= positions[:, None]
    attn_mask = causal[None, None, :, :] & pad_mask[:, None, None, :]
    return pad_mask, attn_mask
"""

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


TASK = Task(
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
)

# Wrong answers of the red team's report rt5a (each passed every check before).
TASK.wrong.append(
    Wrong(
        "Positions made in lengths' own dtype: uint8 lengths wrap the positions past 255 (int8 past 127), "
        "so for T = 300 position 256 counts as 0 again.",
        hint="wrap around past",
        code=MASKS.replace(
            "positions = torch.arange(T)", "positions = torch.arange(T, device=lengths.device, dtype=lengths.dtype)"
        ),
    )
)

TASK.wrong.extend(
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

TASK.wrong.extend(
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


# Positions in a type chosen to hold the lengths, at least int16: wraps for a long T.
TASK.wrong.extend(
    [
        Wrong(
            (
                "Positions made in torch.promote_types(lengths.dtype, torch.int16): int64 for int64 lengths, but "
                "int16 for uint8 or int8 lengths, which wraps past 32767 (T = 40000 marks about 7000 positions "
                "real for a length of 255)."
            ),
            hint="for uint8 lengths [255, 3]",
            code="""\
def make_masks(lengths, T):
    dtype = torch.promote_types(lengths.dtype, torch.int16)
    positions = torch.arange(T, device=lengths.device, dtype=dtype)
    pad_mask = positions[None, :] < lengths[:, None]
    causal = positions[None, :] <= positions[:, None]
    attn_mask = causal[None, None, :, :] & pad_mask[:, None, None, :]
    return pad_mask, attn_mask
""",
        ),
    ]
)


# Red team (round 2): accepted before its check was added.
TASK.wrong.append(
    Wrong(
        "Masks cached by id(lengths), the tensor kept: the same lengths tensor changed in place gets its old masks.",
        hint="a cache keyed by id(lengths)",
        code="""\
_masks = {}


def make_masks(lengths, T):
    entry = _masks.get(id(lengths))
    if entry is None or entry[0] is not lengths or entry[1] != T:
        positions = torch.arange(T, device=lengths.device)
        pad_mask = positions[None, :] < lengths[:, None]
        causal = positions[None, :] <= positions[:, None]
        attn_mask = causal[None, None, :, :] & pad_mask[:, None, None, :]
        entry = _masks[id(lengths)] = (lengths, T, pad_mask, attn_mask)
    return entry[2].clone(), entry[3].clone()
""",
    )
)


# torch's default device set to the batch's: the masks land there, and so does every tensor the
# caller makes afterwards (the check's own failed with a crash on the 'meta' device before).
TASK.wrong.append(
    Wrong(
        "torch.set_default_device(lengths.device) to make arange follow the batch: a global setting changed.",
        hint="changed torch's default device",
        code="""\
def make_masks(lengths, T):
    torch.set_default_device(lengths.device)  # arange follows the batch
    positions = torch.arange(T)
    pad_mask = positions[None, :] < lengths[:, None]
    causal = positions[None, :] <= positions[:, None]
    attn_mask = causal[None, None, :, :] & pad_mask[:, None, None, :]
    return pad_mask, attn_mask
""",
    )
)


# Red team (round 3): accepted before its check was added. Floats count every integer only up to a
# point (float32 to 2**24, float16 to 2048), past every T the checks had tried on values.
TASK.wrong.extend(
    [
        Wrong(
            "Positions made as floats, torch.arange(float(T)) (as torch.arange(6.) in 1.1): float32 "
            "positions past 2**24 round to their neighbours, and real tokens count as padding.",
            hint="counts exactly only so far",
            code="""\
def make_masks(lengths, T):
    positions = torch.arange(float(T), device=lengths.device)
    pad_mask = positions[None, :] < lengths[:, None]
    causal = positions[None, :] <= positions[:, None]
    attn_mask = causal[None, None, :, :] & pad_mask[:, None, None, :]
    return pad_mask, attn_mask
""",
        ),
        Wrong(
            "lengths made float16 before the comparison: every length past 2048 rounds (2049 to "
            "2048), and so do the positions it is compared with.",
            hint="counts exactly only so far",
            code="""\
def make_masks(lengths, T):
    positions = torch.arange(T, device=lengths.device)
    pad_mask = positions[None, :] < lengths[:, None].half()
    causal = positions[None, :] <= positions[:, None]
    attn_mask = causal[None, None, :, :] & pad_mask[:, None, None, :]
    return pad_mask, attn_mask
""",
        ),
    ]
)


# Red team (round 4): hostile answers to the checks hardened in round 3; each that passed is marked so.
# other_right: an in-place &= on the answer's own mask (refused before: the grader's own read of the
# written memory was taken for the answer's) and a causal mask of float 0s and 1s.
TASK.wrong.extend(
    [
        Wrong(
            ("Float positions through aten's own name, torch.ops.aten.arange.start_step(..., dtype=torch.float32)."),
            hint="counts exactly only so far",
            code="""\
def make_masks(lengths, T):
    positions = torch.ops.aten.arange.start_step(0, T, 1, dtype=torch.float32, device=lengths.device)
    pad_mask = positions[None, :] < lengths[:, None]
    causal = positions[None, :] <= positions[:, None]
    attn_mask = causal[None, None, :, :] & pad_mask[:, None, None, :]
    return pad_mask, attn_mask
""",
        ),
        Wrong(
            ("lengths made float by a Python float factor (lengths[:, None] * 1.0): type promotion, no cast."),
            hint="counts exactly only so far",
            code="""\
def make_masks(lengths, T):
    positions = torch.arange(T, device=lengths.device)
    pad_mask = positions[None, :] < (lengths[:, None] * 1.0)
    causal = positions[None, :] <= positions[:, None]
    attn_mask = causal[None, None, :, :] & pad_mask[:, None, None, :]
    return pad_mask, attn_mask
""",
        ),
        Wrong(
            "lengths made float by a true division (lengths[:, None] / 1).",
            hint="counts exactly only so far",
            code="""\
def make_masks(lengths, T):
    positions = torch.arange(T, device=lengths.device)
    pad_mask = positions[None, :] < (lengths[:, None] / 1)
    causal = positions[None, :] <= positions[:, None]
    attn_mask = causal[None, None, :, :] & pad_mask[:, None, None, :]
    return pad_mask, attn_mask
""",
        ),
        Wrong(
            "Positions shifted by a half (t + 0.5 < n): float32 positions.",
            hint="counts exactly only so far",
            code="""\
def make_masks(lengths, T):
    positions = torch.arange(T, device=lengths.device)
    pad_mask = positions[None, :] + 0.5 < lengths[:, None]
    causal = positions[None, :] <= positions[:, None]
    attn_mask = causal[None, None, :, :] & pad_mask[:, None, None, :]
    return pad_mask, attn_mask
""",
        ),
        Wrong(
            "float32 positions from NumPy (torch.from_numpy is no dispatched operation).",
            hint="counts exactly only so far",
            code="""\
def make_masks(lengths, T):
    positions = torch.from_numpy(np.arange(T, dtype=np.float32)).to(lengths.device)
    pad_mask = positions[None, :] < lengths[:, None]
    causal = positions[None, :] <= positions[:, None]
    attn_mask = causal[None, None, :, :] & pad_mask[:, None, None, :]
    return pad_mask, attn_mask
""",
        ),
        Wrong(
            "float32 positions on every device but 'meta' (where the check looked). Passed before.",
            hint="on the CPU, for lengths [5, 2, 7]",
            code="""\
def make_masks(lengths, T):
    positions = torch.arange(T, device=lengths.device, dtype=None if lengths.is_meta else torch.float32)
    pad_mask = positions[None, :] < lengths[:, None]
    causal = positions[None, :] <= positions[:, None]
    attn_mask = causal[None, None, :, :] & pad_mask[:, None, None, :]
    return pad_mask, attn_mask
""",
        ),
        Wrong(
            "float32 positions unless a dispatch mode (the grader's) is on the stack. Passed before.",
            hint="asks whether a dispatch mode is active",
            code="""\
def make_masks(lengths, T):
    from torch.utils._python_dispatch import _get_current_dispatch_mode
    watched = _get_current_dispatch_mode() is not None
    positions = torch.arange(T, device=lengths.device, dtype=None if watched else torch.float32)
    pad_mask = positions[None, :] < lengths[:, None]
    causal = positions[None, :] <= positions[:, None]
    attn_mask = causal[None, None, :, :] & pad_mask[:, None, None, :]
    return pad_mask, attn_mask
""",
        ),
        Wrong(
            (
                "The pad mask compared in float32 in a thread pool's thread, out of the check's dispatch "
                "mode. Passed before."
            ),
            hint="in another thread",
            code="""\
import concurrent.futures

_pool = concurrent.futures.ThreadPoolExecutor(1)


def make_masks(lengths, T):
    positions = torch.arange(T, device=lengths.device)
    pad_mask = _pool.submit(lambda: positions.float()[None, :] < lengths.float()[:, None]).result()
    causal = positions[None, :] <= positions[:, None]
    attn_mask = causal[None, None, :, :] & pad_mask[:, None, None, :]
    return pad_mask, attn_mask
""",
        ),
        Wrong(
            ("lengths clamped to T in place (clamp_): every length within T leaves the values, not the tensor."),
            hint="changed the lengths tensor",
            code="""\
def make_masks(lengths, T):
    lengths.clamp_(max=T)
    positions = torch.arange(T, device=lengths.device)
    pad_mask = positions[None, :] < lengths[:, None]
    causal = positions[None, :] <= positions[:, None]
    attn_mask = causal[None, None, :, :] & pad_mask[:, None, None, :]
    return pad_mask, attn_mask
""",
        ),
        Wrong(
            "torch.set_default_dtype(torch.float64) inside make_masks, never undone.",
            hint="torch's default dtype",
            code="""\
def make_masks(lengths, T):
    torch.set_default_dtype(torch.float64)
    positions = torch.arange(T, device=lengths.device)
    pad_mask = positions[None, :] < lengths[:, None]
    causal = positions[None, :] <= positions[:, None]
    attn_mask = causal[None, None, :, :] & pad_mask[:, None, None, :]
    return pad_mask, attn_mask
""",
        ),
        Wrong(
            "float32 positions from torch.linspace(0, T - 1, T).",
            hint="counts exactly only so far",
            code="""\
def make_masks(lengths, T):
    positions = torch.linspace(0, T - 1, T, device=lengths.device)
    pad_mask = positions[None, :] < lengths[:, None]
    causal = positions[None, :] <= positions[:, None]
    attn_mask = causal[None, None, :, :] & pad_mask[:, None, None, :]
    return pad_mask, attn_mask
""",
        ),
        Wrong(
            "lengths clamped by torch.minimum with a float tensor of T: float32 lengths.",
            hint="counts exactly only so far",
            code="""\
def make_masks(lengths, T):
    positions = torch.arange(T, device=lengths.device)
    pad_mask = positions[None, :] < torch.minimum(lengths, torch.tensor(float(T), device=lengths.device))[:, None]
    causal = positions[None, :] <= positions[:, None]
    attn_mask = causal[None, None, :, :] & pad_mask[:, None, None, :]
    return pad_mask, attn_mask
""",
        ),
        Wrong(
            ("float32 positions expanded to (B, T) first (a size the 'meta' check did not look at). Passed before."),
            hint="on the CPU, for lengths [5, 2, 7]",
            code="""\
def make_masks(lengths, T):
    positions = torch.arange(T, device=lengths.device)
    pad_mask = positions.expand(lengths.shape[0], T).float() < lengths[:, None]
    causal = positions[None, :] <= positions[:, None]
    attn_mask = causal[None, None, :, :] & pad_mask[:, None, None, :]
    return pad_mask, attn_mask
""",
        ),
    ]
)
TASK.other_right.append(
    """\
def make_masks(lengths, T):
    positions = torch.arange(T, device=lengths.device)
    pad_mask = positions[None, :] < lengths[:, None]
    attn_mask = (positions[None, :] <= positions[:, None]).repeat(lengths.shape[0], 1, 1, 1)
    attn_mask &= pad_mask[:, None, None, :]
    return pad_mask, attn_mask
"""
)
TASK.other_right.append(
    """\
def make_masks(lengths, T):
    positions = torch.arange(T, device=lengths.device)
    pad_mask = positions[None, :] < lengths[:, None]
    causal = torch.ones(T, T, device=lengths.device).tril() > 0
    attn_mask = causal[None, None, :, :] & pad_mask[:, None, None, :]
    return pad_mask, attn_mask
"""
)
