"""The gamma family, ``i0`` and ``erfc``, which ONNX has no op for: composed from its ops in
float64 (reflection, a shift by the recurrence, then the asymptotic series) and rounded once
to the output's dtype, as eager computes them."""

from __future__ import annotations

import math

import numpy as np
from numpy.polynomial import polynomial as P

from ember.dtypes import float64
from ember.jit.ir import Eqn
from ember.onnx.context import Context
from ember.onnx.registry import converter
from ember.ops.gamma_kernel import polygamma_array

# Lanczos' approximation of Γ with g = 7 and 9 terms (relative error about 1e-15)
_LANCZOS_G = 7.0
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012,
            9.9843695780195716e-6, 1.5056327351493116e-7)
# Bernoulli numbers B_2 .. B_20, for the asymptotic series of the polygammas
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510,
              43867 / 798, -174611 / 330)
_SHIFT = 10  # the recurrence moves x >= 0.5 to x + 10 before the asymptotic series


def _f64(ctx: Context, eqn: Eqn) -> str:
    src = eqn.inputs[0]
    return ctx.cast(ctx.value(src), src.dtype, float64)


def _out(ctx: Context, eqn: Eqn, value: str) -> str:
    return ctx.cast(value, float64, eqn.outputs[0].dtype)


def _c(ctx: Context, value: float) -> str:
    return ctx.scalar(value, float64)


def _sin_cos_pi(ctx: Context, x: str) -> tuple[str, str]:
    """``sin(πx)``, ``cos(πx)`` from ``x - round(x)``: exact reduction, so the zeros at
    integers are zeros (signed as ``x`` at 0)."""
    r = ctx.node("Mul", [ctx.node("Sub", [x, ctx.node("Round", [x])]), _c(ctx, math.pi)])
    return ctx.node("Sin", [r]), ctx.node("Cos", [r])


def _reflected(ctx: Context, x: str) -> tuple[str, str]:
    """``x < 0.5`` and ``1 - x`` there (else ``x``): the argument the series take."""
    low = ctx.node("Less", [x, _c(ctx, 0.5)])
    return low, ctx.node("Where", [low, ctx.node("Sub", [_c(ctx, 1.0), x]), x])


@converter("lgamma")
def lgamma(ctx: Context, eqn: Eqn) -> str:
    """``log|Γ(x)|``: Lanczos' series from 0.5 on, ``log(π / |sin(πx)|) - lgamma(1 - x)``
    below; +inf at 0, the negative integers and ±inf, 0 at 1 and 2."""
    x = _f64(ctx, eqn)
    low, y = _reflected(ctx, x)
    z = ctx.node("Sub", [y, _c(ctx, 1.0)])
    series = _c(ctx, _LANCZOS[0])
    for i, p in enumerate(_LANCZOS[1:], start=1):
        series = ctx.node("Add", [series, ctx.node("Div", [_c(ctx, p), ctx.node(
            "Add", [z, _c(ctx, float(i))])])])
    t = ctx.node("Add", [z, _c(ctx, _LANCZOS_G + 0.5)])
    body = ctx.node("Sub", [ctx.node("Mul", [ctx.node("Add", [z, _c(ctx, 0.5)]),
                                             ctx.node("Log", [t])]), t])
    big = ctx.node("Add", [ctx.node("Add", [body, ctx.node("Log", [series])]),
                           _c(ctx, 0.5 * math.log(2 * math.pi))])
    sin, _ = _sin_cos_pi(ctx, x)
    reflected = ctx.node("Sub", [ctx.node("Sub", [_c(ctx, math.log(math.pi)), ctx.node(
        "Log", [ctx.node("Abs", [sin])])]), big])
    out = ctx.node("Where", [low, reflected, big])
    out = ctx.node("Where", [ctx.node("IsInf", [x]), _c(ctx, math.inf), out])
    ones = ctx.node("Or", [ctx.node("Equal", [x, _c(ctx, 1.0)]),  # (exact zeros, as eager)
                           ctx.node("Equal", [x, _c(ctx, 2.0)])])
    return _out(ctx, eqn, ctx.node("Where", [ones, _c(ctx, 0.0), out]))


