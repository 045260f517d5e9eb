"""Pooling: max, average and adaptive average, over 1, 2 or 3 spatial dimensions.

- Max pooling is the ``max_pool`` primitive: each window's maximum and which of its elements
  won (an int8 per window; ties to the first, as PyTorch). Its gradient is ``window_scatter``
  to the winners and its tangent ``window_gather`` (:mod:`ember.ops.pool_windows`), each the
  other's vjp, so every higher derivative follows. Channels-last 2-D input runs numba's
  loops when installed (:mod:`ember.ops.max_pool_kernel`). With ``return_indices`` the
  ``max_pool_indices`` primitive gives PyTorch's flat per-plane indices and the values are a
  ``gather`` there.
- Average pooling is ``unfold`` + ``sum`` over each window, times a constant reciprocal of
  the divisor (which ``count_include_pad``, ``ceil_mode`` and ``divisor_override`` decide);
  eagerly, windows inside the input are summed in place (``window_sum``, the same values).
- Adaptive max pooling gathers PyTorch's variable windows with index arrays; the values
  again come from a ``gather``.
- Adaptive average pooling: :mod:`ember.ops.adaptive_avg_pool`.

Results are laid out as PyTorch's: channels-last(-3d) inputs stay so where its kernels keep
them, other layouts give C order, and the 1-D pools that PyTorch runs as 2-D ones (average,
adaptive, max with indices or for a gradient) keep an (N, L, C) transposed input's layout.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from functools import lru_cache
from math import prod
from typing import Any

import numpy as np

from ember import dtypes
from ember.autograd.grad_mode import GRAD
from ember.errors import ArgumentError, ShapeError
from ember.layouts import channels_last_strides, contiguous_format, suggested_format
from ember.ops import im2col, max_pool_kernel
from ember.ops.adaptive_avg_pool import adaptive_bounds, pooled_size
from ember.ops.channels_last_view import channels_back, pixels_first
from ember.ops.convert import HALF, float32_under_autocast
from ember.ops.creation import zeros
from ember.ops.gather import take_along
from ember.ops.im2col import batched, ntuple, unfold_nd, windows
from ember.ops.op_errors import complex_error
from ember.ops.pool_windows import WindowGather, WindowScatter, holds_floats, window_sums
from ember.ops.primitive import DISPATCH, Primitive, TensorSpec, apply, primitive
from ember.tensor import Tensor, _wrap

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "adaptive_max_pool1d"]


def pool_out_size(size: int, k: int, stride: int, pad: int, dilation: int, ceil: bool) -> int:
    """PyTorch's pooled length: floor or ceil of the window count, and with ``ceil_mode`` no
    window may start in the right padding."""
    span = size + 2 * pad - dilation * (k - 1) - 1
    out = (span + (stride - 1 if ceil else 0)) // stride + 1
    if ceil and (out - 1) * stride >= size + pad:
        out -= 1
    return out


class _Geometry:
    """Pooling arguments read once: per-dimension kernel, stride, padding and dilation, the
    output size and the (low, high) padding the windows need."""

    __slots__ = ("kernel", "stride", "pad", "dilation", "counts", "pads")

    def __init__(self, op: str, spatial: tuple[int, ...], kernel_size: Any, stride: Any,
                 padding: Any, dilation: Any, ceil_mode: bool) -> None:
        n = len(spatial)
        self.kernel = ntuple(kernel_size, n, op, "kernel_size")
        self.stride = self.kernel if stride is None or (not isinstance(stride, int)
                                                       and len(stride) == 0) \
            else ntuple(stride, n, op, "stride")
        self.pad = ntuple(padding, n, op, "padding")
        self.dilation = ntuple(dilation, n, op, "dilation")
        if min(self.kernel + self.stride + self.dilation) <= 0 or min(self.pad) < 0:
            raise ShapeError(f"{op}: kernel_size {self.kernel}, stride {self.stride} and "
                             f"dilation {self.dilation} must be positive and padding "
                             f"{self.pad} non-negative")
        for k, p, d in zip(self.kernel, self.pad, self.dilation, strict=True):
            if 2 * p > d * (k - 1) + 1:
                raise ShapeError(f"{op}: padding {self.pad} should be at most half of the "
                                 f"effective kernel size (kernel_size {self.kernel}, "
                                 f"dilation {self.dilation})")
        geometry = list(zip(spatial, self.kernel, self.stride, self.pad, self.dilation,
                            strict=True))
        self.counts = tuple(pool_out_size(*a, ceil_mode) for a in geometry)
        if min(self.counts, default=1) <= 0:
            raise ShapeError(f"{op}: input of spatial size {spatial} is too small for kernel "
                             f"{self.kernel} (padding {self.pad}, dilation {self.dilation}): "
                             f"the output would be {self.counts}")
        # ceil_mode's last window may reach past the right padding: pad a little more there
        self.pads = tuple((p, max(p, (c - 1) * s + d * (k - 1) + 1 - size - p))
                          for (size, k, s, p, d), c in zip(geometry, self.counts, strict=True))


def _max_values(xp: Any, view: Any, kernel: tuple[int, ...]) -> Any:
    """Each window's maximum (NaN wins, as in PyTorch: ``maximum`` propagates it; of equal
    values, +0.0 and -0.0, the first), in the input's memory order; ``view`` is
    (N, C, *kernel, *counts)."""
    offsets = list(itertools.product(*(range(k) for k in kernel)))
    lead = (slice(None), slice(None))
    best = view[lead + offsets[0]].copy(order="K")
    for offset in offsets[1:]:  # (the earlier first: NumPy's maximum gives its second on ties)
        xp.maximum(view[lead + offset], best, out=best)
    return best


def _max_window(xp: Any, view: Any, kernel: tuple[int, ...]) -> tuple[Any, Any]:
    """Each window's maximum and which of its elements holds it (the first on ties, the
    last NaN if any, as PyTorch), numbered in row-major order over the kernel: ``view`` is
    (N, C, *kernel, *counts).

    Branch-free, one kernel element at a time over all windows: a compare, a ``maximum`` and
    ``window = max(window, better·o)`` (o grows, so a later winner always raises it). Masked
    NumPy writes (``copyto(where=)``, ``where``) mispredict on random masks and are ~20×
    slower."""
    offsets = list(itertools.product(*(range(k) for k in kernel)))
    lead = (slice(None), slice(None))
    dtype = _window_dtype(kernel)
    if holds_floats(view) and view.size and xp.isnan(view).any():
        # NaN wins its window (the last one, as PyTorch's `val > max || isnan(val)`): the
        # slow exact route
        nd = len(kernel)
        order = (0, 1) + tuple(range(2 + nd, view.ndim)) + tuple(range(2, 2 + nd))
        flat = view.transpose(order).reshape(view.shape[:2] + view.shape[2 + nd:] + (-1,))
        nan = xp.isnan(flat)
        last_nan = flat.shape[-1] - 1 - nan[..., ::-1].argmax(axis=-1)
        window = xp.where(nan.any(axis=-1), last_nan, flat.argmax(axis=-1))
        best = xp.take_along_axis(flat, window[..., None], axis=-1)[..., 0]
        return best, window.astype(dtype)
    # outputs in the input's memory order (a channels-last activation stays channels-last,
    # so the ops after it do not mix layouts, which makes NumPy's inner loops strided)
    best = view[lead + offsets[0]].copy(order="K")
    window = xp.zeros_like(best, dtype=dtype)
    for o, offset in enumerate(offsets[1:], 1):
        cand = view[lead + offset]
        better = xp.greater(cand, best).view(xp.int8)
        xp.maximum(cand, best, out=best)  # (NumPy gives the second of equal values)
        xp.maximum(window, better * dtype(o) if o > 127 else better * xp.int8(o),
                   out=window, casting="unsafe")
    return best, window


def _window_dtype(kernel: tuple[int, ...]) -> Any:
    return np.int8 if prod(kernel) <= 127 else np.int32


def _flat_index(xp: Any, window: Any, positions: list, x: Any, kernel: tuple[int, ...],
                ranks: tuple[int, ...]) -> Any:
    """Flat per-plane input index of the window element ``window`` (row-major over the
    kernel) of each window; ``positions[i][o, a]`` is the input coordinate along spatial axis
    i of kernel element a of window o. Laid out as PyTorch's: channels innermost for an
    ``x`` of one of ``ranks`` laid out so (a 1-D pool's (N, L, C) transposed is the 2-D
    kernel's channels-last), else C order."""
    spatial = x.shape[2:]
    nd = len(spatial)
    counts = window.shape[2:]
    local = xp.unravel_index(window, kernel)
    index = 0
    for i, size in enumerate(spatial):
        at = xp.arange(counts[i]).reshape((-1,) + (1,) * (nd - 1 - i))
        index = index * size + positions[i][at, local[i]]
    if x.ndim in ranks and not x.flags.c_contiguous and \
            im2col.channels_last_rows(xp, x) is not None:  # (C order when both, as PyTorch)
        out = im2col.empty_channels_last(xp, index.shape, np.int64)
        out[...] = index
        return out
    return xp.ascontiguousarray(index, dtype=np.int64)


class _PoolIndices(Primitive):
    """Base of the primitives giving the flat per-plane index of each window's maximum."""

    differentiable = False
    save_inputs = False

    def infer(self, x, *, counts, **params):
        return TensorSpec(tuple(x.shape[:2]) + counts, dtypes.int64)


@primitive
class MaxPoolIndices(_PoolIndices):
    """Regular windows (kernel, stride, padding, dilation), read as a strided view."""

    name = "max_pool_indices"

    def forward(self, xp, x, *, kernel_size, stride, padding, dilation, counts):
        view = windows(xp, x, kernel_size, dilation, padding, stride, counts,
                       dtypes.extreme(dtypes.from_numpy(x.dtype)))
        positions = [xp.asarray(_window_positions(*a)) for a in
                     zip(x.shape[2:], kernel_size, stride, padding, dilation, counts,
                         strict=True)]
        _, window = _winners(xp, view, kernel_size, stride, padding, dilation, counts)
        return _flat_index(xp, window, positions, x, kernel_size, (3, 4, 5))


@primitive
class MaxPool(Primitive):
    """Max pooling over regular windows: (values, window), ``window`` naming which element
    of each window won (row-major over the kernel; int8 up to 127 elements, else int32).
    The gradient is ``window_scatter`` to the winners, the tangent ``window_gather``. With
    ``window=False`` (nothing will differentiate: inference) only the values are computed
    and the window output is a zero-memory placeholder."""

    name = "max_pool"
    allocates = True
    nout = 2
    save_inputs = False
    save_outputs = (1,)  # the rules read the winners, not the values

    def forward(self, xp, x, *, kernel_size, stride, padding, dilation, counts, window=True):
        looped = max_pool_kernel.max_window(xp, x, counts, kernel_size, stride, padding,
                                            dilation, window)
        if looped is not None:
            best, won = looped
        else:
            view = windows(xp, x, kernel_size, dilation, padding, stride, counts,
                           dtypes.extreme(dtypes.from_numpy(x.dtype)))
            best, won = _winners(xp, view, kernel_size, stride, padding, dilation, counts) \
                if window else (_max_values(xp, view, kernel_size), None)
        if won is None:  # (inference: a zero-memory placeholder)
            dtype = _window_dtype(kernel_size)
            won = _no_window(best.shape, dtype) if xp is np else \
                xp.broadcast_to(xp.zeros((), dtype), best.shape)
        if not best.flags.c_contiguous and not _keeps_channels_last(x, window):
            best = xp.ascontiguousarray(best)
        return best, won

    def infer(self, x, *, kernel_size, counts, **params):
        window = dtypes.int8 if prod(kernel_size) <= 127 else dtypes.int32
        shape = tuple(x.shape[:2]) + counts
        return TensorSpec(shape, x.dtype), TensorSpec(shape, window)

    def skip_outputs(self, params, unread):
        return {**params, "window": False} if 1 in unread else None

    def _geometry(self, ctx):
        return {k: v for k, v in ctx.params.items() if k not in ("counts", "window")}

    def vjp(self, ctx, g, _g_window=None):
        if g is None:
            return (None,)
        return (apply(WindowScatter, g, ctx.output(1).detach(),
                      size=tuple(ctx.inputs[0].shape[2:]), **self._geometry(ctx)),)

    def jvp(self, ctx, dx):
        return apply(WindowGather, dx, ctx.output(1).detach(), **self._geometry(ctx)), None


def _keeps_channels_last(x: Any, window: bool) -> bool:
    """Whether PyTorch's max pooling of array ``x`` keeps its layout: channels-last(-3d), or,
    for a 1-D pool that records winners (for a gradient: PyTorch's 2-D kernel with indices
    then), (N, L, C) transposed; else its result is C-ordered."""
    if x.ndim == 3:
        return window and channels_last_strides(x, (0, 2, 1))
    return suggested_format(x) is not contiguous_format


@lru_cache(maxsize=64)
def _no_window(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """The zero-memory window output of an inference pooling: read-only, so one per shape is
    shared (``np.broadcast_to`` costs ~5 µs, a quarter of a batch-1 pooling)."""
    return np.broadcast_to(np.zeros((), dtype), shape)


def _winners(xp: Any, view: Any, kernel: tuple, stride: tuple, padding: tuple,
             dilation: tuple, counts: tuple) -> tuple[Any, Any]:
    """:func:`_max_window` of the windows ``view``, padded with the dtype's least value,
    where a window of that value names its first element past the low padding, as
    PyTorch's does, not the padding (ties go to the first element, which may be padding).
    In a window with no element inside the input (dilation steps over it) that element is
    past the input's end, as PyTorch's index."""
    best, chosen = _max_window(xp, view, kernel)
    if any(lo for lo, _ in padding):
        empty = best == dtypes.extreme(dtypes.from_numpy(best.dtype))
        if empty.any():
            first = xp.asarray(_first_inside(kernel, stride, padding, dilation, counts))
            chosen = xp.where(empty, first.astype(chosen.dtype), chosen)
    return best, chosen


def _first_inside(kernel: tuple, stride: tuple, padding: tuple, dilation: tuple,
                  counts: tuple) -> np.ndarray:
    """(*counts): the number (row-major over the kernel) of each window's first element
    inside the input, past the low padding."""
    number = np.zeros(counts, np.int64)
    for i, (k, s, (lo, _), d, c) in enumerate(zip(kernel, stride, padding, dilation, counts,
                                                  strict=True)):
        start = np.arange(c) * s - lo
        first = np.maximum(0, (d - 1 - start) // d)  # the least a with start + a·d ≥ 0
        number = number * k + first.reshape((-1,) + (1,) * (len(counts) - 1 - i))
    return number


@lru_cache(maxsize=256)
def _window_positions(size: int, k: int, stride: int, pads: tuple[int, int], dilation: int,
                      count: int) -> np.ndarray:
    """(count, k): input coordinate of each element of each window (those in the padding
    outside ``range(size)``: no window's maximum is read there but an empty window's)."""
    start = np.arange(count)[:, None] * stride - pads[0]
    return start + np.arange(k) * dilation


def _empty_windows(g: _Geometry, spatial: tuple[int, ...]) -> np.ndarray | None:
    """(*counts) bool: the windows with no element inside the input (a dilation stepping
    over an input of fewer elements than the padding), or None where there are none."""
    empty = np.zeros(g.counts, bool)
    for i, (size, k, s, (lo, _), d, c) in enumerate(zip(spatial, g.kernel, g.stride, g.pads,
                                                         g.dilation, g.counts, strict=True)):
        at = _window_positions(size, k, s, (lo, 0), d, c)
        outside = ((at < 0) | (at >= size)).all(axis=1)
        empty |= outside.reshape((-1,) + (1,) * (len(spatial) - 1 - i))
    return empty if empty.any() else None


@primitive
class AdaptiveMaxPoolIndices(_PoolIndices):
    """PyTorch's adaptive windows, gathered with index arrays (the largest window's width;
    shorter windows repeat their last element, which changes neither max nor argmax)."""

    name = "adaptive_max_pool_indices"

    def forward(self, xp, x, *, counts):
        nd = len(counts)
        positions = []
        for size, c in zip(x.shape[2:], counts, strict=True):
            start, end = adaptive_bounds(xp, size, c)
            width = int((end - start).max())
            positions.append(xp.minimum(start[:, None] + xp.arange(width), end[:, None] - 1))
        # x[:, :, rows, cols, …] with index grids shaped to give (N, C, c1, k1, c2, k2, …)
        grids = tuple(pos.reshape((1,) * (2 * i) + pos.shape + (1,) * (2 * (nd - 1 - i)))
                      for i, pos in enumerate(positions))
        gathered = x[(slice(None), slice(None)) + grids]
        order = (0, 1) + tuple(range(3, 3 + 2 * nd, 2)) + tuple(range(2, 2 + 2 * nd, 2))
        kernel = tuple(p.shape[1] for p in positions)
        _, window = _max_window(xp, gathered.transpose(order), kernel)
        return _flat_index(xp, window, positions, x, kernel, (3, 4))


def _gather_max(x: Tensor, indices: Tensor, added: bool, return_indices: bool,
                empty: np.ndarray | None = None) -> Any:
    """The values at the winning indices (so the gradient scatters back to them); the
    windows ``empty`` names (no element inside the input) hold the dtype's least value, as
    PyTorch's, and pass no gradient."""
    n, c = x.shape[:2]
    mask = None if empty is None else _wrap(x.device.xp.asarray(empty), x.device)
    read = indices if mask is None else indices.masked_fill(mask, 0)
    # (the gradient adds in a half type step by step, as torch's max-pool backward)
    values = take_along(x.reshape((n, c, prod(x.shape[2:]))), 2,
                        read.reshape((n, c, prod(indices.shape[2:]))), wide=False)
    values = values.reshape(indices.shape)
    if mask is not None:
        values = values.masked_fill(mask, dtypes.extreme(x.dtype))
    if added:
        values, indices = values.reshape(values.shape[1:]), indices.reshape(indices.shape[1:])
    return (values, indices) if return_indices else values


def _pool_batched(op: str, nd: int, input: Tensor) -> tuple[Tensor, bool]:
    """``batched``, refusing an input without channels as PyTorch (only the batch may be
    empty)."""
    x, added = batched(input, nd, op)
    if x.shape[1] == 0:
        raise ShapeError(f"{op}: the input has no channels (shape {tuple(input.shape)}); only "
                         f"the batch dimension of an (N, C, ...) input may be empty")
    return x, added


def _refuse_complex(op: str, x: Tensor) -> None:
    """Complex numbers have no order, so no window maximum (PyTorch refuses them too)."""
    if x._data.dtype.kind == "c":
        raise complex_error(op, x.dtype)


def _max_pool(op: str, nd: int, input: Tensor, kernel_size: Any, stride: Any, padding: Any,
              dilation: Any, ceil_mode: bool, return_indices: bool) -> Any:
    x, added = _pool_batched(op, nd, input)
    _refuse_complex(op, x)
    g = _Geometry(op, tuple(x.shape[2:]), kernel_size, stride, padding, dilation, ceil_mode)
    geometry = {"kernel_size": g.kernel, "stride": g.stride, "padding": g.pads,
                "dilation": g.dilation}
    if return_indices:
        indices = apply(MaxPoolIndices, x.detach(), counts=g.counts, **geometry)
        return _gather_max(x, indices, added, return_indices,
                           _empty_windows(g, tuple(x.shape[2:])))
    # the winners' window elements (int8) and a gather/scatter per kernel element: much
    # faster than flat indices with a general gather and index_put for its gradient
    # no transform and no gradient wanted (inference): the values alone, not the winners
    winners = DISPATCH.handler is not None or (GRAD.enabled and input.requires_grad)
    values, _ = apply(MaxPool, x, counts=g.counts, window=winners, **geometry)
    return values.reshape(values.shape[1:]) if added else values


def max_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Maximum over sliding windows of a (N, C, L) or (C, L) input.

    Example:
        >>> F.max_pool1d(ember.tensor([[1.0, 3.0, 2.0, 0.0]]), 2)
        tensor([[3., 2.]])
    """
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)


def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Maximum over sliding windows of a (N, C, H, W) or (C, H, W) input.

    ``stride`` defaults to ``kernel_size``; with ``return_indices`` it also returns each
    maximum's flat index within its (H, W) plane, as PyTorch does.

    Example:
        >>> x = ember.arange(16.0).reshape(1, 1, 4, 4)
        >>> F.max_pool2d(x, 2)
        tensor([[[[ 5.,  7.],
                  [13., 15.]]]])
    """
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)


@float32_under_autocast
def max_pool3d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Maximum over sliding windows of a (N, C, D, H, W) or (C, D, H, W) input."""
    return _max_pool("max_pool3d", 3, input, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)


def _divisor(g: _Geometry, spatial: tuple[int, ...], count_include_pad: bool) -> Any:
    """How many elements each average divides by, per output position (separable), as a
    NumPy array: it depends on the geometry only, so it is the same for every device."""
    total = None
    for size, k, s, p, c in zip(spatial, g.kernel, g.stride, g.pad, g.counts, strict=True):
        start = np.arange(c) * s - p
        end = np.minimum(start + k, size + p)
        n = end - start if count_include_pad else \
            np.minimum(end, size) - np.maximum(start, 0)
        total = n if total is None else total[..., None] * n
    return total


def _avg_pool(op: str, nd: int, input: Tensor, kernel_size: Any, stride: Any, padding: Any,
              ceil_mode: bool, count_include_pad: bool, divisor_override: int | None) -> Tensor:
    integral = isinstance(input, Tensor) and input.dtype is dtypes.int64  # (as PyTorch's)
    if not integral:
        im2col.floating_input(op, input)
    if divisor_override == 0:
        raise ArgumentError(f"{op}: divisor_override must not be zero. Hint: None divides by the "
                            f"window's size")
    if input.dtype in HALF:  # summed and divided in float32, as PyTorch (a sum may overflow)
        return _avg_pool(op, nd, input.float(), kernel_size, stride, padding, ceil_mode,
                         count_include_pad, divisor_override).to(input.dtype)
    x, added = _pool_batched(op, nd, input)
    spatial = tuple(x.shape[2:])
    g = _Geometry(op, spatial, kernel_size, stride, padding, 1, ceil_mode)
    n, c = x.shape[:2]
    geometry = {"kernel_size": g.kernel, "dilation": g.dilation, "padding": g.pads,
                "stride": g.stride}
    # (windows with channels innermost: a channels-last sum; 1-D pools run PyTorch's 2-D
    # kernel, so (N, L, C) transposed is channels-last)
    if pixels_first(x, (3, 4)) is not None:
        cols = unfold_nd(x, layout="nlc", **geometry)
        sums = channels_back(cols.reshape((n, *g.counts, prod(g.kernel), c)).sum(1 + nd))
    else:
        # (no padding and no window past the end: the windows summed in place, no columns)
        inside = all(lo == hi == 0 for lo, hi in g.pads)
        sums = window_sums(x, g.kernel, g.stride, g.counts) if inside else None
        if sums is None:
            cols = unfold_nd(x, **geometry)
            sums = cols.reshape((n, c, prod(g.kernel), prod(g.counts))).sum(2).reshape(
                (n, c) + g.counts)
    if integral:  # the sum divided, truncated toward zero (C's integer division)
        divisor = divisor_override or _wrap(x.device.xp.asarray(
            _divisor(g, spatial, count_include_pad), dtype=np.int64), x.device)
        out = sums.div(divisor, rounding_mode="trunc")
    elif divisor_override:  # (divided, not times the reciprocal: PyTorch's float32 bits)
        out = sums / divisor_override
    else:
        divisor = _divisor(g, spatial, count_include_pad)
        out = sums / _wrap(x.device.xp.asarray(divisor, dtype=x.dtype.np), x.device)
    return out.reshape(out.shape[1:]) if added else out


def avg_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    """Average over sliding windows of a (N, C, L) or (C, L) input.

    Example:
        >>> F.avg_pool1d(ember.tensor([[1.0, 3.0, 2.0, 0.0]]), 2)
        tensor([[2., 1.]])
    """
    return _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, None)


def avg_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """Average over sliding windows of a (N, C, H, W) or (C, H, W) input.

    ``count_include_pad`` counts zero padding in the divisor; ``divisor_override`` replaces
    the divisor.

    Example:
        >>> F.avg_pool2d(ember.ones(1, 1, 4, 4), 2).shape
        ember.Size([1, 1, 2, 2])
    """
    return _avg_pool("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


@float32_under_autocast
def avg_pool3d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """Average over sliding windows of a (N, C, D, H, W) or (C, D, H, W) input."""
    return _avg_pool("avg_pool3d", 3, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def _adaptive_max_pool(op: str, nd: int, input: Tensor, output_size: Any,
                       return_indices: bool) -> Any:
    x, added = batched(input, nd, op)
    _refuse_complex(op, x)
    out = pooled_size(op, output_size, tuple(x.shape[2:]))
    if min(x.shape[2:], default=1) == 0 or min(out, default=1) < 0:
        raise ShapeError(f"{op}: cannot pool spatial size {tuple(x.shape[2:])} to {out}")
    if min(out, default=1) == 0:  # no windows: empty results, as PyTorch's
        indices = zeros(tuple(x.shape[:2]) + out, dtype=dtypes.int64, device=x.device)
    else:
        indices = apply(AdaptiveMaxPoolIndices, x.detach(), counts=out)
    return _gather_max(x, indices, added, return_indices)


def adaptive_max_pool1d(input: Tensor, output_size: int, return_indices: bool = False) -> Any:
    """Maximum over PyTorch's adaptive windows of a (N, C, L) or (C, L) input.

    Example:
        >>> F.adaptive_max_pool1d(ember.tensor([[1.0, 3.0, 2.0]]), 2)
        tensor([[3., 3.]])
    """
    return _adaptive_max_pool("adaptive_max_pool1d", 1, input, output_size, return_indices)


def adaptive_max_pool2d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Maximum over adaptive windows ``[floor(i·H/h), ceil((i+1)·H/h))`` of a (N, C, H, W)
    input; with ``return_indices`` also the flat per-plane index of each maximum.

    Example:
        >>> F.adaptive_max_pool2d(ember.randn(2, 3, 5, 7), (2, 3)).shape
        ember.Size([2, 3, 2, 3])
    """
    return _adaptive_max_pool("adaptive_max_pool2d", 2, input, output_size, return_indices)


@float32_under_autocast
def adaptive_max_pool3d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Maximum over adaptive windows of a (N, C, D, H, W) or (C, D, H, W) input."""
    return _adaptive_max_pool("adaptive_max_pool3d", 3, input, output_size, return_indices)


# -- PyTorch's *_with_indices names: the max pools returning (values, indices) always --------
def _with_indices(pool: Callable[..., Any], positional: int,
                  nd: int) -> Callable[..., tuple[Tensor, Tensor]]:
    """``pool`` with ``return_indices=True`` whatever the call says; ``positional`` is how
    many arguments ``pool`` takes after the input before ``return_indices``."""
    def with_indices(input: Tensor, *args: Any, **kwargs: Any) -> tuple[Tensor, Tensor]:
        kwargs["return_indices"] = True
        return pool(input, *args[:positional], **kwargs)

    name = f"{pool.__name__}_with_indices"
    with_indices.__name__ = with_indices.__qualname__ = name
    shape = (1, 1) + (4,) * nd
    with_indices.__doc__ = (
        f":func:`{pool.__name__}` returning ``(values, indices)`` whatever ``return_indices``"
        f" says.\n\n    Example:\n        >>> values, indices = F.{name}(ember.ones{shape}, 2)"
        f"\n        >>> indices.shape\n        ember.Size({[1, 1] + [2] * nd})\n")
    return with_indices


max_pool1d_with_indices = _with_indices(max_pool1d, 5, 1)
max_pool2d_with_indices = _with_indices(max_pool2d, 5, 2)
max_pool3d_with_indices = _with_indices(max_pool3d, 5, 3)
adaptive_max_pool1d_with_indices = _with_indices(adaptive_max_pool1d, 1, 1)
adaptive_max_pool2d_with_indices = _with_indices(adaptive_max_pool2d, 1, 2)
adaptive_max_pool3d_with_indices = _with_indices(adaptive_max_pool3d, 1, 3)
