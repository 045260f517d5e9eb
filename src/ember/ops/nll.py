"""``nll_loss`` of class indices as one primitive: the gather of each target's
log-probability, the ``ignore_index`` mask, the class weights and the reduction in one
forward (``cross_entropy`` and ``nll_loss`` called eagerly took 12 primitives for that, each
paying the per-op overhead). The loss is linear in the input: its gradient is the
``nll_loss_backward`` primitive (the weights scattered at the targets), whose own gradient is
``nll_loss`` again, each the other's transpose, and each one's tangent is itself applied to
the tangent; so every order of derivative follows. With ``smoothing`` (cross_entropy's
``label_smoothing``) each also carries the uniform part, ``-Σ_c weight[c]·x[c]`` per kept
target, mixed in as the composite mixes it (26 primitives a step before, 5 now). Under a
transform (jit tracing, vmap, forward mode, autocast) the losses use the composite of
:mod:`ember.ops.loss` instead, which those already know (and export lowers).

Example:
    >>> logp = ember.tensor([[-0.1, -2.0], [-1.5, -0.3]])
    >>> nll(logp, ember.tensor([0, 1]), None, ignore_index=-100, reduction="mean",
    ...     op="nll_loss")
    tensor(0.2000)
"""

from __future__ import annotations

import numpy as np

from ember import dtypes
from ember.errors import DTypeError, ShapeError
from ember.ops.gather import class_out_of_range
from ember.ops.index_checks import first_out_of_range
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive
from ember.ops.reduce import Sum, accumulator
from ember.ops.unary import in_float32
from ember.tensor import Tensor

__all__: list[str] = []


def check_class_targets(op: str, input: Tensor | TensorSpec, target: Tensor | TensorSpec,
                        weight: Tensor | TensorSpec | None) -> int:
    """Refuses class-index targets (and class weights) that do not fit ``input``; returns
    the number of classes. Tensors or an infer rule's specs."""
    if target.dtype.name not in ("int64", "uint8"):
        raise DTypeError(f"{op}: class-index targets must be int64 (or uint8), as in "
                         f"PyTorch, got {target.dtype.name}. Hint: convert them with .long()")
    shape = tuple(input.shape)
    batched = len(shape) >= 2
    c = shape[1] if batched else shape[0]
    want = (shape[0],) + shape[2:] if batched else ()
    if tuple(target.shape) != want:
        raise ShapeError(f"{op}: input of shape {shape} (N, C, …) needs a target of "
                         f"shape {want}, got {tuple(target.shape)}")
    if weight is not None and tuple(weight.shape) != (c,):
        raise ShapeError(f"{op}: weight has shape {tuple(weight.shape)} but there are {c} "
                         f"classes; expected ({c},)")
    return c


