"""Scans along one dim: cumsum and cumprod, each a primitive.

cumsum's vjp is a cumsum from the other end (the ``reverse`` parameter). cumprod's gradient is
exact with zeros in the input, where the textbook ``reverse_cumsum(g * out) / x`` divides by 0.
"""

from __future__ import annotations

from typing import Any

from ember import dtypes
from ember.autograd.grad_mode import GRAD
from ember.dtypes import DType
from ember.ops.compare import eq, isfinite, logical_and, logical_not, logical_or
from ember.ops.complex_parts import Holomorphic
from ember.ops.convert import cast, clone
from ember.ops.creation import ones_like, zeros_like
from ember.ops.dims import accumulation_input, normalize_dim, scan_accumulator
from ember.ops.inplace import bind_inplace
from ember.ops.primitive import DISPATCH, Primitive, apply, not_casting, primitive
from ember.ops.select import where
from ember.tensor import Tensor, method

__all__ = ["cumsum", "cumprod"]


def scanned(xp: Any, a: Any, dim: int, reverse: bool, scan: Any) -> Any:
    """``scan(a)`` (a running op along ``dim``), from the end when ``reverse``.

    Example:
        >>> scanned(np, np.arange(3.0), 0, True, np.cumsum)
        array([3., 3., 2.])
    """
    if not reverse:
        return scan(a)
    return xp.flip(scan(xp.flip(a, dim)), dim)


@primitive
class CumSum(Primitive):
    """Inclusive cumulative sum along ``dim``; ``reverse`` sums from the end (its own vjp)."""

    name = "cumsum"
    complex_grad = True  # moves, copies or sums elements: real coefficients
    save_inputs = False

    def forward(self, xp, a, *, dim, reverse):
        acc = scan_accumulator(a.dtype)
        out = scanned(xp, a, dim, reverse, lambda x: xp.add.accumulate(x, axis=dim, dtype=acc))
        if out.dtype.kind in "fc":  # PyTorch sums from +0.0: a leading -0.0 gives 0.0
            xp.add(out, 0, out=out)  # (NumPy starts from it; the scan's result is its own)
        return out.astype(a.dtype, order="C", copy=False)  # (C order, as PyTorch's)

    def infer(self, a, *, dim, reverse):
        return a

    def vjp(self, ctx, g):
        return apply(CumSum, g, dim=ctx.params["dim"], reverse=not ctx.params["reverse"])

    def jvp(self, ctx, da):
        return apply(CumSum, da, **ctx.params)


@primitive
class CumProd(Holomorphic, Primitive):
    """Inclusive cumulative product along ``dim``. Its gradient is exact with zeros in the
    input: before a fiber's first zero it is ``reverse_cumsum(g * out) / x``; at the first zero
    it is the same sum over the products with that zero left out; after it, 0 (written so that
    its derivative with respect to that zero, for second derivatives, is PyTorch's)."""

    name = "cumprod"
    save_outputs = True

    def forward(self, xp, a, *, dim):
        acc = scan_accumulator(a.dtype)
        out = xp.multiply.accumulate(a, axis=dim, dtype=acc)  # (not cumprod: 0.7 us less)
        return out.astype(a.dtype, order="C", copy=False)

    def infer(self, a, *, dim):
        return a

    def vjp(self, ctx, g):
        x, dim = ctx.inputs[0], ctx.params["dim"]
        if x.shape[dim] == 1:  # (the identity: 1 also at a NaN or inf, as PyTorch)
            return g
        plain = not (GRAD.enabled or DISPATCH.stack)  # (else create_graph, or a transform)
        w = g * ctx.out
        if plain and not eq(x, 0).any().item():  # (no zero: the quotient alone, as torch)
            return apply(CumSum, w, dim=dim, reverse=True) / x
        before, first, safe_x, skip_first = _zero_split(x, dim)
        if plain:  # (torch's values beside an inf or NaN: the products from the first zero
            # on left out of w (their 0 * inf = NaN too); at that zero the product before it
            # factored out (inf * 0.7, not NaN), the terms after a second zero left out
            w = where(before, w, zeros_like(w))
            zero = eq(x, 0)
            zeros_so_far = apply(CumSum, cast(zero, dtypes.int64), dim=dim, reverse=False)
            upto = logical_or(eq(zeros_so_far, 1), logical_and(zero, eq(zeros_so_far, 2)))
            tail = apply(CumProd, where(logical_and(upto, logical_not(first)), x,
                                        ones_like(x)), dim=dim)  # the x's after the zero
            at_first = skip_first * apply(CumSum, where(upto, g * tail, zeros_like(x)),
                                          dim=dim, reverse=True)
        else:
            at_first = apply(CumSum, g * skip_first, dim=dim, reverse=True)
        before_part = apply(CumSum, w, dim=dim, reverse=True) / safe_x
        # after the first zero: 0, in the costly form where second derivatives need it
        after = zeros_like(x) if plain else _after_first_zero(x, g, dim, first, at_first)
        return where(before, before_part, where(first, at_first, after))

    def jvp(self, ctx, da):
        x, dim = ctx.inputs[0], ctx.params["dim"]
        if x.shape[dim] == 1:  # (the identity; a deliberate difference: torch.func.jvp gives
            return da            # NaN at inf/NaN there, da * out / x)
        before, first, safe_x, skip_first = _zero_split(x, dim)
        before_part = ctx.out * apply(CumSum, da / safe_x, dim=dim, reverse=False)
        at_first = apply(CumSum, where(first, da, zeros_like(da)), dim=dim, reverse=False)
        return where(before, before_part, at_first * skip_first)


