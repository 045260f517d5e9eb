"""Batching rules of linear algebra and NN kernels: matmul, einsum, im2col, pooling indices,
resampling, the chunked linear cross entropy.

Kernels that already take a leading batch of images (``(N, C, H, W)``) run on the merged
``(B*N, C, H, W)`` and split the result again: one call, no loop.
"""

from __future__ import annotations

import math
import string
from typing import Any

from ember.func.batching import (
    batched,
    merge_batch,
    move,
    pad_rank,
    prim,
    reshape,
    rule,
    split_batch,
)
from ember.ops.join import stack
from ember.ops.primitive import apply


@rule("matmul")
def _matmul(b: int, xs: tuple, bs: tuple, *, compute: Any, wide: bool = False) -> Any:
    # (``wide`` dropped: PyTorch's vmap of a half linear or addmm rounds the product, then
    # adds the bias, and so does Ember's, bit for bit)
    a, c = xs
    ra, rc = a.ndim - bs[0], c.ndim - bs[1]
    if ra == 1:  # a vector is a 1-row matrix, its row dropped after
        a = reshape(a, tuple(a.shape)[:-1] + (1,) + tuple(a.shape)[-1:])
    if rc == 1:
        c = reshape(c, tuple(c.shape) + (1,))
    rank = max(a.ndim - bs[0], c.ndim - bs[1])
    a = pad_rank(a, rank) if bs[0] else a
    c = pad_rank(c, rank) if bs[1] else c
    out = apply(prim("matmul"), a, c, compute=compute)
    shape = list(out.shape)
    if rc == 1:
        del shape[-1]
    if ra == 1:
        del shape[out.ndim - 2]
    return reshape(out, tuple(shape)) if len(shape) != out.ndim else out


@rule("einsum")
def _einsum(b: int, xs: tuple, bs: tuple, *, equation: str, compute: Any) -> Any:
    letter = next(ch for ch in string.ascii_letters if ch not in equation)
    lhs, rhs = equation.split("->")
    terms = [letter + t if is_b else t for t, is_b in zip(lhs.split(","), bs)]
    return apply(prim("einsum"), *xs, equation=",".join(terms) + "->" + letter + rhs,
                 compute=compute)


def _image_batch_rule(name: str) -> Any:
    p = prim(name)

    def batch_images(b: int, xs: tuple, bs: tuple, **params: Any) -> Any:
        (x,) = xs
        n = x.shape[1]
        return split_batch(apply(p, merge_batch(x), **params), b, n)

    return batch_images


for _name in ("unfold", "fold", "max_pool_indices", "adaptive_max_pool_indices", "window_sum",
              "window_spread"):
    rule(_name)(_image_batch_rule(_name))


@rule("fractional_max_pool_indices")
def _fractional_max_pool_indices(b: int, xs: tuple, bs: tuple, **params: Any) -> Any:
    x, samples = (batched(t, b, is_b) for t, is_b in zip(xs, bs))  # (B, N, C, …), (B, N', C, d)
    n = x.shape[1]
    out = apply(prim("fractional_max_pool_indices"), merge_batch(x),
                merge_batch(samples[:, :n]), **params)
    return split_batch(out, b, n)


