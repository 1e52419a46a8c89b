"""Record a forward call and its backward: what each autograd node did, and in what order.

Forward: a TorchFunctionMode sees every torch call and notes, for the autograd node that
made each output, the call's name, the output's shape, dtype, device and values (reduced
at once to a few numbers on the device, read when the recording ends, so no activation
is kept and nothing waits for the device), and the module scope it ran in (from
global module hooks). A saved-tensor pack hook attributes what each call saved for
backward, and holds those tensors so that backward can let each go once its node has run.
Every tensor it packs is also noted with a weak reference to its holder: a holder still
alive once the forward has returned is one autograd keeps, whichever object keeps it
(torch.utils.checkpoint keeps a block's inputs outside any node vizlib draws).
Backward: hooks on every node record the gradient that reached it, the gradient it sent
along each edge, and the order in which the engine ran it.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
from torch import nn
from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
from torch.overrides import TorchFunctionMode
from torch.utils.hooks import RemovableHandle

from ..data import ModuleSpec, SavedTensor
from ..text import dtype_name
from .summary import Pending, Summaries
from .walk import storage_key

# Calls that change their first argument in place but return nothing useful.
_SETITEM = {"__setitem__"}


@dataclass
class OpRecord:
    """What the forward pass knew about one autograd node's output."""

    op: str | None  # None: made outside any torch call we saw (a custom Function)
    shape: tuple[int, ...]
    dtype: str
    device: str
    value: Pending | None  # Summaries' numbers, read once the recording is over
    value_stats: Pending | None
    modules: tuple[str, ...]
    saved: list[tuple[SavedTensor, tuple]] = field(default_factory=list)
    # True when the call that made this node packed all of ``saved`` itself: then its
    # attributes name them. Packs pending from before it (a checkpoint's inputs) are not its.
    packed_by_call: bool = False


class _Held:
    """One tensor saved for backward; ``tensor`` is None once it has been let go."""

    __slots__ = ("tensor", "__weakref__")

    def __init__(self, tensor: torch.Tensor):
        self.tensor = tensor


class SavedForBackward:
    """The tensors autograd saved during a recording, each let go once the backward node
    that unpacked it has run, as a plain ``backward()`` frees them.

    vizlib runs backward with ``retain_graph=True``: the graph may reach into tensors the
    caller made before the call, and their saved tensors must survive for the caller's own
    backward. Without this, everything saved inside the call would stay alive until
    backward ends: for a GPT-2-sized model, hundreds of MB above a plain training step.
    The backward hooks call ``node_started``/``node_done`` around each node (per thread:
    the engine runs each device's nodes on its own thread).
    """

    def __init__(self) -> None:
        self._local = threading.local()  # .unpacked: holders the running node unpacked

    def pack(self, t: torch.Tensor) -> _Held:
        # Held detached, as autograd holds a saved output itself: the tensor's grad_fn may be
        # the very node saving it, and holding that would make a cycle that keeps the node and
        # its saved tensors alive after the graph lets go of it. Autograd gives the unpacked
        # tensor its grad_fn back.
        return _Held(t.detach())

    def unpack(self, held: _Held) -> torch.Tensor:
        if held.tensor is None:
            raise RuntimeError(
                "vz.graph already ran backward through this graph and let go of the tensors it "
                "saved, so it cannot be backpropagated again. Compute the result anew outside vz.graph."
            )
        unpacked = getattr(self._local, "unpacked", None)
        if unpacked is not None:  # None: read outside backward (vizlib naming saved tensors)
            unpacked.append(held)
        return held.tensor

    def node_started(self) -> None:
        self._local.unpacked = []

    def node_done(self) -> None:
        for held in getattr(self._local, "unpacked", None) or ():
            held.tensor = None
        self._local.unpacked = None


