"""The pseudoinverse and what builds on it: ``linalg.pinv``, ``lstsq``, ``matrix_rank`` and
PyTorch's older ``torch.pinverse``.

``linalg_pinv`` is a primitive batched over its leading dims, with PyTorch's gradient formulas
(valid while the rank stays the same); singular values at most ``max(atol, rtol·σ₁)`` count as
zero.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ember import dtypes
from ember.autograd.grad_mode import no_grad
from ember.errors import OpError, describe
from ember.ops.broadcast import broadcast_shapes
from ember.ops.creation import zeros
from ember.ops.linalg import matmul
from ember.ops.linalg_decomp import svdvals
from ember.ops.linalg_solve import check_float, check_matrix, matrix_spec, mH
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive
from ember.tensor import Tensor, method

__all__ = ["pinverse"]


# -- pseudoinverse, least squares, rank ------------------------------------------------------
def _tolerances(A: Tensor, atol: float | None, rtol: float | None) -> tuple[float, float]:  # noqa: N803
    """PyTorch's defaults: ``rtol = eps · max(m, n)`` unless a positive ``atol`` is given."""
    if rtol is None:
        rtol = 0.0 if atol is not None and atol > 0 else \
            float(np.finfo(A.dtype.np).eps) * max(A.shape[-2:])
    return float(atol or 0.0), float(rtol)


@primitive
class Pinv(Primitive):
    """The Moore-Penrose pseudoinverse, singular values at most ``max(atol, rtol·σ₁)`` taken
    as zero; PyTorch's gradient formulas (valid while the rank stays the same)."""

    name = "linalg_pinv"
    complex_grad = True
    save_outputs = True

    def forward(self, xp, a, *, atol, rtol):
        m, n = a.shape[-2:]
        if a.size == 0:
            return xp.zeros(a.shape[:-2] + (n, m), a.dtype)
        u, s, vh = xp.linalg.svd(a, full_matrices=False)
        tol = xp.maximum(atol, rtol * s[..., :1])
        with np.errstate(divide="ignore"):
            s_inv = xp.where(s > tol, 1 / s, 0).astype(a.dtype)
        v, uh = xp.swapaxes(vh, -1, -2), xp.swapaxes(u, -1, -2)
        if a.dtype.kind == "c":
            v, uh = v.conj(), uh.conj()
        return v * s_inv[..., None, :] @ uh

    def infer(self, a, *, atol, rtol):
        matrix_spec("linalg.pinv", a, square=False)
        return TensorSpec(a.shape[:-2] + (a.shape[-1], a.shape[-2]), a.dtype)

    def vjp(self, ctx, g):
        a, p = ctx.inputs[0], ctx.out
        m, n = a.shape[-2:]
        ph, gh = mH(p), mH(g)
        if m <= n:
            k = matmul(gh, p)
            kph = matmul(k, ph)
            return (-mH(matmul(p, k)) + kph - matmul(matmul(a, p), kph)
                    + matmul(matmul(ph, p), gh - matmul(k, a)))
        k = matmul(p, gh)
        phk = matmul(ph, k)
        return (-mH(matmul(k, p)) + matmul(matmul(gh - matmul(a, k), p), ph) + phk
                - matmul(matmul(phk, p), a))

    def jvp(self, ctx, da):
        a, p = ctx.inputs[0], ctx.out
        m, n = a.shape[-2:]
        dah, ph = mH(da), mH(p)
        if m <= n:
            k = matmul(ph, dah)
            return (matmul(p, k - mH(k) - matmul(k, matmul(a, p)))
                    + matmul(dah - matmul(p, matmul(a, dah)), matmul(ph, p)))
        k = matmul(p, da)
        kh = mH(k)
        return (matmul(kh - k - matmul(matmul(p, a), kh), p)
                + matmul(matmul(p, ph), dah - matmul(matmul(dah, a), p)))


def pinv(A: Tensor, *, atol: float | None = None, rtol: float | None = None,  # noqa: N803
         hermitian: bool = False) -> Tensor:
    """The pseudoinverse of a matrix (or of each in a batch): singular values up to
    ``max(atol, rtol · σ₁)`` count as zero; ``rtol`` defaults to ``eps · max(m, n)`` (0 when
    a positive ``atol`` is given). ``hermitian`` is accepted; the SVD serves both cases.

    Example:
        >>> ember.linalg.pinv(ember.tensor([[2.0, 0.0], [0.0, 0.0]]))
        tensor([[0.5000, 0.0000],
                [0.0000, 0.0000]])
    """
    check_matrix("linalg.pinv", A, square=False, complex_ok=True)
    atol, rtol = _tolerances(A, atol, rtol)
    return apply(Pinv, A, atol=atol, rtol=rtol)


