"""The multivariate normal with a low-rank-plus-diagonal covariance ``W W^T + diag(D)``,
whose density costs ``O(n m^2)`` instead of ``O(n^3)`` through the capacitance matrix
``I + W^T D^-1 W`` (Woodbury identity, matrix determinant lemma)."""

from __future__ import annotations

from typing import Any

import ember
from ember.distributions import constraints
from ember.distributions.multivariate_normal import _Gaussian, _solve_lower
from ember.distributions.utils import lazy_property, shape_shown
from ember.errors import ArgumentError
from ember.tensor import Tensor

__all__ = ["LowRankMultivariateNormal"]


class LowRankMultivariateNormal(_Gaussian):
    """The normal distribution over vectors with mean ``loc`` (``batch + (n,)``) and
    covariance ``cov_factor @ cov_factor^T + diag(cov_diag)``, ``cov_factor`` of shape
    ``batch + (n, m)`` and ``cov_diag`` of shape ``batch + (n,)``.

    Example:
        >>> d = ember.distributions.LowRankMultivariateNormal(
        ...     ember.zeros(3), ember.ones(3, 1), ember.ones(3))
        >>> d.covariance_matrix
        tensor([[2., 1., 1.],
                [1., 2., 1.],
                [1., 1., 2.]])
    """

    arg_constraints = {"loc": constraints.real_vector,
                       "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    _param_event_dims = {"loc": 1, "cov_factor": 2, "cov_diag": 1}

    def __init__(self, loc: Tensor, cov_factor: Tensor, cov_diag: Tensor,
                 validate_args: bool | None = None) -> None:
        for name, value, rank in (("loc", loc, 1), ("cov_factor", cov_factor, 2),
                                  ("cov_diag", cov_diag, 1)):
            if not isinstance(value, Tensor) or value.dim() < rank:
                raise ArgumentError(f"LowRankMultivariateNormal: {name} must be a tensor with at "
                                    f"least {rank} dims, got {shape_shown(value)!r}")
        n = loc.shape[-1]
        if cov_factor.shape[-2] != n:
            raise ArgumentError(f"LowRankMultivariateNormal: cov_factor must be a batch of "
                                f"({n}, m) matrices to match loc of shape {tuple(loc.shape)}, "
                                f"got shape {tuple(cov_factor.shape)}")
        if cov_diag.shape[-1] != n:
            raise ArgumentError("LowRankMultivariateNormal: cov_diag must be a batch of vectors "
                                "of "
                                f"length {n} to match loc, got shape {tuple(cov_diag.shape)}")
        try:
            batch = ember.broadcast_shapes(loc.shape[:-1], cov_factor.shape[:-2],
                                           cov_diag.shape[:-1])
        except Exception as exc:
            raise ArgumentError(f"LowRankMultivariateNormal: incompatible batch shapes: loc "
                                f"{tuple(loc.shape)}, cov_factor {tuple(cov_factor.shape)}, "
                                f"cov_diag {tuple(cov_diag.shape)}") from exc
        self.loc = loc.expand(batch + (n,))
        self.cov_factor = cov_factor.expand(batch + cov_factor.shape[-2:])
        self.cov_diag = cov_diag.expand(batch + (n,))
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        super().__init__(batch, (n,), validate_args)
        self._capacitance_tril = ember.linalg.cholesky(
            self._whitened_factor_t() @ cov_factor
            + ember.eye(cov_factor.shape[-1], dtype=cov_factor.dtype))

    def _whitened_factor_t(self) -> Tensor:
        """``W^T D^-1``."""
        return (self._unbroadcasted_cov_factor.transpose(-2, -1)
                / self._unbroadcasted_cov_diag.unsqueeze(-2))

    def _half_log_det(self) -> Tensor:
        """``log det(covariance) / 2`` by the matrix determinant lemma."""
        return (ember.log(self._capacitance_tril.diagonal(0, -2, -1)).sum(-1)
                + 0.5 * ember.log(self._unbroadcasted_cov_diag).sum(-1))

    def _inverse_quadratic(self, factor: Tensor) -> Tensor:
        """``trace(factor^T covariance^-1 factor)`` by the Woodbury identity."""
        direct = (factor ** 2 / self._unbroadcasted_cov_diag.unsqueeze(-1)).sum((-2, -1))
        projected = _solve_lower(self._capacitance_tril, self._whitened_factor_t() @ factor)
        return direct - (projected ** 2).sum((-2, -1))

    def _covariance_factor(self) -> Tensor:
        """A matrix ``A`` with ``A A^T`` the covariance: ``[W, diag(sqrt(D))]``."""
        factor = self._unbroadcasted_cov_factor
        diag = ember.diag_embed(ember.sqrt(self._unbroadcasted_cov_diag))
        batch = ember.broadcast_shapes(factor.shape[:-2], diag.shape[:-2])
        return ember.cat([factor.expand(batch + factor.shape[-2:]),
                          diag.expand(batch + diag.shape[-2:])], -1)

    @lazy_property
    def variance(self) -> Tensor:
        """The diagonal of the covariance."""
        return ((self._unbroadcasted_cov_factor ** 2).sum(-1) + self._unbroadcasted_cov_diag
                ).expand(self._batch_shape + self._event_shape)

    @lazy_property
    def scale_tril(self) -> Tensor:
        """The lower Cholesky factor of the covariance."""
        n = self._event_shape[0]
        sqrt_diag = ember.sqrt(self._unbroadcasted_cov_diag).unsqueeze(-1)
        scaled = self._unbroadcasted_cov_factor / sqrt_diag
        inner = scaled @ scaled.transpose(-2, -1) + ember.eye(n, dtype=scaled.dtype)
        return (sqrt_diag * ember.linalg.cholesky(inner)).expand(self._batch_shape + (n, n))

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        """``cov_factor @ cov_factor^T + diag(cov_diag)``."""
        n = self._event_shape[0]
        w = self._unbroadcasted_cov_factor
        return (w @ w.transpose(-2, -1) + ember.diag_embed(self._unbroadcasted_cov_diag)
                ).expand(self._batch_shape + (n, n))

    @lazy_property
    def precision_matrix(self) -> Tensor:
        """The inverse covariance by the Woodbury identity."""
        n = self._event_shape[0]
        a = _solve_lower(self._capacitance_tril, self._whitened_factor_t())
        return (ember.diag_embed(1 / self._unbroadcasted_cov_diag) - a.transpose(-2, -1) @ a
                ).expand(self._batch_shape + (n, n))

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        rank = self.cov_factor.shape[-1]
        eps_w = ember.randn(shape[:-1] + (rank,), dtype=self.loc.dtype)
        eps_d = ember.randn(shape, dtype=self.loc.dtype)
        return (self.loc + (self._unbroadcasted_cov_factor @ eps_w.unsqueeze(-1)).squeeze(-1)
                + ember.sqrt(self._unbroadcasted_cov_diag) * eps_d)
