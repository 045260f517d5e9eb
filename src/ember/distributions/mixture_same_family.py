"""MixtureSameFamily: a categorical mixture of components from one batched distribution."""

from __future__ import annotations

from typing import Any

import ember
from ember.distributions import constraints
from ember.distributions.categorical import Categorical
from ember.distributions.distribution import Distribution, _shape
from ember.errors import ArgumentError
from ember.tensor import Tensor

__all__ = ["MixtureSameFamily"]


class MixtureSameFamily(Distribution):
    """A mixture whose ``K`` components are the rightmost batch dim of
    ``component_distribution``, weighted by ``mixture_distribution`` (a :class:`Categorical`
    over ``K``); ``batch_shape`` is the components' batch shape without that dim, broadcast
    with the mixture's.

    Example:
        >>> from ember.distributions import Categorical, MixtureSameFamily, Normal
        >>> mix = Categorical(logits=ember.zeros(2))
        >>> d = MixtureSameFamily(mix, Normal(ember.tensor([-1.0, 1.0]), ember.ones(2)))
        >>> d.mean, d.variance
        (tensor(0.), tensor(2.))
    """

    arg_constraints: dict[str, constraints.Constraint] = {}
    has_rsample = False

    def __init__(self, mixture_distribution: Categorical, component_distribution: Distribution,
                 validate_args: bool | None = None) -> None:
        if not isinstance(mixture_distribution, Categorical):
            raise ArgumentError("MixtureSameFamily: mixture_distribution must be a Categorical, "
                                f"got {type(mixture_distribution).__name__}")
        if not isinstance(component_distribution, Distribution):
            raise ArgumentError("MixtureSameFamily: component_distribution must be a Distribution, "
                                f"got {type(component_distribution).__name__}")
        if not component_distribution.batch_shape:
            raise ArgumentError("MixtureSameFamily: component_distribution needs a batch dim for "
                                "the components, got batch_shape ()")
        mixture_batch = mixture_distribution.batch_shape
        component_batch = component_distribution.batch_shape[:-1]
        try:
            batch = ember.broadcast_shapes(mixture_batch, component_batch)
        except Exception as exc:
            raise ArgumentError(f"MixtureSameFamily: mixture_distribution.batch_shape "
                                f"{mixture_batch} is not compatible with "
                                f"component_distribution.batch_shape[:-1] {component_batch}"
                                ) from exc
        k_mix = mixture_distribution.param_shape[-1]
        k_comp = component_distribution.batch_shape[-1]
        if k_mix != k_comp:
            raise ArgumentError(f"MixtureSameFamily: mixture_distribution has {k_mix} components "
                                f"but component_distribution.batch_shape[-1] is {k_comp}")
        if batch != component_batch:  # the mixture's batch widens the components'
            component_distribution = component_distribution.expand(batch + (k_comp,))
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        self._num_component = k_mix
        self._event_ndims = len(component_distribution.event_shape)
        super().__init__(batch, component_distribution.event_shape, validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> Distribution:
        batch_shape = _shape(batch_shape)
        new = super().expand(batch_shape, _instance)
        new._component_distribution = self._component_distribution.expand(
            batch_shape + (self._num_component,))
        new._mixture_distribution = self._mixture_distribution.expand(batch_shape)
        return new

    @constraints.dependent_property
    def support(self) -> constraints.Constraint:
        return constraints.MixtureSameFamilyConstraint(self._component_distribution.support)

    mixture_distribution = property(lambda self: self._mixture_distribution,
                                    doc="The Categorical over the components.")
    component_distribution = property(lambda self: self._component_distribution,
                                      doc="The components, batched along the last batch dim.")

    def _pad(self, x: Tensor) -> Tensor:
        """``x`` with a component dim in front of its event dims."""
        return x.unsqueeze(-1 - self._event_ndims)

    def _pad_mixture_dimensions(self, x: Tensor) -> Tensor:
        """Mixture weights shaped to broadcast (from the right) against the components'
        moments: one trailing unit dim per event dim."""
        return x.reshape(x.shape + (1,) * self._event_ndims)

    @property
    def mean(self) -> Tensor:
        """The weighted mean of the component means."""
        probs = self._pad_mixture_dimensions(self._mixture_distribution.probs)
        return (probs * self._component_distribution.mean).sum(-1 - self._event_ndims)

    @property
    def variance(self) -> Tensor:
        """The law of total variance: mean of the variances plus variance of the means."""
        probs = self._pad_mixture_dimensions(self._mixture_distribution.probs)
        dim = -1 - self._event_ndims
        components = self._component_distribution
        mean_of_variances = (probs * components.variance).sum(dim)
        variance_of_means = (probs * (components.mean - self._pad(self.mean)) ** 2).sum(dim)
        return mean_of_variances + variance_of_means

    def cdf(self, x: Tensor) -> Tensor:
        """The weighted cdfs of the components (the argument named ``x``, as PyTorch's)."""
        cdf = self._component_distribution.cdf(self._pad(x))
        return (cdf * self._mixture_distribution.probs).sum(-1)

    def log_prob(self, x: Tensor) -> Tensor:
        """``logsumexp`` of the components' log densities plus the log weights (the
        argument named ``x``, as PyTorch's)."""
        if self._validate_args:
            self._validate_sample(x)
        log_prob = self._component_distribution.log_prob(self._pad(x))
        log_weights = ember.log_softmax(self._mixture_distribution.logits, -1)
        return ember.logsumexp(log_prob + log_weights, -1)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with ember.no_grad():
            sample_shape = _shape(sample_shape)
            gather_dim = len(sample_shape) + len(self._batch_shape)
            index = self._mixture_distribution.sample(sample_shape)
            components = self._component_distribution.sample(sample_shape)
            missing = len(self._batch_shape) - len(self._mixture_distribution.batch_shape)
            index = index.reshape(sample_shape + (1,) * missing + index.shape[len(sample_shape):]
                                  + (1,) * (self._event_ndims + 1))
            index = index.expand(sample_shape + self._batch_shape + (1,) + self._event_shape)
            return components.gather(gather_dim, index).squeeze(gather_dim)

    def __repr__(self) -> str:
        return (f"MixtureSameFamily(\n  {self._mixture_distribution!r},\n  "
                f"{self._component_distribution!r})")
