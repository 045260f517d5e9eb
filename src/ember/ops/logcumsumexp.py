"""``logcumsumexp``: a running ``logaddexp`` along a dim, as one primitive (accumulated in
float64, or complex128, as PyTorch does on the CPU) whose gradient is PyTorch's sign-split
formula, itself made of ``logcumsumexp``. Complex steps follow PyTorch's: the larger real part
is factored out, an infinite one keeps its phase, and the running total starts at log 0 =
``-inf + 0j``.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from ember.errors import DTypeError
from ember.ops.compare import eq, ne
from ember.ops.complex_parts import Holomorphic
from ember.ops.convert import clone
from ember.ops.dims import normalize_dim
from ember.ops.primitive import Primitive, apply, primitive
from ember.ops.scan import scanned
from ember.ops.select import where
from ember.ops.unary import abs, exp, log
from ember.tensor import Tensor, method

__all__ = ["logcumsumexp"]


@primitive
class LogCumSumExp(Holomorphic, Primitive):
    """``log(cumsum(exp(x)))`` along ``dim`` as a running ``logaddexp`` (``reverse``: from the
    end), accumulated in float64 (complex128); exact with ``-inf`` entries, NaN propagates."""

    name = "logcumsumexp"
    save_outputs = True

    def forward(self, xp, a, *, dim, reverse):
        if a.dtype.kind == "c":
            out = scanned(xp, a.astype(np.complex128), dim, reverse,
                          lambda x: _complex_logaddexp_accumulate(xp, x, dim))
        else:
            out = scanned(xp, a.astype(np.float64), dim, reverse,
                          lambda x: xp.logaddexp.accumulate(x, axis=dim))
        xp.add(out, 0, out=out)  # (-0.0 first gives 0.0, as in cumsum)
        return out.astype(a.dtype, order="C", copy=False)  # (C order, as PyTorch's)

    def infer(self, a, *, dim, reverse):
        return a

    def vjp(self, ctx, g):
        # d out_j / d x_i = exp(x_i - out_j) for j after i, summed in log space so nothing
        # overflows; a real g is split into its positive and negative parts (PyTorch's
        # formula), a complex one has a logarithm of its own
        x, out = ctx.inputs[0], ctx.out
        dim, reverse = ctx.params["dim"], ctx.params["reverse"]
        back = not reverse
        if g.dtype.is_complex:
            return exp(apply(LogCumSumExp, log(g) - out, dim=dim, reverse=back) + x)
        pos, neg = _log_parts(g, 0.0)
        return (exp(apply(LogCumSumExp, pos - out, dim=dim, reverse=back) + x)
                - exp(apply(LogCumSumExp, neg - out, dim=dim, reverse=back) + x))

    def jvp(self, ctx, dx):
        x, out = ctx.inputs[0], ctx.out
        if dx.dtype.is_complex:
            return exp(apply(LogCumSumExp, log(dx) + x, **ctx.params) - out)
        pos, neg = _log_parts(dx, x)
        tangent = (exp(apply(LogCumSumExp, pos, **ctx.params) - out)
                   - exp(apply(LogCumSumExp, neg, **ctx.params) - out))
        # (a running total of exp(-inf) = 0 holds still: 0, not exp(-inf - -inf), as PyTorch)
        return where(eq(out, float("-inf")), 0.0, tangent)


def _complex_logaddexp_accumulate(xp: Any, a: Any, dim: int) -> Any:
    """The running ``log(exp(a_0) + ... + exp(a_k))`` of complex ``a`` along ``dim``: each
    step factors out the larger real part, so nothing overflows (NumPy's ``logaddexp`` is
    real only)."""
    out = xp.moveaxis(a.copy(), dim, 0)
    prev = xp.full(out.shape[1:], -np.inf, out.dtype)
    for k in range(out.shape[0]):  # (from log 0 = -inf + 0j, so -inf + 3j gives -inf + 0j)
        new = out[k]
        swap = new.real > prev.real
        big, small = xp.where(swap, new, prev), xp.where(swap, prev, new)
        with np.errstate(all="ignore"):  # (an infinite big: the step keeps its phase, as torch)
            step = big + xp.log1p(xp.exp(small - big))
            same_inf = xp.isinf(big.real) & (big.real == small.real)
            step = xp.where(same_inf, xp.where(big.real < 0, prev, xp.log(xp.exp(prev) +
                                                                           xp.exp(new))), step)
        prev = out[k] = xp.where(xp.isnan(prev) | xp.isnan(new), np.nan * (1 + 1j), step)
    return xp.moveaxis(out, 0, dim)


def _log_parts(g: Tensor, shift: Any) -> tuple[Tensor, Tensor]:
    """``log(g) + shift`` where ``g > 0`` and ``log(-g) + shift`` where ``g < 0``, the
    dtype's lowest value elsewhere (a stand-in for log 0 whose derivatives stay finite)."""
    lowest = float(ml_dtypes.finfo(g.dtype.np).min)
    magnitude = log(where(ne(g, 0), abs(g), 1.0)) + shift
    return where(g > 0, magnitude, lowest), where(g < 0, magnitude, lowest)


@method()
def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    """``log(cumsum(exp(input), dim))`` without overflow or underflow: a running
    ``logaddexp``, exact with ``-inf`` entries. Floating and complex inputs.

    Example:
        >>> ember.tensor([0.0, 0.0, float("-inf"), 5.0]).logcumsumexp(0)
        tensor([0.0000, 0.6931, 0.6931, 5.0134])
    """
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise DTypeError(f"logcumsumexp: expected a floating input, got {input.dtype.name}. "
                         "Hint: call .float() first")
    d = normalize_dim(dim, input.ndim, "logcumsumexp")
    if input.ndim == 0:
        return clone(input)
    return apply(LogCumSumExp, input, dim=d, reverse=False)
