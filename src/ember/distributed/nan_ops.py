"""MAX and MIN reductions of floating tensors that propagate NaN, as ``torch.max`` and
``torch.maximum`` do: MPI's built-in ``MAX``/``MIN`` compare with ``<``, so whether a NaN
survives depends on which rank's operand comes first (PyTorch's gloo backend has the same
order dependence: a NaN on one rank reaches some positions of the result and not others).
A NaN on any rank gives NaN, at every position and on every rank."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["nan_propagating_op"]

_OPS: dict[tuple[str, np.dtype], Any] = {}
_UFUNCS = {"MAX": np.maximum, "MIN": np.minimum}


def nan_propagating_op(mpi: Any, name: str, wire: np.dtype) -> Any:
    """The MPI op reducing ``wire`` (a floating dtype) values by ``name`` (``"MAX"`` or
    ``"MIN"``) with NumPy's NaN-propagating ``maximum``/``minimum``; made once per pair."""
    key = (name, np.dtype(wire))
    op = _OPS.get(key)
    if op is None:
        ufunc, dtype = _UFUNCS[name], key[1]

        def reduce(inbuf: Any, inoutbuf: Any, datatype: Any) -> None:
            inout = np.frombuffer(inoutbuf, dtype=dtype)
            ufunc(np.frombuffer(inbuf, dtype=dtype), inout, out=inout)

        op = _OPS[key] = mpi.Op.Create(reduce, commute=True)
    return op
