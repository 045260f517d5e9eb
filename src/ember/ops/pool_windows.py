"""Max pooling's gradient and tangent: a pair of linear primitives moving values between
pooling windows and the window element ``max_pool`` named for each (``window_scatter`` to
the winners, ``window_gather`` from them), each the other's vjp. Average pooling's window
sums without padding: ``window_sum`` and its transpose ``window_spread``.
"""

from __future__ import annotations

import itertools
from math import prod
from typing import Any

from ember import dtypes
from ember.ops import max_pool_kernel
from ember.ops.im2col import windows
from ember.ops.primitive import DISPATCH, Primitive, TensorSpec, apply, primitive
from ember.tensor import Tensor

__all__: list[str] = []


def holds_floats(a: Any) -> bool:
    """Whether the backend array ``a`` holds floats (NumPy's kind of bfloat16 is 'V')."""
    return dtypes.from_numpy(a.dtype).is_floating_point


def _in_order_of(xp: Any, template: Any, a: Any) -> Any:
    """A copy of ``a`` laid out in memory as ``template`` (same shape)."""
    out = xp.empty_like(template, dtype=a.dtype)
    out[...] = a
    return out


def _window_slices(kernel: tuple, dilation: tuple, stride: tuple, counts: tuple) -> Any:
    """For each kernel element (row-major): its number and the strided slices of the padded
    input that its element of every window covers."""
    for o, offset in enumerate(itertools.product(*(range(k) for k in kernel))):
        yield o, offset, tuple(slice(i * d, i * d + s * (m - 1) + 1, s) for i, d, s, m in
                               zip(offset, dilation, stride, counts, strict=True))


class _WindowOp(Primitive):
    """Base of the pair moving values between pooling windows and the window element
    ``window`` names (what ``max_pool_window`` found): each is linear in its first input and
    the other's vjp; the window (input 1) has no gradient."""

    save_inputs = True

    def reads(self, ctx, i):
        return i == 1  # only the window; the values are never read back

    def params_of(self, ctx):
        return {k: v for k, v in ctx.params.items() if k != "size"}


@primitive
class WindowGather(_WindowOp):
    """(N, C, *spatial) values and (N, C, *counts) window elements → (N, C, *counts): the
    value at each window's chosen element (max pooling's values)."""

    name = "window_gather"

    def forward(self, xp, x, window, *, kernel_size, stride, padding, dilation):
        counts = window.shape[2:]
        view = windows(xp, x, kernel_size, dilation, padding, stride, counts)
        lead = (slice(None), slice(None))
        out = xp.zeros_like(window, dtype=x.dtype)
        for o, offset, _ in _window_slices(kernel_size, dilation, stride, counts):
            xp.copyto(out, view[lead + offset], where=window == o)
        return out

    def infer(self, x, window, **params):
        return TensorSpec(tuple(window.shape), x.dtype)

    def vjp(self, ctx, g):
        x, window = ctx.inputs
        return apply(WindowScatter, g, window, size=tuple(x.shape[2:]), **ctx.params), None

    def jvp(self, ctx, dx, dwindow):
        return apply(WindowGather, dx, ctx.inputs[1], **ctx.params)


@primitive
class WindowScatter(_WindowOp):
    """(N, C, *counts) values and window elements → (N, C, *size): each value added at its
    window's chosen element, zeros elsewhere (max pooling's gradient)."""

    name = "window_scatter"
    allocates = True

    def forward(self, xp, g, window, *, size, kernel_size, stride, padding, dilation):
        looped = max_pool_kernel.window_scatter(xp, g, window, size, kernel_size, stride,
                                                padding, dilation)
        if looped is not None:
            return looped
        counts = window.shape[2:]
        # in the pooled input's memory order (the window's), which the ops around it share
        canvas = xp.zeros_like(window, dtype=g.dtype, shape=g.shape[:2] + tuple(
            n + lo + max(hi, 0) for n, (lo, hi) in zip(size, padding, strict=True)))
        lead = (slice(None), slice(None))
        overlap = any(s < d * (k - 1) + 1 for s, d, k in zip(stride, dilation, kernel_size,
                                                             strict=True))
        if g.flags.c_contiguous != window.flags.c_contiguous:
            # g in the window's memory order first (a copy of the small side): mixed layouts
            # make every strided pass below several times slower
            g = _in_order_of(xp, window, g)
        # g·mask is branch-free (fast) but turns a non-finite g into NaN where the mask is 0
        exact = not holds_floats(g) or not g.size or bool(xp.isfinite(g).all())
        for o, _, where in _window_slices(kernel_size, dilation, stride, counts):
            part = canvas[lead + where]
            hit = window == o
            if not exact:
                xp.add(part, g, out=part, where=hit)
            elif overlap:
                part += g * hit
            else:  # each canvas element belongs to at most one window
                xp.multiply(g, hit, out=part)
        if not any(lo or hi for lo, hi in padding):
            return canvas
        return canvas[lead + tuple(slice(lo, lo + n) for n, (lo, _) in
                                   zip(size, padding, strict=True))].copy(order="K")

    def infer(self, g, window, *, size, **params):
        return TensorSpec(tuple(g.shape[:2]) + tuple(size), g.dtype)

    def vjp(self, ctx, g):
        return apply(WindowGather, g, ctx.inputs[1], **self.params_of(ctx)), None

    def jvp(self, ctx, dg, dwindow):
        return apply(WindowScatter, dg, ctx.inputs[1], **ctx.params)


