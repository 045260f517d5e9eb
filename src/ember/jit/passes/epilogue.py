"""Batch-1 products with their epilogue: a one-row ``matmul`` (a Linear layer on one sample)
read only by the addition of a bias, and maybe then a ``relu``, becomes one kernel
(:meth:`~ember.jit.kernels.Kernel.row_product`). Where eager runs the product on numba's
threads (:mod:`ember.backend.gemv`), the kernel adds the bias and applies the relu to each
sum as it is made, in the same pass, rounding each step as eager's calls do, so the values
are eager's bit for bit; elsewhere, and for ``bias + x @ W.T`` (which NaN's sign a sum of two
keeps follows the order of its operands), it makes eager's calls. A batch-1 MLP's layer is
then one Python call, not three, and its output is not read and written twice more.
"""

from __future__ import annotations

from ember.jit.ir import Effect, Eqn, Graph, Var
from ember.jit.kernels import Kernel, elementwise


def fuse_epilogues(graph: Graph) -> Graph:
    """Replaces each one-row ``matmul`` whose product only a bias's ``add`` (then maybe a
    ``relu``) reads, and that addition's kernel, by one kernel of the three.

    Example:
        >>> g = fuse_epilogues(g)  # v7 = relu(add(matmul(v1, v3), v5)): linear_relu(v1, v3, v5)
    """
    uses = graph.uses()
    made = {v: e for e in graph.eqns for v in e.outputs}
    at = {id(e): i for i, e in enumerate(graph.eqns)}
    effects = [i for i, e in enumerate(graph.eqns) if isinstance(e.prim, Effect)]
    taken: dict[int, Eqn] = {}  # id of an epilogue's equation -> the kernel's
    dropped: set[int] = set()
    for eqn in graph.eqns:
        after = _epilogue(eqn)
        if after is None:
            continue
        for product, bias in (after[0].inputs, after[0].inputs[::-1]):
            matmul = made.get(product)
            if matmul is not None and uses.get(product) == 1 and \
                    _one_row(matmul, bias, after[0].outputs[0]) and \
                    not any(at[id(matmul)] < i < at[id(eqn)] for i in effects):  # (it moves)
                kernel = Kernel.row_product(matmul, after)
                taken[id(eqn)] = Eqn(kernel, list(kernel.inputs), {}, list(eqn.outputs),
                                     eqn.source)
                dropped.add(id(matmul))
                break
    graph.eqns = [taken.get(id(e), e) for e in graph.eqns if id(e) not in dropped]
    return graph


def _epilogue(eqn: Eqn) -> list[Eqn] | None:
    """The steps of ``eqn`` if they are an ``add`` of two values, maybe then a ``relu`` of
    its sum (a fused kernel or the lone addition); else None."""
    steps = eqn.prim.eqns if isinstance(eqn.prim, Kernel) and eqn.prim.fused else \
        [eqn] if elementwise(eqn) else []
    names = [e.prim.name for e in steps]
    if names not in (["add"], ["add", "relu"]) or steps[0].inputs[0] is steps[0].inputs[1]:
        return None
    return steps


def _one_row(matmul: Eqn, bias: Var, total: Var) -> bool:
    """Whether ``matmul`` is a plain product of one row by a matrix, and adding ``bias`` to it
    (giving ``total``) adds one value to each column."""
    if getattr(matmul.prim, "name", None) != "matmul" or matmul.params.get("compute") is not None:
        return False
    (a, b), product = matmul.inputs, matmul.outputs[0]
    n = b.shape[-1] if len(b.shape) == 2 else None
    return len(a.shape) in (1, 2) and a.shape[:-1] in ((), (1,)) and n is not None and \
        total.shape == product.shape and bias.shape[-1:] == (n,) and \
        all(d == 1 for d in bias.shape[:-1]) and bias.dtype is product.dtype
