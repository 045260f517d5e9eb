"""The running backward pass as hooks see it (PyTorch's graph task): which pass it is, what it
computes, and the callbacks queued to run once it has delivered every gradient. The engine
(:mod:`ember.autograd.engine`) sets and clears it."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any

from ember.autograd.graph import AccumulateGrad, Node


class GraphTask:
    """The running backward pass, as hooks may ask about it (PyTorch's graph task): a
    number of its own, whether a node's gradient is computed in it, and whether it
    ``accumulates`` into ``.grad`` (``backward``) or returns the gradients (``grad``)."""

    __slots__ = ("id", "order", "needed", "wanted", "targets", "_nodes", "_leaves", "at_exit",
                 "accumulates")

    def __init__(self, id: int, order: list[Node], needed: set | None, wanted: dict | None,
                 targets: list | None, at_exit: list[Callable[[], None]],
                 accumulates: bool = True) -> None:
        self.id, self.at_exit = id, at_exit  # (at_exit: run once every gradient is computed)
        self.accumulates = accumulates
        self.order, self.needed, self.wanted, self.targets = order, needed, wanted, targets
        self._nodes: set | None = None
        self._leaves: set | None = None

    def will_execute(self, fn: Any) -> bool:
        """Whether this pass computes the gradient ``fn`` receives: a :class:`Node` it runs,
        or the :class:`AccumulateGrad` of a leaf it reaches (and delivers, under
        ``grad(…, inputs)``), as ``torch._C._will_engine_execute_node``."""
        if self._nodes is None:
            self._nodes = set(self.order) if self.needed is None else \
                self.needed | {node for node, _ in self.wanted}
            self._leaves = {id(e[1]) for n in self.order for e in n.edges
                            if e is not None and e[0] is None}
        if not isinstance(fn, AccumulateGrad):
            return fn in self._nodes
        leaf = fn.variable
        return id(leaf) in self._leaves and (
            self.targets is None or any(t is leaf for t in self.targets))


class _GraphTaskSlot(threading.local):
    def __init__(self) -> None:
        self.current: GraphTask | tuple | None = None  # a tuple: GraphTask's arguments


GRAPH_TASK = _GraphTaskSlot()  # the innermost running backward pass of this thread
PASS_IDS = itertools.count(1)


def running_task() -> GraphTask | None:
    """The innermost backward pass running in this thread, or None outside backward."""
    task = GRAPH_TASK.current
    if type(task) is tuple:
        task = GRAPH_TASK.current = GraphTask(*task)
    return task


CALLBACKS: list[Callable[[], None]] = []


def queue_callback(fn: Callable[[], None]) -> None:
    """Runs ``fn()`` once the running ``backward()`` has delivered every gradient, as
    PyTorch's ``Variable._execution_engine.queue_callback`` (FSDP checks there that a step's
    gradients all arrived). Call it from a hook during backward.

    Example:
        >>> w = ember.ones(2, requires_grad=True)
        >>> _ = w.register_hook(lambda g: ember.autograd.engine.queue_callback(
        ...     lambda: print("every gradient delivered")))
        >>> (w * 2).sum().backward()
        every gradient delivered
    """
    CALLBACKS.append(fn)

