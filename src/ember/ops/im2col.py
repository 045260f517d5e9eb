"""Sliding windows as a pair of linear primitives: ``unfold`` (im2col) and ``fold`` (col2im).

``unfold`` copies every kernel-sized window of a (N, C, *spatial) tensor into a column of a
(N, C·∏kernel, L) matrix, so a convolution becomes one matrix product; ``fold`` sums columns
back into place. Each is the other's vjp (and, being linear, its own jvp), so convolutions,
pooling and their derivatives of every order are built from these two.

Both take any number of spatial dimensions and per-dimension ``(low, high)`` padding; a
negative ``high`` means the last windows stop short of the edge (what ``conv_transpose``'s
``output_padding`` needs).
"""

from __future__ import annotations

import itertools
from functools import lru_cache
from math import prod
from typing import Any

import numpy as np

from ember.backend import compiled, parallel
from ember.errors import DTypeError, ShapeError, refuse_non_tensor
from ember.layouts import contiguous_format
from ember.ops.int_args import as_ints
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive
from ember.tensor import Tensor

__all__: list[str] = []

_KERNELS = compiled.register("ember.ops.im2col_numba")

Pads = tuple[tuple[int, int], ...]

_FOLD_CHUNK_BYTES = 2 << 20  # canvas bytes summed into per pass of fold's kernel-offset loop


def ntuple(value: Any, n: int, op: str, what: str) -> tuple[int, ...]:
    """Reads an int-or-sequence argument as ``n`` ints: ``ntuple(3, 2, …) == (3, 3)``."""
    if isinstance(value, int):
        return (int(value),) * n
    out = as_ints(value, op, what)
    if len(out) == 1:
        return out * n
    if len(out) != n:
        raise ShapeError(f"{op}: {what} must be an int or {n} ints, got {value!r}")
    return out


def symmetric(padding: tuple[int, ...]) -> Pads:
    """``(1, 2)`` → ``((1, 1), (2, 2))``: the same padding on both sides of each dimension."""
    return tuple((p, p) for p in padding)


def out_size(size: int, k: int, dilation: int, pads: tuple[int, int], stride: int) -> int:
    """Number of window positions along one dimension."""
    return (size + pads[0] + pads[1] - dilation * (k - 1) - 1) // stride + 1


@lru_cache(maxsize=4096)
def window_positions(spatial: tuple[int, ...], kernel: tuple[int, ...],
                     dilation: tuple[int, ...], pads: Pads,
                     stride: tuple[int, ...]) -> tuple[int, ...]:
    """Window positions per dimension, unchecked (kernels' hot path: remembered)."""
    return tuple(out_size(s, k, d, p, st)
                 for s, k, d, p, st in zip(spatial, kernel, dilation, pads, stride, strict=True))


def window_counts(spatial: tuple[int, ...], kernel: tuple[int, ...], dilation: tuple[int, ...],
                  pads: Pads, stride: tuple[int, ...], op: str) -> tuple[int, ...]:
    """Window positions per dimension; a ShapeError when a dimension has none."""
    if any(v <= 0 for v in kernel + dilation + stride):
        raise ShapeError(f"{op}: kernel_size {kernel}, dilation {dilation} and stride {stride} "
                         f"must be positive")
    counts = window_positions(spatial, kernel, dilation, pads, stride)
    if any(c <= 0 for c in counts):
        raise ShapeError(f"{op}: spatial size {spatial} with padding {pads} is too small for "
                         f"kernel {kernel} (dilation {dilation}, stride {stride}): it gives "
                         f"{counts} windows. Hint: pad the input or use a smaller kernel")
    return counts


def batched(input: Tensor, spatial: int, op: str) -> tuple[Tensor, bool]:
    """``input`` with a batch dimension (added for an unbatched (C, *spatial) input), and
    whether one was added; a ShapeError for any other rank."""
    try:
        ndim = input.ndim
    except AttributeError:
        refuse_non_tensor(op, "input", input)
        raise
    if ndim == spatial + 2:
        return input, False
    if ndim == spatial + 1:
        return input.reshape((1, *input.shape)), True
    refuse_non_tensor(op, "input", input)  # (a PyTorch tensor has a shape too)
    names = ("L",) if spatial == 1 else ("H", "W") if spatial == 2 else ("D", "H", "W")
    dims = ", ".join(names)
    raise ShapeError(f"{op}: expected a {spatial + 1}-D (C, {dims}) or {spatial + 2}-D "
                     f"(N, C, {dims}) input, got shape {tuple(input.shape)}")


