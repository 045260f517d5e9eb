"""The multivariate normal distribution, parameterized by a covariance matrix, a precision
matrix or a lower-triangular Cholesky factor of the covariance."""

from __future__ import annotations

import math
from typing import Any

import ember
from ember.distributions import constraints
from ember.distributions.distribution import Distribution
from ember.distributions.utils import lazy_property, shape_shown
from ember.errors import ArgumentError
from ember.tensor import Tensor

__all__ = ["MultivariateNormal"]


def _solve_lower(tril: Tensor, rhs: Tensor) -> Tensor:
    """``tril^-1 rhs`` for lower-triangular ``tril``, batch dims broadcast."""
    batch = ember.broadcast_shapes(tril.shape[:-2], rhs.shape[:-2])
    return ember.linalg.solve_triangular(tril.expand(batch + tril.shape[-2:]),
                                         rhs.expand(batch + rhs.shape[-2:]), upper=False)


def _precision_to_scale_tril(precision: Tensor) -> Tensor:
    """The Cholesky factor of ``precision^-1`` without inverting a full matrix: with ``J``
    the index reversal, ``J chol(J P J) J = U`` is upper triangular with ``P = U U^T``, so
    ``P^-1 = U^-T U^-1`` and ``L = U^-T``, one triangular solve."""
    flipped = ember.linalg.cholesky(ember.flip(precision, (-2, -1)))
    inv_t = ember.flip(flipped, (-2, -1)).transpose(-2, -1)  # lower triangular
    eye = ember.eye(precision.shape[-1], dtype=precision.dtype).expand(precision.shape)
    return ember.linalg.solve_triangular(inv_t, eye, upper=False)


def _one_scale(owner: str, covariance_matrix: Tensor | None, precision_matrix: Tensor | None,
               scale_tril: Tensor | None) -> tuple[str, Tensor]:
    """The one scale parameter given (its name and value); raises unless exactly one is."""
    given = {k: v for k, v in (("covariance_matrix", covariance_matrix),
                               ("precision_matrix", precision_matrix),
                               ("scale_tril", scale_tril)) if v is not None}
    if len(given) != 1:
        raise ArgumentError(f"{owner}: give exactly one of covariance_matrix, precision_matrix "
                            f"or scale_tril (got {sorted(given) or 'none'})")
    (name, matrix), = given.items()
    return name, matrix


def _scale_tril_of(name: str, matrix: Tensor) -> Tensor:
    """The lower Cholesky factor of the covariance given as ``name``."""
    if name == "scale_tril":
        return matrix
    if name == "covariance_matrix":
        return ember.linalg.cholesky(matrix)
    return _precision_to_scale_tril(matrix)


class _Gaussian(Distribution):
    """What the full-covariance and the low-rank normals share: ``log_prob``, ``entropy``,
    ``mean``/``mode`` and the KL divergence (in ``kl.py``) follow from ``loc`` and three
    methods each family implements its own way: ``_half_log_det`` (``log det(cov) / 2``),
    ``_inverse_quadratic(A)`` (``trace(A^T cov^-1 A)``) and ``_covariance_factor`` (an ``A``
    with ``A A^T = cov``)."""

    support = constraints.real_vector
    has_rsample = True
    loc: Tensor

    mean = property(lambda self: self.loc, doc="``loc``.")
    mode = property(lambda self: self.loc, doc="``loc``.")

    def _half_log_det(self) -> Tensor:
        raise NotImplementedError

    def _inverse_quadratic(self, factor: Tensor) -> Tensor:
        raise NotImplementedError

    def _covariance_factor(self) -> Tensor:
        raise NotImplementedError

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        diff = (value - self.loc).to(self.loc.dtype)  # (float64 values of float32 params: float32)
        m = self._inverse_quadratic(diff.unsqueeze(-1))
        n = self._event_shape[0]
        return -0.5 * (n * math.log(2 * math.pi) + m) - self._half_log_det()

    def entropy(self) -> Tensor:
        n = self._event_shape[0]
        h = 0.5 * n * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return h.expand(self._batch_shape) if self._batch_shape else h


