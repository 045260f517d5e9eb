"""Matrix factorizations: ``linalg.cholesky`` / ``cholesky_ex``, ``qr``, ``eigh``,
``eigvalsh``, ``svd``, ``svdvals`` and PyTorch's older ``torch.cholesky`` / ``qr`` / ``svd``
(determinants are in ``linalg_det.py``, solvers in ``linalg_solve.py``, the pseudoinverse and
least squares in ``linalg_pinv.py``).

Primitives: ``linalg_cholesky``, ``linalg_qr``, ``linalg_eigh``, ``linalg_svd``, each
batched over its leading dims, with PyTorch's derivative formulas
written in Ember ops (so they differentiate again): Cholesky as in Murray (2016), QR as in
Liao et al. (2019), ``eigh`` and ``svd`` with the ``1/(λj - λi)`` matrix, so that repeated
eigen- or singular values give inf/NaN gradients as in PyTorch. The factorizations read one
triangle (``cholesky``, ``eigh``) and their gradients assume a symmetric input, as PyTorch's.
Eigen- and singular vectors are defined up to sign; they come from LAPACK as PyTorch's do.
"""

from __future__ import annotations

from typing import Any

from ember import dtypes, return_types
from ember.errors import ArgumentError, OpError, describe
from ember.ops import linalg_kernels as kernels
from ember.ops.complex_parts import imag, real
from ember.ops.creation import eye, zeros
from ember.ops.join import cat
from ember.ops.linalg import matmul
from ember.ops.linalg_solve import (
    LinAlgError,
    check_matrix,
    converged,
    diag_embed,
    first_failure,
    matrix_spec,
    mH,
    solve_triangular,
)
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive
from ember.ops.shape import narrow
from ember.tensor import Tensor, method

__all__ = ["cholesky", "qr", "svd"]


# -- Cholesky --------------------------------------------------------------------------------
@primitive
class Cholesky(Primitive):
    """``(L, info)``: the lower factor ``L`` of ``A = L Lᴴ`` from ``A``'s lower triangle (with
    ``upper``, the upper factor ``U = Lᴴ`` of ``A = Uᴴ U`` from its upper triangle), and the
    order of the first leading minor that is not positive-definite (0 if none), which raises
    if ``check_errors``."""

    name = "linalg_cholesky"
    complex_grad = True
    nout = 2
    save_inputs = False
    save_outputs = (0,)

    def forward(self, xp, a, *, upper, check_errors, op):
        if upper:  # A's upper triangle is the lower one of Aᴴ
            a = xp.conj(xp.swapaxes(a, -1, -2))
        L, info = kernels.cholesky(xp, a)  # noqa: N806
        if check_errors and info.any():
            where, k = first_failure(info)
            raise LinAlgError(f"{op}: {where}The factorization could not be completed because "
                              f"the input is not positive-definite (the leading minor of order "
                              f"{k} is not positive-definite). Input: "
                              f"{describe(a.shape, a.dtype)}")
        return (xp.conj(xp.swapaxes(L, -1, -2)) if upper else L), info

    def infer(self, a, *, upper, check_errors, op):
        matrix_spec(op, a)
        return a, TensorSpec(a.shape[:-2], dtypes.int32)

    def _lower(self, ctx: Any) -> Tensor:
        """The lower factor ``L`` (``Uᴴ`` of an upper one)."""
        out = ctx.output(0)
        return mH(out) if ctx.params["upper"] else out

    def vjp(self, ctx, g, _g_info=None):
        # A (not Aᴴ) gets the gradient for both triangles, as PyTorch's cholesky_backward
        L = self._lower(ctx)  # noqa: N806
        if ctx.params["upper"]:
            g = mH(g)
        phi = matmul(mH(L), g).tril()
        phi = 0.5 * (phi + mH(phi.tril(-1)))
        ga = solve_triangular(mH(L), phi, upper=True, left=True)
        return (solve_triangular(L, ga, upper=False, left=False),)

    def jvp(self, ctx, da):
        L = self._lower(ctx)  # noqa: N806
        d = solve_triangular(L, da, upper=False, left=True)
        d = solve_triangular(mH(L), d, upper=True, left=False)
        d = d.tril() - 0.5 * diag_embed(d.diagonal(0, -2, -1))
        dl = matmul(L, d)
        return (mH(dl) if ctx.params["upper"] else dl), None


