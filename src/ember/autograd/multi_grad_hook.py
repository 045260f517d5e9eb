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
    from ember.autograd.graph import AccumulateGrad

    # tensors grouped by node: a node that runs has made all its outputs' gradients, those it
    # made as None included (whose tensor hooks never run: its prehook, after them, says so)
    edges = [get_gradient_edge(t) for t in tensors]
    groups: dict[int, list[int]] = {}
    for i, edge in enumerate(edges):
        groups.setdefault(id(edge.node), []).append(i)
    # (weakly: the hooks live on these nodes and on the tensors, which must not be kept by
    # them; a node that is gone runs in no pass)
    refs = {key: weakref.ref(edges[ids[0]].node) for key, ids in groups.items()}
    count = len(tensors)
    pending: dict[int, list] = {}  # pass id -> [gradients so far, {node: outputs to come},
    #                                               whether fn has run]

    def state_of(task: Any) -> list:
        state = pending.get(task.id)
        if state is None:
            live = [key for key, ref in refs.items()
                    if ref() is not None and task.will_execute(ref())]
            state = pending[task.id] = [[None] * count, {k: len(groups[k]) for k in live},
                                        False]
            task.at_exit.append(functools.partial(flush, task.id, True))  # (not task itself)
        return state

    def node_done(task_id: int, state: list, key: int) -> None:
        if state[1].pop(key, None) is not None and not state[1]:
            flush(task_id, False)

    def collect(i: int, key: int) -> Callable[[Tensor], None]:
        def hook(grad: Tensor) -> None:
            task = _running_task()
            state = state_of(task)
            state[0][i] = grad
            left = state[1].get(key)
            if left is not None:
                state[1][key] = left - 1
                if left == 1:
                    node_done(task.id, state, key)
        return hook

    def ran(key: int) -> Callable[[tuple], None]:
        def prehook(_: tuple) -> None:
            task = _running_task()
            node_done(task.id, state_of(task), key)
        return prehook

    def flush(task_id: int, pass_ends: bool) -> None:
        # (at the end of the pass for a tensor whose node ran without gradients, as None)
        state = pending.pop(task_id, None) if pass_ends else pending[task_id]
        if state is not None and not state[2]:
            state[2] = True
            fn(state[0])

    handles = [t.register_hook(collect(i, id(edges[i].node))) for i, t in enumerate(tensors)]
    handles += [edges[ids[0]].node.register_prehook(ran(key)) for key, ids in groups.items()
                if not isinstance(edges[ids[0]].node, AccumulateGrad)]
    return MultiHandle(tuple(handles))
