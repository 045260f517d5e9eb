"""``resample`` over a dynamic size: eager's plan (the source index and weight of each output
position along the axis) computed at run time from the axis' size, in the same float
operations, so the taps equal eager's; nearest, nearest-exact and linear modes."""

from __future__ import annotations

from ember.dtypes import DType, float32, float64, int64
from ember.jit.ir import Eqn
from ember.onnx.context import Context
from ember.ops.interpolate import NEAREST_1D_3D, resample_shortcuts


def dynamic_resample(ctx: Context, eqn: Eqn, twin: Eqn) -> str | None:
    """Resampling whose input size (and output size, with ``scale_factor``) follows a dynamic
    axis; refused for cubic and antialiased modes, and where a given output size changes."""
    src, p = eqn.inputs[0], eqn.params
    mode = next((k for k, v in NEAREST_1D_3D.items() if v == p["mode"]), p["mode"])
    if mode not in ("nearest", "nearest-exact", "linear"):
        return ctx.refuse(f"interpolation mode {p['mode']!r} over a dynamic size: only the "
                          "nearest and linear modes are exported with sizes computed at run "
                          "time")
    if p["scale"] is None and twin.params["out"] != p["out"]:
        return ctx.refuse(f"interpolation to a size ({p['out']} here) that changes with a "
                          "dynamic axis, computed from the input's size or with "
                          "recompute_scale_factor=True: ONNX export follows scale_factor "
                          "alone (without recompute_scale_factor) or a fixed size")
    t = float64 if src.dtype is float64 else float32  # (half types run in float32, as eagerly)
    axis = p["axis"]
    raw = ctx.value(src)  # (gathered as is by the nearest modes: exact for any dtype)
    size = ctx.node("Shape", [raw], start=axis, end=axis + 1)
    if p["scale"] is not None:  # (out = floor(size·scale) in float64, as _sizes)
        wide = ctx.node("Mul", [ctx.cast(size, int64, float64), ctx.scalar(p["scale"], float64)])
        out = ctx.cast(ctx.node("Floor", [wide]), float64, int64)
    else:
        out = ctx.ints([p["out"]])
    count = ctx.node("Squeeze", [out, ctx.ints([0])])
    dst_int = ctx.node("Range", [ctx.scalar(0, int64), count, ctx.scalar(1, int64)])
    dst = ctx.cast(dst_int, int64, t)
    last = ctx.node("Sub", [size, ctx.ints([1])])

    def ratio() -> str:  # (source per destination: 1 / scale_factor if given, else in/out)
        if p["scale"] is not None and p["scale"] > 0:
            return ctx.scalar(1.0 / p["scale"], t)
        return ctx.node("Div", [ctx.cast(size, int64, t), ctx.cast(out, int64, t)])

    # (eager's exceptions, decided per call from the sizes, here at run time: an axis whose
    # size the output keeps copied, one it doubles read at i // 2)
    copies, halves = resample_shortcuts(p["mode"], len(src.shape) - 2, p["scale"])
    if p["mode"] != "linear":
        exact = mode == "nearest-exact"
        if p["mode"] in NEAREST_1D_3D.values():
            index = _generic_nearest_index(ctx, dst_int, ratio(), t, exact)
        else:  # (the 2-D kernel's floor((o + 0.5)·ratio) or floor(o·ratio), in float32)
            coord = ctx.node("Add", [dst, ctx.scalar(0.5, t)]) if exact else dst
            index = ctx.cast(ctx.node("Floor", [ctx.node("Mul", [coord, ratio()])]), t, int64)
        index = ctx.node("Min", [index, last])
        if halves:
            doubled = ctx.node("Equal", [out, ctx.node("Mul", [size, ctx.ints([2])])])
            half = ctx.node("Div", [dst_int, ctx.scalar(2, int64)])
            index = ctx.node("Where", [doubled, half, index])
        if copies:
            index = ctx.node("Where", [ctx.node("Equal", [out, size]), dst_int, index])
        return ctx.node("Gather", [raw, index], axis=axis)
    x = ctx.cast(raw, src.dtype, t)
    if p["align_corners"]:
        one = ctx.ints([1])
        step = ctx.node("Div", [ctx.cast(last, int64, t),
                                ctx.cast(ctx.node("Sub", [out, one]), int64, t)])
        step = ctx.node("Where", [ctx.node("Greater", [out, one]), step, ctx.scalar(0, t)])
        coord = ctx.node("Mul", [dst, step])
    else:
        half = ctx.scalar(0.5, t)
        coord = ctx.node("Sub", [ctx.node("Mul", [ctx.node("Add", [dst, half]), ratio()]),
                                 half])
    coord = ctx.node("Max", [coord, ctx.scalar(0, t)])
    left = ctx.cast(coord, t, int64)
    right = ctx.node("Min", [ctx.node("Add", [left, ctx.ints([1])]), last])
    lam = ctx.node("Clip", [ctx.node("Sub", [coord, ctx.cast(left, int64, t)]),
                            ctx.scalar(0, t), ctx.scalar(1, t)])
    along = ctx.ints([-1] + [1] * (len(src.shape) - 1 - axis))
    out_x = None
    for index, w in ((left, ctx.node("Sub", [ctx.scalar(1, t), lam])), (right, lam)):
        term = ctx.node("Mul", [ctx.node("Gather", [x, index], axis=axis),
                                ctx.node("Reshape", [w, along])])
        out_x = term if out_x is None else ctx.node("Add", [out_x, term])
    result = ctx.cast(out_x, t, src.dtype)
    if not copies:
        return result
    same = ctx.node("Gather", [raw, ctx.node("Min", [dst_int, last])], axis=axis)
    kept = ctx.node("Equal", [out, size])
    return ctx.node("Where", [kept, same, result])  # (a copy: an inf stays one, not nan)


def _generic_nearest_index(ctx: Context, dst_int: str, ratio: str, t: DType,
                           exact: bool) -> str:
    """PyTorch's generic nearest index (eager's ``_index_1d_3d``): ``ratio·o`` in ``t``, or
    for nearest-exact ``max(ratio·(o + 0.5) - 0.5, 0) + 0.5`` with the first part rounded
    once to ``t`` (computed in float64: exact for a float32 ratio, the one rounding of
    eager's fused multiply-add), then rounded to float32 and floored."""
    if exact:
        wide = ctx.node("Mul", [ctx.node("Add", [ctx.cast(dst_int, int64, float64),
                                                  ctx.scalar(0.5, float64)]),
                                ctx.cast(ratio, t, float64)])
        src = ctx.node("Sub", [wide, ctx.scalar(0.5, float64)])
        src = ctx.cast(src, float64, t)
        src = ctx.node("Add", [ctx.node("Max", [src, ctx.scalar(0, t)]), ctx.scalar(0.5, t)])
    else:
        src = ctx.node("Mul", [ctx.cast(dst_int, int64, t), ratio])
    return ctx.cast(ctx.node("Floor", [ctx.cast(src, t, float32)]), float32, int64)
