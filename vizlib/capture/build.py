"""Capture: turn a tensor, a function call or a module call into GraphData (torch -> Graph).

Two ways in, one GraphData out:

- post-hoc: walk the autograd graph behind tensors a learner already has (no recording,
  so op nodes know their shapes but not their values);
- recorded: run the call inside a ForwardRecorder, then compute gradients with
  ``torch.autograd.grad`` under backward hooks. ``autograd.grad`` returns gradients
  instead of accumulating them; whatever else of the user's the call may change (buffers
  of every module it reaches, ``.grad`` of retained tensors, generators, random states) is
  put back by ``guard.UserState``, so drawing a model never changes it.
"""

from __future__ import annotations

import gc
import re
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeGuard

import torch
from torch.utils._pytree import tree_leaves

from ..data import GraphData, Node, SavedTensor, Stats
from ..errors import VizlibTypeError, VizlibValueError
from ..memory import has_memory, refuse_without_memory
from ..text import device_name, dims, dtype_name
from .backward import BackwardRecord, first_in_backward, hook_backward, with_leaves
from .compiled import run_eager, uncompiled
from .devices import device_notes
from .guard import UserState, outside_state
from .inputs import (
    Params,
    grad_outputs,
    made_of_numbers,
    module_names,
    param_names,
    parts_to_draw,
    prepare_inputs,
    result_tensors,
    tensor_names,
    why_no_graph,
    widened_numbers,
)
from .left_behind import LeftBehind, watch
from .nested import tensor_shape
from .placement import attach_saved, consumers_of, inherit_modules, place_params, total_saved
from .record import Drawn, ForwardRecorder
from .rows import Pending
from .summary import Summaries
from .unwatched import Stretch
from .walk import (
    AutogradNode,
    Walked,
    held_by_other_hooks,
    output_meta,
    raise_if_freed,
    root_of,
    saved_tensors,
    walk,
)


def capture(
    target: object,
    args: tuple = (),
    kwargs: dict | None = None,
    params: Params = None,
    grad_output: object = None,
    show_saved: bool = False,
    drawn: Drawn | None = None,
) -> GraphData:
    """The autograd graph of ``target``: a tensor (or list of tensors) walked post-hoc, or a
    function or ``nn.Module`` run on ``args``/``kwargs`` while recording (see ``vz.graph``).

    A recording given ``drawn`` (what the caller's picture will show of the graph: see
    ``record.Drawn``) reads the values and gradients of only the nodes and edges that
    picture may draw; the others' numbers are left None. Without it, every one is read."""
    kwargs = kwargs or {}
    with collector_paused():
        g = _capture(target, args, kwargs, params, grad_output, show_saved, drawn)
    g.show_saved = show_saved
    return g


def _capture(
    target: object,
    args: tuple,
    kwargs: dict,
    params: Params,
    grad_output: object,
    show_saved: bool,
    drawn: Drawn | None,
) -> GraphData:
    if isinstance(target, torch.Tensor) or _is_tensor_list(target):
        if args or kwargs:
            raise VizlibTypeError(
                "vz.graph(tensor) takes no further inputs; to record a call, "
                "pass the function first: vz.graph(fn, x, w)."
            )
        roots = [target] if isinstance(target, torch.Tensor) else list(target)
        return _posthoc(roots, params, show_saved)
    if callable(target):
        return _recorded(target, args, kwargs, params, grad_output, drawn)
    refused = f"vz.graph needs a tensor, a list of tensors, a function or an nn.Module; got {type(target).__name__}."
    inside = parts_to_draw(target)  # a model's output (Hugging Face's holds its loss beside its logits)
    if inside:
        refused += f" It holds tensors: vz.graph(out{inside[0]}) draws the graph behind out{inside[0]}."
    raise VizlibTypeError(refused)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector held off while a graph is captured.

    A capture makes tens of thousands of small objects (records, hooks, statistics, nodes),
    and that many allocations start collections; once a notebook has imported torch, one
    full collection walks a few hundred thousand objects and takes about 0.25 s, a third of
    recording GPT-12. Nothing made during a capture needs the collector to go (tensors are
    let go by reference counting), so cycles left over wait for the first collection after.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _is_tensor_list(x: object) -> TypeGuard[list[torch.Tensor] | tuple[torch.Tensor, ...]]:
    return isinstance(x, (list, tuple)) and len(x) > 0 and all(isinstance(t, torch.Tensor) for t in x)


# ---------------------------------------------------------------- post-hoc


