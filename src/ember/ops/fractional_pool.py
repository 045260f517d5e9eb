"""Fractional max pooling (Graham, 2014): ``fractional_max_pool2d`` and
``fractional_max_pool3d``, and their ``*_with_indices`` forms.

Along each spatial axis the windows (``kernel_size`` wide) start at pseudo-random offsets
that step by ⌊α⌋ or ⌈α⌉, α = (size − kernel) / (out − 1), drawn from one uniform sample per
(batch, channel, axis): ``_random_samples`` of shape (N, C, 2) or (N, C, 3), the input's dtype,
as in PyTorch. The offsets are PyTorch's, computed in the input's precision, so the same
samples give the same windows, values and indices.

The ``fractional_max_pool_indices`` primitive finds each window's flat per-plane argmax (the
first on ties, the last NaN if any, as PyTorch); the values are a ``gather`` there, so the
gradient scatters back to the winners, as for ``max_pool*(return_indices=True)``.
"""

from __future__ import annotations

from math import prod
from typing import Any

import numpy as np

from ember import dtypes
from ember.errors import ArgumentError, DTypeError, ShapeError
from ember.ops.convert import float32_under_autocast
from ember.ops.im2col import batched, ntuple
from ember.ops.pool import _gather_max, _max_window, _PoolIndices
from ember.ops.primitive import TensorSpec, apply, primitive
from ember.ops.random import rand
from ember.tensor import Tensor

__all__: list[str] = []

_AXES = {2: ("height", "width"), 3: ("time", "height", "width")}
# which of a plane's samples each spatial axis reads: PyTorch's 2-D kernel takes the width's
# from sample 0 and the height's from sample 1; its 3-D kernel reads (T, H, W) in order
_SAMPLE_OF_AXIS = {2: (1, 0), 3: (0, 1, 2)}


def _starts(xp: Any, sample: Any, size: int, out: int, k: int) -> Any:
    """The window starts along one axis for each plane's ``sample`` (an (N, C) array):
    ``⌊(i + u)·α⌋ − ⌊u·α⌋`` for i < out − 1 in the samples' precision, then size − k."""
    starts = xp.empty(sample.shape + (out,), dtype=np.int64)
    if out > 1:
        kind = sample.dtype.type
        alpha = kind(size - k) / kind(out - 1)
        i = xp.arange(out - 1, dtype=sample.dtype)
        u = sample[..., None]
        starts[..., :-1] = ((i + u) * alpha).astype(np.int64) - (u * alpha).astype(np.int64)
    starts[..., -1] = size - k
    return starts


@primitive
class FractionalMaxPoolIndices(_PoolIndices):
    """The flat per-plane index of each fractional window's maximum, (N, C, *counts)."""

    name = "fractional_max_pool_indices"

    def infer(self, x, samples, *, kernel_size, counts):
        return TensorSpec(tuple(x.shape[:2]) + counts, dtypes.int64)

    def forward(self, xp, x, samples, *, kernel_size, counts):
        n, c, *spatial = x.shape
        if not n * prod(counts):  # an empty batch, or an output_ratio rounding an axis to 0
            return xp.zeros((n, c, *counts), dtype=np.int64)
        nd = len(counts)
        # the flat input index of every window element, laid out (N, C, *counts, *kernel)
        flat = 0
        for i, (size, out, k) in enumerate(zip(spatial, counts, kernel_size, strict=True)):
            starts = _starts(xp, samples[:n, :, _SAMPLE_OF_AXIS[nd][i]], size, out, k)
            position = starts[..., None] + xp.arange(k)  # (N, C, out, k)
            lead, trail = (1,) * i, (1,) * (nd - 1 - i)
            flat = flat * size + position.reshape((n, c, *lead, out, *trail, *lead, k, *trail))
        flat = xp.broadcast_to(flat, (n, c, *counts, *kernel_size)).reshape(n, c, -1)
        values = xp.take_along_axis(x.reshape(n, c, -1), flat, axis=2)
        values = values.reshape((n, c, *counts, *kernel_size))
        order = (0, 1, *range(2 + nd, 2 + 2 * nd), *range(2, 2 + nd))
        _, window = _max_window(xp, values.transpose(order), kernel_size)
        flat = flat.reshape((n, c, *counts, prod(kernel_size)))
        return xp.take_along_axis(flat, window[..., None].astype(np.int64), axis=-1)[..., 0]


def _output_size(op: str, nd: int, spatial: tuple[int, ...], output_size: Any,
                 output_ratio: Any) -> tuple[int, ...]:
    if output_size is None and output_ratio is None:
        raise ArgumentError(f"{op} requires specifying either an output_size or an output_ratio")
    if output_size is not None:  # (given both, the function takes output_size, as torch's)
        return ntuple(output_size, nd, op, "output_size")
    ratio = (float(output_ratio),) * nd if isinstance(output_ratio, int | float) else \
        tuple(float(r) for r in output_ratio)
    if len(ratio) == 1:
        ratio *= nd
    if len(ratio) != nd:
        raise ArgumentError(f"{op}: output_ratio must be a number or {nd} numbers, got "
                            f"{output_ratio!r}")
    return tuple(int(size * r) for size, r in zip(spatial, ratio, strict=True))


