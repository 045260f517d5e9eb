"""Dynamically quantized modules (``torch.ao.nn.quantized.dynamic``): int8 weights, float
input and output; each call quantizes its input to uint8 with parameters chosen from that
input's range (PyTorch's ``ChooseQuantizationParams``, range halved as fbgemm does), multiplies
in integers and scales the accumulator back to float32 (fbgemm's ``ReQuantizeForFloat``).
With ``dtype=float16`` (``float16_dynamic_qconfig``) the weights are float16 instead and the
product is a float32 GEMM (fbgemm's float16 one)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.backends import quantized as quantized_backend
from ember.dtypes import float16
from ember.errors import ArgumentError, DTypeError, OpError
from ember.nn.module import Module
from ember.ops.creation import from_numpy, tensor
from ember.quant import kernels
from ember.quant.modules.quantized import Linear as StaticLinear
from ember.quant.modules.quantized import eager_only, linear_rows, quantized_weight
from ember.quant.qtensor import QuantizedTensor
from ember.quant.qtypes import QDType, qint8
from ember.tensor import Tensor

__all__ = ["Linear", "LinearReLU"]


def dynamic_linear(a: np.ndarray, w_centred: np.ndarray, w_scales: np.ndarray,
                   bias: np.ndarray | None, engine: str, relu: bool = False) -> np.ndarray:
    """``a @ wᵀ + bias`` of float32 rows ``a`` as ``engine``'s dynamic linear kernel: ``a``
    quantized to uint8 with parameters chosen from its range (halved for fbgemm; QNNPACK
    ignores ``reduce_range``), the exact integer product, scaled back to float32 (fbgemm's
    ``ReQuantizeForFloat``, or QNNPACK's two float32 steps)."""
    qnnpack = engine == "qnnpack"
    scale, zero_point = kernels.choose_qparams(a, reduce_range=not qnnpack)
    xq = kernels.quantize(a, scale, zero_point, 0, 255, np.uint8)
    acc = kernels.linear_accumulate(kernels.centred(xq, zero_point), w_centred)
    output = kernels.float_output_qnnpack if qnnpack else kernels.float_output
    return output(acc, scale, w_scales, bias, relu)


def float16_weight(w: np.ndarray, owner: str) -> np.ndarray:
    """``w`` packed as fbgemm's float16 kernels take it (:func:`kernels.float16_weight`).
    PyTorch has no QNNPACK float16 kernels: under the ``"qnnpack"`` engine this raises, as
    PyTorch's packing does."""
    if quantized_backend.engine == "qnnpack":
        raise OpError(f"{owner}: float16 dynamic weights are not supported by QNNPACK "
                      "(as PyTorch's quantized::linear_prepack_fp16). Hint: set "
                      "ember.backends.quantized.engine = 'x86' or use dtype=ember.qint8")
    return kernels.float16_weight(w)


class Linear(StaticLinear):
    """A dynamically quantized ``nn.Linear``: float32 in, float32 out, int8 weight (or
    float16 with ``dtype=ember.float16``).

    Example:
        >>> m = Linear(3, 2)
        >>> m(ember.ones(4, 3)).shape
        ember.Size([4, 2])
        >>> Linear(3, 2, dtype=ember.float16)
        DynamicQuantizedLinear(in_features=3, out_features=2, dtype=ember.float16)
    """

    _name_prefix = "DynamicQuantized"

    def __init__(self, in_features: int, out_features: int, bias_: bool = True,
                 dtype: QDType | Any = qint8) -> None:
        super().__init__(in_features, out_features, bias_)
        if dtype is not qint8 and dtype is not float16:
            raise ArgumentError(f"dynamic quantized Linear: dtype must be ember.qint8 or "
                                f"ember.float16, got {dtype!r}")
        self._dtype = dtype
        if dtype is float16:
            self._set_float16_weight(np.zeros((out_features, in_features), np.float32), self._b)

    def _set_float16_weight(self, w: np.ndarray, bias: np.ndarray | None) -> None:
        self._w16 = float16_weight(w, "dynamic quantized Linear")
        self._b = None if bias is None else np.asarray(bias, np.float32).copy()

    def weight(self) -> QuantizedTensor | Tensor:
        """The int8 weight, or with ``dtype=float16`` the float16 values as float32 (as
        PyTorch's)."""
        if self._dtype is float16:
            return from_numpy(self._w16.astype(np.float32))
        return super().weight()

    def set_weight_bias(self, w: QuantizedTensor | Tensor, b: Tensor | None) -> None:
        """Replaces the weight (int8 quantized, or with ``dtype=float16`` a float tensor) and
        the float bias, as PyTorch's."""
        if self._dtype is not float16:
            return super().set_weight_bias(w, b)
        if not isinstance(w, Tensor) or tuple(w.shape) != self._w16.shape:
            shown = tuple(w.shape) if isinstance(w, Tensor) else type(w).__name__
            raise ArgumentError(f"dynamic quantized Linear.set_weight_bias: expected a float "
                                f"weight of shape {self._w16.shape}, got {shown}")
        self._set_float16_weight(w.detach().float().numpy(),
                                 None if b is None else b.detach().float().numpy())

    def forward(self, x: Tensor) -> Tensor:
        if not isinstance(x, Tensor) or not x.dtype.is_floating_point:
            raise DTypeError(f"dynamic quantized linear: expected a float tensor, got "
                             f"{getattr(x, 'dtype', type(x).__name__)!r}")
        lead = linear_rows("dynamic quantized Linear", x.shape, self.in_features)
        with eager_only("dynamic quantized Linear"):
            a = x.detach().numpy().astype(np.float32, copy=False)
        a = a.reshape(-1, self.in_features)
        if self._dtype is float16:
            out = kernels.float16_linear(a, self._w16, self._b, self.relu)
        else:
            out = dynamic_linear(a, self._w_centred, self._w_scales, self._b, self._engine,
                                 self.relu)
        return from_numpy(out.reshape(*lead, self.out_features))

    @classmethod
    def from_float(cls, mod: Module) -> Linear:
        """The dynamically quantized twin of a float ``Linear`` (or fused ``LinearReLU``) with
        a ``qconfig``: int8 weights, or float16 ones when its weight observer's dtype is
        ``float16``."""
        layer = mod[0] if hasattr(mod, "__getitem__") else mod
        dtype = mod.qconfig.weight().dtype
        qmod = cls(layer.in_features, layer.out_features, layer.bias is not None,
                   dtype=float16 if dtype is float16 else qint8)
        if dtype is float16:
            bias = None if layer.bias is None else layer.bias.detach().float().numpy()
            qmod._set_float16_weight(layer.weight.detach().float().numpy(), bias)
        else:
            qmod._set_weight(quantized_weight(layer, mod.qconfig), layer.bias)
        return qmod

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        if self._dtype is not float16:
            return super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "weight"] = from_numpy(self._w16.copy())  # (float16 values)
        if self._b is not None:
            destination[prefix + "bias"] = self.bias()

    def _load_from_state_dict(self, state_dict: Any, prefix: str, local_metadata: dict,
                              strict: bool, missing_keys: list, unexpected_keys: list,
                              error_msgs: list) -> None:
        if self._dtype is not float16:
            return super()._load_from_state_dict(state_dict, prefix, local_metadata, strict,
                                                 missing_keys, unexpected_keys, error_msgs)
        if prefix + "weight" not in state_dict:
            missing_keys.append(prefix + "weight")
            return
        w = tensor(state_dict[prefix + "weight"]).numpy()
        if w.shape != self._w16.shape:
            error_msgs.append(f"size mismatch for {prefix}weight: copying a param with shape "
                              f"{w.shape} from checkpoint, the shape in current model is "
                              f"{self._w16.shape}.")
            return
        bias = state_dict.get(prefix + "bias")
        self._set_float16_weight(w, None if bias is None else tensor(bias).float().numpy())

    def extra_repr(self) -> str:
        if self._dtype is float16:
            return f"{self._shape_repr()}, dtype=ember.float16"
        return f"{self._shape_repr()}, dtype=ember.qint8, qscheme={self._w.qscheme()!r}"


class LinearReLU(Linear):
    """A dynamically quantized ``Linear`` with ReLU fused."""

    relu = True
