"""Constraints: the sets a distribution's parameters and samples live in.

A constraint's ``check(value)`` returns a boolean tensor over the batch dims (its last
``event_dim`` dims are reduced), as ``torch.distributions.constraints`` does.

Example:
    >>> from ember.distributions import constraints
    >>> constraints.positive.check(ember.tensor([1.0, -1.0]))
    tensor([ True, False])
"""

from __future__ import annotations

from typing import Any

import ember
from ember.errors import ArgumentError
from ember.tensor import Tensor

__all__ = ["Constraint", "MixtureSameFamilyConstraint", "boolean", "cat", "corr_cholesky",
           "dependent", "dependent_property", "greater_than", "greater_than_eq",
           "half_open_interval", "independent", "integer_interval", "interval", "is_dependent",
           "less_than", "lower_cholesky", "lower_triangular", "multinomial", "nonnegative",
           "nonnegative_integer", "one_hot", "positive", "positive_definite",
           "positive_integer", "positive_semidefinite", "real", "real_vector", "simplex",
           "square", "stack", "symmetric", "unit_interval"]


class Constraint:
    """A region of valid values; ``check`` says, per batch element, whether a value is in it."""

    is_discrete = False
    event_dim = 0

    def check(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def __repr__(self) -> str:
        return type(self).__name__.lstrip("_") + "()"


class _Dependent(Constraint):
    """A placeholder whose region depends on other parameters; it cannot be checked, and
    its ``is_discrete`` and ``event_dim`` raise unless given, as in PyTorch.

    Example:
        >>> ember.distributions.constraints.dependent(is_discrete=True, event_dim=1).event_dim
        1
    """

    def __init__(self, *, is_discrete: Any = NotImplemented,
                 event_dim: Any = NotImplemented) -> None:
        self._is_discrete = is_discrete
        self._event_dim = event_dim

    def _given(self, name: str) -> Any:
        value = getattr(self, "_" + name)
        if value is NotImplemented:
            raise NotImplementedError(f"constraints.dependent: .{name} cannot be determined "
                                      f"statically; pass {name}= when making it")
        return value

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return self._given("is_discrete")

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return self._given("event_dim")

    def __call__(self, *, is_discrete: Any = NotImplemented,
                 event_dim: Any = NotImplemented) -> _Dependent:
        """A copy with ``is_discrete`` and ``event_dim`` set; the unset ones are kept."""
        return _Dependent(is_discrete=self._is_discrete if is_discrete is NotImplemented
                          else is_discrete,
                          event_dim=self._event_dim if event_dim is NotImplemented
                          else event_dim)

    def check(self, value: Tensor) -> Tensor:
        raise ArgumentError("constraints.dependent: cannot determine validity of a dependent "
                            "constraint; check the parameters it depends on instead")


def is_dependent(constraint: Any) -> bool:
    """Whether ``constraint`` is a :data:`dependent` placeholder."""
    return isinstance(constraint, _Dependent)


class dependent_property(property, _Dependent):  # noqa: N801 - torch's name
    """A property that is also a dependent constraint (e.g. ``Uniform.support``)."""

    def __init__(self, fn: Any = None, *, is_discrete: Any = NotImplemented,
                 event_dim: Any = NotImplemented) -> None:
        super().__init__(fn)
        self._is_discrete = is_discrete
        self._event_dim = event_dim

    def __call__(self, fn: Any) -> dependent_property:  # type: ignore[override]
        return dependent_property(fn, is_discrete=self._is_discrete, event_dim=self._event_dim)


class _IndependentConstraint(Constraint):
    """``base_constraint`` with its rightmost ``reinterpreted_batch_ndims`` dims treated as
    one event."""

    def __init__(self, base_constraint: Constraint, reinterpreted_batch_ndims: int) -> None:
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        self.is_discrete = base_constraint.is_discrete
        self.event_dim = base_constraint.event_dim + reinterpreted_batch_ndims

    def check(self, value: Tensor) -> Tensor:
        ok = self.base_constraint.check(value)
        n = self.reinterpreted_batch_ndims
        if ok.dim() < n:
            raise ArgumentError(f"constraints.independent: expected value with at least {n} dims, "
                                f"got shape {tuple(value.shape)}")
        return ok.flatten(ok.dim() - n).all(-1) if n else ok

    def __repr__(self) -> str:
        return f"IndependentConstraint({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value: Tensor) -> Tensor:
        return (value == 0) | (value == 1)


class _OneHot(Constraint):
    is_discrete = True
    event_dim = 1

    def check(self, value: Tensor) -> Tensor:
        return ((value == 0) | (value == 1)).all(-1) & (value.sum(-1) == 1)


class _IntegerInterval(Constraint):
    is_discrete = True

    def __init__(self, lower_bound: Any, upper_bound: Any) -> None:
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value: Tensor) -> Tensor:
        return (value % 1 == 0) & (value >= self.lower_bound) & (value <= self.upper_bound)

    def __repr__(self) -> str:
        return f"IntegerInterval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _IntegerGreaterThan(Constraint):
    is_discrete = True

    def __init__(self, lower_bound: int) -> None:
        self.lower_bound = lower_bound

    def check(self, value: Tensor) -> Tensor:
        return (value % 1 == 0) & (value >= self.lower_bound)

    def __repr__(self) -> str:
        return f"IntegerGreaterThan(lower_bound={self.lower_bound})"


