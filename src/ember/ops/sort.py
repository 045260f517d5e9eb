"""Sorting: sort, argsort, msort, topk, kthvalue, median.

Two primitives without gradients compute indices: ``argsort`` and ``topk`` (the indices of
the k largest or smallest entries). The values are ``gather(input, dim, indices)``, so their
gradient is gather's rule: the output gradient goes to exactly the returned positions, as in
PyTorch. NaN counts as larger than every number (last ascending, first descending).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ember import dtypes, return_types
from ember.autograd.graph import name_node
from ember.errors import IndexOutOfRange, ShapeError, bool_flag
from ember.ops.gather import take_along
from ember.ops.int_args import as_int
from ember.ops.primitive import Primitive, TensorSpec, apply, complex_error, primitive
from ember.ops.reduce import no_bool, normalize_dim
from ember.ops.shape import flatten, narrow, squeeze
from ember.tensor import Tensor, method

__all__ = ["sort", "argsort", "msort", "topk", "kthvalue", "median"]


def comparable(a: Any) -> Any:
    """``a`` in a dtype whose sort and partition order NaN last: bfloat16 (NumPy's sort
    compares it pairwise, and NaN stops the order) as float32, which holds it exactly."""
    return a.astype(np.float32) if a.dtype.kind == "V" else a


def _argsort(xp, a, axis: int, descending: bool, stable: bool):
    if a.ndim == 0:
        return xp.zeros((), np.int64)
    a = comparable(a)
    if not descending:
        return xp.argsort(a, axis=axis, kind="stable" if stable else None)
    # descending, stable, NaN first: sort the reversed array ascending, then reverse back
    n = a.shape[axis]
    return (n - 1) - xp.flip(xp.argsort(xp.flip(a, axis), axis=axis, kind="stable"), axis)


@primitive
class Argsort(Primitive):
    name = "argsort"
    limited_dtypes = dtypes.WIDE_UNSIGNED
    differentiable = False

    def forward(self, xp, a, *, dim, descending, stable):
        if a.dtype.kind == "c":  # (complex numbers have no order)
            raise complex_error(self.name, a.dtype)
        return _argsort(xp, a, dim, descending, stable).astype(np.int64, copy=False)

    def infer(self, a, *, dim, descending, stable):
        return TensorSpec(a.shape, dtypes.int64)


@primitive
class TopkIndices(Primitive):
    """Indices of the ``k`` largest (or smallest) entries along ``dim``, ordered when
    ``sorted``. Unsorted smallest ones still put the k-th smallest at position ``k - 1``
    (``kthvalue`` relies on it): NumPy's partition guarantees that."""

    name = "topk"
    differentiable = False

    def forward(self, xp, a, *, k, dim, largest, sorted):
        if a.dtype.kind == "c":  # (complex numbers have no order)
            raise complex_error(self.name, a.dtype)
        if a.ndim == 0:
            return xp.zeros((), np.int64)
        n = a.shape[dim]
        if k == 0:
            return xp.zeros(a.shape[:dim] + (0,) + a.shape[dim + 1:], np.int64)
        if 2 * k >= n:  # a full sort costs about what a partition and a sort of k would
            idx = _argsort(xp, a, dim, largest, True)
            return xp.take(idx, xp.arange(k), axis=dim).astype(np.int64, copy=False)
        kth = n - k if largest else k - 1
        part = xp.argpartition(comparable(a), kth, axis=dim)
        idx = xp.take(part, xp.arange(n - k, n) if largest else xp.arange(k), axis=dim)
        if sorted:
            order = _argsort(xp, xp.take_along_axis(a, idx, dim), dim, largest, True)
            idx = xp.take_along_axis(idx, order, dim)
        return idx.astype(np.int64, copy=False)

    def infer(self, a, *, k, dim, largest, sorted):
        shape = list(a.shape)
        if shape:
            shape[dim] = k
        return TensorSpec(tuple(shape), dtypes.int64)


