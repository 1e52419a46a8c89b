"""Record a forward call and its backward: what each autograd node did, and in what order.

Forward: a TorchFunctionMode sees every torch call and notes, for the autograd node that
made each output, the call's name, the output's shape, dtype, device and values (reduced
at once to a few numbers on the device, read when the recording ends, so no activation
is kept and nothing waits for the device), and the module scope it ran in (from module
hooks: module_hooks.py). A saved-tensor pack hook notes what each node saved for
backward (the node made last when it runs: ``packed_at``), and holds those tensors so
that backward can let each go once its node has run. Every tensor it packs is also noted
with a weak reference to its holder: a holder still alive once the forward has returned
is one autograd keeps, whichever object keeps it (torch.utils.checkpoint keeps a block's
inputs outside any node vizlib draws).
Given what the caller's picture will draw (``Drawn``), the recorder reads the numbers of
only the ops and module outputs it may show, and runs the modules none of whose ops it
could draw with the function mode off (unwatched.py). Backward is backward.py's.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import torch
from torch import nn
from torch._subclasses.fake_tensor import is_fake
from torch.overrides import TorchFunctionMode

from ..data import GraphData, ModuleSpec, SavedTensor, Shape
from ..errors import VizlibValueError
from ..text import device_name, dtype_name
from .backward import SavedForBackward, _Held
from .guard import UserState
from .inputs import named_modules
from .layout import dense as in_one_block
from .module_hooks import MODULE_HOOKS
from .nested import tensor_shape
from .rows import Pending
from .specs import ModuleSpecs
from .summary import Summaries
from .unwatched import RanAt, Stretch, Stretches, next_number
from .walk import AutogradNode, saved_entry

# Calls that change their first argument in place but return nothing useful (the name as
# recorded: dunders stripped of their underscores).
_SETITEM = {"setitem"}
_IN_PLACE_DUNDERS = (
    {"__setitem__"}
    | {f"__i{op}__" for op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor")}
    | {"__ilshift__", "__irshift__"}
)
# Calls that update tensors they are given besides their first argument: the running
# statistics of a batch norm in training.
_UPDATES_ARGS = {
    "batch_norm": (1, 2),
    "instance_norm": (1, 2),
    # GradScaler's: its growth tracker, and the found-inf flag its unscaling sets
    "amp_update_scale": (1,),
    "amp_foreach_non_finite_check_and_unscale": (1,),
}
# Calls that rescale rows of their weight (the second argument) in place when given a
# ``max_norm`` (the fourth): PyTorch does it inside the call, out of this mode's sight.
_RENORMS = {"embedding", "embedding_bag"}
# Calls whose result is the tensor they are given, or its memory, under another name
# (``x.detach()``, ``x.data``, a property's ``__get__``): it is the caller's, not made by the
# call, where what it names is.
_ALIASES = {"detach", "alias", "__get__"}
# Calls whose ``inplace=True`` writes nothing where they drop nothing: in eval mode
# (``training=False``, as ``nn.Dropout(inplace=True)`` of a model in eval mode passes it) or
# with ``p=0``, torch hands back the input as it is.
_DROPOUTS = {"dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"}
# Calls named like in-place ops that change no values.
_FLAGS_ONLY = {"requires_grad_", "share_memory_", "retain_grad_"}
# The tensor types nearly every saved tensor has, which no tracer's fake tensor has.
_PLAIN = (torch.Tensor, nn.Parameter)


class Drawn(Protocol):
    """What the picture made of a capture will draw (``vizlib.transform.DrawnNumbers``):
    a recording reduces only the tensors whose numbers it may show."""

    def op(self, level: int) -> bool:
        """Note an op run ``level`` modules deep; False when no picture could draw it as a node."""
        ...

    def may_draw(self, level: int) -> bool:
        """Whether an op run ``level`` modules deep could still be drawn as a node of its own."""
        ...

    def ops_ran(self, level: int, k: int) -> None:
        """Note ``k`` ops run ``level`` modules deep unwatched (``op`` was not asked)."""
        ...

    @property
    def predicts(self) -> bool:
        """Whether what modules yet to run are expected to do can rule anything out."""
        ...

    def module_entered(self, key: object, alike: Sequence[object] = ()) -> None:
        """A module starts (``alike``: modules yet to run that are expected to do as it does)."""
        ...

    def module_left(self, level: int, path: str, ran_ops: bool) -> bool:
        """A module ends; whether it may be drawn as a box showing its output."""
        ...

    def of(self, g: GraphData) -> tuple[set[int], set[int], set[int], int | None]:
        """The node ids whose numbers the picture of ``g`` draws, those of them drawn as
        nodes of their own (not as a box), the edge positions whose gradients it draws, and
        the depth of the modules drawn as boxes (None: it folds loops, not modules)."""
        ...


@dataclass
class OpRecord:
    """What the forward pass knew about one autograd node's output."""

    op: str | None  # None: made outside any torch call we saw (a custom Function)
    shape: Shape
    dtype: str
    device: str
    value: Pending | None  # Summaries' numbers, read once the recording is over
    value_stats: Pending | None
    modules: tuple[str, ...]
    # What was saved outside any torch call before it was made (a checkpoint's inputs):
    # what the node saved itself is in ``ForwardRecorder.packed_at``.
    saved: list[tuple[SavedTensor, tuple]] = field(default_factory=list)
    # Where no picture could show its numbers when it ran: the output (weakly), its
    # version then and its elements (``_elements``), so that its numbers can still be read
    # from it, or from what autograd saved of it, if it is drawn after all.
    unread: tuple[weakref.ref, int, tuple | None] | None = None