def _posthoc(roots: list[torch.Tensor], params: Params, show_saved: bool) -> GraphData:
    w = walk([root_of(t) for t in roots])
    names = param_names(params)
    nodes, summaries = [], Summaries()
    later: list[tuple[Node, str, Pending | None]] = []  # what the summaries fill in once fetched
    for i, fn in enumerate(w.fns):
        leaf = w.leaf_tensor(i)
        if leaf is not None:
            nodes.append(_leaf_node(i, leaf, names))
            refuse_without_memory(leaf, f"The leaf {nodes[-1].name}")
            _leaf_numbers(nodes[-1], leaf, leaf.grad, summaries, later)
            continue
        shape, dtype, device = output_meta(fn)
        nodes.append(Node(id=i, kind="op", name=type(fn).__name__, shape=shape, dtype=dtype, device=device))
    for t in roots:
        refuse_without_memory(t, "The tensor drawn")
        out = nodes[w.index[root_of(t)]]
        out.is_output = True
        value, value_stats = summaries.describe(t)
        later += [(out, "value", value), (out, "value_stats", value_stats)]
    _fill_in(summaries, later)
    g = GraphData(nodes=nodes, edges=[(s, d) for s, d, _ in w.edges], edge_grads=[None] * len(w.edges))
    g.notes += device_notes(nodes, summaries.devices, recorded=False)
    _posthoc_saved(g, w, show_saved)
    return g


def _posthoc_saved(g: GraphData, w: Walked, show_saved: bool) -> None:
    """What each op node of ``g`` (the walk's ``w.fns``, in order) saved, and the graph's
    saved bytes, read from the nodes; a note where they cannot all be counted. Freed by an
    earlier backward(): an error with ``show_saved``, else a note and no bytes."""
    kept: list[tuple[SavedTensor, tuple]] = []
    recomputed = False
    for node, fn in zip(g.nodes, w.fns, strict=True):
        if node.kind != "op":
            continue
        try:
            saved = saved_tensors(fn)
        except VizlibValueError:
            if show_saved:
                raise
            g.notes.append("an earlier backward() freed the tensors saved for backward: saved bytes unknown")
            for n in g.nodes:
                n.saved, n.saved_bytes = [], 0
            return
        attach_saved(node, saved.tensors)
        kept += saved.tensors
        recomputed = recomputed or saved.recomputed
    g.saved_bytes = total_saved(kept)
    if recomputed:
        g.notes.append(_RECOMPUTED_NOTE)


# Why a graph drawn after the fact counts nothing for the ops of a checkpointed block.
_RECOMPUTED_NOTE = (
    "the ops inside a torch.utils.checkpoint(use_reentrant=False) block keep nothing for backward: what they "
    "use is recomputed in backward by running the block again, so it is not counted (reading it would run it)"
)


# ---------------------------------------------------------------- recorded


def _recorded(
    fn: Callable, args: tuple, kwargs: dict, params: Params, grad_output: object, drawn: Drawn | None
) -> GraphData:
    fn = uncompiled(fn)
    # (the caller's torch.autograd.graph.disable_saved_tensors_hooks: drawn as torch.func's calls are)
    save_hooks = torch._C._autograd._saved_tensors_hooks_is_enabled()  # type: ignore[attr-defined]
    while True:  # at most three runs, each try putting back what it changed (UserState)
        try:
            return _record_call(fn, args, kwargs, params, grad_output, drawn, save_hooks)
        except RuntimeError as err:
            # torch.func's grad, vjp, jacrev and hessian refuse to run under saved-tensor
            # hooks: the call runs again without them, and what each node saved is read from
            # the node afterwards, as for a graph drawn after the fact.
            if not save_hooks or _SAVED_HOOKS_REFUSED not in str(err):
                raise
            save_hooks = False
        except _NumbersLost:
            drawn = None


def _in_vizlibs_terms(
    err: Exception, handed: tuple, copies: dict[int, str], numbers: list[tuple[str, object]]
) -> Exception | None:
    """The error to raise for one the call raised because of what vizlib did to its inputs
    (``handed``; ``copies``: id -> name of the tensors vizlib made to require grad; ``numbers``:
    those it made of numbers), in words that say what to do; None for the call's own."""
    said = str(err)
    if isinstance(err, RuntimeError):
        changed = [t for t in tree_leaves(handed) if id(t) in copies and t._version]
        if changed and _LEAF_IN_PLACE in said:  # (one of vizlib's copies, not a leaf of theirs)
            return _copy_changed_in_place(copies[id(changed[0])])
        if _INFERENCE_SAVED in said:
            return VizlibValueError(_INFERENCE_ADVICE)
        if _NOT_A_LEAF in said and copies:
            return _flag_of_a_copy(sorted(set(copies.values())))
        if (flex := _FLEX_NO_BACKWARD.match(said)) and copies:
            return _flex_attention_refused(list(dict.fromkeys(copies.values())), flex[1])
    if numbers and _NUMBER_NEEDED.search(said):
        return _numbers_made_tensors(numbers, err)
    return None


class _NumbersLost(Exception):
    """The picture draws a node whose numbers the forward passed over and can no longer
    read (``Drawn.op`` counted ops whose results were never used): the call runs again,
    reading every number."""