def _cholesky(A: Tensor, upper: bool, check_errors: bool, op: str) -> tuple[Tensor, Tensor]:  # noqa: N803
    check_matrix(op, A, complex_ok=True)
    return apply(Cholesky, A, upper=upper, check_errors=check_errors, op=op)


def linalg_cholesky(input: Tensor, *, upper: bool = False) -> Tensor:
    """The Cholesky factor of a symmetric positive-definite matrix (or of each in a batch):
    lower ``L`` with ``A = L Lᴴ`` from ``A``'s lower triangle, or upper ``U`` with
    ``A = Uᴴ U`` from its upper triangle with ``upper=True``, as LAPACK's (and PyTorch's)
    ``uplo``. Raises :class:`LinAlgError` naming the first leading minor that is not
    positive-definite.

    Example:
        >>> ember.linalg.cholesky(ember.tensor([[4.0, 2.0], [2.0, 2.0]]))
        tensor([[2., 0.],
                [1., 1.]])
    """
    A = input  # (PyTorch's keyword name)
    return _cholesky(A, bool(upper), True, "linalg.cholesky")[0]


def cholesky_ex(input: Tensor, *, upper: bool = False,
                check_errors: bool = False) -> return_types.linalg_cholesky_ex:
    """:func:`linalg_cholesky` that reports failure in ``info`` (the order of the first
    leading minor that is not positive-definite, 0 if none) instead of raising, unless
    ``check_errors``; ``L`` of a failed matrix is LAPACK's partial factor.

    Example:
        >>> ember.linalg.cholesky_ex(ember.tensor([[1.0, 2.0], [2.0, 1.0]])).info
        tensor(2, dtype=ember.int32)
    """
    A = input  # (PyTorch's keyword name)
    return return_types.linalg_cholesky_ex(*_cholesky(A, bool(upper), bool(check_errors),
                                                      "linalg.cholesky_ex"))


@method()
def cholesky(input: Tensor, upper: bool = False) -> Tensor:
    """``torch.cholesky``: the same as :func:`ember.linalg.cholesky`.

    Example:
        >>> ember.tensor([[4.0]]).cholesky()
        tensor([[2.]])
    """
    return linalg_cholesky(input, upper=upper)


# -- QR --------------------------------------------------------------------------------------


def _copyltu(m: Tensor) -> Tensor:
    """The Hermitian matrix with ``m``'s strict lower triangle and the real part of its
    diagonal."""
    low = m.tril(-1)
    return low + mH(low) + diag_embed(real(m.diagonal(0, -2, -1)))


def _qr_tall_grad(Q: Tensor, R: Tensor, gQ: Tensor | None, gR: Tensor | None  # noqa: N803
                  ) -> Tensor:
    """``gA = (gQ + Q copyltu(M)) R⁻ᴴ`` with ``M = R gRᴴ - gQᴴ Q``, for ``m >= n``."""
    if gR is not None:
        M = matmul(R, mH(gR))  # noqa: N806
        if gQ is not None:
            M = M - matmul(mH(gQ), Q)  # noqa: N806
    else:
        M = -matmul(mH(gQ), Q)  # noqa: N806
    b = matmul(Q, _copyltu(M))
    if gQ is not None:
        b = gQ + b
    return solve_triangular(mH(R), b, upper=False, left=False)


def _skew_lower(c: Tensor) -> Tensor:
    """The skew-Hermitian matrix with ``c``'s strict lower triangle and the imaginary part of
    its diagonal (``Qᴴ dQ`` given ``c = Qᴴ dA R⁻¹``)."""
    low = c.tril(-1)
    skew = low - mH(low)
    if c.is_complex():
        skew = skew + diag_embed(imag(c.diagonal(0, -2, -1)) * 1j)
    return skew