def _check_samples(op: str, samples: Tensor, x: Tensor, nd: int) -> None:
    n, c = x.shape[:2]
    if samples.ndim != 3 or samples.shape[1] != c or samples.shape[2] != nd or \
            samples.shape[0] < n:
        raise ShapeError(f"{op}: _random_samples must have shape (N', {c}, {nd}) with N' at "
                         f"least the batch size {n} (one sample per batch, channel and "
                         f"spatial axis), got {tuple(samples.shape)}")
    if samples.dtype != x.dtype:
        raise DTypeError(f"{op}: _random_samples must have the input's dtype {x.dtype.name}, "
                         f"got {samples.dtype.name}")


def _fractional_max_pool(op: str, nd: int, input: Tensor, kernel_size: Any, output_size: Any,
                         output_ratio: Any, return_indices: bool,
                         _random_samples: Tensor | None) -> Any:
    x, added = batched(input, nd, op)
    if not x.dtype.is_floating_point:
        raise DTypeError(f"{op}: expected a floating input, got {x.dtype.name}")
    spatial = tuple(x.shape[2:])
    kernel = ntuple(kernel_size, nd, op, "kernel_size")
    out = _output_size(op, nd, spatial, output_size, output_ratio)
    if min(kernel) <= 0 or min(out) < 0:
        raise ShapeError(f"{op}: kernel_size {kernel} must be positive and the output size "
                         f"{out} non-negative (input shape {tuple(input.shape)})")
    # PyTorch's bound: the windows must fit, output + kernel - 1 <= input; its 3-D kernel
    # also refuses equality (windows at every offset), and so does this one
    slack = 0 if nd == 2 else 1
    for axis, size, o, k in zip(_AXES[nd], spatial, out, kernel, strict=True):
        if o + k - 1 + slack > size:
            bound = "<=" if nd == 2 else "<"
            raise ShapeError(f"{op}: pool {axis} {k} too large relative to input {axis} "
                             f"{size} for output {axis} {o} (needs output + kernel - 1 "
                             f"{bound} input)")
    if _random_samples is None:
        _random_samples = rand(x.shape[0], x.shape[1], nd, dtype=x.dtype, device=x.device)
    else:
        _check_samples(op, _random_samples, x, nd)
    indices = apply(FractionalMaxPoolIndices, x.detach(), _random_samples.detach(),
                    kernel_size=kernel, counts=out)
    return _gather_max(x, indices, added, return_indices)


@float32_under_autocast
def fractional_max_pool2d(input: Tensor, kernel_size: Any, output_size: Any = None,
                          output_ratio: Any = None, return_indices: bool = False,
                          _random_samples: Tensor | None = None) -> Any:
    """Fractional max pooling of a (N, C, H, W) or (C, H, W) input to ``output_size``
    (``(oH, oW)`` or one int) or ``output_ratio`` × the input size (numbers in (0, 1)), over
    ``kernel_size`` windows at pseudo-random offsets; ``_random_samples`` (N, C, 2) fixes them.

    Example:
        >>> x = ember.arange(25.0).reshape(1, 1, 5, 5)
        >>> F.fractional_max_pool2d(x, 2, output_size=2,
        ...                         _random_samples=ember.tensor([[[0.5, 0.5]]]))
        tensor([[[[ 6.,  9.],
                  [21., 24.]]]])
    """
    return _fractional_max_pool("fractional_max_pool2d", 2, input, kernel_size, output_size,
                                output_ratio, return_indices, _random_samples)


@float32_under_autocast
def fractional_max_pool3d(input: Tensor, kernel_size: Any, output_size: Any = None,
                          output_ratio: Any = None, return_indices: bool = False,
                          _random_samples: Tensor | None = None) -> Any:
    """Fractional max pooling of a (N, C, T, H, W) or (C, T, H, W) input (see
    :func:`fractional_max_pool2d`); ``_random_samples`` has shape (N, C, 3).

    Example:
        >>> F.fractional_max_pool3d(ember.randn(2, 3, 6, 6, 6), 2, output_ratio=0.5).shape
        ember.Size([2, 3, 3, 3, 3])
    """
    return _fractional_max_pool("fractional_max_pool3d", 3, input, kernel_size, output_size,
                                output_ratio, return_indices, _random_samples)


def fractional_max_pool2d_with_indices(input: Tensor, kernel_size: Any, output_size: Any = None,
                                       output_ratio: Any = None, return_indices: bool = False,
                                       _random_samples: Tensor | None = None
                                       ) -> tuple[Tensor, Tensor]:
    """:func:`fractional_max_pool2d` returning ``(values, indices)`` whatever
    ``return_indices`` says (the flat per-plane indices ``max_unpool2d`` reads).

    Example:
        >>> _, indices = F.fractional_max_pool2d_with_indices(ember.ones(1, 1, 4, 4), 2, 2)
        >>> indices.shape
        ember.Size([1, 1, 2, 2])
    """
    return _fractional_max_pool("fractional_max_pool2d", 2, input, kernel_size, output_size,
                                output_ratio, True, _random_samples)


def fractional_max_pool3d_with_indices(input: Tensor, kernel_size: Any, output_size: Any = None,
                                       output_ratio: Any = None, return_indices: bool = False,
                                       _random_samples: Tensor | None = None
                                       ) -> tuple[Tensor, Tensor]:
    """:func:`fractional_max_pool3d` returning ``(values, indices)`` whatever
    ``return_indices`` says.

    Example:
        >>> _, indices = F.fractional_max_pool3d_with_indices(ember.ones(1, 4, 4, 4), 2, 2)
        >>> indices.shape
        ember.Size([1, 2, 2, 2])
    """
    return _fractional_max_pool("fractional_max_pool3d", 3, input, kernel_size, output_size,
                                output_ratio, True, _random_samples)