# What torch says of an in-place change to a leaf that requires grad, which the recorder
# cannot refuse first where it does not see the op (inside an autograd.Function's forward).
_LEAF_IN_PLACE = "leaf Variable that requires grad"


# What torch says when a tensor made under torch.inference_mode() is saved for backward.
_INFERENCE_SAVED = "Inference tensors cannot be saved for backward"
_INFERENCE_ADVICE = (
    "The call uses a tensor made under torch.inference_mode() (a model built or loaded there has such "
    "parameters), and autograd cannot save one for backward, which vz.graph runs to draw the gradients. "
    "Make the model or tensor outside inference_mode, or give a model ordinary copies of its tensors: "
    "model.load_state_dict({k: v.clone() for k, v in model.state_dict().items()}, assign=True)."
)


# What torch says when a call sets requires_grad on a tensor computed from one that requires grad.
_NOT_A_LEAF = "you can only change requires_grad flags of leaf variables"


def _flag_of_a_copy(names: list[str]) -> VizlibValueError:
    """The error for a call that sets ``requires_grad`` on a tensor it computed from its inputs,
    which torch refuses once one of them requires grad, as vizlib's copies of them do."""
    them = " and ".join(names)
    return VizlibValueError(
        "The function sets requires_grad on a tensor it computed, which torch allows only on a leaf. If that "
        f"tensor is computed from {them} alone (Hugging Face's audio models, such as Wav2Vec2, do this to "
        "their input's features in training mode), vizlib is the cause: it hands the call a copy of "
        f"{them} that requires grad, to draw its gradient, so what the call computes from it is no leaf, as it "
        f"would be from {them} itself. Pass the input through a closure, which vizlib hands over as it is: "
        "vz.graph(lambda: model(x).loss, params=model). If the tensor is computed from weights that require "
        "grad, PyTorch refuses the call without vizlib too: set the flag on a .detach()ed copy."
    )


# What flex_attention says of inputs that require grad on a device its eager path has no backward for.
_FLEX_NO_BACKWARD = re.compile(r"FlexAttention does not support backward on (\w+)\.")


def _flex_attention_refused(names: list[str], device: str) -> VizlibValueError:
    """The error for flex_attention refusing inputs that require grad on ``device`` (the CPU),
    which vizlib's copies of the call's inputs do where the user's do not."""
    them = " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
    return VizlibValueError(
        f"flex_attention cannot run backward in eager mode on {device}, so it refuses a query, key or value that "
        f"requires grad, and vizlib hands the call copies of {them} that require grad, to draw their gradients. "
        "Where they reach flex_attention unchanged, pass them through a closure, which vizlib hands over as they "
        "are, to draw the gradients of the weights after it: vz.graph(lambda: model(q, k, v).sum(), params=model). "
        "Where weights that require grad come before it, PyTorch refuses the call without vizlib too: run it on a "
        "CUDA device, or draw the forward without gradients as torch.compile captures it: "
        "vz.compiled_graphs(model, q, k, v) after model.requires_grad_(False)."
    )


def _copy_changed_in_place(name: str) -> VizlibValueError:
    """The error for an input vizlib made require grad that the call changed in place where
    the recorder could not see it first (inside an autograd.Function's forward)."""
    return VizlibValueError(
        f"The function changes its input {name} in place, which autograd refuses here: vizlib hands it a copy "
        f"of {name} that requires grad, to show {name}'s gradient, and a leaf that requires grad cannot change "
        f"in place. Work on a copy inside the function ({name} = {name}.clone() first), or change {name} "
        "before calling vz.graph."
    )


# What torch and NumPy say of a tensor that requires grad where they need a plain number: a
# config argument (``eps``, dropout's ``p``, a fill value) or a NumPy function's input.
_NUMBER_NEEDED = re.compile(
    r"must be (?:float|int|Number|bool), not Tensor|Can't call numpy\(\) on Tensor that requires grad"
)


def _numbers_made_tensors(numbers: list[tuple[str, object]], err: Exception) -> VizlibTypeError:
    """The error for a number argument that the call uses where only a plain number will do,
    which vizlib handed over as a 0-d tensor that requires grad."""
    them = " and ".join(dict.fromkeys(name for name, _ in numbers))
    name, value = numbers[0]
    said = str(err).splitlines()[0]
    return VizlibTypeError(
        f"The function uses {them} where a plain number is needed ({said}). vz.graph hands a number argument "
        "over as a 0-d tensor that requires grad, to draw its gradient, and this use of it takes no tensor. Pass "
        f"the number through a closure, which vizlib hands over as it is: vz.graph(lambda x: f(x, {name}="
        f"{float(value)!r}), x) for a function f(x, {name})."  # type: ignore[arg-type]
    )


# What torch says when a torch.func transform meets saved-tensor hooks (vizlib's, not the user's).
_SAVED_HOOKS_REFUSED = "don't yet support saved tensor hooks"


