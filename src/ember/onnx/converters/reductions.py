"""Reductions over dimensions, arg-reductions, cumulative sums and products. Maxima and minima of
floating-point tensors propagate NaN, as in PyTorch (onnxruntime's ReduceMax, ArgMax and their
kin skip it): a NaN anywhere in a reduced slice makes the value NaN and the index the first
NaN's."""

from __future__ import annotations

import numpy as np

from ember.dtypes import DType, bool_, float32, float64, int32, int64
from ember.jit.ir import Eqn, Var
from ember.onnx.context import Context, onnx_type
from ember.onnx.converters.scans import filled, scan
from ember.onnx.registry import converter

_REDUCE = {"sum": "ReduceSum", "prod": "ReduceProd", "amax": "ReduceMax", "amin": "ReduceMin",
           "all": "ReduceMin", "any": "ReduceMax"}


@converter(*_REDUCE)
def reduce(ctx: Context, eqn: Eqn) -> str:
    src, out = eqn.inputs[0], eqn.outputs[0]
    x, dims = ctx.value(src), tuple(eqn.params["dims"])
    if not dims:  # (a reduction over no dimension is a copy; ONNX would reduce them all)
        return ctx.cast(ctx.node("Identity", [x]), src.dtype, out.dtype)
    keep = int(eqn.params["keepdim"])
    if eqn.prim.name in ("all", "any"):  # (nonzero is true; ReduceMin/Max take bool from
        flags = ctx.cast(ctx.cast(x, src.dtype, bool_), bool_, int32)  # opset 20 only)
        return ctx.cast(ctx.reduce(_REDUCE[eqn.prim.name], flags, dims, keep), int32, out.dtype)
    # (a sum of bools or small integers is int64; a max of bools or int16 is taken on int32)
    on = int32 if out.dtype.name in ("bool", "int16") else out.dtype
    x = ctx.cast(x, src.dtype, on)
    if eqn.prim.name == "prod" and not on.is_floating_point:
        return _integer_product(ctx, src, x, on, dims, keep)
    y = ctx.reduce(_REDUCE[eqn.prim.name], x, dims, keep)
    if on is not out.dtype:
        return ctx.cast(y, on, out.dtype)
    if eqn.prim.name in ("amax", "amin"):
        return _nan_values(ctx, src, x, y, dims, keep)
    return y


def _integer_product(ctx: Context, src: Var, x: str, dtype: DType, dims: tuple,
                     keep: int) -> str:
    """An integer product of ``x`` (of ``dtype``) over ``dims``, exact and wrapping as eager
    (onnxruntime's ReduceProd multiplies integers in double: 3**39 came out 11 off, an
    overflow saturated): a static dimension halves by pairwise Mul in ⌈log₂ n⌉ steps (an odd
    length padded with a 1), a dynamic one is a Scan of Mul."""
    rank = len(src.shape)
    axes = sorted({d % rank for d in dims})
    dynamic = set(ctx.dynamic_dims(src))
    if not all(src.shape[d] for d in axes if d not in dynamic):  # (an empty product: 1)
        return ctx.reduce("ReduceProd", x, axes, keep)
    for d in axes:
        if d in dynamic:
            x = _scanned_product(ctx, x, dtype, d, rank)
            continue
        n = src.shape[d]
        while n > 1:
            if n % 2:
                pads = [0] * (2 * rank)
                pads[rank + d] = 1
                x = ctx.node("Pad", [x, ctx.ints(pads), ctx.scalar(1, dtype)])
                n += 1
            halves = [ctx.node("Slice", [x, ctx.ints([start]), ctx.ints([n]), ctx.ints([d]),
                                         ctx.ints([2])]) for start in (0, 1)]
            x, n = ctx.node("Mul", halves), n // 2
    return x if keep else ctx.node("Squeeze", [x, ctx.ints(axes)])


