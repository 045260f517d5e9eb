"""``Tensor.unfold``: the windows of ``size`` every ``step`` along a dimension, as a strided
view that shares memory and the version counter with its input, as in PyTorch.

One primitive, ``unfold_view``; its vjp adds each window's gradient back where it came from:
one scatter-add for a small gradient (fewest ops), :func:`overlap_add` (a fixed handful of
ops on whole blocks, whose cost does not grow per element as a scatter-add's) for a large one.
"""

from __future__ import annotations

import numpy as np

from ember.errors import ArgumentError, ShapeError
from ember.ops.broadcast import sum_to
from ember.ops.construct import _shape
from ember.ops.creation import zeros
from ember.ops.indexing import IndexPut
from ember.ops.int_args import as_int
from ember.ops.join import cat
from ember.ops.pad import pad
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive
from ember.ops.reduce import normalize_dim
from ember.ops.shape import Permute, reshape, transpose
from ember.tensor import Tensor, _wrap, method

__all__: list[str] = []


# -- unfold: a strided window view ----------------------------------------------------------------
def _unfold_shape(shape: tuple, dimension: int, size: int, step: int) -> tuple:
    if not shape:
        return (size,)
    count = (shape[dimension] - size) // step + 1
    return shape[:dimension] + (count,) + shape[dimension + 1:] + (size,)


def _unfold_check(shape: tuple, dimension: int, size: int, step: int) -> None:
    limit = shape[dimension] if shape else 1
    if size > limit:
        raise ShapeError(f"unfold: maximum size for tensor at dimension {dimension} is {limit} "
                         f"but size is {size} (shape {tuple(shape)})")
    if step <= 0:
        raise ArgumentError(f"unfold: step is {step} but must be > 0")
    if size < 0:
        raise ArgumentError(f"unfold: size is {size} but must be >= 0")