def _record_call(
    fn: Callable, args: tuple, kwargs: dict, params: Params, grad_output: object, drawn: Drawn | None, save_hooks: bool
) -> GraphData:
    user_args = (args, kwargs)
    args, kwargs, names, bound = prepare_inputs(fn, args, kwargs)
    reached = [*bound.items(), *outside_state(fn)]
    if isinstance(fn, types.MethodType):  # vz.graph(model.forward, x): the module it is a method of
        reached.append((type(fn.__self__).__name__, fn.__self__))
    paths, named = module_names(fn, params, reached)
    names = tensor_names(fn, reached) | names | named  # (inputs and parameters keep their own names)
    given = {id(t) for t in tree_leaves(user_args) if isinstance(t, torch.Tensor)}
    copies = {id(t): names.get(id(t), "an input") for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)}
    copies = {k: v for k, v in copies.items() if k not in given}  # the tensors vizlib made to require grad
    handed = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor) and id(t) not in copies]
    made = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor) and id(t) in copies]
    widened = widened_numbers(user_args, (args, kwargs), names)  # (before the call, which may set the default dtype)
    with UserState(fn, params, user_args) as state, torch.enable_grad(), run_eager():
        with watch(state.noted_since, made) as left:
            try:
                with ForwardRecorder(paths, state, save_hooks, copies, drawn, handed) as rec:
                    result = _call(fn, args, kwargs, user_args, copies, names)
            finally:  # (outside the recorder: what it puts back is no op of the call's)
                notes = left.call_returned()
            notes += widened
            for key, name in rec.param_names.items():  # of the modules named as they ran
                if key not in names:
                    names[key] = named[key] = name
            for key, (stand_in, stood_for) in rec.stand_ins.items():  # named as the parameter it stood in for
                if key not in names and id(stood_for) in names and stand_in() is not None:
                    names[key] = named[key] = names[id(stood_for)]
            outs = [t for t in result_tensors(result) if t.requires_grad]
            if not outs:
                raise VizlibValueError(why_no_graph(fn, user_args, result, rec.modules_run))
            # (only for the advice a result of several tensors gets: every recording would pay for the walk)
            parts = parts_to_draw(result) if grad_output is None and len(outs) > 1 else None
            del result  # from here on only outs holds the graph, for _let_go to free it
            rec.adopt(*outs)
            seeds = grad_outputs(outs, grad_output, fn, parts)
            w = walk([root_of(t) for t in outs], rec.ran_at())
            try:
                g = _run_backward(w, outs, seeds, rec, names, set(named.values()), drawn, left)
            finally:
                _let_go(w, rec, outs)
    g.notes += notes
    return g


def _call(fn: Callable, args: tuple, kwargs: dict, user_args: tuple, copies: dict[int, str], names: dict) -> object:
    """``fn(*args, **kwargs)``; an error it raises because of what vizlib did to its inputs
    (``_in_vizlibs_terms``) in words that say what to do."""
    try:
        return fn(*args, **kwargs)
    except (RuntimeError, TypeError) as err:
        mine = _in_vizlibs_terms(
            err, (args, kwargs), copies, [(name, n) for name, n, _ in made_of_numbers(user_args, (args, kwargs), names)]
        )
        if mine is None:
            raise
        raise mine from err


def _let_go(w: Walked, rec: ForwardRecorder, outs: list[torch.Tensor]) -> None:
    """Free the recorded autograd graph newest node first.

    Its nodes have Python objects (vizlib read them): freed with its last node still held,
    each node would free the one below it from inside its own destructor, and a loop of
    tens of thousands of steps overflows the C stack. Outputs first, then the nodes from
    the last made back, each frees only itself.
    """
    outs.clear()
    rec.stretches.forget()
    nodes = list(w.fns)  # forward order
    w.fns.clear()
    w.index.clear()
    rec.ops.clear()
    while nodes:
        nodes.pop()