class ForwardRecorder(TorchFunctionMode):
    """Context manager recording every autograd node created by torch calls inside it."""

    def __init__(self, module_names: dict):
        super().__init__()
        self.module_names = module_names  # nn.Module -> path; unnamed modules get their class name
        self.ops: dict = {}  # autograd node -> OpRecord
        self.module_specs: dict[str, ModuleSpec] = {}  # path -> class and parameter shapes, set on exit
        self.summaries = Summaries()  # the statistics of this recording, forward and backward
        self._scope: tuple[str, ...] = ()
        self._calls: dict = {}  # module -> how many times it has been entered
        self._entered: dict[str, nn.Module] = {}  # path -> module, in the order they first ran
        self._packed: list[tuple[SavedTensor, tuple]] = []  # pending until a node takes them
        self._packed_outside = False  # some pending pack was made outside any torch call
        self._in_call = False
        self._every_pack: list[tuple[weakref.ref, tuple[SavedTensor, tuple]]] = []
        self._hooks: list[RemovableHandle] = []
        self.saved = SavedForBackward()
        self._saved_hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, self.saved.unpack)

    # -- context management: the function mode, the module hooks, the pack hook --
    def __enter__(self) -> ForwardRecorder:
        self._hooks = [
            register_module_forward_pre_hook(self._enter_module),
            register_module_forward_hook(self._leave_module, always_call=True),
        ]
        self._saved_hooks.__enter__()
        return super().__enter__()

    def __exit__(self, *exc: object) -> None:
        try:
            super().__exit__(*exc)
        finally:
            self._saved_hooks.__exit__(*exc)
            for h in self._hooks:
                h.remove()
            # Read once the mode is off: inside it, every parameter's .shape is a torch call.
            self.module_specs = {path: _spec(module) for path, module in self._entered.items()}

    def _enter_module(self, module: nn.Module, args: object) -> None:
        # A module run several times (an RNN cell) is a separate box per call: one box for
        # all calls would draw a cycle.
        path = self.module_names.get(module) or type(module).__name__
        calls = self._calls[module] = self._calls.get(module, 0) + 1
        if calls == 1:
            self._entered[path] = module
        self._scope += (path if calls == 1 else f"{path} (call {calls})",)

    def _leave_module(self, module: nn.Module, args: object, output: object) -> None:
        self._scope = self._scope[:-1]

    def _pack(self, t: torch.Tensor) -> _Held:
        held = self.saved.pack(t)
        # A 0-byte storage holds nothing (PyTorch 2.11's checkpoint packs such a placeholder).
        if t.untyped_storage().nbytes():
            name = f"saved[{len(self._packed)}]"  # autograd's own names are read later where it has them
            entry = (
                SavedTensor(name, tuple(t.shape), dtype_name(t.dtype), t.untyped_storage().nbytes()),
                storage_key(t),
            )
            self._packed.append(entry)
            self._packed_outside |= not self._in_call
            self._every_pack.append((weakref.ref(held), entry))
        return held

    def kept_for_backward(self) -> list[tuple[SavedTensor, tuple]]:
        """Every tensor packed during the recording whose holder autograd still keeps.

        Called once the forward has returned: a node that no result depends on has been
        freed by then, and with it what it saved. The tensors torch.utils.checkpoint keeps
        for recomputing a block (its inputs) count here although no drawn node holds them;
        what the block's insides save goes through checkpoint's own hooks, not through ours.
        """
        return [entry for ref, entry in self._every_pack if ref() is not None]

    # -- the op recording itself --
    def __torch_function__(
        self, func: Callable, types: object, args: Sequence = (), kwargs: dict | None = None
    ) -> object:
        kwargs = kwargs or {}
        # A tensor made where this mode cannot see (a custom autograd.Function's apply) is
        # recorded when it is first used. Saved tensors stay pending until a node takes them.
        for a in _tensors((args, kwargs)):
            self.adopt(a)
        self._in_call = True
        try:
            out = func(*args, **kwargs)
        finally:
            self._in_call = False
        name = getattr(func, "__name__", str(func)).strip("_")
        for t in _tensors(args[0] if name in _SETITEM and args else out):
            self._record(t, name)
        return out

    def adopt(self, t: torch.Tensor) -> None:
        """Record a tensor whose autograd node no call of ours produced (named by its node)."""
        self._record(t, None)

    def _record(self, t: torch.Tensor, op: str | None) -> None:
        fn = t.grad_fn
        if fn is not None and fn not in self.ops:
            self.ops[fn] = OpRecord(
                op=op,
                shape=tuple(t.shape),
                dtype=dtype_name(t.dtype),
                device=str(t.device),
                value=self.summaries.value(t),
                value_stats=self.summaries.stats(t),
                modules=self._scope,
                saved=self._packed,
                packed_by_call=op is not None and not self._packed_outside,
            )
            self._packed, self._packed_outside = [], False


