"""The LDLᵀ factorization of symmetric matrices with Bunch-Kaufman pivoting:
``linalg.ldl_factor`` / ``ldl_factor_ex`` and ``linalg.ldl_solve``, in LAPACK's compact form
(``sytrf`` with the lower triangle, as PyTorch returns it).

``A = P L D Lᵀ Pᵀ`` with ``L`` unit lower triangular and ``D`` block diagonal with 1×1 and
2×2 blocks. ``LD`` holds ``L`` below the diagonal and ``D`` on it (a 2×2 block's
off-diagonal entry just below it); ``pivots`` are LAPACK's: a positive ``k`` at step ``i`` (a
1×1 block) swapped rows ``i`` and ``k`` (1-based), equal negative entries at ``i`` and ``i+1``
mark a 2×2 block that swapped rows ``i+1`` and ``-k``. NumPy has no ``sytrf``, so the
factorization and the solve are this file's kernels (the column loop of LAPACK's unblocked
``sytf2``/``sytrs``, each step vectorised). Only the lower triangle of ``A`` is read.

Complex matrices are factored as symmetric (``A = P L D Lᵀ Pᵀ``, LAPACK's ``zsytrf``) or,
with ``hermitian=True``, as Hermitian (``A = P L D Lᴴ Pᴴ``, ``zhetrf``: ``D`` is Hermitian,
its 1×1 blocks real); pass the same ``hermitian`` to :func:`ldl_solve`. Complex pivots are
chosen by LAPACK's ``|re| + |im|``, so the pivots match PyTorch's. For real matrices
``hermitian`` changes nothing. As in PyTorch, neither op has a derivative (backward through
them raises).
"""

from __future__ import annotations

import math

import numpy as np

from ember import dtypes, return_types
from ember.errors import DTypeError, GradError, IndexOutOfRange, ShapeError, describe
from ember.ops.broadcast import broadcast_shapes
from ember.ops.linalg_solve import (
    LinAlgError,
    batch_of,
    check_float,
    check_matrix,
    first_failure,
    matrix_spec,
)
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive
from ember.tensor import Tensor

__all__: list[str] = []

_ALPHA = (1.0 + math.sqrt(17.0)) / 8.0  # Bunch-Kaufman's threshold


def _cabs1(z: np.ndarray | complex) -> np.ndarray | float:
    """LAPACK's cheap magnitude ``|re| + |im|`` that complex pivoting compares (``abs`` for
    real numbers)."""
    return np.abs(np.real(z)) + np.abs(np.imag(z))


def _swap_symmetric(a: np.ndarray, k: int, kk: int, kp: int, herm: bool) -> None:
    """Swaps rows and columns ``kk`` and ``kp`` (> kk) of the lower triangle of the trailing
    matrix from column ``k``, as ``sytf2`` (``hetf2`` with ``herm``: the entries that cross
    the diagonal are conjugated) does."""
    cj = np.conj if herm else _same
    n = a.shape[0]
    if kp + 1 < n:
        a[kp + 1:, [kk, kp]] = a[kp + 1:, [kp, kk]]
    between = a[kk + 1:kp, kk].copy()
    a[kk + 1:kp, kk] = cj(a[kp, kk + 1:kp])
    a[kp, kk + 1:kp] = cj(between)
    a[kp, kk] = cj(a[kp, kk])
    a[kk, kk], a[kp, kp] = a[kp, kp], a[kk, kk]
    if kk != k:  # a 2×2 block: its off-diagonal entry moves too
        a[k + 1, k], a[kp, k] = a[kp, k], a[k + 1, k]


def _same(x: np.ndarray) -> np.ndarray:
    return x


