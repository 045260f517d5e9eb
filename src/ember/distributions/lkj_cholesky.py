"""LKJCholesky: the LKJ distribution over correlation matrices, on their Cholesky
factors."""

from __future__ import annotations

import math
from typing import Any

import ember
from ember.distributions import constraints
from ember.distributions.dirichlet import Beta
from ember.distributions.distribution import Distribution, _shape
from ember.distributions.utils import broadcast_all
from ember.errors import ArgumentError
from ember.tensor import Tensor

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """The LKJ distribution of ``dim x dim`` correlation matrices ``M`` (density
    proportional to ``det(M) ** (concentration - 1)``), over their lower Cholesky factors
    ``L`` (``M = L L^T``). Sampled by the onion method: each row gets a Beta-distributed
    squared norm below the diagonal, in a uniformly random direction.

    Example:
        >>> d = ember.distributions.LKJCholesky(3, ember.tensor(2.0))
        >>> d.sample().shape, d.support
        (ember.Size([3, 3]), CorrCholesky())
    """

    arg_constraints = {"concentration": constraints.positive}
    _param_event_dims = {"concentration": 0}
    support = constraints.corr_cholesky

    def __init__(self, dim: int, concentration: Tensor | float = 1.0,
                 validate_args: bool | None = None) -> None:
        if not isinstance(dim, int) or dim < 2:
            raise ArgumentError(f"LKJCholesky: expected dim to be an integer greater than or equal "
                                f"to 2, found dim={dim}")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration, owner="LKJCholesky")
        c = self.concentration
        super().__init__(c.shape, (dim, dim), validate_args)
        marginal = c + 0.5 * (dim - 2)
        offset = ember.cat([ember.zeros(1, dtype=c.dtype), ember.arange(dim - 1, dtype=c.dtype)])
        # row i's squared norm below the diagonal is Beta(i / 2, marginal - (i - 1) / 2) (row 0
        # has none); PyTorch draws Beta(i - 1/2, ...), so its rows below the second have too
        # large a norm: their correlations spread wider than the LKJ marginal
        self._beta = Beta(0.5 * offset + 0.5, marginal.unsqueeze(-1) - 0.5 * offset,
                          validate_args=self._validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> Distribution:
        new = super().expand(batch_shape, _instance)
        new._beta = self._beta.expand(_shape(batch_shape) + (self.dim,))
        return new

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with ember.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            normal = ember.randn(self._extended_shape(sample_shape), dtype=y.dtype).tril(-1)
            norm = ember.linalg.vector_norm(normal, dim=-1, keepdim=True)
            direction = normal / norm.clamp(min=ember.finfo(y.dtype).tiny)  # row 0 stays 0
            w = ember.sqrt(y) * direction
            tiny = ember.finfo(w.dtype).tiny
            diag = ember.sqrt((1 - (w ** 2).sum(-1)).clamp(min=tiny))
            return w + ember.diag_embed(diag)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        dim, c = self.dim, self.concentration
        diag = value.diagonal(0, -2, -1)[..., 1:]
        order = 2 * (c - 1).unsqueeze(-1) + dim - ember.arange(2, dim + 1, dtype=c.dtype)
        unnormalized = (order * ember.log(diag)).sum(-1)
        dm1 = dim - 1
        alpha = c + 0.5 * dm1
        normalizer = (0.5 * dm1 * math.log(math.pi) + ember.mvlgamma(alpha - 0.5, dm1)
                      - ember.lgamma(alpha) * dm1)
        return unnormalized - normalizer