class ForwardRecorder(TorchFunctionMode):
    """Context manager recording every autograd node created by torch calls inside it."""

    def __init__(
        self,
        module_names: dict,
        state: UserState | None = None,
        save_hooks: bool = True,
        copies: dict[int, str] | None = None,
        drawn: Drawn | None = None,
        handed: list[torch.Tensor] | None = None,
    ):
        super().__init__()
        self.drawn = drawn  # None: every tensor's numbers are read
        self.copies = copies or {}  # id -> name of the inputs vizlib copied to require grad
        self._handed = handed or []  # the user's own tensors the call was handed (see _may_unwatch)
        self.state = state if state is not None else UserState()  # what the call may change of the user's
        self.save_hooks = save_hooks  # False: torch.func transforms refuse saved-tensor hooks
        self._made: dict[int, weakref.ref] = {}  # id -> tensor made by a call of this recording
        self.module_names = module_names  # nn.Module -> path (see _name_unnamed)
        self._paths = set(module_names.values())
        self._unnamed: dict[str, int] = {}  # class name -> the next number to try (_name_unnamed)
        self.param_names: dict[int, str] = {}  # id -> name of the parameters of modules named as they run
        # id -> a tensor a module's pre-hooks put in the place of a parameter (FSDP's gathered
        # ones), held weakly (an id outlives its tensor), and the parameter it stands in for
        self.stand_ins: dict[int, tuple[weakref.ref[torch.Tensor], torch.Tensor]] = {}
        self.ops: dict = {}  # autograd node -> OpRecord
        self.module_specs: dict[str, ModuleSpec] = {}  # path -> class and parameter shapes, set on exit
        self.summaries = Summaries()  # the statistics of this recording, forward and backward
        self._scope: tuple[str, ...] = ()
        # for each module entered: how many ops were recorded, and nodes made unwatched, before it
        self._ops_before: list[tuple[int, int]] = []
        self._stretch: Stretch | None = None  # the module call running unwatched, if any (unwatched.py)
        self.stretches = Stretches()
        self.first_number = 0  # autograd's number of the first node the call could make
        self._specs = ModuleSpecs(module_names)
        self._calls: dict = {}  # module -> how many times it has been entered
        self._entered: dict[str, nn.Module] = {}  # path -> module, in the order they first ran
        # What each node saved, by autograd's number of the node: a tensor saved inside a
        # torch call (or a stretch) is saved by the node made last on this thread, so a
        # call made of several nodes (``linear``: a view, ``addmm``) gives each its own.
        self.packed_at: dict[int, list[tuple[SavedTensor, tuple]]] = {}
        # Saved outside any torch call (torch.utils.checkpoint packs a block's inputs itself,
        # before the block's first op): pending until the next op recorded takes them.
        self._packed: list[tuple[SavedTensor, tuple]] = []
        self._in_call = False
        self._every_pack: list[tuple[weakref.ref, tuple[SavedTensor, tuple]]] = []
        self._saved_as: dict[tuple, _Held] = {}  # _elements -> a holder of them (see read_late)
        self._saved_up_to = 0  # how many of _every_pack are in _saved_as
        self.saved = SavedForBackward()
        # Every tensor autograd saves keeps its pack hook for as long as its node lives, and
        # this recorder keeps the nodes (``ops``): a hook holding the recorder would make a
        # cycle through autograd's C++ that the collector cannot see, and every recording
        # would stay in memory for good. The hook holds it weakly (it only runs while the
        # recorder records).
        self._saved_hooks = torch.autograd.graph.saved_tensors_hooks(_WeakPack(self), self.saved.unpack)

    # -- context management: the function mode, the module hooks, the pack hook --
    def __enter__(self) -> ForwardRecorder:
        self.first_number = next_number()
        MODULE_HOOKS.push(self)
        if self.save_hooks:
            # The caller's own hooks, if any, would be hidden by vizlib's: vizlib's call them.
            # (Not those of a recording this call runs inside: its graph is that one's own.)
            outer = torch._C._autograd._top_saved_tensors_default_hooks(False)
            self.saved.outer = None if outer is None or isinstance(outer[0], _WeakPack) else outer
            self._saved_hooks.__enter__()
        return super().__enter__()

    def __exit__(self, *exc: object) -> None:
        try:
            if self._stretch is not None:  # a KeyboardInterrupt: PyTorch ran no module hook after it
                self._stretch = None
                torch._C._push_on_torch_function_stack(self)
            super().__exit__(*exc)
        finally:
            if self.save_hooks:
                self._saved_hooks.__exit__(*exc)
            MODULE_HOOKS.pop(self)
            # Read once the mode is off: inside it, every parameter's .shape is a torch call.
            self.module_specs = {path: self._specs.of(module) for path, module in self._entered.items()}

    def enter_module(self, module: nn.Module, args: object = ()) -> None:
        """Enter a module's scope; unwatched (its ops not seen one by one) where ``drawn``
        says that no op of its could be drawn as a node of its own (see unwatched.py)."""
        self.state.keep_module(module)  # before it runs: its buffers as the user left them
        # A module run several times (an RNN cell) is a separate box per call: one box for
        # all calls would draw a cycle. Counted inside a stretch too: a later call outside
        # it is named by its place among all of them, and has run for ``alike``.
        calls = self._calls[module] = self._calls.get(module, 0) + 1
        if self._stretch is not None:  # a call inside one run unwatched (see unwatched.py)
            self._stretch.nested += 1
            return
        # What the module is handed made where the mode could not see (a custom Function's
        # output, a reentrant checkpoint's) belongs to the caller, not to this module.
        given = _tensors(args)
        self.adopt(*given)
        path = self.module_names.get(module) or self._name_unnamed(module)
        if calls == 1:
            self._entered[path] = module
        self._scope += (path if calls == 1 else f"{path} (call {calls})",)
        self._ops_before.append((len(self.ops), self.stretches.made))
        if self.drawn is None:
            return
        self.drawn.module_entered(module, self._specs.alike(module, self._calls) if self.drawn.predicts else ())
        if not self.drawn.may_draw(len(self._scope)) and self._may_unwatch(given):
            self._stretch = Stretch(len(self.ops), self._scope)
            torch._C._pop_torch_function_stack()  # this mode, on top (_may_unwatch)

    def parameter_replaced(self, old: torch.Tensor, new: torch.Tensor) -> None:
        """A module's pre-hooks put ``new`` in the place of its parameter ``old`` for the call."""
        self.stand_ins.setdefault(id(new), (weakref.ref(new), old))

    @property
    def modules_run(self) -> list[nn.Module]:
        """Every module the call ran (nested in a stretch too)."""
        return list(self._calls)

    def _name_unnamed(self, module: nn.Module) -> str:
        """Name a module that no name was given for (reached through an attribute of an
        object, a module made inside the call) and every module inside it: by its class,
        made unique (``Block``, ``Block#2``), so that two of them are never one box; and
        their parameters, as ``named_parameters`` would under that name (``Block#2.ln.weight``),
        so that each is drawn inside its module's box."""
        root = type(module).__name__
        k = self._unnamed.get(root, 1)
        path = root if k == 1 else f"{root}#{k}"
        while path in self._paths:
            k += 1
            path = f"{root}#{k}"
        self._unnamed[root] = k + 1
        named = {}
        for inner, m in named_modules(module):  # (a compiled block's original by its name)
            if m not in self.module_names:
                named[m] = self.module_names[m] = f"{path}.{inner}" if inner else path
                self._paths.add(named[m])
                for name, p in m._parameters.items():
                    if p is not None:
                        self.param_names.setdefault(id(p), f"{named[m]}.{name}")
        self._specs.named(named)
        return path

    def _may_unwatch(self, given: list[torch.Tensor]) -> bool:
        """Whether a module called on tensors ``given`` can run unwatched: this mode is the innermost
        (another one above it sees what it sees), and no argument is an input vizlib
        copied (an in-place change of one gets vizlib's words, ``_refuse_in_place``).
        What the module may change in place of the user's tensors is kept for the user
        here, as the mode would keep it op by op: its arguments made before the call, and
        every tensor the call was handed (a module's pre-hook sees no keyword arguments)."""
        depth = torch._C._len_torch_function_stack()
        if depth == 0 or torch._C._get_function_stack_at(depth - 1) is not self:
            return False
        if any(id(t) in self.copies for t in given):
            return False
        tensors = given + self._handed
        self._handed = []  # (kept once)
        for t in tensors:
            fn = _node_of(t)
            if fn is not None and fn._sequence_nr() >= self.first_number:
                continue  # made by the call
            if not self._made_here(t):
                self.state.keep_value(t)
        return True

    def leave_module(self, module: nn.Module, output: object) -> None:
        """Leave a module's scope; if it may be drawn as a box, whose numbers are those of
        its output, read the output's numbers now (while it is surely alive)."""
        if self._stretch is not None and self._stretch.nested:
            self._stretch.nested -= 1
            return
        ops_before, unwatched_before = self._ops_before.pop() if self._ops_before else (len(self.ops), 0)
        if self._stretch is not None:
            ran_ops = self._leave_unwatched(self._stretch, output)
        else:
            ran_ops = len(self.ops) > ops_before or self.stretches.made > unwatched_before
        if self.drawn is not None and self._scope:
            if self.drawn.module_left(len(self._scope) - 1, self._scope[-1], ran_ops):
                for t in _tensors(output):
                    self.read_late(_node_of(t))
        self._scope = self._scope[:-1]

    def _leave_unwatched(self, stretch: Stretch, output: object) -> bool:
        """End the module call run unwatched: count its ops for ``drawn``, note its outputs
        (a box may show them), and watch again. Whether it ran ops."""
        made = stretch.leave()
        if made and self._packed:  # saved before its first op: taken by it, as by a watched op
            stretch.took, self._packed = self._packed, []
        assert self.drawn is not None
        self.drawn.ops_ran(len(self._scope), made)
        for t in _tensors(output):
            fn = _node_of(t)
            if fn is not None and fn not in self.ops and fn._sequence_nr() >= self.first_number:
                self._made[id(t)] = weakref.ref(t)
                r = self.ops[fn] = _record_of(t, None, ())  # (the stretch knows its modules)
                r.unread = weakref.ref(t), t._version, _elements(t)
        self.stretches.close(stretch)
        self._stretch = None
        torch._C._push_on_torch_function_stack(self)
        return made > 0

    def ran_at(self) -> RanAt:
        """Where each node ran among this recording's ops (``walk``'s ``ran_at``)."""
        return RanAt({fn: k for k, fn in enumerate(self.ops)}, self.stretches)

    def _pack(self, t: torch.Tensor) -> _Held:
        if type(t) not in _PLAIN and is_fake(t):  # traced (torch.cond traces its branches): no memory
            return self.saved.pack(t, True)
        # The node saving t is the one made last on this thread: t's own node is made
        # before it unless t is that node's output.
        fn, last = t.grad_fn, next_number() - 1
        held = self.saved.pack(t, fn is None or fn._sequence_nr() < last)
        # A 0-byte storage holds nothing (PyTorch 2.11's checkpoint packs such a placeholder).
        # "saved" until build._name_saved gives autograd's names.
        if entry := saved_entry(t, "saved"):
            stretch = self._stretch
            if stretch is not None:
                self.summaries.saw(t)  # its node's device is not read (build._graph_of)
            # By the node made last (see packed_at); in a stretch, one the stretch made: what
            # is packed before its first node (torch.utils.checkpoint's inputs) waits, as
            # it does outside any torch call, for the next op (see _leave_unwatched).
            if self._in_call or (stretch is not None and last >= stretch.first):
                self.packed_at.setdefault(last, []).append(entry)
            else:
                self._packed.append(entry)
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
        if torch._C._functorch.maybe_current_level() is not None or torch.compiler.is_compiling():
            # Inside a torch.func transform: its tensors are wrappers of the transform's own
            # graph; the outer graph gets the transform's results, drawn by their nodes. Or
            # traced by Dynamo (torch.cond traces its branches so, eagerly too): its tensors
            # are fake, and what it traces runs later, as the ops the mode sees then.
            return func(*args, **kwargs)
        raw, name, in_place = _call_name(func)
        if raw == "__set__":
            return self._attribute_set(func, args)
        # A tensor made where this mode cannot see (a custom autograd.Function's apply) is
        # recorded when it is first used. Saved tensors stay pending until a node takes them.
        self.adopt(*_tensors(args))
        if kwargs:
            self.adopt(*_tensors(kwargs))
        # What an in-place call changes: its first argument, by position or by keyword
        # (``nn.init.normal_(w)`` hands torch ``tensor=w``).
        first = args[0] if args else next(iter(kwargs.values()), None)
        # (``F.relu(x, inplace=True)``, ``nn.ReLU(inplace=True)``: the mode sees ``relu``, then
        # torch calls ``relu_`` out of its sight)
        flagged = _flagged_in_place(name, kwargs)
        in_place = in_place or flagged or kwargs.get("out") is not None
        if in_place and torch.is_grad_enabled() and (copied := self._copied_input(first)):
            self._refuse_in_place(raw, copied, flagged)
        if in_place or kwargs or name in _UPDATES_ARGS or name in _RENORMS:
            self._keep_what_changes(name, first if in_place else None, args, kwargs)
        if raw == "backward":  # the call's own backward adds into the user's .grad in place
            self.state.keep_grad_values()
        self._in_call = True
        try:
            out = func(*args, **kwargs)
        finally:
            self._in_call = False
        made = _tensors(args[0] if name in _SETITEM and args else out)
        for t in made:
            if not self._theirs(t, raw, first):
                self._made[id(t)] = weakref.ref(t)
            self._record(t, name)
            if in_place and t._base is not None:  # an in-place op on a view rewrote its base's node
                self._record(t._base, name)
        return out

    def _attribute_set(self, func: Callable, args: Sequence) -> object:
        """An attribute set (``t._backward_hooks = None``, ``t.data = u``) makes no node. And
        torch sets one on what a custom Function marked dirty, inside ``apply``, while it
        holds a view's lock that reading the view's ``grad_fn`` would wait for forever."""
        # ``p.data = u`` (a manual update, p.data = p.data - lr * p.grad) moves the user's
        # tensor onto other memory: kept, to be put back where it lay (guard._put_back).
        if getattr(getattr(func, "__self__", None), "__name__", None) == "data" and not self._made_here(args[0]):
            self.state.keep_value(args[0])
        return func(*args)

    def _saved(self) -> dict[tuple, _Held]:
        """The tensors autograd holds for backward, by their elements (noted only when a
        node's numbers are read late and its own tensor is gone: rarely, and in one go)."""
        for ref, _ in self._every_pack[self._saved_up_to :]:
            held = ref()
            if held is not None and held.tensor is not None and (elements := _elements(held.tensor)) is not None:
                self._saved_as.setdefault(elements, held)
        self._saved_up_to = len(self._every_pack)
        return self._saved_as

    def _copied_input(self, t: object) -> str | None:
        """The name of the input vizlib copied that ``t`` is, or is a view of (else None)."""
        if not isinstance(t, torch.Tensor):
            return None
        base = t._base if t._base is not None else t
        return self.copies.get(id(base))

    @staticmethod
    def _refuse_in_place(op: str, name: str, flagged: bool = False) -> None:
        """An in-place op on an input vizlib made require grad: autograd would refuse it with
        words about a leaf the user never made; say it in theirs, before the op runs.
        ``flagged``: made in place by its ``inplace=True`` (``F.relu(x, inplace=True)``)."""
        if flagged:
            fix = f"{name} = {op}({name}) rather than {op}({name}, inplace=True)"
            op += "(..., inplace=True)"
        elif not op.startswith("__"):
            fix = f"{name} = {name}.{op.rstrip('_')}(...) rather than {name}.{op}(...)"
        else:
            fix = ""
        raise VizlibValueError(
            f"The function changes its input {name} in place ({op}). vizlib hands it a copy of {name} that "
            f"requires grad, to show {name}'s gradient, and autograd cannot change such a tensor in place. "
            f"Work on a copy inside the function ({name} = {name}.clone() first)"
            + (f", or use the out-of-place op ({fix})." if fix else ".")
        )

    def _keep_what_changes(self, name: str, changed: object, args: Sequence, kwargs: dict) -> None:
        """Hand the user's state an op is about to change to ``self.state``: the generator
        it draws from, the tensor (made before the call) it changes in place (``changed``,
        None where it changes none), the tensors it writes its results into."""
        gen = kwargs.get("generator")
        if isinstance(gen, torch.Generator):
            self.state.keep_generator(gen)
        targets = [changed, kwargs.get("out")]
        targets += [args[k] for k in _UPDATES_ARGS.get(name, ()) if k < len(args)]
        if name in _RENORMS and kwargs.get("max_norm", args[3] if len(args) > 3 else None) is not None:
            targets.append(kwargs.get("weight", args[1] if len(args) > 1 else None))
        for t in _tensors(targets):
            base = t._base if t._base is not None else t
            if not self._made_here(base):
                self.state.keep_value(base)

    def _theirs(self, out: torch.Tensor, raw: str, first: object) -> bool:
        """Whether a call's result ``out`` is the caller's memory under another name
        (``x.detach()``, ``x.data``) or the caller's tensor itself (``x.float()`` of a float
        ``x``, what ``nn.init.normal_(x)`` returns), ``first`` being the call's first
        argument: changing it in place changes theirs. (Asked of every result: the cheap
        tests first.)"""
        if first is None or not (out is first or raw in _ALIASES):
            return False
        return isinstance(first, torch.Tensor) and not self._made_here(first)

    def _made_here(self, t: torch.Tensor) -> bool:
        """Whether ``t`` was made by a call of this recording (else it is the caller's)."""
        ref = self._made.get(id(t))
        return ref is not None and ref() is t

    def adopt(self, *tensors: torch.Tensor) -> None:
        """Record tensors whose autograd node no call of ours produced (named by its node)."""
        for t in tensors:
            self._record(t, None)

    def _record(self, t: torch.Tensor, op: str | None) -> None:
        fn = _node_of(t)
        if fn is not None and fn not in self.ops:
            r = self.ops[fn] = _record_of(t, op, self._scope, self._packed)
            self._packed = []
            if self.drawn is None or self.drawn.op(len(self._scope)):
                r.value, r.value_stats = self.summaries.describe(t)
            else:
                r.unread = weakref.ref(t), t._version, _elements(t)

    def read_late(self, fn: object) -> bool:
        """Read the numbers of node ``fn``'s output, passed over when it ran, if that tensor
        (or what autograd saved of it) is still alive and unchanged since (a module's output,
        or a node drawn after all). False where they are lost."""
        r = self.ops.get(fn)
        if r is None:  # made unwatched: nothing noted of it (else: its numbers are never read)
            return self.stretches.of(fn) is None
        if r.unread is None:
            return True
        ref, version, elements = r.unread
        t = ref()
        if t is None or t.grad_fn is not fn:  # gone: read what autograd saved of the same elements
            held = self._saved().get(elements)
            t = held.tensor if held is not None else None
        if t is None or t._version != version:
            return False
        r.value, r.value_stats = self.summaries.describe(t)
        r.unread = None
        return True


