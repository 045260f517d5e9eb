"""Reductions that ignore masked-out elements: ``sum``, ``prod``, ``amax``, ``amin``,
``argmax``, ``argmin``, ``mean``, ``median``, ``logsumexp``, ``norm``, ``var``, ``std``.

Each takes torch.masked's arguments and returns a plain tensor. ``mask`` (bool, broadcastable to
the input) says which elements take part; ``None`` means all of them. A slice with no masked-in
element gets the reduction's identity (``sum`` 0, ``prod`` 1, ``amax`` -inf, ``norm`` 0, ...),
or ``nan`` where there is none (``mean``, ``median``, ``var``, ``std``). Every function is a
composite of Ember ops, so autograd, ``jit`` and ``vmap`` apply unchanged; gradients reach the
masked-in elements only.
"""

from __future__ import annotations

from typing import Any

import ember
from ember.dtypes import DType
from ember.errors import ArgumentError
from ember.masked.masks import (
    DimOrDims,
    canonical_dims,
    dims_arg,
    fill_masked_out,
    first_dim,
    input_mask,
    unwrap,
)
from ember.tensor import Tensor

__all__ = ["sum", "prod", "amax", "amin", "argmax", "argmin", "mean", "median", "logsumexp",
           "norm", "var", "std"]


def sum(input: Any, dim: DimOrDims = None, *, keepdim: bool = False,
        dtype: DType | None = None, mask: Tensor | None = None) -> Tensor:
    """Sum of the masked-in elements over ``dim`` (all dims when ``None``); 0 where none is.

    Example:
        >>> x = ember.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        >>> m = ember.tensor([[True, False, True], [False, False, False]])
        >>> ember.masked.sum(x, 1, mask=m)
        tensor([4., 0.])
    """
    input, mask = unwrap(input, mask, "sum")
    dims = dims_arg(canonical_dims(dim, input.ndim, "sum"))
    return ember.sum(fill_masked_out("sum", input, mask), dims, keepdim, dtype=dtype)


_BELOW_INT64 = (ember.bool, ember.uint8, ember.int8, ember.int16, ember.int32)


def prod(input: Any, dim: DimOrDims = None, *, keepdim: bool = False,
         dtype: DType | None = None, mask: Tensor | None = None) -> Tensor:
    """Product of the masked-in elements over ``dim``; 1 where none is. As torch.masked, the
    input is converted to ``dtype`` first and then multiplied, so an integer result is int64,
    and an empty list ``dim=[]`` reduces nothing (``()`` and ``None`` reduce all dims).

    Example:
        >>> x = ember.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        >>> m = ember.tensor([[True, False, True], [False, False, False]])
        >>> ember.masked.prod(x, 1, mask=m)
        tensor([3., 1.])
    """
    input, mask = unwrap(input, mask, "prod")
    if dtype is None:
        dtype = ember.int64 if input.dtype in _BELOW_INT64 else input.dtype
    filled = fill_masked_out("prod", input, mask).to(dtype)
    if isinstance(dim, list) and not dim:
        return filled
    return ember.prod(filled, dims_arg(canonical_dims(dim, input.ndim, "prod")), keepdim)


def _extremum(op: str, input: Any, dim: DimOrDims, keepdim: bool, dtype: DType | None,
              mask: Tensor | None) -> Tensor:
    input, mask = unwrap(input, mask, op)
    filled = fill_masked_out(op, input, mask)
    dims = dims_arg(canonical_dims(dim, input.ndim, op))
    return getattr(ember, op)(filled, dims, keepdim).to(dtype or input.dtype)


def amax(input: Any, dim: DimOrDims = None, *, keepdim: bool = False,
         dtype: DType | None = None, mask: Tensor | None = None) -> Tensor:
    """Largest masked-in element over ``dim``; -inf (the dtype's minimum for integers) where
    none is.

    Example:
        >>> x = ember.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        >>> m = ember.tensor([[True, False, False], [False, False, False]])
        >>> ember.masked.amax(x, 1, mask=m)
        tensor([1., -inf])
    """
    return _extremum("amax", input, dim, keepdim, dtype, mask)


def amin(input: Any, dim: DimOrDims = None, *, keepdim: bool = False,
         dtype: DType | None = None, mask: Tensor | None = None) -> Tensor:
    """Smallest masked-in element over ``dim``; inf (the dtype's maximum for integers) where
    none is.

    Example:
        >>> x = ember.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        >>> m = ember.tensor([[False, True, True], [False, False, False]])
        >>> ember.masked.amin(x, 1, mask=m)
        tensor([2., inf])
    """
    return _extremum("amin", input, dim, keepdim, dtype, mask)


