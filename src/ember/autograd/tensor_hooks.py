"""Gradient hooks of a tensor (its methods ``retain_grad``, ``register_hook`` and
``register_post_accumulate_grad_hook``): where the engine finds them, on the tensor's node or,
for a leaf, on the tensor itself."""

from __future__ import annotations

import weakref
from collections.abc import Callable

from ember.autograd.graph import accumulator
from ember.errors import GradError
from ember.hooks import RemovableHandle, add_hook
from ember.tensor import Tensor, method


@method()
def retain_grad(self: Tensor) -> None:
    """Keeps ``.grad`` of a non-leaf tensor after backward (of its value at backward: an
    in-place op since then moves it to the new value, as in PyTorch). No-op on a leaf.

    Example:
        >>> y = ember.ones(2, requires_grad=True) * 2
        >>> y.retain_grad()
        >>> y.sum().backward()
        >>> y.grad
        tensor([1., 1.])
    """
    node = self.grad_fn  # (of today's value, for a view whose base was written in place)
    if not self.requires_grad:
        raise GradError(f"retain_grad(): the tensor (shape {tuple(self.shape)}) does not "
                        "require grad, so it gets no gradient to retain. Hint: call "
                        "requires_grad_() on the leaves it is computed from")
    if node is None:
        return
    if node.retained is None:
        node.retained = {}
    node.retained[self._idx] = weakref.ref(self)
    self._retains = True


@method()
def register_hook(self: Tensor, hook: Callable[[Tensor], Tensor | None]) -> RemovableHandle:
    """Calls ``hook(grad)`` when this tensor's gradient is computed; a returned tensor
    replaces the gradient. Returns a handle whose ``remove()`` unregisters it.

    Example:
        >>> x = ember.ones(2, requires_grad=True)
        >>> handle = x.register_hook(lambda g: g * 2)
        >>> (3 * x).sum().backward()
        >>> x.grad
        tensor([6., 6.])
        >>> handle.remove()
    """
    node = self.grad_fn  # (of today's value, for a view whose base was written in place)
    if not self.requires_grad:
        raise GradError("register_hook: cannot register a hook on a tensor that does not "
                        "require grad")
    if node is None:
        if self._hooks is None:
            self._hooks = []
        hooks = self._hooks
    else:
        if node.hooks is None:
            node.hooks = {}
        hooks = node.hooks.setdefault(self._idx, [])
    return add_hook(hooks, hook)


@method()
def register_post_accumulate_grad_hook(self: Tensor, hook: Callable[[Tensor], None]
                                       ) -> RemovableHandle:
    """Calls ``hook(tensor)`` after a ``backward`` has accumulated this leaf's ``.grad``
    (not in ``ember.autograd.grad``, which touches no ``.grad``); the hook returns None.
    Returns a handle whose ``remove()`` unregisters it. As PyTorch's: an optimizer step
    fused into backward, one parameter at a time.

    Example:
        >>> w = ember.ones(2, requires_grad=True)
        >>> h = w.register_post_accumulate_grad_hook(lambda p: print(p.grad))
        >>> (3 * w).sum().backward()
        tensor([3., 3.])
    """
    if not self.requires_grad:
        raise GradError("register_post_accumulate_grad_hook: cannot register a hook on a "
                        "tensor that does not require grad")
    if self.grad_fn is not None:
        raise GradError(f"register_post_accumulate_grad_hook: this tensor was computed by "
                        f"{self.grad_fn.name()}; post-accumulate-grad hooks run on leaves "
                        "only (a non-leaf accumulates no .grad). Hint: use register_hook")
    return add_hook(accumulator(self).hooks_made().post_accumulate, hook)
