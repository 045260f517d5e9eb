"""``register_multi_grad_hook``: one hook over the gradients of several tensors, as
``torch.autograd.graph.register_multi_grad_hook``."""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Sequence
from typing import Any, Literal

from ember.errors import ArgumentError
from ember.hooks import RemovableHandle
from ember.tensor import Tensor

__all__ = ["register_multi_grad_hook"]


class MultiHandle:
    """The handles of several hooks, removed together."""

    __slots__ = ("handles",)

    def __init__(self, handles: tuple[RemovableHandle, ...]) -> None:
        self.handles = handles

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()

    def __enter__(self) -> MultiHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


def _running_task() -> Any:
    from ember.autograd.engine import running_task  # (the engine imports this module's graph)

    task = running_task()
    if task is None:
        raise AssertionError("expected this hook to be called inside a backward call")
    return task


def register_multi_grad_hook(tensors: Sequence[Tensor],
                             fn: Callable[[Sequence[Tensor | None]], None]
                             | Callable[[Tensor], None],
                             *, mode: Literal["all", "any"] = "all") -> MultiHandle:
    """Calls ``fn`` once per backward pass over the gradients of ``tensors``.

    ``mode="all"``: once the pass has computed the gradients of all the tensors it reaches,
    ``fn(grads)`` with one entry per tensor (None for those it does not reach). Every tensor
    must require grad. ``mode="any"``: ``fn(grad)`` with the first of their gradients
    computed. ``fn``'s return value is ignored: it cannot change the gradients.

    Example:
        >>> a, b, c = (ember.ones(2, requires_grad=True) for _ in range(3))
        >>> h = ember.autograd.graph.register_multi_grad_hook(
        ...     (a, b, c), lambda grads: print([g is not None for g in grads]))
        >>> (2 * a + b).sum().backward()
        [True, True, False]
        >>> h.remove()
    """
    if mode not in ("all", "any"):
        raise ArgumentError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    if mode == "any":
        last = [None]  # the id of the pass fn last ran in

        def first_only(grad: Tensor) -> None:
            task = _running_task()
            if last[0] != task.id:
                last[0] = task.id
                fn(grad)

        return MultiHandle(tuple(t.register_hook(first_only) for t in tensors
                                 if t.requires_grad))

    from ember.autograd.gradient_edge import get_gradient_edge

    # (weakly: the hooks live on these nodes and on the tensors, which must not be kept by
    # them; a node that is gone runs in no pass)
    count, nodes = len(tensors), [weakref.ref(get_gradient_edge(t).node) for t in tensors]
    pending: dict[int, list] = {}  # pass id -> [gradients so far, how many still to come]

    def collect(i: int) -> Callable[[Tensor], None]:
        def hook(grad: Tensor) -> None:
            task = _running_task()
            state = pending.get(task.id)
            if state is None:
                live = [node for node in (ref() for ref in nodes) if node is not None]
                state = pending[task.id] = [[None] * count, sum(map(task.will_execute, live))]
                task.at_exit.append(functools.partial(flush, task.id))  # (not task itself)
            state[0][i] = grad
            state[1] -= 1
            if state[1] == 0:
                flush(task.id)
        return hook

    def flush(task_id: int) -> None:
        # (at the end of the pass for a tensor whose node ran without gradients, as None)
        state = pending.pop(task_id, None)
        if state is not None:
            fn(state[0])

    return MultiHandle(tuple(t.register_hook(collect(i)) for i, t in enumerate(tensors)))
