"""Shape primitives: reshape, permute, expand, cat, triangular masks."""

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
    shape = ctx.shape_tensor(out, [src], infer_one=False)
    return None if shape is None else ctx.node("Expand", [ctx.value(src), shape])


@converter("permute")
def permute(ctx: Context, eqn: Eqn) -> str:
    return ctx.node("Transpose", [ctx.value(eqn.inputs[0])], perm=list(eqn.params["dims"]))


@converter("cat")
def cat(ctx: Context, eqn: Eqn) -> str:
    out = eqn.outputs[0].dtype
    parts = [ctx.cast(ctx.value(v), v.dtype, out) for v in eqn.inputs]
    return ctx.node("Concat", parts, axis=eqn.params["dim"])


@converter("triangular")
def triangular(ctx: Context, eqn: Eqn) -> str:
    """``triu``/``tril``: Trilu (on int64 for bool masks, which not every runtime takes)."""
    src = eqn.inputs[0]
    x = ctx.value(src)
    boolean = src.dtype.name == "bool"
    if boolean:
        x = ctx.cast(x, src.dtype, int64)
    k = ctx.constant(np.asarray(eqn.params["diagonal"], dtype=np.int64), "k")
    y = ctx.node("Trilu", [x, k], upper=int(eqn.params["upper"]))
    return ctx.cast(y, int64, src.dtype) if boolean else y