def _run_backward(
    w: Walked,
    outs: list[torch.Tensor],
    seeds: list[torch.Tensor],
    rec: ForwardRecorder,
    names: dict,
    parameters: set[str],
    drawn: Drawn | None,
    left: LeftBehind,
) -> GraphData:
    leaves = {i: t for i in range(len(w.fns)) if (t := w.leaf_tensor(i)) is not None}
    leaf_pos = list(leaves)
    kept = _kept_for_backward(w, rec)
    # A tensor on the meta device has a shape and a dtype but no values: no gradient to
    # compute (a copy back to the CPU could not even run), so backward is left out.
    summaries = rec.summaries
    for t in leaves.values():
        summaries.saw(t)
    on_meta = "meta" in summaries.devices
    # (the outputs' positions: not in _record_call, where a name left holding a result would free its graph last)
    built = _graph_of(w, rec, names, leaves, parameters, [w.index[root_of(t)] for t in outs])
    g = built.graph
    for t in outs:
        rec.read_late(t.grad_fn)  # a picture draws the results, folded or not
    ids, read, depth = (None, None, None) if drawn is None else _drawn_part(built, w, rec, drawn)
    hidden = _name_saved(built, w, rec, ids)
    order_of = None if depth is None else first_in_backward(built.node_at, w.edges, depth)
    back, handles = hook_backward([] if on_meta else w.fns, w.edges, rec.saved, summaries, read, order_of)
    rec.saved.in_backward = True
    try:
        leaf_grads = [None] * len(leaves) if on_meta else _leaf_gradients(w, outs, seeds, list(leaves.values()), rec)
    finally:
        rec.saved.all_done()
        rec.saved.in_backward = False
        for h in handles:
            h.remove()
    grads = dict(zip(leaf_pos, leaf_grads, strict=True))
    gone = _freed_leaves(leaves, g.notes) if left.freed_elsewhere else set()
    _fill_in(summaries, _numbers(built, w, rec, leaves, grads, back, ids, gone))
    g.edge_grads = [_norm(Summaries.result(back.edge_norms.get(w.edges[k]))) for k in built.first_edge]
    ran = [] if on_meta else with_leaves(back.order, leaf_pos, w.edges)
    g.backward_order = list(dict.fromkeys(built.node_at[i].id for i in ran))
    g.notes += device_notes(g.nodes, summaries.devices, recorded=True)
    if _reentrant_checkpoint(w):
        g.notes.append(
            "CheckpointFunctionBackward is a block run by torch.utils.checkpoint(use_reentrant=True): autograd "
            "keeps it as one node and runs the block again inside backward, so its ops, and the parameters it "
            "uses without being handed them, are not drawn (use_reentrant=False keeps them in the graph)."
        )
    if hidden:
        g.notes.append(
            f"{hidden} tensor(s) the drawn ops saved for backward went through the function's own saved-tensor "
            "hooks (save_on_cpu(), saved_tensors_hooks): vizlib cannot read what those keep without running "
            "them, so their bytes are not counted. Draw the function without them to see what it saves."
        )
    g.saved_bytes = total_saved(kept)
    return g


def _drawn_part(built: _Built, w: Walked, rec: ForwardRecorder, drawn: Drawn) -> tuple[set[int], _Read, int | None]:
    """The ids of the nodes whose numbers the picture of the whole graph draws; what backward
    reads for it (the positions whose gradients, the ``w.edges`` entries whose norms); and the
    depth of its module boxes (None: it folds loops). The values of those nodes the forward
    passed over are read now, or, where they are gone, the call runs again reading every
    number (``_NumbersLost``)."""
    ids, own, positions, depth = drawn.of(built.graph)
    for i in ids:
        # (a node made unwatched, drawn as itself: its op's name is unknown)
        if not rec.read_late(w.fns[built.shows.get(i, i)]) or (i in own and rec.stretches.of(w.fns[i]) is not None):
            raise _NumbersLost
    read = {built.shows.get(i, i) for i in ids}, {w.edges[built.first_edge[k]] for k in positions}
    return ids, read, depth


def _numbers(
    built: _Built,
    w: Walked,
    rec: ForwardRecorder,
    leaves: dict[int, torch.Tensor],
    grads: dict[int, torch.Tensor | None],
    back: BackwardRecord,
    shown: set[int] | None,
    gone: set[int],
) -> list[tuple[Node, str, Pending | None]]:
    """What the summaries fill into each node (``shown``: only these; None: all) once fetched;
    ``gone``: leaves whose memory is freed, whose gradient alone is read."""
    later: list[tuple[Node, str, Pending | None]] = []
    for node in built.graph.nodes:
        i = node.id
        if shown is not None and i not in shown:
            continue
        if i in leaves:
            _leaf_numbers(node, None if i in gone else leaves[i], grads[i], rec.summaries, later)
            continue
        i = built.shows.get(i, i)
        r = rec.ops.get(w.fns[i])
        if r is not None:
            later += [(node, "value", r.value), (node, "value_stats", r.value_stats)]
        later += [(node, "grad", back.grads.get(i)), (node, "grad_stats", back.grad_stats.get(i))]
    return later


def _freed_leaves(leaves: dict[int, torch.Tensor], notes: list[str]) -> set[int]:
    """The leaves whose memory is gone (``has_memory``), freed by the model as the capture ran
    (FSDP frees each parameter it gathered once backward is done with it); said in ``notes``."""
    gone = {i for i, t in leaves.items() if not has_memory(t)}
    if gone:
        notes.append(
            f"The values of {len(gone)} leaf tensor(s) are not drawn: the model freed their memory "
            "(untyped_storage().resize_, as FSDP frees the full parameters it gathered once backward is done with "
            "them) before vizlib could read them. Their shapes and gradients are drawn."
        )
    return gone


