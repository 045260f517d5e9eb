"""Dynamically quantized modules (``torch.ao.nn.quantized.dynamic``): int8 weights, float
input and output; each call quantizes its input to uint8 with parameters chosen from that
input's range (PyTorch's ``ChooseQuantizationParams``, range halved as fbgemm does), multiplies
in integers and scales the accumulator back to float32 (fbgemm's ``ReQuantizeForFloat``)."""

from __future__ import annotations

import numpy as np

from ember.nn.module import Module
from ember.ops.creation import from_numpy
from ember.quant import kernels
from ember.quant.modules.quantized import Linear as StaticLinear
from ember.quant.modules.quantized import eager_only, linear_rows, quantized_weight
from ember.tensor import Tensor

__all__ = ["Linear", "LinearReLU"]


def dynamic_linear(a: np.ndarray, w_centred: np.ndarray, w_scales: np.ndarray,
                   bias: np.ndarray | None, relu: bool = False) -> np.ndarray:
    """``a @ wᵀ + bias`` of float32 rows ``a`` as fbgemm's dynamic linear kernel: ``a``
    quantized to uint8 with parameters chosen from its range (halved), the exact integer
    product, scaled back to float32."""
    scale, zero_point = kernels.choose_qparams(a, reduce_range=True)
    xq = kernels.quantize(a, scale, zero_point, 0, 255, np.uint8)
    acc = kernels.linear_accumulate(kernels.centred(xq, zero_point), w_centred)
    return kernels.float_output(acc, scale, w_scales, bias, relu)


class Linear(StaticLinear):
    """A dynamically quantized ``nn.Linear``: float32 in, float32 out, int8 weight.

    Example:
        >>> m = Linear(3, 2)
        >>> m(ember.ones(4, 3)).shape
        ember.Size([4, 2])
    """

    def forward(self, x: Tensor) -> Tensor:
        if not isinstance(x, Tensor) or not x.dtype.is_floating_point:
            raise TypeError(f"dynamic quantized linear: expected a float tensor, got "
                            f"{getattr(x, 'dtype', type(x).__name__)!r}")
        lead = linear_rows("dynamic quantized Linear", x.shape, self.in_features)
        with eager_only("dynamic quantized Linear"):
            a = x.detach().numpy().astype(np.float32, copy=False)
        out = dynamic_linear(a.reshape(-1, self.in_features), self._w_centred, self._w_scales,
                             self._b, self.relu)
        return from_numpy(out.reshape(*lead, self.out_features))

    @classmethod
    def from_float(cls, mod: Module) -> Linear:
        layer = mod[0] if hasattr(mod, "__getitem__") else mod
        qmod = cls(layer.in_features, layer.out_features, layer.bias is not None)
        qmod._set_weight(quantized_weight(layer, mod.qconfig), layer.bias)
        return qmod

    def extra_repr(self) -> str:
        return f"{self._shape_repr()}, dtype=ember.qint8, qscheme={self._w.qscheme()!r}"


class LinearReLU(Linear):
    """A dynamically quantized ``Linear`` with ReLU fused."""

    relu = True
