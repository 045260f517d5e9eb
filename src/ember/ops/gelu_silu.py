"""gelu and silu as primitives with their derivatives as one op each (``gelu_slope``,
``silu_slope``: two passes a backward instead of six to a dozen); their functions are in
:mod:`ember.ops.activations`."""

from __future__ import annotations

import math
from typing import Any

from ember import dtypes
from ember.ops.complex_parts import Holomorphic
from ember.ops.convert import HALF
from ember.ops.erf_kernel import erf_array, fast_float32, float32_kernel
from ember.ops.primitive import apply, primitive
from ember.ops.unary import Unary, exp, in_float32, sigmoid, sigmoid_array, tanh

__all__: list[str] = []

_SQRT1_2 = 1 / math.sqrt(2)
_SQRT_2_PI = math.sqrt(2 / math.pi)  # the tanh approximation of gelu
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)
_GELU_CUBIC = 0.044715


@primitive
class Gelu(Unary):
    name = "gelu"

    @in_float32
    def forward(self, xp, a, *, approximate):
        if approximate == "tanh":
            inner = (a + a * a * a * _GELU_CUBIC) * _SQRT_2_PI
            return a * 0.5 * (1 + xp.tanh(inner))
        if fast_float32(xp, a):
            return float32_kernel(xp, "gelu", a)
        return a * 0.5 * (1 + erf_array(xp, a * _SQRT1_2))

    def chain(self, v, x, y, *, approximate):
        if approximate == "tanh":
            return _gelu_tanh_backward(v, x)
        return v * apply(GeluSlope, x)



def _gelu_tanh_backward(v: Any, x: Any) -> Any:
    """``v`` times the tanh-approximate gelu's slope, for float16/bfloat16 in float32 rounded
    once, as PyTorch's kernel (each step rounded to bfloat16, ``t + 1`` and ``1 - t²`` lost
    their digits in the tails: 60% off at x = -3)."""
    half = x.dtype in HALF
    xs, vs = (x.float(), v.float()) if half else (x, v)
    t = tanh((xs + xs * xs * xs * _GELU_CUBIC) * _SQRT_2_PI)
    slope = (1 - t * t) * (xs * xs * (3 * _GELU_CUBIC) + 1) * (_SQRT_2_PI * 0.5)
    grad = vs * ((t + 1) * 0.5 + xs * slope)
    return grad.to(v.dtype) if half else grad


@primitive
class GeluSlope(Unary):
    """Exact gelu's derivative ``Φ(x) + x·φ(x)``: one op (one fused pass for float32), so
    gelu's backward is two passes instead of a dozen; its own derivative is
    ``φ(x)·(2 - x²)``."""

    name = "gelu_slope"

    @in_float32
    def forward(self, xp, a):
        if fast_float32(xp, a):
            return float32_kernel(xp, "gelu_slope", a)
        cdf = (1 + erf_array(xp, a * _SQRT1_2)) * 0.5
        return cdf + a * xp.exp(a * a * -0.5) * _INV_SQRT_2PI

    def chain(self, v, x, y):
        return v * (exp(x * x * -0.5) * _INV_SQRT_2PI * (2 - x * x))


_SLOPE_DTYPES = frozenset((dtypes.float32, dtypes.float64, *HALF))


@primitive
class Silu(Holomorphic, Unary):
    name = "silu"

    @in_float32
    def forward(self, xp, a):
        s = sigmoid_array(xp, a)
        return xp.multiply(a, s, out=s) if s.ndim else a * s

    def chain(self, v, x, y):
        if x.dtype not in _SLOPE_DTYPES:  # (complex: the composite, as before)
            s = sigmoid(x)
            return v * (s * (1 + x * (1 - s)))
        if x.dtype in HALF:  # (v·slope in float32, rounded once, as PyTorch's kernel)
            return (v.float() * apply(SiluSlope, x.float())).to(v.dtype)
        return v * apply(SiluSlope, x)


@primitive
class SiluSlope(Unary):
    """silu's derivative ``s·(1 + x·(1 - s))``, ``s = sigmoid(x)``, of a real ``x``: one op
    computed in one buffer (the composite's values, bit for bit), so silu's backward is two
    ops instead of six; its own derivative is ``s·(1 - s)·(2 + x·(1 - 2s))``."""

    name = "silu_slope"

    @in_float32  # (float16/bfloat16 as PyTorch's kernel: composed in bfloat16, the slope
    # near its zero at x = -1.28 was 20% off)
    def forward(self, xp, a):
        s = sigmoid_array(xp, a)
        if not s.ndim:
            return s * (1 + a * (1 - s))
        t = xp.subtract(1, s)
        xp.multiply(a, t, out=t)
        xp.add(t, 1, out=t)
        return xp.multiply(s, t, out=t)

    def chain(self, v, x, y):
        s = sigmoid(x)
        return v * (s * (1 - s) * (2 + x * (1 - 2 * s)))
