"""The Dirichlet distribution and Beta, its two-category case."""

from __future__ import annotations

import math
import numbers
from typing import Any

import ember
from ember.distributions import constraints
from ember.distributions.distribution import Distribution
from ember.distributions.exp_family import ExponentialFamily
from ember.distributions.stirling import stirling_remainders
from ember.distributions.utils import broadcast_all
from ember.errors import ArgumentError
from ember.tensor import Tensor

__all__ = ["Beta", "Dirichlet"]


class Dirichlet(ExponentialFamily):
    """The Dirichlet distribution over the probability simplex, with ``concentration`` of
    shape ``batch_shape + (K,)``. ``rsample`` normalizes reparameterized gamma samples.

    Example:
        >>> d = ember.distributions.Dirichlet(ember.tensor([1.0, 1.0, 2.0]))
        >>> d.sample().shape, d.event_shape
        (ember.Size([3]), ember.Size([3]))
    """

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    _param_event_dims = {"concentration": 1}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration: Tensor, validate_args: bool | None = None) -> None:
        if not isinstance(concentration, Tensor) or concentration.dim() < 1:
            shape = getattr(concentration, "shape", type(concentration).__name__)
            raise ArgumentError(f"Dirichlet: concentration must be a tensor with at least one dim "
                                f"(the categories), got {shape}")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:], validate_args)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        c = self.concentration.expand(self._extended_shape(sample_shape))
        # (gammas drawn in float64, as PyTorch does: in float32 those of small concentrations
        # all underflow to one tiny value, and every sample came out as 1 / K)
        g = ember._standard_gamma(c.double())
        finfo = ember.finfo(c.dtype)
        return (g / g.sum(-1, keepdim=True)).to(c.dtype).clamp(min=finfo.tiny, max=1 - finfo.eps)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return (ember.xlogy(c - 1, value).sum(-1) + ember.lgamma(c.sum(-1))
                - ember.lgamma(c).sum(-1))

    @property
    def mean(self) -> Tensor:
        """``concentration / concentration.sum(-1)``."""
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self) -> Tensor:
        """The mode; where every concentration is below one, the corner of the largest."""
        c = self.concentration
        above = (c - 1).clamp(min=0)
        inner = above / above.sum(-1, keepdim=True)
        corner = ember.nn.functional.one_hot(c.argmax(-1), c.shape[-1]).to(c.dtype)
        return ember.where((c < 1).all(-1, keepdim=True), corner, inner)

    @property
    def variance(self) -> Tensor:
        """The variance of each coordinate."""
        c = self.concentration
        total = c.sum(-1, keepdim=True)
        return c * (total - c) / (total ** 2 * (total + 1))

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (self.concentration,)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return x.lgamma().sum(-1) - ember.lgamma(x.sum(-1))

    def entropy(self) -> Tensor:
        """``log B(c) + (c0 - K) digamma(c0) - sum (c - 1) digamma(c)`` for ``c0 = sum c``,
        its ``c log c`` terms cancelled by hand with Stirling's remainders (PyTorch's form
        is 2e-3 off at ``c = (1e4, 1e4)`` in float32)."""
        c = self.concentration
        k, total = c.shape[-1], c.sum(-1)
        gamma_rest, digamma_rest = stirling_remainders(c)
        per_category = (0.5 * ember.log(c) - 0.5 / c + gamma_rest
                        - (c - 1) * digamma_rest).sum(-1)
        gamma_total, digamma_total = stirling_remainders(total)
        return (per_category + (0.5 - k) * ember.log(total) + 0.5 * k / total
                - gamma_total + (total - k) * digamma_total
                + (k - 1) * 0.5 * (math.log(2 * math.pi) + 1))


class Beta(ExponentialFamily):
    """The Beta distribution on ``[0, 1]`` with shape parameters ``concentration1`` (alpha)
    and ``concentration0`` (beta); a :class:`Dirichlet` over two categories underneath.

    Example:
        >>> ember.distributions.Beta(2.0, 2.0).mean
        tensor(0.5000)
    """

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1: Tensor | float, concentration0: Tensor | float,
                 validate_args: bool | None = None) -> None:
        c1, c0 = broadcast_all(concentration1, concentration0, owner="Beta")
        if isinstance(concentration1, numbers.Number) and isinstance(concentration0,
                                                                     numbers.Number):
            c1, c0 = c1.reshape(()), c0.reshape(())
        # Beta checks its own parameters and values, so errors name Beta
        self._dirichlet = Dirichlet(ember.stack([c1, c0], -1), validate_args=False)
        super().__init__(self._dirichlet.batch_shape, (), validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> Beta:
        new = super().expand(batch_shape, _instance)
        new._dirichlet = self._dirichlet.expand(new.batch_shape)
        return new

    @property
    def concentration1(self) -> Tensor:
        """The first shape parameter (alpha)."""
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self) -> Tensor:
        """The second shape parameter (beta)."""
        return self._dirichlet.concentration[..., 1]

    @property
    def mean(self) -> Tensor:
        """``alpha / (alpha + beta)``."""
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self) -> Tensor:
        """The mode (see :attr:`Dirichlet.mode`)."""
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self) -> Tensor:
        """``alpha beta / ((alpha + beta) ** 2 (alpha + beta + 1))``."""
        return self._dirichlet.variance[..., 0]

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        return self._dirichlet.rsample(sample_shape)[..., 0]

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self._dirichlet.log_prob(ember.stack([value, 1.0 - value], -1))

    @property
    def _natural_params(self) -> tuple[Tensor, Tensor]:
        return self.concentration1, self.concentration0

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        return ember.lgamma(x) + ember.lgamma(y) - ember.lgamma(x + y)

    def entropy(self) -> Tensor:
        return self._dirichlet.entropy()

    def __repr__(self) -> str:
        return (f"Beta(concentration1: {_shown(self.concentration1)}, "
                f"concentration0: {_shown(self.concentration0)})")


def _shown(value: Tensor) -> Any:
    return value.item() if value.numel() == 1 else tuple(value.shape)
