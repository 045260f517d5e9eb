"""``ModuleTracker``: which modules are running now, forward or backward, as
``torch.utils.module_tracker``. Tools that attribute work to modules (the FLOP counter) ask it.
"""

from __future__ import annotations

import weakref
from typing import Any

from ember.autograd.engine import queue_callback, running_task
from ember.autograd.multi_grad_hook import register_multi_grad_hook
from ember.nn.module import Module
from ember.nn.module_hooks import register_module_forward_hook, register_module_forward_pre_hook
from ember.tensor import Tensor

__all__ = ["ModuleTracker"]


def _grad_tensors(value: Any) -> list[Tensor]:
    """The tensors needing a gradient in a (possibly nested) tuple, list or dict."""
    if isinstance(value, Tensor):
        return [value] if value.requires_grad else []
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _grad_tensors(v)]
    return []


class ModuleTracker:
    """Context manager that tracks the ``nn.Module`` hierarchy while code runs: ``parents`` is
    the set of fully qualified names (``"Net"``, ``"Net.fc1"``, as in a state dict, the root
    named by its class) of the modules whose forward, or backward, is running now, and always
    holds ``"Global"``; ``is_bw`` says whether a backward pass is running.

    In backward a module is entered when the gradients of its outputs arrive and left when
    those of its inputs are made (a module whose inputs need no gradient stays entered until
    the pass ends, when ``parents`` is reset to ``{"Global"}``), as PyTorch's tracker.

    Example:
        >>> from ember.utils.module_tracker import ModuleTracker
        >>> net = ember.nn.Sequential(ember.nn.Linear(2, 2))
        >>> seen = []
        >>> _ = net[0].register_forward_pre_hook(lambda m, a: seen.append(sorted(tracker.parents)))
        >>> with ModuleTracker() as tracker:
        ...     _ = net(ember.ones(1, 2))
        >>> seen
        [['Global', 'Sequential', 'Sequential.0']]
    """

    def __init__(self) -> None:
        self.parents: set[str] = {"Global"}
        self._names: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._named_children: weakref.WeakSet = weakref.WeakSet()
        self._reset_queued = False
        self._handles: list[Any] = []

    @property
    def is_bw(self) -> bool:
        """Whether a backward pass is running in this thread."""
        return running_task() is not None

    def _name(self, mod: Module) -> str:
        """``mod``'s fully qualified name: its class name for a module first seen at the top,
        and the names of its children from it."""
        if mod not in self._names:
            self._names[mod] = type(mod).__name__
        name = self._names[mod]
        if mod not in self._named_children:
            self._named_children.add(mod)
            for child_name, child in mod.named_children():
                self._names[child] = f"{name}.{child_name}"
                self._name(child)
        return name

    def _reset_after_backward(self) -> None:
        if not self._reset_queued:
            self._reset_queued = True
            queue_callback(self._reset)

    def _reset(self) -> None:
        self.parents = {"Global"}
        self._reset_queued = False

    def _enter(self, name: str, backward: bool) -> Any:
        def enter(*_: Any) -> None:
            if backward:
                self._reset_after_backward()
            self.parents.add(name)
        return enter

    def _leave(self, name: str) -> Any:
        def leave(*_: Any) -> None:
            self.parents.discard(name)
        return leave

    def _pre_hook(self, mod: Module, args: tuple) -> None:
        name = self._name(mod)
        self.parents.add(name)
        tensors = _grad_tensors(args)
        if tensors:
            self._handles.append(register_multi_grad_hook(tensors, self._leave(name)))

    def _post_hook(self, mod: Module, args: tuple, output: Any) -> None:
        name = self._name(mod)
        self.parents.discard(name)
        tensors = _grad_tensors(output)
        if tensors:
            self._handles.append(register_multi_grad_hook(tensors, self._enter(name, True)))

    def __enter__(self) -> ModuleTracker:
        self._handles = [register_module_forward_pre_hook(self._pre_hook),
                         register_module_forward_hook(self._post_hook)]
        return self

    def __exit__(self, *exc: object) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
