"""The global module hooks a recording uses: one pair, there only while some thread
records, that hands each module call to the recorder of the thread it runs on, so two
threads drawing at once never see each other's modules."""

from __future__ import annotations

import functools
import threading
from typing import Protocol

import torch
from torch import nn
from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
from torch.utils.hooks import RemovableHandle

from .compiled import original_module


class Recorder(Protocol):
    """What the hooks hand each module call to (``record.ForwardRecorder``)."""

    def enter_module(self, module: nn.Module, args: object) -> None: ...

    def leave_module(self, module: nn.Module, output: object) -> None: ...

    def parameter_replaced(self, old: torch.Tensor, new: torch.Tensor) -> None: ...


class ModuleHooks:
    """The global module hooks, installed while at least one thread records, each call
    handed to the innermost recorder of the thread it runs on (none: ignored)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users = 0
        self._handles: list[RemovableHandle] = []
        self._local = threading.local()  # .recorders: this thread's recorders, innermost last

    def push(self, rec: Recorder) -> None:
        with self._lock:
            if self._users == 0:
                self._handles = [
                    register_module_forward_pre_hook(self._pre),
                    register_module_forward_hook(self._post, always_call=True),
                ]
            self._users += 1
        self._stack().append(rec)

    def pop(self, rec: Recorder) -> None:
        stack = self._stack()
        if rec in stack:
            stack.remove(rec)
        if not stack:
            self._let_go_of_late()
        with self._lock:
            self._users -= 1
            if self._users == 0:
                for h in self._handles:
                    h.remove()
                self._handles = []

    def _stack(self) -> list[Recorder]:
        stack = getattr(self._local, "recorders", None)
        if stack is None:
            stack = self._local.recorders = []
        return stack

    # The hooks run where the recorder's function mode is on: without DisableTorchFunction,
    # every tensor property they read (a parameter's .grad, a buffer's shape) and every op
    # that reads an output's numbers would be one more call of the mode (a third of a
    # recording's bookkeeping, GPT-12's first module noting every parameter and buffer).
    # A module torch.compile wrapped runs its original (whose hooks fire) and nothing else:
    # the wrapper is no box of its own, and its original is named as it would be unwrapped
    # (``inputs.named_modules``).
    def _pre(self, module: nn.Module, args: object) -> None:
        stack = getattr(self._local, "recorders", None)
        if stack and original_module(module) is module:
            with torch._C.DisableTorchFunction():
                stack[-1].enter_module(module, args)
            if module._forward_hooks:
                self._leave_after_its_hooks(module)
            if module._forward_pre_hooks:
                self._params_before(module)

    def _post(self, module: nn.Module, args: object, output: object) -> None:
        stack = getattr(self._local, "recorders", None)
        if stack and module._forward_pre_hooks:
            self._params_after(module, stack[-1])
        # (only a module with forward hooks of its own is left by vizlib's hook after them)
        if stack and original_module(module) is module and not (module._forward_hooks and self._late().get(module)):
            with torch._C.DisableTorchFunction():
                stack[-1].leave_module(module, output)

    # A module's own forward pre-hooks run after the global ones, and may put other parameters
    # in its place, or its modules', for the call (FSDP's gather the full ones from their
    # shards; they are what the graph holds): each is named as the one it stands in for. A
    # module's parameters are noted before its pre-hooks, and looked at again when its forward
    # has returned, before its own forward hooks (FSDP's put the shards back).
    def _params_before(self, module: nn.Module) -> None:
        held = [(m._parameters, name, p) for m in module.modules() for name, p in m._parameters.items()]
        self._before().setdefault(module, []).append(held)

    def _params_after(self, module: nn.Module, rec: Recorder) -> None:
        calls = self._before().get(module)
        if not calls:
            return
        for params, name, old in calls.pop():
            new = params.get(name)
            if old is not None and new is not None and new is not old:
                rec.parameter_replaced(old, new)

    def _before(self) -> dict[nn.Module, list[list[tuple[dict[str, nn.Parameter | None], str, nn.Parameter | None]]]]:
        before = getattr(self._local, "before", None)
        if before is None:
            before = self._local.before = {}
        return before

    # A module's own forward hooks run after the global ones, and are part of calling it, as
    # its pre-hooks are: what they compute (``o * 2``) is the module's output, its box's. So
    # each call of a module that has some is left by a hook of vizlib's put after them, for
    # that call alone: a hook on the module runs for every call of it, on every thread, and
    # each acts only for the innermost open call of its own thread (a module that calls
    # itself, two threads drawing one model).
    def _late(self) -> dict[nn.Module, list[tuple[object, RemovableHandle]]]:
        late = getattr(self._local, "late", None)
        if late is None:
            late = self._local.late = {}
        return late

    def _leave_after_its_hooks(self, module: nn.Module) -> None:
        call = object()  # this call's own token
        handle = module.register_forward_hook(functools.partial(self._post_late, call), always_call=True)
        self._late().setdefault(module, []).append((call, handle))

    def _post_late(self, call: object, module: nn.Module, args: object, output: object) -> None:
        open_calls = self._late().get(module)
        if not open_calls or open_calls[-1][0] is not call:  # another thread's call, or an outer one
            return
        open_calls.pop()[1].remove()
        stack = getattr(self._local, "recorders", None)
        if stack:
            with torch._C.DisableTorchFunction():
                stack[-1].leave_module(module, output)

    def _let_go_of_late(self) -> None:
        """Remove this thread's hooks still on modules: a call ended by a KeyboardInterrupt
        runs none (torch calls its always-called hooks for an Exception only)."""
        for open_calls in self._late().values():
            for _, handle in open_calls:
                handle.remove()
        self._late().clear()
        self._before().clear()


MODULE_HOOKS = ModuleHooks()
