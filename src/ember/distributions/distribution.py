"""The :class:`Distribution` base class and the module-wide argument-validation switch."""

from __future__ import annotations

import operator
import warnings
from typing import Any

import ember
from ember.distributions import constraints
from ember.distributions.utils import broadcast_all, lazy_property
from ember.errors import ArgumentError, ArgumentTypeError, EmberError
from ember.size import Size
from ember.tensor import Tensor

__all__ = ["Distribution", "set_default_validate_args"]

Shape = Size


def _all_true(ok: Tensor) -> bool:
    """Whether every entry of the check ``ok`` is True. While a transform hides the values
    (``ember.jit.compile`` tracing, ``ember.func.vmap``) the check cannot be read, and passes:
    validation is an eager-mode aid, as in PyTorch, where ``torch.compile`` runs it outside
    the graph."""
    ok = ok.all()
    try:
        return bool(ok)
    except EmberError:
        return True


def _shape(sample_shape: Any) -> Size:
    """A sample or batch shape (a sequence of ints, or one int) as a Size; anything else is an
    ArgumentTypeError (``int()`` took ``(2.5,)`` as ``(2,)`` and ``'a'`` as a bad literal)."""
    if isinstance(sample_shape, int):
        return Size((sample_shape,))
    try:
        return Size(operator.index(s) for s in sample_shape)
    except TypeError:
        raise ArgumentTypeError(f"distributions: a shape must be a tuple of ints (or an int), "
                                f"got {sample_shape!r}; hint: pass e.g. (4,) for 4 "
                                "samples") from None


