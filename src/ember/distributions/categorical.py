"""Distributions over ``K`` categories: Categorical (an index) and OneHotCategorical (a
one-hot vector)."""

from __future__ import annotations

import math
from typing import Any

import ember
from ember.distributions import constraints
from ember.distributions.discrete import _one_of
from ember.distributions.distribution import Distribution
from ember.distributions.utils import lazy_property, logits_to_probs, probs_to_logits, shape_shown
from ember.errors import ArgumentError
from ember.tensor import Tensor

__all__ = ["Categorical", "OneHotCategorical", "OneHotCategoricalStraightThrough"]


class Categorical(Distribution):
    """A distribution over ``{0, ..., K-1}`` given by ``probs`` (normalized over the last dim)
    or ``logits`` (unnormalized log-probabilities) of shape ``batch_shape + (K,)``.

    Example:
        >>> d = ember.distributions.Categorical(logits=ember.zeros(4))
        >>> d.log_prob(ember.tensor(2)).exp()
        tensor(0.2500)
    """

    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}
    _param_event_dims = {"probs": 1, "logits": 1}
    has_enumerate_support = True

    def __init__(self, probs: Tensor | None = None, logits: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        name, value = _one_of(type(self).__name__, probs, logits)
        if not isinstance(value, Tensor) or value.dim() < 1:
            raise ArgumentError(f"{type(self).__name__}: {name} must be a tensor with at least one "
                                f"dim (the categories), got {shape_shown(value)!r}")
        if name == "probs":
            self.probs = value / value.sum(-1, keepdim=True)
        else:
            self.logits = value - value.logsumexp(-1, keepdim=True)
        self._num_events = value.shape[-1]
        super().__init__(value.shape[:-1], (), validate_args)

    @lazy_property
    def probs(self) -> Tensor:
        """Probabilities of the categories (last dim)."""
        return logits_to_probs(self.logits)

    @lazy_property
    def logits(self) -> Tensor:
        """Normalized log-probabilities of the categories (last dim)."""
        return probs_to_logits(self.probs)

    @property
    def param_shape(self) -> tuple[int, ...]:
        return self.__dict__.get("probs", self.__dict__.get("logits")).shape

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def mean(self) -> Tensor:
        """Undefined for categories: NaN, as in PyTorch."""
        return ember.full(self._batch_shape, float("nan"), dtype=self.probs.dtype)

    @property
    def variance(self) -> Tensor:
        """Undefined for categories: NaN, as in PyTorch."""
        return self.mean

    @property
    def mode(self) -> Tensor:
        """The most likely category."""
        return self.probs.argmax(-1)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with ember.no_grad():
            shape = tuple(sample_shape) if not isinstance(sample_shape, int) else (sample_shape,)
            n = math.prod(shape)
            rows = self.probs.reshape(-1, self._num_events)
            if rows.shape[0] and n:
                drawn = ember.multinomial(rows, n, True)
            else:  # nothing to draw (an empty batch or sample shape)
                drawn = ember.zeros((rows.shape[0], n), dtype=ember.int64)
            return drawn.transpose(0, 1).reshape(self._extended_shape(shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = ember.broadcast_tensors(value, self.logits)
        return log_pmf.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self) -> Tensor:
        logits = self.logits.clamp(min=ember.finfo(self.logits.dtype).min)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = ember.arange(self._num_events).reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + self._batch_shape) if expand else values


class _CategoricalParams(Distribution):
    """Base of the families parameterized like :class:`Categorical` (``probs`` or ``logits``
    of shape ``batch_shape + (K,)``, events of shape ``(K,)``): an inner ``Categorical`` holds
    the parameters and is expanded with the distribution."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, probs: Tensor | None = None, logits: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        self._categorical = Categorical(probs, logits, validate_args=False)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args)

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> Distribution:
        new = super().expand(batch_shape, _instance)
        new._categorical = self._categorical.expand(new.batch_shape)
        return new

    probs = property(lambda self: self._categorical.probs, doc="Category probabilities.")
    logits = property(lambda self: self._categorical.logits, doc="Normalized log-probabilities.")
    param_shape = property(lambda self: self._categorical.param_shape)


class OneHotCategorical(_CategoricalParams):
    """Like :class:`Categorical`, but samples are one-hot vectors of length ``K``.

    Example:
        >>> d = ember.distributions.OneHotCategorical(probs=ember.tensor([0.0, 1.0]))
        >>> d.sample()
        tensor([0., 1.])
    """

    support = constraints.one_hot
    has_enumerate_support = True

    mean = property(lambda self: self.probs, doc="``probs``.")
    variance = property(lambda self: self.probs * (1 - self.probs), doc="``p (1 - p)``.")

    @property
    def mode(self) -> Tensor:
        """The one-hot vector of the most likely category."""
        return ember.nn.functional.one_hot(self.probs.argmax(-1), self._event_shape[0]).to(
            self.probs.dtype)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        index = self._categorical.sample(sample_shape)
        return ember.nn.functional.one_hot(index, self._event_shape[0]).to(self.probs.dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(value.max(-1)[1])  # (argmax refuses bools)

    def entropy(self) -> Tensor:
        return self._categorical.entropy()

    def enumerate_support(self, expand: bool = True) -> Tensor:
        n = self._event_shape[0]
        values = ember.eye(n, dtype=self.probs.dtype).reshape(
            (n,) + (1,) * len(self._batch_shape) + (n,))
        return values.expand((n,) + self._batch_shape + (n,)) if expand else values

    def __repr__(self) -> str:
        return repr(self._categorical).replace("Categorical", type(self).__name__, 1)


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """:class:`OneHotCategorical` whose ``rsample`` is the one-hot sample in the forward pass
    with the gradient of ``probs`` in the backward pass (the straight-through estimator).

    Example:
        >>> logits = ember.zeros(3, requires_grad=True)
        >>> d = ember.distributions.OneHotCategoricalStraightThrough(logits=logits)
        >>> d.rsample().requires_grad
        True
    """

    has_rsample = True

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        probs = self.probs
        return self.sample(sample_shape) + (probs - probs.detach())
