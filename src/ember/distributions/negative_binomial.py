"""The negative binomial distribution: failures before ``total_count`` successes."""

from __future__ import annotations

from typing import Any

import ember
from ember.distributions import constraints
from ember.distributions.discrete import _BinaryParams
from ember.tensor import Tensor

__all__ = ["NegativeBinomial"]

F = ember.nn.functional


class NegativeBinomial(_BinaryParams):
    """The number of successes, each with probability ``probs`` (or ``sigmoid(logits)``),
    before ``total_count`` failures in Bernoulli trials; ``total_count`` may be any
    nonnegative real. Sampled as ``Poisson(Gamma(total_count, exp(-logits)))``.

    Example:
        >>> d = ember.distributions.NegativeBinomial(4.0, probs=ember.tensor(0.5))
        >>> d.mean, d.variance
        (tensor(4.), tensor(8.))
    """

    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    _param_event_dims = {"total_count": 0, "probs": 0, "logits": 0}
    support = constraints.nonnegative_integer

    def __init__(self, total_count: Tensor | float, probs: Tensor | float | None = None,
                 logits: Tensor | float | None = None, validate_args: bool | None = None) -> None:
        shape, (count,) = self._set_param(probs, logits, total_count)
        self.total_count = count.to(self._param.dtype)
        super().__init__(shape, (), validate_args)

    mean = property(lambda self: self.total_count * ember.exp(self.logits),
                    doc="``total_count p / (1 - p)``.")
    variance = property(lambda self: self.mean / ember.sigmoid(-self.logits),
                        doc="``total_count p / (1 - p) ** 2``.")

    @property
    def mode(self) -> Tensor:
        """``floor((total_count - 1) p / (1 - p))``, at least zero."""
        return ((self.total_count - 1) * ember.exp(self.logits)).floor().clamp(min=0.0)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            rate = ember._standard_gamma(self.total_count.expand(shape)) * ember.exp(
                self.logits).expand(shape)
            return ember.poisson(rate.clamp(min=ember.finfo(rate.dtype).tiny))

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        n, logits = self.total_count, self.logits
        unnormalized = n * F.logsigmoid(-logits) + value * F.logsigmoid(logits)
        log_norm = ember.lgamma(1.0 + value) + ember.lgamma(n) - ember.lgamma(n + value)
        # total_count = 0 puts all mass on 0, where lgamma(0) terms cancel
        log_norm = ember.where(n + value == 0, ember.zeros_like(log_norm), log_norm)
        return unnormalized - log_norm
