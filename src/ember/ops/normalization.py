"""Normalisation layers' functions: rms_norm, batch_norm, instance_norm, and ``normalize``
(rescaling to unit L_p norm); layer_norm and group_norm are in :mod:`ember.ops.layer_norm` and
:mod:`ember.ops.group_norm`.

Batch and instance norm (and layer and group norm without a fused affine part) share one
primitive, ``standardize`` (:mod:`ember.ops.standardize`: the normalised values with the mean
and variance; its classes are importable from here too), whose rules are written in Ember ops,
so gradients of every order follow; the affine part and the others are composites. Training
batch norm with its affine part is one primitive, ``batch_norm``. Batch and
instance norm in training update the running statistics in place, outside autograd, with the
unbiased batch variance as PyTorch does; batch norm updates them before saved-tensor hooks pack
its values, as PyTorch's kernel (a checkpoint's recompute updates them again, as PyTorch's).
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from math import prod
from typing import Any

import numpy as np

from ember import dtypes
from ember.autograd.grad_mode import GRAD, no_grad, refuse_inference_write
from ember.autograd.saved_hooks import packed_on_exit
from ember.backend import gemm
from ember.errors import (
    ArgumentError,
    BatchedWriteError,
    DTypeError,
    ShapeError,
    is_complex_input,
    is_floating_input,
)
from ember.layouts import channels_last, channels_last_3d, format_of
from ember.ops import batch_norm_eval, batch_norm_kernel
from ember.ops.batch_norm_grad import batch_norm_input_grad, plain_coefficients
from ember.ops.convert import HALF, contiguous, laid_out_like
from ember.ops.inplace import inplace
from ember.ops.int_args import as_ints
from ember.ops.norms import vector_norm
from ember.ops.out_arg import torch_dtype_name, with_out
from ember.ops.overrides import TENSOR_LIKE, handle
from ember.ops.primitive import DISPATCH, Primitive, TensorSpec, apply, primitive
from ember.ops.select import where
from ember.ops.standardize import Standardize, StandardizeGrad, _standardize  # noqa: F401
from ember.ops.unary import _HALF, in_float32
from ember.tensor import Tensor, _wrap

# batch_norm and instance_norm stay out of ``ember.*``: torch's top-level forms order their
# arguments differently; they are in ember.nn.functional
__all__ = ["rms_norm"]


def _check_float(op: str, x: Tensor) -> None:
    if not is_floating_input(op, "input", x):
        raise DTypeError(f"{op}: expected a floating input, got {x.dtype.name}")


def half_with_float_params(input: Tensor, *params: Tensor | None) -> bool:
    """Whether a norm of ``input`` with ``params`` (weight, bias, running statistics) runs in
    float32: float32 ones with a float16 or bfloat16 input, as PyTorch's CPU kernels allow
    (the caller returns the input's dtype), under autocast too (PyTorch's CPU autocast
    leaves the norms alone). Other mixes raise PyTorch's errors.

    Example:
        >>> half_with_float_params(ember.ones(2, 3).half(), ember.ones(3))
        True
    """
    if not isinstance(input.dtype, dtypes.DType):  # (quantized: refused)
        return False
    given = [p for p in params if p is not None]
    if not given or given[0].dtype == input.dtype:
        for p in given[1:]:
            if p.dtype != input.dtype:
                raise RuntimeError(f"expected scalar type {torch_dtype_name(input.dtype)} but "
                                   f"found {torch_dtype_name(p.dtype)}")
        return False
    if any(p.dtype != dtypes.float32 for p in given):
        raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")
    if input.dtype not in HALF:
        raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")
    return True


def _check_momentum(op: str, momentum: Any) -> None:
    """The functional forms take a number (or a 0-d tensor), as PyTorch's do: None (a
    cumulative average) is the layers' option, which they turn into ``1 / batches``."""
    if isinstance(momentum, bool) or not isinstance(momentum, numbers.Real | Tensor):
        raise DTypeError(f"{op}: momentum must be a number, got {type(momentum).__name__}. "
                         f"Hint: momentum=None (a cumulative moving average) is an option of "
                         f"the nn layers, not of F.{op}")