def _arg_extremum(op: str, input: Any, dim: int | None, keepdim: bool, dtype: DType | None,
                  mask: Tensor | None) -> Tensor:
    input, mask = unwrap(input, mask, op)
    filled = fill_masked_out(op, input, mask)
    # torch.masked returns the index in the input's dtype unless told otherwise
    return getattr(ember, op)(filled, dim, keepdim).to(dtype or input.dtype)


def argmax(input: Any, dim: int | None = None, *, keepdim: bool = False,
           dtype: DType | None = None, mask: Tensor | None = None) -> Tensor:
    """Index of the largest masked-in element along ``dim`` (of the flattened input when
    ``None``), in the input's dtype unless ``dtype`` says otherwise, as torch.masked does.

    Example:
        >>> x = ember.tensor([[1.0, 9.0, 3.0], [4.0, 5.0, 6.0]])
        >>> m = ember.tensor([[True, False, True], [True, True, False]])
        >>> ember.masked.argmax(x, 1, mask=m, dtype=ember.int64)
        tensor([2, 1])
    """
    return _arg_extremum("argmax", input, dim, keepdim, dtype, mask)


def argmin(input: Any, dim: int | None = None, *, keepdim: bool = False,
           dtype: DType | None = None, mask: Tensor | None = None) -> Tensor:
    """Index of the smallest masked-in element along ``dim``, like :func:`argmax`.

    Example:
        >>> x = ember.tensor([[1.0, 9.0, 3.0], [4.0, 5.0, 6.0]])
        >>> m = ember.tensor([[False, True, True], [False, True, True]])
        >>> ember.masked.argmin(x, 1, mask=m, dtype=ember.int64)
        tensor([2, 1])
    """
    return _arg_extremum("argmin", input, dim, keepdim, dtype, mask)


def _count(input: Tensor, mask: Tensor | None, dim: DimOrDims, keepdim: bool) -> Tensor:
    """How many elements take part in each slice (an int64 tensor)."""
    taking_part = (ember.ones(input.shape, dtype=ember.bool) if mask is None
                   else input_mask(input, mask))
    return sum(taking_part, dim, keepdim=keepdim)


def mean(input: Any, dim: DimOrDims = None, *, keepdim: bool = False,
         dtype: DType | None = None, mask: Tensor | None = None) -> Tensor:
    """Mean of the masked-in elements over ``dim``; nan where none is.

    Example:
        >>> x = ember.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        >>> m = ember.tensor([[True, False, True], [False, False, False]])
        >>> ember.masked.mean(x, 1, mask=m)
        tensor([2., nan])
    """
    input, mask = unwrap(input, mask, "mean")
    canonical_dims(dim, input.ndim, "mean")  # (errors name mean, not the sum it takes)
    out_dtype = dtype or input.dtype
    if not _inexact(out_dtype):
        source = "Input" if dtype is None else "Optional"
        raise ArgumentError(f"mean(): Could not infer output dtype. {source} dtype must be either "
                            f"a floating point or complex dtype. Got: {out_dtype}")
    total = sum(input, dim, keepdim=keepdim, dtype=out_dtype, mask=mask)
    return total / _count(input, mask, dim, keepdim)


def median(input: Any, dim: int = -1, *, keepdim: bool = False, dtype: DType | None = None,
           mask: Tensor | None = None) -> Tensor:
    """Median of the masked-in elements along ``dim`` (the lower of the two middle ones); nan
    where none is. Integer inputs are computed in float32 and must have no such slice.

    Example:
        >>> x = ember.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        >>> m = ember.tensor([[True, False, True], [False, False, False]])
        >>> ember.masked.median(x, 1, mask=m)
        tensor([1., nan])
    """
    input, mask = unwrap(input, mask, "median")
    d = first_dim(dim, input.ndim, "median")
    is_float = input.dtype.is_floating_point
    values = input if is_float else input.to(ember.float32)
    output = ember.nanmedian(fill_masked_out("median", values, mask), d, keepdim).values
    if is_float:
        return output
    if bool(ember.isnan(output).any()):
        raise ArgumentError("masked median expects no fully masked out rows if dtype is not "
                            "floating point. Hint: convert the input to a floating point dtype to "
                            "get nan for them")
    return output.to(dtype or input.dtype)


