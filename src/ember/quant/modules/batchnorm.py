"""Quantized ``BatchNorm2d`` and ``BatchNorm3d`` (``torch.ao.nn.quantized``): the running
statistics folded, per channel, into ``alpha = weight / sqrt(var + eps) * input_scale /
output_scale`` and ``beta = (bias - mean * weight / sqrt(var + eps)) / output_scale`` (in
float32, as PyTorch's ``compute_fused_params``), then each output integer is
``nearbyint(fma(alpha, q - input_zero_point, beta)) + output_zero_point``, clamped (its
``q_batch_norm`` kernel); ``BNReLU2d``/``BNReLU3d`` (``torch.ao.nn.intrinsic.quantized``)
clamp from below at the output zero point too (its ReLU-fused kernel)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import nn
from ember.dtypes import float32
from ember.errors import ArgumentError, DTypeError
from ember.nn.module import Module
from ember.ops.creation import from_numpy, tensor
from ember.ops.int_args import as_float, as_int
from ember.quant.modules import intrinsic as nni
from ember.quant.modules.quantized import QuantizedName, _quantized_input, output_qparams
from ember.quant.qtensor import QuantizedTensor
from ember.quant.qtypes import qint8, qint32, quint8
from ember.tensor import Tensor

__all__ = ["BatchNorm2d", "BatchNorm3d", "BNReLU2d", "BNReLU3d", "quantized_batch_norm"]

_F32 = np.float32


def _batch_norm(x: QuantizedTensor, weight: np.ndarray | None, bias: np.ndarray | None,
                mean: np.ndarray, var: np.ndarray, eps: float, out_scale: float, out_zp: int,
                relu: bool) -> QuantizedTensor:
    """The folded batch norm of the module docstring on ``x``'s integers (any rank >= 2,
    channels on axis 1)."""
    if x.numel() == 0:  # (PyTorch's kernel gives an empty batch back at its own qparams)
        return QuantizedTensor(from_numpy(x._int.numpy().copy()), x.dtype, x._scale,
                               x._zero_point)
    channels = x.shape[1]
    weight = np.ones(channels, _F32) if weight is None else weight
    bias = np.zeros(channels, _F32) if bias is None else bias
    inv_sigma = (1.0 / np.sqrt(var + _F32(eps)).astype(np.float64)).astype(_F32)
    alpha = (inv_sigma * weight).astype(np.float64) * (np.float64(_F32(x._scale)) / out_scale)
    beta = (bias - mean * inv_sigma * weight).astype(np.float64) / out_scale
    along = (1, channels) + (1,) * (x.ndim - 2)
    alpha = alpha.astype(_F32).astype(np.float64).reshape(along)
    beta = beta.astype(_F32).astype(np.float64).reshape(along)
    centred = x._int.numpy().astype(np.float64) - x._zero_point
    v = (alpha * centred + beta).astype(_F32)  # (exact in float64: one rounding, an fma)
    q = np.rint(v).astype(np.float64) + out_zp
    if x.dtype is qint32:  # (its vectorized loop, 16 channels at a time on AVX512, adds
        vec = channels // 16 * 16  # the zero point in float32 before rounding: fbgemm's)
        q[:, :vec] = np.rint(v[:, :vec] + _F32(out_zp))
    low = max(out_zp, x.dtype.min) if relu else x.dtype.min
    q = np.clip(q, low, x.dtype.max)
    return QuantizedTensor(from_numpy(q.astype(x._int.numpy().dtype)), x.dtype, out_scale,
                           out_zp)


def quantized_batch_norm(input: QuantizedTensor, weight: Tensor, bias: Tensor, mean: Tensor,
                         var: Tensor, eps: float, output_scale: float,
                         output_zero_point: int) -> QuantizedTensor:
    """Batch norm of a per-tensor quantized 2-D to 5-D ``(N, C, *)`` tensor with the given
    float32 statistics (``C`` elements each), quantized to ``output_scale`` and the integer
    ``output_zero_point`` (``torch.quantized_batch_norm``).

    Example:
        >>> x = ember.quantize_per_tensor(ember.tensor([[1.0, 2.0]]), 0.5, 0, ember.quint8)
        >>> one, zero = ember.ones(2), ember.zeros(2)
        >>> ember.quantized_batch_norm(x, one, zero, zero, one, 0.0, 0.25, 0).dequantize()
        tensor([[1., 2.]])
    """
    op = "quantized_batch_norm"
    x = _quantized_input("batch_norm", input, (quint8, qint8, qint32))
    if not 2 <= x.ndim <= 5:
        raise ArgumentError(f"{op}: expected a 2-D to 5-D (N, C, *) input (as PyTorch), got "
                            f"shape {tuple(x.shape)}")
    stats = {"weight": weight, "bias": bias, "mean": mean, "var": var}
    for name, value in stats.items():
        if not isinstance(value, Tensor) or value.numel() != x.shape[1]:
            raise ArgumentError(f"{op}: expected a float32 tensor {name} of C = {x.shape[1]} "
                                f"elements (as PyTorch, any shape), got input shape "
                                f"{tuple(x.shape)} and {name} "
                                f"{getattr(value, 'shape', type(value).__name__)}")
        if value.dtype is not float32:
            raise DTypeError(f"{op}: {name} must be float32 (as PyTorch), got "
                             f"{value.dtype.name}. Hint: pass {name}.float()")
    w, b, m, v = (t.detach().numpy().reshape(-1) for t in stats.values())
    return _batch_norm(x, w, b, m, v, as_float(eps, op, "eps"),
                       as_float(output_scale, op, "output_scale"),
                       as_int(output_zero_point, op, "output_zero_point"), False)


class _QuantizedBatchNorm(QuantizedName):
    """Batch norm of a quantized tensor with the running statistics (in training mode too,
    as PyTorch's), to the output ``scale`` and ``zero_point`` (0-d buffers, as PyTorch's);
    a float tensor gets the float batch norm. Mixed in before ``nn.BatchNorm{n}d``."""

    _n: int
    _relu = False

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1) -> None:
        super().__init__(num_features, eps, momentum, True, True)
        self.register_buffer("scale", tensor(1.0))
        self.register_buffer("zero_point", tensor(0))

    def forward(self, input: QuantizedTensor | Tensor) -> QuantizedTensor | Tensor:
        if isinstance(input, Tensor):  # (after the quantized region: float batch norm)
            out = super().forward(input)
            return out.relu() if self._relu else out
        x = _quantized_input(f"batch_norm{self._n}d", input, (quint8, qint8, qint32))
        if x.ndim != self._n + 2 or x.shape[1] != self.num_features:
            raise ArgumentError(f"quantized {type(self).__name__}: expected a {self._n + 2}-D "
                                f"input with {self.num_features} channels, got shape "
                                f"{tuple(x.shape)}")
        weight = None if self.weight is None else self.weight.detach().numpy()
        bias = None if self.bias is None else self.bias.detach().numpy()
        return _batch_norm(x, weight, bias, self.running_mean.numpy(),
                           self.running_var.numpy(), self.eps, float(self.scale.item()),
                           int(self.zero_point.item()), self._relu)

    @classmethod
    def from_float(cls, mod: Module) -> Any:
        """The quantized twin of an observed float batch norm: its parameters and running
        statistics (shared), its observer's output scale and zero point (a fused
        ``BNReLU2d``/``BNReLU3d`` of this dimension: its batch norm's, with the fused module's
        observer). As PyTorch's, the class decides the ReLU, not ``mod``."""
        scale, zero_point = output_qparams(mod.activation_post_process)
        if type(mod) is (nni.BNReLU2d, nni.BNReLU3d)[cls._n - 2]:
            mod = mod[0]
        new = cls(mod.num_features, mod.eps)
        new.weight, new.bias = mod.weight, mod.bias
        new.running_mean, new.running_var = mod.running_mean, mod.running_var
        new.scale, new.zero_point = tensor(scale), tensor(zero_point)
        return new