def _channel_mean(xp: Any, a: Any, dims: tuple[int, ...]) -> Any:
    """The mean over every dimension but the channels (kept as size 1): one GEMV when those
    lead in memory (a channels-last activation), where NumPy's ``mean`` is several times
    slower."""
    return gemm.sum_axes(xp, a, dims) / (a.size // max(a.shape[1], 1))


@primitive
class BatchNorm(Primitive):
    """Training-mode batch norm with its affine part: ``(x - mean)·rsqrt(var + eps)·weight +
    bias`` per channel (dimension 1), statistics over every other dimension, with the batch's
    mean and biased variance as (C,) outputs. One op instead of ``standardize``, ``mul`` and
    ``add``: the backward reads the input and the statistics (not the normalised values) and
    shares its per-channel sums between the input's, weight's and bias's gradients, about
    half the full-size passes of the composite.
    """

    name = "batch_norm"
    nout = 3
    save_outputs = (1, 2)  # the statistics; the output itself is not read
    allocates = True  # (the output and the statistics are new arrays on every path)

    def forward(self, xp, x, weight, bias, *, eps):
        looped = batch_norm_kernel.batch_norm(xp, x, weight, bias, eps)
        if looped is not None:
            return looped
        dims = (0, *range(2, x.ndim))
        low = x.dtype in _HALF
        xa = x.astype(np.float32) if low else x
        mean = _channel_mean(xp, xa, dims)
        out = xa - mean
        var = _channel_mean(xp, xp.square(out), dims)
        scale = weight.reshape(mean.shape) / xp.sqrt(var + eps)
        out *= scale
        out += bias.reshape(mean.shape)
        stats = mean.reshape(-1), var.reshape(-1)
        if low:
            return out.astype(x.dtype), *(t.astype(x.dtype) for t in stats)
        return (out, *stats)

    def infer(self, x, weight, bias, *, eps):
        c = x.shape[1] if len(x.shape) > 1 else None
        if c is None or weight.shape != (c,) or bias.shape != (c,):
            raise ShapeError(f"batch_norm: input {x.shape} needs (C,) weight and bias, got "
                             f"{weight.shape} and {bias.shape}")
        stat = TensorSpec((c,), x.dtype)
        return x, stat, stat

    def reads(self, ctx, i):
        return i != 2  # not the bias

    def _parts(self, ctx):
        x, weight = ctx.inputs[0], ctx.inputs[1]
        dims = (0, *range(2, x.ndim))
        shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
        mean, var = ctx.output(1).reshape(shape), ctx.output(2).reshape(shape)
        rstd = (var + ctx.params["eps"]).rsqrt()
        return dims, mean, rstd, weight.reshape(shape), x.numel() // max(x.shape[1], 1)

    def vjp(self, ctx, g, g_mean=None, g_var=None):
        x = ctx.inputs[0]
        if g is not None and g_mean is None and g_var is None and not GRAD.enabled and \
                not DISPATCH.stack and type(x._data) is np.ndarray and x._data.dtype in _PLAIN:
            return self._plain_vjp(ctx, g)  # (records nothing: its (C,) steps on the arrays)
        _, mean, rstd, weight, n = self._parts(ctx)
        needs_x = x.requires_grad
        gx = g_weight = g_bias = None
        if g is not None:
            g_sum, g_dot = apply(BatchNormSums, g, x, ctx.output(1))  # Σg, Σg·(x - mean)
            g_weight, g_bias = g_dot * rstd.reshape((-1,)), g_sum
            if needs_x:
                k = weight * rstd
                g_sum, g_dot = g_sum.reshape(mean.shape), g_dot.reshape(mean.shape)
                # k·(g - mean(g) - x̂·mean(g·x̂)), x̂ = (x - mean)·rstd
                gx = batch_norm_input_grad(g, x, mean, k, -k * rstd * rstd * g_dot / n,
                                           k * g_sum / n)
        if needs_x and g_mean is not None:  # mean = Σx / n
            term = (g_mean.reshape(rstd.shape) / n).expand(tuple(x.shape))
            gx = term if gx is None else gx + term
        if needs_x and g_var is not None:  # var = Σ(x - mean)² / n
            term = (x - mean) * (g_var.reshape(rstd.shape) * (2 / n))
            gx = term if gx is None else gx + term
        return gx, g_weight, g_bias

    def _plain_vjp(self, ctx, g):
        x, weight, mean = ctx.inputs[0], ctx.inputs[1], ctx.output(1)
        g_sum, g_dot = apply(BatchNormSums, g, x, mean)
        g_weight, *coefficients = plain_coefficients(
            ctx.output(2)._data, weight._data, g_sum._data, g_dot._data, ctx.params["eps"],
            x.numel() // max(x.shape[1], 1))
        shape, dev = (1, x.shape[1]) + (1,) * (x.ndim - 2), x._device
        gx = batch_norm_input_grad(g, x, *(_wrap(a.reshape(shape), dev) for a in (
            mean._data, *coefficients))) if x.requires_grad else None
        return gx, _wrap(g_weight, dev), g_sum

    def jvp(self, ctx, dx, dweight, dbias):
        dims, mean, rstd, weight, _ = self._parts(ctx)
        centred = ctx.inputs[0] - mean
        xhat = centred * rstd
        dmean = dx.mean(dims, keepdim=True)
        dvar = (dx * centred).mean(dims, keepdim=True) * 2
        dxhat = rstd * (dx - dmean) - xhat * (rstd * rstd * dvar / 2)
        shape = dmean.shape
        out = dxhat * weight + xhat * dweight.reshape(shape) + dbias.reshape(shape)
        return out, dmean.reshape((-1,)), dvar.reshape((-1,))


@primitive
class BatchNormSums(Primitive):
    """Batch norm's backward sums per channel (dimension 1): ``Σg`` and ``Σg·(x - mean)`` over
    every other dimension of the output gradient ``g`` and the input ``x``, with the (C,)
    batch ``mean``. One pass over both in numba for channels-last float input
    (:mod:`ember.ops.batch_norm_kernel`), else two sums (GEMVs where the channels are
    innermost). Its rules are those of the sums it is, in Ember ops, so batch norm's higher
    derivatives follow."""

    name = "batch_norm_sums"
    nout = 2
    allocates = True  # (sums over the batch: new arrays on every path)

    @in_float32
    def forward(self, xp, g, x, mean):
        looped = batch_norm_kernel.gradient_sums(xp, g, x, mean)
        if looped is not None:
            return looped
        dims = (0, *range(2, x.ndim))
        centred = x - mean.reshape((1, -1) + (1,) * (x.ndim - 2))
        return tuple(gemm.sum_axes(xp, t, dims).reshape(-1)
                     for t in (g, xp.multiply(centred, g, out=centred)))

    def infer(self, g, x, mean):
        c = x.shape[1] if len(x.shape) > 1 else None
        if g.dtype is not x.dtype or mean.dtype is not x.dtype:
            raise DTypeError(f"batch_norm_sums: gradient {g.dtype.name}, input {x.dtype.name} "
                             f"and mean {mean.dtype.name} must share one dtype")
        if tuple(g.shape) != tuple(x.shape) or mean.shape != (c,):
            raise ShapeError(f"batch_norm_sums: gradient {g.shape}, input {x.shape} and mean "
                             f"{mean.shape} do not match: expected the input's shape and (C,)")
        stat = TensorSpec((c,), x.dtype)
        return stat, stat

    def vjp(self, ctx, u_sum, u_dot):
        g, x, mean = ctx.inputs
        shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
        gg = gx = g_mean = None
        if u_sum is not None and g.requires_grad:
            gg = u_sum.reshape(shape).expand(tuple(g.shape))
        if u_dot is not None:
            u = u_dot.reshape(shape)
            if g.requires_grad:
                part = u * (x - mean.reshape(shape))
                gg = part if gg is None else gg + part
            gx = u * g if x.requires_grad else None
            if mean.requires_grad:
                g_mean = -(u_dot * g.sum((0, *range(2, x.ndim))))
        return gg, gx, g_mean

    def jvp(self, ctx, dg, dx, dmean):
        g, x, mean = ctx.inputs
        dims = (0, *range(2, x.ndim))
        shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
        d_dot = (dg * (x - mean.reshape(shape)) + g * dx).sum(dims) - g.sum(dims) * dmean
        return dg.sum(dims), d_dot


def checked_normalized_shape(op: str, input: Tensor,
                             normalized_shape: int | Sequence[int]) -> tuple[int, ...]:
    """``normalized_shape`` as a tuple, checked to be how the floating ``input`` ends."""
    _check_float(op, input)
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else \
        as_ints(normalized_shape, op, "normalized_shape")
    k = len(shape)
    if k == 0:
        raise ShapeError(f"{op}: expected normalized_shape to be at least 1-dimensional (the "
                         "trailing dims to normalise over), but got normalized_shape = ()")
    if tuple(input.shape[input.ndim - k:]) != shape or input.ndim < k:
        raise ShapeError(f"{op}: input of shape {tuple(input.shape)} does not end with "
                         f"normalized_shape {shape}")
    return shape


def _suggested_layout(x: Tensor) -> Tensor:
    """``x`` as PyTorch's batch norm reads it (``contiguous(suggest_memory_format())``):
    channels-last(-3d) as it is, any other layout in C order, so the result is laid out
    alike."""
    if x._data.flags.c_contiguous or format_of(x) in (channels_last, channels_last_3d):
        return x
    return contiguous(x)


def _per_channel(t: Tensor, ndim: int) -> Tensor:
    """A (C,) tensor shaped to broadcast along dimension 1 of an ``ndim``-D input."""
    return t.reshape((t.shape[0],) + (1,) * (ndim - 2))


def _affine(y: Tensor, weight: Tensor | None, bias: Tensor | None) -> Tensor:
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def rms_norm(input: Tensor, normalized_shape: int | Sequence[int],
             weight: Tensor | None = None, eps: float | None = None) -> Tensor:
    """``x / sqrt(mean(x²) + eps)`` over the last dims, times ``weight``, in ``x``'s dtype. As
    in PyTorch, float16 and bfloat16 inputs are computed in float32 (weight included, cast
    once at the end), and ``eps`` defaults to the machine epsilon of the dtype computed in.

    Example:
        >>> F.rms_norm(ember.tensor([[3.0, 4.0]]), (2,))
        tensor([[0.8485, 1.1314]])
    """
    if type(input) in TENSOR_LIKE:
        return handle(rms_norm, (input, normalized_shape, weight, eps), {})
    k = len(checked_normalized_shape("rms_norm", input, normalized_shape))
    # (PyTorch's kernel reads contiguous(suggest_memory_format()): channels-last stays)
    x = _suggested_layout(input.float() if input.dtype.np in _HALF else input)
    if eps is None:
        eps = float(np.finfo(x.dtype.np).eps)
    y = x * (laid_out_like((x * x).mean(tuple(range(-k, 0)), keepdim=True), x) + eps).rsqrt()
    y = y if weight is None else y * weight
    return y.to(input.dtype)  # (under autocast too: PyTorch's CPU autocast keeps it)


def _update_running(running: Tensor | None, batch: Tensor, momentum: float,
                    scale: float | None = None, op: str = "batch_norm") -> None:
    """``running ← (1 - momentum)·running + momentum·(batch·scale)``, in place and untracked;
    eagerly (no transform or observer; float32/float64, a float momentum) on the arrays, as the
    ops compute it (each number in the dtype), without their ~8 primitives and two writes.
    Under vmap, a batched ``batch`` for an unbatched ``running`` is refused with a note."""
    if running is None:
        return
    data = running._data
    if type(momentum) is float and _on_arrays(running) and data.dtype in _PLAIN and \
            batch.dtype is running.dtype:
        refuse_inference_write(running, op)
        kind = data.dtype.type
        values = batch._data if scale is None else batch._data * kind(scale)
        new = data * kind(1 - momentum)
        new += values * kind(momentum)
        data[...] = new
        running._vc.value += 1
        return
    if scale is not None:
        batch = batch * scale
    update = batch.detach().to(running.dtype) * momentum
    try:
        with no_grad():
            inplace(running, op, lambda old: old * (1 - momentum) + update)
    except BatchedWriteError as e:  # (vmap: a batched statistic into the unbatched one)
        way_out = {"batch_norm": "call ember.func.replace_all_batch_norm_modules_(model) (no "
                   "running statistics)", "instance_norm": "use track_running_stats=False"}
        e.add_note(f"{op}: while updating running_mean / running_var in place (training "
                   f"mode). Hint: under vmap, {way_out.get(op, 'pass None for them')}, use "
                   f"model.eval(), or give the running statistics a batch dimension")
        raise


_PLAIN = (np.dtype(np.float32), np.dtype(np.float64))


def _on_arrays(t: Tensor) -> bool:
    """Whether an untracked in-place update of buffer ``t`` may go straight to its array: plain
    eager code (no transform or observer), a writable NumPy array of its own (no view) that
    needs no gradient."""
    data = t._data
    return not DISPATCH.stack and type(data) is np.ndarray and data.flags.writeable and \
        t._view is None and not t.requires_grad


def _count_batch(counter: Tensor) -> None:
    """``counter += 1``, untracked: a batch norm layer's ``num_batches_tracked``, on its array
    where :func:`_on_arrays` allows (the in-place op took a sixth of a small layer's forward),
    else by the op."""
    if _on_arrays(counter):
        refuse_inference_write(counter, "batch_norm")
        counter._data += 1
        counter._vc.value += 1
        return
    with no_grad():
        counter.add_(1)


def _update_batch_stats(running_mean: Tensor | None, running_var: Tensor | None, mean: Tensor,
                        var: Tensor, count: int, momentum: float) -> None:
    """Running statistics from a batch's (C,) mean and biased variance over ``count`` values
    per channel (the running variance is unbiased, as PyTorch's)."""
    _update_running(running_mean, mean, momentum)
    _update_running(running_var, var, momentum, count / (count - 1))


def _batch_standardize(x: Tensor, dims: tuple[int, ...],
                       eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """:func:`_standardize` for batch and instance norm in training, with PyTorch's invstd rule
    where ``var + eps`` is 0: with ``eps == 0`` (a constant channel) rstd is 0, not inf, so
    that channel gives 0 and zero gradients (layer and group norm give NaN); with ``eps < 0``
    (``var == -eps``) it is NaN, not inf, as PyTorch's ``x·invstd - mean·invstd`` gives NaN.
    ``eps <= 0`` as a composite of Ember ops, so every derivative follows."""
    if not eps <= 0:
        return _standardize(x, dims, eps)
    xa = x.float() if x.dtype in HALF else x
    mean = xa.mean(dims, keepdim=True)
    centred = xa - mean
    var = (centred * centred).mean(dims, keepdim=True)
    total = var + eps
    zero = total == 0
    rstd = where(zero, 0.0 if eps == 0 else float("nan"),
                 where(zero, 1.0, total).rsqrt())  # (no inf·0 in the gradient)
    return tuple(t.to(x.dtype) for t in (centred * rstd, mean, var))


def _check_per_channel(op: str, input: Tensor, *stats: Tensor | None) -> None:
    """Raises unless each of running_mean, running_var, weight and bias (``stats``, in that
    order; None skipped) has the shape ``(C,)`` of the input's channels."""
    c = input.shape[1]
    for name, t in zip(("running_mean", "running_var", "weight", "bias"), stats):
        if t is not None and tuple(t.shape) != (c,):
            raise ShapeError(f"{op}: {name} has shape {tuple(t.shape)} but the input has "
                             f"{c} channels (input shape {tuple(input.shape)})")


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None,
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalises each channel (dimension 1) over the batch and spatial dims.

    In training it uses the batch's statistics and updates ``running_mean``/``running_var``
    in place (with the unbiased variance); in evaluation it uses the running statistics.

    Example:
        >>> rm, rv = ember.zeros(3), ember.ones(3)
        >>> y = F.batch_norm(ember.randn(8, 3), rm, rv, training=True)  # rm, rv updated
    """
    if training and eps <= 0 or not training and eps < 0:  # (NaN passes, as in PyTorch)
        raise ArgumentError(f"batch_norm: eps must be "
                            f"{'positive during training' if training else 'non-negative'}, "
                            f"but got {eps}. Hint: the variance plus eps is square-rooted")
    return _batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def _batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
                weight: Tensor | None, bias: Tensor | None, training: bool, momentum: float,
                eps: float) -> Tensor:
    """``batch_norm`` less its check of ``eps`` (``instance_norm`` takes any eps, as PyTorch's)."""
    _check_float("batch_norm", input)
    _check_momentum("batch_norm", momentum)
    if half_with_float_params(input, weight, bias, running_mean, running_var):
        return _batch_norm(input.float(), running_mean, running_var, weight, bias, training,
                           momentum, eps).to(input.dtype)
    if input.ndim < 2:
        raise ShapeError(f"batch_norm: expected an input of at least 2 dims (N, C, …), got "
                         f"shape {tuple(input.shape)}")
    c = input.shape[1]
    _check_per_channel("batch_norm", input, running_mean, running_var, weight, bias)
    dims = (0,) + tuple(range(2, input.ndim))
    input = _suggested_layout(input)
    if input.numel() == 0:  # no statistics to take or update; the output is empty (PyTorch's)
        y = input.clone()
    elif training:
        count = input.numel() // c
        if count == 1:
            raise ArgumentError(f"batch_norm: expected more than 1 value per channel when "
                                f"training, got input size {tuple(input.shape)}")
        if weight is None and bias is None:  # (affine=False: the fused op too, which keeps
            # the input and not its output, so in-place ops may follow, as in PyTorch)
            weight, bias = input.new_ones((c,)), input.new_zeros((c,))
        if weight is not None and bias is not None and eps > 0 and \
                weight.dtype is input.dtype and bias.dtype is input.dtype:  # one fused op
            with packed_on_exit():  # (the statistics written before the op's values are saved)
                out, mean, var = apply(BatchNorm, input, weight, bias, eps=float(eps))
                _update_batch_stats(running_mean, running_var, mean, var, count, momentum)
            return out
        with packed_on_exit():
            y, mean, var = _batch_standardize(input, dims, eps)
            _update_batch_stats(running_mean, running_var, mean.reshape((c,)),
                                var.reshape((c,)), count, momentum)
    else:
        if running_mean is None or running_var is None:
            raise ArgumentError("batch_norm: running_mean and running_var must be given in "
                                "evaluation mode (training=False)")
        if batch_norm_eval.applies(input, running_mean, running_var, weight, bias):  # (fused)
            return batch_norm_eval.fused(input, running_mean, running_var, weight, bias, eps)
        mean, var = _per_channel(running_mean, input.ndim), _per_channel(running_var, input.ndim)
        y = (input - mean) * (var + eps).rsqrt()
    return _affine(y, None if weight is None else _per_channel(weight, input.ndim),
                   None if bias is None else _per_channel(bias, input.ndim))


def instance_norm(input: Tensor, running_mean: Tensor | None = None,
                  running_var: Tensor | None = None, weight: Tensor | None = None,
                  bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalises each (sample, channel) plane over its spatial dims.

    With running statistics and ``use_input_stats`` they are updated with the batch average
    of the per-instance statistics; with ``use_input_stats=False`` they are used instead.
    Planes of one element are refused with ``use_input_stats``, as in PyTorch (each would
    normalise to 0).

    Example:
        >>> F.instance_norm(ember.randn(2, 3, 4, 4)).shape
        ember.Size([2, 3, 4, 4])
    """
    if use_input_stats and input.ndim > 2 and prod(input.shape[2:]) == 1:
        raise ArgumentError(f"instance_norm: expected more than 1 spatial element when "
                            f"training, got input size {tuple(input.shape)}")
    return _instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                          momentum, eps)


def _instance_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
                   weight: Tensor | None, bias: Tensor | None, use_input_stats: bool,
                   momentum: float, eps: float) -> Tensor:
    """:func:`instance_norm` less its check of one-element planes (``torch.instance_norm``
    takes them). Running statistics of any floating dtype are read in the input's and
    updated in their own, as PyTorch's (only weight and bias must match)."""
    _check_float("instance_norm", input)
    _check_momentum("instance_norm", momentum)
    wider_stats = input.dtype in HALF and any(
        t is not None and t.dtype not in HALF for t in (running_mean, running_var))
    if half_with_float_params(input, weight, bias) or wider_stats:
        weight, bias = (t if t is None else t.float() for t in (weight, bias))
        return _instance_norm(input.float(), running_mean, running_var, weight, bias,
                              use_input_stats, momentum, eps).to(input.dtype)
    if input.ndim < 3:
        raise ShapeError(f"instance_norm: expected an (N, C, *spatial) input, got shape "
                         f"{tuple(input.shape)}")
    _check_per_channel("instance_norm", input, running_mean, running_var, weight, bias)
    if not use_input_stats:
        mean, var = (t if t is None or t.dtype == input.dtype else t.to(input.dtype)
                     for t in (running_mean, running_var))
        return _batch_norm(input, mean, var, weight, bias, False, momentum, eps)
    n, c = input.shape[:2]
    dims = tuple(range(2, input.ndim))
    # (PyTorch's runs batch_norm on a (1, N·C, …) view of a contiguous copy: C order out)
    y, mean, var = _batch_standardize(contiguous(input), dims, eps)
    count = input.numel() // max(n * c, 1)
    _update_running(running_mean, mean.reshape((n, c)).mean(0), momentum, op="instance_norm")
    if running_var is not None:
        unbiased = var.reshape((n, c)) * (count / max(count - 1, 1))
        _update_running(running_var, unbiased.mean(0), momentum, op="instance_norm")
    return _affine(y, None if weight is None else _per_channel(weight, input.ndim),
                   None if bias is None else _per_channel(bias, input.ndim))


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,
              out: Tensor | None = None) -> Tensor:
    """``input / max(‖input‖_p, eps)`` along ``dim``, written into ``out`` when given (as in
    PyTorch, ``out`` may also be the fifth positional argument).

    Example:
        >>> F.normalize(ember.tensor([[3.0, 4.0]]), 2.0, 1, 1e-12, ember.empty(1, 2))
        tensor([[0.6000, 0.8000]])
    """
    return _normalize_into(input, p, dim, eps, out=out)


def _normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    # (complex vectors are divided by the norm of the moduli)
    if not is_complex_input("normalize", "input", input):
        _check_float("normalize", input)
    # the norm in the input's dtype (accumulated wider for half), clamped, as PyTorch's: a
    # power sum of float16 squares overflowed to inf and gave zeros
    norm = vector_norm(input, p, dim, keepdim=True).clamp(min=eps)
    return input / laid_out_like(norm, input)


_normalize_into = with_out(_normalize, "normalize")
