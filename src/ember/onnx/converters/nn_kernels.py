"""Neural-network kernels: matmul, einsum, convolution, max pooling, unfold (im2col, which
average pooling and grouped convolutions trace into), fold (col2im, which transposed
convolutions trace into) and blockwise attention."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from onnx import numpy_helper

from ember.dtypes import DType, bool_, extreme, float32, float64, int32, int64, uint8
from ember.jit.ir import Eqn
from ember.onnx.context import Context, onnx_type
from ember.onnx.converters.elementwise import widened
from ember.onnx.converters.resize import dynamic_resample
from ember.onnx.registry import converter
from ember.onnx.symbolic import triangle_mask
from ember.ops.im2col import window_positions
from ember.ops.interpolate import _int16_plan


@converter("matmul")
def matmul(ctx: Context, eqn: Eqn) -> str:
    out = eqn.outputs[0].dtype
    return widened(ctx, "MatMul", [ctx.cast(ctx.value(v), v.dtype, out) for v in eqn.inputs],
                   out)


def _pads(padding: tuple) -> list[int]:
    """Ember's ``((begin, end), ...)`` as ONNX's ``[begins..., ends...]``."""
    return [p[0] for p in padding] + [p[1] for p in padding]


@converter("conv", "depthwise_conv2d")
def conv(ctx: Context, eqn: Eqn) -> str:
    """A Conv (with conv's bias as its B); a depthwise convolution's (C, 1, kh, kw) weight makes
    one group per channel."""
    x, w = eqn.inputs[:2]
    p = eqn.params
    return ctx.node("Conv", [ctx.value(v) for v in eqn.inputs], kernel_shape=list(w.shape[2:]),
                    strides=list(p["stride"]), dilations=list(p["dilation"]),
                    pads=_pads(p["padding"]), group=x.shape[1] // w.shape[1])


@converter("max_pool", shape_params=True)
def max_pool(ctx: Context, eqn: Eqn) -> list[str | None]:
    """The pooled values (the second output, each winner's place in its window, is for
    backward: ONNX export does not compute it). Ember's padding (the high side grown for
    ``ceil_mode``) goes to MaxPool as is where onnxruntime takes it (pads below the kernel
    size), else the input is padded with its lowest value first; with dynamic spatial axes
    MaxPool counts the windows itself (:func:`_ceil_mode`). Float windows then get NaN and
    -inf right: :func:`_nan_and_neg_inf`. Integers: :func:`_pool_input`."""
    src = eqn.inputs[0]
    x = _pool_input(ctx, src, "max pooling")
    if x is None:
        return [None, None]
    if src.dtype.name in _WIDENED:
        lowest = ctx.scalar(extreme(src.dtype), float64)
        values = _max_pool(ctx, eqn, x, float64)[0]  # (an all-padding window: eager's min)
        return [None if values is None else
                ctx.cast(ctx.node("Max", [values, lowest]), float64, src.dtype), None]
    return _max_pool(ctx, eqn, x, src.dtype)


_WIDENED = ("int16", "int32")  # (pooled as float64, which holds them; eager refuses uint16+)


def _pool_input(ctx: Context, src: Any, what: str) -> str | None:
    """``src`` as ONNX's MaxPool takes it (floats, int8 and uint8): the integers of
    ``_WIDENED`` cast to float64, exact; int64 refused (float64 holds it exactly only up to
    2**53), None then."""
    if src.dtype.name == "int64":
        return ctx.refuse(f"{what} of {src.dtype.name}: ONNX's MaxPool takes floats, int8 "
                          "and uint8 only, and float64 holds such values exactly only up to "
                          "2**53. Hint: pool a float64 or int32 copy")
    if src.dtype.name in _WIDENED:
        return ctx.cast(ctx.value(src), src.dtype, float64)
    return ctx.value(src)


def _max_pool(ctx: Context, eqn: Eqn, x: str, dtype: DType) -> list[str | None]:
    """:func:`max_pool` of ``x`` (``eqn``'s input, as ``dtype``)."""
    src, p = eqn.inputs[0], eqn.params
    pads, ceil = p["padding"], None
    if any(d >= 2 for d in ctx.dynamic_dims(src)):
        ceil = _ceil_mode(ctx, eqn)
        if ceil is None:
            return [None, None]
        pads = tuple((lo, lo) for lo, _ in pads)
    elif any(max(pad) >= k for pad, k in zip(pads, p["kernel_size"])):
        lowest = extreme(dtype)
        spatial = range(2, len(src.shape))
        x = ctx.node("Pad", [x, ctx.ints(_pads(pads)), ctx.scalar(lowest, dtype),
                             ctx.ints(spatial)])
        pads = tuple((0, 0) for _ in pads)

    def pool(data: str) -> str:
        return ctx.node("MaxPool", [data], kernel_shape=list(p["kernel_size"]),
                        strides=list(p["stride"]), dilations=list(p["dilation"]),
                        pads=_pads(pads), ceil_mode=ceil)

    values = pool(x)
    if src.dtype.is_floating_point:
        values = _nan_and_neg_inf(ctx, x, values, dtype, pool)
    return [values, None]


def _ceil_mode(ctx: Context, eqn: Eqn) -> int | None:
    """MaxPool's ``ceil_mode`` (onnxruntime's counts windows as PyTorch's) for a pooling of
    dynamic spatial axes: the rule, floor or ceil, that gives the window counts at every
    traced size (Ember's primitive records only the padding that ceil_mode grows). None,
    refused, where both do and a stride above 1 would tell them apart at other sizes."""
    src, out, p = eqn.inputs[0], eqn.outputs[0], eqn.params
    fits = [True, True]
    for i, (k, s, (lo, _), d) in enumerate(zip(p["kernel_size"], p["stride"], p["padding"],
                                               p["dilation"])):
        for h, n in zip(ctx.sizes(src, 2 + i), ctx.sizes(out, 2 + i)):
            span = h + 2 * lo - d * (k - 1) - 1
            ceil = -(-span // s) + 1
            ceil -= (ceil - 1) * s >= h + lo  # (no window may start in the high padding)
            fits = [fits[0] and n == span // s + 1, fits[1] and n == ceil]
    strided = [s for i, s in enumerate(p["stride"]) if 2 + i in ctx.dynamic_dims(src) and s > 1]
    if fits == [True, True] and strided:
        sizes = [ctx.sizes(src, d) for d in ctx.dynamic_dims(src) if d >= 2]
        ctx.refuse(f"max pooling of dynamic spatial axes with stride {tuple(p['stride'])}: "
                   f"at every traced size {sizes} the windows fit evenly, so the export "
                   "cannot tell ceil_mode from floor (they differ at other sizes). Hint: "
                   "trace at a size the windows do not fit (one more row or column), or "
                   "export with fixed spatial sizes")
        return None
    if fits == [False, False]:
        ctx.refuse(f"max pooling of dynamic spatial axes: the window counts {out.shape[2:]} "
                   "follow neither floor nor ceil_mode over the traced sizes")
        return None
    return int(not fits[0])


def _nan_and_neg_inf(ctx: Context, x: str, values: str, dtype: DType,
                     pool: Callable[[str], str]) -> str:
    """``values``, ``pool`` of float ``x``, NaN where a window holds a NaN (onnxruntime's
    MaxPool skips it; Ember's, as PyTorch's, propagates it) and -inf where it holds only
    -inf or lies in the padding (onnxruntime's starts from the lowest finite float): one
    more pool, of a code that is 2 at NaN, 0 at -inf and 1 elsewhere (below 1: no value
    above -inf, an all-padding window giving the lowest float)."""
    nan = ctx.node("IsNaN", [x])
    above = ctx.cast(ctx.node("Greater", [x, ctx.scalar(-np.inf, dtype)]), bool_, dtype)
    code = pool(ctx.node("Where", [nan, ctx.scalar(2, dtype), above]))
    values = ctx.node("Where", [ctx.node("Less", [code, ctx.scalar(1, dtype)]),
                                ctx.scalar(-np.inf, dtype), values])
    return ctx.node("Where", [ctx.node("Equal", [code, ctx.scalar(2, dtype)]),
                              ctx.scalar(np.nan, dtype), values])


@converter("max_pool_indices")
def max_pool_indices(ctx: Context, eqn: Eqn) -> str | None:
    """Where each window's maximum is (flat over the spatial dims, what ``return_indices``
    and ``max_unpool`` read): MaxPool's second output, whose indices run over the whole
    tensor, hence the remainder; NaN and -inf windows as :func:`_winner_fixes`."""
    src, p = eqn.inputs[0], eqn.params
    if any(max(pad) >= k for pad, k in zip(p["padding"], p["kernel_size"])):
        return ctx.refuse(f"max pooling indices with padding {p['padding']} (ceil_mode "
                          f"included) not below the kernel size {p['kernel_size']}: "
                          "onnxruntime's MaxPool takes no such pads, and a padded input "
                          "would shift the indices")

    def pool(data: str, outputs: int = 1) -> str | list[str]:
        return ctx.node("MaxPool", [data], outputs=outputs, kernel_shape=list(p["kernel_size"]),
                        strides=list(p["stride"]), dilations=list(p["dilation"]),
                        pads=_pads(p["padding"]))

    x = _pool_input(ctx, src, "max pooling indices")
    if x is None:
        return None
    _, flat = pool(x, 2)
    area = ctx.constant(np.asarray(math.prod(src.shape[2:]), dtype=np.int64), "area")
    return _winner_fixes(ctx, src, ctx.node("Mod", [flat, area]), pool)


@converter("adaptive_max_pool_indices")
def adaptive_max_pool_indices(ctx: Context, eqn: Eqn) -> str | None:
    """Where each adaptive window's maximum is (flat over the spatial dims), as
    :func:`max_pool_indices`. Window ``i`` of a dimension of size ``s`` pooled to ``c`` spans
    ``floor(i·s/c)`` to ``ceil((i+1)·s/c)``; each dimension is gathered to windows of one
    length ``k`` (a shorter window repeats its last entry, which changes neither its maximum
    nor which entry comes first), then a MaxPool of kernel and stride ``k``: its index into
    the gathered plane is mapped back to the input's plane. Static spatial sizes only."""
    src, counts = eqn.inputs[0], tuple(eqn.params["counts"])
    spatial = src.shape[2:]
    if any(d >= 2 for d in ctx.dynamic_dims(src)):
        return ctx.refuse(f"adaptive max pooling of {spatial} to {counts}: ONNX export needs "
                          "static spatial sizes")
    picks = [_adaptive_windows(s, c) for s, c in zip(spatial, counts)]
    kernel = [len(rows[0]) for rows in picks]
    taken = [np.asarray(rows, dtype=np.int64).reshape(-1) for rows in picks]

    def pool(data: str, outputs: int = 1) -> str | list[str]:
        for axis, index in enumerate(taken):
            data = ctx.node("Gather", [data, ctx.constant(index, "windows")], axis=axis + 2)
        return ctx.node("MaxPool", [data], outputs=outputs, kernel_shape=kernel,
                        strides=kernel)

    x = _pool_input(ctx, src, "adaptive max pooling")
    if x is None:
        return None
    _, flat = pool(x, 2)
    gathered = math.prod(t.size for t in taken)
    origin = np.zeros((), dtype=np.int64)  # (each gathered position's flat input position)
    for size, index in zip(spatial, taken):
        origin = origin[..., None] * size + index
    local = ctx.node("Mod", [flat, ctx.constant(np.asarray(gathered, dtype=np.int64), "area")])
    index = ctx.node("Gather", [ctx.constant(origin.reshape(-1), "origin"), local])
    return _winner_fixes(ctx, src, index, pool)


def _adaptive_windows(size: int, count: int) -> list[list[int]]:
    """Each adaptive window's positions, padded to the longest by repeating its last."""
    rows = [list(range(i * size // count, -(-(i + 1) * size // count))) for i in range(count)]
    k = max(len(r) for r in rows)
    return [r + [r[-1]] * (k - len(r)) for r in rows]


def _winner_fixes(ctx: Context, src: Any, index: str, pool: Callable[..., Any]) -> str:
    """MaxPool's winners ``index`` (over each plane) of ``src`` as Ember's. onnxruntime skips
    NaN, where Ember names a window's last NaN: the largest of the NaN entries' positions
    plus one, pooled; and names no entry of a window of -inf, where Ember names its first:
    the largest of ``area`` minus the -inf entries' positions."""
    spatial = src.shape[2:]
    x, area = ctx.value(src), math.prod(spatial)
    if not src.dtype.is_floating_point:
        return index
    on = float32 if area < 2**24 else float64  # (positions held exactly)
    places = ctx.constant(np.arange(1, area + 1, dtype=on.np).reshape(spatial), "places")
    zero = ctx.scalar(0, on)

    def pooled_where(mask: str, value: str) -> str:  # (the pooled value where mask, else 0)
        return ctx.cast(pool(ctx.node("Where", [mask, value, zero])), on, int64)

    neg_inf = ctx.scalar(-np.inf, src.dtype)
    above = pooled_where(ctx.node("Greater", [x, neg_inf]), ctx.scalar(1, on))
    first = ctx.node("Sub", [ctx.scalar(area, int64), pooled_where(
        ctx.node("Equal", [x, neg_inf]),
        ctx.node("Sub", [ctx.scalar(area + 1, on), places]))])
    index = ctx.node("Where", [ctx.node("Equal", [above, ctx.scalar(0, int64)]), first, index])
    last = ctx.node("Sub", [pooled_where(ctx.node("IsNaN", [x]), places),
                            ctx.scalar(1, int64)])
    return ctx.node("Where", [ctx.node("Greater", [last, ctx.scalar(-1, int64)]), last,
                              index])


@converter("unfold")
def unfold(ctx: Context, eqn: Eqn) -> str | None:
    """im2col as a grouped convolution with one-hot kernels: output channel ``c*K + j`` of
    group ``c`` copies the ``j``-th position of each window (K positions per window), which
    is exact; then the spatial dimensions are flattened. Layout ``nlc`` (the channels-last
    columns an average pool of a channels-last input reads) transposes (N, C, K, L) to
    (N, L, K, C) before flattening."""
    x, out = eqn.inputs[0], eqn.outputs[0]
    p = eqn.params
    channels, kernel = x.shape[1], tuple(p["kernel_size"])
    positions = math.prod(kernel)
    onehot = np.eye(positions, dtype=x.dtype.np).reshape(positions, 1, *kernel)
    weight = ctx.constant(np.tile(onehot, (channels, 1, *(1,) * len(kernel))), "onehot")
    cols = ctx.node("Conv", [ctx.value(x), weight], kernel_shape=list(kernel),
                    strides=list(p["stride"]), dilations=list(p["dilation"]),
                    pads=_pads(p["padding"]), group=channels)
    _window_counts(ctx, eqn, cols)
    if p.get("layout", "ncl") == "nlc":  # (N, C·K, *counts) to (N, L, K·C)
        split = ctx.node("Reshape", [cols, ctx.ints([0, channels, positions, -1])])
        cols = ctx.node("Transpose", [split], perm=[0, 3, 2, 1])
    shape = ctx.shape_tensor(out, [x], infer_one=True)
    return None if shape is None else ctx.node("Reshape", [cols, shape])


def _window_counts(ctx: Context, eqn: Eqn, cols: str) -> None:
    """Makes the window counts along each dynamic spatial axis of an unfold (``cols``' dims
    2, 3, ...) known to the reshapes after it (an average pool's, back to the image)."""
    x, p = eqn.inputs[0], eqn.params
    for i, (k, s, (lo, hi), d) in enumerate(zip(p["kernel_size"], p["stride"], p["padding"],
                                                p["dilation"])):
        if 2 + i in ctx.dynamic_dims(x):
            sizes, shift = ctx.sizes(x, 2 + i), lo + hi - d * (k - 1) - 1
            counts = tuple((h + shift) // s + 1 for h in sizes)
            ctx.make_known(eqn.outputs[0], counts,
                           ctx.node("Shape", [cols], start=2 + i, end=3 + i), (sizes, shift, s))


@converter("fold")
def fold(ctx: Context, eqn: Eqn) -> str | None:
    """col2im (what transposed convolutions trace into): Col2Im. Its pads cannot be negative
    (a transposed convolution's output_padding beyond its padding makes Ember's high pad
    negative): those sides are left out of Col2Im's image and padded with zeros after it.
    onnxruntime's Col2Im is right with dilation on two spatial dimensions only: one is lifted
    to two (a leading dimension of size 1). Before opset 18 (no Col2Im), and for three
    spatial dimensions with dilation, where onnxruntime's Col2Im is wrong, it is a
    ScatterElements add instead (:func:`_fold_by_scatter`)."""
    cols, out = eqn.inputs[0], eqn.outputs[0]
    p = eqn.params
    kernel, dilation, stride = (list(p[k]) for k in ("kernel_size", "dilation", "stride"))
    x = ctx.value(cols)
    if p.get("layout", "ncl") == "nlc":  # (N, L, K·C) to (N, C·K, L)
        length = cols.shape[1]
        split = ctx.node("Reshape", [x, ctx.ints([0, length, math.prod(kernel), -1])])
        x = ctx.node("Reshape", [ctx.node("Transpose", [split], perm=[0, 3, 2, 1]),
                                 ctx.ints([0, -1, length])])
    if ctx.opset < 18 or (len(kernel) == 3 and dilation != [1, 1, 1]):
        return _fold_by_scatter(ctx, eqn, x)
    cut = [(min(lo, 0), min(hi, 0)) for lo, hi in p["padding"]]
    image = [s + lo + hi for s, (lo, hi) in zip(p["output_size"], cut)]
    pads = [(max(lo, 0), max(hi, 0)) for lo, hi in p["padding"]]
    lifted = len(kernel) == 1
    if lifted:
        kernel, dilation, stride, image, pads = ([1] + kernel, [1] + dilation, [1] + stride,
                                                 [1] + image, [(0, 0)] + pads)
    y = ctx.node("Col2Im", [x, ctx.ints(image), ctx.ints(kernel)], dilations=dilation,
                 strides=stride, pads=_pads(tuple(pads)))
    if lifted:
        y = ctx.node("Squeeze", [y, ctx.ints([2])])
    if any(lo or hi for lo, hi in cut):
        spatial = range(2, len(out.shape))
        y = ctx.node("Pad", [y, ctx.ints([-lo for lo, _ in cut] + [-hi for _, hi in cut]),
                             ctx.scalar(0, out.dtype), ctx.ints(spatial)])
    return y


def _fold_by_scatter(ctx: Context, eqn: Eqn, x: str) -> str:
    """col2im as one ScatterElements add (opset 16) of the (N, C, K·L) columns onto the
    flattened image, at positions fixed at export; entries that fall in the padding go to
    one extra slot, sliced off after."""
    p, out = eqn.params, eqn.outputs[0]
    kernel, image = tuple(p["kernel_size"]), tuple(p["output_size"])
    counts = window_positions(image, kernel, tuple(p["dilation"]), tuple(p["padding"]),
                              tuple(p["stride"]))
    offsets = np.indices(kernel).reshape(len(kernel), -1, 1)      # (nd, K, 1)
    starts = np.indices(counts).reshape(len(kernel), 1, -1)       # (nd, 1, L)
    inside = np.ones(offsets.shape[1:2] + starts.shape[2:], dtype=bool)
    flat = np.zeros_like(inside, dtype=np.int64)
    for d, (size, (lo, _)) in enumerate(zip(image, p["padding"])):
        at = starts[d] * p["stride"][d] + offsets[d] * p["dilation"][d] - lo
        inside &= (at >= 0) & (at < size)
        flat = flat * size + at
    area = math.prod(image)
    index = ctx.constant(np.where(inside, flat, area).reshape(-1), "fold_index")
    channels = out.shape[1]
    updates = ctx.node("Reshape", [x, ctx.ints([0, channels, -1])])
    canvas = ctx.node("ConstantOfShape", [ctx.node("Concat", [
        ctx.node("Shape", [updates], start=0, end=1), ctx.ints([channels, area + 1])], axis=0)],
        value=numpy_helper.from_array(np.zeros(1, out.dtype.np)))
    index = ctx.node("Expand", [index, ctx.node("Shape", [updates])])
    summed = ctx.node("ScatterElements", [canvas, index, updates], axis=2, reduction="add")
    summed = ctx.node("Slice", [summed, ctx.ints([0]), ctx.ints([area]), ctx.ints([2])])
    return ctx.node("Reshape", [summed, ctx.ints([0, channels, *image])])


@converter("einsum")
def einsum(ctx: Context, eqn: Eqn) -> str:
    """Einsum, on the dtype the primitive computes in (``compute``) where it has one."""
    out = eqn.outputs[0].dtype
    on = eqn.params["compute"] or out
    if on.name in ("int8", "uint8", "int16"):  # (onnxruntime has none: int32 wraps back)
        on = int32
    operands = [ctx.cast(ctx.value(v), v.dtype, on) for v in eqn.inputs]
    return ctx.cast(ctx.node("Einsum", operands, equation=eqn.params["equation"]), on, out)


@converter("scaled_dot_product_attention")
def attention(ctx: Context, eqn: Eqn) -> list[str | None]:
    """softmax(q kᵀ · scale + mask) v, zeros for a query that may attend to nothing (the
    second output, the log-sum-exp kept for backward, is not computed)."""
    q, k, v, *mask = eqn.inputs
    p, dtype = eqn.params, eqn.outputs[0].dtype
    kt = ctx.node("Transpose", [ctx.value(k)],
                  perm=[*range(len(k.shape) - 2), len(k.shape) - 1, len(k.shape) - 2])
    scores = ctx.node("Mul", [ctx.node("MatMul", [ctx.value(q), kt]),
                              ctx.scalar(p["scale"], dtype)])
    if mask and p["kind"] == "bool":
        scores = ctx.node("Where", [ctx.value(mask[0]), scores, ctx.scalar(-np.inf, dtype)])
    elif mask:
        scores = ctx.node("Add", [scores, ctx.cast(ctx.value(mask[0]), mask[0].dtype, dtype)])
    if p["causal"]:
        if any(d >= len(t.shape) - 2 for t in (q, k) for d in ctx.dynamic_dims(t)):
            lengths = ctx.node("Concat", [ctx.dim(q, len(q.shape) - 2),
                                          ctx.dim(k, len(k.shape) - 2)], axis=0)
            allowed = triangle_mask(ctx, lengths, 0, upper=False)
        else:
            allowed = ctx.constant(np.tril(np.ones((q.shape[-2], k.shape[-2]), dtype=bool_.np)),
                                   "causal")
        scores = ctx.node("Where", [allowed, scores, ctx.scalar(-np.inf, dtype)])
    weights = ctx.node("Softmax", [scores], axis=-1)
    if mask or p["causal"]:  # (a row that may attend to nothing gives zeros, as in Ember)
        top = ctx.reduce("ReduceMax", scores, [-1], 1)
        dead = ctx.node("Equal", [top, ctx.scalar(-np.inf, dtype)])
        weights = ctx.node("Where", [dead, ctx.scalar(0, dtype), weights])
    return [ctx.node("MatMul", [weights, ctx.value(v)]), None]


@converter("resample", shape_params=True)
def resample(ctx: Context, eqn: Eqn) -> str | None:
    """Interpolation along one axis (``F.interpolate`` resamples each spatial axis in turn):
    the primitive's own taps, each a Gather of source positions times its weights, so every
    mode matches Ember (and PyTorch) exactly, whatever ONNX's Resize would round; over a
    dynamic size, :func:`~ember.onnx.converters.resize.dynamic_resample`."""
    twin = ctx.twin_eqns.get(id(eqn))
    if twin is not None and twin.params != eqn.params:
        return dynamic_resample(ctx, eqn, twin)
    x = eqn.inputs[0]
    axis = eqn.params["axis"]
    indices, weights, _ = eqn.prim.plan(np, eqn.params, x.dtype.np)
    taps = [ctx.node("Gather", [ctx.value(x), ctx.constant(i, "taps")], axis=axis)
            for i in indices]
    if weights is None:
        return taps[0]
    shape = (-1,) + (1,) * (len(x.shape) - 1 - axis)
    out = None
    for tap, w in zip(taps, weights):
        term = ctx.node("Mul", [tap, ctx.constant(np.asarray(w).reshape(shape), "weights")])
        out = term if out is None else ctx.node("Add", [out, term])
    return out


@converter("resample_uint8")
def resample_uint8(ctx: Context, eqn: Eqn) -> str:
    """uint8 resampling along one axis with PyTorch's integer arithmetic: int32 taps times
    the integer weights, plus a half, clipped to the range whose shift lands in 0..255 (so
    that ONNX's truncating Div floors), divided by the precision's power of two."""
    p = eqn.params
    first, weights, precision = _int16_plan(p["size"], p["out"], p["scale"], p["kind"],
                                            p["align_corners"], p["antialias"])
    axis, x = p["axis"], ctx.value(eqn.inputs[0])
    shape = (-1,) + (1,) * (len(eqn.inputs[0].shape) - 1 - axis)
    acc = ctx.constant(np.asarray(1 << (precision - 1), np.int32), "half")
    for t in range(weights.shape[1]):
        index = np.minimum(first + t, p["size"] - 1)
        gathered = ctx.node("Gather", [x, ctx.constant(index, "taps")], axis=axis)
        tap = ctx.node("Cast", [gathered], to=onnx_type(int32))
        w = ctx.constant(weights[:, t].reshape(shape), "weights")
        acc = ctx.node("Add", [acc, ctx.node("Mul", [tap, w])])
    unit = 1 << precision
    acc = ctx.node("Clip", [acc, ctx.constant(np.asarray(0, np.int32), "low"),
                            ctx.constant(np.asarray(256 * unit - 1, np.int32), "high")])
    out = ctx.node("Div", [acc, ctx.constant(np.asarray(unit, np.int32), "unit")])
    return ctx.node("Cast", [out], to=onnx_type(uint8))
