"""Other answers to every graded exercise, for testing the checks themselves.

For each chapter and task (the number in "### Exercise 1.3"), three entries:

- "alternative": a whole solution cell, as a learner could leave it, that is correct but
  written differently from the one in solutions/. Every check of the task, hidden ones
  included, must accept it: checks must not insist on one way of writing the answer.
- "wrong": a whole solution cell with a typical mistake (a forgotten zero_grad, an in-place
  op left in, a transposed mask...). The task must fail on it.
- "hint": a substring of the message of the check that catches that mistake, so a test can
  tell that the learner is told what went wrong, not just that something did.

The solution cell of task "1.3" has the id "ex1-3-solution" in solutions/01_tensors.ipynb.
Code outside the BEGIN/END SOLUTION region of a solution cell sets the task up, so the
sources below repeat it.
"""

ANSWERS: dict[str, dict[str, dict[str, str]]] = {
    "01_tensors": {
        "1.1": {
            "alternative": """\
shape_a = torch.Size([3, 4])
shape_b = [2, 3, 4]
shape_c = None
shape_d = (torch.ones(8, 1, 6, 1) + torch.ones(7, 1, 5)).shape
shape_e = tuple(torch.broadcast_shapes((6, 1), (1, 4)))
""",
            # Aligning the shapes from the left instead of the right.
            "wrong": """\
shape_a = (3, 4)
shape_b = (2, 3, 4)
shape_c = (5, 4)
shape_d = (8, 7, 6, 5)
shape_e = (6, 4)
""",
            "hint": "from the right",
        },
        "1.2": {
            "alternative": """\
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
            # Believing that indexing with a list of indices returns a view.
            "wrong": """\
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
shares_storage.update({
    "base[1]": True,
    "base[:, 1]": True,
    "base[::2]": True,
    "base[None]": True,
    "base[[0, 2]]": True,
    "base[base > 5]": False,
    "base.t()": True,
    "base.view(2, 6)": True,
    "base.t().reshape(12)": False,
    "base.float()": False,
})
""",
            "hint": "fancy",
        },
        "1.3": {
            "alternative": """\
m = torch.arange(6.).reshape(2, 3)
mt = m.t()
mt_stride = list(mt.stride())
mt_is_contiguous = mt.is_contiguous()
mt_contig = mt.clone(memory_format=torch.contiguous_format)
mt_flat = mt.contiguous().view(-1)
""",
            # Thinking that transposing reorders the data, so the strides stay row-major.
            "wrong": """\
m = torch.arange(6.).reshape(2, 3)
mt = m.t()
mt_stride = (3, 1)
mt_is_contiguous = False
mt_contig = mt.contiguous()
mt_flat = mt.reshape(6)
""",
            "hint": "swaps the strides",
        },
        "1.4": {
            "alternative": """\
def make_masks(lengths, T):
    pos = torch.arange(T)
    pad_mask = pos.unsqueeze(0) < lengths.unsqueeze(1)
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    attn_mask = (causal.unsqueeze(0) & pad_mask.unsqueeze(1)).unsqueeze(1)
    return pad_mask, attn_mask
""",
            # Lengths as a row and positions as a column: the mask comes out (T, B).
            "wrong": """\
def make_masks(lengths, T):
    positions = torch.arange(T)
    pad_mask = positions[:, None] < lengths[None, :]
    causal = positions[None, :] <= positions[:, None]
    attn_mask = causal[None, None, :, :] & pad_mask.T[:, None, None, :]
    return pad_mask, attn_mask
""",
            "hint": "lengths[:, None]",
        },
        "1.5": {
            "alternative": """\
scores = torch.tensor([[ 0.5, -1.0,  2.0,  0.0, -0.5],
                       [-2.0,  1.5, -0.1,  3.0,  0.2],
                       [ 1.0,  0.0, -3.0, -1.5,  2.5],
                       [-0.3,  0.7,  0.9, -2.2,  1.1]])
rows = torch.tensor([0, 2, 3])
cols = torch.tensor([4, 0, 1])
positives = scores.masked_select(scores > 0)
clipped = torch.where(scores < 0, torch.zeros_like(scores), scores)
picked = scores.flatten()[rows * scores.shape[1] + cols]
""",
            # `clipped = scores` is not a copy: the masked assignment changes scores too.
            "wrong": """\
scores = torch.tensor([[ 0.5, -1.0,  2.0,  0.0, -0.5],
                       [-2.0,  1.5, -0.1,  3.0,  0.2],
                       [ 1.0,  0.0, -3.0, -1.5,  2.5],
                       [-0.3,  0.7,  0.9, -2.2,  1.1]])
rows = torch.tensor([0, 2, 3])
cols = torch.tensor([4, 0, 1])
positives = scores[scores > 0]
clipped = scores
clipped[clipped < 0] = 0
picked = scores[rows, cols]
""",
            "hint": "does not copy",
        },
        "1.6": {
            "alternative": """\
fp16_max = 65504.0
bf16_eps = 2 ** -7
overflow_dtype = (torch.float16 if torch.isinf(torch.tensor(70000.0, dtype=torch.float16))
                  else torch.bfloat16)
int8_range = [torch.iinfo(torch.int8).min, torch.iinfo(torch.int8).max]
""",
            # float16's eps taken for bfloat16's.
            "wrong": """\
fp16_max = torch.finfo(torch.float16).max
bf16_eps = torch.finfo(torch.float16).eps
overflow_dtype = torch.float16
int8_range = (torch.iinfo(torch.int8).min, torch.iinfo(torch.int8).max)
""",
            "hint": "7 mantissa bits",
        },
        "1.7": {
            "alternative": """\
arr = np.arange(5, dtype=np.float32)
scaled = torch.ones(3, requires_grad=True) * 2
t_shared = torch.as_tensor(arr)
t_copy = torch.from_numpy(arr).clone()
scaled_np = scaled.detach().numpy().copy()
""",
            # torch.tensor(arr) copies, so it does not share memory.
            "wrong": """\
arr = np.arange(5, dtype=np.float32)
scaled = torch.ones(3, requires_grad=True) * 2
t_shared = torch.tensor(arr)
t_copy = torch.tensor(arr)
scaled_np = scaled.detach().numpy()
""",
            "hint": "always copies",
        },
        "1.8": {
            "alternative": """\
def split_heads(x, n_heads):
    B, T, C = x.shape
    return x.reshape(B, T, n_heads, -1).permute(0, 2, 1, 3)


def merge_heads(heads):
    B, H, T, hd = heads.shape
    return heads.permute(0, 2, 1, 3).contiguous().view(B, T, H * hd)
""",
            # The right shape straight away, but tokens and heads mixed up.
            "wrong": """\
def split_heads(x, n_heads):
    B, T, C = x.shape
    return x.reshape(B, n_heads, T, C // n_heads)


def merge_heads(heads):
    B, H, T, hd = heads.shape
    return heads.transpose(1, 2).reshape(B, T, H * hd)
""",
            "hint": "(B, T, H, hd)",
        },
    },
    "02_autograd": {
        "2.1": {
            "alternative": """\
w_t, x_t, b_t = (torch.tensor(v, requires_grad=True) for v in (3.0, 2.0, -1.0))
L = (w_t * x_t + b_t) ** 2
L.backward()
dL_dw, dL_dx, dL_db = w_t.grad, x_t.grad, b_t.grad
""",
            # Only the local derivatives of y, without the outer factor dL/dy = 2y.
            "wrong": """\
dL_dw = 2
dL_dx = 3
dL_db = 1
""",
            "hint": "chain rule",
        },
        "2.2": {
            "alternative": """\
a, b, c = 2.0, -3.0, 4.0
y = (a + b) * c
dz_da = y + a * c
dz_db = a * c
dz_dc = a * (a + b)
""",
            # Only the path through y for a.
            "wrong": """\
dz_da = 2 * 4
dz_db = 2 * 4
dz_dc = 2 * (-1)
""",
            "hint": "two paths",
        },
        "2.3": {
            "alternative": """\
def manual_grads(X, y, W1, b1, W2):
    N = X.shape[0]
    h = torch.addmm(b1, X, W1)
    a = torch.relu(h)
    g_out = (2.0 / N) * (a @ W2 - y)
    dW2 = torch.einsum("nh,no->ho", a, g_out)
    dh = torch.where(h > 0, g_out @ W2.t(), torch.zeros_like(h))
    return X.t() @ dh, dh.sum(0), dW2
""",
            # The mean's 1/N forgotten.
            "wrong": """\
def manual_grads(X, y, W1, b1, W2):
    h = X @ W1 + b1
    a = h.clamp(min=0)
    out = a @ W2
    dout = 2 * (out - y)
    dW2 = a.T @ dout
    dh = (dout @ W2.T) * (h > 0)
    return X.T @ dh, dh.sum(dim=0), dW2
""",
            "hint": "divides by the number",
        },
        "2.4": {
            "alternative": """\
def train(model, xs, ys, steps=20, lr=0.1):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        loss = torch.nn.functional.mse_loss(model(xs), ys)
        loss.backward()
        opt.step()
        for p in model.parameters():
            p.grad = None
        losses.append(loss.item())
    return losses
""",
            # The buggy loop unchanged: no zero_grad, gradients accumulate.
            "wrong": """\
def train(model, xs, ys, steps=20, lr=0.1):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        loss = ((model(xs) - ys) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses
""",
            "hint": "zero_grad",
        },
        "2.5": {
            "alternative": """\
x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
h = torch.tanh(x)
loss = (h ** 2).sum()
h_grad, x_grad = torch.autograd.grad(loss, (h, x))
""",
            # retain_grad called too late, after backward.
            "wrong": """\
x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
h = torch.tanh(x)
loss = (h ** 2).sum()
loss.backward()
h.retain_grad()
h_grad = h.grad
x_grad = x.grad
""",
            "hint": "retain_grad",
        },
        "2.6": {
            "alternative": """\
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return x.pow(3)

    @staticmethod
    def setup_context(ctx, inputs, output):
        (x,) = inputs
        ctx.save_for_backward(x)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return 3 * x.square() * grad_output
""",
            # dy/dx returned without multiplying by grad_output.
            "wrong": """\
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return 3 * x ** 2
""",
            "hint": "grad_output",
        },
        "2.7": {
            "alternative": """\
culprit = "Sigmoid"


def fixed_loss(x):
    y = torch.sigmoid(x).clone()
    y.mul_(2)
    return (y * x).sum()
""",
            # `*=` is still an in-place operation on sigmoid's saved output.
            "wrong": """\
culprit = "sigmoid"


def fixed_loss(x):
    y = torch.sigmoid(x)
    y *= 2
    return (y * x).sum()
""",
            "hint": "in-place",
        },
        "2.8": {
            "alternative": """\
def derivatives(f, x):
    y = f(x)
    d1, = torch.autograd.grad(y, [x], create_graph=True)
    d2, = torch.autograd.grad(d1, [x], create_graph=True)
    return d1, d2
""",
            # Without create_graph=True, d1 cannot be differentiated again.
            "wrong": """\
def derivatives(f, x):
    (d1,) = torch.autograd.grad(f(x), x)
    (d2,) = torch.autograd.grad(d1, x)
    return d1, d2
""",
            "hint": "create_graph=True",
        },
        "2.9": {
            "alternative": """\
def predict(model, xs):
    with torch.inference_mode():
        return model(xs)


def stop_grad_loss(w):
    with torch.no_grad():
        target = w * w
    return (3 * w - target) ** 2
""",
            # The target left in the graph: the gradient also flows through it.
            "wrong": """\
def predict(model, xs):
    with torch.no_grad():
        return model(xs)


def stop_grad_loss(w):
    pred = 3 * w
    target = w * w
    return (pred - target) ** 2
""",
            "hint": ".detach()",
        },
    },
}