@method()
def argsort(input: Tensor, dim: int = -1, descending: bool = False, *,
            stable: bool = False) -> Tensor:
    """The int64 indices that sort ``input`` along ``dim``; ``stable`` keeps equal entries in
    their original order. No gradient.

    Example:
        >>> ember.tensor([3, 1, 2]).argsort()
        tensor([1, 2, 0])
    """
    dim = normalize_dim(dim, input.ndim, "argsort")
    return apply(Argsort, input, dim=dim, descending=bool_flag("argsort", "descending", descending),
                 stable=bool_flag("argsort", "stable", stable))


@method()
def sort(input: Tensor, dim: int = -1, descending: bool = False, *,
         stable: bool | None = False) -> return_types.sort:
    """``(values, indices)``: ``input`` sorted along ``dim`` and where each value came from;
    the values are differentiable. ``stable=None`` is False, as in PyTorch (not argsort's).

    Example:
        >>> ember.tensor([3.0, 1.0, 2.0]).sort(descending=True)
        ember.return_types.sort(
        values=tensor([3., 2., 1.]),
        indices=tensor([0, 2, 1]))
    """
    dim = normalize_dim(dim, input.ndim, "sort")
    indices = apply(Argsort, input, dim=dim, descending=bool_flag("sort", "descending", descending),
                    stable=stable is not None and bool_flag("sort", "stable", stable))
    return return_types.sort(take_along(input, dim, indices), indices)


@method()
def msort(input: Tensor) -> Tensor:
    """``input`` sorted along its first dimension (the values of ``sort(input, dim=0)``)."""
    return sort(input, 0).values


def _check_k(op: str, input: Tensor, k: int, dim: int, low: int) -> int:
    n = input.shape[dim] if input.ndim else 1
    if not low <= k <= n:
        raise IndexOutOfRange(f"{op}: k ({k}) is out of range for dimension {dim} of size {n} "
                              f"(shape {tuple(input.shape)}); expected {low} <= k <= {n}")
    return n


@method()
def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True,
         sorted: bool = True) -> return_types.topk:
    """``(values, indices)`` of the ``k`` largest (``largest=False``: smallest) entries along
    ``dim``, in order when ``sorted``; the values are differentiable.

    Example:
        >>> ember.tensor([1.0, 5.0, 3.0]).topk(2)
        ember.return_types.topk(
        values=tensor([5., 3.]),
        indices=tensor([1, 2]))
    """
    no_bool("topk", input)
    bool_flag("topk", "largest", largest)
    bool_flag("topk", "sorted", sorted)
    dim = normalize_dim(dim, input.ndim, "topk")
    _check_k("topk", input, k, dim, 0 if input.ndim else 1)
    indices = apply(TopkIndices, input, k=as_int(k, "topk", "k"), dim=dim, largest=largest,
                    sorted=sorted)
    return return_types.topk(take_along(input, dim, indices), indices)


def _kth_indices(input: Tensor, k: int, dim: int) -> Tensor:
    """Indices of the k-th smallest entries, keeping ``dim`` (with size 1)."""
    indices = apply(TopkIndices, input, k=k, dim=dim, largest=False, sorted=False)
    return narrow(indices, dim, k - 1, 1) if input.ndim else indices


def _selected(result: type, input: Tensor, dim: int, indices: Tensor, keepdim: bool,
              grad_name: str) -> Any:
    """``(values, indices)`` of ``input`` at ``indices``; the values' ``grad_fn`` is named
    ``grad_name``, PyTorch's name for the op."""
    return reduced_pair(result, take_along(input, dim, indices), indices, dim,
                        keepdim or not input.ndim, grad_name)


def reduced_pair(result: type, values: Tensor, indices: Tensor, dim: int, keepdim: bool,
                 grad_name: str) -> Any:
    """``result(values, indices)`` of a reduction along ``dim`` (kept or squeezed away), the
    values' ``grad_fn`` named ``grad_name``, PyTorch's name for the op."""
    if not keepdim:
        values, indices = squeeze(values, dim), squeeze(indices, dim)
    return result(name_node(values, grad_name), indices)


