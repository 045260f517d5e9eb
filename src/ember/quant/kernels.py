"""The integer arithmetic of quantized kernels, on NumPy arrays, as PyTorch's fbgemm backend
computes it.

Products accumulate exactly: the centred integers ``q - zero_point`` are multiplied in a
BLAS GEMM, in float32 while every partial sum stays below 2**24 (8-bit data with dot products
of a few hundred terms), else in float64 (below 2**53: an int8 × uint8 dot product of 2**37
terms), exact for integers either way (fbgemm's depthwise kernels are not: they add pairs
of products in saturating int16, which :func:`depthwise_saturation` models, and clamp their
windows' activation sums, which :func:`row_offset_saturation` models). The
accumulator is then requantized as
fbgemm's ``ReQuantizeOutput`` does, in float32: ``act_times_w_scale = input_scale *
weight_scale``, ``multiplier = act_times_w_scale / output_scale``, ``acc + bias /
act_times_w_scale`` (per-tensor weights: ``fma(bias, 1 / act_times_w_scale, acc)``: fbgemm's
mul and add, which the compiler contracts to one FMA), times ``multiplier``, rounded to
nearest even, plus the output zero point, clamped to the output range (from the zero point
up with a fused ReLU)."""

from __future__ import annotations

import functools
import sys
import warnings
from typing import Any

import numpy as np

from ember.ops.im2col import symmetric, window_positions, windows

_F32 = np.float32
VECTOR_BLOCK = 64  # elements ATen's vectorized quantized loops take at a time


_INT32_FLOAT_MAX = 2147483520.0  # the largest float32 below 2**31


def _x86_int(t: np.ndarray, bits: int) -> np.ndarray:
    """x86's conversion of float32 ``t`` to a ``bits``-bit integer (int32 or int64): rounded
    to nearest even; the type's minimum (its "integer indefinite") where the rounded value
    leaves the type's range or ``t`` is NaN."""
    r = np.rint(t)
    bound = _F32(2.0 ** (bits - 1))
    valid = (r >= -bound) & (r < bound)
    return np.where(valid, r, -bound).astype(np.int32 if bits == 32 else np.int64)


def quantize_rounded(x: np.ndarray, inv_scale: Any, zero_point: int, low: int = 0,
                     high: int = 255, storage: type = np.uint8) -> np.ndarray:
    """ATen's vectorized quantization to 8 bits (uint8 unless told): ``nearbyint(x *
    inv_scale)`` in float32, then the zero point added (after rounding, unlike
    :func:`quantize`), clamped to ``[low, high]``. Out of int32 as its AVX code: the product
    is first capped at the largest float32 below 2**31 (NaN too), a value below -2**31
    converts to its minimum, and the zero point is added in int32 arithmetic, which wraps."""
    with np.errstate(over="ignore", invalid="ignore"):
        t = np.fmin(np.asarray(x, _F32) * _F32(inv_scale), _F32(_INT32_FLOAT_MAX))
        # (capped, no NaN: only the int32 minimum can be passed, as _x86_int would find)
        total = np.maximum(np.rint(t), _F32(-(2.0**31))).astype(np.int32) + np.int32(zero_point)
    return np.clip(total, np.int32(low), np.int32(high)).astype(storage)


def requantize_int(acc: np.ndarray, multiplier: np.float32, zero_point: int, low: int = 0,
                   high: int = 255, storage: type = np.uint8, vector: bool = False
                   ) -> np.ndarray:
    """ATen's ``requantize_from_int`` to 8 bits (uint8 unless told): ``zero_point +
    nearbyint(float(acc) * multiplier)``, clamped to ``[low, high]``. Where the product
    leaves the integers: its scalar kernel converts to 64 bits (``lrintf``), its vectorized
    one (``vector``) to 32 (a product beyond int32 becomes its minimum, and the zero point is
    added with int32 wraparound); NaN or infinite products take the minimum either way."""
    with np.errstate(over="ignore", invalid="ignore"):
        t = np.asarray(acc, _F32) * _F32(multiplier)
        bits, kind = (32, np.int32) if vector else (64, np.int64)
        total = _x86_int(t, bits) + kind(zero_point)  # (wraps, as C's)
    return np.clip(total, kind(low), kind(high)).astype(storage)


