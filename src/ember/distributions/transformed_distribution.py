"""TransformedDistribution (a base distribution pushed through transforms) and LogNormal."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import ember
from ember.distributions import constraints
from ember.distributions.continuous import Normal
from ember.distributions.distribution import Distribution, _shape
from ember.distributions.independent import Independent, _check_base
from ember.distributions.transforms import ComposeTransform, ExpTransform, Transform
from ember.distributions.utils import sum_rightmost
from ember.errors import ArgumentError
from ember.tensor import Tensor

__all__ = ["LogNormal", "TransformedDistribution"]


class TransformedDistribution(Distribution):
    """The distribution of ``transforms[-1](...transforms[0](x))`` for ``x`` drawn from
    ``base_distribution``; ``log_prob`` applies the change-of-variables formula.

    Example:
        >>> from ember.distributions import Normal, TransformedDistribution
        >>> from ember.distributions.transforms import TanhTransform
        >>> d = TransformedDistribution(Normal(0.0, 1.0), [TanhTransform(cache_size=1)])
        >>> a = d.rsample((4,))   # squashed into (-1, 1), as for a SAC policy
        >>> d.log_prob(a).shape
        ember.Size([4])
    """

    arg_constraints: dict[str, constraints.Constraint] = {}

    def __init__(self, base_distribution: Distribution,
                 transforms: Transform | Sequence[Transform],
                 validate_args: bool | None = None) -> None:
        _check_base("TransformedDistribution", base_distribution)
        if isinstance(transforms, Transform):
            transforms = [transforms]
        elif not isinstance(transforms, Iterable):  # a ValueError as torch's
            raise ArgumentError("TransformedDistribution: transforms must be a Transform or a "
                                f"list of them, got {type(transforms).__name__}")
        self.transforms = list(transforms)
        for t in self.transforms:
            if not isinstance(t, Transform):  # a ValueError as torch's
                raise ArgumentError("TransformedDistribution: transforms must be Transform "
                                    f"instances, got {type(t).__name__}")
        shape = base_distribution.batch_shape + base_distribution.event_shape
        base_event_dim = len(base_distribution.event_shape)
        chain = ComposeTransform(self.transforms)
        needed = chain.domain.event_dim
        if len(shape) < needed:
            raise ArgumentError(f"TransformedDistribution: the transforms need samples with at "
                                f"least {needed} dims, but the base distribution's samples have "
                                f"shape {shape}")
        forward = chain.forward_shape(shape)
        base_shape = chain.inverse_shape(forward)
        if base_shape != shape:  # parameters of the transforms broadcast the base's batch
            base_distribution = base_distribution.expand(
                base_shape[:len(base_shape) - base_event_dim])
        if needed > base_event_dim:
            base_distribution = Independent(base_distribution, needed - base_event_dim)
        self.base_dist = base_distribution
        shape = forward
        event_dim = chain.codomain.event_dim + max(base_event_dim - needed, 0)
        cut = len(shape) - event_dim
        super().__init__(shape[:cut], shape[cut:], validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> Distribution:
        new = super().expand(batch_shape, _instance)
        extra = self.base_dist.batch_shape[len(self._batch_shape):]
        new.base_dist = self.base_dist.expand(_shape(batch_shape) + extra)
        return new

    has_rsample = property(lambda self: self.base_dist.has_rsample)

    @property
    def support(self) -> constraints.Constraint:
        if not self.transforms:
            return self.base_dist.support
        codomain = self.transforms[-1].codomain
        extra = len(self._event_shape) - codomain.event_dim
        return constraints.independent(codomain, extra) if extra > 0 else codomain

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with ember.no_grad():
            x = self.base_dist.sample(sample_shape)
            for t in self.transforms:
                x = t(x)
            return x

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        x = self.base_dist.rsample(sample_shape)
        for t in self.transforms:
            x = t(x)
        return x

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        event_dim = len(self._event_shape)
        log_prob: Tensor | float = 0.0
        y = value
        for t in reversed(self.transforms):
            x = t.inv(y)
            event_dim += t.domain.event_dim - t.codomain.event_dim
            log_prob = log_prob - sum_rightmost(t.log_abs_det_jacobian(x, y),
                                                event_dim - t.domain.event_dim)
            y = x
        base = self.base_dist.log_prob(y)
        return log_prob + sum_rightmost(base, event_dim - len(self.base_dist.event_shape))

    def _monotonize_cdf(self, value: Tensor) -> Tensor:
        """For a decreasing overall map, ``P(Y <= y) = 1 - P(X <= x)``."""
        sign: Any = 1
        for t in self.transforms:
            sign = sign * t.sign
        if not isinstance(sign, Tensor):
            return value if sign == 1 else 1 - value
        return ember.where(sign > 0, value, 1 - value)  # (sign (value - 1/2) + 1/2 rounded
        # a cdf of 1e-16 to 1.1e-16, e.g. Weibull's, whose PowerTransform has a tensor sign)

    def cdf(self, value: Tensor) -> Tensor:
        for t in reversed(self.transforms):
            value = t.inv(value)
        if self._validate_args:
            self.base_dist._validate_sample(value)
        return self._monotonize_cdf(self._base_call("cdf", value))

    def icdf(self, value: Tensor) -> Tensor:
        value = self._base_call("icdf", self._monotonize_cdf(value))
        for t in self.transforms:
            value = t(value)
        return value

    def _base_call(self, what: str, value: Tensor) -> Tensor:
        """``base_dist.<what>(value)``, naming this distribution where the base lacks it
        (``InverseGamma.icdf`` said only "Gamma does not implement icdf"). A base that
        overrides the method (its class or the instance itself) is called as is, so its own
        errors keep their type and text."""
        method = getattr(self.base_dist, what)
        if getattr(method, "__func__", None) is getattr(Distribution, what):
            raise NotImplementedError(f"{type(self).__name__} does not implement {what}: its "
                                      f"base distribution {self.base_dist._unsupported(what)}")
        return method(value)

    def __repr__(self) -> str:
        if self.arg_constraints:  # a named family (Gumbel, Pareto, ...): its own parameters
            return super().__repr__()
        return f"{type(self).__name__}({self.base_dist!r}, {self.transforms!r})"


class LogNormal(TransformedDistribution):
    """``exp(X)`` for ``X ~ Normal(loc, scale)``.

    Example:
        >>> ember.distributions.LogNormal(0.0, 1.0).mode
        tensor(0.3679)
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc: Tensor | float, scale: Tensor | float,
                 validate_args: bool | None = None) -> None:
        super().__init__(Normal(loc, scale, validate_args=validate_args), ExpTransform(),
                         validate_args)

    loc = property(lambda self: self.base_dist.loc, doc="Mean of the log.")
    scale = property(lambda self: self.base_dist.scale, doc="Standard deviation of the log.")
    mean = property(lambda self: ember.exp(self.loc + self.scale ** 2 / 2),
                    doc="``exp(loc + scale ** 2 / 2)``.")
    mode = property(lambda self: ember.exp(self.loc - self.scale ** 2),
                    doc="``exp(loc - scale ** 2)``.")

    @property
    def variance(self) -> Tensor:
        """``(exp(scale ** 2) - 1) exp(2 loc + scale ** 2)``."""
        s2 = self.scale ** 2
        return ember.expm1(s2) * ember.exp(2 * self.loc + s2)

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() + self.loc

    def __repr__(self) -> str:
        return repr(self.base_dist).replace("Normal", "LogNormal", 1)