def logsumexp(input: Any, dim: DimOrDims = None, *, keepdim: bool = False,
              dtype: DType | None = None, mask: Tensor | None = None) -> Tensor:
    """``log(sum(exp(x)))`` over the masked-in elements; -inf where none is.

    Example:
        >>> x = ember.tensor([[0.0, 5.0, 0.0], [4.0, 5.0, 6.0]])
        >>> m = ember.tensor([[True, False, True], [False, False, False]])
        >>> ember.masked.logsumexp(x, 1, mask=m)
        tensor([0.6931,   -inf])
    """
    input, mask = unwrap(input, mask, "logsumexp")
    dims = dims_arg(canonical_dims(dim, input.ndim, "logsumexp"))
    filled = fill_masked_out("logsumexp", input, mask)
    return ember.logsumexp(filled, dims, keepdim).to(dtype or input.dtype)


def norm(input: Any, ord: float = 2.0, dim: DimOrDims = None, *, keepdim: bool = False,
         dtype: DType | None = None, mask: Tensor | None = None) -> Tensor:
    """Vector ``ord``-norm of the masked-in elements over ``dim``; 0 where none is (inf for
    ``ord=-inf``).

    Example:
        >>> x = ember.tensor([[3.0, 2.0, 4.0], [4.0, 5.0, 6.0]])
        >>> m = ember.tensor([[True, False, True], [False, False, False]])
        >>> ember.masked.norm(x, 2.0, 1, mask=m)
        tensor([5., 0.])
    """
    input, mask = unwrap(input, mask, "norm")
    dims = dims_arg(canonical_dims(dim, input.ndim, "norm"))
    filled = fill_masked_out("norm", input, mask, ord)
    return ember.linalg.vector_norm(filled, ord, dims, keepdim, dtype=dtype or input.dtype)


def _correction(unbiased: bool | None, correction: float | None) -> float:
    if unbiased is not None and correction is not None:
        raise ArgumentError("masked var/std: give only one of unbiased and correction")
    if correction is not None:
        return float(correction)
    return 0.0 if unbiased is False else 1.0


def _inexact(dtype: DType) -> bool:
    return dtype.is_floating_point or dtype.is_complex


def _variance(input: Any, dim: DimOrDims, unbiased: bool | None, correction: float | None,
              keepdim: bool, dtype: DType | None, mask: Tensor | None) -> Tensor:
    input, mask = unwrap(input, mask, "var/std")
    canonical_dims(dim, input.ndim, "var/std")  # (errors name var/std, not the sum it takes)
    correction_ = _correction(unbiased, correction)
    if dtype is None:
        dtype = input.dtype if _inexact(input.dtype) else ember.float32
    compute_dtype = dtype if _inexact(dtype) else ember.float32
    count = _count(input, mask, dim, keepdim=True)
    # centre the filled input: masked-out nan/inf would reach the gradients through 0 * inf
    filled = fill_masked_out("sum", input, mask)
    centred = filled - sum(filled, dim, keepdim=True, dtype=dtype) / count
    total = sum(centred * centred.conj(), dim, keepdim=keepdim, dtype=compute_dtype, mask=mask)
    count = count.reshape(total.shape)
    if correction_ != 0:
        real = ember.abs(total).dtype
        count = ember.clamp(count.to(real) - correction_, min=0)
    return (total / count).to(dtype)


def var(input: Any, dim: DimOrDims = None, unbiased: bool | None = None, *,
        correction: float | None = None, keepdim: bool = False, dtype: DType | None = None,
        mask: Tensor | None = None) -> Tensor:
    """Variance of the masked-in elements over ``dim``, divided by ``count - correction``
    (``correction`` 1 by default, 0 with ``unbiased=False``); nan where no element is.

    Example:
        >>> x = ember.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        >>> m = ember.tensor([[True, False, True], [False, False, False]])
        >>> ember.masked.var(x, 1, mask=m)
        tensor([2., nan])
    """
    return _variance(input, dim, unbiased, correction, keepdim, dtype, mask)


def std(input: Any, dim: DimOrDims = None, unbiased: bool | None = None, *,
        correction: float | None = None, keepdim: bool = False, dtype: DType | None = None,
        mask: Tensor | None = None) -> Tensor:
    """Standard deviation of the masked-in elements: the square root of :func:`var`.

    Example:
        >>> x = ember.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        >>> m = ember.tensor([[True, False, True], [False, False, False]])
        >>> ember.masked.std(x, 1, correction=0, mask=m)
        tensor([1., nan])
    """
    return ember.sqrt(_variance(input, dim, unbiased, correction, keepdim, dtype, mask))