def quantize(x: np.ndarray, scale: Any, zero_point: Any, low: int, high: int,
             storage: np.dtype, axis: int | None = None, nan_to: int | None = None,
             sub_byte: bool = False) -> np.ndarray:
    """``x`` quantized to ``storage`` integers in ``[low, high]`` as PyTorch's CPU kernels,
    per tensor or per channel along ``axis``: ``nearbyint(x * (1 / scale) + zero_point)``,
    the zero point (an integer, or a float one per channel: ``per_channel_affine_float_qparams``)
    added before rounding. Per tensor to 8 bits (fbgemm's vectorized ``Quantize``) as a fused
    multiply-add rounded once to float32, else in two float32 steps. Out-of-range values
    saturate; NaN becomes the top per tensor to 8 bits, 0 per channel to 8 bits, and the
    bottom to 32 bits (PyTorch's kernels' conversions), unless ``nan_to`` says otherwise.
    ``sub_byte`` (per tensor to 4 bits, ATen's sub-byte kernel): ``nearbyint(x * (1 /
    scale)) + zero_point``, the zero point added after rounding, and NaN, infinities and
    values past int64 (where ``lrintf`` overflows to its minimum) give ``low``.
    Always an array, 0-d too."""
    x = np.asarray(x, _F32)
    inv_scale = _F32(1) / _along(np.asarray(scale), axis, x.ndim).astype(_F32)
    zero_point = _along(np.asarray(zero_point), axis, x.ndim)
    if sub_byte:
        with np.errstate(over="ignore", invalid="ignore"):
            t = np.rint(x * inv_scale) + zero_point.astype(_F32)
            t = np.where(np.abs(t) < _F32(2.0**63), t, _F32(low))  # (NaN fails it too)
        return np.asarray(np.clip(t, low, high).astype(storage))
    eight_bits = np.dtype(storage).itemsize == 1
    if axis is None and eight_bits:  # (exact in float64, then rounded once: an fma)
        t = (x.astype(np.float64) * np.float64(inv_scale) + zero_point).astype(_F32)
    else:
        t = x * inv_scale + zero_point.astype(_F32)
    if nan_to is None:
        nan_to = low if not eight_bits else high if axis is None else 0
    t = np.where(np.isnan(t), _F32(nan_to), t)  # (then clipped in float64: 2**31 - 1 is exact)
    return np.asarray(np.clip(np.rint(t).astype(np.float64), low, high).astype(storage))


def dequantize(q: np.ndarray, scale: Any, zero_point: Any, axis: int | None = None
               ) -> np.ndarray:
    """``(q - zero_point) * scale``: in float32 per tensor (fbgemm's ``Dequantize``) and with
    float zero points (``per_channel_affine_float_qparams``); per channel the difference in
    float32 times the float64 scales, rounded to float32 (as PyTorch)."""
    if axis is not None and np.asarray(zero_point).dtype.kind == "f":  # float qparams
        out = ((q.astype(_F32) - _along(np.asarray(zero_point, _F32), axis, q.ndim))
               * _along(np.asarray(scale, _F32), axis, q.ndim))
    elif axis is not None:  # (float32(q) - float32(zero_point), exact to 8 bits)
        scale = _along(np.asarray(scale, dtype=np.float64), axis, q.ndim)
        zero_point = _along(np.asarray(zero_point, dtype=np.int64), axis, q.ndim)
        out = ((q.astype(_F32) - zero_point.astype(_F32)) * scale).astype(_F32)
    else:
        out = (q.astype(np.int64) - np.int64(zero_point)).astype(_F32) * _F32(scale)
    return np.asarray(out)


def _along(values: np.ndarray, axis: int | None, ndim: int) -> np.ndarray:
    """Per-channel values shaped to broadcast along ``axis`` (as they are when None)."""
    if axis is None or values.ndim == 0:
        return values
    shape = [1] * ndim
    shape[axis] = -1
    return values.reshape(shape)


def centred(q: np.ndarray, zero_point: Any, axis: int | None = None) -> np.ndarray:
    """``q - zero_point`` as float64 (exact), the operand of the integer GEMMs."""
    zp = _along(np.asarray(zero_point, dtype=np.float64), axis, q.ndim)
    return q.astype(np.float64) - zp


