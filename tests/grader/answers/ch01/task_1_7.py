"""Exercise 1.7 of solutions/01_tensors.ipynb: its other answers (see answers/__init__.py)."""

from .. import Task, Wrong

# 1.7's given lines.
NUMPY_SETUP = """\
arr = np.arange(5, dtype=np.float32)
scaled = torch.ones(3, requires_grad=True) * 2
"""


TASK = Task(
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
)


# arr of another shape, not contiguous: what keeps its shape and strides.
TASK.wrong.extend(
    [
        Wrong(
            (
                "t_shared by torch.frombuffer(arr, dtype=...): the raw buffer as a flat run of numbers, not arr's "
                "shape (and it refuses an array that is not contiguous)."
            ),
            hint="a 2-D array that is not contiguous",
            code="""\
arr = np.arange(5, dtype=np.float32)
scaled = torch.ones(3, requires_grad=True) * 2
t_shared = torch.frombuffer(arr, dtype=torch.from_numpy(arr).dtype)
t_copy = torch.tensor(arr)
scaled_np = scaled.detach().numpy()
""",
        ),
        Wrong(
            (
                "t_shared from arr.ravel(): flat, and for an array that is not contiguous ravel makes a copy, so "
                "nothing is shared."
            ),
            hint="the cell gave a wrong t_shared:",
            code="""\
arr = np.arange(5, dtype=np.float32)
scaled = torch.ones(3, requires_grad=True) * 2
t_shared = torch.from_numpy(arr.ravel())
t_copy = torch.tensor(arr)
scaled_np = scaled.detach().numpy()
""",
        ),
        Wrong(
            ("t_copy from arr.flatten(): a copy, but flat: a 2-D arr loses its shape."),
            hint="the cell gave a wrong t_copy:",
            code="""\
arr = np.arange(5, dtype=np.float32)
scaled = torch.ones(3, requires_grad=True) * 2
t_shared = torch.from_numpy(arr)
t_copy = torch.from_numpy(arr.flatten())
scaled_np = scaled.detach().numpy()
""",
        ),
    ]
)