def _spec(module: nn.Module) -> ModuleSpec:
    """What makes two modules the same block: the class and every parameter's name and shape."""
    return ModuleSpec(type(module).__name__, tuple((name, tuple(p.shape)) for name, p in module.named_parameters()))


def _tensors(tree: object) -> list[torch.Tensor]:
    """The tensors in a call's arguments or results, in the order torch's pytree lists
    them: inside tuples (named ones and torch.return_types too), lists and dict values.

    The function mode runs this twice for every torch call; pytree's general walk cost
    more than the rest of the mode together.
    """
    if isinstance(tree, torch.Tensor):
        return [tree]
    if isinstance(tree, (tuple, list)):
        return [t for item in tree for t in _tensors(item)]
    if isinstance(tree, dict):
        return [t for item in tree.values() for t in _tensors(item)]
    return []


@dataclass
class BackwardRecord:
    """What the backward pass reported: order of execution, gradients per node and per edge
    (Summaries' numbers, read once the recording is over)."""

    order: list[int] = field(default_factory=list)  # positions in Walked.fns
    grads: dict[int, Pending | None] = field(default_factory=dict)  # small copies only
    grad_stats: dict[int, Pending | None] = field(default_factory=dict)
    edge_norms: dict[tuple[int, int, int], Pending | None] = field(default_factory=dict)


def hook_backward(
    fns: list, edges_of: dict[int, list[tuple[int, int]]], saved: SavedForBackward, summaries: Summaries
) -> tuple[BackwardRecord, list[RemovableHandle]]:
    """Put a pre-hook and a post-hook on every op node; return the record and the handles.

    ``edges_of[i]`` lists ``(slot, input position)`` for node i's next_functions, so the
    post-hook can say which gradient went down which edge. The hooks also tell ``saved``
    when each node starts and ends, so that it can let go of what the node has used.
    ``summaries`` reduces each gradient's memory once, however many nodes and edges it
    passes through as a view.
    """
    rec = BackwardRecord()
    handles = []
    for i, fn in enumerate(fns):
        if isinstance(fn, torch.Tensor) or type(fn).__name__ == "AccumulateGrad":
            continue

        def pre(grad_outputs: tuple[torch.Tensor | None, ...], i: int = i) -> None:
            saved.node_started()
            rec.order.append(i)
            g = grad_outputs[0] if grad_outputs else None
            if g is not None:
                rec.grads[i] = summaries.value(g)
                rec.grad_stats[i] = summaries.stats(g, gradient=True)

        def post(
            grad_inputs: tuple[torch.Tensor | None, ...], grad_outputs: tuple[torch.Tensor | None, ...], i: int = i
        ) -> None:
            saved.node_done()
            for slot, src in edges_of.get(i, ()):
                g = grad_inputs[slot] if slot < len(grad_inputs) else None
                if g is not None:
                    rec.edge_norms[(src, i, slot)] = summaries.norm(g)

        handles += [fn.register_prehook(pre), fn.register_hook(post)]
    return rec, handles