@method()
def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """``torch.pinverse``: :func:`ember.linalg.pinv` with ``rtol=rcond``.

    Example:
        >>> ember.tensor([[2.0]]).pinverse()
        tensor([[0.5000]])
    """
    check_matrix("pinverse", input, square=False, complex_ok=True)
    return apply(Pinv, input, atol=0.0, rtol=float(rcond))


def matrix_rank(A: Tensor, *, atol: float | None = None, rtol: float | None = None,  # noqa: N803
                hermitian: bool = False) -> Tensor:
    """The number of singular values above ``max(atol, rtol · σ₁)`` (defaults as in
    :func:`pinv`), as int64.

    Example:
        >>> ember.linalg.matrix_rank(ember.ones(3, 3))
        tensor(1)
    """
    check_matrix("linalg.matrix_rank", A, square=False, complex_ok=True)
    atol, rtol = _tolerances(A, atol, rtol)
    with no_grad():
        s = svdvals(A)
        if s.shape[-1] == 0:
            return zeros(s.shape[:-1], dtype=dtypes.int64, device=A.device)
        tol = (s.amax(dim=-1, keepdim=True) * rtol).clamp_min(atol)
        return (s > tol).sum(dim=-1)


class LstsqResult(NamedTuple):
    solution: Tensor
    residuals: Tensor
    rank: Tensor
    singular_values: Tensor


_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def lstsq(A: Tensor, B: Tensor, rcond: float | None = None, *,  # noqa: N803
          driver: str | None = None) -> LstsqResult:
    """The least-squares (minimum-norm) solution ``X`` of ``A X ≈ B``, as ``pinv(A) @ B``
    (differentiable in both); ``B`` may be a vector. The other fields follow PyTorch's CPU
    ``driver`` (default ``'gelsy'``): ``rank`` for all but ``'gels'``; ``singular_values``
    for ``'gelsd'`` and ``'gelss'``; ``residuals`` (``‖A X - B‖²`` per column, differentiable)
    when ``m > n``, for ``'gels'``, and for ``'gelsd'``/``'gelss'`` when every matrix has full
    rank. What a driver does not give is an empty tensor. ``rcond`` (singular values below
    ``rcond · σ₁`` count as zero) is ignored by ``'gels'``; ``'gelsy'``'s rank comes from the
    singular values here, not from LAPACK's pivoted QR, so near the cutoff it may differ.

    Example:
        >>> A = ember.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
        >>> ember.linalg.lstsq(A, ember.tensor([1.0, 2.0, 3.0]), driver="gelsd").residuals
        tensor([9.])
    """
    op = "linalg.lstsq"
    driver = "gelsy" if driver is None else driver
    if driver not in _DRIVERS:
        raise ValueError(f"{op}: driver must be one of {', '.join(_DRIVERS)} on the CPU, got "
                         f"{driver!r}")
    check_matrix(op, A, square=False, complex_ok=True)
    check_float(op, A, B, complex_ok=True)
    if not 0 <= A.ndim - B.ndim <= 1:
        raise OpError(f"{op}: B must have as many dims as A (a batch of matrices) or one fewer "
                      f"(a batch of vectors), got {describe(A.shape, A.dtype)} and "
                      f"{describe(B.shape, B.dtype)}. Hint: expand A to B's batch dims")
    vector = B.ndim == A.ndim - 1
    b = B.unsqueeze(-1) if vector else B
    m, n = A.shape[-2:]
    if b.ndim < 2 or b.shape[-2] != m:
        raise OpError(f"{op}: A and B must have the same number of rows, got "
                      f"{describe(A.shape, A.dtype)} and {describe(B.shape, B.dtype)}")
    broadcast_shapes(A.shape[:-2], b.shape[:-2], op=op)
    # 'gels' (QR, full rank assumed) has no cutoff: it ignores rcond, as LAPACK's
    rtol = rcond if rcond is not None and rcond > 0 and driver != "gels" else None
    x = matmul(pinv(A, rtol=rtol), b)
    empty = zeros((0,), dtype=A.dtype.to_real(), device=A.device)
    rank = matrix_rank(A, rtol=rtol) if driver != "gels" else \
        zeros((0,), dtype=dtypes.int64, device=A.device)
    with no_grad():
        values = svdvals(A) if driver in ("gelsd", "gelss") else empty
    full_rank = driver == "gels" or (driver != "gelsy" and bool((rank == n).all()))
    residuals = (abs(matmul(A, x) - b) ** 2).sum(dim=-2) if m > n and full_rank else empty
    return LstsqResult(x.squeeze(-1) if vector else x, residuals, rank, values)
