"""Determinants: ``linalg.det``, ``linalg.slogdet`` and ``logdet``.

Primitives: ``linalg_det`` (its derivative, the cofactor matrix, goes through the SVD, so it
stays finite and exact for a singular matrix, as PyTorch's) and ``linalg_slogdet`` (only
``logabsdet`` has a gradient, ``A⁻ᵀ`` through an LU solve: inf/NaN for a singular matrix).
``logdet`` is NaN for a negative determinant, with a zero gradient there, as PyTorch's.
"""

from __future__ import annotations

import math
from typing import Any

from ember import return_types
from ember.ops.broadcast import expand
from ember.ops.compare import isfinite
from ember.ops.complex_parts import Holomorphic, conj, imag, real
from ember.ops.creation import eye, ones, zeros
from ember.ops.join import cat
from ember.ops.linalg import matmul
from ember.ops.linalg_decomp import SVD
from ember.ops.linalg_lu import lu_factor_ex, lu_solve
from ember.ops.linalg_solve import check_matrix, matrix_spec
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive
from ember.ops.reduce import all as all_
from ember.ops.scan import cumprod
from ember.ops.select import where
from ember.ops.shape import narrow
from ember.ops.unary import log
from ember.tensor import Tensor, method

__all__ = ["det", "slogdet", "logdet"]


# -- determinants -----------------------------------------------------------------------------


@primitive
class Slogdet(Primitive):
    """``(sign, log|det|)``: a real sign (±1, 0) has no gradient; ``logabsdet`` (real) and a
    complex sign (``det / |det|``) move with ``tr(A⁻¹ dA)``."""

    name = "linalg_slogdet"
    nout = 2
    save_outputs = (0,)

    complex_grad = True

    def forward(self, xp, a):
        sign, logabsdet = xp.linalg.slogdet(a)
        if not xp.iscomplexobj(a):  # a NaN determinant has sign 0 (PyTorch's), not NumPy's ±1
            sign = xp.where(xp.isnan(logabsdet), 0, sign)
        return xp.asarray(sign, dtype=a.dtype), xp.asarray(logabsdet, dtype=a.real.dtype)

    def infer(self, a):
        matrix_spec("linalg.slogdet", a)
        return (TensorSpec(a.shape[:-2], a.dtype),
                TensorSpec(a.shape[:-2], a.dtype.to_real()))

    def _inverse_h(self, ctx: Any) -> Tensor:
        """``A⁻ᴴ`` by an adjoint LU solve: inf/NaN for a singular ``A``, as PyTorch's."""
        a = ctx.inputs[0]
        LU, pivots, _ = lu_factor_ex(a)  # noqa: N806
        identity = expand(eye(a.shape[-1], dtype=a.dtype, device=a.device), tuple(a.shape))
        return lu_solve(LU, pivots, identity, adjoint=True)

    def vjp(self, ctx, g_sign, g_logabsdet):
        # d log det = tr(A⁻¹ dA): its real part moves logabsdet, its imaginary part the phase
        # of a complex sign (a real sign is locally constant)
        g = g_logabsdet
        if g_sign is not None and ctx.inputs[0].is_complex():
            g_phase = imag(g_sign * conj(ctx.output(0))) * 1j
            g = g_phase if g is None else g + g_phase
        if g is None:
            return (None,)
        return (g.unsqueeze(-1).unsqueeze(-1) * self._inverse_h(ctx),)

    def jvp(self, ctx, da):
        d = (conj(self._inverse_h(ctx)) * da).sum(dim=(-2, -1))
        if not d.is_complex():
            return zeros(d.shape, dtype=d.dtype, device=d.device), d
        return ctx.output(0) * imag(d) * 1j, real(d)


def linalg_slogdet(A: Tensor) -> return_types.linalg_slogdet:  # noqa: N803
    """The sign and the log of the absolute value of the determinant, ``(sign, logabsdet)``:
    ``(0, -inf)`` for a singular matrix.

    Example:
        >>> ember.linalg.slogdet(ember.tensor([[-2.0, 0.0], [0.0, 1.0]]))
        ember.return_types.linalg_slogdet(
        sign=tensor(-1.),
        logabsdet=tensor(0.6931))
    """
    check_matrix("linalg.slogdet", A, complex_ok=True)
    return return_types.linalg_slogdet(*apply(Slogdet, A))


