"""``ember.export.prims``: each primitive as a function of tensors — the ``call_function``
targets of exported graphs, as ``torch.ops.aten`` ops are torch's (``ember.export.prims.relu``
calls the ``relu`` primitive with its params as keyword arguments, eagerly and recorded by
autograd), and :func:`sym_size`, a tensor's run-time size.

Example:
    >>> ember.export.prims.mul(ember.ones(2), ember.full((2,), 3.0))
    tensor([3., 3.])
"""

from __future__ import annotations

import operator
from typing import Any

from ember.fx import tracer as fx_trace
from ember.library.custom_op import CustomOpPrimitive
from ember.ops.creation import arange, full
from ember.ops.primitive import PRIMITIVES, Primitive, apply
from ember.ops.select import where
from ember.tensor import Tensor

__all__ = ["FUNCTIONS", "PrimitiveOp", "band", "op", "sym_size"]


class PrimitiveOp:
    """A primitive as a function: ``op(*tensors, **params)`` is ``apply(primitive, ...)``
    (a tuple for a primitive with several outputs)."""

    def __init__(self, prim: Primitive) -> None:
        self.prim = prim
        self.__name__ = self.__qualname__ = prim.name
        # where generated code finds it (ember.fx renders the call by this path)
        self._qualified_name = f"ember.export.prims.{prim.name}" \
            if prim.name.isidentifier() else None

    def __call__(self, *inputs: Tensor, **params: Any) -> Any:
        if fx_trace.active and (traced := fx_trace.record_call(self, inputs, params)) is not None:
            return traced  # (symbolic_trace of an exported module: a node)
        if isinstance(self.prim, CustomOpPrimitive):
            # (through the op, whose setup_context makes the ctx its backward reads)
            outs = self.prim.op.apply(inputs, (params["args"], params["counts"]))
            return outs if len(outs) > 1 else outs[0]
        return apply(self.prim, *inputs, **params)

    def __repr__(self) -> str:
        return f"<primitive {self.prim.name}>"


_OPS: dict[str, PrimitiveOp] = {}


def op(prim: Primitive) -> PrimitiveOp:
    """The function of ``prim`` (one per primitive; a replaced primitive gets a new one)."""
    found = _OPS.get(prim.name)
    if found is None or found.prim is not prim:
        found = _OPS[prim.name] = PrimitiveOp(prim)
    return found


def sym_size(t: Tensor, dim: int) -> int:
    """``t.shape[dim]`` at run time: where an exported graph reads a dynamic size
    (``torch.ops.aten.sym_size.int``).

    Example:
        >>> ember.export.prims.sym_size(ember.ones(2, 5), 1)
        5
    """
    if fx_trace.active and (traced := fx_trace.record_call(sym_size, (t, dim), {})) is not None:
        return traced
    return t.shape[dim]


sym_size._qualified_name = "ember.export.prims.sym_size"

def band(rows: int, cols: int, low: int | None, high: int | None, inside: Any, outside: Any,
         *, dtype: Any) -> Tensor:
    """A ``rows x cols`` constant of ``dtype``: ``inside`` where column ``j`` and row ``i``
    have ``low <= j - i <= high`` (None: no bound), ``outside`` elsewhere. An exported graph
    makes a triangular or diagonal constant that follows dynamic sizes with it at run time (a
    causal mask, ``tril(ones(T, T))``, is ``band(T, T, None, 0, True, False)``; ``eye(T)`` is
    ``band(T, T, 0, 0, 1.0, 0.0)``).

    Example:
        >>> ember.export.prims.band(2, 3, None, 0, True, False, dtype=ember.bool)
        tensor([[ True, False, False],
                [ True,  True, False]])
    """
    if fx_trace.active and (traced := fx_trace.record_call(
            band, (rows, cols, low, high, inside, outside), {"dtype": dtype})) is not None:
        return traced
    offset = arange(cols).reshape(1, cols) - arange(rows).reshape(rows, 1)
    mask = full((rows, cols), True)
    if low is not None:
        mask = mask & (offset >= low)
    if high is not None:
        mask = mask & (offset <= high)
    return where(mask, full((), inside, dtype=dtype), full((), outside, dtype=dtype))


band._qualified_name = "ember.export.prims.band"

#: the functions an exported graph calls besides primitives (a dynamic size's arithmetic, the
#: constants that follow it, a primitive's outputs), by their names in a saved program
FUNCTIONS = {"sym_size": sym_size, "full": full, "arange": arange, "band": band,
             "getitem": operator.getitem,
             "mul": operator.mul, "add": operator.add, "sub": operator.sub,
             "truediv": operator.truediv, "floordiv": operator.floordiv}


def __getattr__(name: str) -> PrimitiveOp:
    prim = PRIMITIVES.get(name)
    if prim is None:
        raise AttributeError(f"ember.export.prims has no primitive {name!r}")
    return op(prim)
