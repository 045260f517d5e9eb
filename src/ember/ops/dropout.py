"""Dropout: ``dropout`` (independent elements) and ``dropout1d/2d/3d`` (whole channels), and
the SELU-preserving ``alpha_dropout`` and ``feature_alpha_dropout``.

The kept elements are scaled by ``1 / (1 - p)`` so the expected value is unchanged. The mask
is drawn with the ``bernoulli`` sampling primitive, from ``generator=`` or the default
generator (``ember.manual_seed`` makes it repeatable); the output is ``input * mask``, so the
gradient is the same mask.
"""

from __future__ import annotations

import math
import warnings

from ember.errors import (
    ArgumentError,
    DTypeError,
    ShapeError,
    is_floating_input,
    refuse_non_tensor,
)
from ember.layouts import format_of, is_dense
from ember.ops.creation import full, zeros
from ember.ops.int_args import as_number
from ember.ops.overrides import TENSOR_LIKE, handle
from ember.ops.random import Generator, bernoulli, probability_dtype
from ember.ops.shape import permute
from ember.tensor import Tensor

__all__: list[str] = []


def _check(op: str, input: Tensor, p: float, drawn: bool) -> None:
    """``p`` always; the dtype only where a mask is ``drawn`` (which needs a floating input;
    see :func:`_undrawn` for the results PyTorch gives any input)."""
    if type(p) is not float:
        as_number(p, op, "p")  # (a string: a TypeError naming the op; numbers pass)
    if not 0.0 <= p <= 1.0:
        raise ArgumentError(f"{op}: dropout probability has to be between 0 and 1, but got {p}")
    if not drawn:
        if not isinstance(input, Tensor):
            refuse_non_tensor(op, "input", input)
    elif not is_floating_input(op, "input", input):
        raise DTypeError(f"{op}: expected a floating input, got {input.dtype.name}")


def _undrawn(op: str, input: Tensor, p: float, training: bool, inplace: bool) -> Tensor | None:
    """PyTorch's results that draw no mask, for an input of any dtype: the input itself in
    evaluation, with ``p == 0`` or no elements; ``input * 0`` with ``p == 1`` (zeros of its
    dtype, NaN kept). None where a mask is to be drawn (a floating input only)."""
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if p == 1.0:
        zero = zeros((), dtype=input.dtype, device=input.device)
        return input.mul_(zero) if inplace else input * zero
    _check(op, input, p, drawn=True)
    return None


def _draw(input: Tensor, mask_shape: tuple[int, ...], keep: float,
          generator: Generator | None) -> Tensor:
    """A 0/1 mask of ``mask_shape``, 1 with probability ``keep``. A whole-size mask is laid
    out as a dense ``input`` (PyTorch's ``empty_like``), so that the masked result keeps a
    channels-last or transposed input's layout, as PyTorch's."""
    dims = None
    if mask_shape == tuple(input.shape) and not input._data.flags.c_contiguous and \
            is_dense(input._data):
        dims = format_of(input).dims
        mask_shape = tuple(mask_shape[d] for d in dims)
    probs = full(mask_shape, keep, dtype=probability_dtype(input.dtype), device=input.device)
    mask = bernoulli(probs, generator=generator)
    mask = mask if mask.dtype is input.dtype else mask.to(input.dtype)
    if dims is not None:  # (drawn in memory order, viewed back in the input's)
        mask = permute(mask, tuple(sorted(range(len(dims)), key=dims.__getitem__)))
    return mask


def _masked(input: Tensor, p: float, mask_shape: tuple[int, ...], inplace: bool,
            generator: Generator | None) -> Tensor:
    """``input`` times a scaled 0/1 mask of ``mask_shape`` (broadcast over the rest)."""
    mask = _draw(input, mask_shape, 1.0 - p, generator) * (1.0 / (1.0 - p))
    return input.mul_(mask) if inplace else input * mask


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False, *,
            generator: Generator | None = None) -> Tensor:
    """Zeroes each element with probability ``p`` and scales the rest by ``1 / (1 - p)``;
    the identity when not ``training`` or ``p == 0``.

    Example:
        >>> y = F.dropout(ember.ones(4, 4), p=0.5, generator=ember.Generator().manual_seed(0))
        >>> sorted(set(y.flatten().tolist()))
        [0.0, 2.0]
    """
    if type(input) in TENSOR_LIKE:
        return handle(dropout, (input, p, training),
                      {"inplace": inplace, "generator": generator})
    _check("dropout", input, p, drawn=False)
    out = _undrawn("dropout", input, p, training, inplace)
    return out if out is not None else _masked(input, p, tuple(input.shape), inplace, generator)


