"""Independent: reinterprets some batch dims of a distribution as event dims."""

from __future__ import annotations

from typing import Any

from ember.distributions import constraints
from ember.distributions.distribution import Distribution, _shape
from ember.distributions.utils import sum_rightmost
from ember.errors import ArgumentError, ArgumentTypeError
from ember.tensor import Tensor

__all__ = ["Independent"]


def _check_base(owner: str, base: Any) -> None:
    """A clear error for a base that is no Distribution (it was an AttributeError)."""
    if not isinstance(base, Distribution):
        raise ArgumentTypeError(f"{owner}: base_distribution must be a Distribution, got "
                                f"{type(base).__name__}")


class Independent(Distribution):
    """Treats the rightmost ``reinterpreted_batch_ndims`` batch dims of ``base_distribution``
    as event dims, so ``log_prob`` sums over them (e.g. a diagonal Gaussian).

    Example:
        >>> base = ember.distributions.Normal(ember.zeros(3), ember.ones(3))
        >>> d = ember.distributions.Independent(base, 1)
        >>> d.batch_shape, d.event_shape, d.log_prob(ember.zeros(3)).shape
        (ember.Size([]), ember.Size([3]), ember.Size([]))
    """

    arg_constraints: dict[str, constraints.Constraint] = {}

    def __init__(self, base_distribution: Distribution, reinterpreted_batch_ndims: int,
                 validate_args: bool | None = None) -> None:
        _check_base("Independent", base_distribution)
        n = int(reinterpreted_batch_ndims)
        batch = base_distribution.batch_shape
        if n < 0 or n > len(batch):
            raise ArgumentError(f"Independent: reinterpreted_batch_ndims must be in [0, "
                                f"{len(batch)}] for a base distribution of batch_shape {batch}, "
                                f"got {reinterpreted_batch_ndims}")
        self.base_dist = base_distribution
        self.reinterpreted_batch_ndims = n
        split = len(batch) - n
        super().__init__(batch[:split], batch[split:] + base_distribution.event_shape,
                         validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> Distribution:
        new = super().expand(batch_shape, _instance)
        moved = self._event_shape[:self.reinterpreted_batch_ndims]
        new.base_dist = self.base_dist.expand(_shape(batch_shape) + moved)
        return new

    has_rsample = property(lambda self: self.base_dist.has_rsample)
    has_enumerate_support = property(
        lambda self: self.reinterpreted_batch_ndims == 0 and self.base_dist.has_enumerate_support)

    @property
    def support(self) -> constraints.Constraint:
        base = self.base_dist.support
        if self.reinterpreted_batch_ndims == 0:
            return base
        return constraints.independent(base, self.reinterpreted_batch_ndims)

    mean = property(lambda self: self.base_dist.mean, doc="The base distribution's mean.")
    mode = property(lambda self: self.base_dist.mode, doc="The base distribution's mode.")
    variance = property(lambda self: self.base_dist.variance,
                        doc="The base distribution's variance.")

    def sample(self, sample_shape: Any = ()) -> Tensor:
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value: Tensor) -> Tensor:
        return sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self) -> Tensor:
        return sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        if self.reinterpreted_batch_ndims:
            raise NotImplementedError("Independent.enumerate_support: only with "
                                      "reinterpreted_batch_ndims=0")
        return self.base_dist.enumerate_support(expand)

    def __repr__(self) -> str:
        return f"Independent({self.base_dist!r}, {self.reinterpreted_batch_ndims})"