def _name_saved(built: _Built, w: Walked, rec: ForwardRecorder, ids: set[int] | None) -> int:
    """Autograd's own names for what each drawn op node saved ("self", "result", ...; ids:
    the drawn nodes, None: all), read before backward lets the tensors go, in place of the
    pack hook's "saved[0]". Only drawn nodes: a box shows no member's names, and reading
    them makes autograd unpack every saved tensor.

    Only for a node whose saved tensors went through vizlib's pack hook, and none made
    outside any call: inside torch.utils.checkpoint (PyTorch 2.12+) the first op takes the
    block's inputs, which checkpoint packed, while its own saved tensors went through
    checkpoint's hooks; reading them would run the block again. The bytes are the same
    either way (the same storages).

    A stretch's node lists no names (a box shows none), but the node whose numbers it shows
    is drawn: what that one saved counts by its names there too, as it would were the
    stretch's nodes apart.

    Returns how many tensors a drawn node saved through the function's own saved-tensor
    hooks (``save_on_cpu()`` inside it), which vizlib's pack hook never saw: their bytes
    are not counted, and the picture says so."""
    if not rec.save_hooks:  # the nodes named them already (_kept_for_backward)
        return 0
    if rec.saved.outer is not None:  # reading names would run the caller's unpack hook once more each
        return 0
    hidden = 0
    for i in range(len(w.fns)) if ids is None else ids:
        k = built.shows.get(i, i)  # the node of the walk drawn: a stretch's, the one it shows
        fn, node = w.fns[k], built.node_at[k]
        r = rec.ops.get(fn)
        if node.kind != "op" or (r is not None and r.saved):
            continue
        if not node.saved and not rec.packed_at.get(fn._sequence_nr()):
            hidden += held_by_other_hooks(fn, rec.saved.unpack)
        try:
            if i not in built.shows:
                if node.saved and (named := saved_tensors(fn).tensors):
                    attach_saved(node, named)
            elif (packed := rec.packed_at.get(fn._sequence_nr())) and (named := saved_tensors(fn).tensors):
                node.saved_bytes += total_saved(named) - total_saved(packed)
        except VizlibValueError:  # (saved_tensors' words are for a graph drawn after the fact)
            raise VizlibValueError(_freed_advice(w, rec)) from None
    return hidden


def _kept_for_backward(w: Walked, rec: ForwardRecorder) -> list[tuple[SavedTensor, tuple]]:
    """What autograd keeps for backward, each op's record told what it saved."""
    # Let go of the nodes no result depends on, and so of what they saved, as the forward
    # alone would have; then count what autograd still keeps.
    rec.ops = {fn: r for fn, r in rec.ops.items() if fn in w.index}
    if rec.save_hooks:
        return rec.kept_for_backward()
    for fn, r in rec.ops.items():  # nothing went through vizlib's pack hook: each node says
        r.saved = _saved_or_none(fn)
    return [s for fn in w.fns if w.leaf_tensor(w.index[fn]) is None for s in _saved_or_none(fn)]


def _leaf_gradients(
    w: Walked, outs: list[torch.Tensor], seeds: list[torch.Tensor], leaves: list[torch.Tensor], rec: ForwardRecorder
) -> list[torch.Tensor | None]:
    """The leaves' gradients, by ``autograd.grad`` (or ``backward()`` where a reentrant
    checkpoint or a multi-grad hook needs it), with the message a freed graph deserves.
    Run with anomaly detection off: a user hunting a NaN with it on gets the picture that
    shows where the NaN arises, not torch's error from vizlib's backward."""
    try:
        with torch.autograd.set_detect_anomaly(False):
            if _reentrant_checkpoint(w) or any(map(_multi_grad_hooked, leaves)):
                return _grads_by_backward(outs, leaves, seeds, rec.state)
            return list(torch.autograd.grad(outs, leaves, seeds, retain_graph=True, allow_unused=True))
    except RuntimeError as err:
        raise_if_freed(err, _freed_advice(w, rec))
        raise


def _freed_advice(w: Walked, rec: ForwardRecorder) -> str:
    """What to do about a graph whose saved tensors a backward freed before vizlib's."""
    if any(_made_before(fn, rec.first_number) for fn in w.fns):  # an input brought a graph of its own
        return (
            "This graph's saved tensors were freed by an earlier backward(): inside the call, or before it, "
            "in the graph that made one of the inputs (an input computed from other tensors brings their "
            "graph along). Draw from the input on (pass it .detach()ed), call that earlier backward with "
            "retain_graph=True, or return the result without calling backward() yourself (vizlib runs it)."
        )
    return _FREED_IN_CALL


