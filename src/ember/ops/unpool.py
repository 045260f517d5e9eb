"""Max unpooling: ``max_unpool1d/2d/3d`` put each value back at the flat per-plane index
``max_pool*(return_indices=True)`` gave it, zeros elsewhere; a ``scatter`` into zeros, whose
gradient is a ``gather`` at the same indices."""

from __future__ import annotations

from math import prod
from typing import Any

from ember import dtypes
from ember.errors import DTypeError, IndexOutOfRange, ShapeError
from ember.ops.channels_last_view import pixels_first
from ember.ops.convert import float32_under_autocast
from ember.ops.im2col import batched, ntuple
from ember.ops.index_checks import check_index_range
from ember.tensor import Tensor

__all__: list[str] = []


def _unpool_size(op: str, spatial: tuple[int, ...], kernel: tuple[int, ...],
                 stride: tuple[int, ...], padding: tuple[int, ...],
                 output_size: Any) -> tuple[int, ...]:
    """The output's spatial size: the pooled input's, ``(n - 1)·stride - 2·padding + kernel``,
    or ``output_size`` (its last dims), which must lie strictly within a stride of that."""
    default = tuple((n - 1) * s - 2 * p + k
                    for n, k, s, p in zip(spatial, kernel, stride, padding, strict=True))
    if output_size is None:
        return default
    size = tuple(int(s) for s in output_size)
    nd = len(spatial)
    if len(size) in (nd + 1, nd + 2):
        size = size[-nd:]
    if len(size) != nd:
        raise ShapeError(f"{op}: output_size must have {nd} sizes (or {nd + 2} with N and C), "
                         f"got {tuple(output_size)}")
    for d, (want, base, s) in enumerate(zip(size, default, stride, strict=True)):
        if not base - s < want < base + s:
            raise ShapeError(f"{op}: output_size {size} is invalid: dim {d} must lie strictly "
                             f"between {base - s} and {base + s} (the pooled input's size "
                             f"{base} ± stride)")
    return size


def _max_unpool(op: str, nd: int, input: Tensor, indices: Tensor, kernel_size: Any,
                stride: Any, padding: Any, output_size: Any) -> Tensor:
    if indices.dtype is not dtypes.int64:
        raise DTypeError(f"{op}: indices must be int64 (as max_pool{nd}d(return_indices=True) "
                         f"gives them), got {indices.dtype.name}")
    if tuple(indices.shape) != tuple(input.shape):
        raise ShapeError(f"{op}: input {tuple(input.shape)} and indices "
                         f"{tuple(indices.shape)} must have the same shape")
    x, added = batched(input, nd, op)
    kernel = ntuple(kernel_size, nd, op, "kernel_size")
    steps = kernel if stride is None or (not isinstance(stride, int) and len(stride) == 0) \
        else ntuple(stride, nd, op, "stride")
    pads = ntuple(padding, nd, op, "padding")
    size = _unpool_size(op, tuple(x.shape[2:]), kernel, steps, pads, output_size)
    n, c = x.shape[:2]
    plane, pooled = prod(size), prod(x.shape[2:])  # (no -1 in the reshapes: N or C may be 0)
    try:
        flat = check_index_range(indices.reshape((n, c, pooled)), plane, 2, op, False)
    except IndexOutOfRange as exc:  # (eagerly and while tracing; replayed compiled calls lack it)
        if getattr(exc, "index", plane) < plane:  # (a negative index: no size would do)
            raise
        raise IndexOutOfRange(
            f"{exc}: the indices address an output of spatial size {size}. Hint: if the "
            f"pooled input was larger (an odd size, ceil_mode), pass output_size=its spatial "
            f"size") from None
    if nd == 2 and pixels_first(x) is not None:  # channels-last stays so, as PyTorch's
        out = x.new_zeros((n, plane, c)).scatter(1, flat.transpose(1, 2),
                                                 x.reshape((n, c, pooled)).transpose(1, 2))
        out = out.transpose(1, 2).reshape((n, c) + size)
    else:
        out = x.new_zeros((n, c, plane)).scatter(2, flat, x.reshape((n, c, pooled)))
        out = out.reshape((n, c) + size)
    return out.reshape(out.shape[1:]) if added else out


@float32_under_autocast  # (PyTorch runs it as max_unpool2d, on its CPU float32 list)
def max_unpool1d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None,
                 padding: Any = 0, output_size: Any = None) -> Tensor:
    """The partial inverse of :func:`max_pool1d`: each value of a (N, C, L) or (C, L) input
    placed at its index (from ``return_indices=True``), zeros elsewhere.

    Example:
        >>> x = ember.tensor([[1.0, 3.0, 2.0, 0.0]])
        >>> F.max_unpool1d(*F.max_pool1d(x, 2, return_indices=True), 2)
        tensor([[0., 3., 2., 0.]])
    """
    return _max_unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding,
                       output_size)


@float32_under_autocast
def max_unpool2d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None,
                 padding: Any = 0, output_size: Any = None) -> Tensor:
    """The partial inverse of :func:`max_pool2d`: each value of a (N, C, H, W) or (C, H, W)
    input placed at its flat per-plane index, zeros elsewhere. ``output_size`` picks among
    the sizes that pool to the input's (a stride less or more than the default).

    Example:
        >>> x = ember.arange(16.0).reshape(1, 1, 4, 4)
        >>> values, indices = F.max_pool2d(x, 2, return_indices=True)
        >>> F.max_unpool2d(values, indices, 2)[0, 0, :2]
        tensor([[0., 0., 0., 0.],
                [0., 5., 0., 7.]])
    """
    return _max_unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding,
                       output_size)


@float32_under_autocast
def max_unpool3d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None,
                 padding: Any = 0, output_size: Any = None) -> Tensor:
    """The partial inverse of :func:`max_pool3d` for a (N, C, D, H, W) or (C, D, H, W) input.

    Example:
        >>> values, indices = F.max_pool3d(ember.randn(1, 2, 4, 4, 4), 2, return_indices=True)
        >>> F.max_unpool3d(values, indices, 2).shape
        ember.Size([1, 2, 4, 4, 4])
    """
    return _max_unpool("max_unpool3d", 3, input, indices, kernel_size, stride, padding,
                       output_size)
