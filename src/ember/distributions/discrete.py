"""Counting distributions: Bernoulli, Geometric, Binomial and Poisson."""

from __future__ import annotations

from typing import Any

import ember
from ember.distributions import constraints
from ember.distributions.distribution import Distribution, _all_true, _Elementwise
from ember.distributions.exp_family import ExponentialFamily
from ember.distributions.utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits
from ember.errors import ArgumentError
from ember.tensor import Tensor

__all__ = ["Bernoulli", "Binomial", "Geometric", "Poisson"]

F = ember.nn.functional


def _one_of(owner: str, probs: Any, logits: Any) -> tuple[str, Any]:
    if (probs is None) == (logits is None):
        raise ArgumentError(f"{owner}: give exactly one of probs or logits (got "
                            f"{'both' if probs is not None else 'neither'})")
    return ("probs", probs) if probs is not None else ("logits", logits)


def _held_at_edges(p: Tensor) -> tuple[Tensor, Tensor]:
    """``p`` for the log p and log(1 - p) of a binary entropy, held constant at exact 0 and 1
    (``a`` at eps and 1, ``b`` at 0 and 1 - eps): same values, and the slope there is torch's
    ``-logit(eps)`` of its clamped probabilities, not 0 * inf = NaN (the exact one is inf)."""
    eps = ember.finfo(p.dtype).eps
    zero, one = p == 0, p == 1
    return (ember.where(zero, eps, ember.where(one, 1.0, p)),
            ember.where(one, 1.0 - eps, ember.where(zero, 0.0, p)))