def _node_of(t: torch.Tensor) -> AutogradNode:
    """``t.grad_fn``; None for a view made under no_grad whose base changed in place since
    (``with torch.no_grad(): emb.weight[0].fill_(0)``, a padding row zeroed), of which torch
    refuses to say: no graph goes through such a view."""
    try:
        return t.grad_fn
    except RuntimeError:
        return None


def _record_of(t: torch.Tensor, op: str | None, modules: tuple[str, ...], saved: list | None = None) -> OpRecord:
    """The record of the node that made ``t``, its numbers not yet asked for."""
    return OpRecord(
        op=op,
        shape=tensor_shape(t),
        dtype=dtype_name(t.dtype),
        device=device_name(t.device),
        value=None,
        value_stats=None,
        modules=modules,
        saved=saved if saved is not None else [],
    )


def _elements(t: torch.Tensor) -> tuple | None:
    """Which elements of which memory ``t`` holds, in a form a saved copy of the same
    view or of any view of the same block shares (None: not one plain tensor)."""
    if type(t) is not torch.Tensor or t.layout != torch.strided or t.is_meta or t.is_nested:
        return None
    return t.data_ptr(), t.numel(), t.dtype, None if in_one_block(t) else (tuple(t.shape), t.stride())


class _WeakPack:
    """``rec._pack``, holding ``rec`` by a weak reference (see ``ForwardRecorder.__init__``);
    a class of its own, so that a recording inside another knows the outer one's hook."""

    __slots__ = ("_ref",)

    def __init__(self, rec: ForwardRecorder) -> None:
        self._ref = weakref.ref(rec)

    def __call__(self, t: torch.Tensor) -> _Held:
        recorder = self._ref()
        assert recorder is not None, "a pack hook ran after its recorder was gone"
        return recorder._pack(t)


