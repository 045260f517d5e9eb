"""Products in their reader's layout: a ``matmul`` read only by a ``permute`` that keeps the
last dimension, itself read only by a ``reshape`` that would copy it, is written by BLAS
straight into a C-contiguous array of the permuted shape (seen unpermuted), so the reshape
views it instead of copying it (a reshape that views the permuted product keeps its layout:
later sums add in eager's order). Attention's output, ``(B, H, T, D)`` permuted to
``(B, T, H, D)`` and reshaped to ``(B·T, C)`` for the output projection, is one copy fewer
per layer. BLAS's rows then lie further apart; its sums are the same, so the values are
eager's bit for bit.
"""

from __future__ import annotations

from ember.jit.ir import Effect, Eqn, Graph
from ember.jit.kernels import Kernel
from ember.jit.passes.join import views


def permute_products(graph: Graph) -> Graph:
    """Replaces each ``matmul`` → ``permute`` → ``reshape`` chain (each read only by the next)
    by a kernel that makes the permuted product contiguous, and the reshape.

    Example:
        >>> g = permute_products(g)  # v38 = permute(matmul(a, b)): matmul_permuted(a, b)
    """
    uses = graph.uses()
    readers = {v: e for e in graph.eqns for v in e.inputs}
    made = {v: e for e in graph.eqns for v in e.outputs}
    at = {id(e): i for i, e in enumerate(graph.eqns)}
    effects = [i for i, e in enumerate(graph.eqns) if isinstance(e.prim, Effect)]
    taken: dict[int, Eqn] = {}  # id of a permute -> its kernel equation
    dropped: set[int] = set()
    for eqn in graph.eqns:
        if getattr(eqn.prim, "name", None) != "permute" or uses.get(eqn.outputs[0]) != 1:
            continue
        dims = eqn.params["dims"]
        matmul = made.get(eqn.inputs[0])
        reshape = readers.get(eqn.outputs[0])
        if len(dims) < 2 or dims[-1] != len(dims) - 1 or matmul is None or \
                getattr(matmul.prim, "name", None) != "matmul" or \
                matmul.params.get("compute") is not None or uses.get(matmul.outputs[0]) != 1 or \
                reshape is None or reshape.prim.name != "reshape" or \
                views(matmul.outputs[0].shape, reshape.outputs[0].shape, dims=dims) or \
                min(len(v.shape) for v in matmul.inputs) < 2 or \
                any(at[id(matmul)] < i < at[id(eqn)] for i in effects):  # (it moves down)
            continue
        kernel = Kernel.permuted_matmul(matmul, eqn)
        taken[id(eqn)] = Eqn(kernel, list(kernel.inputs), {}, list(eqn.outputs), eqn.source)
        dropped.add(id(matmul))
    graph.eqns = [taken.get(id(e), e) for e in graph.eqns if id(e) not in dropped]
    return graph

