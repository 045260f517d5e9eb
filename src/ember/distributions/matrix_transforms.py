"""Transforms onto sets of matrices: lower Cholesky factors, positive-definite matrices and
Cholesky factors of correlation matrices.

Example:
    >>> from ember.distributions.transforms import CorrCholeskyTransform
    >>> CorrCholeskyTransform()(ember.zeros(1))
    tensor([[1., 0.],
            [0., 1.]])
"""

from __future__ import annotations

import math

import numpy as np

import ember
from ember.distributions import constraints
from ember.distributions.transforms import Transform
from ember.errors import ArgumentError
from ember.tensor import Tensor

__all__ = ["CorrCholeskyTransform", "LowerCholeskyTransform", "PositiveDefiniteTransform"]

F = ember.nn.functional


def _tril_positions(n: int, diag: int) -> np.ndarray:
    """Flat (row-major) positions of the entries of an ``n x n`` matrix on or below
    diagonal ``diag``, in row order."""
    rows, cols = np.indices((n, n))
    return np.flatnonzero(cols < rows + diag + 1)


def _tril_matrix_to_vec(mat: Tensor, diag: int = 0) -> Tensor:
    """The entries of ``mat`` on or below diagonal ``diag``, row by row, as a vector."""
    n = mat.shape[-1]
    flat = mat.reshape(mat.shape[:-2] + (n * n,))
    return flat[..., ember.tensor(_tril_positions(n, diag))]


def _vec_to_tril_matrix(vec: Tensor, diag: int = 0) -> Tensor:
    """The ``n x n`` lower-triangular matrix (below diagonal ``diag``) filled row by row
    from ``vec``; the inverse of `_tril_matrix_to_vec`."""
    length = vec.shape[-1]
    b = 1 + 2 * diag
    n = round((-b + math.sqrt(b * b + 8 * length + 4 * abs(diag) * (diag + 1))) / 2)
    positions = _tril_positions(n, diag)
    if len(positions) != length:
        raise ArgumentError(f"_vec_to_tril_matrix: a last dim of size {length} is not the number "
                            f"of entries below diagonal {diag} of any square matrix")
    source = np.full(n * n, length)  # index of the appended zero
    source[positions] = np.arange(length)
    padded = F.pad(vec, (0, 1))
    return padded[..., ember.tensor(source)].reshape(vec.shape[:-1] + (n, n))


class LowerCholeskyTransform(Transform):
    """Square matrices onto lower-triangular matrices with a positive diagonal: the strictly
    lower part is kept, the diagonal exponentiated (not bijective: the upper part is lost).

    Example:
        >>> LowerCholeskyTransform()(ember.zeros(2, 2))
        tensor([[1., 0.],
                [0., 1.]])
    """

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky
    bijective = False

    def _call(self, x: Tensor) -> Tensor:
        return x.tril(-1) + ember.diag_embed(ember.exp(x.diagonal(0, -2, -1)))

    def _inverse(self, y: Tensor) -> Tensor:
        return y.tril(-1) + ember.diag_embed(ember.log(y.diagonal(0, -2, -1)))


class PositiveDefiniteTransform(Transform):
    """Square matrices onto positive-definite ones: ``L L^T`` with ``L`` from
    :class:`LowerCholeskyTransform`; the inverse goes through the Cholesky factor.

    Example:
        >>> PositiveDefiniteTransform()(ember.zeros(2, 2))
        tensor([[1., 0.],
                [0., 1.]])
    """

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite
    bijective = False

    def _call(self, x: Tensor) -> Tensor:
        tril = LowerCholeskyTransform()(x)
        return tril @ tril.transpose(-2, -1)

    def _inverse(self, y: Tensor) -> Tensor:
        return LowerCholeskyTransform().inv(ember.linalg.cholesky(y))


class CorrCholeskyTransform(Transform):
    """A bijection from ``D (D - 1) / 2`` reals onto Cholesky factors of ``D x D``
    correlation matrices (lower triangular, positive diagonal, rows of unit norm): ``tanh``
    maps each real into ``(-1, 1)``, and a stick-breaking step per row turns those into the
    row's entries.

    Example:
        >>> t = CorrCholeskyTransform()
        >>> y = t(ember.tensor([0.3, -0.2, 0.9]))
        >>> bool(ember.allclose((y ** 2).sum(-1), ember.ones(3)))
        True
    """

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def _call(self, x: Tensor) -> Tensor:
        self.forward_shape(tuple(x.shape))  # names this transform if x has the wrong length
        eps = ember.finfo(x.dtype).eps
        r = _vec_to_tril_matrix(ember.tanh(x).clamp(min=-1 + eps, max=1 - eps), diag=-1)
        remaining = ember.cumprod(ember.sqrt(1 - r ** 2), -1)
        r = r + ember.eye(r.shape[-1], dtype=r.dtype)
        return r * F.pad(remaining[..., :-1], (1, 0), value=1.0)

    def _inverse(self, y: Tensor) -> Tensor:
        self.inverse_shape(tuple(y.shape))  # names this transform if y is not square
        left = F.pad((1 - ember.cumsum(y * y, -1))[..., :-1], (1, 0), value=1.0)
        t = _tril_matrix_to_vec(y, diag=-1) / ember.sqrt(_tril_matrix_to_vec(left, diag=-1))
        return (ember.log1p(t) - ember.log1p(-t)) / 2

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        left = _tril_matrix_to_vec(1 - ember.cumsum(y * y, -1), diag=-2)
        stick_breaking = 0.5 * ember.log(left).sum(-1)
        tanh = -2 * (x + F.softplus(-2 * x) - math.log(2.0)).sum(-1)
        return stick_breaking + tanh

    def forward_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        if len(shape) < 1:
            raise ArgumentError(f"CorrCholeskyTransform: expected at least one dim, got {shape}")
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ArgumentError(f"CorrCholeskyTransform: a last dim of {n} is not D (D - 1) / 2 "
                                "for any D")
        return shape[:-1] + (d, d)

    def inverse_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        if len(shape) < 2 or shape[-2] != shape[-1]:
            raise ArgumentError(f"CorrCholeskyTransform: expected square matrices, got shape "
                                f"{shape}")
        d = shape[-1]
        return shape[:-2] + (d * (d - 1) // 2,)
