"""The LU factorization with partial pivoting: ``linalg.lu_factor`` / ``lu_factor_ex``,
``linalg.lu``, ``lu_unpack`` and ``linalg.lu_solve``.

Primitives: ``linalg_lu_factor`` (``A = P L U`` of ``m × n`` matrices packed LAPACK-style:
``L`` below the diagonal with unit diagonal, ``U`` on and above it; 1-based int32 pivots; an
``info``; derivatives for square, wide and tall matrices) and ``linalg_lu_permutation`` (the
row order the pivots describe, no gradient). NumPy has no LU: the factorization is the kernel
of ``linalg_kernels.py``. ``lu``, ``lu_unpack`` and ``lu_solve`` are composites (a row gather
and two triangular solves for ``lu_solve``), differentiable in ``LU`` and ``B``.
"""

from __future__ import annotations

from typing import Any

from ember import dtypes, return_types
from ember.errors import ArgumentError, IndexOutOfRange, ShapeError, describe
from ember.ops import linalg_kernels as kernels
from ember.ops.broadcast import expand
from ember.ops.complex_parts import Holomorphic
from ember.ops.creation import eye, zeros
from ember.ops.gather import gather
from ember.ops.join import cat
from ember.ops.linalg import matmul
from ember.ops.linalg_solve import (
    LinAlgError,
    batch_of,
    check_float,
    check_matrix,
    first_failure,
    matrix_spec,
    mH,
    mT,
    solve_triangular,
)
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive
from ember.ops.shape import narrow
from ember.ops.sort import argsort
from ember.tensor import Tensor

__all__ = ["lu_unpack"]


def _rows(x: Tensor, perm: Tensor) -> Tensor:
    """``x[..., perm, :]`` per batch element."""
    index = perm.unsqueeze(-1)
    return gather(x, -2, expand(index, tuple(index.shape[:-1]) + (x.shape[-1],)))


@primitive
class LUPermutation(Primitive):
    """The row order (of ``m`` rows) that LAPACK's 1-based pivots describe (``op``: the public
    op, for the error)."""

    name = "linalg_lu_permutation"
    differentiable = False

    def forward(self, xp, piv, *, m, op):
        if piv.size and not (1 <= int(piv.min()) and int(piv.max()) <= m):  # (0 would wrap)
            raise IndexOutOfRange(f"{op}: pivots must be between 1 and {m} (the number "
                                  f"of rows of LU) inclusive, got {piv.min()} to {piv.max()}. "
                                  "Hint: pass the pivots that lu_factor returned")
        return kernels.permutation(xp, piv, m)

    def infer(self, piv, *, m, op):
        return TensorSpec(piv.shape[:-1] + (m,), dtypes.int64)


def _unit_lower(lu: Tensor, k: int) -> Tensor:
    """``L`` (``m × k``, unit diagonal) from the packed ``LU``."""
    m = lu.shape[-2]
    return narrow(lu, -1, 0, k).tril(-1) + eye(m, k, dtype=lu.dtype, device=lu.device)