def floating_input(op: str, input: Tensor) -> None:
    """Raises the DTypeError of pooling ``op`` for a non-floating ``input``, and PyTorch's
    TypeError for a PyTorch tensor or NumPy array (whose dtype has no Ember meaning)."""
    if not isinstance(input, Tensor):
        refuse_non_tensor(op, "input", input)
    if not input.dtype.is_floating_point:
        raise DTypeError(f"{op}: expected a floating input, got {input.dtype.name}")


def empty_channels_last(xp: Any, shape: tuple, dtype: Any) -> Any:
    """A new (N, C, *spatial) array laid out in memory as (N, *spatial, C)."""
    n = len(shape)  # (``transpose`` with the axes: ``moveaxis`` costs ~3 µs a call)
    return xp.empty((shape[0], *shape[2:], shape[1]), dtype).transpose(
        (0, n - 1, *range(1, n - 1)))


def channels_last_rows(xp: Any, a: Any) -> Any:
    """The (N·∏spatial, C) rows of a (N, C, *spatial) array laid out as (N, *spatial, C), as
    a view; None for another layout."""
    moved = a.transpose((0, *range(2, a.ndim), 1))
    return moved.reshape(-1, a.shape[1]) if moved.flags.c_contiguous else None


def pad_constant(xp: Any, x: Any, widths: tuple[tuple[int, int], ...], value: Any = 0,
                 channels_last: bool = False) -> Any:
    """``x`` with ``widths[i]`` (low, high) elements of ``value`` around each dimension i (all
    non-negative); ``x`` itself when there is nothing to add. Faster than ``xp.pad``. With
    ``channels_last`` the copy of a (N, C, …) ``x`` has dimension 1 innermost in memory."""
    if not any(lo or hi for lo, hi in widths):
        return x
    shape = tuple(n + lo + hi for n, (lo, hi) in zip(x.shape, widths, strict=True))
    if channels_last:
        out = empty_channels_last(xp, shape, x.dtype)
    else:
        out = xp.empty_like(x, shape=shape)  # in x's memory order
    out.fill(value)
    out[tuple(slice(lo, lo + n) for n, (lo, _) in zip(x.shape, widths, strict=True))] = x
    return out


def windows(xp: Any, x: Any, kernel: tuple, dilation: tuple, pads: Pads, stride: tuple,
            counts: tuple, value: Any = 0, channels_last: bool = False) -> Any:
    """A strided (N, C, *kernel, *counts) view of the windows of ``x`` padded with ``value``
    (no copy beyond the padding, made channels-last on request)."""
    x = pad_constant(xp, x, ((0, 0), (0, 0)) + tuple((lo, max(hi, 0)) for lo, hi in pads),
                     value, channels_last)
    s = x.strides
    space = s[2:]
    return xp.lib.stride_tricks.as_strided(
        x, shape=x.shape[:2] + kernel + counts,
        strides=s[:2] + tuple(a * d for a, d in zip(space, dilation, strict=True))
        + tuple(a * st for a, st in zip(space, stride, strict=True)),
        writeable=False)


def numba_geometry(kernel: tuple, stride: tuple, dilation: tuple, pads: Pads) -> tuple:
    """A 2-D window geometry as numba's window loops take it
    (:data:`ember.ops.im2col_numba.GEOMETRY`): kernel, stride, dilation and low padding."""
    return (*kernel, *stride, *dilation, pads[0][0], pads[1][0])


def numba_columns(xp: Any, x: Any, kernel: tuple, dilation: tuple, pads: Pads, stride: tuple,
                  counts: tuple) -> Any:
    """(N, *counts, ∏kernel·C) columns of a 2-D float32/float64 ``x`` by numba's one-pass loop
    (no padded copy; :mod:`ember.ops.im2col_numba`), or None where it does not apply."""
    if xp is not np or len(kernel) != 2 or x.dtype not in (np.float32, np.float64) or \
            not compiled.numba_enabled():
        return None
    kernels = compiled.load(_KERNELS)
    if kernels is None:
        return None
    cols = xp.empty((x.shape[0], *counts, prod(kernel) * x.shape[1]), x.dtype)
    parallel.over_rows(kernels.columns, (x.transpose(0, 2, 3, 1), cols), 1,
                       numba_geometry(kernel, stride, dilation, pads))
    return cols


