"""3×3 stride-1 convolutions and their weight gradients by Winograd's F(2×2, 3×3): 2.25×
fewer multiply-adds than im2col.

Each 2×2 block of outputs (a tile) is 16 products per channel pair (the transforms:
:mod:`ember.ops.winograd_numba`): the input tiles transformed into 16 matrices of (tiles, Cin),
each multiplied by its transformed weight (Cin, Cout), the 16 products transformed back.
Each core takes a contiguous share of the tiles, ~2 MiB of them at a time on one BLAS thread,
so the transformed tiles are still in cache when their GEMM and output transform read them
(the 16× larger whole is never made). They lie position-major, each GEMM's operand a
contiguous matrix (tile-major, OpenBLAS read its rows 16·C apart: 64 channels at 32×32 took
9.3 ms, now 6.6; `resnet18`'s compiled step 440 → 417 ms). A transformed weight over
4 MiB (more than 256 × 256 channels in float32), which each share would pack whole, is
multiplied instead by all the tiles at once (~24 MiB at a time), each GEMM on all BLAS
threads. (That way for the smaller weights made `resnet18`'s compiled step slower, 451 →
496 ms.)

It runs where it wins: a float32/float64 NumPy convolution with a 3×3 kernel, stride and
dilation 1, at least 32 input and output channels (at most 1024 × 1024) and 512 tiles (128
with a weight over 4 MiB), with numba. Measured on 2 cores, channels-last input: N=32, 64
channels at 32×32 15.9 → 10.5 ms, 128 at 16×16 14.8 → 8.6, 256 at 8×8 15.6 → 8.9, 512 at 4×4
(128 tiles) 8.2 → 6.2; N=128, 32 → 64 channels at 14×14 6.9 → 4.4 (`resnet18`'s compiled
step with its 512-channel layers so: 467 → 450 ms). Below, the GEMMs are too small to pay for
the transforms: 16 channels even, 8 channels 1.0 → 1.8 ms. Its results differ from im2col's by
rounding (as close to the exact convolution, tested).

The weight gradient (:func:`weight_grad3x3`) is the adjoint: the input tiles transformed as
above, the output gradient's 2×2 blocks by ``A dY Aᵀ``, 16 GEMMs (Cin × tiles)(tiles × Cout)
summed over each share's tiles, and ``Gᵀ · G`` of the sums. Where the convolution runs by
Winograd and its transformed weight is at most 4 MiB: N=32, 64 channels at 32×32 10.9 → 8.0
ms, 128 at 16×16 9.9 → 6.0, 256 at 8×8 9.3 → 7.7; `resnet18`'s compiled step 420 → 390 ms.
(512 channels at 4×4 took 23 ms against im2col's 9.4: 16 products of 512 × 512 from 128
tiles.) Its shares' sums add in order, the same bits on every run.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from ember.backend import compiled, gemm, parallel

__all__: list[str] = []

_KERNELS = compiled.register("ember.ops.winograd_numba")

_MIN_CHANNELS = 32
_MIN_TILES = 512
_MIN_TILES_SHARED = 128  # enough where the weight is large (each GEMM on all BLAS threads)
_MAX_CHANNEL_PAIRS = 1 << 20  # Cout·Cin: the transformed weight, 16 of each, 64 MiB in float32
_CHUNK_BYTES = 2 << 20  # transformed tiles (tiles × 16 × channels) per GEMM
_SHARED_WEIGHT_BYTES = 4 << 20  # a larger transformed weight: one GEMM at a time on all threads
_WHOLE_CHUNK_BYTES = 24 << 20  # transformed tiles per GEMM then
_SKEW = 64  # values past each position's row, so that the 16 rows fall in different L1 sets


def applies(xp: Any, x: Any, weight: tuple[int, ...], counts: tuple[int, ...], dilation: tuple,
            stride: tuple, compute: Any) -> bool:
    """Whether this convolution of ``x`` with a weight of shape ``weight`` (of ``counts``
    outputs per image) runs by Winograd (:func:`conv3x3`), rather than im2col; its weight
    gradient does too (:func:`weight_grad3x3`) where the transformed weight is at most 4 MiB."""
    if xp is not np or compute is not None or len(weight) != 4 or weight[2:] != (3, 3) or \
            stride != (1, 1) or dilation != (1, 1) or x.dtype not in (np.float32, np.float64):
        return False
    tiles = x.shape[0] * -(-counts[0] // 2) * -(-counts[1] // 2)
    enough = tiles >= _MIN_TILES or (tiles >= _MIN_TILES_SHARED and
                                     _weight_bytes(weight, x.dtype) > _SHARED_WEIGHT_BYTES)
    return min(weight[:2]) >= _MIN_CHANNELS and enough and \
        weight[0] * weight[1] <= _MAX_CHANNEL_PAIRS and compiled.numba_enabled()


def _weight_bytes(weight: tuple[int, ...], dtype: Any) -> int:
    """The size of a transformed weight of shape ``weight``: 16 matrices of (Cin, Cout)."""
    return 16 * weight[0] * weight[1] * np.dtype(dtype).itemsize


def conv3x3(x: np.ndarray, w: np.ndarray, counts: tuple[int, int], pad: tuple[int, int],
            bias: np.ndarray | None = None) -> np.ndarray | None:
    """The (N, Cout, *counts) convolution of ``x`` (N, Cin, H, W) with ``w`` (Cout, Cin, 3, 3),
    ``pad`` rows and columns of zeros before the image (after it as ``counts`` implies), plus
    ``bias`` (Cout,) if given (added as each output is written), as a channels-last array;
    None if numba's kernels failed to load.

    Example:
        >>> conv3x3(x, w, (32, 32), (1, 1)).shape  # x (32, 64, 32, 32), w (64, 64, 3, 3)
        (32, 64, 32, 32)
    """
    kernels = compiled.load(_KERNELS)
    if kernels is None:
        return None
    rows = np.ascontiguousarray(x.transpose(0, 2, 3, 1))  # a view of a channels-last input
    tiling = (-(-counts[0] // 2), -(-counts[1] // 2)) + tuple(pad)
    y = np.empty((x.shape[0],) + tuple(counts) + (w.shape[0],), x.dtype)
    tiles = x.shape[0] * tiling[0] * tiling[1]
    bias = None if bias is None else np.array(bias, order="C")
    if _weight_bytes(w.shape, w.dtype) > _SHARED_WEIGHT_BYTES:  # (each share would pack it)
        _tiles(kernels, rows, _transformed(w), y, bias, tiling, 0, tiles, _WHOLE_CHUNK_BYTES)
    else:
        with gemm.one_thread_each():  # (BLAS's threads would spin on the cores the shares use)
            share = partial(_tiles, kernels, rows, _transformed(w), y, bias, tiling)
            parallel.run([partial(share, lo, hi, _CHUNK_BYTES)
                          for lo, hi in parallel.blocks(tiles, parallel.workers())])
    return y.transpose(0, 3, 1, 2)


_G = np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]])
_G_G = {t: np.kron(_G, _G).astype(t) for t in (np.float32, np.float64)}  # [4a+b, 3i+j]


def weight_grad3x3(x: np.ndarray, g: np.ndarray, pad: tuple[int, int]) -> np.ndarray | None:
    """The (Cout, Cin, 3, 3) weight gradient of :func:`conv3x3` of ``x`` (N, Cin, H, W) given
    its output gradient ``g`` (N, Cout, Ho, Wo): ``Gᵀ [Σ_tiles (Bᵀ d B) ⊙ (A dY Aᵀ)] G``, 16
    GEMMs (Cin, tiles) by (tiles, Cout) summing over the tiles. None if numba's kernels failed
    to load.

    Example:
        >>> weight_grad3x3(x, g, (1, 1)).shape  # x (32, 64, 32, 32), g (32, 128, 32, 32)
        (128, 64, 3, 3)
    """
    kernels = compiled.load(_KERNELS)
    if kernels is None or _weight_bytes(g.shape[1:2] + x.shape[1:2], x.dtype) > \
            _SHARED_WEIGHT_BYTES:  # (a share's sums: 16 GEMMs' results a share)
        return None
    rows = np.ascontiguousarray(x.transpose(0, 2, 3, 1))  # views of channels-last arrays
    grads = np.ascontiguousarray(g.transpose(0, 2, 3, 1))
    tiling = (-(-g.shape[2] // 2), -(-g.shape[3] // 2)) + tuple(pad)
    blocks = [(lo, hi) for lo, hi in parallel.blocks(x.shape[0] * tiling[0] * tiling[1],
                                                     parallel.workers()) if hi > lo]
    shares: list[Any] = [None] * len(blocks)

    def share(i: int, lo: int, hi: int) -> None:
        shares[i] = _tile_sums(kernels, rows, grads, tiling, lo, hi, _CHUNK_BYTES)

    with gemm.one_thread_each():
        parallel.run([partial(share, i, lo, hi) for i, (lo, hi) in enumerate(blocks)])
        total = shares[0]
        for other in shares[1:]:  # in order: the same bits on every run
            total += other
        cin, cout = total.shape[1:]
        taps = (_G_G[x.dtype.type].T @ total.reshape(16, -1)).reshape(3, 3, cin, cout)
    return np.ascontiguousarray(taps.transpose(3, 2, 0, 1))


def _transformed(w: np.ndarray) -> np.ndarray:
    """``G g Gᵀ`` of every 3×3 kernel ``g`` of ``w`` (Cout, Cin, 3, 3) as the GEMMs' operand
    (16, Cin, Cout): one GEMM of the 16×9 ``G ⊗ G`` with the taps, in whichever order they lie
    (a weight's (Cout, Cin, 3·3), or the input gradient's flipped weight's (3·3, Cin, Cout))."""
    cout, cin = w.shape[:2]
    if w.flags.c_contiguous:
        taps = w.reshape(-1, 9).T
        return (_G_G[w.dtype.type] @ taps).reshape(16, cout, cin).transpose(0, 2, 1)
    taps = w.transpose(2, 3, 1, 0).reshape(9, -1)  # (a copy only for another layout)
    return (_G_G[w.dtype.type] @ taps).reshape(16, cin, cout)


def _tiles(kernels: Any, rows: np.ndarray, weights: np.ndarray, y: np.ndarray,
           bias: np.ndarray | None, tiling: tuple[int, ...], lo: int, hi: int,
           budget: int) -> None:
    """Tiles ``lo … hi-1``, a chunk of ~``budget`` bytes at a time: transform in, 16 GEMMs,
    transform out (plus ``bias``, if given)."""
    cin, cout = weights.shape[1:]
    per = max(1, min(hi - lo, budget // (16 * max(cin, cout) * rows.itemsize)))
    v, m = (np.empty((16, per * c + _SKEW), rows.dtype) for c in (cin, cout))
    scratch = np.empty((4, 4, cin), rows.dtype)
    for first in range(lo, hi, per):
        count = min(per, hi - first)
        kernels.tiles_in(rows, v, first, count, tiling, scratch)
        np.matmul(_by_position(v, count, cin), weights, out=_by_position(m, count, cout))
        kernels.tiles_out(m, count, y, first, tiling)
        if bias is not None:
            kernels.add_bias(y, bias, first, count, tiling)


def _tile_sums(kernels: Any, rows: np.ndarray, grads: np.ndarray, tiling: tuple[int, ...],
               lo: int, hi: int, budget: int) -> np.ndarray:
    """``Σ (Bᵀ d B)ᵀ (A dY Aᵀ)`` over tiles ``lo … hi-1`` at each of the 16 positions, (16,
    Cin, Cout), a chunk of ~``budget`` bytes at a time."""
    cin, cout = rows.shape[3], grads.shape[3]
    per = max(1, min(hi - lo, budget // (16 * max(cin, cout) * rows.itemsize)))
    v, dm = (np.empty((16, per * c + _SKEW), rows.dtype) for c in (cin, cout))
    scratch = np.empty((4, 4, cin), rows.dtype)
    total = np.empty((16, cin, cout), rows.dtype)
    part = np.empty_like(total) if hi - lo > per else None
    for first in range(lo, hi, per):
        count = min(per, hi - first)
        kernels.tiles_in(rows, v, first, count, tiling, scratch)
        kernels.grads_in(grads, dm, first, count, tiling)
        np.matmul(_by_position(v, count, cin).transpose(0, 2, 1), _by_position(dm, count, cout),
                  out=total if first == lo else part)
        if first > lo:
            total += part
    return total


def _by_position(tiles: np.ndarray, count: int, channels: int) -> np.ndarray:
    """The first ``count`` of a chunk's transformed tiles, ``tiles`` (16, ≥count·C), as 16
    contiguous matrices (16, count, C): a view."""
    return tiles[:, :count * channels].reshape((16, count, channels), copy=False)
