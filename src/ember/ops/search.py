"""Searching and counting: sorted insertion points (searchsorted, bucketize), histograms
(histc, bincount), distinct values (unique, unique_consecutive) and membership (isin).

None has a gradient. Five primitives:

- ``searchsorted``: PyTorch's binary search, run on all values at once (about ``log2(n)``
  vectorized steps), with its exact comparisons, so NaNs land where PyTorch puts them;
- ``histc``: equal-width bins, optionally one histogram per row (what vmap uses);
- ``isin``: membership after promoting both operands to one dtype (NaN is in nothing);
- ``bincount``, ``unique``/``unique_consecutive``: their output size depends on the data,
  so, like ``nonzero``, they have no shape rule: compiled (``ember.jit``) or vmapped code
  that calls them gets a clear error instead of a size baked in from one call.

``bucketize`` is ``searchsorted`` with the arguments swapped.
"""

from __future__ import annotations

from math import prod
from typing import Any

import numpy as np

from ember import dtypes
from ember.errors import (
    ArgumentError,
    DTypeError,
    IndexOutOfRange,
    OpError,
    ShapeError,
    dtype_name,
    type_name,
)
from ember.ops.convert import cast, result_dtype
from ember.ops.creation import scalar_tensor
from ember.ops.dims import normalize_dim
from ember.ops.int_args import as_float, as_int
from ember.ops.primitive import (
    Primitive,
    TensorSpec,
    apply,
    complex_error,
    primitive,
    refuse_complex,
)
from ember.ops.sort import comparable
from ember.tensor import Tensor, method

__all__ = ["searchsorted", "bucketize", "histc", "bincount", "unique", "unique_consecutive",
           "isin"]


def data_dependent(op: str, spec: Any, what: str, hint: str) -> OpError:
    """The error of an op whose output size depends on its input's values (as ``nonzero``)."""
    return OpError(f"{op}: the output size depends on the data of {spec} ({what}), so it has no "
                   f"shape rule in a compiled or vmapped function. Hint: {hint}")


# -- searchsorted ------------------------------------------------------------------------------
def _binary_search(xp: Any, seq: Any, vals: Any, sorter: Any, right: bool) -> Any:
    """PyTorch's lower (``right``: upper) bound of every value of ``vals`` (R, M) in the rows
    of ``seq`` (R, n) (``sorter``: the rows read through it), with its comparisons: a step
    goes right unless ``seq[mid] >= v`` (``> v``), so NaN values end at ``n``."""
    n = seq.shape[-1]
    start = xp.zeros(vals.shape, np.int64)
    end = xp.full(vals.shape, n, np.int64)
    rows = xp.arange(seq.shape[0])[:, None]
    for _ in range(n.bit_length()):
        mid = start + ((end - start) >> 1)
        pos = xp.minimum(mid, n - 1)
        if sorter is not None:
            pos = sorter[rows, pos]
        mid_val = seq[rows, pos]
        stay = (mid_val > vals) if right else (mid_val >= vals)
        active = start < end
        start = xp.where(active & ~stay, mid + 1, start)
        end = xp.where(active & stay, mid, end)
    return start


@primitive
class SearchSorted(Primitive):
    """Insertion points of ``values`` in ``sorted_sequence`` (1-D, or with the leading dims of
    ``values``), optionally read through ``sorter``."""

    name = "searchsorted"
    differentiable = False

    def forward(self, xp, seq, vals, *sorter, right, out_int32):
        if seq.dtype.kind == "c" or vals.dtype.kind == "c":  # (complex numbers have no order)
            raise complex_error(self.name, (seq if seq.dtype.kind == "c" else vals).dtype)
        n = seq.shape[-1]
        srt = sorter[0] if sorter else None
        if srt is not None and srt.size and (srt.min() < 0 or srt.max() >= n):
            raise IndexOutOfRange(f"searchsorted: sorter index out of range: its values must lie "
                                  f"in [0, {n}) for boundaries of shape {tuple(seq.shape)}")
        if seq.ndim == 1:
            rows, m = 1, vals.size
        else:
            rows, m = prod(seq.shape[:-1]), vals.shape[-1]
        seq2 = seq.reshape(rows, n)
        out = _binary_search(xp, seq2, vals.reshape(rows, m),
                             None if srt is None else srt.reshape(rows, n), right)
        return out.reshape(vals.shape).astype(np.int32 if out_int32 else np.int64, copy=False)

    def infer(self, seq, vals, *sorter, right, out_int32):
        _check_search_shapes(tuple(seq.shape), tuple(vals.shape))
        return TensorSpec(vals.shape, dtypes.int32 if out_int32 else dtypes.int64)


