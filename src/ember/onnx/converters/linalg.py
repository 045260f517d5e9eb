"""Linear-algebra primitives: ``linalg_det``/``slogdet``, ``linalg_solve`` and ``linalg_inv``
by LU with partial pivoting as LAPACK's getrf/getrs do it (the pivot: the first largest
|entry| at or below the diagonal; at a zero pivot the column is divided by 1 instead and
the rows still updated, so NaN spreads as in getf2; forward elimination, then a back
substitution a row at a time, as dot products), unrolled over the static matrix size (ONNX
has no LU; a size that follows a dynamic axis would need a Loop: refused). Batch dims may
be dynamic.

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


def _update(ctx: Context, x: str, rows: np.ndarray, factor: str, row: str) -> str:
    """``x - factor * row`` in the rows that ``rows`` (a bool column) marks, ``x`` elsewhere
    (untouched: no ``0 * inf`` there)."""
    changed = ctx.node("Sub", [x, ctx.node("Mul", [factor, row])])
    return ctx.node("Where", [ctx.constant(rows.reshape(-1, 1), "rows"), changed, x])


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
        # (a zero pivot: the column below is zero too; divided by 1, the rows still updated,
        # so a NaN there spreads, as in LAPACK's getf2 and Ember's kernel)
        factor = ctx.node("Div", [_part(ctx, a, j, j + 1, -1), ctx.node("Where", [
            zero, ctx.scalar(1, dtype), pivot])])
        below = index[:, 0] > j
        a = _update(ctx, a, below, factor, _part(ctx, a, j, j + 1, -2))
        if rhs is not None:
            rhs = _update(ctx, rhs, below, factor, _part(ctx, rhs, j, j + 1, -2))
    return a, rhs, sign, info


def _back_substitute(ctx: Context, u: str, b: str, n: int) -> str:
    """``U X = B`` for an upper triangular U, a row of X at a time from the last (each a
    dot product with the rows found, as Ember's kernel and BLAS trsm)."""
    found: list[str] = []
    for i in reversed(range(n)):
        x = _part(ctx, b, i, i + 1, -2)
        if found:
            done = ctx.node("Concat", found, axis=-2) if len(found) > 1 else found[0]
            x = ctx.node("Sub", [x, ctx.node("MatMul", [
                _part(ctx, _part(ctx, u, i, i + 1, -2), i + 1, n, -1), done])])
        pivot = _part(ctx, _part(ctx, u, i, i + 1, -2), i, i + 1, -1)
        found.insert(0, ctx.node("Div", [x, pivot]))
    return b if not found else ctx.node("Concat", found, axis=-2) if n > 1 else found[0]


def _info(ctx: Context, info: str, a: str, rank: int, n: int) -> str:
    """``info`` (..., 1, 1) as eager's int32 (...); zeros without a step (n = 0)."""
    if not n:
        return ctx.node("Expand", [ctx.scalar(0, int32),
                                   ctx.node("Shape", [a], start=0, end=rank - 2)])
    return ctx.cast(ctx.node("Squeeze", [info, ctx.ints([-2, -1])]), int64, int32)


@converter("linalg_det", "linalg_slogdet")
def det(ctx: Context, eqn: Eqn) -> str | list[str] | None:
    """The product of U's diagonal times the permutation's sign; ``slogdet``: that sign
    times the diagonal's (0 where the log is NaN, as eager), and the sum of the logs of its
    magnitudes. A zero pivot gives 0 (sign 0, log -inf) whatever else U holds, as NumPy."""
    src, dtype = eqn.inputs[0], eqn.inputs[0].dtype
    n = _size(ctx, src)
    if n is None:
        return None
    log = eqn.prim.name == "linalg_slogdet"
    u, _, sign, info = _lu(ctx, ctx.value(src), n, dtype, None)
    batch = ctx.node("Shape", [u], start=0, end=len(src.shape) - 2)
    if not n:
        one = ctx.node("Expand", [ctx.scalar(1, dtype), batch])
        return [one, ctx.node("Expand", [ctx.scalar(0, dtype), batch])] if log else one
    flat = ctx.node("Reshape", [u, ctx.node("Concat", [batch, ctx.ints([n * n])], axis=0)])
    diagonal = ctx.node("Gather", [flat, ctx.ints(range(0, n * n, n + 1))], axis=-1)
    sign = ctx.node("Squeeze", [sign, ctx.ints([-2, -1])])
    singular = ctx.node("Greater", [ctx.node("Squeeze", [info, ctx.ints([-2, -1])]),
                                    ctx.scalar(0, int64)])
    zero = ctx.scalar(0, dtype)
    if not log:
        product = ctx.node("Mul", [ctx.reduce("ReduceProd", diagonal, [-1], 0), sign])
        return ctx.node("Where", [singular, zero, product])
    negative = ctx.node("Less", [diagonal, zero])
    signs = ctx.reduce("ReduceProd", ctx.node("Where", [negative, ctx.scalar(-1, dtype),
                                                        ctx.scalar(1, dtype)]), [-1], 0)
    logs = ctx.reduce("ReduceSum", ctx.node("Log", [ctx.node("Abs", [diagonal])]), [-1], 0)
    signed = ctx.node("Where", [ctx.node("IsNaN", [logs]), zero, ctx.node("Mul", [signs, sign])])
    return [ctx.node("Where", [singular, zero, signed]),
            ctx.node("Where", [singular, ctx.scalar(-np.inf, dtype), logs])]


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
    return [_back_substitute(ctx, u, b, n), _info(ctx, info, a, len(src.shape), n)]