class MultivariateNormal(_Gaussian):
    """The normal distribution over vectors with mean ``loc`` (shape ``batch + (n,)``) and
    exactly one of ``covariance_matrix``, ``precision_matrix`` or ``scale_tril``
    (shape ``batch + (n, n)``).

    Example:
        >>> d = ember.distributions.MultivariateNormal(ember.zeros(2), scale_tril=ember.eye(2))
        >>> d.rsample((3,)).shape
        ember.Size([3, 2])
    """

    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    _param_event_dims = {"loc": 1, "covariance_matrix": 2, "precision_matrix": 2,
                         "scale_tril": 2}

    def __init__(self, loc: Tensor, covariance_matrix: Tensor | None = None,
                 precision_matrix: Tensor | None = None, scale_tril: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        name, matrix = _one_scale("MultivariateNormal", covariance_matrix, precision_matrix,
                                  scale_tril)
        if not isinstance(loc, Tensor) or loc.dim() < 1:
            raise ArgumentError("MultivariateNormal: loc must be a tensor with at least one dim, "
                                f"got {shape_shown(loc)!r}")
        if not isinstance(matrix, Tensor) or matrix.dim() < 2 or \
                matrix.shape[-1] != matrix.shape[-2] or matrix.shape[-1] != loc.shape[-1]:
            raise ArgumentError(f"MultivariateNormal: {name} must be a batch of square "
                                f"({loc.shape[-1]}, {loc.shape[-1]}) matrices matching loc of "
                                f"shape {tuple(loc.shape)}, got {shape_shown(matrix)}")
        try:
            batch = ember.broadcast_shapes(matrix.shape[:-2], loc.shape[:-1])
        except Exception as exc:
            raise ArgumentError(f"MultivariateNormal: batch shapes of loc {tuple(loc.shape)} and "
                                f"{name} {tuple(matrix.shape)} do not broadcast") from exc
        n = loc.shape[-1]
        setattr(self, name, matrix.expand(batch + (n, n)))
        self.loc = loc.expand(batch + (n,))
        super().__init__(batch, (n,), validate_args)
        self._unbroadcasted_scale_tril = _scale_tril_of(name, matrix)

    @lazy_property
    def scale_tril(self) -> Tensor:
        """The lower Cholesky factor of the covariance."""
        n = self._event_shape[0]
        return self._unbroadcasted_scale_tril.expand(self._batch_shape + (n, n))

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        """``scale_tril @ scale_tril^T``."""
        tril = self._unbroadcasted_scale_tril
        n = self._event_shape[0]
        return (tril @ tril.transpose(-2, -1)).expand(self._batch_shape + (n, n))

    @lazy_property
    def precision_matrix(self) -> Tensor:
        """The inverse covariance, from triangular solves with ``scale_tril``."""
        tril = self._unbroadcasted_scale_tril
        n = self._event_shape[0]
        eye = ember.eye(n, dtype=tril.dtype).expand(tril.shape)
        inv = ember.linalg.solve_triangular(tril, eye, upper=False)
        return (inv.transpose(-2, -1) @ inv).expand(self._batch_shape + (n, n))

    mean = property(lambda self: self.loc, doc="``loc``.")
    mode = property(lambda self: self.loc, doc="``loc``.")

    @property
    def variance(self) -> Tensor:
        """The diagonal of the covariance."""
        return (self._unbroadcasted_scale_tril ** 2).sum(-1).expand(
            self._batch_shape + self._event_shape)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        eps = ember.randn(self._extended_shape(sample_shape), dtype=self.loc.dtype)
        return self.loc + (self._unbroadcasted_scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def _half_log_det(self) -> Tensor:
        return ember.log(self._unbroadcasted_scale_tril.diagonal(0, -2, -1)).sum(-1)

    def _covariance_factor(self) -> Tensor:
        """A matrix ``A`` with ``A A^T`` the covariance: ``scale_tril``."""
        return self._unbroadcasted_scale_tril

    def _inverse_quadratic(self, factor: Tensor) -> Tensor:
        """``trace(factor^T covariance^-1 factor)``, by a triangular solve."""
        return (_solve_lower(self._unbroadcasted_scale_tril, factor) ** 2).sum((-2, -1))