@primitive
class LUFactor(Holomorphic, Primitive):
    """``(LU, pivots, info)`` of ``A = P L U`` for ``(m, n)`` matrices; a zero pivot raises
    if ``check_errors``, else is reported in ``info``. Derivatives as PyTorch's: with
    ``k = min(m, n)``, the square block of the shorter side must be invertible."""

    name = "linalg_lu_factor"
    nout = 3
    save_inputs = False
    save_outputs = (0, 1)

    def forward(self, xp, a, *, check_errors, op):
        lu, piv, info = kernels.lu(xp, a)
        if check_errors and info.any():
            where, k = first_failure(info)
            raise LinAlgError(f"{op}: {where}U[{k},{k}] is zero and using it in lu_solve would "
                              f"divide by zero ({describe(a.shape, a.dtype)}). Hint: "
                              "linalg.lu or linalg.lu_factor_ex factor it without raising")
        return lu, piv, info

    def infer(self, a, *, check_errors, op):
        matrix_spec(op, a, square=False)
        *batch, m, n = a.shape
        return a, TensorSpec(tuple(batch) + (min(m, n),), dtypes.int32), \
            TensorSpec(tuple(batch), dtypes.int32)

    def _factors(self, ctx: Any) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """``L`` (m × k), ``U`` (k × n), the permutation and the packed ``LU``."""
        lu = ctx.output(0)
        m, n = lu.shape[-2:]
        k = min(m, n)
        perm = apply(LUPermutation, ctx.output(1), m=m, op="linalg.lu_factor")
        return _unit_lower(lu, k), narrow(lu, -2, 0, k).triu(), perm, lu

    def vjp(self, ctx, g, _g_pivots=None, _g_info=None):
        if g is None:
            return (None,)
        L, U, perm, lu = self._factors(ctx)  # noqa: N806
        m, n = lu.shape[-2:]
        k = min(m, n)
        g_low, g_up = narrow(g, -1, 0, k).tril(-1), narrow(g, -2, 0, k).triu()
        if m <= n:
            # C = L⁻¹ P⁻¹ A; X = tril(C₁ U₁⁻¹, -1), dL = L X, dU = C - X U
            u1 = narrow(U, -1, 0, k)
            inner = (matmul(mT(L), g_low) - matmul(g_up, mT(U))).tril(-1)
            g_x = solve_triangular(mT(u1), inner, upper=False, left=False)
            g_c = g_up + cat([g_x, zeros(g_x.shape[:-1] + (n - k,), dtype=g.dtype,
                                         device=g.device)], dim=-1)
            g_pa = solve_triangular(mT(L), g_c, upper=True, unitriangular=True)
        else:
            # D = P⁻¹ A U⁻¹; Y = triu(L₁⁻¹ D₁), dU = Y U, dL = D - L Y
            l1 = narrow(L, -2, 0, k)
            inner = (matmul(g_up, mT(U)) - matmul(mT(L), g_low)).triu()
            g_z = solve_triangular(mT(l1), inner, upper=True, unitriangular=True)
            g_d = g_low + cat([g_z, zeros(g_z.shape[:-2] + (m - k, k), dtype=g.dtype,
                                          device=g.device)], dim=-2)
            g_pa = solve_triangular(mT(U), g_d, upper=False, left=False)
        return (_rows(g_pa, argsort(perm, dim=-1)),)

    def jvp(self, ctx, da):
        L, U, perm, lu = self._factors(ctx)  # noqa: N806
        m, n = lu.shape[-2:]
        k = min(m, n)
        pda = _rows(da, perm)
        if m <= n:
            c = solve_triangular(L, pda, upper=False, unitriangular=True)
            x = solve_triangular(narrow(U, -1, 0, k), narrow(c, -1, 0, k), upper=True,
                                 left=False).tril(-1)
            d_low = cat([matmul(L, x), zeros(x.shape[:-1] + (n - k,), dtype=x.dtype,
                                             device=x.device)], dim=-1)
            return d_low + c - matmul(x, U), None, None
        d = solve_triangular(U, pda, upper=True, left=False)
        y = solve_triangular(narrow(L, -2, 0, k), narrow(d, -2, 0, k), upper=False,
                             unitriangular=True).triu()
        d_up = cat([matmul(y, U), zeros(y.shape[:-2] + (m - k, k), dtype=y.dtype,
                                        device=y.device)], dim=-2)
        return d - matmul(L, y) + d_up, None, None


def _lu_factor(A: Tensor, pivot: bool, check_errors: bool, op: str) -> tuple:  # noqa: N803
    if not pivot:
        raise ArgumentError(f"{op}: LU without pivoting is not supported on the CPU. Hint: "
                            "leave pivot=True")
    check_matrix(op, A, square=False, complex_ok=True)
    return apply(LUFactor, A, check_errors=bool(check_errors), op=op)


def lu_factor(A: Tensor, *, pivot: bool = True) -> return_types.linalg_lu_factor:  # noqa: N803
    """The LU factorization with partial pivoting of an ``m × n`` matrix (or of each in a
    batch), packed: ``A = P L U`` with ``L`` (unit diagonal) below the diagonal of ``LU`` and
    ``U`` on and above it; ``pivots`` (1-based, int32, ``min(m, n)`` of them) are LAPACK's
    row swaps. Raises :class:`LinAlgError` for a zero pivot, as PyTorch does.

    Example:
        >>> LU, pivots = ember.linalg.lu_factor(ember.tensor([[1.0, 2.0], [3.0, 4.0]]))
        >>> pivots
        tensor([2, 2], dtype=ember.int32)
    """
    return return_types.linalg_lu_factor(*_lu_factor(A, pivot, True, "linalg.lu_factor")[:2])


def lu_factor_ex(A: Tensor, *, pivot: bool = True,  # noqa: N803
                 check_errors: bool = False) -> return_types.linalg_lu_factor_ex:
    """:func:`lu_factor` that reports a zero pivot in ``info`` (the 1-based index of the
    first, 0 if none) instead of raising, unless ``check_errors``.

    Example:
        >>> ember.linalg.lu_factor_ex(ember.zeros(2, 2)).info
        tensor(1, dtype=ember.int32)
    """
    return return_types.linalg_lu_factor_ex(*_lu_factor(A, pivot, check_errors,
                                                        "linalg.lu_factor_ex"))