def _factor_one(a: np.ndarray, herm: bool) -> tuple[np.ndarray, np.ndarray, int]:
    """``sytf2`` (``hetf2`` with ``herm``) with the lower triangle on one matrix (a copy,
    overwritten): LD, 1-based pivots, info."""
    cj = np.conj if herm else _same
    diag = (lambda z: abs(np.real(z))) if herm else _cabs1  # what a diagonal pivot weighs
    n = a.shape[0]
    piv = np.zeros(n, np.int32)
    info, k = 0, 0
    while k < n:
        step, kp = 1, k
        absakk = diag(a[k, k])
        if k + 1 < n:
            imax = k + 1 + int(np.argmax(_cabs1(a[k + 1:, k])))
            colmax = _cabs1(a[imax, k])
        else:
            imax, colmax = k, 0.0
        if max(absakk, colmax) == 0.0 or np.isnan(absakk):
            info = info or k + 1  # a zero column: D is singular; nothing to eliminate
        else:
            if absakk < _ALPHA * colmax:
                rowmax = _cabs1(a[imax, k:imax]).max()
                if imax + 1 < n:
                    rowmax = max(rowmax, _cabs1(a[imax + 1:, imax]).max())
                if absakk >= _ALPHA * colmax * (colmax / rowmax):
                    kp = k
                elif diag(a[imax, imax]) >= _ALPHA * rowmax:
                    kp = imax
                else:
                    kp, step = imax, 2
            kk = k + step - 1
            if kp != kk:
                _swap_symmetric(a, k, kk, kp, herm)
            if step == 1:
                if k + 1 < n:
                    x = a[k + 1:, k] / (a[k, k].real if herm else a[k, k])
                    rest = a[k + 1:, k + 1:]
                    rest -= np.tril(np.outer(x, cj(a[k + 1:, k])))
                    a[k + 1:, k] = x
            elif k + 2 < n:
                if herm:  # D's off-diagonal entry, split into its size and its phase
                    size = abs(a[k + 1, k])
                    d11, d22 = a[k + 1, k + 1].real / size, a[k, k].real / size
                    phase, scale = a[k + 1, k] / size, 1.0 / (d11 * d22 - 1.0) / size
                else:
                    d21 = a[k + 1, k]
                    d11, d22 = a[k + 1, k + 1] / d21, a[k, k] / d21
                    phase, scale = 1.0, 1.0 / (d11 * d22 - 1.0) / d21
                c0, c1 = a[k + 2:, k].copy(), a[k + 2:, k + 1].copy()
                wk = scale * (d11 * c0 - phase * c1)
                wkp1 = scale * (d22 * c1 - cj(phase) * c0)
                rest = a[k + 2:, k + 2:]
                rest -= np.tril(np.outer(c0, cj(wk)) + np.outer(c1, cj(wkp1)))
                a[k + 2:, k], a[k + 2:, k + 1] = wk, wkp1
        if herm:  # a Hermitian matrix's diagonal is real: LAPACK drops what rounding left
            np.fill_diagonal(a, a.diagonal().real)
        if step == 1:
            piv[k] = kp + 1
        else:
            piv[k] = piv[k + 1] = -(kp + 1)
        k += step
    return np.tril(a), piv, info


def _solve_one(ld: np.ndarray, piv: np.ndarray, b: np.ndarray, herm: bool) -> np.ndarray:
    """``sytrs`` (``hetrs`` with ``herm``) with the lower triangle: solves ``A X = B`` (``b``
    overwritten)."""
    cj = np.conj if herm else _same
    n = ld.shape[0]
    k = 0
    while k < n:  # L D Y = B, forwards
        if piv[k] > 0:
            kp = piv[k] - 1
            b[[k, kp]] = b[[kp, k]]
            b[k + 1:] -= np.outer(ld[k + 1:, k], b[k])
            b[k] /= ld[k, k].real if herm else ld[k, k]
            k += 1
        else:
            kp = -piv[k] - 1
            b[[k + 1, kp]] = b[[kp, k + 1]]
            b[k + 2:] -= np.outer(ld[k + 2:, k], b[k]) + np.outer(ld[k + 2:, k + 1], b[k + 1])
            akm1k = ld[k + 1, k]
            akm1, ak = ld[k, k] / cj(akm1k), ld[k + 1, k + 1] / akm1k
            denom = akm1 * ak - 1.0
            bkm1, bk = b[k] / cj(akm1k), b[k + 1] / akm1k
            b[k], b[k + 1] = (ak * bkm1 - bk) / denom, (akm1 * bk - bkm1) / denom
            k += 2
    k = n - 1
    while k >= 0:  # Lᵀ X = Y (Lᴴ with herm), backwards
        if piv[k] > 0:
            b[k] -= cj(ld[k + 1:, k]) @ b[k + 1:]
            kp = piv[k] - 1
            b[[k, kp]] = b[[kp, k]]
            k -= 1
        else:
            b[k] -= cj(ld[k + 1:, k]) @ b[k + 1:]
            b[k - 1] -= cj(ld[k + 1:, k - 1]) @ b[k + 1:]
            kp = -piv[k] - 1
            b[[k, kp]] = b[[kp, k]]
            k -= 2
    return b