def _zero_split(x: Tensor, dim: int) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """What cumprod's derivatives need about zeros along ``dim``: where no zero has been seen
    yet, where the first zero is, ``x`` with 1 from the first zero on, and the cumulative
    product with the first zero left out."""
    zero = eq(x, 0)
    zeros_so_far = apply(CumSum, cast(zero, dtypes.int64), dim=dim, reverse=False)
    before = eq(zeros_so_far, 0)
    first = logical_and(zero, eq(zeros_so_far, 1))
    ones = ones_like(x)
    safe_x = where(before, x, ones)
    skip_first = apply(CumProd, where(first, ones, x), dim=dim)
    return before, first, safe_x, skip_first


def _after_first_zero(x: Tensor, g: Tensor, dim: int, first: Tensor, at_first: Tensor) -> Tensor:
    """cumprod's gradient after a fiber's first zero ``z``: 0, written as ``z`` times its
    derivative with respect to ``z`` so that second derivatives are exact, as PyTorch's: that
    is ``at_first / x`` beside a nonzero ``x``, at the second zero the reverse cumsum of ``g``
    times the cumprod with both zeros left out, and 0 from the third zero on."""
    zero = eq(x, 0)
    zeros_so_far = apply(CumSum, cast(zero, dtypes.int64), dim=dim, reverse=False)
    second = logical_and(zero, eq(zeros_so_far, 2))
    ones, nothing = ones_like(x), zeros_like(x)
    skip_two = apply(CumProd, where(logical_or(first, second), ones, x), dim=dim)
    at_second = apply(CumSum, g * skip_two, dim=dim, reverse=True)
    slope = where(second, at_second, where(zero, nothing, at_first / where(zero, ones, x)))
    slope = where(isfinite(slope), slope, nothing)  # (an inf or NaN: kept out of the value 0)
    first_zero = apply(CumSum, where(first, x, nothing), dim=dim, reverse=False)  # (z after it)
    return first_zero * slope


def _cumulative(prim: Primitive, input: Tensor, dim: int, dtype: Any, op: str) -> Tensor:
    if dtype is not None and DISPATCH.casting:  # (dtype= wins over autocast, as PyTorch's)
        return not_casting(_cumulative, prim, input, dim, dtype, op)
    x = accumulation_input(input, dtype)
    d = normalize_dim(dim, x.ndim, op)
    if x.ndim == 0:
        return clone(x)
    if prim is CumSum:
        return apply(CumSum, x, dim=d, reverse=False)
    return apply(prim, x, dim=d)


@method()
def cumsum(input: Tensor, dim: int, *, dtype: DType | None = None) -> Tensor:
    """Running sums along ``dim``; integers and bools sum to int64.

    Example:
        >>> ember.tensor([1, 2, 3]).cumsum(0)
        tensor([1, 3, 6])
    """
    return _cumulative(CumSum, input, dim, dtype, "cumsum")


@method()
def cumprod(input: Tensor, dim: int, *, dtype: DType | None = None) -> Tensor:
    """Running products along ``dim``. The first derivative is exact with zeros in the input;
    second derivatives at inputs containing zeros are not.

    Example:
        >>> ember.tensor([1.0, 2.0, 3.0]).cumprod(0)
        tensor([1., 2., 6.])
    """
    return _cumulative(CumProd, input, dim, dtype, "cumprod")


bind_inplace(cumsum_=cumsum, cumprod_=cumprod)
