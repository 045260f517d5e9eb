"""LogisticNormal: a Normal vector mapped onto the simplex by stick-breaking."""

from __future__ import annotations

from ember.distributions import constraints
from ember.distributions.continuous import Normal
from ember.distributions.transformed_distribution import TransformedDistribution
from ember.distributions.transforms import StickBreakingTransform
from ember.tensor import Tensor

__all__ = ["LogisticNormal"]


class LogisticNormal(TransformedDistribution):
    """``StickBreakingTransform()(X)`` for ``X ~ Normal(loc, scale)`` over the last dim: a
    distribution on the simplex with one more coordinate than ``loc``.

    Example:
        >>> d = ember.distributions.LogisticNormal(ember.zeros(3), ember.ones(3))
        >>> d.sample().shape, d.event_shape
        (ember.Size([4]), ember.Size([4]))
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc: Tensor | float, scale: Tensor | float,
                 validate_args: bool | None = None) -> None:
        base = Normal(loc, scale, validate_args=False)
        if not base.batch_shape:
            base = base.expand((1,))
        super().__init__(base, StickBreakingTransform(), validate_args)

    loc = property(lambda self: self.base_dist.base_dist.loc, doc="Mean of the base Normal.")
    scale = property(lambda self: self.base_dist.base_dist.scale,
                     doc="Standard deviation of the base Normal.")
