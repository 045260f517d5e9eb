"""Causal products: attention's matrix products whose operand is zero above its diagonal, or
whose result is read only on and below it, skip the quarter of their work that cannot matter
(:func:`ember.backend.gemm.triangular_matmul`; measured on gpt's (16, 4, 128, 128) products
on 2 cores: 9-43 % faster each).

What the pass proves, from a constant causal mask ``m`` (``m[..., i, j]`` is ``j > i``):

* zero above the diagonal: ``where(m, 0, x)`` (times a finite constant), and
  ``softmax(where(m, -inf, x), dim=-1)`` (``exp(-inf) == 0``);
* read only on and below it: a value whose readers are each ``where(m, c, ·)`` (or a kernel
  ending in it) with ``c`` not made from it, an elementwise step whose result is so read, or
  ``softmax_grad(·, y)`` with ``y`` zero above (there it is multiplied by ``y``'s zeros; the
  skipped quarter is set to 0).

Only triangles of at least :data:`MIN_SIZE` rows are split. The skipped terms are zeros, but
BLAS sums the shorter products in another order: values may differ from eager's in the last
bits (seen: 1e-6 relative on gpt's scores).
"""

from __future__ import annotations

import numpy as np

from ember.jit.ir import Eqn, Graph, Var
from ember.jit.kernels import Kernel, elementwise

MIN_SIZE = 64  # rows of a triangle from which halving it pays (measured at 128)


def skip_causal_quarters(graph: Graph) -> Graph:
    """Replaces each ``matmul`` of a causal triangle by one that skips its unneeded quarter.

    Example:
        >>> g = skip_causal_quarters(g)  # v37 = matmul(softmax(masked), v): matmul_triangular
    """
    facts = _Facts(graph)
    for i, eqn in enumerate(graph.eqns):
        if getattr(eqn.prim, "name", None) != "matmul" or eqn.params.get("compute") is not None:
            continue
        zeros = facts.skippable(eqn)
        if zeros is not None:
            kernel = Kernel.triangular(eqn, zeros)
            graph.eqns[i] = Eqn(kernel, list(eqn.inputs), {}, eqn.outputs, eqn.source)
    return graph


class _Facts:
    """What the graph's constants and equations prove about values above the diagonal."""

    def __init__(self, graph: Graph) -> None:
        self.consts = graph.consts
        self.made = {v: e for e in graph.eqns for v in e.outputs}
        self.readers: dict[Var, list[Eqn]] = {}
        for e in graph.eqns:
            for v in dict.fromkeys(e.inputs):
                self.readers.setdefault(v, []).append(e)
        self.escapes = graph.live_roots()

    def skippable(self, eqn: Eqn) -> str | None:
        """Which quarter of ``eqn``'s product need not be computed, if any."""
        a, b = eqn.inputs
        out = eqn.outputs[0]
        if min(len(a.shape), len(b.shape)) < 2:
            return None
        size = self.zero_above(a)
        if size and a.shape[-2:] == (size, size):
            return _split(size, "a_lower")
        swapped = self.made.get(a)
        if swapped is not None and _swaps_last_two(swapped):
            size = self.zero_above(swapped.inputs[0])
            if size and a.shape[-2:] == (size, size):
                return _split(size, "a_upper")
        size = self.zero_above(b)
        if size and b.shape[-2:] == (size, size):
            return _split(size, "b_lower")
        size = out.shape[-1]
        if out.shape[-2] == size and self.read_below(out, size):
            return _split(size, "out_lower")
        return None

    def read_below(self, v: Var, size: int) -> bool:
        """Whether every reader of ``v`` ignores its values above the diagonal."""
        readers = self.readers.get(v)
        return bool(readers) and v not in self.escapes and \
            all(self.ignores_above(r, v, size) for r in readers)

    def mask(self, v: Var) -> int:
        """``T`` if ``v`` is a constant causal mask over ``(T, T)`` (broadcast), else 0."""
        array = self.consts.get(v)
        if array is None or array.dtype != np.bool_ or array.ndim < 2 or \
                array.shape[-1] != array.shape[-2]:
            return 0
        size = array.shape[-1]
        causal = np.triu(np.ones((size, size), np.bool_), 1)
        return size if np.array_equal(array, np.broadcast_to(causal, array.shape)) else 0

    def scalar(self, v: Var) -> float | None:
        array = self.consts.get(v)
        return float(array) if array is not None and array.size == 1 else None

    def above(self, v: Var, inner: dict[Var, Eqn] | None = None) -> tuple[int, float] | None:
        """``(T, c)`` if ``v`` equals the constant ``c`` wherever the causal mask over
        ``(T, T)`` is set; ``inner`` holds a kernel's own equations."""
        eqn = (inner or {}).get(v) or self.made.get(v)
        if eqn is None:
            return None
        if isinstance(eqn.prim, Kernel):
            return self.above(v, {e.outputs[0]: e for e in eqn.prim.eqns}) \
                if eqn.prim.fused else None
        name = eqn.prim.name
        if name == "where":
            size, fill = self.mask(eqn.inputs[0]), self.scalar(eqn.inputs[1])
            return (size, fill) if size and fill is not None else None
        if name == "mul":
            for x, y in (eqn.inputs, eqn.inputs[::-1]):
                known, factor = self.above(x, inner), self.scalar(y)
                if known and factor is not None and np.isfinite(factor):
                    return known[0], known[1] * factor
        if name == "softmax" and eqn.params["dim"] in (-1, len(v.shape) - 1):
            known = self.above(eqn.inputs[0], inner)
            if known and known[1] == -np.inf:
                return known[0], 0.0
        return None

    def zero_above(self, v: Var) -> int:
        known = self.above(v)
        return known[0] if known and known[1] == 0.0 else 0

    def ignores_above(self, reader: Eqn, v: Var, size: int) -> bool:
        """Whether ``reader``'s result needs none of ``v``'s values above the diagonal (those
        set to 0, for ``softmax_grad``, whose ``y`` is 0 there)."""
        kernel = reader.prim if isinstance(reader.prim, Kernel) else None
        if kernel is not None and not kernel.fused:
            return False
        last = kernel.eqns[-1] if kernel else reader
        if last.prim.name == "where":
            made_inside = {e.outputs[0] for e in kernel.eqns} if kernel else set()
            fill = last.inputs[1]
            return self.mask(last.inputs[0]) == size and fill is not v and \
                fill not in made_inside
        if kernel is None and elementwise(reader):  # position by position: ask its readers
            result = reader.outputs[0]
            return result.shape == v.shape and self.read_below(result, size)
        if reader.prim.name == "softmax_grad" and reader.inputs[0] is v and \
                reader.inputs[1] is not v and reader.params["dim"] in (-1, len(v.shape) - 1):
            return self.zero_above(reader.inputs[1]) == size
        return False


def _swaps_last_two(eqn: Eqn) -> bool:
    dims = eqn.params.get("dims") if eqn.prim.name == "permute" else None
    n = len(dims or ())
    return n >= 2 and tuple(dims) == (*range(n - 2), n - 1, n - 2)


def _split(size: int, zeros: str) -> str | None:
    return zeros if size >= MIN_SIZE and size % 2 == 0 else None
