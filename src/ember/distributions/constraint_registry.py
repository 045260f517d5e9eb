"""``biject_to`` and ``transform_to``: from a constraint to a transform that maps
unconstrained reals onto it, with PyTorch's registrations.

``biject_to(c)`` is a bijection (for HMC and other samplers that need the log-det-Jacobian);
``transform_to(c)`` need not be (for optimizing constrained parameters). Both look up the
constraint's class; register more with ``biject_to.register(constraint_or_class)``.

Example:
    >>> from ember.distributions import biject_to, constraints
    >>> t = biject_to(constraints.positive)
    >>> t(ember.tensor([0.0]))
    tensor([1.])
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

from ember.distributions import constraints
from ember.distributions import transforms as T

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]


class ConstraintRegistry:
    """A map from constraint classes to factories ``constraint -> Transform``.

    Example:
        >>> registry = ConstraintRegistry()
        >>> @registry.register(constraints.positive)
        ... def _exp(constraint):
        ...     return T.ExpTransform()
        >>> registry(constraints.positive)
        ExpTransform()
    """

    def __init__(self) -> None:
        self._registry: dict[type, Callable] = {}

    def register(self, constraint: Any, factory: Callable | None = None) -> Any:
        """Registers ``factory`` for ``constraint``'s class (a constraint or a subclass of
        :class:`~ember.distributions.constraints.Constraint`); usable as a decorator."""
        if factory is None:
            return lambda factory: self.register(constraint, factory)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not (isinstance(constraint, type) and issubclass(constraint, constraints.Constraint)):
            raise TypeError("ConstraintRegistry.register: expected a Constraint subclass or "
                            f"instance, got {constraint!r}")
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint: constraints.Constraint) -> T.Transform:
        """The transform registered for ``constraint``'s class."""
        factory = self._registry.get(type(constraint))
        if factory is None:
            raise NotImplementedError(f"Cannot transform {type(constraint).__name__} "
                                      "constraints; hint: register a factory with "
                                      ".register(constraint_class)")
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


@biject_to.register(constraints.real)
@transform_to.register(constraints.real)
def _transform_to_real(constraint: constraints.Constraint) -> T.Transform:
    return T.identity_transform


# Registration is by class: positive is a greater_than(0), nonnegative a greater_than_eq(0),
# so (as in PyTorch) all get exp followed by a shift by the bound; likewise unit_interval is an
# interval.
@biject_to.register(constraints.greater_than)
@biject_to.register(constraints.greater_than_eq)
@transform_to.register(constraints.greater_than)
@transform_to.register(constraints.greater_than_eq)
def _transform_to_greater_than(constraint: Any) -> T.Transform:
    return T.ComposeTransform([T.ExpTransform(), T.AffineTransform(constraint.lower_bound, 1)])


@biject_to.register(constraints.less_than)
@transform_to.register(constraints.less_than)
def _transform_to_less_than(constraint: Any) -> T.Transform:
    return T.ComposeTransform([T.ExpTransform(), T.AffineTransform(constraint.upper_bound, -1)])


@biject_to.register(constraints.interval)
@biject_to.register(constraints.half_open_interval)
@transform_to.register(constraints.interval)
@transform_to.register(constraints.half_open_interval)
def _transform_to_interval(constraint: Any) -> T.Transform:
    low, high = constraint.lower_bound, constraint.upper_bound
    if isinstance(low, numbers.Number) and isinstance(high, numbers.Number) \
            and low == 0 and high == 1:
        return T.SigmoidTransform()
    return T.ComposeTransform([T.SigmoidTransform(), T.AffineTransform(low, high - low)])


@biject_to.register(constraints.simplex)
def _biject_to_simplex(constraint: constraints.Constraint) -> T.Transform:
    return T.StickBreakingTransform()


@transform_to.register(constraints.simplex)
def _transform_to_simplex(constraint: constraints.Constraint) -> T.Transform:
    return T.SoftmaxTransform()


@transform_to.register(constraints.lower_cholesky)
def _transform_to_lower_cholesky(constraint: constraints.Constraint) -> T.Transform:
    return T.LowerCholeskyTransform()


@transform_to.register(constraints.positive_definite)
@transform_to.register(constraints.positive_semidefinite)
def _transform_to_positive_definite(constraint: constraints.Constraint) -> T.Transform:
    return T.PositiveDefiniteTransform()


@biject_to.register(constraints.corr_cholesky)
@transform_to.register(constraints.corr_cholesky)
def _transform_to_corr_cholesky(constraint: constraints.Constraint) -> T.Transform:
    return T.CorrCholeskyTransform()


def _register_structural(registry: ConstraintRegistry) -> None:
    """Constraints built from other constraints map to the same structure of transforms,
    each part looked up in the same ``registry``."""

    @registry.register(constraints.independent)
    def _independent(constraint: Any) -> T.Transform:
        return T.IndependentTransform(registry(constraint.base_constraint),
                                      constraint.reinterpreted_batch_ndims)

    @registry.register(constraints.cat)
    def _cat(constraint: Any) -> T.Transform:
        return T.CatTransform([registry(c) for c in constraint.cseq], constraint.dim,
                              constraint.lengths)

    @registry.register(constraints.stack)
    def _stack(constraint: Any) -> T.Transform:
        return T.StackTransform([registry(c) for c in constraint.cseq], constraint.dim)


_register_structural(biject_to)
_register_structural(transform_to)
