"""The indices of nonzero entries: the ``nonzero`` primitive (its output size depends on the
data, so it has no shape rule) and its static-shape form ``nonzero_static``, ``argwhere``.
``Tensor.nonzero`` itself, with ``as_tuple``, is in ``indexing.py``, whose boolean masks use it.
"""

from __future__ import annotations

import numpy as np

from ember import dtypes
from ember.errors import ArgumentError, OpError
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive
from ember.tensor import Tensor, method

__all__ = ["nonzero_static", "argwhere"]


@primitive
class Nonzero(Primitive):
    name = "nonzero"
    differentiable = False

    def forward(self, xp, a):
        return xp.argwhere(a).astype(np.int64, copy=False)

    def infer(self, a):
        raise OpError(f"nonzero: the output size depends on the data of {a}, so it has no "
                      "shape rule; ember.nonzero_static(input, size=n) has a fixed number of "
                      "rows")


@primitive
class NonzeroStatic(Primitive):
    """``nonzero``'s first ``size`` rows, padded with ``fill_value``: a static shape."""

    name = "nonzero_static"
    differentiable = False

    def forward(self, xp, a, *, size, fill_value):
        found = xp.argwhere(a)[:size]
        out = xp.full((size, a.ndim), fill_value, dtype=np.int64)
        out[:found.shape[0]] = found
        return out

    def infer(self, a, *, size, fill_value):
        return TensorSpec((size, len(a.shape)), dtypes.int64)


@method()
def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:
    """The first ``size`` rows of :func:`nonzero` (the indices of the nonzero entries), the
    rest filled with ``fill_value``: a ``(size, ndim)`` int64 tensor whose shape does not
    depend on the data, so it traces under ``ember.jit`` and batches under ``vmap``.

    Example:
        >>> ember.nonzero_static(ember.tensor([0, 3, 0, 4]), size=3)
        tensor([[ 1],
                [ 3],
                [-1]])
    """
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0:
        raise ArgumentError(f"nonzero_static: 'size' must be a non-negative integer, got {size!r}")
    return apply(NonzeroStatic, input, size=int(size), fill_value=int(fill_value))


@method()
def argwhere(input: Tensor) -> Tensor:
    """The indices of the nonzero entries as an ``(n, ndim)`` int64 tensor (``nonzero``)."""
    return apply(Nonzero, input)
