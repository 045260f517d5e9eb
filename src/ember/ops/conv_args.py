"""What every convolution checks and shares: operands, sizes, padding, the bias and the
rows of a channels-last tensor (:mod:`ember.ops.conv`, :mod:`ember.ops.conv_transpose`)."""

from __future__ import annotations

from math import prod
from typing import Any

import numpy as np

from ember.errors import ArgumentError, DTypeError, ShapeError
from ember.ops.forwarding import check_layer_operands
from ember.ops.im2col import Pads, ntuple, symmetric
from ember.ops.primitive import DISPATCH
from ember.tensor import Tensor

# numba's loops' dtypes: depthwise_conv2d (else unfold and GEMMs), a 2-D transposed one's fold
NUMBA_FLOATS = (np.float32, np.float64)


def check_operands(op: str, nd: int, x: Tensor, weight: Tensor, bias: Tensor | None,
                   groups: int) -> None:
    check_layer_operands(op, x, weight, bias)
    x_dtype, weight_ndim = x.dtype, weight.ndim
    if not x_dtype.is_floating_point and not x_dtype.is_complex:
        raise DTypeError(f"{op}: expected a floating or complex input, got {x.dtype.name}. "
                         "Hint: call .float() on it")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t.dtype is not x.dtype and not DISPATCH.casting:
            raise DTypeError(f"{op}: input is {x.dtype.name} but {name} is {t.dtype.name}; "
                             f"they must match. Hint: convert one with .to()")
    if weight_ndim != nd + 2:
        raise ShapeError(f"{op}: expected a {nd + 2}-D weight, got shape "
                         f"{tuple(weight.shape)}")
    if not isinstance(groups, int) or groups < 1:
        raise ArgumentError(f"{op}: groups must be a positive int, got {groups!r}")


def check_bias(op: str, bias: Tensor | None, channels: int) -> None:
    if bias is not None and bias._data.shape != (channels,):
        raise ShapeError(f"{op}: bias of shape {tuple(bias.shape)} given for {channels} output "
                         f"channels; expected shape ({channels},)")


def int_sizes(op: str, nd: int, value: Any, name: str, least: int) -> tuple[int, ...]:
    """``value`` (an int or ``nd`` ints) as ``nd`` ints, each at least ``least``."""
    out = ntuple(value, nd, op, name)
    if min(out) < least:
        raise ShapeError(f"{op}: {name} must be {'positive' if least else 'non-negative'}, got "
                         f"{value!r}")
    return out


def conv_padding(op: str, padding: Any, kernel: tuple[int, ...], dilation: tuple[int, ...],
                 stride: tuple[int, ...]) -> Pads:
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * len(kernel)
        if padding == "same":
            if any(s != 1 for s in stride):
                raise ArgumentError(f"{op}: padding='same' is not supported for strided "
                                    f"convolutions (stride {stride})")
            # the odd element of the total goes to the high side, as PyTorch does
            return tuple((d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2)
                         for k, d in zip(kernel, dilation, strict=True))
        raise ArgumentError(f"{op}: padding must be 'valid', 'same', an int or a tuple, got "
                            f"{padding!r}")
    return symmetric(int_sizes(op, len(kernel), padding, "padding", 0))


def add_bias(out: Tensor, bias: Tensor | None, nd: int) -> Tensor:
    if bias is None:
        return out
    if DISPATCH.casting and bias.dtype is not out.dtype:  # autocast: one low-precision GEMM
        bias = bias.to(out.dtype)
    return out + bias.reshape((bias._data.shape[0],) + (1,) * nd)



def channels_last_rows(t: Tensor) -> Tensor:
    """(N, C, *spatial) → (N·∏spatial, C): a free reshape of a channels-last tensor."""
    nd = t.ndim - 2
    rows = t.shape[0] * prod(t.shape[2:])  # not -1: without channels it could be any size
    return t.permute((0, *range(2, 2 + nd), 1)).reshape((rows, t.shape[1]))


def conv_saved(groups: Any) -> dict:
    """PyTorch's names of what ``ConvolutionBackward0`` saves (``grad_fn._saved_input``,
    ``_saved_padding``…), read off a convolution node whose input ``i`` holds ``groups``
    (None: one group). A padding of unequal sides reads as its smaller side, as PyTorch's
    convolution, which pads the rest beforehand."""
    return {"input": lambda node: node.saved_input(0),
            "weight": lambda node: node.saved_input(1),
            "stride": lambda node: node.params["stride"],
            "padding": lambda node: tuple(min(p) for p in node.params["padding"]),
            "dilation": lambda node: node.params["dilation"],
            "groups": lambda node: 1 if groups is None else node.inputs[groups].shape[1],
            "transposed": lambda node: False,
            "output_padding": lambda node: (0,) * len(node.params["stride"]),
            "bias_sym_sizes_opt": lambda node: (
                tuple(node.inputs[2].shape) if len(node.inputs) > 2 else (0,))}