def overlap_add(frames: Tensor, hop: int) -> Tensor:
    """The frames ``(..., count, size)`` added into one signal ``(..., size + hop * (count -
    1))``, frame ``m`` starting at ``m * hop`` (the adjoint of framing with ``unfold``).

    Each frame is cut into ``k = ceil(size / hop)`` hop-long pieces; piece ``j`` of frame
    ``m`` lands in hop-block ``m + j``. Laid out as a ``(k, count)`` grid of pieces, row ``j``
    shifted ``j`` blocks later (a skew: pad each row by ``k`` blocks, flatten, cut ``k``
    blocks, re-split) and summed over rows: a fixed handful of ops whatever ``k``.
    """
    *batch, count, size = frames.shape
    pieces = -(-size // hop)
    if pieces * hop > size:
        frames = pad(frames, (0, pieces * hop - size))
    if pieces == 1:  # hop >= size: the padded frames tile the signal
        signal = reshape(frames, (*batch, count * hop))
    else:
        grid = transpose(reshape(frames, (*batch, count, pieces, hop)), -3, -2)
        rows = reshape(pad(grid, (0, 0, 0, pieces)), (*batch, pieces * (count + pieces), hop))
        skewed = reshape(rows[..., :pieces * (count + pieces - 1), :],
                         (*batch, pieces, count + pieces - 1, hop))
        signal = reshape(skewed.sum(-3), (*batch, (count + pieces - 1) * hop))
    return signal[..., :size + hop * (count - 1)]


SCATTER_MAX = 4096  # unfold's vjp scatter-adds gradients of at most this many elements


def _permute(x: Tensor, dims: tuple) -> Tensor:
    return x if dims == tuple(range(x.ndim)) else apply(Permute, x, dims=dims)


@primitive
class UnfoldView(Primitive):
    """``Tensor.unfold``: the windows of ``size`` every ``step`` along ``dimension`` as a
    strided view (the window count replaces the dimension, the window is a new last one)."""

    name = "unfold_view"
    complex_grad = True  # moves, copies or sums elements: real coefficients
    view = True
    save_inputs = False

    def forward(self, xp, a, *, dimension, size, step):
        shape = _unfold_shape(a.shape, dimension, size, step)
        if a.ndim:
            s = a.strides
            strides = s[:dimension] + (s[dimension] * step,) + s[dimension + 1:] + \
                (s[dimension],)
        else:
            strides = (a.itemsize,)
        if a.dtype.itemsize == 1:  # (as bytes: NumPy's as_strided cannot read float8_e5m2)
            return xp.lib.stride_tricks.as_strided(a.view(xp.uint8), shape=shape,
                                                   strides=strides).view(a.dtype)
        return xp.lib.stride_tricks.as_strided(a, shape=shape, strides=strides)

    def infer(self, a, *, dimension, size, step):
        _unfold_check(a.shape, dimension, size, step)
        return TensorSpec(_unfold_shape(a.shape, dimension, size, step), a.dtype)

    def vjp(self, ctx, g):
        x = ctx.inputs[0]
        shape = _shape(x)
        if not shape:
            return sum_to(g, ())
        p = ctx.params
        d, size, step = p["dimension"], p["size"], p["step"]
        count = g.shape[d]
        if count == 0 or size == 0:
            return zeros(shape, dtype=g.dtype, device=g.device)
        n = shape[d]
        # the window axis next to the window-count axis: (…, count, size, …)
        order = tuple(range(d + 1)) + (g.ndim - 1,) + tuple(range(d + 1, g.ndim - 1))
        if step == size:  # windows tile the dimension: a reshape and zeros for the rest
            flat = reshape(_permute(g, order), shape[:d] + (count * size,) + shape[d + 1:])
            rest = n - count * size
            if not rest:
                return flat
            pad_ = zeros(shape[:d] + (rest,) + shape[d + 1:], dtype=g.dtype, device=g.device)
            return cat([flat, pad_], d)
        if step > size or g.numel() <= SCATTER_MAX:
            # gaps between windows (a plain set) or few elements: one scatter into zeros
            xp = g._device.xp
            idx = _wrap(xp.arange(count, dtype=np.int64)[:, None] * step
                        + xp.arange(size, dtype=np.int64)[None, :], g._device)
            return apply(IndexPut, zeros(shape, dtype=g.dtype, device=g.device),
                         _permute(g, order), idx, basic=(), dims=(d,),
                         mode="set" if step > size else "add")
        # many overlapping windows: the window-count and window axes last, overlap-added (a
        # few ops on whole arrays, where a scatter-add's cost grows with every element)
        others = tuple(i for i in range(g.ndim - 1) if i != d)
        signal = overlap_add(_permute(g, others + (d, g.ndim - 1)), step)
        if signal.shape[-1] < n:
            signal = pad(signal, (0, n - signal.shape[-1]))
        back = tuple(range(signal.ndim - 1))
        return _permute(signal, back[:d] + (signal.ndim - 1,) + back[d:])

    def jvp(self, ctx, da):
        return apply(UnfoldView, da, **ctx.params)


@method("unfold")
def unfold(self: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """The view of every window of ``size`` entries along ``dimension``, ``step`` apart: that
    dimension becomes the window count and each window a new last dimension (no copy; the
    windows may overlap, and they share memory with ``self``). An in-place op through
    overlapping windows writes each shared element once (the last window's value), where
    PyTorch's result for such writes depends on its kernel.

    Example:
        >>> ember.arange(5).unfold(0, 2, 1)
        tensor([[0, 1],
                [1, 2],
                [2, 3],
                [3, 4]])
    """
    op = "unfold"
    d = normalize_dim(as_int(dimension, op, "dimension"), self.ndim, op)
    size, step = as_int(size, op, "size"), as_int(step, op, "step")
    _unfold_check(_shape(self), d, size, step)
    return apply(UnfoldView, self, dimension=d, size=size, step=step)

