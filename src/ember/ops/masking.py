"""Masked ops: ``masked_fill`` and ``masked_select``, written with ``where`` and boolean
indexing (so they need no rules of their own)."""

from __future__ import annotations

from typing import Any

from ember import dtypes
from ember.autograd.graph import name_node
from ember.errors import DTypeError, ShapeError
from ember.ops.broadcast import broadcast_shapes, expand
from ember.ops.fits import check_fits
from ember.ops.indexing import _getitem, as_values
from ember.ops.inplace import bind_inplace
from ember.ops.primitive import refuse_limited
from ember.ops.select import where
from ember.tensor import Tensor, method

__all__ = ["masked_fill", "masked_select"]


def _check_mask(op: str, mask: Tensor) -> None:
    if mask.dtype is not dtypes.bool_:
        raise DTypeError(f"{op}: only supports boolean masks, but got mask with dtype "
                         f"{mask.dtype.name}. Hint: compare first, e.g. mask = x > 0")


@method()
def masked_fill(input: Tensor, mask: Tensor, value: Any) -> Tensor:
    """``input`` with ``value`` (a number or 0-d tensor) where ``mask`` (bool, broadcasting)
    is True.

    Example:
        >>> ember.zeros(3).masked_fill(ember.tensor([True, False, True]), 2.0)
        tensor([2., 0., 2.])
    """
    refuse_limited("masked_fill", input.dtype)
    _check_mask("masked_fill", mask)
    if isinstance(value, Tensor) and value.ndim:
        raise ShapeError(f"masked_fill: only supports a 0-dimensional value tensor, but got "
                         f"shape {tuple(value.shape)}")
    broadcast_shapes(tuple(mask.shape), tuple(input.shape), op="masked_fill")
    check_fits("masked_fill", value, input.dtype)
    return name_node(where(mask, as_values(value, input, "masked_fill"), input),
                     "MaskedFillBackward0")


@method()
def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    """A 1-D tensor of the entries of ``input`` where ``mask`` (bool, broadcasting) is True.

    Its size depends on the data: fine eagerly; under ``ember.jit.compile`` or ``vmap`` it
    raises (``ember.where(mask, input, 0)`` keeps the shape).

    Example:
        >>> ember.tensor([1, 2, 3]).masked_select(ember.tensor([True, False, True]))
        tensor([1, 3])
    """
    refuse_limited("masked_select", input.dtype, dtypes.ALL_LIMITED - dtypes.WIDE_UNSIGNED)
    _check_mask("masked_select", mask)
    shape = broadcast_shapes(input.shape, mask.shape, op="masked_select")
    return _getitem(expand(input, shape), expand(mask, shape))


bind_inplace(masked_fill_=masked_fill)
