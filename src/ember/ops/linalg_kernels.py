"""Array-level kernels for the matrix primitives: the LU factorization with partial pivoting,
its row permutation, triangular substitution, a solve through LU, and a Cholesky that reports
where it fails.

NumPy's ``numpy.linalg`` has no LU and no triangular solver, and raises on a singular or
indefinite matrix where LAPACK (and PyTorch) report ``info`` and carry on, giving inf/NaN.
These kernels do what LAPACK does: each runs column by column, vectorized over the batch, and
never raises. The primitives call NumPy first and use them where it has no answer.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__: list[str] = []


def lu(xp: Any, a: Any) -> tuple[Any, Any, Any]:
    """LAPACK's ``getrf`` on a batch of ``(m, n)`` matrices: ``(LU, pivots, info)`` with ``L``
    (unit diagonal) packed below the diagonal of ``LU``, 1-based int32 ``pivots`` of shape
    ``(…, min(m, n))``, and ``info`` the 1-based index of the first zero pivot (0 if none)."""
    *batch, m, n = a.shape
    k = min(m, n)
    count = math.prod(batch)  # (not -1 in reshape: a dim may be 0)
    out = a.reshape((count, m, n)).copy()
    piv = xp.zeros((count, k), np.int32)
    info = xp.zeros(count, np.int32)
    rows = xp.arange(count)
    for j in range(k):
        column = out[:, j:, j]  # (complex: LAPACK's izamax compares |re| + |im|)
        size = xp.abs(column.real) + xp.abs(column.imag) if column.dtype.kind == "c" \
            else xp.abs(column)
        # (LAPACK's i?amax: the first largest; a NaN never wins, unless it comes first)
        nan = xp.isnan(size)
        p = j + xp.where(nan[:, 0], 0, xp.argmax(xp.where(nan, -1, size), axis=1))
        piv[:, j] = p + 1
        top = out[rows, j].copy()
        out[rows, j] = out[rows, p]
        out[rows, p] = top
        pivot = out[:, j, j]
        zero = pivot == 0  # then the column below is zero too: LAPACK goes on without scaling
        info[(info == 0) & zero] = j + 1
        out[:, j + 1:, j] /= xp.where(zero, 1, pivot)[:, None]
        out[:, j + 1:, j + 1:] -= out[:, j + 1:, j:j + 1] * out[:, j:j + 1, j + 1:]
    return out.reshape(a.shape), piv.reshape(tuple(batch) + (k,)), info.reshape(tuple(batch))


def permutation(xp: Any, piv: Any, m: int) -> Any:
    """Row ``i`` of ``P⁻¹ A`` is row ``perm[i]`` of ``A`` (``m`` rows): LAPACK's row swaps
    ``piv`` applied in order."""
    k = piv.shape[-1]
    flat = piv.reshape((math.prod(piv.shape[:-1]), k)).astype(np.int64) - 1
    perm = xp.tile(xp.arange(m, dtype=np.int64), (flat.shape[0], 1))
    rows = xp.arange(flat.shape[0])
    for j in range(k):
        p = flat[:, j]
        top = perm[rows, j].copy()
        perm[rows, j] = perm[rows, p]
        perm[rows, p] = top
    return perm.reshape(piv.shape[:-1] + (m,))


def triangular(xp: Any, t: Any, b: Any, upper: bool, unit: bool = False) -> Any:
    """``X`` with ``T X = B`` by substitution, reading one triangle of ``T`` (its diagonal as
    ones if ``unit``); a zero on the diagonal gives inf/NaN, as BLAS ``trsm``."""
    n = t.shape[-1]
    x = b.copy()
    with np.errstate(all="ignore"):
        for i in range(n - 1, -1, -1) if upper else range(n):
            done = slice(i + 1, n) if upper else slice(0, i)
            x[..., i, :] -= (t[..., i:i + 1, done] @ x[..., done, :])[..., 0, :]
            if not unit:
                x[..., i, :] /= t[..., i, i][..., None]
    return x


def lu_solve(xp: Any, a: Any, b: Any, transpose: bool = False) -> tuple[Any, Any]:
    """``(X, info)``: ``A X = B`` (``Aᵀ X = B`` if ``transpose``) through the LU factorization
    of ``A`` (``info`` is always ``A``'s, as LAPACK's getrs), inf/NaN for a singular ``A``."""
    lu_, piv, info = lu(xp, a)
    perm = permutation(xp, piv, a.shape[-1])
    if transpose:  # Aᵀ = Uᵀ Lᵀ P⁻¹: solve Uᵀ, then Lᵀ, then undo the row permutation
        t = xp.swapaxes(lu_, -1, -2)
        w = triangular(xp, t, triangular(xp, t, b, upper=False), upper=True, unit=True)
        return xp.take_along_axis(w, xp.argsort(perm, axis=-1)[..., None], axis=-2), info
    y = triangular(xp, lu_, xp.take_along_axis(b, perm[..., None], axis=-2), upper=False,
                   unit=True)
    return triangular(xp, lu_, y, upper=True), info


def cholesky(xp: Any, a: Any) -> tuple[Any, Any]:
    """``(L, info)`` with ``A = L Lᴴ`` from ``A``'s lower triangle: LAPACK's ``potrf``, which
    stops at the first leading minor that is not positive-definite (``info`` is its order, 0
    if none) and leaves that column's diagonal and the columns after it as they were."""
    try:
        low = xp.linalg.cholesky(a)
    except np.linalg.LinAlgError:  # (NumPy does not say which matrix failed)
        return _potrf(xp, a)
    info = xp.zeros(a.shape[:-2], np.int32)
    # potrf stops at a NaN pivot too; NumPy's cholesky returns NaNs and no error (and, on
    # OpenBLAS, inf·(1/inf) = 0 where an infinite pivot divides an infinite entry, not NaN):
    # those matrices alone go through the loop, the others keep LAPACK's factor
    finite = xp.isfinite(xp.diagonal(low, axis1=-2, axis2=-1))
    if not finite.all():
        bad = ~finite.all(axis=-1)
        low[bad], info[bad] = _potrf(xp, a[bad])
    return low, info


def _potrf(xp: Any, a: Any) -> tuple[Any, Any]:
    """:func:`cholesky` column by column, vectorized over the batch."""
    n = a.shape[-1]
    low = xp.tril(a).reshape((-1, n, n))
    info = xp.zeros(low.shape[0], np.int32)
    for j in range(n):
        # conj(x)·x as zpotrf's zdotc: NaN for x = inf+nanj, where |x|² is inf
        d = (low[:, j, j] - (xp.conj(low[:, j, :j]) * low[:, j, :j]).sum(axis=-1)).real
        active = info == 0
        ok = active & (d > 0)
        failed = active & ~ok
        info[failed] = j + 1
        low[failed, j, j] = d[failed]
        root = xp.sqrt(xp.where(ok, d, 1))
        done = low[:, j + 1:, :j] @ xp.conj(low[:, j, :j, None])
        col = (low[:, j + 1:, j] - done[..., 0]) / root[:, None]
        low[ok, j, j] = root[ok]
        low[ok, j + 1:, j] = col[ok]
    return low.reshape(a.shape), info.reshape(a.shape[:-2])