# Advice for a result whose graph the call's own backward freed (a training step returning its loss).
_FREED_IN_CALL = (
    "This graph's saved tensors were freed by an earlier backward() inside the call (a training step that "
    "returns the loss it backpropagated). Return the result without calling backward() yourself (vizlib "
    "runs backward): draw the step's forward and loss alone, as vz.graph(lambda x, y: loss_fn(model(x), y), "
    "x, y, params=model), or call backward(retain_graph=True)."
)


def _made_before(fn: object, first_number: int) -> bool:
    """Whether ``fn`` is an op node made before the call (its graph came with an input)."""
    if isinstance(fn, torch.Tensor) or type(fn).__name__ == "AccumulateGrad":
        return False
    return fn._sequence_nr() < first_number  # type: ignore[attr-defined]


_Read = tuple[set[int], set[tuple[int, int, int]]]  # positions whose gradients, w.edges whose norms


@dataclass
class _Built:
    """A recorded graph before it is folded, and how its nodes stand for the walk's.

    Each autograd node is a node of ``graph``, except those a stretch made (a module call
    run unwatched, unwatched.py): one node stands for all of a stretch's, with their count
    (``members``) and the bytes they saved. No picture draws them apart (that is why they
    ran unwatched), and GPT-12 made 542 of its 760 nodes so: one node each cost the walk's
    every later step some µs. ``node_at[i]`` is the node the walk's position ``i`` is drawn
    as, ``first_edge[k]`` the position in ``w.edges`` of graph edge ``k``, and ``shows[id]``
    the position whose numbers a stretch's node shows: its output, or its last node feeding
    another (what a box of its module shows)."""

    graph: GraphData
    node_at: list[Node]
    first_edge: list[int]
    shows: dict[int, int]


def _graph_of(
    w: Walked,
    rec: ForwardRecorder,
    names: dict,
    leaves: dict[int, torch.Tensor],
    parameters: set[str],
    outputs: list[int],
) -> _Built:
    """One node per autograd node, or per stretch (``_Built``), each in its modules, its
    numbers not yet asked for; ``outputs``: the positions of the call's results."""
    nodes: list[Node] = []
    node_at: list[Node] = []
    placed = set()  # nodes whose modules are known (else: their consumer's)
    of_stretch: dict[Stretch, Node] = {}
    for i, fn in enumerate(w.fns):
        if i in leaves:
            node = _leaf_node(i, leaves[i], names)
        elif (unwatched := rec.stretches.of(fn)) is not None:  # made where the function mode was off
            stretch, number = unwatched
            one = of_stretch.get(stretch)
            if one is None:  # its first node: the one that stands for all of them
                one = of_stretch[stretch] = Node(id=i, kind="op", name=type(fn).__name__, modules=stretch.scope)
                one.members, one.saved_bytes = 0, total_saved(stretch.took)
                placed.add(i)
                nodes.append(one)
            one.members += 1
            if packed := rec.packed_at.get(number):  # (most of a stretch's nodes saved nothing)
                one.saved_bytes += total_saved(packed)
            node_at.append(one)
            continue
        else:
            node, recorded = _op_node(i, fn, rec)
            if recorded:
                placed.add(i)
        nodes.append(node)
        node_at.append(node)
    edges, first_edge, shows = _between(node_at, w.edges, {node.id for node in of_stretch.values()})
    _mark_results(node_at, outputs, shows)
    for node in of_stretch.values():  # its shape: the recorder noted that of a stretch's outputs
        if (r := rec.ops.get(w.fns[shows[node.id]])) is not None:
            node.shape, node.dtype, node.device = r.shape, r.dtype, r.device
    consumers = consumers_of(w.edges)
    inherit_modules(nodes, node_at, consumers, placed)
    place_params(nodes, node_at, consumers, parameters)
    for n in nodes:
        n.module = n.modules[-1] if n.modules else None
    graph = GraphData(nodes=nodes, edges=edges, edge_grads=[None] * len(edges), module_specs=dict(rec.module_specs))
    return _Built(graph, node_at, first_edge, shows)


def _mark_results(node_at: list[Node], outputs: list[int], shows: dict[int, int]) -> None:
    """The nodes of the call's results (positions ``outputs``) marked; a stretch's node shows
    its result (``_Built.shows``): a box shows a result of the call before anything else."""
    for i in sorted(outputs):
        node_at[i].is_output = True
        if node_at[i].id in shows:
            shows[node_at[i].id] = i


def _op_node(i: int, fn: AutogradNode, rec: ForwardRecorder) -> tuple[Node, bool]:
    """The node of op ``fn`` at position ``i``, and whether the recorder noted it; where it
    did not (a node made inside a composite call), from autograd's own metadata, its modules
    then left for ``inherit_modules``."""
    r = rec.ops.get(fn)
    if r is None:
        shape, dtype, device = output_meta(fn)
        node = Node(id=i, kind="op", name=type(fn).__name__, shape=shape, dtype=dtype, device=device)
        attach_saved(node, _packed_by(fn, rec))
        return node, False
    node = Node(
        id=i,
        kind="op",
        name=type(fn).__name__,
        shape=r.shape,
        dtype=r.dtype,
        device=r.device,
        op=r.op,
        modules=r.modules,
    )
    attach_saved(node, _packed_by(fn, rec) + r.saved)
    return node, True


