"""The LU factorization with partial pivoting: ``linalg.lu_factor`` and ``linalg.lu_solve``.

Primitives: ``linalg_lu_factor`` (``A = P L U`` packed LAPACK-style: ``L`` below the
diagonal with unit diagonal, ``U`` on and above it; 1-based int32 pivots; its derivatives as
PyTorch's for square matrices) and ``linalg_lu_permutation`` (the row order the pivots
describe, no gradient). NumPy has no LU, so the factorization runs column by column, each
step vectorized over the batch. ``lu_solve`` is a composite: a row gather and two triangular
solves, differentiable in ``LU`` and ``B``.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from ember import dtypes
from ember.errors import ShapeError, describe
from ember.ops.broadcast import broadcast_shapes, expand
from ember.ops.creation import eye
from ember.ops.gather import gather
from ember.ops.linalg import matmul
from ember.ops.linalg_solve import (
    LinAlgError,
    check_float,
    check_matrix,
    matrix_spec,
    mT,
    solve_triangular,
)
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive
from ember.ops.sort import argsort
from ember.tensor import Tensor

__all__: list[str] = []


def _lu(xp: Any, a: Any) -> tuple[Any, Any]:
    """Gaussian elimination with partial pivoting on a batch of square matrices."""
    n = a.shape[-1]
    lu = a.reshape((math.prod(a.shape[:-2]), n, n)).copy()  # (not -1: n may be 0)
    piv = xp.zeros((lu.shape[0], n), np.int32)
    rows = xp.arange(lu.shape[0])
    for k in range(n):
        p = k + xp.argmax(xp.abs(lu[:, k:, k]), axis=1)
        piv[:, k] = p + 1
        top = lu[rows, k].copy()
        lu[rows, k] = lu[rows, p]
        lu[rows, p] = top
        pivot = lu[:, k, k]
        bad = xp.flatnonzero(pivot == 0)
        if bad.size:
            where = f"(Batch element {int(bad[0])}): " if a.ndim > 2 else ""
            raise LinAlgError(f"linalg.lu_factor: {where}U[{k},{k}] is zero and using it in "
                              f"lu_solve would divide by zero ({describe(a.shape, a.dtype)})")
        lu[:, k + 1:, k] /= pivot[:, None]
        lu[:, k + 1:, k + 1:] -= lu[:, k + 1:, k:k + 1] * lu[:, k:k + 1, k + 1:]
    return lu.reshape(a.shape), piv.reshape(a.shape[:-1])


def _permutation(xp: Any, piv: Any) -> Any:
    """Row ``i`` of ``P⁻¹ A`` is row ``perm[i]`` of ``A``: the pivots' swaps applied in order."""
    n = piv.shape[-1]
    flat = piv.reshape((math.prod(piv.shape[:-1]), n)).astype(np.int64) - 1
    perm = xp.tile(xp.arange(n, dtype=np.int64), (flat.shape[0], 1))
    rows = xp.arange(flat.shape[0])
    for k in range(n):
        p = flat[:, k]
        top = perm[rows, k].copy()
        perm[rows, k] = perm[rows, p]
        perm[rows, p] = top
    return perm.reshape(piv.shape)


def _rows(x: Tensor, perm: Tensor) -> Tensor:
    """``x[..., perm, :]`` per batch element."""
    index = perm.unsqueeze(-1)
    return gather(x, -2, expand(index, tuple(index.shape[:-1]) + (x.shape[-1],)))


@primitive
class LUPermutation(Primitive):
    name = "linalg_lu_permutation"
    differentiable = False

    def forward(self, xp, piv):
        return _permutation(xp, piv)

    def infer(self, piv):
        return TensorSpec(piv.shape, dtypes.int64)