class _Real(Constraint):
    def check(self, value: Tensor) -> Tensor:
        return value == value  # noqa: PLR0124 - False exactly at NaN


class _GreaterThan(Constraint):
    """The open half-line ``(lower_bound, inf)``: ``constraints.greater_than(0.0)``."""

    def __init__(self, lower_bound: Any) -> None:
        self.lower_bound = lower_bound

    def check(self, value: Tensor) -> Tensor:
        return value > self.lower_bound

    def __repr__(self) -> str:
        return f"GreaterThan(lower_bound={self.lower_bound})"


class _GreaterThanEq(Constraint):
    """The closed half-line ``[lower_bound, inf)``: ``constraints.greater_than_eq(0.0)``.
    (Not a ``greater_than``, as in PyTorch: ``isinstance`` tells the two apart.)"""

    def __init__(self, lower_bound: Any) -> None:
        self.lower_bound = lower_bound

    def check(self, value: Tensor) -> Tensor:
        return value >= self.lower_bound

    def __repr__(self) -> str:
        return f"GreaterThanEq(lower_bound={self.lower_bound})"


class _LessThan(Constraint):
    """The open half-line ``(-inf, upper_bound)``: ``constraints.less_than(0.0)``."""

    def __init__(self, upper_bound: Any) -> None:
        self.upper_bound = upper_bound

    def check(self, value: Tensor) -> Tensor:
        return value < self.upper_bound

    def __repr__(self) -> str:
        return f"LessThan(upper_bound={self.upper_bound})"


class _Interval(Constraint):
    """The closed interval ``[lower_bound, upper_bound]``: ``constraints.interval(0.0, 1.0)``."""

    def __init__(self, lower_bound: Any, upper_bound: Any) -> None:
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value: Tensor) -> Tensor:
        return (value >= self.lower_bound) & (value <= self.upper_bound)

    def __repr__(self) -> str:
        return f"Interval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _HalfOpenInterval(Constraint):
    """The interval ``[lower_bound, upper_bound)``: ``constraints.half_open_interval(0., 1.)``.
    (Not an ``interval``, as in PyTorch.)"""

    def __init__(self, lower_bound: Any, upper_bound: Any) -> None:
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value: Tensor) -> Tensor:
        return (value >= self.lower_bound) & (value < self.upper_bound)

    def __repr__(self) -> str:
        return (f"HalfOpenInterval(lower_bound={self.lower_bound}, "
                f"upper_bound={self.upper_bound})")


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value: Tensor) -> Tensor:
        return (value >= 0).all(-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _LowerTriangular(Constraint):
    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        return (value.tril() == value).flatten(-2).all(-1)


class _LowerCholesky(_LowerTriangular):
    def check(self, value: Tensor) -> Tensor:
        return super().check(value) & (value.diagonal(0, -2, -1) > 0).all(-1)


class _Square(Constraint):
    """Square matrices (a shape check: one value per batch element)."""

    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        if value.dim() < 2:
            raise ArgumentError(f"{self!r}.check: expected a batch of matrices, got shape "
                                f"{tuple(value.shape)}")
        return ember.full(tuple(value.shape[:-2]), value.shape[-2] == value.shape[-1],
                          dtype=ember.bool)


class _Symmetric(_Square):
    """Square matrices equal to their transpose, within PyTorch's ``isclose(atol=1e-6)``."""

    def check(self, value: Tensor) -> Tensor:
        square = super().check(value)
        if value.shape[-2] != value.shape[-1]:
            return square
        close = ember.isclose(value, value.transpose(-2, -1), atol=1e-6)
        return close.flatten(-2).all(-1)


class _PositiveDefinite(_Symmetric):
    """Symmetric matrices with eigenvalues above zero; a matrix that is not symmetric or not
    finite is out without a decomposition (one of NaNs gives False, as in PyTorch)."""

    _strict = True

    def check(self, value: Tensor) -> Tensor:
        ok = super().check(value)
        if value.shape[-2] != value.shape[-1]:
            return ok
        ok = ok & ember.isfinite(value).flatten(-2).all(-1)
        eye = ember.eye(value.shape[-1], dtype=value.dtype)
        eigenvalues = ember.linalg.eigvalsh(ember.where(ok[..., None, None], value, eye))
        return ok & ((eigenvalues > 0) if self._strict else (eigenvalues >= 0)).all(-1)


class _PositiveSemidefinite(_PositiveDefinite):
    _strict = False


class _CorrCholesky(_LowerCholesky):
    """Lower Cholesky factors of correlation matrices: rows of unit length."""

    def check(self, value: Tensor) -> Tensor:
        tol = ember.finfo(value.dtype).eps * value.shape[-1] * 10
        row_norm = ember.linalg.vector_norm(value.detach(), dim=-1)
        return super().check(value) & ((row_norm - 1.0).abs() <= tol).all(-1)


class _Multinomial(Constraint):
    """Nonnegative vectors summing to at most ``upper_bound`` (the weaker check PyTorch
    makes)."""

    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound: Any) -> None:
        self.upper_bound = upper_bound

    def check(self, x: Tensor) -> Tensor:  # (x, as PyTorch names it here)
        return (x >= 0).all(-1) & (x.sum(-1) <= self.upper_bound)

    def __repr__(self) -> str:
        return f"Multinomial(upper_bound={self.upper_bound})"