def _check_search_shapes(seq: tuple, vals: tuple) -> None:
    if not seq:
        raise ShapeError("searchsorted: the boundaries must have at least one dimension, got a "
                         "0-d tensor")
    if len(seq) > 1 and (len(vals) != len(seq) or vals[:-1] != seq[:-1]):
        raise ShapeError(f"searchsorted: boundaries {seq} and values {vals} do not fit: the "
                         "boundaries must be 1-D, or their first N-1 dimensions must match the "
                         "values' first N-1 dimensions. Hint: give the values the boundaries' "
                         "leading shape, e.g. values.expand(...) or one row of boundaries")


def searchsorted(sorted_sequence: Tensor, input: Tensor | float, *, out_int32: bool = False,
                 right: bool = False, side: str | None = None,
                 sorter: Tensor | None = None) -> Tensor:
    """Where each of ``input`` would go in the innermost dimension of ``sorted_sequence`` to
    keep it sorted: the first such index (``right=True`` or ``side="right"``: the last).
    ``sorter`` holds the indices that sort an unsorted sequence. int64 (``out_int32``: int32),
    ``input``'s shape; a number gives a 0-d result. Comparisons run in the promoted dtype and
    follow PyTorch's binary search (a NaN value lands past the end).

    Example:
        >>> ember.searchsorted(ember.tensor([1, 3, 5, 7]), ember.tensor([3, 6, 9]))
        tensor([1, 3, 4])
        >>> ember.searchsorted(ember.tensor([1, 3, 5, 7]), 3, right=True)
        tensor(2)
    """
    if not isinstance(sorted_sequence, Tensor):
        raise TypeError(f"searchsorted: sorted_sequence must be a tensor, got "
                        f"{type_name(sorted_sequence)}")
    if side is not None:
        if side not in ("left", "right"):
            raise ArgumentError(f"searchsorted: side can only be 'left' or 'right', got {side!r}")
        if right and side == "left":
            raise ArgumentError("searchsorted: side and right can't be set to opposites, got "
                                "side='left' while right=True")
        right = side == "right"
    scalar = not isinstance(input, Tensor)
    if scalar and sorted_sequence.ndim != 1:
        raise ShapeError(f"searchsorted: a number as input needs 1-D boundaries, got boundaries "
                         f"of shape {tuple(sorted_sequence.shape)}")
    target = result_dtype(sorted_sequence, input)
    if target is dtypes.bool_:
        raise DTypeError("searchsorted: bool boundaries and values are not supported. Hint: "
                         "convert them with .int() first")
    seq = cast(sorted_sequence, target)
    vals = scalar_tensor(input, target, seq._device) if scalar else cast(input, target)
    _check_search_shapes(tuple(seq.shape), tuple(vals.shape))
    extra = ()
    if sorter is not None:
        if sorter.dtype is not dtypes.int64:
            raise DTypeError(f"searchsorted: sorter must be an int64 tensor, got "
                             f"{sorter.dtype.name}. Hint: pass argsort's output")
        if tuple(sorter.shape) != tuple(seq.shape):
            raise ShapeError(f"searchsorted: sorter {tuple(sorter.shape)} must have the "
                             f"boundaries' shape {tuple(seq.shape)}")
        extra = (sorter,)
    return apply(SearchSorted, seq, vals, *extra, right=bool(right), out_int32=bool(out_int32))


def bucketize(input: Tensor | float, boundaries: Tensor, *, out_int32: bool = False,
              right: bool = False) -> Tensor:
    """The bucket of each of ``input`` among the 1-D, sorted ``boundaries``: ``i`` such that
    ``boundaries[i-1] < x <= boundaries[i]`` (``right=True``: ``boundaries[i-1] <= x <
    boundaries[i]``); ``searchsorted(boundaries, input)``.

    Example:
        >>> ember.bucketize(ember.tensor([1, 5, 3, 9]), ember.tensor([1, 3, 5, 7]))
        tensor([0, 2, 1, 4])
    """
    if not isinstance(boundaries, Tensor) or boundaries.ndim != 1:
        shape = tuple(boundaries.shape) if isinstance(boundaries, Tensor) else "not a tensor"
        raise ShapeError(f"bucketize: boundaries must be a 1-D tensor, got {shape}")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


