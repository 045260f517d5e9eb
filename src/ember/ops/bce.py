"""``binary_cross_entropy``'s elementwise terms as one primitive, with PyTorch's guards at the
ends: each log clamped at -100 (a probability of 0 or 1 gives a loss of 100, not inf), and the
input's gradient ``(x - t) / max(x·(1 - x), 1e-12)`` (at most 1e12 in size, where the clamped
log's derivative, ``-1/x``, overflows float32 below x ≈ 3e-39 and is 0 under exp(-100)). The
target's gradient is ``log(1 - x) - log(x)``, unclamped, as PyTorch's. The rules are Ember
ops, so every order of derivative follows (the second equals PyTorch's wherever
``x·(1 - x) > 1e-12``). :func:`check_probabilities` refuses an input or target element outside
[0, 1] or NaN, as PyTorch's kernel does.

Example:
    >>> bce_terms(ember.tensor([0.0, 0.5]), ember.tensor([1.0, 1.0]))
    tensor([100.0000,   0.6931])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.errors import ArgumentError, DTypeError, ShapeError
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive
from ember.ops.unary import in_float32
from ember.tensor import Tensor

__all__: list[str] = []

_LOG_FLOOR = -100  # PyTorch's clamp of each log
_EPSILON = 1e-12  # PyTorch's floor of x·(1 - x) in the input's gradient


@primitive
class BinaryCrossEntropy(Primitive):
    """``(t - 1)·max(log1p(-x), -100) - t·max(log(x), -100)`` for probabilities ``x`` and
    targets ``t`` of one shape and dtype (see the module docstring)."""

    name = "binary_cross_entropy"
    backward_name = "BinaryCrossEntropyBackward0"
    jvp_takes_none = True

    @in_float32
    def forward(self, xp, x, t):
        with xp.errstate(divide="ignore"):  # log(0) is -inf before its clamp
            log_x = xp.maximum(xp.log(x), _LOG_FLOOR)
            log_1mx = xp.maximum(xp.log1p(-x), _LOG_FLOOR)
        return (t - 1) * log_1mx - t * log_x

    def infer(self, x, t):
        return _same_specs(self.name, x, t)

    def vjp(self, ctx, g):
        x, t = ctx.inputs
        return (g * _slope(x, t) if x.requires_grad else None,
                g * _target_slope(x) if t.requires_grad else None)

    def jvp(self, ctx, dx, dt):
        x, t = ctx.inputs
        out = None if dx is None else dx * _slope(x, t)
        if dt is not None:
            part = dt * _target_slope(x)
            out = part if out is None else out + part
        return out


def _same_specs(op: str, x: TensorSpec, *others: TensorSpec) -> TensorSpec:
    """The output spec of a loss elementwise over an input ``x`` and targets (or weights)
    ``others`` of its shape and dtype; a clear error where one differs."""
    for t in others:
        if x.shape != t.shape:
            raise ShapeError(f"{op}: target size {t.shape} must be the same as input size "
                             f"{x.shape}")
        if x.dtype is not t.dtype:
            raise DTypeError(f"{op}: input is {x.dtype.name} but target is {t.dtype.name}. "
                             "Hint: target.to(input.dtype)")
    return TensorSpec(x.shape, x.dtype)


def _slope(x: Tensor, t: Tensor) -> Tensor:
    """The loss's derivative in ``x``, bounded as PyTorch bounds it."""
    return (x - t) / (x * (1 - x)).clamp(min=_EPSILON)


def _target_slope(x: Tensor) -> Tensor:
    """The loss's derivative in ``t``."""
    return x.neg().log1p() - x.log()


def bce_terms(x: Tensor, t: Tensor) -> Tensor:
    """Each element's binary cross entropy (the ``binary_cross_entropy`` primitive); the
    caller checks the values and reduces."""
    return apply(BinaryCrossEntropy, x, t)


def _outside_unit(a: Any) -> bool:
    """Whether an element of the array ``a`` is outside [0, 1] or NaN: two reductions (NaN
    propagates through ``min`` and ``max`` and fails both comparisons), cheaper than a mask."""
    return bool(a.size) and not (a.min() >= 0 and a.max() <= 1)


def check_probabilities(op: str, input: Tensor, target: Tensor) -> None:
    """Raises unless every element of ``input`` and ``target`` is in [0, 1] (NaN refused), as
    PyTorch's kernel checks them."""
    x, t = input._data, target._data
    if _outside_unit(x):
        if np.isnan(x).any():
            raise ArgumentError(f"{op}: the input contains NaN ({int(np.isnan(x).sum())} of "
                                f"{x.size} elements). Hint: look at the op that computed it "
                                f"(a log of a negative, 0/0, an overflow); sigmoid keeps NaN")
        raise ArgumentError(f"{op}: all elements of input should be between 0 and 1 (got values "
                            f"in [{float(x.min())}, {float(x.max())}]). Hint: apply sigmoid "
                            f"first, or use binary_cross_entropy_with_logits")
    if _outside_unit(t):
        outside = ~((t >= 0) & (t <= 1))
        raise ArgumentError(f"{op}: all elements of target should be between 0 and 1 "
                            f"({int(outside.sum())} of {t.size} are not, e.g. "
                            f"{float(t[outside][0])}). Hint: targets are probabilities")