def _zeta_tail(ctx: Context, w: str, n: int) -> str:
    """``(-1)^(n+1) n! ζ(n + 1, w)`` for ``w >= 10.5`` (``n = 0``: digamma), by the
    asymptotic series."""
    inv = ctx.node("Div", [_c(ctx, 1.0), w])
    inv2 = ctx.node("Mul", [inv, inv])
    # Σ_j B_2j (2j + n - 1)! / (2j)! · w^-(2j), highest power first, times w^-n
    coefficients = [b * math.factorial(2 * j + n - 1) / math.factorial(2 * j)
                    for j, b in enumerate(_BERNOULLI, start=1)]
    tail = ctx.horner(tuple(coefficients[::-1]) + (0.0,), inv2)
    if n == 0:  # ψ(w) = log w - 1/(2w) - Σ B_2j / (2j w^2j)
        lead = ctx.node("Sub", [ctx.node("Log", [w]), ctx.node("Mul", [_c(ctx, 0.5), inv])])
        return ctx.node("Sub", [lead, tail])
    lead = ctx.node("Add", [_c(ctx, math.factorial(n - 1)),
                            ctx.node("Mul", [_c(ctx, math.factorial(n) / 2), inv])])
    power = ctx.node("Pow", [inv, _c(ctx, float(n))])
    return ctx.node("Mul", [ctx.node("Mul", [ctx.node("Add", [lead, tail]), power]),
                            _c(ctx, (-1.0) ** (n + 1))])


def _cot_derivative(n: int) -> np.ndarray:
    """The coefficients of ``Q_n`` with ``dⁿ/dxⁿ cot(πx) = πⁿ Q_n(cot(πx))``."""
    q = np.array([0.0, 1.0])
    for _ in range(n):
        q = -P.polymul([1.0, 0.0, 1.0], P.polyder(q))
    return q


@converter("polygamma")
def polygamma(ctx: Context, eqn: Eqn) -> str:
    """``ψ^(n)(x)``: from 0.5 on, the recurrence to ``x + 10`` and the asymptotic series; below,
    the reflection ``ψ^(n)(x) = (-1)^n ψ^(n)(1 - x) - π^(n+1) Q_n(cot(πx))``. At the poles
    (0 and the negative integers) and at ±inf, eager's values: digamma -inf at +0, +inf at -0
    and NaN at the others; ``n >= 1`` ``(-1)^(n+1)·inf``."""
    n = eqn.params["n"]
    x = _f64(ctx, eqn)
    low, y = _reflected(ctx, x)
    shift = _c(ctx, 0.0)
    for k in range(_SHIFT):
        term = ctx.node("Add", [y, _c(ctx, float(k))])
        term = ctx.node("Pow", [term, _c(ctx, float(-(n + 1)))])
        shift = ctx.node("Add", [shift, term])
    shift = ctx.node("Mul", [shift, _c(ctx, (-1.0) ** (n + 1) * math.factorial(n))])
    w = ctx.node("Add", [y, _c(ctx, float(_SHIFT))])
    big = ctx.node("Add", [_zeta_tail(ctx, w, n), shift])
    sin, cos = _sin_cos_pi(ctx, x)
    cot = ctx.node("Div", [cos, sin])
    q = ctx.horner(tuple(_cot_derivative(n)[::-1]), cot)
    reflected = ctx.node("Sub", [ctx.node("Mul", [big, _c(ctx, (-1.0) ** n)]),
                                 ctx.node("Mul", [q, _c(ctx, math.pi ** (n + 1))])])
    out = ctx.node("Where", [low, reflected, big])
    pole = ctx.node("And", [ctx.node("LessOrEqual", [x, _c(ctx, 0.0)]),
                            ctx.node("Equal", [x, ctx.node("Round", [x])])])
    at_pole = (ctx.node("Where", [ctx.node("Equal", [x, _c(ctx, 0.0)]), ctx.node(
        "Div", [_c(ctx, -1.0), x]), _c(ctx, math.nan)]) if n == 0
        else _c(ctx, (-1.0) ** (n + 1) * math.inf))
    out = ctx.node("Where", [pole, at_pole, out])
    for end in (math.inf, -math.inf):  # (eager's value there: NaN for n >= 2 at +inf)
        value = float(polygamma_array(n, np.array([end]))[0])
        out = ctx.node("Where", [ctx.node("Equal", [x, _c(ctx, end)]), _c(ctx, value), out])
    return _out(ctx, eqn, out)