# -- histograms ---------------------------------------------------------------------------------
@primitive
class Histc(Primitive):
    """``bins`` equal-width bins over ``[min, max]`` (the data's range when they are equal);
    with ``batch``, one histogram per entry of the leading axis (each with its own range)."""

    name = "histc"
    differentiable = False

    def forward(self, xp, a, *, bins, min, max, batch):  # noqa: A002 - PyTorch's names
        if a.dtype.kind == "c":  # (complex numbers have no order)
            raise complex_error(self.name, a.dtype)
        rows = a.shape[0] if batch else 1
        per = prod(a.shape[1:]) if batch else a.size
        x = a.reshape(rows, per)
        lo = xp.full(rows, min, np.float64)
        hi = xp.full(rows, max, np.float64)
        if min == max and per:
            lo = x.min(axis=1).astype(np.float64)
            hi = x.max(axis=1).astype(np.float64)
        same = lo == hi
        lo, hi = xp.where(same, lo - 1, lo), xp.where(same, hi + 1, hi)
        bad = ~(xp.isfinite(lo) & xp.isfinite(hi))
        if bad.any():
            i = int(xp.argmax(bad))
            raise OpError(f"histc: range of [{lo[i]}, {hi[i]}] is not finite (the input holds "
                          "NaN or inf). Hint: pass finite min and max, or drop those values")
        # PyTorch's arithmetic, in the input's dtype: pos = (x - left) * bins / (right - left)
        left = lo.astype(a.dtype)[:, None]
        right = hi.astype(a.dtype)[:, None]
        inside = (x >= left) & (x <= right)
        pos = ((x - left) * np.asarray(bins, a.dtype) / (right - left))
        wild = ~xp.isfinite(pos)
        if wild.any():  # (a range wider than the dtype's largest value: halves do not overflow)
            half = (x / 2 - left / 2) / (right / 2 - left / 2) * np.asarray(bins, a.dtype)
            pos = xp.where(wild, xp.nan_to_num(half, nan=0.0), pos)
        pos = xp.where(inside, pos, 0).astype(np.int64)
        pos = xp.minimum(pos, bins - 1) + xp.arange(rows)[:, None] * bins
        counts = xp.bincount(pos[inside], minlength=rows * bins)
        out = counts.reshape(rows, bins).astype(a.dtype)
        return out if batch else out.reshape(bins)

    def infer(self, a, *, bins, min, max, batch):  # noqa: A002
        return TensorSpec(((a.shape[0],) if batch else ()) + (bins,), a.dtype)


