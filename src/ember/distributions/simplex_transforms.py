"""Transforms onto the probability simplex: :class:`SoftmaxTransform` (normalized ``exp``,
not bijective) and :class:`StickBreakingTransform` (a bijection from ``K - 1`` reals).

Example:
    >>> from ember.distributions.transforms import StickBreakingTransform
    >>> StickBreakingTransform()(ember.zeros(2))
    tensor([0.3333, 0.3333, 0.3333])
"""

from __future__ import annotations

import ember
from ember.distributions import constraints
from ember.distributions.transforms import Transform
from ember.errors import ArgumentError
from ember.tensor import Tensor

__all__ = ["SoftmaxTransform", "StickBreakingTransform"]

F = ember.nn.functional


def _at_least_one_dim(owner: str, shape: tuple[int, ...]) -> None:
    if len(shape) < 1:
        raise ArgumentError(f"{owner}: expected a shape with at least one dim (the vector), got "
                            f"{shape}")


class SoftmaxTransform(Transform):
    """``y = exp(x) / exp(x).sum(-1)``: onto the simplex, not bijective (``inv`` returns
    ``log y``), so it has no log-det-Jacobian; suited to optimization, not to HMC.

    Example:
        >>> SoftmaxTransform()(ember.zeros(4))
        tensor([0.2500, 0.2500, 0.2500, 0.2500])
    """

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = False

    def _call(self, x: Tensor) -> Tensor:
        return ember.softmax(x, -1)

    def _inverse(self, y: Tensor) -> Tensor:
        return ember.log(y)

    def forward_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        _at_least_one_dim("SoftmaxTransform", shape)
        return shape

    def inverse_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        _at_least_one_dim("SoftmaxTransform", shape)
        return shape


def _offset_log(k: int, dtype: ember.dtype) -> Tensor:
    """``log(k), log(k - 1), ..., log(1)``: shifts that map ``x = 0`` to the uniform point."""
    return ember.log(ember.arange(k, 0, -1, dtype=dtype))


class StickBreakingTransform(Transform):
    """A bijection from ``R^(K-1)`` onto the ``K``-simplex: each coordinate, through a
    sigmoid, breaks off its share of the stick that is left (the stick-breaking construction
    of the Dirichlet); mixes coordinates, suited to HMC.

    Example:
        >>> t = StickBreakingTransform()
        >>> t.inv(t(ember.tensor([0.5, -1.0])))
        tensor([ 0.5000, -1.0000])
    """

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def _call(self, x: Tensor) -> Tensor:
        _at_least_one_dim("StickBreakingTransform", tuple(x.shape))
        finfo = ember.finfo(x.dtype)
        z = ember.sigmoid(x - _offset_log(x.shape[-1], x.dtype)).clamp(min=finfo.tiny,
                                                                        max=1 - finfo.eps)
        remaining = ember.cumprod(1 - z, -1)
        return F.pad(z, (0, 1), value=1.0) * F.pad(remaining, (1, 0), value=1.0)

    def _inverse(self, y: Tensor) -> Tensor:
        _at_least_one_dim("StickBreakingTransform", tuple(y.shape))
        head = y[..., :-1]
        left = (1 - ember.cumsum(head, -1)).clamp(min=ember.finfo(y.dtype).tiny)
        return ember.log(head) - ember.log(left) + _offset_log(head.shape[-1], y.dtype)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        x = x - _offset_log(x.shape[-1], x.dtype)
        # 1 - sigmoid(x) = exp(-x) sigmoid(x)
        return (-x + F.logsigmoid(x) + ember.log(y[..., :-1])).sum(-1)

    def forward_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        _at_least_one_dim("StickBreakingTransform", shape)
        return shape[:-1] + (shape[-1] + 1,)

    def inverse_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        _at_least_one_dim("StickBreakingTransform", shape)
        return shape[:-1] + (shape[-1] - 1,)
