"""Hoisting: in an inference graph, the equations that read only parameters and constants (a
weight's transpose, a conv weight laid out for its GEMM) move to the front and are cached
between calls; they run again only when a parameter they read changed (another array, or a
new version: an optimizer step, ``load_state_dict``, an in-place write).

Graphs with effects or gradients (training steps) are left alone: their parameters change
every call, and the cache would only hold memory.
"""

from __future__ import annotations

from ember.jit.ir import Effect, Graph, Var
from ember.jit.kernels import makes_fresh


def hoist_state_only(graph: Graph) -> Graph:
    """Moves state-only equations first; ``graph.hoisted`` counts them and ``graph.cached``
    lists the values later equations read from them.

    Example:
        >>> g = hoist_state_only(g)   # permute(fc.weight) runs once, not at every call
    """
    fixed = parameters(graph)
    if fixed is None:
        return graph
    seen = _seen_after(graph)
    front, rest = [], []
    for eqn in graph.eqns:
        if eqn.prim.pure and eqn.inputs and all(v in fixed for v in eqn.inputs) and \
                not any(v in seen for v in eqn.outputs):
            front.append(eqn)
            fixed.update(eqn.outputs)
        else:
            rest.append(eqn)
    if not front:
        return graph
    read_later = {v for e in rest for v in e.inputs} | graph.live_roots()
    graph.eqns = front + rest
    graph.hoisted = len(front)
    graph.cached = [v for e in front for v in e.outputs if v in read_later]
    return graph


def _seen_after(graph: Graph) -> set[Var]:
    """The variables whose memory the caller may hold after a call: the outputs, and what
    they may be views of. (A cached array returned would be the same array at every call, and
    a caller's in-place change to it would reach the next calls.)"""
    seen = graph.live_roots()
    for eqn in reversed(graph.eqns):
        if not makes_fresh(eqn) and any(v in seen for v in eqn.outputs):
            seen.update(eqn.inputs)
    return seen


def parameters(graph: Graph) -> set[Var] | None:
    """The variables an inference graph reads that stay fixed from call to call: its
    parameters and constants (not any state: data a function reads from a closure is an input
    in spirit); None for a graph with effects or gradients.

    Example:
        >>> parameters(g)   # {v2, v5, c0}: fc.weight, fc.bias and a constant
    """
    if graph.grads or graph.arg_grads or any(isinstance(e.prim, Effect) for e in graph.eqns):
        return None
    return {ref.var for ref in graph.state if not ref.grad and ref.tensor.requires_grad} | \
        set(graph.consts)


def cached_state(graph: Graph) -> list[Var]:
    """The state variables the hoisted equations read (their arrays and versions key the
    cache)."""
    front = graph.eqns[:graph.hoisted]
    read = {v for e in front for v in e.inputs}
    return [ref.var for ref in graph.state if ref.var in read]