@method()
def slogdet(input: Tensor) -> return_types.slogdet:
    """``torch.slogdet``: :func:`ember.linalg.slogdet` as a ``return_types.slogdet``.

    Example:
        >>> ember.tensor([[-2.0, 0.0], [0.0, 1.0]]).slogdet().sign
        tensor(-1.)
    """
    return return_types.slogdet(*linalg_slogdet(input))


@method()
def logdet(input: Tensor) -> Tensor:
    """``log(det(input))``: NaN (with a zero gradient) for a negative determinant, ``-inf``
    for a singular matrix; complex for a complex matrix (``log(sign) + logabsdet``).

    Example:
        >>> ember.logdet(ember.tensor([[2.0, 0.0], [0.0, 2.0]]))
        tensor(1.3863)
    """
    check_matrix("logdet", input, complex_ok=True)
    sign, logabsdet = apply(Slogdet, input)
    if input.is_complex():
        return log(sign) + logabsdet
    return where(sign == -1, float("nan"), logabsdet)


# -- determinant -----------------------------------------------------------------------------
def _products_of_others(s: Tensor) -> Tensor:
    """``out[..., i] = prod_{j != i} s[..., j]`` without dividing (exact when ``s`` has
    zeros): the product of the entries before ``i`` times that of those after it."""
    if s.shape[-1] == 0:
        return s
    one = ones(s.shape[:-1] + (1,), dtype=s.dtype, device=s.device)
    before = cumprod(cat([one, narrow(s, -1, 0, s.shape[-1] - 1)], dim=-1), -1)
    after = cumprod(cat([one, narrow(s, -1, 1, s.shape[-1] - 1).flip(-1)], dim=-1), -1)
    return before * after.flip(-1)


def _cofactors(A: Tensor) -> Tensor:  # noqa: N803
    """The cofactor matrix ``det(A) A⁻ᵀ``, also for a singular ``A``: with ``A = U S Vᴴ``,
    ``det(U) det(Vᴴ) conj(U) diag(prod_{j != i} s_j) conj(Vᴴ)``; NaN for a matrix holding a
    NaN or inf (as PyTorch: LAPACK's SVD of it does not converge, so it takes zeros)."""
    # (always masked, no data-dependent branch: jit traces backward rules too)
    finite = all_(isfinite(A), dim=(-2, -1), keepdim=True)
    A = where(finite, A, 0.0)  # noqa: N806
    U, S, Vh = apply(SVD, A, full_matrices=False)  # noqa: N806
    if A.is_complex():  # det(U) det(Vᴴ) is a unit complex number that moves with A
        sign = apply(Det, U) * apply(Det, Vh)
        U, Vh = conj(U), conj(Vh)  # noqa: N806
    else:
        sign = apply(Slogdet, U)[0] * apply(Slogdet, Vh)[0]  # ±1: no gradient
    scaled = U * (sign.unsqueeze(-1) * _products_of_others(S)).unsqueeze(-2)
    return where(finite, matmul(scaled, Vh), math.nan)


@primitive
class Det(Holomorphic, Primitive):
    """The determinant; its derivative is the cofactor matrix, computed through the SVD so
    that it stays finite (and exact) for a singular matrix, as PyTorch's."""

    name = "linalg_det"

    def forward(self, xp, a):
        return xp.asarray(xp.linalg.det(a), dtype=a.dtype)

    def infer(self, a):
        matrix_spec("linalg.det", a)
        return TensorSpec(a.shape[:-2], a.dtype)

    def vjp(self, ctx, g):
        return (g.unsqueeze(-1).unsqueeze(-1) * _cofactors(ctx.inputs[0]),)

    def jvp(self, ctx, da):
        return (_cofactors(ctx.inputs[0]) * da).sum(dim=(-2, -1))


def linalg_det(A: Tensor) -> Tensor:  # noqa: N803
    """The determinant of a square matrix (or of each in a batch); 0 for a singular one, where
    its gradient (the cofactor matrix) is still finite.

    Example:
        >>> round(ember.linalg.det(ember.tensor([[1.0, 2.0], [3.0, 4.0]])).item(), 4)
        -2.0
    """
    check_matrix("linalg.det", A, complex_ok=True)
    return apply(Det, A)


@method()
def det(input: Tensor) -> Tensor:
    """``torch.det``: :func:`ember.linalg.det`, its argument named ``input`` as PyTorch's.

    Example:
        >>> round(ember.det(input=ember.tensor([[1.0, 2.0], [3.0, 4.0]])).item(), 4)
        -2.0
    """
    return linalg_det(input)
