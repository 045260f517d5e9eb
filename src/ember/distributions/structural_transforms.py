"""Transforms built from other transforms or distributions: :class:`IndependentTransform`,
:class:`ReshapeTransform`, :class:`CatTransform`, :class:`StackTransform` and
:class:`CumulativeDistributionTransform`.

Example:
    >>> from ember.distributions.transforms import CatTransform, ExpTransform, identity_transform
    >>> CatTransform([ExpTransform(), identity_transform], dim=0, lengths=[1, 2])(ember.zeros(3))
    tensor([1., 0., 0.])
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import ember
from ember.distributions import constraints
from ember.distributions.transforms import Transform, _transform_list
from ember.distributions.utils import sum_rightmost
from ember.errors import ArgumentError
from ember.tensor import Tensor

__all__ = ["CatTransform", "CumulativeDistributionTransform", "IndependentTransform",
           "ReshapeTransform", "StackTransform"]


class IndependentTransform(Transform):
    """``base_transform`` with its rightmost ``reinterpreted_batch_ndims`` batch dims treated
    as event dims: the log-det-Jacobian is summed over them.

    Example:
        >>> from ember.distributions.transforms import ExpTransform
        >>> t = IndependentTransform(ExpTransform(), 1)
        >>> t.log_abs_det_jacobian(ember.ones(2, 3), t(ember.ones(2, 3)))
        tensor([3., 3.])
    """

    def __init__(self, base_transform: Transform, reinterpreted_batch_ndims: int,
                 cache_size: int = 0) -> None:
        super().__init__(cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size: int = 1) -> Transform:
        if cache_size == self._cache_size:
            return self
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims,
                                    cache_size=cache_size)

    @property
    def domain(self) -> constraints.Constraint:
        return constraints.independent(self.base_transform.domain,
                                       self.reinterpreted_batch_ndims)

    @property
    def codomain(self) -> constraints.Constraint:
        return constraints.independent(self.base_transform.codomain,
                                       self.reinterpreted_batch_ndims)

    bijective = property(lambda self: self.base_transform.bijective)
    sign = property(lambda self: self.base_transform.sign)

    def _enough_dims(self, value: Tensor, event_dim: int) -> Tensor:
        if value.dim() < event_dim:
            raise ArgumentError(f"IndependentTransform: expected at least {event_dim} dims, got "
                                f"shape {tuple(value.shape)}")
        return value

    def _call(self, x: Tensor) -> Tensor:
        return self.base_transform(self._enough_dims(x, self.domain.event_dim))

    def _inverse(self, y: Tensor) -> Tensor:
        return self.base_transform.inv(self._enough_dims(y, self.codomain.event_dim))

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y),
                             self.reinterpreted_batch_ndims)

    def forward_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return self.base_transform.inverse_shape(shape)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, IndependentTransform)
                and self.base_transform == other.base_transform
                and self.reinterpreted_batch_ndims == other.reinterpreted_batch_ndims)

    def __hash__(self) -> int:
        return hash((IndependentTransform, self.base_transform, self.reinterpreted_batch_ndims))

    def __repr__(self) -> str:
        return f"IndependentTransform({self.base_transform!r}, {self.reinterpreted_batch_ndims})"


class ReshapeTransform(Transform):
    """Reshapes the rightmost dims from ``in_shape`` to ``out_shape`` (same number of
    elements); the Jacobian's log-determinant is zero.

    Example:
        >>> ReshapeTransform((4,), (2, 2))(ember.zeros(3, 4)).shape
        ember.Size([3, 2, 2])
    """

    bijective = True

    def __init__(self, in_shape: Sequence[int], out_shape: Sequence[int],
                 cache_size: int = 0) -> None:
        self.in_shape, self.out_shape = tuple(in_shape), tuple(out_shape)
        if math.prod(self.in_shape) != math.prod(self.out_shape):
            raise ArgumentError(f"ReshapeTransform: in_shape {self.in_shape} and out_shape "
                                f"{self.out_shape} have different numbers of elements")
        super().__init__(cache_size)

    domain = property(lambda self: constraints.independent(constraints.real, len(self.in_shape)))
    codomain = property(
        lambda self: constraints.independent(constraints.real, len(self.out_shape)))

    def with_cache(self, cache_size: int = 1) -> Transform:
        if cache_size == self._cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x: Tensor) -> Tensor:
        return x.reshape(self.forward_shape(tuple(x.shape)))

    def _inverse(self, y: Tensor) -> Tensor:
        return y.reshape(self.inverse_shape(tuple(y.shape)))

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return ember.zeros(x.shape[:x.dim() - len(self.in_shape)], dtype=x.dtype)

    @staticmethod
    def _swap(shape: tuple[int, ...], old: tuple[int, ...], new: tuple[int, ...]
              ) -> tuple[int, ...]:
        cut = len(shape) - len(old)
        if cut < 0 or tuple(shape[cut:]) != old:
            raise ArgumentError(f"ReshapeTransform: expected a shape ending in {old}, got "
                                f"{tuple(shape)}")
        return tuple(shape[:cut]) + new

    def forward_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return self._swap(shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return self._swap(shape, self.out_shape, self.in_shape)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, ReshapeTransform) and self.in_shape == other.in_shape
                and self.out_shape == other.out_shape)

    def __hash__(self) -> int:
        return hash((ReshapeTransform, self.in_shape, self.out_shape))


class _PiecewiseTransform(Transform):
    """Shared by :class:`CatTransform` and :class:`StackTransform`: one transform per piece
    of a tensor along ``dim``."""

    def __init__(self, tseq: Sequence[Transform], dim: int, cache_size: int) -> None:
        tseq = _transform_list(type(self).__name__, "tseq", tseq)
        super().__init__(cache_size)
        self.transforms = [t.with_cache(cache_size) for t in tseq] if cache_size else tseq
        self.dim = dim

    bijective = property(lambda self: all(t.bijective for t in self.transforms))

    def _size(self) -> int:
        """The size along ``dim`` of the tensors this transform takes."""
        raise NotImplementedError

    def _pieces(self, value: Tensor) -> list[Tensor]:
        raise NotImplementedError

    def _join(self, pieces: list[Tensor]) -> Tensor:
        raise NotImplementedError

    def _split(self, value: Tensor) -> list[Tensor]:
        name, size = type(self).__name__, self._size()
        if not -value.dim() <= self.dim < value.dim():
            raise ArgumentError(f"{name}: dim {self.dim} is out of range for a tensor of shape "
                                f"{tuple(value.shape)}")
        if value.shape[self.dim] != size:
            raise ArgumentError(f"{name}: expected size {size} along dim {self.dim}, got shape "
                                f"{tuple(value.shape)}")
        return self._pieces(value)

    def _call(self, x: Tensor) -> Tensor:
        return self._join([t(p) for t, p in zip(self.transforms, self._split(x))])

    def _inverse(self, y: Tensor) -> Tensor:
        return self._join([t.inv(p) for t, p in zip(self.transforms, self._split(y))])

    def _key(self) -> tuple:
        return (type(self), self.dim, tuple(self.transforms))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _PiecewiseTransform) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


class CatTransform(_PiecewiseTransform):
    """Applies ``tseq[i]`` to the i-th block (``lengths[i]`` long, 1 by default) along
    ``dim``, as ``ember.cat`` would join them.

    Example:
        >>> from ember.distributions.transforms import ExpTransform, identity_transform
        >>> t = CatTransform([ExpTransform(), identity_transform], dim=0, lengths=[2, 1])
        >>> t(ember.zeros(3))
        tensor([1., 1., 0.])
    """

    def __init__(self, tseq: Sequence[Transform], dim: int = 0,
                 lengths: Sequence[int] | None = None, cache_size: int = 0) -> None:
        super().__init__(tseq, dim, cache_size)
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise ArgumentError(f"CatTransform: {len(self.lengths)} lengths for "
                                f"{len(self.transforms)} transforms")

    @property
    def event_dim(self) -> int:
        return max(t.event_dim for t in self.transforms)

    length = property(lambda self: sum(self.lengths), doc="The size along ``dim``.")

    def _key(self) -> tuple:
        return super()._key() + (tuple(self.lengths),)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if cache_size == self._cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _size(self) -> int:
        return self.length

    def _pieces(self, value: Tensor) -> list[Tensor]:
        starts = [0]
        for length in self.lengths:
            starts.append(starts[-1] + length)
        return [value.narrow(self.dim, s, n) for s, n in zip(starts, self.lengths)]

    def _join(self, pieces: list[Tensor]) -> Tensor:
        return ember.cat(pieces, self.dim)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        terms = []
        for t, a, b in zip(self.transforms, self._split(x), self._split(y)):
            terms.append(sum_rightmost(t.log_abs_det_jacobian(a, b),
                                       self.event_dim - t.event_dim))
        dim = (self.dim - x.dim() if self.dim >= 0 else self.dim) + self.event_dim
        if dim < 0:  # dim is a batch dim: the pieces' terms sit side by side
            return ember.cat(terms, dim)
        return sum(terms[1:], terms[0])

    domain = property(lambda self: constraints.cat([t.domain for t in self.transforms],
                                                   self.dim, self.lengths))
    codomain = property(lambda self: constraints.cat([t.codomain for t in self.transforms],
                                                     self.dim, self.lengths))


class StackTransform(_PiecewiseTransform):
    """Applies ``tseq[i]`` to the i-th slice along ``dim``, as ``ember.stack`` would join
    them.

    Example:
        >>> from ember.distributions.transforms import ExpTransform, identity_transform
        >>> StackTransform([ExpTransform(), identity_transform], dim=1)(ember.zeros(1, 2))
        tensor([[1., 0.]])
    """

    def __init__(self, tseq: Sequence[Transform], dim: int = 0, cache_size: int = 0) -> None:
        super().__init__(tseq, dim, cache_size)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if cache_size == self._cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _size(self) -> int:
        return len(self.transforms)

    def _pieces(self, value: Tensor) -> list[Tensor]:
        return [value.select(self.dim, i) for i in range(value.shape[self.dim])]

    def _join(self, pieces: list[Tensor]) -> Tensor:
        return ember.stack(pieces, self.dim)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return self._join([t.log_abs_det_jacobian(a, b) for t, a, b in
                           zip(self.transforms, self._split(x), self._split(y))])

    domain = property(lambda self: constraints.stack([t.domain for t in self.transforms],
                                                     self.dim))
    codomain = property(lambda self: constraints.stack([t.codomain for t in self.transforms],
                                                       self.dim))


class CumulativeDistributionTransform(Transform):
    """``y = distribution.cdf(x)``, onto the unit interval; the inverse is ``icdf`` and the
    log-det-Jacobian is ``distribution.log_prob(x)`` (e.g. for a Gaussian copula).

    Example:
        >>> from ember.distributions import Normal
        >>> CumulativeDistributionTransform(Normal(0.0, 1.0))(ember.tensor([0.0]))
        tensor([0.5000])
    """

    bijective = True
    codomain = constraints.unit_interval
    sign = 1

    def __init__(self, distribution: Any, cache_size: int = 0) -> None:
        super().__init__(cache_size)
        self.distribution = distribution

    domain = property(lambda self: self.distribution.support)

    def with_cache(self, cache_size: int = 1) -> Transform:
        if cache_size == self._cache_size:
            return self
        return CumulativeDistributionTransform(self.distribution, cache_size=cache_size)

    def _call(self, x: Tensor) -> Tensor:
        return self.distribution.cdf(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return self.distribution.log_prob(x)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, CumulativeDistributionTransform)
                and self.distribution is other.distribution)

    def __hash__(self) -> int:
        return hash((CumulativeDistributionTransform, id(self.distribution)))