class _BinaryParams(Distribution):
    """Parameterized by a success probability given as ``probs`` or ``logits``; the other is
    computed when first used."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    _param_event_dims = {"probs": 0, "logits": 0}

    def _set_param(self, probs: Any, logits: Any, *others: Any) -> tuple[Tensor, ...]:
        name, value = _one_of(type(self).__name__, probs, logits)
        tensors = broadcast_all(*others, value, owner=type(self).__name__)
        setattr(self, name, tensors[-1])
        self._given = name
        return tensors[-1].shape, tensors[:-1]

    def _bernoulli_entropy(self) -> Tensor:
        """``-p log p - (1-p) log(1-p)`` in the parameter's dtype, with no cancellation: from
        ``probs`` as written (``log1p``), from ``logits`` as ``softplus(-|x|) +
        |x| sigmoid(-|x|)`` (it is even in ``x``). Through the cross-entropy with the
        clamped logits, a float32 entropy of ``probs=1e-9`` came out 0."""
        if self._given == "logits":
            a = -self.logits.abs()
            return F.softplus(a) - a * ember.sigmoid(a)
        p = self.probs
        a, b = _held_at_edges(p)
        return -ember.special.xlogy(p, a) - ember.special.xlog1py(1 - p, -b)

    @lazy_property
    def probs(self) -> Tensor:
        """The success probability."""
        return logits_to_probs(self.logits, is_binary=True)

    @lazy_property
    def logits(self) -> Tensor:
        """The log-odds of success."""
        return probs_to_logits(self.probs, is_binary=True)

    @property
    def _param(self) -> Tensor:
        """The parameter given at construction: ``probs`` or ``logits``."""
        return self.__dict__.get("probs", self.__dict__.get("logits"))

    @property
    def param_shape(self) -> tuple[int, ...]:
        return self._param.shape

    def _checked(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return value


class Bernoulli(_BinaryParams, ExponentialFamily):
    """The Bernoulli distribution: 1 with probability ``probs`` (or ``sigmoid(logits)``).

    Example:
        >>> d = ember.distributions.Bernoulli(logits=ember.tensor([0.0]))
        >>> d.log_prob(ember.tensor([1.0]))
        tensor([-0.6931])
    """

    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs: Tensor | float | None = None, logits: Tensor | float | None = None,
                 validate_args: bool | None = None) -> None:
        shape, _ = self._set_param(probs, logits)
        super().__init__(shape, (), validate_args)

    mean = property(lambda self: self.probs, doc="``probs``.")
    variance = property(lambda self: self.probs * (1 - self.probs), doc="``p (1 - p)``.")

    @property
    def mode(self) -> Tensor:
        """1 where ``probs > 0.5``, 0 below, NaN at exactly 0.5 (as PyTorch)."""
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return ember.where(self.probs == 0.5, ember.full_like(mode, float("nan")), mode)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with ember.no_grad():
            return ember.bernoulli(self.probs.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        logits, value = broadcast_all(self.logits, self._checked(value))
        # (one primitive, whose gradient v sigmoid(-l) - (1 - v) sigmoid(l) keeps every digit
        # of a tiny p or 1 - p)
        return -F.binary_cross_entropy_with_logits(logits, value, reduction="none")

    _mean_carrier_measure = 0

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (self.logits,)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return ember.nn.functional.softplus(x)

    def entropy(self) -> Tensor:
        return self._bernoulli_entropy()

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = ember.arange(2, dtype=self.probs.dtype)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + self._batch_shape) if expand else values


class Geometric(_BinaryParams):
    """The number of failures before the first success in Bernoulli(``probs``) trials.

    Example:
        >>> ember.distributions.Geometric(ember.tensor(0.25)).mean
        tensor(3.)
    """

    support = constraints.nonnegative_integer

    def __init__(self, probs: Tensor | float | None = None, logits: Tensor | float | None = None,
                 validate_args: bool | None = None) -> None:
        shape, _ = self._set_param(probs, logits)
        super().__init__(shape, (), validate_args)

    def _check_args(self) -> None:
        super()._check_args()
        probs = self.__dict__.get("probs")
        if probs is not None and not _all_true(probs > 0):
            raise ArgumentError(f"Geometric: expected parameter probs (Tensor of shape "
                                f"{tuple(probs.shape)}) to be positive (no success ever comes at "
                                f"probs=0), but found invalid values:\n{probs}\nhint: pass "
                                "validate_args=False to skip this check")

    mean = property(lambda self: 1.0 / self.probs - 1.0, doc="``1 / p - 1``.")
    mode = property(lambda self: ember.zeros_like(self.probs), doc="Zero.")
    variance = property(lambda self: (1.0 / self.probs - 1.0) / self.probs,
                        doc="``(1 / p - 1) / p``.")

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with ember.no_grad():
            p = self.probs
            u = ember.rand(self._extended_shape(sample_shape), dtype=p.dtype)
            u = u.clamp(min=ember.finfo(p.dtype).tiny)
            return (ember.log(u) / ember.log1p(-p)).floor()

    def log_prob(self, value: Tensor) -> Tensor:
        value, probs = broadcast_all(self._checked(value), self.probs)
        # p = 1 puts all mass on 0; 0 * log(0) there is 0, not NaN
        certain = (probs == 1) & (value == 0)
        safe = ember.where(certain, ember.zeros_like(probs), probs)
        return value * ember.log1p(-safe) + ember.log(probs)

    def entropy(self) -> Tensor:
        if self._given == "logits":  # with t = e^-|x| and s = log1p(t), no underflowing p:
            x = self.logits  # -x + s + s / t for x <= 0, s (1 + t) + x t above
            t = ember.exp(ember.where(x <= 0, x, -x))  # (-|x|, with x's slope at 0)
            s = ember.log1p(t)
            big = t > ember.finfo(x.dtype).eps  # (below, s / t is 1 - t/2 and its slope 0/0)
            ratio = ember.where(big, s / ember.where(big, t, 1.0), 1.0 - 0.5 * t)
            return ember.where(x <= 0, s + ratio - x, s * (1.0 + t) + x * t)
        p = self.probs  # -log p - (1-p) log(1-p) / p, 1 - log p for tiny p
        a, b = _held_at_edges(p)
        return -ember.log(a) - ember.special.xlog1py(1 - p, -b) / p


class Binomial(_BinaryParams):
    """The number of successes in ``total_count`` Bernoulli(``probs``) trials.

    Example:
        >>> ember.distributions.Binomial(10, probs=ember.tensor(0.3)).mean
        tensor(3.)
    """

    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.unit_interval, "logits": constraints.real}
    _param_event_dims = {"total_count": 0, "probs": 0, "logits": 0}
    has_enumerate_support = True

    def __init__(self, total_count: Tensor | int = 1, probs: Tensor | float | None = None,
                 logits: Tensor | float | None = None, validate_args: bool | None = None) -> None:
        shape, (count,) = self._set_param(probs, logits, total_count)
        self.total_count = count.to(self._param.dtype)
        super().__init__(shape, (), validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self.total_count)

    mean = property(lambda self: self.total_count * self.probs, doc="``n p``.")
    variance = property(lambda self: self.total_count * self.probs * (1 - self.probs),
                        doc="``n p (1 - p)``.")

    @property
    def mode(self) -> Tensor:
        """``floor((n + 1) p)``, at most ``n``."""
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            return ember.binomial(self.total_count.expand(shape), self.probs.expand(shape))

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        n, logits = self.total_count, self.logits
        log_binom = (ember.lgamma(n + 1) - ember.lgamma(value + 1)
                     - ember.lgamma(n - value + 1))
        # v log p + (n - v) log(1 - p) as n times -BCE(l, v / n): no cancellation near p = 0
        # or 1 (v l - n log(1 + e^l) lost 8e-7 relative at p = 1 - 1e-9, as PyTorch's does),
        # and the limit at l = +-inf (n = 0 takes v / 1 = 0)
        logits, share = broadcast_all(logits, value / n.clamp(min=1))
        return log_binom - n * F.binary_cross_entropy_with_logits(logits, share, reduction="none")

    def entropy(self) -> Tensor:
        n = self.total_count
        if n.numel() and float(n.max()) != float(n.min()):
            raise NotImplementedError("Binomial.entropy: needs one total_count for the whole "
                                      f"batch, got values from {float(n.min())} to "
                                      f"{float(n.max())}")
        log_p = self.log_prob(self.enumerate_support(False))
        return -(ember.exp(log_p) * log_p).sum(0)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        n = self.total_count
        top = int(n.max()) if n.numel() else 0
        if n.numel() and float(n.min()) != top:
            raise NotImplementedError("Binomial.enumerate_support: needs one total_count for "
                                      "the whole batch")
        values = ember.arange(1 + top, dtype=n.dtype).reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + self._batch_shape) if expand else values


class Poisson(_Elementwise, ExponentialFamily):
    """The Poisson distribution with mean ``rate``.

    Example:
        >>> ember.distributions.Poisson(ember.tensor([4.0])).log_prob(ember.tensor([2.0]))
        tensor([-1.9206])
    """

    arg_constraints = {"rate": constraints.nonnegative}
    _param_event_dims = {"rate": 0}
    support = constraints.nonnegative_integer

    def __init__(self, rate: Tensor | float, validate_args: bool | None = None) -> None:
        super().__init__(("rate",), (rate,), validate_args)

    mean = property(lambda self: self.rate, doc="``rate``.")
    mode = property(lambda self: self.rate.floor(), doc="``floor(rate)``.")
    variance = property(lambda self: self.rate, doc="``rate``.")

    def sample(self, sample_shape: Any = ()) -> Tensor:
        with ember.no_grad():
            return ember.poisson(self.rate.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        rate, value = broadcast_all(self.rate, self._checked(value))
        return ember.xlogy(value, rate) - rate - ember.lgamma(value + 1)

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (ember.log(self.rate),)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return ember.exp(x)