@primitive
class Nll(Primitive):
    """``-weight[t]·x[t]`` for each target ``t`` along the class dim (1, or 0 for a (C,)
    input), 0 where ``t == ignore_index``; reduced by 'sum', 'mean' (over the summed weights
    of the kept targets, as PyTorch) or 'none'. Inputs: log-probabilities, int64 targets and
    optionally the (C,) class weights, in the input's dtype."""

    name = "nll_loss"
    backward_name = "NllLossBackward0"
    jvp_takes_none = True

    @in_float32
    def forward(self, xp, x, t, w=None, *, ignore_index, reduction, op, smoothing=0.0):
        dim = 1 if x.ndim >= 2 else 0
        valid, safe, weights = _targets(xp, t, w, x.shape[dim], x.dtype, ignore_index, op)
        if x.ndim == 2:  # (a fancy index: ~4x faster than take_along_axis here)
            picked = x[xp.arange(x.shape[0]), safe]
        elif x.ndim == 1:
            picked = x[safe]
        else:
            picked = xp.take_along_axis(x, xp.expand_dims(safe, dim), axis=dim).squeeze(dim)
        loss = _reduced(xp, _kept(xp, valid, -_weighted(picked, valid, weights)), valid, weights,
                        reduction)
        if not smoothing:
            return loss
        # the composite's steps, in its order: loss·(1-ε) + reduce(where(valid, -Σ_c w·x,
        # 0))·(ε/C), so that the two agree bit for bit
        spread = x if w is None else x * w.reshape(w.shape + (1,) * (x.ndim - dim - 1))
        spread = Sum.forward(xp, spread, dims=(dim,), keepdim=False)
        uniform = _reduced(xp, _kept(xp, valid, -spread), valid, weights, reduction)
        keep, spread_share = _shares(x.dtype, smoothing, x.shape[dim])
        return loss * keep + uniform * spread_share

    def infer(self, x, t, w=None, *, ignore_index, reduction, op, smoothing=0.0):
        if x.dtype.category != dtypes.FLOAT or x.dtype.is_complex:
            raise DTypeError(f"{op}: expected a floating input, got {x.dtype.name}")
        if not x.shape:
            raise ShapeError(f"{op}: expected an input of shape (C,), (N, C) or (N, C, d1, …), "
                             "got a 0-d tensor")
        check_class_targets(op, x, t, w)
        if t.dtype is not dtypes.int64 or (w is not None and w.dtype is not x.dtype):
            raise DTypeError(f"{op}: the fused loss takes int64 targets and weights of the "
                             f"input's dtype {x.dtype.name}, got {t.dtype.name} targets"
                             + ("" if w is None else f" and {w.dtype.name} weights"))
        return TensorSpec(tuple(t.shape) if reduction == "none" else (), x.dtype)

    def reads(self, ctx, i):
        return i != 0  # (the gradient never reads the log-probabilities)

    def vjp(self, ctx, g):
        x, *rest = ctx.inputs
        return (apply(NllBackward, g, *rest, shape=tuple(x.shape), **ctx.params),) + \
            (None,) * len(rest)

    def jvp(self, ctx, dx, *_):
        if dx is None:
            return None
        return apply(Nll, dx, *ctx.inputs[1:], **ctx.params)

    def flops(self, x, t, w=None, **params):
        return 2 * int(np.prod(t.shape))


@primitive
class NllBackward(Primitive):
    """The gradient of :class:`Nll` in its input, of ``shape``: zeros but ``-weight[t]·g``
    (over the summed weights for 'mean') at each kept target ``t``. Linear in ``g``, and
    :class:`Nll` is its transpose: each is the other's vjp."""

    name = "nll_loss_backward"
    jvp_takes_none = True
    allocates = True

    @in_float32
    def forward(self, xp, g, t, w=None, *, shape, ignore_index, reduction, op, smoothing=0.0):
        dim = 1 if len(shape) >= 2 else 0
        valid, safe, weights = _targets(xp, t, w, shape[dim], g.dtype, ignore_index, op)
        if smoothing:  # (the composite's gradient steps, in its order: see Nll)
            keep, spread_share = _shares(g.dtype, smoothing, shape[dim])
            g, uniform = g * keep, g * spread_share
            if reduction == "mean":
                uniform = _divide(xp, uniform, _total(xp, valid, weights, t.size))
            uniform = -_kept(xp, valid, uniform)  # (per target, or one number: see _targets)
            uniform = xp.expand_dims(uniform, dim) if uniform.ndim else uniform
            if w is not None:
                uniform = uniform * w.reshape(w.shape + (1,) * (len(shape) - dim - 1))
        if reduction == "mean":
            g = _divide(xp, g, _total(xp, valid, weights, t.size))
        out = xp.zeros(shape, g.dtype)
        src = _kept(xp, valid, -_weighted(g, valid, weights))
        if len(shape) == 2:  # (a fancy index, as the forward's: ~4x faster than put_along)
            out[xp.arange(shape[0]), safe] = src
        else:
            xp.put_along_axis(out, xp.expand_dims(safe, dim), xp.expand_dims(src, dim), axis=dim)
        if smoothing:
            out += uniform
        return out

    def infer(self, g, t, w=None, *, shape, ignore_index, reduction, op, smoothing=0.0):
        return TensorSpec(tuple(shape), g.dtype)

    def reads(self, ctx, i):
        return i != 0

    def vjp(self, ctx, gg):
        rest = ctx.inputs[1:]
        params = {k: v for k, v in ctx.params.items() if k != "shape"}
        return (apply(Nll, gg, *rest, **params),) + (None,) * len(rest)

    def jvp(self, ctx, dg, *_):
        if dg is None:
            return None
        return apply(NllBackward, dg, *ctx.inputs[1:], **ctx.params)