def _feature_dropout(op: str, spatial: int, input: Tensor, p: float, training: bool,
                     inplace: bool, generator: Generator | None) -> Tensor:
    _check(op, input, p, drawn=False)
    if input.ndim == spatial + 2:
        channels = 2  # (N, C, *spatial)
    elif input.ndim == spatial + 1:
        channels = 1  # (C, *spatial), one unbatched sample
        if spatial == 2:
            warnings.warn(f"{op}: received a 3-D input; interpreting it as (N, C, L) and "
                          "dropping whole channels, as PyTorch does. Use dropout1d for "
                          "(N, C, L) inputs.", stacklevel=3)
            channels = 2
    elif spatial == 1:
        raise ShapeError(f"{op}: expected a 2-D or 3-D input, got shape {tuple(input.shape)}")
    else:  # PyTorch's deprecated reading: (N, C, *) for dropout2d, (C, *) for dropout3d
        channels = 2 if spatial == 2 else 1
        warnings.warn(f"{op}: received a {input.ndim}-D input, which PyTorch deprecates; "
                      f"dropping whole slices along the first {channels} dimension(s) as it "
                      "does. Use dropout for elementwise dropout.", stacklevel=3)
    out = _undrawn(op, input, p, training, inplace)
    if out is not None:
        return out
    if input.ndim < channels:
        raise ShapeError(f"{op}: feature dropout needs at least {channels} dimension(s) in "
                         f"training, got shape {tuple(input.shape)}")
    shape = tuple(input.shape[:channels]) + (1,) * (input.ndim - channels)
    return _masked(input, p, shape, inplace, generator)


def channel_dropout(input: Tensor, p: float, training: bool, inplace: bool) -> Tensor:
    """Zeroes whole channels (one draw per ``(N, C)`` entry) of an ``(N, C, *)`` input of any
    rank with probability ``p``: ``torch.feature_dropout``."""
    op = "feature_dropout"
    _check(op, input, p, drawn=False)
    out = _undrawn(op, input, p, training, inplace)
    if out is not None:
        return out
    if input.ndim < 2:
        raise ShapeError(f"{op}: feature dropout requires at least 2 dimensions (N, C, *) in "
                         f"the input, got shape {tuple(input.shape)}")
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    return _masked(input, p, shape, inplace, None)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False, *,
              generator: Generator | None = None) -> Tensor:
    """Zeroes whole channels of a (N, C, L) or (C, L) input with probability ``p``.

    Example:
        >>> F.dropout1d(ember.ones(2, 3, 4), 0.5).shape
        ember.Size([2, 3, 4])
    """
    return _feature_dropout("dropout1d", 1, input, p, training, inplace, generator)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False, *,
              generator: Generator | None = None) -> Tensor:
    """Zeroes whole channels of a (N, C, H, W) input with probability ``p``.

    Example:
        >>> F.dropout2d(ember.ones(2, 3, 4, 4), 0.5).shape
        ember.Size([2, 3, 4, 4])
    """
    return _feature_dropout("dropout2d", 2, input, p, training, inplace, generator)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False, *,
              generator: Generator | None = None) -> Tensor:
    """Zeroes whole channels of a (N, C, D, H, W) or (C, D, H, W) input with probability
    ``p``."""
    return _feature_dropout("dropout3d", 3, input, p, training, inplace, generator)


_SELU_NEGATIVE = 1.7580993408473766  # -selu(-inf) = scale * alpha: where dropped units sit


def _alpha_masked(op: str, input: Tensor, p: float, training: bool, inplace: bool,
                  mask_shape: tuple[int, ...], generator: Generator | None) -> Tensor:
    """Dropped units set to SELU's negative saturation, then an affine map ``a·x + b`` that
    keeps zero mean and unit variance (the self-normalizing networks paper's constants)."""
    _check(op, input, p, drawn=False)
    out = _undrawn(op, input, p, training, inplace)
    if out is not None:
        return out
    keep = _draw(input, mask_shape, 1.0 - p, generator)
    a = 1.0 / math.sqrt((_SELU_NEGATIVE ** 2 * p + 1) * (1 - p))
    shift = (keep - 1) * (_SELU_NEGATIVE * a) + _SELU_NEGATIVE * a * p
    if inplace:
        return input.mul_(keep * a).add_(shift)
    return input * (keep * a) + shift


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                  inplace: bool = False, *, generator: Generator | None = None) -> Tensor:
    """Dropout for SELU networks: each element is dropped with probability ``p`` to SELU's
    negative saturation value, then all are rescaled and shifted so that the mean and
    variance stay those of the input. The identity when not ``training`` (the default).

    Example:
        >>> F.alpha_dropout(ember.ones(3), 0.5)
        tensor([1., 1., 1.])
    """
    return _alpha_masked("alpha_dropout", input, p, training, inplace, tuple(input.shape),
                         generator)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                          inplace: bool = False, *,
                          generator: Generator | None = None) -> Tensor:
    """``alpha_dropout`` of whole channels: one draw per ``(N, C)`` entry of a
    ``(N, C, *)`` input.

    Example:
        >>> F.feature_alpha_dropout(ember.ones(2, 3, 4), 0.2, training=True).shape
        ember.Size([2, 3, 4])
    """
    op = "feature_alpha_dropout"
    if input.ndim < 2 and training and 0 < p < 1 and input.numel():  # (only a draw needs C)
        raise ShapeError(f"{op}: feature dropout needs at least 2 dimensions (N, C, *), got "
                         f"shape {tuple(input.shape)}")
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    return _alpha_masked(op, input, p, training, inplace, shape, generator)
