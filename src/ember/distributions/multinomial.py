"""The multinomial distribution: category counts of ``total_count`` categorical draws."""

from __future__ import annotations

import math
import numbers
from typing import Any

import ember
from ember.distributions import constraints
from ember.distributions.categorical import _CategoricalParams
from ember.distributions.discrete import Binomial
from ember.distributions.distribution import _shape
from ember.distributions.utils import broadcast_all
from ember.errors import ArgumentError
from ember.tensor import Tensor

__all__ = ["Multinomial"]


class Multinomial(_CategoricalParams):
    """Counts per category of ``total_count`` independent draws from the categories given
    by ``probs`` or ``logits`` (shape ``batch_shape + (K,)``); ``total_count`` is one
    Python int for the whole batch, as in PyTorch. As there, the support check only asks
    for nonnegative counts summing to at most ``total_count``, and ``log_prob`` uses the
    counts' own sum.

    Example:
        >>> d = ember.distributions.Multinomial(10, probs=ember.tensor([0.2, 0.8]))
        >>> d.mean
        tensor([2., 8.])
    """

    def __init__(self, total_count: int = 1, probs: Tensor | None = None,
                 logits: Tensor | None = None, validate_args: bool | None = None) -> None:
        if not isinstance(total_count, numbers.Integral):
            raise NotImplementedError("Multinomial: inhomogeneous total_count is not "
                                      f"supported; expected one Python int, got "
                                      f"{type(total_count).__name__}")
        self.total_count = int(total_count)
        super().__init__(probs, logits, validate_args)
        if self._validate_args and self.total_count < 0:
            raise ArgumentError(f"Multinomial: expected total_count to satisfy the constraint "
                                f"{constraints.nonnegative_integer!r}, got {self.total_count}; "
                                "hint: pass validate_args=False to skip this check")

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self) -> constraints.Constraint:
        return constraints.multinomial(self.total_count)

    mean = property(lambda self: self.probs * self.total_count, doc="``n p``.")
    variance = property(lambda self: self.total_count * self.probs * (1 - self.probs),
                        doc="``n p (1 - p)``.")

    def sample(self, sample_shape: Any = ()) -> Tensor:
        sample_shape = _shape(sample_shape)
        draws = self._categorical.sample((self.total_count,) + sample_shape)
        draws = draws.permute(*range(1, draws.dim()), 0)
        counts = ember.zeros(self._extended_shape(sample_shape), dtype=draws.dtype)
        counts = counts.scatter_add(-1, draws, ember.ones_like(draws))
        return counts.to(self.probs.dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value, owner="Multinomial")
        # a category with probability 0 that is never drawn adds nothing
        logits = ember.where((value == 0) & (logits == float("-inf")), ember.zeros_like(logits),
                             logits)
        return (ember.lgamma(value.sum(-1) + 1) - ember.lgamma(value + 1).sum(-1)
                + (logits * value).sum(-1))

    def entropy(self) -> Tensor:
        n = self.total_count
        term1 = n * self._categorical.entropy() - math.lgamma(n + 1)
        # E[sum_k log x_k!] from each count's Binomial(n, p_k) marginal
        binomial = Binomial(self.total_count, probs=self.probs, validate_args=False)
        support = binomial.enumerate_support(expand=False)[1:]
        weights = ember.lgamma(support + 1)
        term2 = (ember.exp(binomial.log_prob(support)) * weights).sum(0).sum(-1)
        return term1 + term2