@method()
def histc(input: Tensor, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:  # noqa: A002
    """The histogram of ``input`` (all its elements) in ``bins`` equal-width bins over
    ``[min, max]``; elements outside are ignored, ``max`` falls in the last bin. With ``min ==
    max`` the range is the data's (widened by 1 on each side when that is a single value).
    Floating inputs; the result has ``input``'s dtype.

    Example:
        >>> ember.histc(ember.tensor([1.0, 2.0, 1.0]), bins=4, min=0, max=3)
        tensor([0., 2., 1., 0.])
    """
    if not input.dtype.is_floating_point:
        raise DTypeError(f"histc: expected a floating input, got {input.dtype.name}. Hint: call "
                         ".float() first")
    bins = as_int(bins, "histc", "bins")
    if bins <= 0:  # (RuntimeErrors, as PyTorch's)
        raise ShapeError(f"histc: bins must be > 0, got {bins}")
    lo, hi = as_float(min, "histc", "min"), as_float(max, "histc", "max")
    if lo != hi:
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise OpError(f"histc: range of [{lo}, {hi}] is not finite")
        if lo > hi:
            raise OpError(f"histc: max must be larger than min, got min={lo}, max={hi}")
    return apply(Histc, input, bins=bins, min=lo, max=hi, batch=False)


@primitive
class Bincount(Primitive):
    """Occurrences (or summed ``weights``) of each non-negative integer; its length is
    ``max(input) + 1`` or ``minlength``, whichever is larger: it depends on the data."""

    name = "bincount"
    differentiable = False

    def forward(self, xp, a, *weights, minlength):
        if a.size and a.min() < 0:
            raise OpError(f"bincount: the input holds negative values (the smallest is "
                          f"{a.min()}); bincount counts non-negative integers only")
        if not weights:
            return xp.bincount(a, minlength=minlength).astype(np.int64, copy=False)
        (w,) = weights
        out = xp.bincount(a, weights=w.astype(np.float64), minlength=minlength)
        return out.astype(np.float32 if w.dtype == np.float32 else np.float64, copy=False)

    def infer(self, a, *weights, minlength):
        raise data_dependent("bincount", a, "its max + 1 when that exceeds minlength",
                             "count with a fixed size: ember.zeros(n).index_add(0, x, ones) or "
                             "one_hot(x, n).sum(0)")


@method()
def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """How often each value ``0 … max(input)`` occurs in the 1-D non-negative integer
    ``input`` (int64), or the sum of ``weights`` at its occurrences (float32 for float32
    weights, else float64; int64 zeros for an empty ``input``); at least ``minlength``
    long. Its size depends on the data, so compiled and vmapped functions cannot call it.

    Example:
        >>> ember.bincount(ember.tensor([0, 3, 1, 3]))
        tensor([1, 1, 0, 2])
    """
    if input.ndim != 1 or input.dtype.category != dtypes.INT:
        raise DTypeError(f"bincount: only supports 1-d non-negative integral inputs, got "
                         f"{tuple(input.shape)} {dtype_name('bincount', 'input', input)}")
    minlength = as_int(minlength, "bincount", "minlength")
    if minlength < 0:
        raise ArgumentError(f"bincount: minlength should be >= 0, got {minlength}")
    extra = ()
    if weights is not None and input.numel():  # (no values: int64 zeros whatever the
        # weights, as PyTorch's)
        if weights.ndim != 1 or weights.shape[0] != input.shape[0]:
            raise ShapeError(f"bincount: weights should be 1-d and have the same length as "
                             f"input, got weights {tuple(weights.shape)} for input "
                             f"{tuple(input.shape)}")
        if weights.dtype is dtypes.bool_:  # (counted as 0 and 1, in float64 as PyTorch)
            weights = cast(weights, dtypes.float64)
        extra = (weights,)
    return apply(Bincount, input, *extra, minlength=minlength)


# -- distinct values -----------------------------------------------------------------------------
class _UniqueBase(Primitive):
    """(values, inverse, counts) of the distinct values (``dim``: slices) of the input, in
    sorted order, or, for ``unique_consecutive``, of each run of equal neighbours. NaN equals
    nothing, so each NaN is a value of its own (last, in order of appearance), as in PyTorch."""

    nout = 3
    differentiable = False
    consecutive = False

    def forward(self, xp, a, *, dim):
        if dim is None:
            rows = a.reshape(-1, 1)
        else:
            moved = xp.moveaxis(a, dim, 0)
            rows = moved.reshape(moved.shape[0], prod(moved.shape[1:]))
        n = rows.shape[0]
        if self.consecutive or n == 0:
            perm = None
            s = rows
        else:
            keyed = comparable(rows)
            keys = [keyed[:, k] for k in range(rows.shape[1] - 1, -1, -1)]
            perm = xp.lexsort(keys) if len(keys) > 1 else xp.argsort(keys[0], kind="stable")
            s = rows[perm]
        starts = xp.ones(n, bool)
        if n > 1:
            starts[1:] = (s[1:] != s[:-1]).any(axis=1)
        group = xp.cumsum(starts) - 1
        inverse = xp.empty(n, np.int64)
        if perm is None:
            inverse[...] = group
        else:
            inverse[perm] = group
        first = xp.flatnonzero(starts)
        counts = xp.diff(xp.append(first, n)).astype(np.int64, copy=False)
        picked = s[starts]
        if dim is None:
            return picked.reshape(-1), inverse.reshape(a.shape), counts
        values = xp.moveaxis(picked.reshape((picked.shape[0],) + moved.shape[1:]), 0, dim)
        return xp.ascontiguousarray(values), inverse, counts

    def infer(self, a, *, dim):
        raise data_dependent(self.name, a, "the number of distinct values",
                             "call it outside the compiled or vmapped function; sort keeps a "
                             "fixed size")


@primitive
class Unique(_UniqueBase):
    name = "unique"
    limited_dtypes = dtypes.WIDE_UNSIGNED


@primitive
class UniqueConsecutive(_UniqueBase):
    name = "unique_consecutive"
    limited_dtypes = dtypes.WIDE_UNSIGNED
    consecutive = True


def _unique(prim: Primitive, input: Tensor, return_inverse: bool, return_counts: bool,
            dim: int | None, op: str) -> Any:
    if dim is not None:
        if input.ndim == 0:
            raise IndexOutOfRange(f"{op}: dimension {dim} given, but the input is 0-d and has "
                                  "no dimensions. Hint: pass dim=None")
        dim = normalize_dim(dim, input.ndim, op)
        if any(s == 0 for i, s in enumerate(input.shape) if i != dim):
            raise ShapeError(f"{op}: input {tuple(input.shape)} has dimensions of size 0 other "
                             f"than dim {dim}, so no slice along dim {dim} can be compared")
    values, inverse, counts = apply(prim, input, dim=dim)
    out = (values,) + ((inverse,) if return_inverse else ()) + ((counts,) if return_counts
                                                               else ())
    return out if len(out) > 1 else values


@method()
def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False,  # noqa: A002
           return_counts: bool = False, dim: int | None = None) -> Any:
    """The distinct elements of ``input`` (flattened), or with ``dim`` its distinct slices along
    ``dim``, in ascending (lexicographic) order (also with ``sorted=False``, as PyTorch on the
    CPU); with ``return_inverse`` where each element (slice) went, with ``return_counts`` how
    often each occurs. Each NaN counts as distinct. Its size depends on the data, so compiled
    and vmapped functions cannot call it.

    Example:
        >>> ember.unique(ember.tensor([3, 1, 3, 2]), return_counts=True)
        (tensor([1, 2, 3]), tensor([1, 1, 2]))
    """
    refuse_complex("unique", input)  # (it sorts: complex numbers have no order)
    return _unique(Unique, input, return_inverse, return_counts, dim, "unique")