@primitive
class QR(Primitive):
    name = "linalg_qr"
    complex_grad = True
    nout = 2
    save_inputs = False
    save_outputs = True

    def forward(self, xp, a, *, mode):
        a = xp.ascontiguousarray(a)  # (NumPy's results of an expanded input are oddly strided)
        if mode == "r":
            return xp.zeros((0,), a.dtype), xp.linalg.qr(a, mode="r")
        return xp.linalg.qr(a, mode=mode)

    def infer(self, a, *, mode):
        matrix_spec("linalg.qr", a, square=False)
        *batch, m, n = a.shape
        k = min(m, n)
        batch = tuple(batch)
        if mode == "complete":
            return TensorSpec(batch + (m, m), a.dtype), TensorSpec(batch + (m, n), a.dtype)
        r = TensorSpec(batch + (k, n), a.dtype)
        if mode == "r":
            return TensorSpec((0,), a.dtype), r
        return TensorSpec(batch + (m, k), a.dtype), r

    def _check(self, ctx):
        mode = ctx.params["mode"]
        if mode == "r":
            raise OpError("linalg.qr: the derivative depends on Q, which mode='r' does not "
                          "compute. Hint: use mode='reduced' to differentiate through qr")
        Q, R = ctx.output(0), ctx.output(1)  # noqa: N806
        m, n = R.shape[-2] if mode == "complete" else Q.shape[-2], R.shape[-1]
        if mode == "complete" and m > n:
            raise OpError(f"linalg.qr: the QR decomposition is not differentiable when "
                          f"mode='complete' and nrows > ncols (here {m} > {n})")
        return Q, R, m, n

    def vjp(self, ctx, gQ, gR):  # noqa: N803
        return (self._grad(ctx, gQ, gR),)

    def _grad(self, ctx, gQ, gR):  # noqa: N803
        Q, R, m, n = self._check(ctx)  # noqa: N806
        if gQ is None and gR is None:
            return None
        if m >= n:
            return _qr_tall_grad(Q, R, gQ, gR)
        # A = [X | Y] with X = Q U square: Y = Q V adds Y gVᵀ to gQ
        U, V = narrow(R, -1, 0, m), narrow(R, -1, m, n - m)  # noqa: N806
        gU = gV = None  # noqa: N806
        if gR is not None:
            gU, gV = narrow(gR, -1, 0, m), narrow(gR, -1, m, n - m)  # noqa: N806
            extra = matmul(matmul(Q, V), mH(gV))
            gQ = extra if gQ is None else gQ + extra  # noqa: N806
        gX = _qr_tall_grad(Q, U, gQ, gU)  # noqa: N806
        gY = matmul(Q, gV) if gV is not None else zeros(V.shape[:-2] + (m, n - m),  # noqa: N806
                                                           dtype=Q.dtype, device=Q.device)
        return cat([gX, gY], dim=-1)

    def jvp(self, ctx, da):
        Q, R, m, n = self._check(ctx)  # noqa: N806
        if m >= n:
            c = solve_triangular(R, matmul(mH(Q), da), upper=True, left=False)
            omega = _skew_lower(c)
            dr = matmul(c - omega, R)
            dq = solve_triangular(R, da, upper=True, left=False) - matmul(Q, c - omega)
            return dq, dr
        U, V = narrow(R, -1, 0, m), narrow(R, -1, m, n - m)  # noqa: N806
        dx, dy = narrow(da, -1, 0, m), narrow(da, -1, m, n - m)
        c = solve_triangular(U, matmul(mH(Q), dx), upper=True, left=False)
        omega = _skew_lower(c)
        du = matmul(c - omega, U)
        dv = matmul(mH(Q), dy) - matmul(omega, V)
        return matmul(Q, omega), cat([du, dv], dim=-1)


def linalg_qr(A: Tensor, mode: str = "reduced") -> return_types.linalg_qr:  # noqa: N803
    """The QR factorization ``A = Q R``: ``Q`` with orthonormal columns, ``R`` upper
    triangular. ``mode``: ``'reduced'`` (``Q`` is ``m × k``, ``k = min(m, n)``),
    ``'complete'`` (``Q`` is ``m × m``) or ``'r'`` (only ``R``; ``Q`` is empty).

    Example:
        >>> Q, R = ember.linalg.qr(ember.tensor([[3.0, 1.0], [4.0, 2.0]]))
        >>> (Q @ R).round(decimals=4)
        tensor([[3., 1.],
                [4., 2.]])
    """
    if mode not in ("reduced", "complete", "r"):
        raise ArgumentError(f"linalg.qr: mode must be 'reduced', 'complete' or 'r', got {mode!r}")
    check_matrix("linalg.qr", A, square=False, complex_ok=True)
    return return_types.linalg_qr(*apply(QR, A, mode=mode))


@method()
def qr(input: Tensor, some: bool = True) -> return_types.qr:
    """``torch.qr``: :func:`ember.linalg.qr` with ``mode='reduced'`` (``some=True``) or
    ``'complete'``.

    Example:
        >>> ember.ones(3, 2).qr().Q.shape
        ember.Size([3, 2])
    """
    return return_types.qr(*linalg_qr(input, "reduced" if some else "complete"))


