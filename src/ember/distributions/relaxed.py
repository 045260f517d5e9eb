"""Continuous relaxations of the Bernoulli and one-hot categorical distributions (the
Concrete / Gumbel-softmax distributions), reparameterized at a given ``temperature``."""

from __future__ import annotations

import math
import numbers
from typing import Any

import ember
from ember.distributions import constraints
from ember.distributions.categorical import _CategoricalParams
from ember.distributions.discrete import _BinaryParams
from ember.distributions.distribution import Distribution
from ember.distributions.transformed_distribution import TransformedDistribution
from ember.distributions.transforms import ExpTransform, SigmoidTransform
from ember.distributions.utils import broadcast_all, clamp_probs
from ember.errors import ArgumentError
from ember.tensor import Tensor

__all__ = ["ExpRelaxedCategorical", "LogitRelaxedBernoulli", "RelaxedBernoulli",
           "RelaxedOneHotCategorical"]

F = ember.nn.functional


def _temperature(owner: str, value: Any, like: Tensor) -> Tensor:
    if isinstance(value, numbers.Number):
        return ember.tensor(float(value), dtype=like.dtype)
    if not isinstance(value, Tensor):
        raise TypeError(f"{owner}: temperature must be an ember Tensor or a Python number, "
                        f"got {type(value).__name__}")
    return value


def _batch_shape(owner: str, batch_shape: Any, temperature: Tensor, event: Any = ()) -> Any:
    """The batch shape with a batch of temperatures broadcast in. The temperature is
    right-aligned against ``batch_shape + event`` (as PyTorch's ``rsample`` divides
    ``batch + event``-shaped scores by it), so a categorical family takes a per-row
    temperature of shape ``(..., 1)``; a (2, 1) temperature with (3,) Bernoulli probs has
    batch shape (2, 3), where sampling broke on shapes as torch's does."""
    if temperature.dim() == 0:  # the common case: no broadcast to pay for
        return batch_shape
    full = ember.Size(tuple(batch_shape) + tuple(event))
    try:
        shape = ember.Size(ember.broadcast_shapes(full, temperature.shape))
    except ValueError as exc:
        hint = ("give one temperature or one per batch element" if not event else
                "give one temperature, or one per batch element of shape batch_shape + (1,)")
        raise ArgumentError(f"{owner}: temperature of shape {tuple(temperature.shape)} does "
                            f"not broadcast with the batch shape {tuple(batch_shape)} of the "
                            f"probabilities (event shape {tuple(event)}); hint: {hint}") from exc
    return shape[:len(shape) - len(event)]


def _check_temperature(d: Distribution) -> None:
    """Under ``validate_args``, refuses a temperature that is not positive (its samples and
    log-probabilities are NaN or flipped; PyTorch does not check it)."""
    if d._validate_args:
        d._check_param("temperature", d.temperature, constraints.positive)


class LogitRelaxedBernoulli(_BinaryParams):
    """The logit of a :class:`RelaxedBernoulli` sample: ``(logit(u) + logits) /
    temperature`` for ``u ~ Uniform(0, 1)``. As in PyTorch, ``has_rsample`` is False,
    though ``rsample`` is reparameterized.

    Example:
        >>> d = ember.distributions.LogitRelaxedBernoulli(ember.tensor(0.5), logits=ember.zeros(2))
        >>> d.log_prob(ember.zeros(2))
        tensor([-2.0794, -2.0794])
    """

    support = constraints.real

    def __init__(self, temperature: Tensor | float, probs: Tensor | float | None = None,
                 logits: Tensor | float | None = None, validate_args: bool | None = None) -> None:
        shape, _ = self._set_param(probs, logits)
        self.temperature = _temperature(type(self).__name__, temperature, self._param)
        batch_shape = _batch_shape(type(self).__name__, shape, self.temperature)
        if batch_shape != shape:
            setattr(self, self._given, self._param.expand(batch_shape))
        super().__init__(batch_shape, (), validate_args)
        _check_temperature(self)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        probs = clamp_probs(self.probs.expand(shape))
        u = clamp_probs(ember.rand(shape, dtype=probs.dtype))
        return (ember.log(u) - ember.log1p(-u) + ember.log(probs) - ember.log1p(-probs)) \
            / self.temperature

    def log_prob(self, value: Tensor) -> Tensor:
        logits, value = broadcast_all(self.logits, self._checked(value))
        diff = logits - value * self.temperature
        return ember.log(self.temperature) + diff - 2 * F.softplus(diff)


