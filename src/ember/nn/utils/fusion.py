"""Folding an eval-mode batch norm into the convolution or linear layer before it, as in
``torch.nn.utils.fusion``: one layer computing ``bn(layer(x))`` (for inference)."""

from __future__ import annotations

import copy
from typing import TypeVar

import ember
from ember.errors import ArgumentError, ShapeError
from ember.nn.module import Module
from ember.nn.parameter import Parameter
from ember.tensor import Tensor

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights"]

L = TypeVar("L", bound=Module)


def _bn_scale(bn_rm: Tensor, bn_rv: Tensor, bn_eps: float, bn_w: Tensor | None,
              bn_b: Tensor | None) -> tuple[Tensor, Tensor]:
    """The batch norm as ``x * scale + shift`` applied after subtracting the running mean:
    ``(scale, shift)`` with absent affine parameters read as 1 and 0."""
    scale = (bn_rv + bn_eps).rsqrt()
    if bn_w is not None:
        scale = scale * bn_w
    return scale, ember.zeros_like(bn_rm) if bn_b is None else bn_b


def fuse_conv_bn_weights(conv_w: Tensor, conv_b: Tensor | None, bn_rm: Tensor, bn_rv: Tensor,
                         bn_eps: float, bn_w: Tensor | None, bn_b: Tensor | None,
                         transpose: bool = False) -> tuple[Parameter, Parameter]:
    """The weight and bias of a convolution followed by a batch norm with these statistics
    and affine parameters (``transpose``: the output channels are the weight's dimension 1).

    Example:
        >>> w, b = fuse_conv_bn_weights(ember.ones(2, 1, 3), None, ember.zeros(2),
        ...                             ember.ones(2), 0.0, None, None)
        >>> tuple(w.shape), b.tolist()
        ((2, 1, 3), [0.0, 0.0])
    """
    scale, shift = _bn_scale(bn_rm, bn_rv, bn_eps, bn_w, bn_b)
    bias = ember.zeros_like(bn_rm) if conv_b is None else conv_b
    with ember.no_grad():
        weight = (_transposed_scaled(conv_w, scale) if transpose else
                  conv_w * scale.reshape(-1, *[1] * (conv_w.ndim - 1))).to(conv_w.dtype)
        # (PyTorch's order, ((b - mean) * rsqrt) * weight + shift, for its bits: one ulp in
        # the bias flips requantization ties in a quantized model)
        centred = (bias - bn_rm) * (bn_rv + bn_eps).rsqrt()
        fused_b = ((centred if bn_w is None else centred * bn_w) + shift).to(
            bias.dtype if conv_b is not None else conv_w.dtype)
    return (Parameter(weight, conv_w.requires_grad),
            Parameter(fused_b, bias.requires_grad))


def _transposed_scaled(conv_w: Tensor, scale: Tensor) -> Tensor:
    """A transposed convolution's weight (in, out/groups, *kernel) with each output channel
    scaled: groups is ``out`` over the weight's dimension 1, and group g's rows feed output
    channels g·out/groups onwards."""
    out, (cin, per_group, *kernel) = scale.shape[0], conv_w.shape
    groups = out // per_group if per_group else 0
    if not groups or groups * per_group != out or cin % groups:
        raise ShapeError(f"fuse_conv_bn_weights: a transposed convolution weight of shape "
                         f"{tuple(conv_w.shape)} does not fit a batch norm of {out} channels "
                         "(out_channels must be the weight's dimension 1 times groups)")
    grouped = conv_w.reshape(groups, cin // groups, per_group, *kernel)
    return (grouped * scale.reshape(groups, 1, per_group, *[1] * len(kernel))).reshape(
        conv_w.shape)


def fuse_linear_bn_weights(linear_w: Tensor, linear_b: Tensor | None, bn_rm: Tensor,
                           bn_rv: Tensor, bn_eps: float, bn_w: Tensor | None,
                           bn_b: Tensor | None) -> tuple[Parameter, Parameter]:
    """The weight and bias of a linear layer followed by a batch norm with these statistics
    and affine parameters.

    Example:
        >>> w, b = fuse_linear_bn_weights(ember.ones(2, 3), None, ember.zeros(2),
        ...                               ember.ones(2), 0.0, None, None)
        >>> w.tolist()
        [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    """
    scale, shift = _bn_scale(bn_rm, bn_rv, bn_eps, bn_w, bn_b)
    bias = ember.zeros_like(bn_rm) if linear_b is None else linear_b
    with ember.no_grad():
        weight = linear_w * scale.unsqueeze(-1)
        fused_b = (bias - bn_rm) * scale + shift
    return (Parameter(weight, linear_w.requires_grad),
            Parameter(fused_b, bias.requires_grad))


class FusionError(ArgumentError, AssertionError):
    """A pair that cannot be fused (in training mode, or without running statistics): an
    ArgumentError that is also the AssertionError PyTorch's fusion raises."""


def _check_eval(what: str, layer: Module, bn: Module) -> None:
    if layer.training or bn.training:
        raise FusionError(f"{what}: Fusion only for eval! Call .eval() on both "
                          f"{type(layer).__name__} and {type(bn).__name__} first")
    if bn.running_mean is None or bn.running_var is None:
        raise FusionError(f"{what}: {type(bn).__name__} keeps no running statistics "
                          "(track_running_stats=False), so there is nothing to fold in")


def fuse_conv_bn_eval(conv: L, bn: Module, transpose: bool = False) -> L:
    """A copy of ``conv`` that computes ``bn(conv(x))`` of the eval-mode pair.

    Example:
        >>> conv, bn = nn.Conv2d(3, 4, 3).eval(), nn.BatchNorm2d(4).eval()
        >>> x = ember.randn(1, 3, 5, 5)
        >>> bool(ember.allclose(fuse_conv_bn_eval(conv, bn)(x), bn(conv(x)), atol=1e-6))
        True
    """
    _check_eval("fuse_conv_bn_eval", conv, bn)
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias,
        transpose)
    return fused


def fuse_linear_bn_eval(linear: L, bn: Module) -> L:
    """A copy of ``linear`` that computes ``bn(linear(x))`` of the eval-mode pair (``bn``
    has ``linear.out_features`` features, or one).

    Example:
        >>> lin, bn = nn.Linear(3, 4).eval(), nn.BatchNorm1d(4).eval()
        >>> x = ember.randn(2, 3)
        >>> bool(ember.allclose(fuse_linear_bn_eval(lin, bn)(x), bn(lin(x)), atol=1e-6))
        True
    """
    _check_eval("fuse_linear_bn_eval", linear, bn)
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise ShapeError("fuse_linear_bn_eval: To fuse, linear.out_features must equal "
                         "bn.num_features or bn.num_features must be 1; got "
                         f"{linear.out_features} and {bn.num_features}")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
    return fused