@rule("conv")
def _conv(b: int, xs: tuple, bs: tuple, **params: Any) -> Any:
    x, w, *bias = xs
    if len(bs) > 2 and bs[2]:  # a bias per sample: added to the convolution without one
        # (nothing else batched: one convolution, which broadcasts against the biases)
        out = (_conv(b, (x, w), bs[:2], **params) if any(bs[:2])
               else apply(prim("conv"), x, w, **params))
        shape = (b, 1, bias[0].shape[1]) + (1,) * (len(x.shape) - 2 - int(bs[0]))
        return out + reshape(bias[0], shape)
    if not bs[1]:  # one weight for all: the vmapped batch joins the images' batch
        return split_batch(apply(prim("conv"), merge_batch(x), w, *bias, **params), b,
                           x.shape[1])
    # a weight per sample: a grouped convolution, one group per sample, as a batch of GEMMs
    from ember.ops.im2col import unfold_nd, window_counts

    x = batched(x, b, bs[0])  # (B, N, Cin, *spatial)
    n, cin, spatial = x.shape[1], x.shape[2], tuple(x.shape)[3:]
    kernel = tuple(w.shape)[3:]
    geometry = {k: params[k] for k in ("dilation", "padding", "stride")}
    cols = unfold_nd(reshape(move(x, 0, 1), (n, b * cin) + spatial), kernel_size=kernel,
                     op="conv", **geometry)
    cols = reshape(cols, (n, b, cols.shape[1] // b, cols.shape[2]))
    out = reshape(w, tuple(w.shape)[:2] + (-1,)) @ cols  # (N, B, Cout, L)
    if bias:  # (one for all)
        out = out + reshape(bias[0], (-1, 1))
    counts = window_counts(spatial, kernel, *geometry.values(), "conv")
    return reshape(move(out, 1, 0), (b, n, w.shape[1]) + counts)


@rule("conv_weight_grad")
def _conv_weight_grad(b: int, xs: tuple, bs: tuple, *, kernel_size: tuple, compute: Any,
                      **geometry: Any) -> Any:
    # one weight gradient per vmapped sample (per-sample gradients): a batch of GEMMs of each
    # sample's output-gradient rows against its im2col columns
    from ember.ops.im2col import unfold_nd

    x, g = (merge_batch(batched(t, b, is_b)) for t, is_b in zip(xs, bs))
    cout = g.shape[1]
    cols = unfold_nd(x, kernel_size=kernel_size, op="conv", layout="nlc", **geometry)
    cols = reshape(cols, (b, -1, cols.shape[2]))  # (B, N·L, ∏k·Cin)
    rows = reshape(move(g, 1, -1), (b, -1, cout))  # (B, N·L, Cout)
    gw = reshape(move(rows, 1, 2) @ cols, (b, cout) + tuple(kernel_size) + (x.shape[1],))
    return move(gw, -1, 2)


def _depthwise_rule(name: str, image_out: bool) -> Any:
    """A depthwise convolution primitive's rule: the vmapped batch joins the channels, the
    images' (B, N, C, H, W) as (N, B·C, H, W), a (B, C, 1, kh, kw) weight (a sample's own or
    shared) as (B·C, 1, kh, kw), a (B, C) bias as (B·C,). The two image inputs of the weight
    gradient, the image and weight (and bias) ones of the others; the result split the same
    way."""
    p = prim(name)

    def batch_depthwise(b: int, xs: tuple, bs: tuple, **params: Any) -> Any:
        kinds = (True, True) if not image_out else (True, False, False)  # which are images
        merged = []
        for x, is_b, image in zip(xs, bs, kinds):
            x = batched(x, b, is_b)
            shape = tuple(x.shape)
            merged.append(reshape(move(x, 0, 1), (shape[1], b * shape[2]) + shape[3:])
                          if image else reshape(x, (b * shape[1],) + shape[2:]))
        out = apply(p, *merged, **params)
        shape = tuple(out.shape)
        if not image_out:
            return reshape(out, (b, shape[0] // b) + shape[1:])
        return move(reshape(out, (shape[0], b, shape[1] // b) + shape[2:]), 1, 0)

    return batch_depthwise


for _name, _image_out in (("depthwise_conv2d", True), ("depthwise_conv2d_input_grad", True),
                          ("depthwise_conv2d_weight_grad", False)):
    rule(_name)(_depthwise_rule(_name, _image_out))


@rule("max_pool")
def _max_pool(b: int, xs: tuple, bs: tuple, **params: Any) -> Any:
    n = xs[0].shape[1]
    return tuple(split_batch(o, b, n) for o in apply(prim("max_pool"), merge_batch(xs[0]),
                                                      **params))


def _image_pair_rule(name: str) -> Any:
    p = prim(name)

    def batch_image_pair(b: int, xs: tuple, bs: tuple, **params: Any) -> Any:
        xs = [merge_batch(batched(x, b, is_b)) for x, is_b in zip(xs, bs)]
        return split_batch(apply(p, *xs, **params), b, xs[0].shape[0] // b)

    return batch_image_pair


for _name in ("window_gather", "window_scatter"):
    rule(_name)(_image_pair_rule(_name))


def _axis_rule(name: str) -> Any:
    p = prim(name)

    def batch_axis(b: int, xs: tuple, bs: tuple, *, axis: int, **params: Any) -> Any:
        return apply(p, batched(xs[0], b, bs[0]), axis=axis + 1, **params)

    return batch_axis


for _name in ("resample", "resample_transpose", "resample_uint8"):
    rule(_name)(_axis_rule(_name))


def _attention_rule(name: str, trailing: Any) -> Any:
    """Attention kernels broadcast leading dims over ``(…, L, E)`` operands: batch every
    input, align the leading dims and expand them to one shape (views, no copies)."""
    p = prim(name)

    def batch_attention(b: int, xs: tuple, bs: tuple, **params: Any) -> Any:
        from ember.ops.broadcast import broadcast_shapes

        tails = trailing(len(xs))
        lead = max(x.ndim - is_b - t for x, is_b, t in zip(xs, bs, tails))
        xs = [pad_rank(batched(x, b, is_b), lead + t) for x, is_b, t in zip(xs, bs, tails)]
        shape = broadcast_shapes(*(tuple(x.shape)[:x.ndim - t] for x, t in zip(xs, tails)))
        xs = [apply(prim("expand"), x, shape=shape + tuple(x.shape)[x.ndim - t:])
              for x, t in zip(xs, tails)]
        return apply(p, *xs, **params)

    return batch_attention


rule("scaled_dot_product_attention")(_attention_rule(
    "scaled_dot_product_attention", lambda n: (2,) * n))
rule("scaled_dot_product_attention_backward")(_attention_rule(
    "scaled_dot_product_attention_backward", lambda n: (2,) * (n - 2) + (1, 2)))


@rule("standardize")
def _standardize(b: int, xs: tuple, bs: tuple, *, dims: tuple, eps: float) -> Any:
    # non-negative dims move past the batch axis; negative ones (layer norm's) stay put
    return apply(prim("standardize"), xs[0], dims=tuple(d + 1 if d >= 0 else d for d in dims),
                 eps=eps)


def _standardize_grad_rule(name: str) -> Any:
    """The rule of standardize's gradients (from its output or its input): every operand
    batched, the dims moved as standardize's."""
    def batch_grad(b: int, xs: tuple, bs: tuple, *, dims: tuple) -> Any:
        return apply(prim(name), *(batched(t, b, is_b) for t, is_b in zip(xs, bs)),
                     dims=tuple(d + 1 if d >= 0 else d for d in dims))

    return batch_grad


rule("standardize_grad")(_standardize_grad_rule("standardize_grad"))
rule("standardize_input_grad")(_standardize_grad_rule("standardize_input_grad"))


@rule("smooth_l1_loss")
def _smooth_l1_loss(b: int, xs: tuple, bs: tuple, *, reduction: str, **params: Any) -> Any:
    # elementwise per sample, then each sample's reduction over its own elements
    x, t = (batched(v, b, is_b) for v, is_b in zip(xs, bs))
    loss = apply(prim("smooth_l1_loss"), x, t, reduction="none", **params)
    if reduction == "none":
        return loss
    total = apply(prim("sum"), reshape(loss, (b, math.prod(x.shape[1:]))), dims=(1,),
                  keepdim=False)
    return total / math.prod(x.shape[1:]) if reduction == "mean" else total


@rule("smooth_l1_loss_backward")
def _smooth_l1_loss_backward(b: int, xs: tuple, bs: tuple, *, reduction: str,
                             **params: Any) -> Any:
    # a reduced loss's gradient: each sample's 0-d g spread over its elements
    g, x, t = (batched(v, b, is_b) for v, is_b in zip(xs, bs))
    if reduction != "none":
        n = math.prod(x.shape[1:])
        g = apply(prim("expand"), reshape(g, (b,) + (1,) * (x.ndim - 1)), shape=tuple(x.shape))
        g = g / n if reduction == "mean" and n else g
    return apply(prim("smooth_l1_loss_backward"), g, x, t, reduction="none", **params)


@rule("layer_norm")
def _layer_norm(b: int, xs: tuple, bs: tuple, *, eps: float) -> Any:
    x, weight, bias = xs
    if not bs[1] and not bs[2]:  # one weight for every sample: the op on the (B, …) input
        return apply(prim("layer_norm"), x, weight, bias, eps=eps)
    # a weight per sample: the composite
    x, weight, bias = (batched(t, b, is_b) for t, is_b in zip(xs, bs))
    k = weight.ndim - 1
    y, mean, var = apply(prim("standardize"), x, dims=tuple(range(-k, 0)), eps=eps)
    shape = (b,) + (1,) * (x.ndim - 1 - k) + tuple(weight.shape)[1:]
    return y * reshape(weight, shape) + reshape(bias, shape), mean, (var + eps).rsqrt()


@rule("layer_norm_grad")
def _layer_norm_grad(b: int, xs: tuple, bs: tuple) -> Any:
    # per vmapped sample (the weight's and bias's sums keep the batch axis): the composite
    g, x, mean, rstd, weight = (batched(t, b, is_b) for t, is_b in zip(xs, bs))
    k = weight.ndim - 1
    lead = tuple(range(1, x.ndim - k))
    xhat = (x - mean) * rstd
    h = g * reshape(weight, (b,) + (1,) * (x.ndim - 1 - k) + tuple(weight.shape)[1:])
    dx = apply(prim("standardize_grad"), h, xhat, rstd, dims=tuple(range(-k, 0)))
    return dx, *((t.sum(lead) if lead else t) for t in (g * xhat, g))  # (sum(()) sums all)


@rule("group_norm")
def _group_norm(b: int, xs: tuple, bs: tuple, *, groups: int, eps: float) -> Any:
    x, weight, bias = xs
    if not bs[1] and not bs[2]:  # one weight for every sample: the vmapped dim joins N
        n = x.shape[1]
        out, mean, rstd = apply(prim("group_norm"), merge_batch(x), weight, bias, groups=groups,
                                eps=eps)
        return split_batch(out, b, n), split_batch(mean, b, n), split_batch(rstd, b, n)
    # a weight per sample: the composite on the physical (B, N, C, …) input
    x, weight, bias = (batched(t, b, is_b) for t, is_b in zip(xs, bs))
    n, c = x.shape[1], x.shape[2]
    y, mean, var = apply(prim("standardize"), reshape(x, (b, n, groups, -1)), dims=(3,),
                         eps=eps)
    shape = (b, 1, c) + (1,) * (x.ndim - 3)
    out = reshape(y, tuple(x.shape)) * reshape(weight, shape) + reshape(bias, shape)
    return out, reshape(mean, (b, n, groups)), reshape((var + eps).rsqrt(), (b, n, groups))


@rule("group_norm_grad")
def _group_norm_grad(b: int, xs: tuple, bs: tuple) -> Any:
    # per vmapped sample (the weight's and bias's sums keep the batch axis): the composite
    g, x, mean, rstd, weight = (batched(t, b, is_b) for t, is_b in zip(xs, bs))
    n, c, groups = x.shape[1], x.shape[2], mean.shape[2]
    stat = (b, n, groups, 1)
    xhat = (reshape(x, (b, n, groups, -1)) - reshape(mean, stat)) * reshape(rstd, stat)
    h = g * reshape(weight, (b, 1, c) + (1,) * (x.ndim - 3))
    dx = apply(prim("standardize_grad"), reshape(h, tuple(xhat.shape)), xhat,
               reshape(rstd, stat), dims=(3,))
    per_channel = (b, n, c, -1)
    return reshape(dx, tuple(x.shape)), \
        (reshape(g, per_channel) * reshape(xhat, per_channel)).sum((1, 3)), \
        reshape(g, per_channel).sum((1, 3))


@rule("batch_norm")
def _batch_norm(b: int, xs: tuple, bs: tuple, *, eps: float) -> Any:
    # statistics per vmapped sample: the composite on the physical (B, N, C, …) input
    x, weight, bias = (batched(t, b, is_b) for t, is_b in zip(xs, bs))
    c = x.shape[2]
    y, mean, var = apply(prim("standardize"), x, dims=(1, *range(3, x.ndim)), eps=eps)
    shape = (b, 1, c) + (1,) * (x.ndim - 3)
    out = y * reshape(weight, shape) + reshape(bias, shape)
    return out, reshape(mean, (b, c)), reshape(var, (b, c))


@rule("batch_norm_eval")
def _batch_norm_eval(b: int, xs: tuple, bs: tuple, *, eps: float) -> Any:
    # the composite on the physical (B, N, C, …) input, each (C,) operand per sample (B, C)
    x, mean, var, weight, bias = (batched(t, b, is_b) for t, is_b in zip(xs, bs))
    shape = (b, 1, x.shape[2]) + (1,) * (x.ndim - 3)
    mean, var, weight, bias = (reshape(t, shape) for t in (mean, var, weight, bias))
    return (x - mean) * (var + eps).rsqrt() * weight + bias


@rule("batch_norm_sums")
def _batch_norm_sums(b: int, xs: tuple, bs: tuple) -> Any:
    # per vmapped sample: the two sums as ops on the physical (B, N, C, …) operands
    g, x, mean = (batched(t, b, is_b) for t, is_b in zip(xs, bs))
    dims = (1, *range(3, x.ndim))
    centred = x - reshape(mean, (b, 1, x.shape[2]) + (1,) * (x.ndim - 3))
    return g.sum(dims), (g * centred).sum(dims)  # (sum accumulates half precision in float32)


def _ctc_operands(b: int, xs: tuple, bs: tuple) -> tuple:
    """CTC's log-probabilities (T, N, C), targets and lengths with the vmap batch folded into
    their N sequences: (T, B*N, C), (B*N, S) or the B samples' concatenations one after the
    other, (B*N,) lengths."""
    log_probs, targets, input_lengths, target_lengths = (
        batched(x, b, is_b) for x, is_b in zip(xs, bs))
    log_probs = move(log_probs, 0, 1)  # (T, B, N, C)
    t, _, n, c = log_probs.shape
    log_probs = reshape(log_probs, (t, b * n, c))
    targets = merge_batch(targets) if targets.ndim == 3 else reshape(targets, (-1,))
    return log_probs, targets, merge_batch(input_lengths), merge_batch(target_lengths), n


@rule("ctc_loss")
def _ctc_loss(b, xs, bs, **params):
    *operands, n = _ctc_operands(b, xs, bs)
    return split_batch(apply(prim("ctc_loss"), *operands, **params), b, n)


@rule("ctc_loss_grad")
def _ctc_loss_grad(b, xs, bs, **params):
    *operands, n = _ctc_operands(b, xs[1:], bs[1:])
    g = merge_batch(batched(xs[0], b, bs[0]))
    grad = apply(prim("ctc_loss_grad"), g, *operands, **params)  # (T, B*N, C)
    t, _, c = grad.shape
    return move(reshape(grad, (t, b, n, c)), 1, 0)


@rule("linear_cross_entropy_rows")
def _linear_cross_entropy_rows(b: int, xs: tuple, bs: tuple, **params: Any) -> Any:
    # per-sample inputs and targets over shared weights: one call on the merged (B*N, in)
    # rows; a batched weight, bias or class weight (an ensemble): one call per sample
    op = prim("linear_cross_entropy_rows")
    x, w, bias, target, class_weight = (batched(t, b, is_b) for t, is_b in zip(xs, bs))
    if not any(bs[1:3]) and not bs[4]:
        n = x.shape[1]
        rows = apply(op, merge_batch(x), xs[1], xs[2], merge_batch(target), xs[4], **params)
        return split_batch(rows, b, n)
    return stack([apply(op, x[i], w[i], bias[i], target[i], class_weight[i], **params)
                  for i in range(b)])


def _per_sample(name: str) -> Any:
    """A rule computing primitive ``name`` once per sample: for the fused ``nll_loss`` and its
    backward, which vmap meets only in the backward of a loss recorded eagerly (the losses
    use their composite under vmap), e.g. ``autograd.grad(..., is_grads_batched=True)``."""
    def run(b: int, xs: tuple, bs: tuple, **params: Any) -> Any:
        xs = tuple(batched(t, b, is_b) for t, is_b in zip(xs, bs))
        return stack([apply(prim(name), *(t[i] for t in xs), **params) for i in range(b)])
    return run


for _name in ("nll_loss", "nll_loss_backward"):
    rule(_name)(_per_sample(_name))


def _leading_batch(name: str) -> Any:
    """A rule for a primitive elementwise over operands of one shape (binary cross entropy,
    the recurrent gates): over every leading dimension, so the batch in front (an unbatched
    operand expanded to it) is one more."""
    def run(b: int, xs: tuple, bs: tuple) -> Any:
        return apply(prim(name), *(batched(t, b, is_b) for t, is_b in zip(xs, bs)))
    return run


for _name in ("binary_cross_entropy", "binary_cross_entropy_with_logits", "lstm_gates",
              "lstm_gates_backward", "gru_gates", "gru_gates_backward"):
    rule(_name)(_leading_batch(_name))


@rule("glu")
def _glu(b: int, xs: tuple, bs: tuple, *, dim: int) -> Any:
    return apply(prim("glu"), xs[0], dim=dim + 1)


def _padding(name: str) -> Any:
    """pad_gather's rule, and its gradient pad_fold's: the padded dim moves one up."""
    def batched_rule(b: int, xs: tuple, bs: tuple, *, dim: int, **params: Any) -> Any:
        return apply(prim(name), xs[0], dim=dim + 1, **params)
    return batched_rule


for _name in ("pad_gather", "pad_fold"):
    rule(_name)(_padding(_name))


@rule("glu_grad")
def _glu_grad(b: int, xs: tuple, bs: tuple, *, dim: int) -> Any:
    g, x = (batched(t, b, is_b) for t, is_b in zip(xs, bs, strict=True))
    return apply(prim("glu_grad"), g, x, dim=dim + 1)
