"""Quantized ``LayerNorm``, ``GroupNorm`` and ``InstanceNorm1d/2d/3d``
(``torch.ao.nn.quantized``), as PyTorch's ``quantized_normalize`` CPU kernel computes them.

Each group of ``n`` integers (a layer-norm row; a group of channels of one sample) gets, in
float32, ``mean = sum(q) / n - zero_point`` and ``var = max(sum(q²) / n - (sum(q) / n)², 0)``
from exact integer sums, and ``inv_std = x_scale / sqrt(var · x_scale · x_scale + eps)`` (the
square root in float64). Then ``v = (q - zero_point - mean) · inv_std · weight + bias`` per
element for layer norm, ``(q - zero_point - mean) · (inv_std · weight) + bias`` per channel for
group and instance norm (instance norm is group norm with a group per channel), quantized to
the output ``scale`` and ``zero_point`` with ``nearbyint(v · (1 / scale)) + zero_point`` — except
the last ``n % 64`` elements of each layer-norm row, which the kernel's scalar loop quantizes
as :func:`ember.quant.kernels.quantize` does (the two differ only on exact ties).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ember import nn
from ember.errors import ArgumentError
from ember.nn.module import Module
from ember.ops.creation import from_numpy, tensor
from ember.quant import kernels
from ember.quant.modules.quantized import QuantizedName, _quantized_input, output_qparams
from ember.quant.qtensor import QuantizedTensor
from ember.quant.qtypes import quint8
from ember.tensor import Tensor

__all__ = ["LayerNorm", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]

_F32 = np.float32


def _centred_and_inv_std(q: np.ndarray, zero_point: int, scale: float, eps: float
                         ) -> tuple[np.ndarray, np.ndarray]:
    """``q`` (groups, n) minus its zero point and group mean, and each group's
    ``scale / std`` as a (groups, 1) column, in the kernel's float32 steps."""
    n = _F32(q.shape[1])
    wide = q.astype(np.int64)
    mean_shifted = wide.sum(1, keepdims=True).astype(_F32) / n
    var = np.maximum((wide * wide).sum(1, keepdims=True).astype(_F32) / n
                     - mean_shifted * mean_shifted, _F32(0))
    s = _F32(scale)
    inv_std = (np.float64(s) / np.sqrt((var * s * s).astype(np.float64) + eps)).astype(_F32)
    centred = (wide - zero_point).astype(_F32) - (mean_shifted - _F32(zero_point))
    return centred, inv_std