def _between(
    node_at: list[Node], edges: list[tuple[int, int, int]], stretches: set[int]
) -> tuple[list[tuple[int, int]], list[int], dict[int, int]]:
    """The graph's edges (those of the walk's ``edges`` between two of its nodes), where each
    is in ``edges``, and for each stretch's node (ids ``stretches``) the last position of
    its nodes that feeds another node: what a box of its module shows, unless a result of
    the call is among them."""
    between, first_edge = [], []
    shows = {i: i for i in stretches}
    for k, (src, dst, _) in enumerate(edges):
        a, b = node_at[src], node_at[dst]
        if a is not b:  # (else: inside one stretch)
            between.append((a.id, b.id))
            first_edge.append(k)
            if a.id in shows:
                shows[a.id] = max(shows[a.id], src)
    return between, first_edge, shows


def _packed_by(fn: AutogradNode, rec: ForwardRecorder) -> list[tuple[SavedTensor, tuple]]:
    """What node ``fn`` saved through vizlib's pack hook while it was the newest node."""
    if not rec.packed_at or isinstance(fn, torch.Tensor):
        return []
    return rec.packed_at.get(fn._sequence_nr(), [])


def _reentrant_checkpoint(w: Walked) -> bool:
    """Whether the graph holds a block of ``checkpoint(..., use_reentrant=True)``."""
    return any(type(fn).__name__ == "CheckpointFunctionBackward" for fn in w.fns)


def _multi_grad_hooked(leaf: torch.Tensor) -> bool:
    """Whether ``leaf`` has a hook of ``torch.autograd.graph.register_multi_grad_hook``,
    which asks the engine what it will run, a question ``autograd.grad`` cannot answer
    for a leaf (PyTorch raises "_will_engine_execute_node ... not supported")."""
    hooks = leaf._backward_hooks or {}
    return any("register_multi_grad_hook" in getattr(h, "__qualname__", "") for h in hooks.values())


def _grads_by_backward(
    outs: list[torch.Tensor], leaves: list[torch.Tensor], seeds: list[torch.Tensor], state: UserState
) -> list[torch.Tensor | None]:
    """The leaves' gradients from ``backward()`` rather than ``autograd.grad``, which
    ``checkpoint(..., use_reentrant=True)`` and multi-grad hooks on leaves do not support.
    Backward accumulates into ``.grad`` of every leaf it reaches, inside the checkpointed
    blocks too: the leaves' and every tensor ``state`` noted have theirs set aside
    meanwhile, and put back."""
    for t in leaves:
        state.keep_grad(t)
    with state.grads_set_aside():
        torch.autograd.backward(outs, seeds, retain_graph=True)
        return [t.grad for t in leaves]


def _saved_or_none(fn: object) -> list[tuple[SavedTensor, tuple]]:
    """What node ``fn`` saved, or nothing when it cannot say (a node of torch.func's own)."""
    try:
        return saved_tensors(fn).tensors
    except (RuntimeError, VizlibValueError):
        return []


def _fill_in(summaries: Summaries, later: list[tuple[Node, str, Pending | None]]) -> None:
    """Read every number the summaries kept on the device (one transfer per device and
    dtype) and put each into its node's field."""
    summaries.fetch()
    for node, attr, pending in later:
        if attr in ("value", "grad"):
            setattr(node, attr, Summaries.value_of(pending))
        else:
            setattr(node, attr, Summaries.result(pending))


def _norm(st: Stats | None) -> float | None:
    return None if st is None else st.norm


def _leaf_node(i: int, leaf: torch.Tensor, names: dict) -> Node:
    shape = tensor_shape(leaf)
    name = names.get(id(leaf)) or f"tensor{dims(shape)}"
    return Node(
        id=i,
        kind="leaf",
        name=name,
        shape=shape,
        dtype=dtype_name(leaf.dtype),
        device=device_name(leaf.device),
    )


def _leaf_numbers(
    node: Node,
    leaf: torch.Tensor | None,
    grad: torch.Tensor | None,
    summaries: Summaries,
    later: list[tuple[Node, str, Pending | None]],
) -> None:
    """Ask ``summaries`` for a leaf's value (None: its memory is freed, no value) and
    gradient (it knows a parameter's gradient from its TBackward node), filled in ``later``."""
    if leaf is not None:
        value, value_stats = summaries.describe(leaf)
        later += [(node, "value", value), (node, "value_stats", value_stats)]
    if grad is not None:
        value, grad_stats = summaries.describe(grad, gradient=True)
        later += [(node, "grad", value), (node, "grad_stats", grad_stats)]