class RelaxedBernoulli(TransformedDistribution):
    """A relaxed Bernoulli on ``(0, 1)``: ``sigmoid`` of a :class:`LogitRelaxedBernoulli`;
    samples approach ``{0, 1}`` as ``temperature`` goes to zero.

    Example:
        >>> d = ember.distributions.RelaxedBernoulli(ember.tensor(0.1), probs=ember.tensor([0.3]))
        >>> d.rsample((5,)).shape
        ember.Size([5, 1])
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature: Tensor | float, probs: Tensor | float | None = None,
                 logits: Tensor | float | None = None, validate_args: bool | None = None) -> None:
        base = LogitRelaxedBernoulli(temperature, probs, logits, validate_args=False)
        super().__init__(base, SigmoidTransform(), validate_args)
        _check_temperature(self)

    temperature = property(lambda self: self.base_dist.temperature, doc="The temperature.")
    probs = property(lambda self: self.base_dist.probs, doc="The success probability.")
    logits = property(lambda self: self.base_dist.logits, doc="The log-odds of success.")


class ExpRelaxedCategorical(_CategoricalParams):
    """The log of a :class:`RelaxedOneHotCategorical` sample: ``log_softmax((logits + g) /
    temperature)`` with Gumbel noise ``g``; events are vectors of length ``K``.

    Example:
        >>> d = ember.distributions.ExpRelaxedCategorical(ember.tensor(1.0), logits=ember.zeros(3))
        >>> d.rsample().shape
        ember.Size([3])
    """

    support = constraints.real_vector
    has_rsample = True
    _owner: str | None = None  # the name its errors give (that of a RelaxedOneHotCategorical)

    def __init__(self, temperature: Tensor | float, probs: Tensor | None = None,
                 logits: Tensor | None = None, validate_args: bool | None = None) -> None:
        super().__init__(probs, logits, validate_args)
        owner = self._owner or type(self).__name__
        self.temperature = _temperature(owner, temperature, self._categorical.probs)
        batch_shape = _batch_shape(owner, self._batch_shape, self.temperature,
                                   self._event_shape)
        if batch_shape != self._batch_shape:
            self._categorical = self._categorical.expand(batch_shape)
            Distribution.__init__(self, batch_shape, self._event_shape, validate_args)
        _check_temperature(self)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        u = clamp_probs(ember.rand(self._extended_shape(sample_shape), dtype=self.logits.dtype))
        gumbels = -ember.log(-ember.log(u))
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(-1, keepdim=True)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        k = self._event_shape[0]
        t = self.temperature
        owner = self._owner or type(self).__name__
        if t.dim() > 0:
            if t.shape[-1] != 1:
                raise ArgumentError(
                    f"{owner}.log_prob: a temperature of shape {tuple(t.shape)} "
                    f"gives each of the {k} categories its own temperature, which has no "
                    "Concrete density (PyTorch returns a wrongly shaped result or a shape "
                    "error); hint: give "
                    "one temperature per batch element, of shape batch_shape + (1,)")
            t = t[..., 0]
        logits, value = broadcast_all(self.logits, value, owner=owner)
        log_scale = math.lgamma(k) + (k - 1) * ember.log(t)
        score = logits - value * self.temperature
        return (score - score.logsumexp(-1, keepdim=True)).sum(-1) + log_scale


class RelaxedOneHotCategorical(TransformedDistribution):
    """A relaxed one-hot categorical on the simplex (the Gumbel-softmax / Concrete
    distribution): ``exp`` of an :class:`ExpRelaxedCategorical`; samples approach one-hot
    vectors as ``temperature`` goes to zero.

    Example:
        >>> d = ember.distributions.RelaxedOneHotCategorical(ember.tensor(0.5),
        ...                                                  logits=ember.zeros(2, 3))
        >>> d.rsample().shape, d.event_shape
        (ember.Size([2, 3]), ember.Size([3]))
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature: Tensor | float, probs: Tensor | None = None,
                 logits: Tensor | None = None, validate_args: bool | None = None) -> None:
        base = ExpRelaxedCategorical.__new__(ExpRelaxedCategorical)
        base._owner = type(self).__name__  # (its errors name the distribution built)
        base.__init__(temperature, probs, logits, validate_args=False)
        super().__init__(base, ExpTransform(), validate_args)
        _check_temperature(self)

    temperature = property(lambda self: self.base_dist.temperature, doc="The temperature.")
    probs = property(lambda self: self.base_dist.probs, doc="Category probabilities.")
    logits = property(lambda self: self.base_dist.logits, doc="Normalized log-probabilities.")