@primitive
class WindowSum(Primitive):
    """(N, C, *spatial) → (N, C, *counts): each window's sum (no padding, every window inside
    the input), its elements added in the kernel's row-major order, the first one copied:
    what summing unfold's (N, C, ∏kernel, L) columns over the kernel does (the same values),
    without copying the columns (average pooling's forward: the unfold copy was a third of
    its step). Linear; ``window_spread`` is its transpose."""

    name = "window_sum"
    save_inputs = False
    complex_grad = True

    def forward(self, xp, x, *, kernel_size, stride, counts):
        ones = (1,) * len(kernel_size)
        lead = (slice(None), slice(None))
        out = None
        for _, _, where in _window_slices(kernel_size, ones, stride, counts):
            part = x[lead + where]
            if out is None:
                out = xp.array(part, order="C")
            else:
                out += part
        return out

    def infer(self, x, *, kernel_size, stride, counts):
        return TensorSpec(tuple(x.shape[:2]) + tuple(counts), x.dtype)

    def vjp(self, ctx, g):
        return apply(WindowSpread, g, size=tuple(ctx.inputs[0].shape[2:]), **ctx.params)

    def jvp(self, ctx, dx):
        return apply(WindowSum, dx, **ctx.params)

    def flops(self, x, *, kernel_size, stride, counts):
        return (prod(kernel_size) - 1) * prod(x.shape[:2]) * prod(counts)


@primitive
class WindowSpread(Primitive):
    """(N, C, *counts) → (N, C, *size): each value added to every element of its window,
    offset by offset in the kernel's row-major order into zeros (as ``fold`` adds unfold's
    columns), the transpose of ``window_sum``."""

    name = "window_spread"
    save_inputs = False
    complex_grad = True
    allocates = True

    def forward(self, xp, g, *, size, kernel_size, stride, counts):
        out = xp.zeros(tuple(g.shape[:2]) + tuple(size), g.dtype)
        lead = (slice(None), slice(None))
        for _, _, where in _window_slices(kernel_size, (1,) * len(kernel_size), stride,
                                          counts):
            out[lead + where] += g
        return out

    def infer(self, g, *, size, kernel_size, stride, counts):
        return TensorSpec(tuple(g.shape[:2]) + tuple(size), g.dtype)

    def vjp(self, ctx, gg):
        params = {k: v for k, v in ctx.params.items() if k != "size"}
        return apply(WindowSum, gg, **params)

    def jvp(self, ctx, dg):
        return apply(WindowSpread, dg, **ctx.params)

    def flops(self, g, *, size, kernel_size, stride, counts):
        return prod(kernel_size) * prod(g.shape)


def window_sums(x: Tensor, kernel: tuple, stride: tuple, counts: tuple) -> Tensor | None:
    """``window_sum`` of ``x`` (windows inside it), or None where unfold's columns are to be
    summed instead: under a transform (jit, vmap, forward mode know those ops; observers are
    fine), or for a single window (NumPy then sums its column pairwise, in another order)."""
    if (DISPATCH.handler is not None and not DISPATCH.only_observers()) or prod(counts) < 2:
        return None
    return apply(WindowSum, x, kernel_size=kernel, stride=stride, counts=counts)
