"""The Cauchy distribution: heavy tails, no mean or variance."""

from __future__ import annotations

import math
from typing import Any

import ember
from ember.distributions.continuous import _LocationScale
from ember.tensor import Tensor

__all__ = ["Cauchy"]


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
        return (-math.log(math.pi) - ember.log(self.scale)
                - ember.log1p(((value - self.loc) / self.scale) ** 2))

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
        return ember.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self) -> Tensor:
        return math.log(4 * math.pi) + ember.log(self.scale)
