"""Shape primitives: reshape, permute, expand, cat, triangular masks, diagonals, unfold."""

from __future__ import annotations

import numpy as np

from ember.dtypes import int64
from ember.jit.ir import Eqn
from ember.onnx.context import Context
from ember.onnx.registry import converter


@converter("reshape", shape_params=True)
def reshape(ctx: Context, eqn: Eqn) -> str | None:
    """Reshape to the traced shape; with dynamic axes, each dynamic size is read from the
    input's dimension that carries it (or is the one -1)."""
    src = eqn.inputs[0]
    shape = ctx.shape_tensor(eqn.outputs[0], [src], infer_one=True)
    return None if shape is None else ctx.node("Reshape", [ctx.value(src), shape])


@converter("expand", shape_params=True)
def expand(ctx: Context, eqn: Eqn) -> str | None:
    src, out = eqn.inputs[0], eqn.outputs[0]
    dynamic = set(ctx.dynamic_dims(out))
    offset = len(out.shape) - len(src.shape)
    src_dynamic = set(ctx.dynamic_dims(src))
    if all(d - offset in src_dynamic for d in dynamic):  # (Expand broadcasts both ways: 1)
        sizes = [1 if d in dynamic else s for d, s in enumerate(out.shape)]
        return ctx.node("Expand", [ctx.value(src), ctx.ints(sizes)])
    # (a size the input does not carry is made in Python: read only from an input's
    # dimension or the one the op reading the output needs it to equal (y - m.expand_as(y)),
    # never from a pad or cat the input is computed from)
    shape = ctx.shape_tensor(out, [src], infer_one=False, linked=False)
    return None if shape is None else ctx.node("Expand", [ctx.value(src), shape])


@converter("permute")
def permute(ctx: Context, eqn: Eqn) -> str:
    return ctx.node("Transpose", [ctx.value(eqn.inputs[0])], perm=list(eqn.params["dims"]))


@converter("cat")
def cat(ctx: Context, eqn: Eqn) -> str:
    """Concat; its size along ``dim`` (a sum of the inputs') made known to later shapes."""
    out, dim = eqn.outputs[0].dtype, eqn.params["dim"]
    parts = [ctx.cast(ctx.value(v), v.dtype, out) for v in eqn.inputs]
    joined = ctx.node("Concat", parts, axis=dim)
    ctx.register_dims(eqn.outputs[0], joined,
                      {dim: ("cat", *(ctx.sizes(v, dim) for v in eqn.inputs))})
    return joined


@converter("triangular")
def triangular(ctx: Context, eqn: Eqn) -> str:
    """``triu``/``tril``: Trilu (on int64 for bool masks and narrow integers, which not every
    runtime takes: onnxruntime has no int8, uint8 or int16 Trilu)."""
    src = eqn.inputs[0]
    x = ctx.value(src)
    boolean = src.dtype.name in ("bool", "int8", "uint8", "int16")
    if boolean:
        x = ctx.cast(x, src.dtype, int64)
    k = ctx.constant(np.asarray(eqn.params["diagonal"], dtype=np.int64), "k")
    y = ctx.node("Trilu", [x, k], upper=int(eqn.params["upper"]))
    return ctx.cast(y, int64, src.dtype) if boolean else y


@converter("diagonal")
def diagonal(ctx: Context, eqn: Eqn) -> str:
    """GatherND of the diagonal's (row, column) pairs from the input with ``dim1``, ``dim2``
    moved first, then moved last; the pairs made at run time (Range) where either of those
    dims follows a dynamic axis."""
    src, p = eqn.inputs[0], eqn.params
    d1, d2, offset = p["dim1"], p["dim2"], p["offset"]
    rest = [d for d in range(len(src.shape)) if d not in (d1, d2)]
    x = ctx.node("Transpose", [ctx.value(src)], perm=[d1, d2, *rest])
    first = (max(-offset, 0), max(offset, 0))
    if set(ctx.dynamic_dims(src)) & {d1, d2}:
        left = [ctx.node("Sub", [ctx.dim(src, d), ctx.ints([s])]) for d, s in zip((d1, d2), first)]
        count = ctx.node("Max", [ctx.node("Min", left), ctx.ints([0])])
        steps = ctx.node("Range", [ctx.scalar(0, int64), ctx.node("Squeeze", [count]),
                                   ctx.scalar(1, int64)])
        pairs = ctx.node("Concat", [ctx.node("Unsqueeze", [ctx.node("Add", [
            steps, ctx.scalar(s, int64)]), ctx.ints([1])]) for s in first], axis=1)
    else:
        steps = np.arange(eqn.outputs[0].shape[-1], dtype=np.int64)
        pairs = ctx.constant(np.stack([steps + s for s in first], axis=1), "pairs")
    picked = ctx.node("GatherND", [x, pairs])
    return ctx.node("Transpose", [picked], perm=[*range(1, len(rest) + 1), 0])


@converter("unfold_view")
def unfold_view(ctx: Context, eqn: Eqn) -> str | None:
    """``Tensor.unfold``: Gather of the windows' positions, a (count, size) grid, along the
    dimension, then the window axis moved last. The count is fixed: a dynamic axis unfolded
    is refused."""
    src, p = eqn.inputs[0], eqn.params
    d, size, step = p["dimension"], p["size"], p["step"]
    if not src.shape:  # (a 0-d tensor's one window: shape (1,))
        return ctx.node("Reshape", [ctx.value(src), ctx.ints([1])])
    if d in ctx.dynamic_dims(src):
        return ctx.refuse(f"unfold along dimension {d}, which follows a dynamic axis: its "
                          "window count changes with the size. Hint: export with that axis "
                          "fixed")
    count = eqn.outputs[0].shape[d]
    windows = np.arange(count, dtype=np.int64)[:, None] * step + np.arange(size, dtype=np.int64)
    y = ctx.node("Gather", [ctx.value(src), ctx.constant(windows, "windows")], axis=d)
    n = len(src.shape) + 1
    perm = [*range(d + 1), *range(d + 2, n), d + 1]
    return y if perm == list(range(n)) else ctx.node("Transpose", [y], perm=perm)
