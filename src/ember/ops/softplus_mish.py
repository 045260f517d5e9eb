"""softplus and mish as primitives; mish's derivative is one op (``mish_slope``), so its
backward keeps only the input, as PyTorch's (the composite ``x * tanh(softplus(x))`` kept
its input and the tanh's output, twice the memory). Their functions are in
:mod:`ember.ops.activations`."""

from __future__ import annotations

import math
from typing import Any

from ember.ops.primitive import apply, primitive
from ember.ops.select import select_array, where
from ember.ops.unary import Unary, in_float32, sigmoid, sigmoid_array, tanh

__all__: list[str] = []

_SMALL = 4096  # elements below which logaddexp's scalar loop costs less than seven calls


def log1p_exp(xp: Any, s: Any) -> Any:
    """``log(1 + exp(s))`` of a float32/float64 array, as ``max(s, 0) + log1p(exp(-|s|))``
    (float32 computed in float64 and rounded once): NumPy's ``logaddexp(0, s)`` is a scalar
    loop, 4-9x slower at 256x256, and within 1.5 ulp in float32 where this rounds correctly.
    A small float32 array takes ``logaddexp`` in float64 (three calls, not seven: 3 against
    6.7 µs at 4x4; rounded to float32, the same values)."""
    if s.dtype == xp.float32 and s.size < _SMALL:
        return xp.logaddexp(0, s.astype(xp.float64)).astype(xp.float32)
    wide = xp.array(s, dtype=xp.float64 if s.dtype == xp.float32 else s.dtype)
    linear = xp.maximum(wide, 0)
    xp.abs(wide, out=wide)
    xp.negative(wide, out=wide)
    xp.exp(wide, out=wide)
    xp.log1p(wide, out=wide)
    xp.add(wide, linear, out=wide)
    return wide.astype(s.dtype, copy=False)


@primitive
class Softplus(Unary):
    name = "softplus"

    @in_float32
    def forward(self, xp, a, *, beta, threshold):
        scaled = a * beta
        soft = log1p_exp(xp, scaled) / beta
        return soft if threshold == math.inf else select_array(xp, scaled > threshold, a, soft)

    def chain(self, v, x, y, *, beta, threshold):
        scaled = x * beta
        return where(scaled > threshold, v, v * sigmoid(scaled))


def _tanh_softplus(xp: Any, a: Any) -> Any:
    """``tanh(softplus(a))``, softplus with no threshold (PyTorch's mish kernel has none)."""
    return xp.tanh(log1p_exp(xp, a)) if a.ndim else xp.tanh(xp.logaddexp(0, a))


@primitive
class Mish(Unary):
    """``x * tanh(softplus(x))``; the backward reads ``x`` alone."""

    name = "mish"

    @in_float32
    def forward(self, xp, a):
        t = _tanh_softplus(xp, a)
        return xp.multiply(a, t, out=t) if t.ndim else a * t

    def chain(self, v, x, y):
        return v * apply(MishSlope, x)


@primitive
class MishSlope(Unary):
    """mish's derivative ``t + x·s·(1 - t²)``, ``t = tanh(softplus(x))``, ``s = sigmoid(x)``
    (PyTorch's formula), in one op; its own derivative is ``s·(1 - t²)·(2 + x·(1 - s) -
    2·x·s·t)``."""

    name = "mish_slope"

    @in_float32
    def forward(self, xp, a):
        t = _tanh_softplus(xp, a)
        s = sigmoid_array(xp, a)
        if not t.ndim:
            return t + a * s * (1 - t * t)
        xp.multiply(s, a, out=s)
        u = xp.multiply(t, t)
        xp.subtract(1, u, out=u)
        xp.multiply(s, u, out=s)
        return xp.add(t, s, out=t)

    def chain(self, v, x, y):
        t, s = tanh(apply(Softplus, x, beta=1.0, threshold=math.inf)), sigmoid(x)
        return v * (s * (1 - t * t) * (2 + x * (1 - s) - 2 * x * s * t))