def _targets(xp, t, w, classes: int, dtype, ignore_index: int, op: str) -> tuple:
    """The mask of kept targets, the targets with ignored ones read as class 0 (checked to lie
    in ``[0, classes)``), and each target's weight (0 where ignored). Where every target of an
    (N, C) input is kept (``ignore_index`` outside ``[0, classes)`` and every target inside;
    the common case), the mask is None and the weights are ``dtype``'s 1, or ``w[t]`` with
    class weights: the same values, four or five NumPy calls fewer in each of the loss and
    its gradient (~1 µs each; the gradient's terms of a reduced loss are one number)."""
    if xp is np and t.ndim == 1 and t.size <= _EXACT_COUNT and \
            not 0 <= ignore_index < classes and first_out_of_range(t, classes) is None:
        return None, t, (dtype.type(1) if w is None else w[t])
    valid = t != ignore_index
    safe = xp.where(valid, t, 0)
    bad = first_out_of_range(safe, classes)
    if bad is not None:
        raise class_out_of_range(op, "target class", bad, classes, ignore_index)
    return valid, safe, (valid.astype(dtype) if w is None else w[safe] * valid)


def _kept(xp, valid, a):
    """``a`` where ``valid`` (a mask of :func:`_targets`), else 0."""
    return a if valid is None else xp.where(valid, a, a.dtype.type(0))


def _weighted(a, valid, weights):
    """``a·weights`` (:func:`_targets`' mask and weights); all-ones weights (no mask, no class
    weights: one 0-d 1) leave ``a`` as it is, the same bits as ``a·1``, one ufunc call less
    (~0.5 µs) in each of the loss and its gradient."""
    return a if valid is None and not weights.ndim else a * weights


def _total(xp, valid, weights, count: int):
    """The summed ``weights`` of ``count`` targets (:func:`_targets`' mask and weights)."""
    return weights.dtype.type(count) if valid is None and not weights.ndim else \
        _sum(xp, weights)


_EXACT_COUNT = 1 << 24  # (a float32 sum of this many ones is exact: it equals their count)


def _reduced(xp, loss, valid, weights, reduction: str):
    """Per-target ``loss`` reduced: 'mean' over the summed ``weights`` of the kept ones."""
    if reduction == "none":
        return loss
    total = _sum(xp, loss)
    return total if reduction == "sum" else \
        _divide(xp, total, _total(xp, valid, weights, loss.size))


def _shares(dtype, smoothing: float, classes: int) -> tuple:
    """The parts of the target's class and of the uniform distribution, ``1 - ε`` and
    ``ε / C``, in ``dtype`` (as the composite's Python numbers become)."""
    return dtype.type(1 - smoothing), dtype.type(smoothing / classes)


def _sum(xp, a):
    """``a``'s sum in its dtype, accumulated as :class:`ember.ops.reduce.Sum` does."""
    acc = accumulator(a.dtype)
    total = xp.add.reduce(a, axis=None, dtype=acc)
    return total if acc == a.dtype else total.astype(a.dtype)


def _divide(xp, a, total_weight):
    """``a / total_weight``; a zero total weight (every target ignored) gives NaN or inf, as
    in PyTorch, without NumPy's warning. (``/``, not ``true_divide``: the same quotient, and
    of two NumPy scalars, a reduced loss over its count, ~1 µs less.)"""
    if xp is not np or total_weight:
        return a / total_weight
    with np.errstate(invalid="ignore", divide="ignore"):
        return a / total_weight


def nll(input: Tensor, target: Tensor, weight: Tensor | None, *, ignore_index: int,
        reduction: str, op: str, smoothing: float = 0.0) -> Tensor:
    """The ``nll_loss`` primitive on int64 ``target`` (checked by the caller), with
    ``label_smoothing`` ``smoothing`` of a float32 or float64 ``input``."""
    extra = {"smoothing": float(smoothing)} if smoothing else {}
    if weight is None:
        return apply(Nll, input, target, ignore_index=ignore_index, reduction=reduction, op=op,
                     **extra)
    return apply(Nll, input, target, weight.detach(), ignore_index=ignore_index,
                 reduction=reduction, op=op, **extra)
