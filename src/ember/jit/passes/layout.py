"""Products in their reader's layout: a ``matmul`` read only by a ``permute`` that keeps the
last dimension, itself read only by a ``reshape`` that would copy it, is written by BLAS
straight into a C-contiguous array of the permuted shape (seen unpermuted), so the reshape
views it instead of copying it (a reshape that views the permuted product keeps its layout:
later sums add in eager's order). Attention's output, ``(B, H, T, D)`` permuted to
``(B, T, H, D)`` and reshaped to ``(B·T, C)`` for the output projection, is one copy fewer
per layer. BLAS's rows then lie further apart; its sums are the same, so the values are
eager's bit for bit.

Before joining (pass ``swap``), a product whose permute puts its rows innermost (the gradient
of attention's ``k``: ``qᵀ @ dS`` is ``(B, H, D, T)``, permuted to ``(B, T, H, D)``) is made
as the product of the transposed operands, ``dSᵀ @ q`` (two views), whose permute keeps the
last dimension: BLAS then writes it into its slice of the ``qkv`` gradient as it writes ``q``'s
and ``v``'s, where its copy took 0.65 ms a layer on ``gpt`` (its step 214 → 209 ms). Each
element is the same dot product; on attention's products OpenBLAS sums it in the same order
either way round (checked bit for bit, on one and two threads), elsewhere it may round
otherwise in the last bit, as for a packed weight (:mod:`ember.jit.passes.pack`).
"""

from __future__ import annotations

from itertools import count

from ember.jit.ir import Effect, Eqn, Graph, Var
from ember.jit.kernels import Kernel
from ember.jit.passes.join import views
from ember.ops.primitive import PRIMITIVES


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
        if dims[-1] != len(dims) - 1 or matmul is None or \
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



def swap_products(graph: Graph) -> Graph:
    """Rewrites each ``permute(matmul(a, b))`` that puts the product's rows innermost, read by
    a ``reshape`` and the matmul read only by it, as ``permute(matmul(bᵀ, aᵀ))`` that keeps the
    last dimension (``ᵀ``: a ``permute`` swapping the last two dimensions, a view).

    Example:
        >>> g = swap_products(g)  # permute(a @ b, (0, 3, 1, 2)): permute(bᵀ @ aᵀ, (0, 2, 1, 3))
    """
    uses = graph.uses()
    readers = {v: e for e in graph.eqns for v in e.inputs}
    made = {v: e for e in graph.eqns for v in e.outputs}
    ids = count(graph.unused_id())
    before: dict[int, list[Eqn]] = {}  # id of a matmul -> the transposes it now reads
    for eqn in graph.eqns:
        if getattr(eqn.prim, "name", None) != "permute" or uses.get(eqn.outputs[0]) != 1:
            continue
        dims, matmul = eqn.params["dims"], made.get(eqn.inputs[0])
        reader = readers.get(eqn.outputs[0])
        last = len(dims) - 1
        if dims[-1] != last - 1 or matmul is None or \
                getattr(matmul.prim, "name", None) != "matmul" or \
                matmul.params.get("compute") is not None or uses.get(matmul.outputs[0]) != 1 or \
                min(len(v.shape) for v in matmul.inputs) < 2 or \
                getattr(getattr(reader, "prim", None), "name", None) != "reshape":
            continue
        a, b = matmul.inputs
        transposes = [_transpose(v, matmul, ids) for v in (b, a)]
        product = matmul.outputs[0]
        swapped = Var(next(ids), (*product.shape[:-2], product.shape[-1], product.shape[-2]),
                      product.dtype, "eqn")
        matmul.inputs, matmul.outputs = [t.outputs[0] for t in transposes], [swapped]
        before[id(matmul)] = transposes
        swap = {last - 1: last, last: last - 1}
        eqn.inputs = [swapped]
        eqn.params = {**eqn.params, "dims": tuple(swap.get(d, d) for d in dims)}
    graph.eqns = [new for e in graph.eqns for new in (*before.get(id(e), ()), e)]
    return graph


def _transpose(v: Var, matmul: Eqn, ids: count) -> Eqn:
    """``v`` with its last two dimensions swapped: a ``permute`` (a view) made for ``matmul``."""
    n = len(v.shape)
    dims = (*range(n - 2), n - 1, n - 2)
    out = Var(next(ids), tuple(v.shape[d] for d in dims), v.dtype, "eqn")
    return Eqn(PRIMITIVES["permute"], [v], {"dims": dims}, [out], matmul.source)