def exact_dtype(x: np.ndarray, w: np.ndarray, terms: int) -> type:
    """The float type in which a GEMM of the integers ``x`` and ``w`` with ``terms``-long dot
    products is exact whatever the order of its sums: float32 while every partial sum stays
    below 2**24 (the common case for 8-bit data: 255 · 128 · 514), else float64 (2**53)."""
    if not x.size or not w.size:
        return np.float64
    bound = float(np.abs(x).max()) * float(np.abs(w).max()) * terms
    return np.float32 if bound < 2**24 else np.float64


def linear_accumulate(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``x @ w.T`` of centred integers: the exact int32 accumulator."""
    dtype = exact_dtype(x, w, w.shape[1])
    return x.astype(dtype, copy=False) @ w.astype(dtype, copy=False).T


def conv_accumulate(x: np.ndarray, w: np.ndarray, stride: tuple[int, ...],
                    padding: tuple[int, ...], dilation: tuple[int, ...],
                    groups: int) -> np.ndarray:
    """The 1-, 2- or 3-D convolution of centred integers ``x`` (N, C, *spatial) with ``w``
    (O, C/groups, *kernel), zero padding (the input's zero point, centred): the exact
    accumulator. An im2col in channels-last order (its copy reads runs of channels) and one
    GEMM per group."""
    n, nd = x.shape[0], x.ndim - 2
    o, cg, *kernel = w.shape
    kernel = tuple(kernel)
    k = int(np.prod(kernel))
    dtype = exact_dtype(x, w, cg * k)
    pads = symmetric(padding)
    counts = window_positions(x.shape[2:], kernel, dilation, pads, stride)
    win = windows(np, x.astype(dtype, copy=False), kernel, dilation, pads, stride, counts,
                  channels_last=True)  # (N, C, *kernel, *counts)
    win = win.reshape(n, groups, cg, *kernel, *counts)
    # → (groups, N, *counts, *kernel, C/groups): rows of (*kernel, C/groups)
    win = win.transpose(1, 0, *range(3 + nd, 3 + 2 * nd), *range(3, 3 + nd), 2)
    positions = int(np.prod(counts))
    cols = win.reshape(groups, n * positions, k * cg)
    wg = w.astype(dtype, copy=False).reshape(groups, o // groups, cg, k)
    wg = wg.transpose(0, 1, 3, 2).reshape(groups, o // groups, k * cg)
    out = cols @ wg.transpose(0, 2, 1)  # (groups, N·positions, O/groups)
    out = out.reshape(groups, n, positions, o // groups).transpose(1, 0, 3, 2)
    return np.ascontiguousarray(out.reshape(n, o, *counts))


def depthwise_fast_path(channels: int, out_channels: int, groups: int, kernel: tuple[int, ...],
                        stride: tuple[int, ...], padding: tuple[int, ...],
                        dilation: tuple[int, ...]) -> bool:
    """Whether fbgemm runs this (2-D or 3-D, zero-padded) convolution through its depthwise
    kernels (``takeDepthWiseFastPath``): groups equal to the input channels, a multiple of 8,
    one or two output channels per group, kernels of 3, 5 or 7 (the last two equal), strides
    1 or 2, no dilation, padding ``(k - 1) // 2``."""
    return (len(kernel) >= 2 and groups == channels and groups % 8 == 0
            and out_channels in (groups, 2 * groups) and kernel[-1] == kernel[-2]
            and all(k in (3, 5, 7) for k in kernel) and all(s in (1, 2) for s in stride)
            and all(d == 1 for d in dilation)
            and all(p == (k - 1) // 2 for p, k in zip(padding, kernel)))


def _cpu_features() -> dict:
    """NumPy's runtime CPU feature table (checked against what the OS enables); there is no
    public accessor in NumPy 2.x (``np.show_runtime`` only prints it), so {} if it moved."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__
    except ImportError:
        try:
            from numpy.core._multiarray_umath import __cpu_features__
        except ImportError:
            return {}
    return dict(__cpu_features__)


@functools.cache
def avx512_vnni() -> bool:
    """Whether this CPU has AVX-512 VNNI (NumPy's feature table, else Linux's
    ``/proc/cpuinfo`` flags; False when neither says), on which PyTorch's ``"x86"`` engine
    sends some convolutions to oneDNN. (AVX-VNNI without AVX-512 does not count.)"""
    features = _cpu_features()
    if "AVX512VNNI" in features:
        return bool(features["AVX512VNNI"])
    try:
        with open("/proc/cpuinfo") as f:
            return any(line.startswith("flags") and "avx512_vnni" in line.split() for line in f)
    except OSError:
        return False


def x86_uses_onednn(weight_zero_points: Any, groups: int) -> bool:
    """Whether PyTorch's ``"x86"`` engine runs a (non-transposed) convolution with oneDNN
    rather than fbgemm (``should_use_onednn_quant``): on Linux only (elsewhere it keeps
    fbgemm), on CPUs with AVX-512 VNNI, weight zero points all 0 and at most 100 groups."""
    return (sys.platform.startswith("linux") and avx512_vnni() and groups <= 100
            and not np.any(weight_zero_points))


def _largest_tap(q: np.ndarray, zero_point: int, padding: tuple[int, ...]) -> int:
    """The largest uint8 value a depthwise tap reads: an activation, or the padding (which
    holds the zero point)."""
    return max(int(q.max(initial=0)), zero_point if any(padding) else 0)


def _depthwise_windows(q: np.ndarray, zero_point: int, kernel: tuple[int, ...],
                       stride: tuple[int, ...], padding: tuple[int, ...]
                       ) -> tuple[np.ndarray, tuple[int, ...]]:
    """The windows of ``q`` (N, C, *spatial) as (N, C, taps, positions), taps in kernel order,
    padding reading ``zero_point``, and the output's spatial size."""
    pads = symmetric(padding)
    ones = (1,) * len(kernel)
    counts = window_positions(q.shape[2:], kernel, ones, pads, stride)
    win = windows(np, q, kernel, ones, pads, stride, counts, value=zero_point)
    return win.reshape(*q.shape[:2], int(np.prod(kernel)), -1), counts


def _clamping_pairs(w: np.ndarray, largest: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Which tap pairs (0 and 1, 2 and 3, ...) of the int8 weights ``w`` (O, taps) can leave
    int16 for activations in [0, ``largest``]: only same-sign weights can add up past it.
    Returns the (O, pairs) mask and the pairs' first and second weights as int32."""
    first, second = w[:, 0:w.shape[1] - 1:2].astype(np.int32), w[:, 1::2].astype(np.int32)
    high = largest * (np.maximum(first, 0) + np.maximum(second, 0))
    low = largest * (np.minimum(first, 0) + np.minimum(second, 0))
    return (high > 32767) | (low < -32768), first, second


def depthwise_saturation(q: np.ndarray, zero_point: int, w: np.ndarray,
                         stride: tuple[int, ...], padding: tuple[int, ...]) -> np.ndarray | int:
    """What fbgemm's depthwise kernels lose to int16 saturation, to add to the exact
    accumulator: they multiply the uint8 activations ``q`` (padding: ``zero_point``) by the
    int8 weights ``w`` (O, 1, *kernel) tap by tap in kernel order, and add each pair of taps
    (0 and 1, 2 and 3, ...) with ``vpmaddubsw``, which saturates the pair's sum to
    [-32768, 32767] (a lone last tap fits). Only the (channel, pair)s whose weights can reach
    that are computed; 0 when none can (7-bit activations never do)."""
    o, kernel = w.shape[0], tuple(w.shape[2:])
    can, first, second = _clamping_pairs(w.reshape(o, -1), _largest_tap(q, zero_point, padding))
    if not can.any():
        return 0
    win, counts = _depthwise_windows(q, zero_point, kernel, stride, padding)
    per_group = o // q.shape[1]  # (1 or 2 output channels read each input channel)
    lost = np.zeros((q.shape[0], o, win.shape[-1]), np.int32)
    for p in np.flatnonzero(can.any(axis=0)):
        out = np.flatnonzero(can[:, p])
        taps = win[:, out // per_group, 2 * p:2 * p + 2].astype(np.int32)
        pair = taps[:, :, 0] * first[out, p, None] + taps[:, :, 1] * second[out, p, None]
        lost[:, out] += np.clip(pair, -32768, 32767) - pair
    return lost.reshape(q.shape[0], o, *counts)


def row_offset_saturation(q: np.ndarray, zero_point: int, weight_zero_points: Any,
                          out_channels: int, kernel: tuple[int, ...], stride: tuple[int, ...],
                          padding: tuple[int, ...]) -> np.ndarray | int:
    """What fbgemm's depthwise kernels add to the exact accumulator by saturating each
    window's activation sum (its row offset, subtracted times the weight zero point) at
    32767: ``w_zp * (rowsum - min(rowsum, 32767))`` per output channel. Only windows of more
    than 128 taps (3-D kernels: 3×7×7, 5×7×7, 7×5×5, 7×7×7) can pass it, and only a weight
    zero point other than 0 makes it count; 0 otherwise."""
    zero_points = np.broadcast_to(np.asarray(weight_zero_points, np.int64), (out_channels,))
    taps = int(np.prod(kernel))
    if not zero_points.any() or taps * _largest_tap(q, zero_point, padding) <= 32767:
        return 0
    win, counts = _depthwise_windows(q, zero_point, kernel, stride, padding)
    rowsum = win.sum(axis=2, dtype=np.int64)  # (N, C, positions)
    excess = np.repeat(rowsum - np.minimum(rowsum, 32767), out_channels // q.shape[1], axis=1)
    return (excess * zero_points[:, None]).reshape(q.shape[0], out_channels, *counts)


def conv_transpose_accumulate(x: np.ndarray, w: np.ndarray, stride: tuple[int, ...],
                              padding: tuple[int, ...], output_padding: tuple[int, ...],
                              dilation: tuple[int, ...], groups: int) -> np.ndarray:
    """The 1-, 2- or 3-D transposed convolution of centred integers ``x`` (N, C, *spatial)
    with ``w`` (C, O/groups, *kernel): the exact accumulator. Each kernel offset adds one GEMM
    per group into the strided output positions it reaches; ``padding`` then crops the full
    output and ``output_padding`` extends its end."""
    n, c, *size = x.shape
    cg, og, *kernel = w.shape[0] // groups, *w.shape[1:]
    dtype = exact_dtype(x, w, cg * int(np.prod(kernel)))
    full = [(s_in - 1) * st + d * (k - 1) + 1 + op
            for s_in, st, d, k, op in zip(size, stride, dilation, kernel, output_padding)]
    acc = np.zeros((n, groups, og, *full), dtype)
    xg = x.astype(dtype, copy=False).reshape(n, groups, cg, int(np.prod(size)))
    wg = w.astype(dtype, copy=False).reshape(groups, cg, og, *kernel)
    for offset in np.ndindex(*kernel):
        w_at = wg[(slice(None),) * 3 + offset].transpose(0, 2, 1)  # (groups, O/groups, C/groups)
        reach = tuple(slice(k * d, k * d + (s_in - 1) * st + 1, st)
                      for k, d, s_in, st in zip(offset, dilation, size, stride))
        acc[(slice(None),) * 3 + reach] += (w_at @ xg).reshape(n, groups, og, *size)
    crop = tuple(slice(p, f - p) for p, f in zip(padding, full))
    return np.ascontiguousarray(acc.reshape(n, groups * og, *full)[(slice(None),) * 2 + crop])


def requantize(acc: np.ndarray, input_scale: float, weight_scales: np.ndarray,
               bias: np.ndarray | None, output_scale: float, output_zero_point: int,
               relu: bool, channel_axis: int, low: int = 0, high: int = 255) -> np.ndarray:
    """fbgemm's requantization of an accumulator to uint8 (see the module docstring);
    ``weight_scales`` holds one scale or one per output channel (along ``channel_axis``).
    The bias joins the accumulator as fbgemm's vector kernel adds it: per output channel
    ``bias / act_times_w`` rounded, then added; per tensor by the reciprocal in one fused
    multiply-add, ``fma(bias, 1 / act_times_w, acc)`` (the two differ on exact ties of the
    output). Ember computes it in float64, then rounds to float32: the product is exact
    there, the sum nearly always (not when the terms' exponents are over ~29 apart), so this
    is one rounding but where such a float64 sum lands exactly on a float32 midpoint (about
    2**-29 of those elements), which a true FMA could round the other way."""
    act_times_w = _along(_F32(input_scale) * weight_scales.astype(_F32), channel_axis,
                         acc.ndim)
    multiplier = act_times_w / _F32(output_scale)
    raw = acc.astype(_F32)
    if bias is not None:
        b = _along(bias.astype(_F32), channel_axis, acc.ndim)
        if act_times_w.size == 1:  # (a product of float32s is exact in float64)
            reciprocal = (_F32(1) / act_times_w).astype(np.float64)
            raw = (raw.astype(np.float64) + b.astype(np.float64) * reciprocal).astype(_F32)
        else:
            raw = raw + b / act_times_w
    q = np.rint(raw * multiplier) + _F32(output_zero_point)
    return np.clip(q, output_zero_point if relu else low, high).astype(np.uint8)


def requantize_qnnpack(acc: np.ndarray, input_scale: float, weight_scales: np.ndarray,
                       bias: np.ndarray | None, output_scale: float, output_zero_point: int,
                       relu: bool, channel_axis: int) -> np.ndarray:
    """QNNPACK's requantization of an accumulator to uint8: the bias quantized to int32 with
    scale ``input_scale * weight_scale`` multiplied in float64 (PyTorch's ``QuantizeBias``
    takes the scales as doubles; pass ``weight_scales`` unrounded) and rounded to float32 by
    the ``qint32`` quantizer, ``nearbyint(bias * (1 / scale))``, added to the integers; then
    ``nearbyint(float32(acc) * multiplier)`` plus the output zero point, clamped;
    ``multiplier = (input_scale * weight_scale) * (1 / output_scale)`` in float32 (PyTorch's
    requantization scales, by the reciprocal)."""
    act_times_w = _F32(input_scale) * weight_scales.astype(_F32)
    if bias is not None:
        per_channel = act_times_w.size > 1
        bias_scales = (np.float64(input_scale) * weight_scales.astype(np.float64)).astype(_F32)
        q_bias = quantize(bias, bias_scales if per_channel else bias_scales[0],
                          np.zeros(act_times_w.size, np.int64) if per_channel else 0,
                          -2**31, 2**31 - 1, np.int32, 0 if per_channel else None)
        acc = acc + _along(q_bias.astype(np.float64), channel_axis, acc.ndim)
    multiplier = _along(act_times_w * (_F32(1) / _F32(output_scale)), channel_axis, acc.ndim)
    q = np.rint(acc.astype(_F32) * multiplier) + _F32(output_zero_point)
    return np.clip(q, output_zero_point if relu else 0, 255).astype(np.uint8)


def float_output(acc: np.ndarray, input_scale: float, weight_scales: np.ndarray,
                 bias: np.ndarray | None, relu: bool) -> np.ndarray:
    """fbgemm's ``ReQuantizeForFloat`` (dynamic quantization): ``fma(float32(acc),
    input_scale * weight_scale, bias)`` rounded once to float32 (the product of two float32
    numbers is exact in float64, and so nearly always is the sum), clamped at zero with a
    fused ReLU."""
    scales = _F32(input_scale) * _along(weight_scales.astype(_F32), -1, acc.ndim)
    out = acc.astype(_F32).astype(np.float64) * scales.astype(np.float64)
    if bias is not None:
        out = out + bias.astype(_F32).astype(np.float64)
    out = out.astype(_F32)
    return np.maximum(out, _F32(0)) if relu else out


def float_output_qnnpack(acc: np.ndarray, input_scale: float, weight_scales: np.ndarray,
                         bias: np.ndarray | None, relu: bool) -> np.ndarray:
    """QNNPACK's dynamic linear output: ``float32(acc) * (input_scale * weight_scale)``, plus
    the bias, each step rounded to float32, clamped at zero with a fused ReLU."""
    scales = _F32(input_scale) * _along(weight_scales.astype(_F32), -1, acc.ndim)
    out = acc.astype(_F32) * scales
    if bias is not None:
        out = out + bias.astype(_F32)
    return np.maximum(out, _F32(0)) if relu else out


def choose_qparams(x: np.ndarray, reduce_range: bool) -> tuple[float, int]:
    """The scale and zero point dynamic quantization picks for a uint8 activation:
    PyTorch's ``ChooseQuantizationParams`` over ``[min(x, 0), max(x, 0)]``."""
    lo = float(x.min()) if x.size else 0.0
    hi = float(x.max()) if x.size else 0.0
    return choose_qparams_for_range(lo, hi, 0, 127 if reduce_range else 255)


def choose_qparams_for_range(lo: float, hi: float, low: int, high: int,
                             preserve_sparsity: bool = False,
                             float32_scale: bool = False) -> tuple[float, int]:
    """PyTorch's C++ ``ChooseQuantizationParams`` for the range ``[lo, hi]`` and integers in
    ``[low, high]`` (float32 bounds, the scale in float64): with
    ``preserve_sparsity`` (symmetric schemes) a range across zero becomes symmetric and the
    zero point the middle of the integers. ``float32_scale`` rounds the scale to float32
    before the zero point is chosen (as PyTorch's fused observer and fake quantizer do)."""
    symmetric = preserve_sparsity and lo < 0 < hi
    if symmetric:
        sym_low, sym_high = -((high - low) // 2 + 1), (high - low) // 2
        max_scale = max(abs(_F32(lo) / _F32(sym_low)), abs(_F32(hi) / _F32(sym_high)))
        lo, hi = float(max_scale * _F32(sym_low)), float(max_scale * _F32(sym_high))
    lo, hi = float(_F32(min(lo, 0.0))), float(_F32(max(hi, 0.0)))
    scale = (hi - lo) / (high - low)
    if _F32(scale) == 0 or np.isinf(_F32(1) / _F32(scale)):
        scale = 0.1
    small = float(_F32(6.1e-5))
    if scale < small:
        amplifier = small / scale
        scale = small
        if lo == 0.0:
            hi = small * (high - low)
        elif hi == 0.0:
            lo = -small * (high - low)
        else:
            lo, hi = lo * amplifier, hi * amplifier
        lo, hi = float(_F32(lo)), float(_F32(hi))
    if float32_scale:  # (the fused observer's kernel: the zero point from the float32 scale)
        scale = float(_F32(scale))
    from_min, from_max = low - lo / scale, high - hi / scale
    error_min, error_max = abs(low) - abs(lo / scale), abs(high) - abs(hi / scale)
    initial = from_min if error_min < error_max else from_max
    if symmetric:
        initial = (low + high) / 2
    if np.isnan(initial):  # (a NaN range: C++'s int32 conversion of NaN on x86)
        return scale, -2**31
    zero_point = low if initial < low else high if initial > high else int(np.rint(initial))
    return scale, zero_point  # (float64, as PyTorch keeps it; kernels use it as float32)


_FLOAT16_MAX = 65504.0


def float16_weight(w: np.ndarray) -> np.ndarray:
    """A float weight as fbgemm's float16 GEMMs pack it: saturated to the float16 range
    (PyTorch warns, as here), then rounded to the nearest float16."""
    w = w.astype(_F32, copy=False)
    if np.any(np.abs(w) > _FLOAT16_MAX):
        warnings.warn("Found weights outside the float16 range [-65504, 65504]; they are "
                      "saturated to it", stacklevel=3)
        w = np.clip(w, -_FLOAT16_MAX, _FLOAT16_MAX)
    return w.astype(np.float16)


def float16_linear(a: np.ndarray, w16: np.ndarray, bias: np.ndarray | None,
                   relu: bool) -> np.ndarray:
    """fbgemm's float16 dynamic linear: float32 rows ``a`` times the float16 weights widened
    to float32, accumulated in float32, plus the float32 bias (clamped at zero with a fused
    ReLU). The sums' order is BLAS's, not fbgemm's: results agree to float32 rounding."""
    out = a.astype(_F32, copy=False) @ w16.astype(_F32).T
    if bias is not None:
        out = out + bias.astype(_F32)
    return np.maximum(out, _F32(0)) if relu else out