# I0(x) = Σ (x²/4)^k / (k!)² below 15 (positive terms: no cancellation), and
# e^x / sqrt(2πx) · Σ ((2k - 1)!!)² / (k! (8x)^k) from 15 on
_I0_SERIES = tuple(1.0 / math.factorial(k) ** 2 for k in range(46))
_I0_ASYMPTOTIC = tuple(math.prod(range(1, 2 * k, 2)) ** 2 / (math.factorial(k) * 8.0 ** k)
                       for k in range(21))


@converter("i0")
def i0(ctx: Context, eqn: Eqn) -> str:
    """``I_0(x)``: its power series below 15, its asymptotic series from 15 on (as
    ``e^(x/2) · (e^(x/2) · ...)``, which overflows only where I_0 does); NaN at ±inf, as
    eager (and PyTorch)."""
    a = ctx.node("Abs", [_f64(ctx, eqn)])
    small = ctx.horner(_I0_SERIES[::-1], ctx.node("Mul", [ctx.node("Mul", [a, a]),
                                                         _c(ctx, 0.25)]))
    far = ctx.node("Max", [a, _c(ctx, 15.0)])
    series = ctx.horner(_I0_ASYMPTOTIC[::-1], ctx.node("Div", [_c(ctx, 1.0), far]))
    half = ctx.node("Exp", [ctx.node("Mul", [far, _c(ctx, 0.5)])])
    scaled = ctx.node("Div", [series, ctx.node("Sqrt", [ctx.node("Mul", [far, _c(
        ctx, 2 * math.pi)])])])
    large = ctx.node("Mul", [half, ctx.node("Mul", [half, scaled])])
    out = ctx.node("Where", [ctx.node("Less", [a, _c(ctx, 15.0)]), small, large])
    return _out(ctx, eqn, ctx.node("Where", [ctx.node("IsInf", [a]), _c(ctx, math.nan),
                                             out]))


# erf(z) = 2/√π e^(-z²) Σ (2z²)^n z / (2n+1)!! (positive terms: no cancellation), for z < 2
_ERF_SERIES = tuple(1.0 / math.prod(range(1, 2 * n + 2, 2)) for n in range(45))
_ERFC_DEPTH = 60  # the continued fraction's depth from 2 on (eager's from 2 to 4)


@converter("erfc")
def erfc(ctx: Context, eqn: Eqn) -> str:
    """``1 - erf(x)`` in float64 without its cancellation: ``1 - erf(z)`` by erf's series
    of positive terms below 2, the continued fraction ``e^(-z²) / (√π (z + (1/2) / (z +
    1 / (z + ...))))`` from 2 on, ``2 - erfc(-x)`` below 0."""
    x = _f64(ctx, eqn)
    z = ctx.node("Abs", [x])
    near = ctx.node("Min", [z, _c(ctx, 2.0)])
    series = ctx.horner(_ERF_SERIES[::-1], ctx.node("Mul", [ctx.node("Mul", [near, near]),
                                                           _c(ctx, 2.0)]))
    gauss = ctx.node("Exp", [ctx.node("Neg", [ctx.node("Mul", [near, near])])])
    erf = ctx.node("Mul", [ctx.node("Mul", [series, near]), ctx.node(
        "Mul", [gauss, _c(ctx, 2 / math.sqrt(math.pi))])])
    far = ctx.node("Max", [z, _c(ctx, 2.0)])
    fraction = far
    for k in range(_ERFC_DEPTH, 0, -1):
        fraction = ctx.node("Add", [far, ctx.node("Div", [_c(ctx, k / 2), fraction])])
    tail = ctx.node("Div", [ctx.node("Exp", [ctx.node("Neg", [ctx.node("Mul", [far, far])])]),
                            ctx.node("Mul", [fraction, _c(ctx, math.sqrt(math.pi))])])
    value = ctx.node("Where", [ctx.node("Less", [z, _c(ctx, 2.0)]),
                               ctx.node("Sub", [_c(ctx, 1.0), erf]), tail])
    out = ctx.node("Where", [ctx.node("Less", [x, _c(ctx, 0.0)]),
                             ctx.node("Sub", [_c(ctx, 2.0), value]), value])
    return _out(ctx, eqn, out)
