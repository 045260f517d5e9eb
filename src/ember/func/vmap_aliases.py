"""In-place ops under ``vmap`` and a tape below it (``grad(vmap(f))``): the alias an in-place
op computes from (``ember.ops.inplace``) stands for a physical tensor of its own, on the same
memory but with a version counter of its own, at every vmap level; when a gradient is
recorded for the op (its batched op may have saved that tensor), it gets a copy of the
memory before the write. So what a tape saved keeps the old values, and an in-place op with
no gradient below copies nothing.
"""

from __future__ import annotations

from typing import Any

from ember.ops.primitive import DISPATCH, refresh_view
from ember.tensor import Tensor, VersionCounter, _wrap


def owner_below(trace: Any, t: Tensor) -> tuple[Any, Tensor | None]:
    """The vmap level below ``trace`` whose logical tensor ``t`` is, and its physical tensor;
    ``(None, None)`` when none is."""
    stack = DISPATCH.stack
    for h in reversed(stack[:stack.index(trace)]):
        find = getattr(h, "physical", None)  # (a vmap level)
        phys = find(t) if find is not None else None
        if phys is not None:
            return h, phys
    return None, None


def own_tensor(trace: Any, t: Tensor) -> Tensor:
    """An alias of ``t`` below ``trace``: its memory and history, a version counter of its
    own (writes into ``t`` do not count), at every vmap level below too; the handlers
    between (a jvp, a jit trace) are told as of an in-place op's alias."""
    if t._view is not None and t._view.version != t._vc.value:
        refresh_view(t)  # (a view whose base was written since it was made: today's history)
    owner, phys = owner_below(trace, t)
    data = t._data if owner is None else owner.sample(own_tensor(owner, phys))
    counter = VersionCounter()
    counter.value = t._vc.value
    own = _wrap(data, t._device, t.requires_grad, t._node, t._idx, counter)
    _tell_between(trace, owner, "on_alias", own, t)
    return own


def copy_memory(trace: Any, own: Tensor, t: Tensor) -> None:
    """Gives ``own`` (:func:`own_tensor` of ``t``) a copy of ``t``'s memory, at every level."""
    owner, phys = owner_below(trace, own)
    if owner is None:
        own._data = own._data.copy()
    else:
        copy_memory(owner, phys, owner.physical(t))
        own._data = owner.sample(phys)
    _tell_between(trace, owner, "on_saved_copy", own, t)


def _tell_between(trace: Any, owner: Any, event: str, a: Tensor, b: Tensor) -> None:
    """Calls ``handler.event(a, b)`` for the handlers below ``trace`` and above ``owner``
    (those that see ``b`` as it is)."""
    stack = DISPATCH.stack
    for h in stack[stack.index(owner) + 1 if owner is not None else 0:stack.index(trace)]:
        hook = getattr(h, event, None)
        if hook is not None:
            hook(a, b)
