"""Other answers to the exercises of solutions/02_autograd.ipynb (see answers/__init__.py)."""

from . import Task, Wrong

TASKS = {
    "2.1": Task(
        alternative="""\
w_t, x_t, b_t = (torch.tensor(v, requires_grad=True) for v in (3.0, 2.0, -1.0))
L = (w_t * x_t + b_t) ** 2
L.backward()
dL_dw, dL_dx, dL_db = w_t.grad, x_t.grad, b_t.grad
""",
        wrong=[
            Wrong("Only the local derivatives of y, without the outer factor dL/dy = 2y.", hint="chain rule", code="""\
dL_dw = 2
dL_dx = 3
dL_db = 1
"""),
        ],
    ),
    "2.2": Task(
        alternative="""\
a, b, c = 2.0, -3.0, 4.0
y = (a + b) * c
dz_da = y + a * c
dz_db = a * c
dz_dc = a * (a + b)
""",
        wrong=[
            Wrong("Only the path through y for a.", hint="two paths", code="""\
dz_da = 2 * 4
dz_db = 2 * 4
dz_dc = 2 * (-1)
"""),
        ],
    ),
    "2.3": Task(
        alternative="""\
def manual_grads(X, y, W1, b1, W2):
    N = X.shape[0]
    h = torch.addmm(b1, X, W1)
    a = torch.relu(h)
    g_out = (2.0 / N) * (a @ W2 - y)
    dW2 = torch.einsum("nh,no->ho", a, g_out)
    dh = torch.where(h > 0, g_out @ W2.t(), torch.zeros_like(h))
    return X.t() @ dh, dh.sum(0), dW2
""",
        wrong=[
            Wrong("The mean's 1/N forgotten.", hint="divides by the number", code="""\
def manual_grads(X, y, W1, b1, W2):
    h = X @ W1 + b1
    a = h.clamp(min=0)
    out = a @ W2
    dout = 2 * (out - y)
    dW2 = a.T @ dout
    dh = (dout @ W2.T) * (h > 0)
    return X.T @ dh, dh.sum(dim=0), dW2
"""),
        ],
    ),
    "2.4": Task(
        alternative="""\
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
        wrong=[
            Wrong("The buggy loop unchanged: no zero_grad, gradients accumulate.", hint="zero_grad", code="""\
def train(model, xs, ys, steps=20, lr=0.1):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        loss = ((model(xs) - ys) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses
"""),
        ],
    ),
    "2.5": Task(
        alternative="""\
x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
h = torch.tanh(x)
loss = (h ** 2).sum()
h_grad, x_grad = torch.autograd.grad(loss, (h, x))
""",
        wrong=[
            Wrong("retain_grad called too late, after backward.", hint="retain_grad", code="""\
x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
h = torch.tanh(x)
loss = (h ** 2).sum()
loss.backward()
h.retain_grad()
h_grad = h.grad
x_grad = x.grad
"""),
        ],
    ),
    "2.6": Task(
        alternative="""\
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
        wrong=[
            Wrong("dy/dx returned without multiplying by grad_output.", hint="grad_output", code="""\
class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return 3 * x ** 2
"""),
        ],
    ),
    "2.7": Task(
        alternative="""\
culprit = "Sigmoid"


def fixed_loss(x):
    y = torch.sigmoid(x).clone()
    y.mul_(2)
    return (y * x).sum()
""",
        wrong=[
            Wrong("`*=` is still an in-place operation on sigmoid's saved output.", hint="in-place", code="""\
culprit = "sigmoid"


def fixed_loss(x):
    y = torch.sigmoid(x)
    y *= 2
    return (y * x).sum()
"""),
        ],
    ),
    "2.8": Task(
        alternative="""\
def derivatives(f, x):
    y = f(x)
    d1, = torch.autograd.grad(y, [x], create_graph=True)
    d2, = torch.autograd.grad(d1, [x], create_graph=True)
    return d1, d2
""",
        wrong=[
            Wrong("Without create_graph=True, d1 cannot be differentiated again.", hint="create_graph=True", code="""\
def derivatives(f, x):
    (d1,) = torch.autograd.grad(f(x), x)
    (d2,) = torch.autograd.grad(d1, x)
    return d1, d2
"""),
        ],
    ),
    "2.9": Task(
        alternative="""\
def predict(model, xs):
    with torch.inference_mode():
        return model(xs)


def stop_grad_loss(w):
    with torch.no_grad():
        target = w * w
    return (3 * w - target) ** 2
""",
        wrong=[
            Wrong("The target left in the graph: the gradient also flows through it.", hint=".detach()", code="""\
def predict(model, xs):
    with torch.no_grad():
        return model(xs)


def stop_grad_loss(w):
    pred = 3 * w
    target = w * w
    return (pred - target) ** 2
"""),
        ],
    ),
}