@method()
def unique_consecutive(input: Tensor, return_inverse: bool = False, return_counts: bool = False,
                       dim: int | None = None) -> Any:
    """``input`` with each run of equal consecutive elements (slices along ``dim``) collapsed to
    one; ``return_inverse`` and ``return_counts`` as in :func:`unique`.

    Example:
        >>> ember.unique_consecutive(ember.tensor([1, 1, 2, 2, 3, 1]))
        tensor([1, 2, 3, 1])
    """
    refuse_complex("unique_consecutive", input)  # (PyTorch has no complex kernel for it)
    return _unique(UniqueConsecutive, input, return_inverse, return_counts, dim,
                   "unique_consecutive")


# -- membership ------------------------------------------------------------------------------------
@primitive
class IsIn(Primitive):
    """Whether each element of ``elements`` occurs in ``test_elements`` (same dtype)."""

    name = "isin"
    differentiable = False

    def forward(self, xp, a, b, *, invert):
        return xp.asarray(xp.isin(a, b, invert=invert))

    def infer(self, a, b, *, invert):
        return TensorSpec(a.shape, dtypes.bool_)


def isin(elements: Tensor | float, test_elements: Tensor | float, *, assume_unique: bool = False,
         invert: bool = False) -> Tensor:
    """Whether each of ``elements`` occurs in ``test_elements`` (either may be a number),
    compared in their promoted dtype; ``invert`` negates. NaN occurs in nothing. A bool tensor
    of ``elements``' shape; ``assume_unique`` is accepted for PyTorch's sake.

    Example:
        >>> ember.isin(ember.tensor([1, 2, 3, 4]), ember.tensor([2, 4]))
        tensor([False,  True, False,  True])
    """
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin: at least one of elements and test_elements must be a tensor")
    target = result_dtype(elements, test_elements)
    if target.is_complex:  # (PyTorch's isin has no complex kernel)
        raise DTypeError(f"isin: {target.name} inputs are not supported, as in PyTorch. Hint: "
                         "compare .real and .imag separately")
    for x in (elements, test_elements):
        if getattr(x, "dtype", None) is dtypes.bool_ or isinstance(x, bool):
            raise DTypeError("isin: bool inputs are not supported. Hint: convert them with "
                             ".int() first")
    dev = (elements if isinstance(elements, Tensor) else test_elements)._device
    a, b = (cast(x, target) if isinstance(x, Tensor) else scalar_tensor(x, target, dev)
            for x in (elements, test_elements))
    return apply(IsIn, a, b, invert=bool(invert))