def _weights(module: Module, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The module's float32 weight and bias as flat arrays (ones and zeros when absent)."""
    weight, bias = getattr(module, "weight", None), getattr(module, "bias", None)
    w = np.ones(n, _F32) if weight is None else weight.detach().numpy().astype(_F32).ravel()
    b = np.zeros(n, _F32) if bias is None else bias.detach().numpy().astype(_F32).ravel()
    return w, b


def _result(q: np.ndarray, shape: tuple, module: Module) -> QuantizedTensor:
    return QuantizedTensor(from_numpy(q.reshape(shape)), quint8, float(module.scale),
                           int(module.zero_point))


def layer_norm(x: QuantizedTensor, module: Module) -> QuantizedTensor:
    """``module``'s layer norm of the quantized ``x`` (``quantized::layer_norm``)."""
    shape = tuple(module.normalized_shape)
    if tuple(x.shape[len(x.shape) - len(shape):]) != shape or x.ndim < len(shape):
        raise ArgumentError(f"quantized LayerNorm: expected an input whose last dims are "
                            f"{shape}, got shape {tuple(x.shape)}")
    n = math.prod(shape)
    q = x._int.numpy().reshape(-1, n)
    out_scale, out_zp = float(module.scale), int(module.zero_point)
    centred, inv_std = _centred_and_inv_std(q, x._zero_point, x._scale, module.eps)
    w, b = _weights(module, n)
    v = centred * inv_std * w + b
    out = kernels.quantize_rounded(v, _F32(1) / _F32(out_scale), out_zp)
    tail = n - n % kernels.VECTOR_BLOCK
    out[:, tail:] = kernels.quantize(v[:, tail:], out_scale, out_zp, 0, 255, np.uint8)
    return _result(out, tuple(x.shape), module)


def group_norm(x: QuantizedTensor, module: Module, groups: int) -> QuantizedTensor:
    """``module``'s group norm with ``groups`` groups of the quantized ``x``
    (``quantized::group_norm``; ``instance_norm`` with a group per channel)."""
    channels = x.shape[1]
    q = x._int.numpy().reshape(x.shape[0] * groups, -1)
    centred, inv_std = _centred_and_inv_std(q, x._zero_point, x._scale, module.eps)
    w, b = _weights(module, channels)
    per_group = (x.shape[0], groups, channels // groups, -1)
    scale = (inv_std.reshape(x.shape[0], groups, 1, 1)
             * w.reshape(1, groups, -1, 1))  # (float32: the kernel's gamma_p)
    v = centred.reshape(per_group) * scale + b.reshape(1, groups, -1, 1)
    out = kernels.quantize_rounded(v, _F32(1) / _F32(float(module.scale)),
                                   int(module.zero_point))
    return _result(out, tuple(x.shape), module)


class _QuantizedNorm(QuantizedName):
    """What the quantized norms share: float weight and bias (as given; shared with the float
    module by ``from_float``), and the output ``scale`` and ``zero_point`` as 0-d buffers (as
    PyTorch's); a float tensor (after the quantized region) gets the float norm."""

    _affine = "affine"  # the float module's attribute saying whether it has weight and bias

    def _set_quantized(self, weight: Any, bias: Any, scale: float, zero_point: int) -> None:
        self.weight, self.bias = weight, bias
        self.register_buffer("scale", tensor(float(scale)))
        self.register_buffer("zero_point", tensor(int(zero_point)))

    def forward(self, input: QuantizedTensor | Tensor) -> QuantizedTensor | Tensor:
        if isinstance(input, Tensor):
            return super().forward(input)
        return self._normalize(_quantized_input(self._op, input))

    @classmethod
    def from_float(cls, mod: Module) -> Any:
        """The quantized twin of an observed float norm: its sizes, ``eps`` and affine
        parameters (shared), and its observer's output scale and zero point."""
        scale, zero_point = output_qparams(mod.activation_post_process)
        return cls(*cls._sizes(mod), mod.weight, mod.bias, scale, zero_point, mod.eps,
                   getattr(mod, cls._affine))


class LayerNorm(_QuantizedNorm, nn.LayerNorm):
    """A quantized ``nn.LayerNorm``: uint8 in and out, float weight and bias.

    Example:
        >>> m = LayerNorm([4], None, None, 0.05, 128, elementwise_affine=False)
        >>> x = ember.quantize_per_tensor(ember.tensor([[1.0, 2.0, 3.0, 4.0]]), 0.1, 0,
        ...                               ember.quint8)
        >>> m(x).dequantize()
        tensor([[-1.3500, -0.4500,  0.4500,  1.3500]])
    """

    _op = "layer_norm"
    _affine = "elementwise_affine"

    def __init__(self, normalized_shape: Any, weight: Any, bias: Any, scale: float,
                 zero_point: int, eps: float = 1e-5, elementwise_affine: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(normalized_shape, eps=eps, elementwise_affine=elementwise_affine,
                         device=device, dtype=dtype)
        self._set_quantized(weight, bias, scale, zero_point)

    def _normalize(self, x: QuantizedTensor) -> QuantizedTensor:
        return layer_norm(x, self)

    @staticmethod
    def _sizes(mod: Module) -> tuple:
        return (mod.normalized_shape,)


class GroupNorm(_QuantizedNorm, nn.GroupNorm):
    """A quantized ``nn.GroupNorm``: uint8 (N, C, *) in and out, float weight and bias.

    Example:
        >>> m = GroupNorm(1, 2, None, None, 0.05, 128, affine=False)
        >>> x = ember.quantize_per_tensor(ember.tensor([[[1.0], [3.0]]]), 0.1, 0, ember.quint8)
        >>> m(x).dequantize().flatten()
        tensor([-1.,  1.])
    """

    _op = "group_norm"

    def __init__(self, num_groups: int, num_channels: int, weight: Any, bias: Any,
                 scale: float, zero_point: int, eps: float = 1e-5, affine: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(num_groups, num_channels, eps, affine, device, dtype)
        self._set_quantized(weight, bias, scale, zero_point)

    def _normalize(self, x: QuantizedTensor) -> QuantizedTensor:
        if x.ndim < 3 or x.shape[1] != self.num_channels:
            raise ArgumentError(f"quantized GroupNorm: expected an (N, {self.num_channels}, *) "
                                f"input of at least 3 dims, got shape {tuple(x.shape)}")
        return group_norm(x, self, self.num_groups)

    @staticmethod
    def _sizes(mod: Module) -> tuple:
        return mod.num_groups, mod.num_channels


class _QuantizedInstanceNorm(_QuantizedNorm):
    """Instance norm of a quantized tensor: each (sample, channel) normalised with its own
    statistics (the running ones are not used, as in PyTorch's quantized kernel)."""

    _op = "instance_norm"

    def __init__(self, num_features: int, weight: Any, bias: Any, scale: float,
                 zero_point: int, eps: float = 1e-5, momentum: float = 0.1,
                 affine: bool = False, track_running_stats: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype)
        self._set_quantized(weight, bias, scale, zero_point)

    def _normalize(self, x: QuantizedTensor) -> QuantizedTensor:
        if x.ndim != self._dims[-1] or x.shape[1] != self.num_features:
            raise ArgumentError(f"quantized {type(self).__name__}: expected a {self._dims[-1]}-D "
                                f"input with {self.num_features} channels, got shape "
                                f"{tuple(x.shape)}")
        return group_norm(x, self, self.num_features)

    @staticmethod
    def _sizes(mod: Module) -> tuple:
        return (mod.num_features,)


class InstanceNorm1d(_QuantizedInstanceNorm, nn.InstanceNorm1d):
    """A quantized ``nn.InstanceNorm1d``: uint8 (N, C, L) in and out."""


class InstanceNorm2d(_QuantizedInstanceNorm, nn.InstanceNorm2d):
    """A quantized ``nn.InstanceNorm2d``: uint8 (N, C, H, W) in and out."""


class InstanceNorm3d(_QuantizedInstanceNorm, nn.InstanceNorm3d):
    """A quantized ``nn.InstanceNorm3d``: uint8 (N, C, D, H, W) in and out."""
