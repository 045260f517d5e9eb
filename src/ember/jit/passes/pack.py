"""Packing: in an inference graph, each convolution's weight is copied once into the memory
order its GEMM reads, ``(*kernel, Cin, Cout)``, and the convolution reads that copy as the
same ``(Cout, Cin, *kernel)`` tensor (a permuted view). Hoisting then caches the copy between
calls, and the convolution no longer lays its weight out at every call, nor hands the GEMM a
transposed operand (measured: ``cnn``'s 32→64 3×3 layer at batch 1, 103 → 77 µs). The values
agree with eager's to rounding: for the other layout OpenBLAS may sum in another order (seen:
7e-7 in float32 on a 5×5 stride-2 layer). The cost: the graph keeps a second copy of its
convolutions' weights. A weight whose memory is shared outside Ember's version counting (a
NumPy array of it the user holds) is packed again at every call (``VersionCounter.stamp``).
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import count

from ember.jit.ir import Eqn, Graph, Var
from ember.jit.passes.hoist import parameters
from ember.ops.conv import pointwise
from ember.ops.primitive import PRIMITIVES


def pack_conv_weights(graph: Graph) -> Graph:
    """Makes each ``conv`` of an inference graph read its parameter weight packed for its GEMM
    (``permute`` → ``copy`` → ``permute`` back), once per weight.

    Example:
        >>> g = pack_conv_weights(g)   # conv(x, w) becomes conv(x, permute(copy(permute(w))))
    """
    fixed = parameters(graph)
    if fixed is None:
        return graph
    packed: dict[Var, Var] = {}
    eqns: list[Eqn] = []
    ids = count(graph.unused_id())
    for eqn in graph.eqns:
        # (a 1×1 stride-1 one reads its weight as it lies: (Cout, Cin) for an NCHW input)
        weight = eqn.inputs[1] if eqn.prim.name == "conv" and not pointwise(
            eqn.inputs[1].shape[2:], eqn.params["padding"], eqn.params["stride"]) else None
        if weight is not None and weight in fixed:  # (a packed weight is not: made by an eqn)
            if weight not in packed:
                packed[weight] = _pack(weight, eqn, eqns, ids)
            eqn.inputs[1] = packed[weight]
        eqns.append(eqn)
    graph.eqns = eqns
    return graph


def _pack(weight: Var, conv: Eqn, eqns: list[Eqn], ids: Iterator[int]) -> Var:
    """Appends the equations that pack ``weight`` to ``eqns`` (their variables numbered from
    ``ids``); returns the packed variable."""
    nd = len(weight.shape) - 2
    order = (*range(2, nd + 2), 1, 0)  # (*kernel, Cin, Cout)
    back = tuple(order.index(d) for d in range(nd + 2))
    rows_shape = tuple(weight.shape[d] for d in order)
    value = weight
    for prim, params, shape in (("permute", {"dims": order}, rows_shape),
                                ("copy", {}, rows_shape),
                                ("permute", {"dims": back}, weight.shape)):
        out = Var(next(ids), shape, weight.dtype, "eqn")
        eqns.append(Eqn(PRIMITIVES[prim], [value], params, [out], conv.source))
        value = out
    return value
