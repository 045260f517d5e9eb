"""What every masked function shares: the canonical mask of an input, the dims it reduces over,
and the value a masked-out element takes so that the plain reduction ignores it.

A masked-out element is replaced by the *identity* of the reduction (``0`` for ``sum``, ``1``
for ``prod``, ``-inf`` for ``amax``, ...), the value that leaves the result unchanged. The
replacement is an :func:`ember.where`, so gradients flow to the masked-in elements only.
"""

from __future__ import annotations

import math
from typing import Any

import ember
from ember.errors import ArgumentTypeError, IndexOutOfRange, ShapeError
from ember.masked.tensor import MaskedTensor
from ember.ops.dims import normalize_dims
from ember.tensor import Tensor

DimOrDims = int | tuple[int, ...] | list[int] | None


def is_masked_tensor(obj: Any, /) -> bool:
    """True when ``obj`` is a :class:`ember.masked.MaskedTensor`.

    Example:
        >>> mt = ember.masked.masked_tensor(ember.tensor([1.0, 2.0]), ember.tensor([True, False]))
        >>> ember.masked.is_masked_tensor(mt), ember.masked.is_masked_tensor(ember.ones(2))
        (True, False)
    """
    return isinstance(obj, MaskedTensor)


def unwrap(input: Any, mask: Tensor | None, op: str,
           names: tuple[str, str] = ("input", "mask")) -> tuple[Tensor, Tensor | None]:
    """The data and mask masked function ``op`` works on (its arguments called ``names``). A
    MaskedTensor brings its own mask; an explicit ``mask`` as well masks out more (the two are
    and-ed)."""
    for name, value, optional in ((names[0], input, False), (names[1], mask, True)):
        if not isinstance(value, (Tensor, MaskedTensor)) and not (optional and value is None):
            kinds = "an ember.Tensor or None" if optional else "an ember.Tensor or a MaskedTensor"
            raise ArgumentTypeError(f"masked {op}: {name} must be {kinds}, got "
                                    f"{type(value).__name__}. Hint: wrap it with ember.tensor(...)")
    if not is_masked_tensor(input):
        return input, mask
    data, own = input.get_data(), input.get_mask()
    return data, own if mask is None else own & input_mask(data, mask)


def input_mask(input: Tensor, mask: Tensor) -> Tensor:
    """``mask`` broadcast to ``input``'s shape as a bool tensor (torch's canonical input mask)."""
    if tuple(mask.shape) == tuple(input.shape):
        return mask if mask.dtype == ember.bool else mask.to(ember.bool)
    if mask.ndim > input.ndim:
        raise IndexError(f"masked: mask of shape {tuple(mask.shape)} has more dimensions than "
                         f"the input of shape {tuple(input.shape)}; a mask must broadcast to "
                         "the input")
    try:
        return ember.broadcast_to(mask, input.shape).to(ember.bool)
    except ShapeError:
        raise ShapeError(f"masked: mask of shape {tuple(mask.shape)} does not broadcast to the "
                         f"input of shape {tuple(input.shape)}. Hint: give the mask the input's "
                         "trailing dims (size 1 where it is the same along that dim)") from None


def canonical_dims(dim: DimOrDims, ndim: int, op: str) -> tuple[int, ...]:
    """``dim`` as a sorted tuple of non-negative dims (:func:`ember.ops.dims.normalize_dims`);
    ``None`` and ``()`` mean all dims. A 0-d input has one dim, 0 (or -1), as in torch.masked."""
    if dim is None or (isinstance(dim, (tuple, list)) and not dim):
        return tuple(range(ndim))
    return normalize_dims(dim, max(ndim, 1), f"masked {op}")


def first_dim(dim: DimOrDims, ndim: int, op: str) -> int:
    """The one dim of a function along a dim (``median``, ``softmax``, ``cumsum``, ...): the
    first of ``canonical_dims``, as torch.masked takes it from a tuple or ``None``."""
    dims = canonical_dims(dim, ndim, op)
    if not dims:
        raise IndexOutOfRange(f"masked {op}: a 0-d input needs dim=0 or dim=-1, got "
                              f"dim={dim}")
    return dims[0]


def dims_arg(dims: tuple[int, ...]) -> tuple[int, ...] | None:
    """What Ember's reductions take for "these dims": ``None`` for a 0-d input's empty tuple."""
    return dims or None


_IDENTITY_OPS = {"sum": 0, "cumsum": 0, "prod": 1, "cumprod": 1}
_LOWEST_OPS = ("amax", "argmax", "logaddexp", "logsumexp")
_HIGHEST_OPS = ("amin", "argmin")


def reduction_identity(op: str, input: Tensor, ord: float = 2.0) -> Tensor:
    """The 0-d tensor (input's dtype) that ``op`` ignores: ``op(identity, x) == x``."""
    dtype = input.dtype
    if op in _IDENTITY_OPS:
        value: float = _IDENTITY_OPS[op]
    elif op == "norm":
        if ord == -math.inf and not dtype.is_floating_point:
            raise TypeError(f"masked norm: ord=-inf needs a floating point input, got {dtype}")
        value = math.inf if ord == -math.inf else 0
    elif op == "median":
        return ember.tensor(math.nan, dtype=dtype)
    elif op in _LOWEST_OPS + _HIGHEST_OPS and dtype != ember.bool:
        value = ember.dtypes.extreme(dtype, highest=op in _HIGHEST_OPS)
    else:
        raise TypeError(f"masked {op}: no identity value for {dtype} input. Hint: convert the "
                        "input to a floating point dtype first")
    return ember.tensor(value, dtype=dtype)


def fill_masked_out(op: str, input: Tensor, mask: Tensor | None, ord: float = 2.0) -> Tensor:
    """``input`` with its masked-out elements replaced by ``op``'s identity."""
    if mask is None:
        return input
    return ember.where(input_mask(input, mask), input, reduction_identity(op, input, ord))