@primitive
class LUFactor(Primitive):
    name = "linalg_lu_factor"
    nout = 2
    save_inputs = False
    save_outputs = True

    def forward(self, xp, a):
        return _lu(xp, a)

    def infer(self, a):
        matrix_spec("linalg.lu_factor", a)
        return a, TensorSpec(a.shape[:-1], dtypes.int32)

    def _factors(self, ctx: Any) -> tuple[Tensor, Tensor]:
        lu = ctx.output(0)
        return lu, apply(LUPermutation, ctx.output(1))

    def vjp(self, ctx, g, _g_pivots=None):
        if g is None:
            return (None,)
        # gA = P L⁻ᵀ (tril(Lᵀ gL, -1) + triu(gU Uᵀ)) U⁻ᵀ, with L and U packed in LU
        lu, perm = self._factors(ctx)
        low = lu.tril(-1) + eye(lu.shape[-1], dtype=lu.dtype, device=lu.device)
        phi = matmul(mT(low), g.tril(-1)).tril(-1) + matmul(g.triu(), mT(lu.triu())).triu()
        x = solve_triangular(mT(lu), phi, upper=True, unitriangular=True)
        x = solve_triangular(mT(lu), x, upper=False, left=False)
        return (_rows(x, argsort(perm, dim=-1)),)

    def jvp(self, ctx, da):
        # C = L⁻¹ P⁻¹ dA U⁻¹; dL = L tril(C, -1), dU = triu(C) U
        lu, perm = self._factors(ctx)
        c = solve_triangular(lu, _rows(da, perm), upper=False, unitriangular=True)
        c = solve_triangular(lu, c, upper=True, left=False)
        low = lu.tril(-1) + eye(lu.shape[-1], dtype=lu.dtype, device=lu.device)
        return matmul(low, c.tril(-1)) + matmul(c.triu(), lu.triu()), None


class LUFactorResult(NamedTuple):
    LU: Tensor
    pivots: Tensor


def lu_factor(A: Tensor, *, pivot: bool = True) -> LUFactorResult:  # noqa: N803
    """The LU factorization with partial pivoting of a square matrix (or of each in a
    batch), packed: ``A = P L U`` with ``L`` (unit diagonal) below the diagonal of ``LU`` and
    ``U`` on and above it; ``pivots`` (1-based, int32) are LAPACK's row swaps. Raises
    :class:`LinAlgError` for a singular matrix, as PyTorch does.

    Example:
        >>> LU, pivots = ember.linalg.lu_factor(ember.tensor([[1.0, 2.0], [3.0, 4.0]]))
        >>> pivots
        tensor([2, 2], dtype=ember.int32)
    """
    if not pivot:
        raise ValueError("linalg.lu_factor: LU without pivoting is not supported on the CPU")
    check_matrix("linalg.lu_factor", A)
    return LUFactorResult(*apply(LUFactor, A))


def lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True,  # noqa: N803
             adjoint: bool = False) -> Tensor:
    """The solution ``X`` of ``A X = B`` given ``lu_factor(A)``; ``Aᵀ X = B`` with
    ``adjoint``, ``X A = B`` with ``left=False``. Batch dims broadcast.

    Example:
        >>> A = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> LU, pivots = ember.linalg.lu_factor(A)
        >>> ember.linalg.lu_solve(LU, pivots, ember.tensor([[5.0], [11.0]])).round(decimals=4)
        tensor([[1.],
                [2.]])
    """
    op = "linalg.lu_solve"
    check_matrix(op, LU, name="LU")
    check_float(op, LU, B)
    n = LU.shape[-1]
    if pivots.dtype is not dtypes.int32 or tuple(pivots.shape) != tuple(LU.shape[:-1]):
        raise ShapeError(f"{op}: pivots must be int32 of shape {tuple(LU.shape[:-1])}, got "
                         f"{describe(pivots.shape, pivots.dtype)}")
    if B.ndim < 2 or B.shape[-2 if left else -1] != n:
        raise ShapeError(f"{op}: incompatible shapes of LU and B: {describe(LU.shape, LU.dtype)}"
                         f" and {describe(B.shape, B.dtype)}")
    if not left:  # X A = B is Aᵀ Xᵀ = Bᵀ
        return mT(lu_solve(LU, pivots, mT(B), adjoint=not adjoint))
    batch = broadcast_shapes(LU.shape[:-2], B.shape[:-2], op=op)
    LU = expand(LU, batch + (n, n))  # noqa: N806
    perm = expand(apply(LUPermutation, pivots), batch + (n,))
    B = expand(B, batch + tuple(B.shape[-2:]))  # noqa: N806
    if not adjoint:  # A = P L U: X = U⁻¹ L⁻¹ P⁻¹ B
        y = solve_triangular(LU, _rows(B, perm), upper=False, unitriangular=True)
        return solve_triangular(LU, y, upper=True)
    # Aᵀ = Uᵀ Lᵀ P⁻¹: X = P L⁻ᵀ U⁻ᵀ B
    y = solve_triangular(mT(LU), B, upper=False)
    y = solve_triangular(mT(LU), y, upper=True, unitriangular=True)
    return _rows(y, argsort(perm, dim=-1))