def _no_derivative(op: str) -> GradError:
    return GradError(f"{op}: it has no derivative (as in PyTorch). Hint: differentiate "
                     "through linalg.solve or linalg.eigh instead")


@primitive
class LDLFactor(Primitive):
    """``(LD, pivots, info)`` of a batch of symmetric matrices; no derivative."""

    name = "linalg_ldl_factor"
    nout = 3

    def forward(self, xp, a, *, hermitian):  # (NumPy arrays: the kernels are NumPy's)
        batch, n = a.shape[:-2], a.shape[-1]
        flat = np.array(a, copy=True, order="C").reshape(  # (C: results in C order,
            math.prod(batch), n, n)                          # as meta predicts; n may be 0)
        ld = np.empty_like(flat)
        piv = np.empty(flat.shape[:-1], np.int32)
        info = np.empty(flat.shape[0], np.int32)
        for i, m in enumerate(flat):
            ld[i], piv[i], info[i] = _factor_one(m, hermitian)
        return ld.reshape(a.shape), piv.reshape(batch + (n,)), info.reshape(batch)

    def infer(self, a, *, hermitian):
        matrix_spec("linalg.ldl_factor", a)
        return (TensorSpec(a.shape, a.dtype), TensorSpec(a.shape[:-1], dtypes.int32),
                TensorSpec(a.shape[:-2], dtypes.int32))

    def vjp(self, ctx, *grads):
        raise _no_derivative("linalg.ldl_factor")

    def jvp(self, ctx, *tangents):
        raise _no_derivative("linalg.ldl_factor")


@primitive
class LDLSolve(Primitive):
    """``X`` with ``A X = B`` from ``A``'s ``(LD, pivots)``, batches broadcast; no
    derivative."""

    name = "linalg_ldl_solve"

    def forward(self, xp, ld, piv, b, *, hermitian):
        n, k = b.shape[-2], b.shape[-1]
        if piv.size and not (1 <= int(abs(piv).min()) and int(abs(piv).max()) <= n):
            raise IndexOutOfRange(f"linalg.ldl_solve: pivots must satisfy 1 <= |pivot| <= {n} (the "
                                  f"size of LD), got |pivots| from {abs(piv).min()} to "
                                  f"{abs(piv).max()}. Hint: pass the pivots that ldl_factor "
                                  "returned")  # (a 0 would wrap round to the last row)
        batch = np.broadcast_shapes(ld.shape[:-2], piv.shape[:-1], b.shape[:-2])
        count = math.prod(batch)  # (no -1 in the reshapes: n or k may be 0)
        lds = np.broadcast_to(ld, batch + (n, n)).reshape(count, n, n)
        pivs = np.broadcast_to(piv, batch + (n,)).reshape(count, n)
        bs = np.array(np.broadcast_to(b, batch + (n, k)), copy=True).reshape(count, n, k)
        for i in range(bs.shape[0]):
            _solve_one(lds[i], pivs[i], bs[i], hermitian)
        return bs.reshape(batch + (n, k)).astype(ld.dtype, copy=False)

    def infer(self, ld, piv, b, *, hermitian):
        batch = np.broadcast_shapes(ld.shape[:-2], piv.shape[:-1], b.shape[:-2])
        return TensorSpec(tuple(batch) + tuple(b.shape[-2:]), ld.dtype)

    def vjp(self, ctx, *grads):
        raise _no_derivative("linalg.ldl_solve")

    def jvp(self, ctx, *tangents):
        raise _no_derivative("linalg.ldl_solve")


def ldl_factor_ex(input: Tensor, *, hermitian: bool = False,
                  check_errors: bool = False) -> return_types.linalg_ldl_factor_ex:
    """:func:`ldl_factor` that also returns LAPACK's ``info`` per matrix (``i > 0``: the
    ``i``-th diagonal block of ``D`` is exactly singular; the factorization is complete) and
    raises only when ``check_errors`` is set.

    Example:
        >>> ember.linalg.ldl_factor_ex(ember.zeros(2, 2)).info
        tensor(1, dtype=ember.int32)
    """
    A = input  # (PyTorch's keyword name)
    return _factor(A, hermitian, check_errors, "linalg.ldl_factor_ex")