def _is_in_place(name: str) -> bool:
    """``add_``, ``__iadd__``, ``__setitem__``, ``_foreach_mul_`` (of a list of tensors, as
    ``clip_grad_norm_`` and optimizers call it), ``_amp_update_scale_`` (GradScaler's scale):
    a call that changes its first argument's values (``requires_grad_`` changes a flag, not
    values)."""
    if name.startswith("__"):
        return name in _IN_PLACE_DUNDERS
    if name in _FLAGS_ONLY:
        return False
    return name.endswith("_") and (not name.startswith("_") or name.startswith(("_foreach_", "_amp_")))


def _tensors(tree: object) -> list[torch.Tensor]:
    """The tensors in a call's arguments or results, in the order torch's pytree lists
    them: inside tuples (named ones and torch.return_types too), lists and dict values.

    The function mode runs this twice for every torch call; pytree's general walk cost
    more than the rest of the mode together, and so did a recursive call per item: a
    call's arguments are nearly always a flat tuple of tensors and numbers.
    """
    if isinstance(tree, torch.Tensor):
        return [tree]
    if isinstance(tree, dict):
        tree = tree.values()
    elif not isinstance(tree, (tuple, list)):
        return []
    found = []
    for item in tree:
        if isinstance(item, torch.Tensor):
            found.append(item)
        elif isinstance(item, (tuple, list, dict)):
            found += _tensors(item)
    return found


# func -> (its name, the name as recorded, whether it changes its first argument): every
# torch call asks, and a model calls the same few hundred functions over and over.
_CALL_NAMES: dict[object, tuple[str, str, bool]] = {}


def _flagged_in_place(name: str, kwargs: dict) -> bool:
    """Whether a call's ``inplace=True`` makes it write into its first argument."""
    if kwargs.get("inplace") is not True:
        return False
    return not (name in _DROPOUTS and (kwargs.get("training") is False or kwargs.get("p") == 0))


def _call_name(func: Callable) -> tuple[str, str, bool]:
    """``("__iadd__", "iadd", True)`` for ``Tensor.__iadd__``: its name, the name as
    recorded (dunders stripped of their underscores), and whether it is in place."""
    try:
        return _CALL_NAMES[func]
    except KeyError:
        pass
    except TypeError:  # an unhashable callable: named anew each time
        return _name_call(func)
    named = _CALL_NAMES[func] = _name_call(func)
    return named


def _name_call(func: Callable) -> tuple[str, str, bool]:
    raw = getattr(func, "__name__", str(func))
    return raw, raw.strip("_"), _is_in_place(raw)