# -- symmetric eigendecomposition ------------------------------------------------------------
def check_phase_invariance(op: str, what: str, diagonal: Tensor) -> None:
    """Complex eigen- and singular vectors are defined up to a factor ``e^{iφ}`` each: a loss
    that depends on those phases has no gradient. ``diagonal`` is that of ``Vᴴ gV``
    (``Uᴴ gU + Vᴴ gV`` for the SVD), real for a loss that does not; PyTorch's tolerance
    (1e-2) decides. Real vectors have no phase."""
    if not diagonal.is_complex():
        return
    phase = imag(diagonal)
    worst = float(abs(phase._data).max()) if phase._data.size else 0.0
    if worst > 1e-2:
        raise OpError(f"{op}: the {what} in the complex case are specified up to "
                      f"multiplication by e^(i phi). The specified loss function depends on "
                      f"this phase term (by up to {worst:.3g}), so it is ill-defined. Hint: make "
                      f"the loss depend on the vectors only through quantities such as their "
                      f"moduli or products with their conjugates")


def _gaps(w: Tensor) -> Tensor:
    """``E[i, j] = w[j] - w[i]``, with ones on the diagonal."""
    return w.unsqueeze(-2) - w.unsqueeze(-1) + eye(w.shape[-1], dtype=w.dtype, device=w.device)


@primitive
class Eigh(Primitive):
    """Eigenvalues (ascending) and orthonormal eigenvectors of symmetric matrices."""

    name = "linalg_eigh"
    complex_grad = True
    nout = 2
    save_inputs = False
    save_outputs = True

    def forward(self, xp, a, *, UPLO):  # noqa: N803
        return converged("linalg.eigh", xp.linalg.eigh, a, UPLO=UPLO)

    def infer(self, a, *, UPLO):  # noqa: N803
        matrix_spec("linalg.eigh", a)
        return TensorSpec(a.shape[:-1], a.dtype.to_real()), a

    def vjp(self, ctx, gw, gv):
        w, v = ctx.output(0), ctx.output(1)
        if gv is None:
            if gw is None:
                return (None,)
            return (matmul(v * gw.unsqueeze(-2), mH(v)),)
        k = matmul(mH(v), gv)
        check_phase_invariance("linalg_eigh_backward", "eigenvectors", k.diagonal(0, -2, -1))
        inner = 0.5 * (k - mH(k)) / _gaps(w)
        if gw is not None:
            inner = inner + diag_embed(gw)
        return (matmul(matmul(v, inner), mH(v)),)

    def jvp(self, ctx, da):
        w, v = ctx.output(0), ctx.output(1)
        p = matmul(matmul(mH(v), da), v)
        dw = real(p.diagonal(0, -2, -1))
        n = w.shape[-1]
        off = 1 - eye(n, dtype=w.dtype, device=w.device)
        return dw, matmul(v, p * off / _gaps(w))


def eigh(input: Tensor, UPLO: str = "L") -> return_types.linalg_eigh:  # noqa: N803
    """Eigenvalues (ascending) and eigenvectors (columns) of a symmetric matrix, reading its
    lower (``UPLO='L'``) or upper triangle. Gradients through the eigenvectors are inf/NaN
    where eigenvalues repeat, as in PyTorch.

    Example:
        >>> ember.linalg.eigh(ember.tensor([[2.0, 0.0], [0.0, 1.0]])).eigenvalues
        tensor([1., 2.])
    """
    A = input  # (PyTorch's keyword name)
    if not isinstance(UPLO, str) or UPLO.upper() not in ("L", "U"):  # (either case, as torch)
        raise ArgumentError(f"linalg.eigh: UPLO must be 'L' or 'U', got {UPLO!r}")
    check_matrix("linalg.eigh", A, complex_ok=True)
    return return_types.linalg_eigh(*apply(Eigh, A, UPLO=UPLO.upper()))


def eigvalsh(input: Tensor, UPLO: str = "L") -> Tensor:  # noqa: N803
    """The eigenvalues (ascending) of a symmetric matrix (see :func:`eigh`).

    Example:
        >>> ember.linalg.eigvalsh(ember.tensor([[2.0, 1.0], [1.0, 2.0]]))
        tensor([1., 3.])
    """
    A = input  # (PyTorch's keyword name)
    return eigh(A, UPLO).eigenvalues


# -- SVD -------------------------------------------------------------------------------------