class Distribution:
    """A probability distribution over tensors of shape ``batch_shape + event_shape``.

    Subclasses set ``arg_constraints`` (parameter name -> constraint), ``support``,
    ``has_rsample`` and implement what they can of ``rsample``/``sample``, ``log_prob``,
    ``entropy``, ``cdf``, ``icdf``, ``mean``, ``mode`` and ``variance``.
    ``_param_event_dims`` (parameter name -> its own event rank) lets :meth:`expand` work
    without per-class code.

    Example:
        >>> d = ember.distributions.Normal(ember.zeros(2), 1.0)
        >>> d.sample((5,)).shape, d.batch_shape, d.event_shape
        (ember.Size([5, 2]), ember.Size([2]), ember.Size([]))
    """

    has_rsample = False
    has_enumerate_support = False
    _validate_args = True
    arg_constraints: dict[str, constraints.Constraint] = {}
    _param_event_dims: dict[str, int] = {}

    def __init__(self, batch_shape: Any = (), event_shape: Any = (),
                 validate_args: bool | None = None) -> None:
        self._batch_shape = _shape(batch_shape)
        self._event_shape = _shape(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            self._check_args()

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turns argument and sample validation on (the default, as in PyTorch) or off for
        every distribution made afterwards without an explicit ``validate_args``.

        Example:
            >>> ember.distributions.Distribution.set_default_validate_args(False)
            >>> ember.distributions.set_default_validate_args(True)  # the same switch
        """
        if value not in (True, False):
            raise ArgumentError("set_default_validate_args: expected True or False, got "
                                f"{value!r}")
        Distribution._validate_args = value

    def _check_args(self) -> None:
        for name, constraint in self.arg_constraints.items():
            if constraints.is_dependent(constraint):
                continue
            if name not in self.__dict__ and isinstance(getattr(type(self), name, None),
                                                        lazy_property):
                continue  # computed from another parameter, which is checked
            self._check_param(name, getattr(self, name), constraint)

    def _check_param(self, name: str, value: Tensor, constraint: constraints.Constraint) -> None:
        """Raises the validation error for a parameter outside its constraint."""
        if not _all_true(constraint.check(value)):
            raise ArgumentError(
                f"{type(self).__name__}: expected parameter {name} (Tensor of shape "
                f"{tuple(value.shape)}) to satisfy the constraint {constraint!r}, but found "
                f"invalid values:\n{value}\nhint: pass validate_args=False to skip this "
                "check")

    @property
    def batch_shape(self) -> Shape:
        """The shape over which parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self) -> Shape:
        """The shape of a single sample (without batching)."""
        return self._event_shape

    @property
    def support(self) -> constraints.Constraint:
        """The constraint that samples satisfy."""
        raise NotImplementedError(f"{type(self).__name__} does not define support")

    def _unsupported(self, what: str) -> NotImplementedError:
        return NotImplementedError(f"{type(self).__name__} does not implement {what}")

    @property
    def mean(self) -> Tensor:
        """The mean of the distribution."""
        raise self._unsupported("mean")

    @property
    def mode(self) -> Tensor:
        """The mode of the distribution."""
        raise self._unsupported("mode")

    @property
    def variance(self) -> Tensor:
        """The variance of the distribution."""
        raise self._unsupported("variance")

    @property
    def stddev(self) -> Tensor:
        """The standard deviation of the distribution."""
        return self.variance.sqrt()

    def entropy(self) -> Tensor:
        """The entropy, one value per batch element."""
        raise self._unsupported("entropy")

    def perplexity(self) -> Tensor:
        """``exp(entropy)``."""
        return ember.exp(self.entropy())

    def log_prob(self, value: Tensor) -> Tensor:
        """The log of the density (or mass) at ``value``."""
        raise self._unsupported("log_prob")

    def cdf(self, value: Tensor) -> Tensor:
        """The cumulative distribution function at ``value``."""
        raise self._unsupported("cdf")

    def icdf(self, value: Tensor) -> Tensor:
        """The inverse of :meth:`cdf`."""
        raise self._unsupported("icdf")

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """All values of a discrete distribution along a new leading dim."""
        raise self._unsupported("enumerate_support")

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        """A reparameterized sample: gradients flow back to the parameters."""
        raise NotImplementedError(
            f"{type(self).__name__} has no reparameterized sampler (has_rsample is False); "
            "hint: use sample() with a score-function (REINFORCE) estimator")

    def sample(self, sample_shape: Any = ()) -> Tensor:
        """A sample of shape ``sample_shape + batch_shape + event_shape``, without gradients."""
        with ember.no_grad():
            return self.rsample(sample_shape)

    def sample_n(self, n: int) -> Tensor:
        """``sample((n,))``, with PyTorch's FutureWarning that this old spelling goes away.

        Example:
            >>> ember.distributions.Normal(0.0, 1.0).sample_n(3).shape
            ember.Size([3])
        """
        warnings.warn("`sample_n(n)` will be deprecated. Use `sample((n,))` instead.",
                      FutureWarning, stacklevel=2)
        return self.sample((n,))

    def _extended_shape(self, sample_shape: Any = ()) -> Shape:
        return _shape(sample_shape) + self._batch_shape + self._event_shape

    def expand(self, batch_shape: Any, _instance: Distribution | None = None) -> Distribution:
        """The same distribution with parameters broadcast to ``batch_shape`` (no copy).

        Example:
            >>> ember.distributions.Normal(0.0, 1.0).expand((3,)).batch_shape
            ember.Size([3])
        """
        batch_shape = _shape(batch_shape)
        try:
            ok = ember.broadcast_shapes(self._batch_shape, batch_shape) == batch_shape
        except ValueError:
            ok = False
        if not ok:
            raise ArgumentError(f"{type(self).__name__}.expand: cannot expand batch_shape "
                                f"{self._batch_shape} to {batch_shape}; hint: only size-1 dims "
                                "and new leading dims can be expanded")
        new = self._get_checked_instance(type(self), _instance)
        new.__dict__.update(self.__dict__)
        for name in self.__dict__:
            if (name not in self._param_event_dims
                    and isinstance(getattr(type(self), name, None), lazy_property)):
                del new.__dict__[name]  # a cached value of the old batch shape: recomputed
        for name, event_dim in self._param_event_dims.items():
            if name in self.__dict__:
                value = self.__dict__[name]
                event = value.shape[value.dim() - event_dim:]
                new.__dict__[name] = value.expand(batch_shape + event)
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _get_checked_instance(self, cls: type, _instance: Distribution | None = None
                              ) -> Distribution:
        """``_instance``, else a bare (uninitialised) instance of ``type(self)``: the first
        step of a subclass's ``expand``, as PyTorch's. ``cls`` is the class whose ``expand``
        asks; a subclass of it with its own ``__init__`` must define its own ``expand``.

        Example:
            >>> d = ember.distributions.Normal(0.0, 1.0)
            >>> type(d._get_checked_instance(ember.distributions.Normal)).__name__
            'Normal'
        """
        if _instance is None and type(self).__init__ is not cls.__init__:
            raise NotImplementedError(
                f"Subclass {type(self).__name__} of {cls.__name__} that defines a custom "
                "__init__ method must also define a custom .expand() method.")
        return type(self).__new__(type(self)) if _instance is None else _instance

    def _validate_sample(self, value: Any) -> None:
        name = type(self).__name__
        if not isinstance(value, Tensor):
            raise ArgumentError(f"{name}: the value argument must be an ember Tensor, got "
                                f"{type(value).__name__}")
        shape, event = tuple(value.shape), tuple(self._event_shape)  # (tuples: Sizes cost)
        if len(shape) < len(event) or shape[len(shape) - len(event):] != event:
            raise ArgumentError(f"{name}: the rightmost sizes of value {shape} must match "
                                f"event_shape {self._event_shape}")
        expected = (*self._batch_shape, *event)
        for i, j in zip(shape[::-1], expected[::-1]):
            if i != 1 and j != 1 and i != j:
                raise ArgumentError(f"{name}: value of shape {shape} does not broadcast with "
                                    f"batch_shape + event_shape {Size(expected)}")
        if not _all_true(self.support.check(value)):
            raise ArgumentError(f"{name}: expected value (Tensor of shape {tuple(value.shape)}) to "
                                f"be within the support {self.support!r}, but found invalid "
                                f"values:\n{value}\nhint: pass validate_args=False to skip this "
                                "check")

    def __repr__(self) -> str:
        parts = []
        for name in self.arg_constraints:
            if name in self.__dict__:
                value = self.__dict__[name]
                # (as PyTorch's: a one-element parameter formatted, else its size)
                parts.append(f"{name}: {value if value.numel() == 1 else value.shape}")
        return f"{type(self).__name__}({', '.join(parts)})"


class _Elementwise(Distribution):
    """A distribution with scalar events whose parameters broadcast to the batch shape."""

    def __init__(self, names: tuple[str, ...], values: tuple[Any, ...],
                 validate_args: bool | None) -> None:
        tensors = broadcast_all(*values, owner=type(self).__name__)
        for name, value in zip(names, tensors):
            setattr(self, name, value)
        super().__init__(tensors[0].shape, (), validate_args)

    def _checked(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return value

    def _uniform(self, sample_shape: Any, dtype: Any) -> Tensor:
        return ember.rand(self._extended_shape(sample_shape), dtype=dtype)


set_default_validate_args = Distribution.set_default_validate_args
