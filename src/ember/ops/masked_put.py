"""Writes through a boolean mask, which PyTorch reads as a masked fill, and its dtype rule for
values written through advanced indices (``index_put_`` and
``x[index] = values`` with index tensors, lists or masks): the values must have the tensor's
own dtype (a float64 tensor into a float32 one is refused, not silently rounded; a complex one
into a real one does not lose its imaginary part). A basic index (ints, slices, None, ...) is
a copy into a view and casts; a single boolean mask with one value is a masked fill, which
casts the value after checking that the tensor's dtype holds it. Under a transform, such a
fill is a ``where`` (:func:`masked_fill_write`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import dtypes
from ember.errors import DTypeError
from ember.ops.fits import check_fits
from ember.ops.inplace import inplace
from ember.ops.primitive import DISPATCH
from ember.tensor import Tensor

__all__ = ["check_put_dtype", "masked_fill_write"]


def _advanced(k: Any) -> bool:
    """Whether one entry of a key indexes as a tensor (a 0-d integer tensor is an int)."""
    if isinstance(k, Tensor):
        return k.ndim > 0 or k.dtype is dtypes.bool_
    return isinstance(k, (list, tuple, range, np.ndarray)) and np.ndim(k) > 0


def _is_mask(k: Any) -> bool:
    if isinstance(k, Tensor):
        return k.ndim > 0 and k.dtype in (dtypes.bool_, dtypes.uint8)
    return np.asarray(k).dtype.kind == "b"


def check_put_dtype(op: str, x: Tensor, entries: tuple, values: Tensor,
                    accumulate: bool = False) -> None:
    """Refuses ``values`` of another dtype than ``x``'s written through the index ``entries``
    (a key's items; None and slices are basic) unless the write casts in PyTorch: no index
    tensor among them, or one boolean mask with a single value and no ``accumulate``.

    Example:
        >>> ember.zeros(3)[ember.tensor([0, 1])] = ember.tensor([1.5, 2.5], dtype=ember.float64)
        Traceback (most recent call last):
        ember.errors.DTypeError: __setitem__: the values are float64 but the tensor is float32; ...
    """
    indices = [k for k in entries if _advanced(k)]
    if not indices and op == "__setitem__":
        return
    if len(indices) == 1 and not accumulate and values.numel() == 1 and _is_mask(indices[0]):
        if DISPATCH.handler is None and not values.is_meta:
            check_fits(op, values.item(), x.dtype)
        return
    raise DTypeError(f"{op}: the values are {values.dtype.name} but the tensor is "
                     f"{x.dtype.name}; a write through index tensors, lists or masks takes "
                     "values of the tensor's own dtype, as in PyTorch (only a copy into a slice, "
                     f"or one value under one mask, converts). Hint: pass values.to({x.dtype})")


def masked_fill_write(x: Tensor, mask: Any, value: Tensor) -> bool:
    """Under a transform (``jit``, ``vmap``), ``x[mask] = number`` with a bool mask of ``x``'s
    leading dims as ``where(mask, number, x)``: the same values, and no step whose size
    depends on the data (which a traced graph cannot hold). False for other keys."""
    if not (isinstance(mask, Tensor) and mask.dtype == dtypes.bool and value.ndim == 0 and
            0 < mask.ndim <= x.ndim and tuple(mask.shape) == tuple(x.shape[:mask.ndim])):
        return False
    from ember.ops.select import where  # (select imports what imports this module)
    cond = mask.reshape(*mask.shape, *(1,) * (x.ndim - mask.ndim))
    inplace(x, "__setitem__", lambda old: where(cond, value, old))
    return True