def _svd_inner(S: Tensor, UhgU: Tensor | None, VhgV: Tensor | None) -> Tensor:  # noqa: N803
    s2 = S * S
    e = _gaps(s2)
    if UhgU is not None and VhgV is not None:
        return (UhgU * S.unsqueeze(-2) + S.unsqueeze(-1) * VhgV) / e
    if UhgU is not None:
        return UhgU * (S.unsqueeze(-2) / e)
    return (S.unsqueeze(-1) / e) * VhgV


@primitive
class SVD(Primitive):
    """``A = U diag(S) Vh`` with ``S`` descending."""

    name = "linalg_svd"
    complex_grad = True
    nout = 3
    save_inputs = False
    save_outputs = True

    def forward(self, xp, a, *, full_matrices):
        return converged("linalg.svd", xp.linalg.svd, a, full_matrices=full_matrices)

    def infer(self, a, *, full_matrices):
        matrix_spec("linalg.svd", a, square=False)
        *batch, m, n = a.shape
        batch, k = tuple(batch), min(m, n)
        cu, rv = (m, n) if full_matrices else (k, k)
        return (TensorSpec(batch + (m, cu), a.dtype), TensorSpec(batch + (k,), a.dtype.to_real()),
                TensorSpec(batch + (rv, n), a.dtype))

    def vjp(self, ctx, gU, gS, gVh):  # noqa: N803
        return (self._grad(ctx, gU, gS, gVh),)

    def _grad(self, ctx, gU, gS, gVh):  # noqa: N803 - PyTorch's svd_backward, reduced
        U, S, Vh = ctx.output(0), ctx.output(1), ctx.output(2)  # noqa: N806
        m, n, k = U.shape[-2], Vh.shape[-1], S.shape[-1]
        if ctx.params["full_matrices"]:  # only the first k singular vectors matter
            U, Vh = narrow(U, -1, 0, k), narrow(Vh, -2, 0, k)  # noqa: N806
            gU = narrow(gU, -1, 0, k) if gU is not None else None  # noqa: N806
            gVh = narrow(gVh, -2, 0, k) if gVh is not None else None  # noqa: N806
        if gU is None and gVh is None:
            if gS is None:
                return None
            if m >= n:
                return matmul(U, gS.unsqueeze(-1) * Vh)
            return matmul(U * gS.unsqueeze(-2), Vh)
        uhgu = vhgv = None
        if gU is not None:
            uhgu = matmul(mH(U), gU)
        if gVh is not None:
            vhgv = matmul(Vh, mH(gVh))
        check_phase_invariance("linalg_svd_backward", "singular vectors", sum(
            x.diagonal(0, -2, -1) for x in (uhgu, vhgv) if x is not None))
        ga = _svd_inner(S, *(None if x is None else x - mH(x) for x in (uhgu, vhgv)))
        if gS is not None:
            ga = ga + diag_embed(gS)
        if U.is_complex() and uhgu is not None:  # the phase of U's columns
            ga = ga + diag_embed(imag(uhgu.diagonal(0, -2, -1)) / S * 1j)
        if m > n and gU is not None:
            ga = matmul(U, ga)
            gu_sinv = gU / S.unsqueeze(-2)
            ga = ga + gu_sinv - matmul(U, matmul(mH(U), gu_sinv))
            return matmul(ga, Vh)
        if m < n and gVh is not None:
            ga = matmul(ga, Vh)
            sinv_gvh = gVh / S.unsqueeze(-1)
            ga = ga + sinv_gvh - matmul(matmul(sinv_gvh, mH(Vh)), Vh)
            return matmul(U, ga)
        return matmul(matmul(U, ga), Vh)

    def jvp(self, ctx, da):
        U, S, Vh = ctx.output(0), ctx.output(1), ctx.output(2)  # noqa: N806
        m, n, k = U.shape[-2], Vh.shape[-1], S.shape[-1]
        if not ctx.params["full_matrices"] or m == n:
            return _svd_jvp(U, S, Vh, da)
        # as the vjp (and PyTorch): only the first k singular vectors have a derivative; the
        # extra ones, any basis of the complement, get a zero tangent
        du, ds, dvh = _svd_jvp(narrow(U, -1, 0, k), S, narrow(Vh, -2, 0, k), da)
        return (cat([du, zeros(du.shape[:-1] + (m - k,), dtype=du.dtype, device=du.device)], -1),
                ds, cat([dvh, zeros(dvh.shape[:-2] + (n - k, n), dtype=dvh.dtype,
                                    device=dvh.device)], -2))


