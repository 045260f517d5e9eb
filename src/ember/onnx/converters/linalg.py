"""Linear-algebra primitives: ``linalg_det``, ``linalg_solve`` and ``linalg_inv`` by LU with
partial pivoting as LAPACK's getrf/getrs do it (the pivot: the first largest |entry| at or
below the diagonal; a zero pivot column skipped; forward elimination, then a back
substitution column by column), unrolled over the static matrix size (ONNX has no LU; a size
that follows a dynamic axis would need a Loop: refused). Batch dims may be dynamic.

What ONNX cannot do: raise. A singular matrix gives inf/NaN entries where eager's
``check_errors`` raises (the ``info`` output, eager's too, names the first zero pivot)."""

from __future__ import annotations

import numpy as np

from ember.dtypes import DType, int32, int64
from ember.jit.ir import Eqn, Var
from ember.onnx.context import Context
from ember.onnx.registry import converter

MAX_SIZE = 64  # (each step writes a dozen nodes per column)


def _size(ctx: Context, a: Var) -> int | None:
    """The static matrix size n of ``a`` (..., n, n); None (refused) where it is dynamic or
    above :data:`MAX_SIZE`."""
    n = a.shape[-1]
    if {len(a.shape) - 2, len(a.shape) - 1} & set(ctx.dynamic_dims(a)):
        ctx.refuse("its matrix size follows a dynamic axis: LU needs one step per column "
                   "(an ONNX Loop, not written); export with a static matrix size")
        return None
    if n > MAX_SIZE:
        ctx.refuse(f"matrices of size {n} (LU is unrolled, one step per column, up to "
                   f"{MAX_SIZE})")
        return None
    return n


def _part(ctx: Context, x: str, start: int, stop: int, axis: int) -> str:
    return ctx.node("Slice", [x, ctx.ints([start]), ctx.ints([stop]), ctx.ints([axis])])


def _update(ctx: Context, x: str, rows: np.ndarray, factor: str, row: str,
            skip: str | None = None) -> str:
    """``x - factor * row`` in the rows that ``rows`` (a bool column) marks (and not where
    ``skip``), ``x`` elsewhere (untouched: no ``0 * inf`` there)."""
    mask = ctx.constant(rows.reshape(-1, 1), "rows")
    if skip is not None:
        mask = ctx.node("And", [mask, ctx.node("Not", [skip])])
    changed = ctx.node("Sub", [x, ctx.node("Mul", [factor, row])])
    return ctx.node("Where", [mask, changed, x])


def _lu(ctx: Context, a: str, n: int, dtype: DType, rhs: str | None) -> tuple:
    """``a`` (..., n, n) reduced to U, the same row operations done on ``rhs``; the sign of
    the row permutation (..., 1, 1) and LAPACK's info (the first zero pivot, 1-based; 0)."""
    index = np.arange(n, dtype=np.int64).reshape(n, 1)
    rows = ctx.constant(index, "rows")
    sign = ctx.scalar(1, dtype)
    info = ctx.scalar(0, int64)
    for j in range(n):
        column = _part(ctx, _part(ctx, a, j, j + 1, -1), j, n, -2)
        p = ctx.node("Add", [ctx.node("ArgMax", [ctx.node("Abs", [column])], axis=-2,
                                      keepdims=1), ctx.scalar(j, int64)])
        at_j, at_p = ctx.node("Equal", [rows, ctx.scalar(j, int64)]), ctx.node("Equal", [rows, p])
        perm = ctx.node("Where", [at_j, p, ctx.node("Where", [at_p, ctx.scalar(j, int64),
                                                                rows])])
        a, rhs = (None if m is None else ctx.node("GatherElements", [
            m, ctx.node("Expand", [perm, ctx.node("Shape", [m])])], axis=-2) for m in (a, rhs))
        moved = ctx.node("Equal", [p, ctx.scalar(j, int64)])
        sign = ctx.node("Mul", [sign, ctx.node("Where", [moved, ctx.scalar(1, dtype),
                                                         ctx.scalar(-1, dtype)])])
        pivot = _part(ctx, _part(ctx, a, j, j + 1, -2), j, j + 1, -1)
        zero = ctx.node("Equal", [pivot, ctx.scalar(0, dtype)])
        first = ctx.node("And", [zero, ctx.node("Equal", [info, ctx.scalar(0, int64)])])
        info = ctx.node("Where", [first, ctx.scalar(j + 1, int64), info])
        factor = ctx.node("Div", [_part(ctx, a, j, j + 1, -1), pivot])
        below = index[:, 0] > j
        a = _update(ctx, a, below, factor, _part(ctx, a, j, j + 1, -2), zero)
        if rhs is not None:
            rhs = _update(ctx, rhs, below, factor, _part(ctx, rhs, j, j + 1, -2), zero)
    return a, rhs, sign, info


def _back_substitute(ctx: Context, u: str, b: str, n: int) -> str:
    """``U X = B`` for an upper triangular U, a column of U at a time (getrs' trsm order)."""
    index = np.arange(n)
    for j in reversed(range(n)):
        pivot = _part(ctx, _part(ctx, u, j, j + 1, -2), j, j + 1, -1)
        x = ctx.node("Div", [_part(ctx, b, j, j + 1, -2), pivot])
        b = _update(ctx, b, index < j, _part(ctx, u, j, j + 1, -1), x)
        mask = ctx.constant((index == j).reshape(-1, 1), "row")
        b = ctx.node("Where", [mask, x, b])
    return b


def _info(ctx: Context, info: str) -> str:
    return ctx.cast(ctx.node("Squeeze", [info, ctx.ints([-2, -1])]), int64, int32)


@converter("linalg_det")
def det(ctx: Context, eqn: Eqn) -> str | None:
    """The product of U's diagonal times the permutation's sign."""
    src = eqn.inputs[0]
    n = _size(ctx, src)
    if n is None:
        return None
    u, _, sign, _ = _lu(ctx, ctx.value(src), n, src.dtype, None)
    batch = ctx.node("Shape", [u], start=0, end=len(src.shape) - 2)
    if not n:
        return ctx.node("Expand", [ctx.scalar(1, src.dtype), batch])
    flat = ctx.node("Reshape", [u, ctx.node("Concat", [batch, ctx.ints([n * n])], axis=0)])
    diagonal = ctx.node("Gather", [flat, ctx.ints(range(0, n * n, n + 1))], axis=-1)
    return ctx.node("Mul", [ctx.reduce("ReduceProd", diagonal, [-1], 0),
                            ctx.node("Squeeze", [sign, ctx.ints([-2, -1])])])


@converter("linalg_solve", "linalg_inv")
def solve(ctx: Context, eqn: Eqn) -> list[str] | None:
    """``A X = B`` (``B`` the identity for ``inv``): LU, then back substitution; ``info``."""
    src = eqn.inputs[0]
    n = _size(ctx, src)
    if n is None:
        return None
    a = ctx.value(src)
    if eqn.prim.name == "linalg_inv":
        b = ctx.node("Expand", [ctx.constant(np.eye(n, dtype=src.dtype.np), "eye"),
                                ctx.node("Shape", [a])])
    else:
        b = ctx.value(eqn.inputs[1])
    u, b, _, info = _lu(ctx, a, n, src.dtype, b)
    return [_back_substitute(ctx, u, b, n), _info(ctx, info)]