class BatchNorm2d(_QuantizedBatchNorm, nn.BatchNorm2d):
    """A quantized ``nn.BatchNorm2d``: quint8, qint8 or qint32 (N, C, H, W) in and out.

    Example:
        >>> m = BatchNorm2d(2)
        >>> m(ember.quantize_per_tensor(ember.ones(1, 2, 3, 3), 0.1, 0, ember.quint8)).shape
        ember.Size([1, 2, 3, 3])
    """

    _n = 2


class BatchNorm3d(_QuantizedBatchNorm, nn.BatchNorm3d):
    """A quantized ``nn.BatchNorm3d``: quint8, qint8 or qint32 (N, C, D, H, W) in and out."""

    _n = 3


class BNReLU2d(BatchNorm2d):
    """A quantized ``BatchNorm2d`` then ``ReLU`` (of a fused ``intrinsic.BNReLU2d``).

    Example:
        >>> m = BNReLU2d(2)
        >>> q = ember.quantize_per_tensor(-ember.ones(1, 2, 3, 3), 0.1, 0, ember.quint8)
        >>> m(q).dequantize().min().item()
        0.0
    """

    _relu = True


class BNReLU3d(BatchNorm3d):
    """A quantized ``BatchNorm3d`` then ``ReLU`` (of a fused ``intrinsic.BNReLU3d``)."""

    _relu = True