def _scanned_product(ctx: Context, x: str, dtype: DType, d: int, rank: int) -> str:
    """The product of ``x`` along ``d`` (any length, so a dynamic one), kept as a dimension
    of size 1: the last of the running products of a Scan of Mul over ``x`` with a 1 put in
    front (an empty length gives 1)."""
    pads = [0] * (2 * rank)
    pads[d] = 1
    x = ctx.node("Pad", [x, ctx.ints(pads), ctx.scalar(1, dtype)])
    kind = onnx_type(dtype)

    def step(states: list[str], a: str) -> list[str]:
        product = ctx.node("Mul", [states[0], a])
        return [product, product]

    start = filled(ctx, x, d, 1, dtype)
    running = scan(ctx, x, (kind, kind), [(start, kind)], d, False, step)
    return ctx.node("Gather", [running, ctx.ints([-1])], axis=d)


@converter("var", "std")
def spread(ctx: Context, eqn: Eqn) -> str:
    """``sum((x - mean)²) / (n - correction)`` over the dims (its root for ``std``), in
    float64 (a float32 input's squares overflow past ~1.8e19, where eager, summing again in
    float64, and PyTorch are finite) and rounded to the input's dtype once; ``n`` read at run
    time along dynamic axes; no degrees of freedom left divides by 0 (inf or NaN, as eager)."""
    src = eqn.inputs[0]
    dims, keep = list(eqn.params["dims"]), int(eqn.params["keepdim"])
    x = ctx.cast(ctx.value(src), src.dtype, float64)
    dynamic = set(ctx.dynamic_dims(src))
    if dims:
        sizes = ctx.join([ctx.dim(src, d) if d in dynamic else src.shape[d] for d in dims])
        count = ctx.cast(ctx.reduce("ReduceProd", sizes, [0], 0), int64, float64)
    else:  # (a 0-d input: one entry)
        count = ctx.scalar(1.0, float64)
    centered = ctx.node("Sub", [x, ctx.reduce("ReduceMean", x, dims, 1)])
    squares = ctx.reduce("ReduceSum", ctx.node("Mul", [centered, centered]), dims, keep)
    dof = ctx.node("Sub", [count, ctx.scalar(eqn.params["correction"], float64)])
    zero = ctx.scalar(0.0, float64)
    dof = ctx.node("Where", [ctx.node("Greater", [dof, zero]), dof, zero])
    variance = ctx.node("Div", [squares, dof])
    out = ctx.node("Sqrt", [variance]) if eqn.prim.name == "std" else variance
    return ctx.cast(out, float64, src.dtype)


def _nan_flags(ctx: Context, src: Var, x: str) -> str | None:
    """``x``'s NaN entries as int32 ones (None for integer and bool tensors)."""
    if not src.dtype.is_floating_point:
        return None
    return ctx.node("Cast", [ctx.node("IsNaN", [x])], to=onnx_type(int32))


def _nan_values(ctx: Context, src: Var, x: str, values: str, dims: tuple, keep: int) -> str:
    """``values`` reduced from ``x`` over ``dims``, NaN where the slice holds a NaN."""
    flags = _nan_flags(ctx, src, x)
    if flags is None:
        return values
    seen = ctx.reduce("ReduceMax", flags, dims, keep)
    return ctx.node("Where", [ctx.cast(seen, int32, bool_),
                              ctx.scalar(np.nan, src.dtype), values])


def _arg(ctx: Context, eqn: Eqn, big: bool, x: str) -> str:
    """The index of the first extreme (of the first NaN, where there is one) along ``dim``."""
    src = eqn.inputs[0]
    dim, keep = eqn.params["dim"], int(eqn.params["keepdim"])
    if dim is None:  # (over the flattened tensor)
        x = ctx.node("Reshape", [x, ctx.ints([-1])])
    axis = 0 if dim is None else dim
    index = ctx.node("ArgMax" if big else "ArgMin", [x], axis=axis, keepdims=keep)
    flags = _nan_flags(ctx, src, x)
    if flags is not None:
        seen = ctx.reduce("ReduceMax", flags, [axis], keep)
        first = ctx.node("ArgMax", [flags], axis=axis, keepdims=keep)
        index = ctx.node("Where", [ctx.cast(seen, int32, bool_), first, index])
    if dim is None and keep:  # (every dimension kept, of size 1)
        index = ctx.node("Reshape", [index, ctx.ints([1] * len(src.shape))])
    return index


