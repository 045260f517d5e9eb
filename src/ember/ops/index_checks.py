"""Index range checks: integer indices must lie in range, which NumPy would wrap (negative
entries) or fail on deep inside; eagerly checked at once, under a transform by the
``index_check`` primitive, so that compiled code checks each call's indices too."""

from __future__ import annotations

from typing import Any

from ember import dtypes
from ember.backend import MetaArray
from ember.errors import IndexOutOfRange, IndexTypeError
from ember.ops.primitive import DISPATCH, Primitive, apply, primitive
from ember.tensor import Tensor


def out_of_range(op: str, index: int, dim: int, size: int) -> IndexOutOfRange:
    """The error for index ``index`` outside dim ``dim`` of size ``size`` (kept as its
    ``index`` attribute, for a caller's hint)."""
    error = IndexOutOfRange(f"{op}: index {index} is out of bounds for dimension {dim} with "
                            f"size {size}")
    error.index = index
    return error


def first_out_of_range(a: Any, size: int) -> int | None:
    """The first entry of the integer array ``a`` outside ``[0, size)``, or None when all lie
    in it. For a primitive's ``forward``, so that eager and compiled code check alike; one
    ``max`` over ``a`` read as unsigned, where negative entries are huge. A meta array has no
    entries to check."""
    if a.size == 0 or isinstance(a, MetaArray):
        return None
    unsigned = a.view(f"u{a.itemsize}") if a.dtype.kind == "i" else a
    if int(unsigned.max()) < size:
        return None
    return int(a[(a < 0) | (a >= size)].reshape(-1)[0])


def check_index_range(idx: Tensor, size: int, dim: int, op: str, negative: bool) -> Tensor:
    """``idx``, every entry checked to lie in ``[0, size)`` (or in ``[-size, size)`` when
    ``negative``): IndexOutOfRange otherwise, where NumPy would wrap negative entries silently.
    Eagerly the check runs here; under a transform (a trace, vmap) it is the ``index_check``
    op, so that compiled code checks each call's indices too."""
    if DISPATCH.handler is not None:
        return apply(IndexCheck, idx, size=size, dim=dim, op=op, negative=negative)
    _check_range(idx._data, size, dim, op, negative)
    return idx


def _check_range(a: Any, size: int, dim: int, op: str, negative: bool) -> None:
    bad = first_out_of_range(a + size if negative else a, 2 * size if negative else size)
    if bad is not None:
        raise out_of_range(op, bad - size if negative else bad, dim, size)


@primitive
class IndexCheck(Primitive):
    """An integer index, unchanged, once every entry is checked to lie in ``[0, size)`` (or
    ``[-size, size)`` with ``negative``) (see :func:`check_index_range`)."""

    name = "index_check"
    differentiable = False

    def forward(self, xp, idx, *, size, dim, op, negative):
        _check_range(idx, size, dim, op, negative)
        return idx.view()  # (a new array object: the same one would read as a write to idx)

    def infer(self, idx, *, size, dim, op, negative):
        return idx


def check_integer(idx: Tensor, op: str, what: str = "index") -> None:
    """Refuses an index tensor that is not int64 or int32 (IndexTypeError naming ``op`` and
    ``what``; PyTorch takes no other integer dtype either)."""
    if idx.dtype not in (dtypes.int64, dtypes.int32):
        raise IndexTypeError(f"{op}: {what} must be an integer tensor (int64 or int32), got "
                             f"{idx.dtype.name}")