def lu_unpack(LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True,  # noqa: N803
              unpack_pivots: bool = True) -> return_types.lu_unpack:
    """``(P, L, U)`` with ``A = P L U`` from :func:`lu_factor`'s packed result: ``P`` the
    ``m × m`` permutation matrix, ``L`` ``m × k`` (unit diagonal), ``U`` ``k × n``; what is
    not unpacked is an empty tensor. ``L`` and ``U`` are differentiable in ``LU_data``.

    Example:
        >>> P, L, U = ember.lu_unpack(*ember.linalg.lu_factor(ember.tensor([[1.0, 2.0],
        ...                                                                  [3.0, 4.0]])))
        >>> P
        tensor([[0., 1.],
                [1., 0.]])
    """
    op = "lu_unpack"
    check_matrix(op, LU_data, square=False, name="LU_data", complex_ok=True)
    *batch, m, n = LU_data.shape
    k = min(m, n)
    if LU_pivots.dtype is not dtypes.int32 or tuple(LU_pivots.shape) != tuple(batch) + (k,):
        raise ShapeError(f"{op}: LU_pivots must be int32 of shape {tuple(batch) + (k,)}, got "
                         f"{describe(LU_pivots.shape, LU_pivots.dtype)}")
    empty = zeros((0,), dtype=LU_data.dtype, device=LU_data.device)
    P = L = U = empty  # noqa: N806
    if unpack_pivots:
        perm = apply(LUPermutation, LU_pivots, m=m, op=op)
        ident = expand(eye(m, dtype=LU_data.dtype, device=LU_data.device), tuple(batch) + (m, m))
        P = mT(_rows(ident, perm))  # noqa: N806 - Pᵀ A takes rows perm of A
    if unpack_data:
        L, U = _unit_lower(LU_data, k), narrow(LU_data, -2, 0, k).triu()  # noqa: N806
    return return_types.lu_unpack(P, L, U)


def lu(A: Tensor, *, pivot: bool = True) -> return_types.linalg_lu:  # noqa: N803
    """The LU factorization with partial pivoting ``A = P L U`` of an ``m × n`` matrix (or of
    each in a batch): ``P`` a permutation matrix, ``L`` (``m × k``) unit lower, ``U``
    (``k × n``) upper triangular, ``k = min(m, n)``. A singular matrix is no error.
    Differentiable in ``L`` and ``U``.

    Example:
        >>> P, L, U = ember.linalg.lu(ember.tensor([[1.0, 2.0], [3.0, 4.0]]))
        >>> U
        tensor([[3.0000, 4.0000],
                [0.0000, 0.6667]])
    """
    LU, pivots, _ = _lu_factor(A, pivot, False, "linalg.lu")  # noqa: N806
    return return_types.linalg_lu(*lu_unpack(LU, pivots))


def lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True,  # noqa: N803
             adjoint: bool = False) -> Tensor:
    """The solution ``X`` of ``A X = B`` given ``lu_factor(A)``; ``Aᴴ X = B`` with ``adjoint``
    (the conjugate transpose), ``X A = B`` with ``left=False``. Batch dims broadcast.

    Example:
        >>> A = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> LU, pivots = ember.linalg.lu_factor(A)
        >>> ember.linalg.lu_solve(LU, pivots, ember.tensor([[5.0], [11.0]])).round(decimals=4)
        tensor([[1.],
                [2.]])
    """
    op = "linalg.lu_solve"
    check_matrix(op, LU, name="LU", complex_ok=True)
    check_float(op, LU, B, complex_ok=True)
    n = LU.shape[-1]
    if pivots.dtype is not dtypes.int32 or tuple(pivots.shape) != tuple(LU.shape[:-1]):
        raise ShapeError(f"{op}: pivots must be int32 of shape {tuple(LU.shape[:-1])}, got "
                         f"{describe(pivots.shape, pivots.dtype)}")
    if B.ndim < 2 or B.shape[-2 if left else -1] != n:
        raise ShapeError(f"{op}: incompatible shapes of LU and B: {describe(LU.shape, LU.dtype)}"
                         f" and {describe(B.shape, B.dtype)}")
    batch = batch_of(op, LU, B, names="LU and B")  # (B's own shape in the message)
    if not left:  # X A = B is Aᴴ Xᴴ = Bᴴ
        return mH(lu_solve(LU, pivots, mH(B), adjoint=not adjoint))
    LU = expand(LU, batch + (n, n))  # noqa: N806
    perm = expand(apply(LUPermutation, pivots, m=n, op=op), batch + (n,))
    B = expand(B, batch + tuple(B.shape[-2:]))  # noqa: N806
    if not adjoint:  # A = P L U: X = U⁻¹ L⁻¹ P⁻¹ B
        y = solve_triangular(LU, _rows(B, perm), upper=False, unitriangular=True)
        return solve_triangular(LU, y, upper=True)
    # Aᴴ = Uᴴ Lᴴ P⁻¹: X = P L⁻ᴴ U⁻ᴴ B
    y = solve_triangular(mH(LU), B, upper=False)
    y = solve_triangular(mH(LU), y, upper=True, unitriangular=True)
    return _rows(y, argsort(perm, dim=-1))