def _check_dim(owner: str, dim: int, value: Tensor) -> None:
    if not -value.dim() <= dim < value.dim():
        raise ArgumentError(f"constraints.{owner}: dim {dim} is out of range for a value of shape "
                            f"{tuple(value.shape)}")


class _Cat(Constraint):
    """``cseq[i]`` on the i-th block (``lengths[i]`` long) along ``dim``, as ``ember.cat``."""

    def __init__(self, cseq: Any, dim: int = 0, lengths: Any = None) -> None:
        self.cseq = list(cseq)
        self.lengths = [1] * len(self.cseq) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.cseq):
            raise ArgumentError(f"constraints.cat: {len(self.lengths)} lengths for "
                                f"{len(self.cseq)} constraints")
        self.dim = dim

    is_discrete = property(lambda self: any(c.is_discrete for c in self.cseq))
    event_dim = property(lambda self: max(c.event_dim for c in self.cseq))

    def check(self, value: Tensor) -> Tensor:
        _check_dim("cat", self.dim, value)
        checks, start = [], 0
        for constraint, length in zip(self.cseq, self.lengths):
            checks.append(constraint.check(value.narrow(self.dim, start, length)))
            start += length
        return ember.cat(checks, self.dim)


class _Stack(Constraint):
    """``cseq[i]`` on the i-th slice along ``dim``, as ``ember.stack``."""

    def __init__(self, cseq: Any, dim: int = 0) -> None:
        self.cseq = list(cseq)
        self.dim = dim

    is_discrete = property(lambda self: any(c.is_discrete for c in self.cseq))

    @property
    def event_dim(self) -> int:
        dim = max(c.event_dim for c in self.cseq)
        return dim + 1 if self.dim + dim < 0 else dim

    def check(self, value: Tensor) -> Tensor:
        _check_dim("stack", self.dim, value)
        slices = [value.select(self.dim, i) for i in range(value.shape[self.dim])]
        return ember.stack([c.check(v) for v, c in zip(slices, self.cseq)], self.dim)


class MixtureSameFamilyConstraint(Constraint):
    """The support of a :class:`MixtureSameFamily`: ``base_constraint`` checked on each
    value against every component, the component dim reduced."""

    def __init__(self, base_constraint: Constraint) -> None:
        if not isinstance(base_constraint, Constraint):
            raise TypeError("MixtureSameFamilyConstraint: base_constraint must be a Constraint, "
                            f"got {type(base_constraint).__name__}")
        self.base_constraint = base_constraint

    is_discrete = property(lambda self: self.base_constraint.is_discrete)
    event_dim = property(lambda self: self.base_constraint.event_dim)

    def check(self, value: Tensor) -> Tensor:
        event_dim = self.event_dim
        if value.dim() < event_dim:
            raise ArgumentError(f"MixtureSameFamilyConstraint: expected a value with at least "
                                f"{event_dim} dims, got shape {tuple(value.shape)}")
        ok = self.base_constraint.check(value.unsqueeze(-1 - event_dim))
        keep = value.dim() - event_dim
        return ok.flatten(keep).all(-1)

    def __repr__(self) -> str:
        return f"MixtureSameFamilyConstraint({self.base_constraint!r})"


dependent = _Dependent()
independent = _IndependentConstraint
boolean = _Boolean()
one_hot = _OneHot()
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
integer_interval = _IntegerInterval
real = _Real()
real_vector = _IndependentConstraint(real, 1)
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
unit_interval = _Interval(0.0, 1.0)
simplex = _Simplex()
lower_triangular = _LowerTriangular()
lower_cholesky = _LowerCholesky()
positive_definite = _PositiveDefinite()
positive_semidefinite = _PositiveSemidefinite()
corr_cholesky = _CorrCholesky()
square = _Square()
symmetric = _Symmetric()
multinomial = _Multinomial
cat = _Cat
stack = _Stack


# PyTorch's names for the parametrised constraints are their classes, so that a transform
# factory registered for ``greater_than`` serves every ``greater_than(b)``.
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
interval = _Interval
half_open_interval = _HalfOpenInterval
