"""How to trace a module's forward into its static graph, registered here by ``ember.jit`` (a
layer above) for the tools at this layer that draw one (TensorBoard's ``add_graph``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["register", "traced_graph"]

_trace: Callable[[Any, Any, bool], Any] | None = None


def register(trace: Callable[[Any, Any, bool], Any]) -> None:
    """Sets ``trace(model, example_inputs, strict)``, which returns the static graph (an
    ``ember.jit.ir.Graph``) of ``model`` called on ``example_inputs`` without grad
    (``strict``: refusing list and dict outputs, as ``ember.jit.trace``)."""
    global _trace
    _trace = trace


def traced_graph(model: Any, example_inputs: Any, strict: bool = True) -> Any:
    """The static graph of ``model`` called on ``example_inputs`` (a tensor, or a tuple or
    list of arguments).

    Example:
        >>> graph = traced_graph(ember.nn.Linear(4, 2), ember.randn(3, 4))
        >>> [e.prim.name for e in graph.eqns]
        ['permute', 'matmul', 'add_into']
    """
    if _trace is None:
        raise RuntimeError("traced_graph: no tracer is registered; ember.jit registers one "
                           "when it is imported (import ember)")
    return _trace(model, example_inputs, strict)
