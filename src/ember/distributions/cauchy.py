"""The Cauchy distribution: heavy tails, no mean or variance."""

from __future__ import annotations

import math
from typing import Any

import ember
from ember.distributions.continuous import _LocationScale
from ember.tensor import Tensor

__all__ = ["Cauchy"]


def cauchy_quantile(q: Tensor) -> Tensor:
    """The standard Cauchy's quantile ``tan(pi (q - 1/2))`` as ``-sin(pi (1/2 - u)) / sin(pi u)``
    for ``u = min(q, 1 - q)``, negated above the median: ``u`` and ``1/2 - u`` are exact, so
    neither sine rounds away the tails or the centre."""
    high = q > 0.5
    u = ember.where(high, 1 - q, q)
    z = ember.sin(math.pi * (0.5 - u)) / ember.sin(math.pi * u)
    return ember.where(high, z, -z)


class Cauchy(_LocationScale):
    """The Cauchy (Lorentz) distribution with median ``loc`` and half width at half maximum
    ``scale``: the ratio of two independent zero-mean normals. Its mean is NaN and its
    variance infinite, as in PyTorch.

    Example:
        >>> d = ember.distributions.Cauchy(ember.tensor([0.0]), ember.tensor([1.0]))
        >>> d.cdf(ember.tensor([1.0]))
        tensor([0.7500])
    """

    def _filled(self, value: float) -> Tensor:
        return ember.full(self._extended_shape(), value, dtype=self.loc.dtype)

    mean = property(lambda self: self._filled(math.nan), doc="Undefined: NaN.")
    variance = property(lambda self: self._filled(math.inf), doc="Infinite.")

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        # inverse-CDF draws (as Tensor.cauchy_ makes them), out of place so vmap batches them
        return self.icdf(self._uniform(sample_shape, self.loc.dtype))

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        # log1p(z^2) as 2 log hypot(1, z): z^2 overflowed past 1e19 in float32 (-inf)
        return (-math.log(math.pi) - ember.log(self.scale)
                - 2 * ember.log(ember.hypot(1.0, (value - self.loc) / self.scale)))

    def cdf(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        # 1/2 + atan(z) / pi as the angle of (-z, 1): it cancelled below loc (2e-7 off at
        # z = -1e10); -z as (loc - value) / scale, the same bits as -(value - loc) / scale
        # with one pass less (atan2(scale, loc - value) would save another, but its slopes
        # underflow where scale² does); the 1 a number (a 0-d ones tensor cost one op more:
        # small tensors pay per op)
        minus_z = (self.loc - value) / self.scale
        return ember.atan2(1.0, minus_z) / math.pi

    def icdf(self, value: Tensor) -> Tensor:
        """``loc + scale * tan(pi (q - 1/2))``, written so that ``q - 1/2`` does not round
        (PyTorch's ``icdf(1e-20)`` is -6e15, not -3e19; 1% off at ``q = 1 - 1e-15``)."""
        return cauchy_quantile(value) * self.scale + self.loc

    def entropy(self) -> Tensor:
        return math.log(4 * math.pi) + ember.log(self.scale)
