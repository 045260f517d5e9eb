"""The Wishart distribution over positive-definite matrices, sampled by the Bartlett
decomposition."""

from __future__ import annotations

import math
import numbers
import warnings
from typing import Any

import ember
from ember.distributions import constraints
from ember.distributions.distribution import Distribution, _all_true, _shape
from ember.distributions.exp_family import ExponentialFamily
from ember.distributions.multivariate_normal import _one_scale, _scale_tril_of
from ember.distributions.utils import lazy_property, shape_shown
from ember.errors import ArgumentError
from ember.tensor import Tensor

__all__ = ["Wishart"]

_LOG_2 = math.log(2)


def _mvdigamma(x: Tensor, p: int) -> Tensor:
    """The multivariate digamma function, ``sum_i digamma(x - i / 2)`` for ``i < p``."""
    return ember.digamma(x.unsqueeze(-1) - ember.arange(p, dtype=x.dtype) / 2).sum(-1)


class Wishart(ExponentialFamily):
    """The Wishart distribution with ``df`` degrees of freedom (more than ``p - 1``) and a
    ``p x p`` scale given by exactly one of ``covariance_matrix``, ``precision_matrix`` or
    ``scale_tril``: the law of ``sum_i x_i x_i^T`` for ``df`` draws ``x_i`` from
    ``MultivariateNormal(0, covariance_matrix)``. ``rsample`` uses the Bartlett
    decomposition (chi-squared diagonal through ``ember._standard_gamma``, so gradients
    reach ``df``) and redraws the rare singular samples.

    Example:
        >>> d = ember.distributions.Wishart(ember.tensor(4.0), covariance_matrix=ember.eye(2))
        >>> d.mean
        tensor([[4., 0.],
                [0., 4.]])
    """

    support = constraints.positive_definite
    has_rsample = True
    _param_event_dims = {"df": 0, "covariance_matrix": 2, "precision_matrix": 2,
                         "scale_tril": 2}

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:  # type: ignore[override]
        """The constraints; ``df`` must exceed ``p - 1``."""
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self._event_shape[-1] - 1)}

    def __init__(self, df: Tensor | float, covariance_matrix: Tensor | None = None,
                 precision_matrix: Tensor | None = None, scale_tril: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        name, matrix = _one_scale("Wishart", covariance_matrix, precision_matrix, scale_tril)
        if not isinstance(matrix, Tensor) or matrix.dim() < 2 \
                or matrix.shape[-1] != matrix.shape[-2]:
            raise ArgumentError(f"Wishart: {name} must be a batch of square matrices, got "
                                f"{shape_shown(matrix)!r}")
        if isinstance(df, numbers.Number):
            batch = matrix.shape[:-2]
            self.df = ember.tensor(float(df), dtype=matrix.dtype)
        elif isinstance(df, Tensor):
            try:
                batch = ember.broadcast_shapes(matrix.shape[:-2], df.shape)
            except Exception as exc:
                raise ArgumentError(f"Wishart: df of shape {tuple(df.shape)} and {name} of shape "
                                    f"{tuple(matrix.shape)} do not broadcast") from exc
            self.df = df.expand(batch)
        else:
            raise TypeError(f"Wishart: df must be an ember Tensor or a number, got "
                            f"{type(df).__name__}")
        p = matrix.shape[-1]
        if not _all_true(self.df > p - 1):
            raise ArgumentError(f"Wishart: df={df} must be greater than ndim - 1 = {p - 1}")
        if not _all_true(self.df >= p):
            warnings.warn("Wishart: low df values (ndim - 1 < df < ndim) make singular samples "
                          "likely", stacklevel=2)
        setattr(self, name, matrix.expand(batch + (p, p)))
        super().__init__(batch, (p, p), validate_args)
        self._unbroadcasted_scale_tril = _scale_tril_of(name, matrix)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> Distribution:
        new = super().expand(batch_shape, _instance)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(
            _shape(batch_shape) + self._event_shape)
        return new

    @lazy_property
    def scale_tril(self) -> Tensor:
        """The lower Cholesky factor of the scale (``covariance_matrix``)."""
        return self._unbroadcasted_scale_tril.expand(self._batch_shape + self._event_shape)

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        """The scale matrix, ``scale_tril @ scale_tril^T``."""
        tril = self._unbroadcasted_scale_tril
        return (tril @ tril.transpose(-2, -1)).expand(self._batch_shape + self._event_shape)

    @lazy_property
    def precision_matrix(self) -> Tensor:
        """The inverse of the scale matrix."""
        tril = self._unbroadcasted_scale_tril
        eye = ember.eye(self._event_shape[-1], dtype=tril.dtype)
        return ember.cholesky_solve(eye, tril).expand(self._batch_shape + self._event_shape)

    def _df_matrix(self) -> Tensor:
        return self.df.reshape(self._batch_shape + (1, 1))

    @property
    def mean(self) -> Tensor:
        """``df * covariance_matrix``."""
        return self._df_matrix() * self.covariance_matrix

    @property
    def mode(self) -> Tensor:
        """``(df - p - 1) * covariance_matrix``; NaN where ``df <= p + 1``."""
        factor = self._df_matrix() - self._event_shape[-1] - 1
        factor = ember.where(factor <= 0, ember.full_like(factor, float("nan")), factor)
        return factor * self.covariance_matrix

    @property
    def variance(self) -> Tensor:
        """``df * (V_ij ** 2 + V_ii V_jj)`` for the scale ``V``."""
        v = self.covariance_matrix
        diag = v.diagonal(0, -2, -1)
        return self._df_matrix() * (v ** 2 + diag.unsqueeze(-1) * diag.unsqueeze(-2))

    def _bartlett_sample(self, sample_shape: tuple[int, ...]) -> Tensor:
        """``L A A^T L^T`` with ``A`` lower triangular: ``sqrt(chi2(df - i))`` on the
        diagonal, standard normals below it."""
        p = self._event_shape[-1]
        tril = self._unbroadcasted_scale_tril
        half_df = (self.df.unsqueeze(-1) - ember.arange(p, dtype=tril.dtype)) / 2
        chi2 = 2 * ember._standard_gamma(half_df.expand(sample_shape + self._batch_shape + (p,)))
        diag = ember.sqrt(chi2).clamp(min=ember.finfo(tril.dtype).eps)
        below = ember.randn(self._extended_shape(sample_shape), dtype=tril.dtype).tril(-1)
        chol = tril @ (below + ember.diag_embed(diag))
        return chol @ chol.transpose(-2, -1)

    def rsample(self, sample_shape: Any = (), max_try_correction: int | None = None) -> Tensor:
        """A reparameterized sample; samples that come out singular (not numerically
        positive definite) are redrawn up to ``max_try_correction`` (default 10) times."""
        sample_shape = _shape(sample_shape)
        tries = 10 if max_try_correction is None else max_try_correction
        sample = self._bartlett_sample(sample_shape)
        for attempt in range(tries):
            singular = ~self.support.check(sample)
            if _all_true(~singular):
                break
            if attempt == 0:
                warnings.warn("Wishart: singular sample detected; redrawing it", stacklevel=2)
            sample = ember.where(singular.unsqueeze(-1).unsqueeze(-1),
                                 self._bartlett_sample(sample_shape), sample)
        return sample

    def _half_log_det_scale(self) -> Tensor:
        return ember.log(self._unbroadcasted_scale_tril.diagonal(0, -2, -1)).sum(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        nu, p = self.df, self._event_shape[-1]
        trace = ember.cholesky_solve(value, self._unbroadcasted_scale_tril).diagonal(
            0, -2, -1).sum(-1)
        return (-nu * (p * _LOG_2 / 2 + self._half_log_det_scale())
                - ember.mvlgamma(nu / 2, p)
                + (nu - p - 1) / 2 * ember.linalg.slogdet(value).logabsdet - trace / 2)

    _mean_carrier_measure = 0

    @property
    def _natural_params(self) -> tuple[Tensor, Tensor]:
        p = self._event_shape[-1]
        return -self.precision_matrix / 2, (self.df - p - 1) / 2

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        p = self._event_shape[-1]
        return (y + (p + 1) / 2) * (-ember.linalg.slogdet(-2 * x).logabsdet
                                    + math.log(2) * p) + ember.mvlgamma(y + (p + 1) / 2, p=p)

    def entropy(self) -> Tensor:
        nu, p = self.df, self._event_shape[-1]
        return ((p + 1) * (p * _LOG_2 / 2 + self._half_log_det_scale())
                + ember.mvlgamma(nu / 2, p) - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p)
                + nu * p / 2)