def _factor(A: Tensor, hermitian: bool, check_errors: bool,  # noqa: N803
            op: str) -> return_types.linalg_ldl_factor_ex:
    check_matrix(op, A, complex_ok=True)
    ld, piv, info = apply(LDLFactor, A, hermitian=hermitian and A.dtype.is_complex)
    if check_errors and info.numel() and not info.is_meta and info._data.any():
        where, i = first_failure(info._data)
        raise LinAlgError(f"{op}: {where}the factorization could not be completed: D's "
                          f"diagonal block {i} is exactly singular")
    return return_types.linalg_ldl_factor_ex(ld, piv, info)


def ldl_factor(input: Tensor, *,
               hermitian: bool = False) -> return_types.linalg_ldl_factor:
    """The compact ``LDLᵀ`` factorization of symmetric matrices (``A``'s lower triangle is
    read) with Bunch-Kaufman pivoting: ``(LD, pivots)`` as LAPACK's ``sytrf`` returns them, for
    :func:`ldl_solve`. A singular ``D`` raises (see :func:`ldl_factor_ex`).

    Example:
        >>> LD, pivots = ember.linalg.ldl_factor(ember.tensor([[4.0, 2.0], [2.0, 3.0]]))
        >>> LD, pivots
        (tensor([[4.0000, 0.0000],
                [0.5000, 2.0000]]), tensor([1, 2], dtype=ember.int32))
    """
    A = input  # (PyTorch's keyword name)
    ld, piv, _ = _factor(A, hermitian, True, "linalg.ldl_factor")
    return return_types.linalg_ldl_factor(ld, piv)


def ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *,  # noqa: N803
              hermitian: bool = False) -> Tensor:
    """The solution ``X`` of ``A X = B`` from :func:`ldl_factor`'s ``(LD, pivots)`` of ``A``;
    batch dimensions broadcast.

    Example:
        >>> A = ember.tensor([[4.0, 2.0], [2.0, 3.0]])
        >>> ember.linalg.ldl_solve(*ember.linalg.ldl_factor(A), A @ ember.ones(2, 1))
        tensor([[1.],
                [1.]])
    """
    op = "linalg.ldl_solve"
    check_matrix(op, LD, name="LD", complex_ok=True)
    check_float(op, LD, B, complex_ok=True)
    if B.ndim < 2 or B.shape[-2] != LD.shape[-1]:
        raise ShapeError(f"{op}: B must be a batch of matrices with {LD.shape[-1]} rows (LD is "
                         f"{describe(LD.shape, LD.dtype)}), got {describe(B.shape, B.dtype)}")
    if pivots.dtype.category != dtypes.INT:  # (any integer dtype, as PyTorch's)
        raise DTypeError(f"{op}: pivots must be integers as ldl_factor returns them, got "
                         f"{describe(pivots.shape, pivots.dtype)}")
    if tuple(pivots.shape[-1:]) != (LD.shape[-1],):
        raise ShapeError(f"{op}: pivots must have shape (*, {LD.shape[-1]}) as ldl_factor "
                         f"returns them, got {describe(pivots.shape, pivots.dtype)}")
    batch_of(op, LD, B, names="LD and B")
    batches = (tuple(LD.shape[:-2]), tuple(pivots.shape[:-1]), tuple(B.shape[:-2]))
    try:
        broadcast_shapes(*batches, op=op)
    except ShapeError:
        raise ShapeError(f"{op}: the batch dims of LD {describe(LD.shape, LD.dtype)}, pivots "
                         f"{describe(pivots.shape, pivots.dtype)} and B "
                         f"{describe(B.shape, B.dtype)} do not broadcast: {batches[0]}, "
                         f"{batches[1]} and {batches[2]}. Hint: batch sizes must match or be "
                         "1") from None
    pivots = pivots.to(dtypes.int64)  # (int32 would wrap 2**32 + 1 round to a valid 1)
    return apply(LDLSolve, LD, pivots, B, hermitian=hermitian and LD.dtype.is_complex)