def _comparable(ctx: Context, src: Var) -> tuple[str, DType]:
    """``src``'s value and the dtype its extremes are taken in: bools and int16 as int32
    (ReduceMax takes no bool, onnxruntime's ArgMax and ReduceMax no int16)."""
    on = int32 if src.dtype.name in ("bool", "int16") else src.dtype
    return ctx.cast(ctx.value(src), src.dtype, on), on


@converter("argmax", "argmin")
def arg_reduce(ctx: Context, eqn: Eqn) -> str:
    return _arg(ctx, eqn, eqn.prim.name == "argmax", _comparable(ctx, eqn.inputs[0])[0])


@converter("max_dim", "min_dim")
def extreme_along(ctx: Context, eqn: Eqn) -> list[str]:
    """Values and (first) indices of the extremes along ``dim``."""
    src, big = eqn.inputs[0], eqn.prim.name == "max_dim"
    x, on = _comparable(ctx, src)
    dim, keep = eqn.params["dim"], int(eqn.params["keepdim"])
    values = ctx.cast(ctx.reduce("ReduceMax" if big else "ReduceMin", x, [dim], keep), on,
                      src.dtype)
    return [_nan_values(ctx, src, x, values, (dim,), keep), _arg(ctx, eqn, big, x)]


@converter("cumsum")
def cumsum(ctx: Context, eqn: Eqn) -> str:
    axis = ctx.constant(np.asarray(eqn.params["dim"], dtype=np.int64), "axis")
    return ctx.node("CumSum", [ctx.value(eqn.inputs[0]), axis],
                    reverse=int(eqn.params["reverse"]))


@converter("cumprod")
def cumprod(ctx: Context, eqn: Eqn) -> str | None:
    """ONNX has no cumulative product (and exp(cumsum(log x)) is wrong at zeros and negative
    entries): a prefix product in ⌈log₂ n⌉ steps (Hillis and Steele), each multiplying by the
    running products shifted ``2^i`` places along ``dim`` (ones shifted in). Exact for
    integers and bools; floats round in another order than a running product (a few ulps).
    Half precision is computed on float32, as Ember does, bools and narrow integers on
    int32."""
    src, rank = eqn.inputs[0], len(eqn.inputs[0].shape)
    if not rank:
        return ctx.node("Identity", [ctx.value(src)])
    dim = eqn.params["dim"] % rank
    if dim in ctx.dynamic_dims(src):
        return ctx.refuse(f"cumprod along dimension {dim}, which follows a dynamic axis: its "
                          "exported form takes a number of steps set by the traced size. "
                          "Hint: make that axis static")
    dtype = src.dtype
    on = float32 if dtype.name in ("float16", "bfloat16") else \
        int32 if dtype.name in ("bool", "int8", "uint8", "int16") else dtype  # (wraps back)
    y = ctx.cast(ctx.value(src), dtype, on)
    shift = 1
    while shift < src.shape[dim]:
        kept = ctx.node("Slice", [y, ctx.ints([0]), ctx.ints([-shift]), ctx.ints([dim])])
        # (pads on every dimension: Pad has no axes input before opset 18)
        pads = [shift if d == dim else 0 for d in range(rank)] + [0] * rank
        shifted = ctx.node("Pad", [kept, ctx.ints(pads), ctx.scalar(1, on)])
        y = ctx.node("Mul", [y, shifted])
        shift *= 2
    return ctx.cast(y, on, dtype)