@method()
def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False) -> return_types.kthvalue:
    """``(values, indices)`` of the ``k``-th smallest entry along ``dim`` (k from 1).

    Example:
        >>> ember.tensor([3.0, 1.0, 2.0]).kthvalue(2)
        ember.return_types.kthvalue(
        values=tensor(2.),
        indices=tensor(2))
    """
    no_bool("kthvalue", input)
    bool_flag("kthvalue", "keepdim", keepdim)
    dim = normalize_dim(dim, input.ndim, "kthvalue")
    _check_k("kthvalue", input, k, dim, 1)
    indices = _kth_indices(input, as_int(k, "kthvalue", "k"), dim)
    return _selected(return_types.kthvalue, input, dim, indices, keepdim, "KthvalueBackward0")


def shared_among_ties(flat: Tensor, value: Tensor) -> Tensor:
    """``value`` (0-d, one of ``flat``'s entries, not differentiable), differentiable in
    ``flat`` with its gradient shared evenly among the entries equal to it (NaN ones for a
    NaN), as PyTorch's whole-tensor median and nanmedian share it: ``(tied / k) · flat``
    summed, which is ``value`` itself up to rounding, so its value is taken as is where it is
    finite (an infinite or NaN sum already is exact)."""
    if not flat.dtype.is_floating_point:  # (no gradient)
        return value
    from ember.ops.compare import isfinite, isnan
    from ember.ops.reduce import sum
    from ember.ops.select import where

    seen = flat.detach()
    tied = (seen == value) | (isnan(seen) & isnan(value))
    total = sum(where(tied, flat, 0) * (tied.to(flat.dtype) / sum(tied)))
    return where(isfinite(value), value + (total - total.detach()), total)


def median_of_all(op: str, input: Tensor, along: Callable[[Tensor], Tensor]) -> Tensor:
    """``op`` (median or nanmedian) of all of ``input``'s entries, a 0-d tensor: ``along``
    picks it from the flattened, detached entries, and :func:`shared_among_ties` makes it
    differentiable; NaN where there are no entries, which an integer dtype cannot hold."""
    if input.dtype.is_complex:
        raise complex_error(op, input.dtype)
    flat = flatten(input)
    if flat.shape[0] == 0:
        if not input.dtype.is_floating_point:
            raise ShapeError(f"{op}: the input of shape {tuple(input.shape)} is empty, and its "
                             f"median would be NaN, which {input.dtype.name} cannot hold. Hint: "
                             f"convert it with .float() first")
        from ember.ops.creation import full

        return full((), float("nan"), dtype=input.dtype, device=input.device)
    return shared_among_ties(flat, along(flat.detach()).reshape(()))


@method()
def median(input: Tensor, dim: int | None = None, keepdim: bool = False
           ) -> Tensor | return_types.median:
    """The lower median: of all entries (a 0-d tensor), or ``(values, indices)`` along
    ``dim``. A row holding NaN has median NaN (at the first NaN), as in PyTorch.

    Example:
        >>> ember.tensor([4.0, 1.0, 3.0, 2.0]).median()
        tensor(2.)
    """
    no_bool("median", input)
    bool_flag("median", "keepdim", keepdim)
    if dim is None:
        return name_node(median_of_all("median", input, lambda flat: median(flat, 0).values),
                         "MedianBackward0")
    dim = normalize_dim(dim, input.ndim, "median")
    n = input.shape[dim] if input.ndim else 1
    if n == 0:
        raise IndexOutOfRange(f"median: the reduced dimension {dim} of shape "
                              f"{tuple(input.shape)} is empty")
    indices = _kth_indices(input, (n + 1) // 2, dim)
    if input.dtype.is_floating_point and input.ndim:
        from ember.ops.compare import isnan
        from ember.ops.reduce import argmax
        from ember.ops.select import where

        nan = isnan(input)
        first = argmax(nan.to(dtypes.uint8), dim, keepdim=True)
        indices = where(take_along(nan, dim, first), first, indices)
    return _selected(return_types.median, input, dim, indices, keepdim, "MedianBackward1")