def _svd_jvp(U: Tensor, S: Tensor, Vh: Tensor, da: Tensor) -> tuple:  # noqa: N803
    """The tangents of a reduced (or square) SVD's outputs along ``da``."""
    m, n = U.shape[-2], Vh.shape[-1]
    V = mH(Vh)  # noqa: N806
    dp = matmul(matmul(mH(U), da), V)
    ds = real(dp.diagonal(0, -2, -1))
    dp = dp - diag_embed(ds)
    e = _gaps(S * S)
    x = dp * S.unsqueeze(-2)
    du = matmul(U, (x + mH(x)) / e)
    y = S.unsqueeze(-1) * dp
    dv = matmul(V, (y + mH(y)) / e)
    if dp.is_complex():  # the phases: Im diag(Uᴴ dA V) split evenly between U and V
        half = (imag(dp.diagonal(0, -2, -1)) / (2 * S) * 1j).unsqueeze(-2)
        du = du + U * half
        dv = dv - V * half
    if m > n:
        extra = matmul(da, V / S.unsqueeze(-2))
        du = du + extra - matmul(U, matmul(mH(U), extra))
    elif m < n:
        extra = matmul(mH(da), U / S.unsqueeze(-2))
        dv = dv + extra - matmul(V, matmul(Vh, extra))
    return du, ds, mH(dv)


_SVD_DRIVERS = (None, "gesvd", "gesvdj", "gesvda")


def _check_svd_driver(op: str, A: Tensor, driver: str | None) -> None:  # noqa: N803
    """PyTorch's ``driver=`` picks a cuSOLVER algorithm; CuPy's SVD is one of them, so on CUDA
    any of the names gives the same decomposition, and off CUDA only ``None`` is accepted."""
    if driver not in _SVD_DRIVERS:
        raise ArgumentError(f"{op}: driver must be None, 'gesvd', 'gesvdj' or 'gesvda', got "
                            f"{driver!r}")
    if driver is not None and A.device.type != "cuda":
        raise ArgumentError(f"{op}: driver= is only supported on CUDA inputs (a cuSOLVER "
                            f"algorithm), got a {A.device.type} tensor. Hint: leave driver=None")


def linalg_svd(A: Tensor, full_matrices: bool = True, *,  # noqa: N803
               driver: str | None = None) -> return_types.linalg_svd:
    """The singular value decomposition ``A = U diag(S) Vh``, ``S`` descending; with
    ``full_matrices=False`` ``U`` is ``m × k`` and ``Vh`` is ``k × n`` (``k = min(m, n)``).
    Gradients through ``U`` and ``Vh`` are inf/NaN where singular values repeat. ``driver``
    (PyTorch's cuSOLVER choice) is accepted on CUDA tensors only.

    Example:
        >>> ember.linalg.svd(ember.tensor([[3.0, 0.0], [0.0, -4.0]])).S
        tensor([4., 3.])
    """
    check_matrix("linalg.svd", A, square=False, complex_ok=True)
    _check_svd_driver("linalg.svd", A, driver)
    return return_types.linalg_svd(*apply(SVD, A, full_matrices=bool(full_matrices)))


@method()
def svd(input: Tensor, some: bool = True, compute_uv: bool = True) -> return_types.svd:
    """``torch.svd``: ``(U, S, V)`` with ``V`` (not ``Vh``), reduced when ``some``; with
    ``compute_uv=False``, ``U`` and ``V`` are zero matrices.

    Example:
        >>> ember.ones(3, 2).svd().V.shape
        ember.Size([2, 2])
    """
    check_matrix("svd", input, square=False, complex_ok=True)
    if not compute_uv:
        m, n = input.shape[-2:]
        s = svdvals(input)
        return return_types.svd(
            zeros(input.shape[:-2] + (m, m), dtype=input.dtype, device=input.device), s,
            zeros(input.shape[:-2] + (n, n), dtype=input.dtype, device=input.device))
    U, S, Vh = apply(SVD, input, full_matrices=not some)  # noqa: N806
    return return_types.svd(U, S, mH(Vh))


def svdvals(A: Tensor, *, driver: str | None = None) -> Tensor:  # noqa: N803
    """The singular values of a matrix (or of each in a batch), descending (``driver`` as in
    :func:`linalg_svd`).

    Example:
        >>> ember.linalg.svdvals(ember.tensor([[3.0, 0.0], [0.0, -4.0]]))
        tensor([4., 3.])
    """
    check_matrix("linalg.svdvals", A, square=False, complex_ok=True)
    _check_svd_driver("linalg.svdvals", A, driver)
    return apply(SVD, A, full_matrices=False)[1]
