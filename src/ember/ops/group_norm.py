"""Group norm as one primitive with its affine part, and its backward as another.

``group_norm(x, weight, bias)`` normalises each sample's channels in ``groups`` groups of
consecutive channels and returns ``(out, mean, rstd)`` with (N, groups) statistics, PyTorch's
``native_group_norm``; its backward, ``group_norm_grad``, gives the input's, weight's and bias's
gradients from the input and the statistics. In numba (:mod:`ember.ops.group_norm_numba`) each
is one visit of every group, where the composite ``standardize``, a per-channel ``mul`` and
``add`` and their backward (two per-channel sums) make about ten passes over the activation
and record six tape nodes. The rules of both are written in Ember ops, so gradients of every
order follow.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.backend import compiled, parallel
from ember.errors import DTypeError, ShapeError
from ember.layouts import contiguous_format, suggested_format
from ember.ops.convert import contiguous
from ember.ops.creation import ones, zeros
from ember.ops.layer_norm import check_gradient_dtypes
from ember.ops.normalization import (
    _check_float,
    _per_channel,
    half_with_float_params,
)
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive
from ember.ops.standardize import StandardizeGrad
from ember.ops.unary import in_float32
from ember.tensor import Tensor

__all__ = ["group_norm"]

_KERNELS = compiled.register("ember.ops.group_norm_numba")
_SHARE = 1 << 17  # elements a piece of parallel.run takes at least (as rows_kernel's)


def _kernels(xp: Any, x: Any, weight: Any, *others: Any) -> Any:
    """numba's module of group-norm kernels if they take these arrays (NumPy float32/float64
    of one dtype, something to normalise), else None."""
    if xp is not np or x.dtype not in (np.float32, np.float64) or x.size == 0 or \
            any(a.dtype != x.dtype for a in (weight, *others)) or not compiled.numba_enabled():
        return None
    return compiled.load(_KERNELS)


def _rows(a: Any, n: int) -> Any:
    """``a`` as (n, …) rows, C-contiguous and writable, as the kernels take it (a broadcast
    gradient, a memory-mapped input: one copy)."""
    a = np.ascontiguousarray(a).reshape(n, -1)
    return a if a.flags.writeable else a.copy()


def _least(width: int) -> int:
    """Samples of ``width`` values a piece of :func:`ember.backend.parallel.run` takes at
    least."""
    return -(-_SHARE // max(width, 1))


def _grouped(t: Tensor, groups: int) -> Tensor:
    """An (N, C, …) tensor as (N, groups, C·…/groups)."""
    n = t.shape[0]
    return t.reshape((n, groups, t.numel() // max(n * groups, 1)))


def _channel_sum(t: Tensor) -> Tensor:
    """The (C,) sum over every dimension of an (N, C, …) tensor but the channels."""
    return t.sum((0, *range(2, t.ndim)))


def _check(op: str, x: Any, weight: Any, *others: Any) -> None:
    """An (N, C, …) input with (C,) weight (and bias), all of one dtype."""
    c = x.shape[1] if len(x.shape) > 1 else None
    if c is None or any(tuple(v.shape) != (c,) for v in (weight, *others)):
        raise ShapeError(f"{op}: input {tuple(x.shape)} needs (C,) weight and bias, got "
                         f"{', '.join(str(tuple(v.shape)) for v in (weight, *others))}")
    if any(v.dtype is not x.dtype for v in (weight, *others)):
        raise DTypeError(f"{op}: input {x.dtype.name} and weight/bias "
                         f"{', '.join(v.dtype.name for v in (weight, *others))} must share one "
                         f"dtype")


@primitive
class GroupNorm(Primitive):
    """``(x - mean)·rstd·weight + bias`` per channel, the statistics over each sample's
    ``groups`` groups of consecutive channels (biased variance, ``rstd = 1/sqrt(var +
    eps)``), with ``mean`` and ``rstd`` ((N, groups)) as outputs. Its backward reads the input
    and the statistics (not the normalised values)."""

    name = "group_norm"
    backward_name = "NativeGroupNormBackward0"  # PyTorch's
    nout = 3
    save_outputs = (1, 2)  # the statistics; the output itself is not read
    allocates = True  # (the output and the statistics are new arrays on every path)

    @in_float32
    def forward(self, xp, x, weight, bias, *, groups, eps):
        n = x.shape[0]
        if x.size == 0:  # statistics of nothing are NaN (without NumPy's empty-mean warning)
            stat = xp.full((n, groups), xp.nan, x.dtype)
            return xp.empty_like(x), stat, stat.copy()
        kernels = _kernels(xp, x, weight, bias)
        if kernels is not None:
            rows = _rows(x, n)
            out, mean, rstd = np.empty_like(rows), np.empty((n, groups), x.dtype), \
                np.empty((n, groups), x.dtype)
            parallel.over_rows(kernels.group_norm_rows, [rows, out, mean, rstd],
                               _least(rows.shape[1]), np.ascontiguousarray(weight),
                               np.ascontiguousarray(bias), float(eps))
            return out.reshape(x.shape), mean, rstd
        grouped = x.reshape(n, groups, -1)
        mean = grouped.mean(axis=2, keepdims=True)
        centred = grouped - mean
        rstd = 1 / xp.sqrt(xp.square(centred).mean(axis=2, keepdims=True) + eps)
        out = (centred * rstd).reshape(x.shape)
        shape = (-1,) + (1,) * (x.ndim - 2)
        out *= weight.reshape(shape)
        out += bias.reshape(shape)
        return out, mean.reshape(n, groups), rstd.reshape(n, groups)

    def infer(self, x, weight, bias, *, groups, eps):
        _check("group_norm", x, weight, bias)
        if groups <= 0 or x.shape[1] % groups:
            raise ShapeError(f"group_norm: {x.shape[1]} channels cannot be split into {groups} "
                             f"groups (input shape {tuple(x.shape)})")
        stat = TensorSpec((x.shape[0], groups), x.dtype)
        return x, stat, stat

    def reads(self, ctx, i):
        return i != 2  # not the bias

    def vjp(self, ctx, g, g_mean=None, g_rstd=None):
        x, weight, _ = ctx.inputs
        mean, rstd = ctx.output(1), ctx.output(2)
        groups = ctx.params["groups"]
        n = x.numel() // max(x.shape[0] * groups, 1)  # values per group
        gx = g_weight = g_bias = None
        if g is not None:
            gx, g_weight, g_bias = apply(GroupNormGrad, g, x, mean, rstd, weight)
        stat = (x.shape[0], groups, 1)
        if g_mean is not None:  # mean = Σx / n
            term = (g_mean.reshape(stat) / n).expand(stat[:2] + (n,)).reshape(tuple(x.shape))
            gx = term if gx is None else gx + term
        if g_rstd is not None:  # rstd = (Σ(x - mean)² / n + eps)^-½
            r = rstd.reshape(stat)
            term = (_grouped(x, groups) - mean.reshape(stat)) * \
                (g_rstd.reshape(stat) * r * r * r * (-1 / n))
            gx = term.reshape(tuple(x.shape)) if gx is None else gx + term.reshape(tuple(x.shape))
        return gx, g_weight, g_bias

    def jvp(self, ctx, dx, dweight, dbias):
        x, weight, _ = ctx.inputs
        groups = ctx.params["groups"]
        stat = (x.shape[0], groups, 1)
        mean, rstd = ctx.output(1).reshape(stat), ctx.output(2).reshape(stat)
        xhat = (_grouped(x, groups) - mean) * rstd
        dgrouped = _grouped(dx, groups)
        dxhat = apply(StandardizeGrad, dgrouped, xhat, rstd, dims=(2,)).reshape(tuple(x.shape))
        d_rstd = -rstd * rstd * (dgrouped * xhat).mean(2, keepdim=True)
        xhat = xhat.reshape(tuple(x.shape))
        out = dxhat * _per_channel(weight, x.ndim) + xhat * _per_channel(dweight, x.ndim) + \
            _per_channel(dbias, x.ndim)
        return out, dgrouped.mean(2), d_rstd.reshape(stat[:2])


@primitive
class GroupNormGrad(Primitive):
    """Group norm's backward: for the output gradient ``g``, the input ``x``, its (N, groups)
    ``mean`` and ``rstd`` and the (C,) ``weight``, the input gradient ``rstd·(h - mean(h) -
    x̂·mean(h·x̂))`` over each group (``h = g·weight``, ``x̂ = (x - mean)·rstd``), the weight's
    ``Σ g·x̂`` and the bias's ``Σ g`` per channel. One numba visit of each group, each core
    adding its samples' sums."""

    name = "group_norm_grad"
    nout = 3
    allocates = True  # (the gradients are new arrays on every path; the sums copy)

    @in_float32
    def forward(self, xp, g, x, mean, rstd, weight):
        (n, groups), c = mean.shape, weight.shape[0]
        if x.size == 0:
            return xp.empty_like(g), xp.zeros(c, g.dtype), xp.zeros(c, g.dtype)
        kernels = _kernels(xp, x, weight, g, mean, rstd)
        if kernels is not None:
            rows, stats = [_rows(a, n) for a in (g, x)], [_rows(a, n) for a in (mean, rstd)]
            dx = np.empty_like(rows[0])
            blocks = parallel.blocks(n, parallel.share_count(n, _least(rows[0].shape[1])))
            g_weight, g_bias = parallel.sums_over_blocks(
                kernels.group_norm_grad_rows, blocks, c, [*rows, *stats, dx],
                np.ascontiguousarray(weight))
            return dx.reshape(x.shape), g_weight.astype(g.dtype), g_bias.astype(g.dtype)
        stat = (n, groups, 1)
        xhat = (x.reshape(n, groups, -1) - mean.reshape(stat)) * rstd.reshape(stat)
        h = (g * weight.reshape((-1,) + (1,) * (x.ndim - 2))).reshape(n, groups, -1)
        dx = h - h.mean(axis=2, keepdims=True)
        dx -= xhat * (h * xhat).mean(axis=2, keepdims=True)
        dx *= rstd.reshape(stat)
        per_channel = (n, c, -1)
        return dx.reshape(x.shape), \
            (g.reshape(per_channel) * xhat.reshape(per_channel)).sum(axis=(0, 2)), \
            g.reshape(per_channel).sum(axis=(0, 2))

    def infer(self, g, x, mean, rstd, weight):
        _check("group_norm_grad", x, weight)
        stat = mean.shape
        if g.shape != x.shape or len(stat) != 2 or rstd.shape != stat or \
                stat[0] != x.shape[0] or stat[1] <= 0 or x.shape[1] % stat[1]:
            raise ShapeError(f"group_norm_grad: the gradient {g.shape}, input {x.shape}, mean "
                             f"{mean.shape} and rstd {rstd.shape} do not match (statistics: "
                             f"(N, groups), groups dividing the channels)")
        check_gradient_dtypes("group_norm_grad", g, x, mean, rstd)
        return x, weight, weight

    def _parts(self, ctx):
        """The grouped centred input, ``x̂``, ``h = g·weight``, ``rstd`` and ``mean(h·x̂)``
        (N, groups, 1), and ``rstd·dx``'s factor ``h - mean(h) - x̂·mean(h·x̂)``, all grouped
        (N, groups, n)."""
        g, x, mean, rstd, weight = ctx.inputs
        groups = mean.shape[1]
        stat = (x.shape[0], groups, 1)
        rstd = rstd.reshape(stat)
        centred = _grouped(x, groups) - mean.reshape(stat)
        xhat, h = centred * rstd, _grouped(g * _per_channel(weight, x.ndim), groups)
        mean_hx = (h * xhat).mean(2, keepdim=True)
        return centred, xhat, h, rstd, mean_hx, h - h.mean(2, keepdim=True) - xhat * mean_hx

    def vjp(self, ctx, u, u_weight=None, u_bias=None):
        g, x, mean, rstd, weight = ctx.inputs
        groups, shape = mean.shape[1], tuple(x.shape)
        centred, xhat, h, rstd, mean_hx, inner = self._parts(ctx)
        gg = g_xhat = g_rstd = g_weight = None
        if u is not None:  # through dx = standardize_grad(h, x̂, rstd) per group
            ug = _grouped(u, groups)
            g_h = apply(StandardizeGrad, ug, xhat, rstd, dims=(2,)).reshape(shape)
            gg, g_weight = g_h * _per_channel(weight, x.ndim), _channel_sum(g_h * g)
            g_xhat = -rstd * (ug * mean_hx + h * (ug * xhat).mean(2, keepdim=True))
            g_rstd = (ug * inner).sum(2, keepdim=True)
        if u_weight is not None:  # Σ g·x̂
            part = xhat.reshape(shape) * _per_channel(u_weight, x.ndim)
            gg = part if gg is None else gg + part
            part = _grouped(g * _per_channel(u_weight, x.ndim), groups)
            g_xhat = part if g_xhat is None else g_xhat + part
        if u_bias is not None:  # Σ g
            part = _per_channel(u_bias, x.ndim).expand(shape)
            gg = part if gg is None else gg + part
        gx = g_mean = None
        if g_xhat is not None:  # x̂ = (x - mean)·rstd
            gx = (g_xhat * rstd).reshape(shape)
            g_mean = -(g_xhat.sum(2, keepdim=True) * rstd).reshape(tuple(mean.shape))
            part = (g_xhat * centred).sum(2, keepdim=True)
            g_rstd = part if g_rstd is None else g_rstd + part
        if g_rstd is not None:
            g_rstd = g_rstd.reshape(tuple(mean.shape))
        return gg, gx, g_mean, g_rstd, g_weight

    def jvp(self, ctx, dg, dx, dmean, drstd, dweight):
        g, x, mean, _, weight = ctx.inputs
        groups, shape = mean.shape[1], tuple(x.shape)
        centred, xhat, h, rstd, mean_hx, inner = self._parts(ctx)
        stat = (x.shape[0], groups, 1)
        drstd = drstd.reshape(stat)
        dxhat = (_grouped(dx, groups) - dmean.reshape(stat)) * rstd + centred * drstd
        dh = _grouped(dg * _per_channel(weight, x.ndim) + g * _per_channel(dweight, x.ndim),
                      groups)
        d_dx = apply(StandardizeGrad, dh, xhat, rstd, dims=(2,)) + drstd * inner - \
            rstd * (dxhat * mean_hx + xhat * (h * dxhat).mean(2, keepdim=True))
        return d_dx.reshape(shape), \
            _channel_sum(dg * xhat.reshape(shape) + g * dxhat.reshape(shape)), _channel_sum(dg)


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalises each sample's channels in ``num_groups`` groups, then scales and shifts
    per channel.

    Example:
        >>> F.group_norm(ember.randn(2, 6, 4, 4), 3).shape
        ember.Size([2, 6, 4, 4])
    """
    _check_float("group_norm", input)
    if half_with_float_params(input, weight, bias):
        return group_norm(input.float(), num_groups, weight, bias, eps).to(input.dtype)
    if input.ndim < 2:
        raise ShapeError(f"group_norm: expected an (N, C, …) input, got shape "
                         f"{tuple(input.shape)}")
    n, c = input.shape[:2]
    if num_groups <= 0 or c % num_groups:
        raise ShapeError(f"group_norm: {c} channels cannot be split into {num_groups} groups "
                         f"(input shape {tuple(input.shape)})")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != (c,):
            raise ShapeError(f"group_norm: {name} has shape {tuple(t.shape)}, expected ({c},)")
    # the kernels read C order; a channels-last(-3d) input's result is laid out so, as
    # PyTorch's (its suggest_memory_format)
    fmt = contiguous_format if input._data.flags.c_contiguous else suggested_format(input._data)
    input = contiguous(input)
    # one fused op: weight and bias have the input's dtype here (half_with_float_params cast
    # a half input with float32 ones to float32 above and refused any other mix, under
    # autocast too, as its policy leaves group norm alone, as PyTorch's CPU autocast)
    weight = ones((c,), dtype=input.dtype, device=input.device) if weight is None else weight
    bias = zeros((c,), dtype=input.dtype, device=input.device) if bias is None else bias
    out = apply(GroupNorm, input, weight, bias, groups=int(num_groups), eps=float(eps))[0]
    return out if fmt is contiguous_format else contiguous(out, memory_format=fmt)