_FOLD_SMALL = 1 << 14  # column elements: below, NumPy's strided adds are as fast
_FOLD_SHARE = 1 << 18  # column elements a piece takes at least


def _numba_fold(xp: Any, cols: Any, output_size: tuple, kernel: tuple, dilation: tuple,
                pads: Pads, stride: tuple, counts: tuple) -> Any:
    """col2im of 2-D float32/float64 (N, L, ∏kernel·C) columns by numba's one-pass loop into
    a channels-last (N, C, H, W) result (no padded canvas), or None where it does not
    apply."""
    if xp is not np or len(kernel) != 2 or cols.dtype not in (np.float32, np.float64) or \
            cols.size < _FOLD_SMALL or not cols.flags.c_contiguous or \
            not compiled.numba_enabled():
        return None
    kernels = compiled.load(_KERNELS)
    if kernels is None:
        return None
    n, c = cols.shape[0], cols.shape[2] // prod(kernel)
    out = xp.zeros((n, *output_size, c), cols.dtype)
    parallel.over_rows(kernels.fold_columns, (cols.reshape(n, *counts, -1), out),
                       -(-_FOLD_SHARE * n // cols.size),
                       numba_geometry(kernel, stride, dilation, pads))
    return out.transpose(0, 3, 1, 2)


@primitive
class Unfold(Primitive):
    """im2col: (N, C, *spatial) → (N, C·∏kernel_size, L), L the number of windows."""

    name = "unfold"
    complex_grad = True  # linear with real coefficients
    save_inputs = False

    def forward(self, xp, x, *, kernel_size, dilation, padding, stride, layout="ncl"):
        counts = window_positions(x.shape[2:], kernel_size, dilation, padding, stride)
        n, rows = x.shape[0], x.shape[1] * prod(kernel_size)
        if layout == "nlc":
            # (N, *counts, *kernel, C): rows of one GEMM over the batch, each window's channels
            # contiguous, read from a channels-last copy (long inner loops in the copy)
            cols = numba_columns(xp, x, kernel_size, dilation, padding, stride, counts)
            if cols is not None:
                return cols.reshape(n, prod(counts), rows)
            view = windows(xp, x, kernel_size, dilation, padding, stride, counts,
                           channels_last=True)
            nd = len(kernel_size)
            view = view.transpose((0, *range(2 + nd, 2 + 2 * nd), *range(2, 2 + nd), 1))
            return view.reshape(n, prod(counts), rows)
        view = windows(xp, x, kernel_size, dilation, padding, stride, counts)
        return view.reshape(n, rows, prod(counts))

    def infer(self, x, *, kernel_size, dilation, padding, stride, layout="ncl"):
        if len(x.shape) != 2 + len(kernel_size):
            raise ShapeError(f"unfold: expected a (N, C, *spatial) input with "
                             f"{len(kernel_size)} spatial dimensions, got shape {x.shape}")
        counts = window_counts(x.shape[2:], kernel_size, dilation, padding, stride, "unfold")
        n, rows = x.shape[0], x.shape[1] * prod(kernel_size)
        return TensorSpec((n, prod(counts), rows) if layout == "nlc" else
                          (n, rows, prod(counts)), x.dtype)

    def vjp(self, ctx, g):
        return fold_nd(g, ctx.inputs[0].shape[2:], **ctx.params)

    def jvp(self, ctx, dx):
        return unfold_nd(dx, **ctx.params)


@primitive
class Fold(Primitive):
    """col2im: (N, C·∏kernel_size, L) → (N, C, *output_size), overlapping windows summed."""

    name = "fold"
    complex_grad = True  # linear with real coefficients
    save_inputs = False

    def forward(self, xp, cols, *, output_size, kernel_size, dilation, padding, stride,
                layout="ncl"):
        if not cols.size:  # any shape reshapes when empty: check it, as a failure would
            self.infer(cols, output_size=output_size, kernel_size=kernel_size,
                       dilation=dilation, padding=padding, stride=stride, layout=layout)
        counts = window_positions(output_size, kernel_size, dilation, padding, stride)
        if layout == "nlc":
            looped = _numba_fold(xp, cols, output_size, kernel_size, dilation, padding, stride,
                                 counts)
            if looped is not None:
                return looped
        nd = len(kernel_size)
        # the canvas covers the padded output and every window, even past a negative high pad
        canvas = tuple(s + lo + max(hi, 0) for s, (lo, hi) in
                       zip(output_size, padding, strict=True))
        n = cols.shape[0]
        every = slice(None)
        if layout == "nlc":  # (N, L, ∏kernel·C): sum on a channels-last canvas
            c = cols.shape[2] // prod(kernel_size)
            blocks = cols.reshape((n,) + counts + kernel_size + (c,))
            out = xp.zeros((n,) + canvas + (c,), dtype=cols.dtype)
        else:
            c = cols.shape[1] // prod(kernel_size)
            blocks = cols.reshape((n, c) + kernel_size + counts)
            out = xp.zeros((n, c) + canvas, dtype=cols.dtype)
        # one strided add per kernel offset (9 for 3×3), each over every window at once, a few
        # samples at a time so that the part of the canvas being summed into stays in cache
        per_sample = max(1, out[:1].nbytes)
        chunk = max(1, _FOLD_CHUNK_BYTES // per_sample)
        offsets = list(itertools.product(*(range(k) for k in kernel_size)))
        for s in range(0, n, chunk):
            batch = slice(s, s + chunk)
            for offset in offsets:
                where = tuple(slice(o * d, o * d + st * (m - 1) + 1, st) for o, d, st, m in
                              zip(offset, dilation, stride, counts, strict=True))
                if layout == "nlc":
                    out[(batch,) + where + (every,)] += blocks[(batch,) + (every,) * nd + offset]
                else:
                    out[(batch, every) + where] += blocks[(batch, every) + offset]
        crop = tuple(slice(lo, lo + s) for s, (lo, _) in zip(output_size, padding, strict=True))
        # dense, as PyTorch's (a crop of the padded canvas would be a strided view)
        if layout == "nlc":
            return xp.ascontiguousarray(out[(every,) + crop + (every,)]).transpose(
                (0, nd + 1, *range(1, nd + 1)))
        return xp.ascontiguousarray(out[(every, every) + crop])

    def infer(self, cols, *, output_size, kernel_size, dilation, padding, stride,
              layout="ncl"):
        k = prod(kernel_size)
        rows, blocks = (2, 1) if layout == "nlc" else (1, 2)
        if len(cols.shape) != 3:
            raise ShapeError(f"fold: expected a (N, C·∏kernel_size, L) input, got shape "
                             f"{cols.shape}")
        if cols.shape[rows] % k:
            raise ShapeError(f"fold: input size {cols.shape[rows]} along dimension {rows} is "
                             f"not divisible by the kernel's {k} elements (kernel_size "
                             f"{kernel_size})")
        counts = window_counts(output_size, kernel_size, dilation, padding, stride, "fold")
        if cols.shape[blocks] != prod(counts):
            raise ShapeError(f"fold: input has {cols.shape[blocks]} blocks along dimension "
                             f"{blocks} "
                             f"but output_size {output_size} with kernel_size {kernel_size}, "
                             f"dilation {dilation}, padding {padding}, stride {stride} has "
                             f"{prod(counts)} ({' x '.join(map(str, counts))})")
        return TensorSpec((cols.shape[0], cols.shape[rows] // k) + tuple(output_size),
                          cols.dtype)

    def vjp(self, ctx, g):
        p = ctx.params
        return unfold_nd(g, kernel_size=p["kernel_size"], dilation=p["dilation"],
                         padding=p["padding"], stride=p["stride"],
                         layout=p.get("layout", "ncl"))

    def jvp(self, ctx, dcols):
        return fold_nd(dcols, **ctx.params)


def unfold_nd(x: Tensor, *, kernel_size: tuple[int, ...], dilation: tuple[int, ...],
              padding: Pads, stride: tuple[int, ...], op: str = "unfold",
              layout: str = "ncl") -> Tensor:
    """im2col over any number of spatial dims, all arguments already normalised; ``op``
    names the caller in errors. ``layout="nlc"`` gives (N, L, ∏kernel·C), the channels
    innermost, instead of (N, C·∏kernel, L): reshaped to (N·L, ∏kernel·C), one GEMM covers
    the whole batch (with the weight's channels moved last to match)."""
    window_counts(tuple(x.shape[2:]), kernel_size, dilation, padding, stride, op)
    extra = {"layout": layout} if layout != "ncl" else {}
    return apply(Unfold, x, kernel_size=kernel_size, dilation=dilation, padding=padding,
                 stride=stride, **extra)


def fold_nd(cols: Tensor, output_size: tuple[int, ...], *, kernel_size: tuple[int, ...],
            dilation: tuple[int, ...], padding: Pads, stride: tuple[int, ...],
            layout: str = "ncl") -> Tensor:
    """col2im over any number of spatial dims, all arguments already normalised; ``layout``
    as :func:`unfold_nd`'s (the output is (N, C, *output_size) either way)."""
    extra = {"layout": layout} if layout != "ncl" else {}
    return apply(Fold, cols, output_size=tuple(output_size), kernel_size=kernel_size,
                 dilation=dilation, padding=padding, stride=stride, **extra)


def _given_pads(op: str, padding: Any) -> Pads:
    """F.unfold's and F.fold's ``padding`` (an int or 2), checked non-negative, per side."""
    pads = ntuple(padding, 2, op, "padding")
    if min(pads) < 0:
        raise ShapeError(f"{op}: padding must be non-negative, got {padding!r}. Hint: crop the "
                         "input instead of padding it negatively")
    return symmetric(pads)


def unfold(input: Tensor, kernel_size: Any, dilation: Any = 1, padding: Any = 0,
           stride: Any = 1) -> Tensor:
    """Extracts sliding local blocks (im2col), as ``torch.nn.functional.unfold``.

    A (N, C, H, W) input gives (N, C·kh·kw, L), L the number of block positions; a (C, H, W)
    input gives (C·kh·kw, L).

    Example:
        >>> F.unfold(ember.ones(1, 2, 4, 4), kernel_size=2).shape
        ember.Size([1, 8, 9])
    """
    x, added = batched(input, 2, "unfold")
    out = unfold_nd(x, kernel_size=ntuple(kernel_size, 2, "unfold", "kernel_size"),
                    dilation=ntuple(dilation, 2, "unfold", "dilation"),
                    padding=_given_pads("unfold", padding),
                    stride=ntuple(stride, 2, "unfold", "stride"))
    if not getattr(getattr(out._data, "flags", None), "writeable", True):
        # one-element windows: the primitive's read-only view of the input (pooling reads it
        # as is); the public op's result is new writable memory, as PyTorch's
        out = out.clone(memory_format=contiguous_format)
    return out.reshape(out.shape[1:]) if added else out


def fold(input: Tensor, output_size: Any, kernel_size: Any, dilation: Any = 1,
         padding: Any = 0, stride: Any = 1) -> Tensor:
    """Sums sliding local blocks back into an image (col2im), as ``torch.nn.functional.fold``.

    A (N, C·kh·kw, L) input gives (N, C, *output_size); a 2-D input is one unbatched sample.

    Example:
        >>> F.fold(ember.ones(1, 8, 9), output_size=(4, 4), kernel_size=2).shape
        ember.Size([1, 2, 4, 4])
    """
    if input.ndim not in (2, 3):
        raise ShapeError(f"fold: expected a 2-D (C·kh·kw, L) or 3-D (N, C·kh·kw, L) input, "
                         f"got shape {tuple(input.shape)}")
    x = input if input.ndim == 3 else input.reshape((1, *input.shape))
    out = fold_nd(x, ntuple(output_size, 2, "fold", "output_size"),
                  kernel_size=ntuple(kernel_size, 2, "fold", "kernel_size"),
                  dilation=ntuple(dilation, 2, "fold", "dilation"),
                  padding=_given_pads("fold", padding),
                  stride=ntuple(stride, 2, "fold", "stride"))
    return out if input.ndim == 3 else out.reshape(out.shape[1:])
