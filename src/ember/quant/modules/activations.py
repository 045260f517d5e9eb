"""Quantized activations (``torch.ao.nn.quantized``'s): ``ReLU6`` clamps the integers (same
scale and zero point); ``Hardswish``, ``LeakyReLU`` and ``ELU`` dequantize, apply the float
function and quantize to the output parameters their observer chose (ATen's vectorized
kernels, :func:`ember.quant.elementwise.unary`); ``Sigmoid``, ``Tanh`` and ``Hardsigmoid``
quantize to the fixed range the function covers (``[0, 1]`` in steps of 1/256 with zero point
0; ``Tanh``: ``[-1, 1]`` in steps of 2/256 with zero point 128; a ``qint8`` input gives a
``qint8`` output, its zero point 128 lower), as PyTorch's quantized kernels do."""

from __future__ import annotations

import warnings
from typing import Any, ClassVar

import numpy as np

from ember import nn
from ember.errors import ArgumentError
from ember.nn import functional as F
from ember.nn.module import Module
from ember.ops.creation import from_numpy
from ember.ops.random import randn
from ember.ops.unary import tanh
from ember.quant import elementwise, kernels
from ember.quant.modules.quantized import (
    OutputQParams,
    QuantizedName,
    _quantized_input,
    load_quantized_weight,
    output_qparams,
    save_quantized_weight,
)
from ember.quant.qtensor import QuantizedTensor, quantize_per_tensor
from ember.quant.qtypes import qint8, qint32, quint8
from ember.tensor import Tensor

__all__ = ["Sigmoid", "Tanh", "Hardsigmoid", "ReLU6", "Hardswish", "LeakyReLU", "ELU", "PReLU",
           "Softmax"]

_F32 = np.float32


class ReLU6(QuantizedName, Module):
    """ReLU6 of a quantized tensor (quint8, qint8 or qint32): its integers clamped to
    ``[zero_point, q(6.0)]``, same scale and zero point (PyTorch's ``quantized::relu6``;
    written into the input with ``inplace``); a float tensor gets the float ReLU6.

    Example:
        >>> x = ember.quantize_per_tensor(ember.tensor([-1.0, 2.0, 9.0]), 0.5, 4, ember.quint8)
        >>> ReLU6()(x).dequantize()
        tensor([0., 2., 6.])
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: QuantizedTensor | Tensor) -> QuantizedTensor | Tensor:
        if isinstance(input, Tensor):
            return F.relu6(input)
        x = _quantized_input("relu6", input, (quint8, qint8, qint32))
        ints = x._int.numpy()
        six = kernels.quantize(np.asarray(6.0, _F32), x._scale, x._zero_point, x.dtype.min,
                               x.dtype.max, ints.dtype)
        q = np.clip(ints, ints.dtype.type(x._zero_point), six)
        return x._with_integers(q, self.inplace)

    @classmethod
    def from_float(cls, mod: Module) -> ReLU6:
        return cls(mod.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class _ObservedActivation(QuantizedName, OutputQParams):
    """An activation of a quantized tensor quantized to the output ``scale`` and
    ``zero_point`` its observer chose; a float tensor (after a ``DeQuantize``) gets the float
    function."""

    op: ClassVar[str]

    def __init__(self, scale: float, zero_point: int) -> None:
        super().__init__()
        self.scale = float(scale)  # (Hardswish/LeakyReLU round it: ``_float32_scale``)
        self.zero_point = int(zero_point)

    def _float(self, x: Tensor) -> Tensor:
        raise NotImplementedError

    def _values(self, x: np.ndarray) -> np.ndarray:
        """The function on float32 values, operation for operation as ATen's kernel."""
        raise NotImplementedError

    def forward(self, input: QuantizedTensor | Tensor) -> QuantizedTensor | Tensor:
        if isinstance(input, Tensor):
            return self._float(input)
        x = _quantized_input(self.op, input, (quint8, qint8))
        return elementwise.unary(self.op, x, self._values, self.scale, self.zero_point,
                                 self._inverse_scale())

    def _inverse_scale(self) -> np.float32:
        """``1 / scale`` as the kernel computes it (in float32)."""
        return _F32(1) / _F32(self.scale)

    @classmethod
    def _options(cls, mod: Module) -> dict:
        return {}

    @classmethod
    def from_float(cls, mod: Module) -> _ObservedActivation:
        return cls(*output_qparams(mod.activation_post_process), **cls._options(mod))

    def extra_repr(self) -> str:
        return ""  # (as PyTorch's, which prints its float module's options, not scale)


class Hardswish(_ObservedActivation):
    """Quantized hardswish, ``x * min(max(x + 3, 0), 6) / 6``, to ``scale`` and
    ``zero_point``.

    Example:
        >>> x = ember.quantize_per_tensor(ember.tensor([-4.0, 1.0, 4.0]), 0.5, 8, ember.quint8)
        >>> Hardswish(0.25, 8)(x).dequantize()
        tensor([0.0000, 0.7500, 4.0000])
    """

    op = "hardswish"
    _float32_scale = True

    def _float(self, x: Tensor) -> Tensor:
        return F.hardswish(x)

    def _values(self, x: np.ndarray) -> np.ndarray:
        return x * np.minimum(np.maximum(x + _F32(3), _F32(0)), _F32(6)) / _F32(6)

    def _inverse_scale(self) -> np.float32:
        with np.errstate(divide="ignore"):  # (a scale of 0.0: inf, as its kernel's)
            return _F32(np.float64(1.0) / np.float64(self.scale))  # (it divides in float64)


class LeakyReLU(_ObservedActivation):
    """Quantized leaky ReLU (``negative_slope``) to ``scale`` and ``zero_point``."""

    op = "leaky_relu"
    _float32_scale = True

    def __init__(self, scale: float, zero_point: int, negative_slope: float = 1e-2,
                 inplace: bool = False) -> None:
        super().__init__(scale, zero_point)
        self.negative_slope, self.inplace = negative_slope, inplace

    def _float(self, x: Tensor) -> Tensor:
        return F.leaky_relu(x, self.negative_slope)

    def _values(self, x: np.ndarray) -> np.ndarray:
        return np.where(x >= 0, x, x * _F32(self.negative_slope))

    @classmethod
    def _options(cls, mod: Module) -> dict:
        return {"negative_slope": mod.negative_slope, "inplace": mod.inplace}

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class ELU(_ObservedActivation):
    """Quantized ELU, ``x`` or ``(exp(x) - 1) * alpha`` below zero, to ``scale`` and
    ``zero_point``."""

    op = "elu"

    def __init__(self, scale: float, zero_point: int, alpha: float = 1.0) -> None:
        super().__init__(scale, zero_point)
        self.alpha = alpha

    def _float(self, x: Tensor) -> Tensor:
        return F.elu(x, self.alpha)

    def _values(self, x: np.ndarray) -> np.ndarray:
        return np.where(x >= 0, x, (np.exp(np.minimum(x, _F32(0))) - _F32(1)) * _F32(self.alpha))

    @classmethod
    def _options(cls, mod: Module) -> dict:
        return {"alpha": mod.alpha}

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}"


class PReLU(OutputQParams):
    """Quantized PReLU with a quint8 weight (one slope, or one per channel along dim 1), to
    ``output_scale`` and ``output_zero_point``, as PyTorch's ``quantized::prelu``: with
    ``c = q - zero_point``, the integer ``max(c, 0) · (q(1) - w_zero_point) + min(c, 0) ·
    (w - w_zero_point)``, times ``x_scale · w_scale / output_scale`` in float32, rounded, plus
    the output zero point (``q(1)``: 1.0 quantized to the weight's parameters). Its state dict
    also holds the weight (``weight``, ``weight_scale``, ``weight_zero_point``), which
    PyTorch's leaves out.

    Example:
        >>> m = PReLU(0.5, 8)
        >>> m.set_weight(ember.quantize_per_tensor(ember.tensor([0.25]), 0.25, 0, ember.quint8))
        >>> x = ember.quantize_per_tensor(ember.tensor([-2.0, 3.0]), 0.5, 8, ember.quint8)
        >>> m(x).dequantize()
        tensor([-0.5000,  3.0000])
    """

    def __init__(self, output_scale: float, output_zero_point: int,
                 num_parameters: int = 1) -> None:
        super().__init__()
        self.num_parameters = num_parameters
        self.scale, self.zero_point = float(output_scale), int(output_zero_point)
        self.set_weight(quantize_per_tensor(randn(num_parameters), 1.0, 0, quint8))

    def set_weight(self, w: QuantizedTensor) -> None:
        """Replaces the slopes (a per-tensor quint8 quantized tensor)."""
        self.weight = _quantized_input("prelu (its weight)", w)

    def forward(self, input: QuantizedTensor | Tensor) -> QuantizedTensor | Tensor:
        if isinstance(input, Tensor):
            return F.prelu(input, self.weight.dequantize())
        x, w = _quantized_input("prelu", input), self.weight
        if x.ndim == 0:
            raise ArgumentError("quantized prelu: a 0-d input is not allowed")
        slopes = w._int.numpy().astype(np.int64) - w._zero_point
        if x.ndim != w.ndim:  # (one slope per channel, along dim 1)
            slopes = slopes.reshape((1, -1) + (1,) * (x.ndim - 2) if x.ndim > 1 else -1)
        one = int(kernels.quantize(np.asarray(1.0, _F32), w._scale, w._zero_point, 0, 255,
                                   np.uint8)) - w._zero_point
        c = x._int.numpy().astype(np.int64) - x._zero_point
        try:
            acc = np.maximum(c, 0) * one + np.minimum(c, 0) * slopes
        except ValueError as e:
            raise ArgumentError(f"quantized prelu: {w.numel()} slopes do not fit an input of "
                                f"shape {tuple(x.shape)} (one, or one per channel)") from e
        multiplier = _F32(x._scale) * _F32(w._scale) * (_F32(1) / _F32(self.scale))
        q = kernels.requantize_int(acc, multiplier, self.zero_point)
        return QuantizedTensor(from_numpy(q), quint8, self.scale, self.zero_point)

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        super()._save_to_state_dict(destination, prefix, keep_vars)
        save_quantized_weight(destination, prefix + "weight", self.weight)

    def _load_from_state_dict(self, state_dict: Any, prefix: str, local_metadata: dict,
                              strict: bool, missing_keys: list, unexpected_keys: list,
                              error_msgs: list) -> None:
        names = ["weight", "weight_scale", "weight_zero_point", "weight_axis"]
        found = {name: state_dict.pop(prefix + name) for name in names
                 if prefix + name in state_dict}
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)
        state_dict.update({prefix + name: value for name, value in found.items()})
        if len(found) == len(names):
            self.set_weight(load_quantized_weight(found, "weight", quint8))
        else:
            missing_keys.extend(prefix + name for name in names if name not in found)

    def _get_name(self) -> str:
        return "QuantizedPReLU"

    @classmethod
    def from_float(cls, mod: Module) -> PReLU:
        """The quantized twin of an observed float PReLU: its slopes quantized to quint8 by a
        fresh ``qconfig.weight`` observer (PyTorch warns when that observer's dtype is not
        quint8, and quantizes to quint8 all the same, as here)."""
        scale, zero_point = output_qparams(mod.activation_post_process)
        new = cls(scale, zero_point, mod.num_parameters)
        weight = mod.weight.detach().float()
        observer = mod.qconfig.weight()
        observer(weight)
        if observer.dtype is not quint8:
            warnings.warn(f"PReLU's weight observer should have dtype quint8 but got "
                          f"{observer.dtype!r}", stacklevel=2)
        w_scale, w_zero_point = observer.calculate_qparams()
        new.set_weight(quantize_per_tensor(weight, float(w_scale), int(w_zero_point), quint8))
        return new


class _FixedRangeActivation(Module):
    """An activation of a quantized tensor quantized to ``output_scale`` and
    ``output_zero_point`` (by default the fixed range, for the input's dtype), in the input's
    dtype; a float tensor (after a ``DeQuantize``) gets the float function. It prints as the
    float module (``Sigmoid()``), as PyTorch's, which keeps that module."""

    fn: ClassVar[Any]
    fixed: ClassVar[tuple[float, int]]

    def __init__(self, output_scale: float | None = None,
                 output_zero_point: int | None = None) -> None:
        super().__init__()
        self.scale = float(self.fixed[0] if output_scale is None else output_scale)
        self.zero_point = int(self.fixed[1] if output_zero_point is None else output_zero_point)
        self.fixed_range = output_scale is None and output_zero_point is None

    def forward(self, input: QuantizedTensor | Tensor) -> QuantizedTensor | Tensor:
        if isinstance(input, Tensor):
            return type(self).fn(input)
        x = _quantized_input(type(self).__name__.lower(), input, (quint8, qint8))
        shift = 128 if self.fixed_range and x.dtype is qint8 else 0  # (the range, signed)
        return quantize_per_tensor(type(self).fn(x.dequantize()), self.scale,
                                   self.zero_point - shift, x.dtype)

    @classmethod
    def from_float(cls, mod: Module) -> _FixedRangeActivation:
        """The quantized twin of ``mod``, with the fixed output parameters whatever its
        observer holds (PyTorch runs the float module on a quantized tensor, whose kernel
        fixes them: a torchvision MobileNetV3 checkpoint from before its hardsigmoid was
        observed loads the observer's scale as 1)."""
        return cls()


class Sigmoid(_FixedRangeActivation):
    """Quantized sigmoid: output scale 1/256, zero point 0 unless given.

    Example:
        >>> x = ember.quantize_per_tensor(ember.tensor([-10.0, 0.0, 10.0]), 0.1, 128, ember.quint8)
        >>> Sigmoid()(x).int_repr()
        tensor([  0, 128, 255], dtype=ember.uint8)
    """

    fn = staticmethod(F.sigmoid)
    fixed = (1.0 / 256.0, 0)


class Tanh(_FixedRangeActivation):
    """Quantized tanh: output scale 2/256, zero point 128 unless given."""

    fn = staticmethod(tanh)
    fixed = (2.0 / 256.0, 128)


class Hardsigmoid(_FixedRangeActivation):
    """Quantized hardsigmoid: output scale 1/256, zero point 0 unless given."""

    fn = staticmethod(F.hardsigmoid)
    fixed = (1.0 / 256.0, 0)


class Softmax(QuantizedName, nn.Softmax):
    """Quantized softmax along ``dim``: the float softmax of the dequantized input, quantized
    to ``scale`` and ``zero_point`` in the input's dtype (PyTorch's ``quantized::softmax``);
    a float tensor gets the float softmax. ``scale`` and ``zero_point`` are attributes, not
    state (PyTorch's state dict of it is empty).

    Example:
        >>> x = ember.quantize_per_tensor(ember.tensor([[0.0, 0.0]]), 0.5, 8, ember.quint8)
        >>> Softmax(1, 1.0 / 256, 0)(x).int_repr()
        tensor([[128, 128]], dtype=ember.uint8)
    """

    def __init__(self, dim: int | None = None, scale: float = 1.0, zero_point: int = 0) -> None:
        super().__init__(dim)
        self.scale, self.zero_point = scale, zero_point

    def forward(self, input: QuantizedTensor | Tensor) -> QuantizedTensor | Tensor:
        if isinstance(input, Tensor):
            return super().forward(input)
        x = _quantized_input("softmax", input, (quint8, qint8))
        return quantize_per_tensor(F.softmax(x.dequantize(), self.dim, _stacklevel=4),
                                   self.scale, self.zero_point, x.dtype)

    @classmethod
    def from_float(cls, mod: Module) -> Softmax:
        return cls(mod.dim, *output_qparams(mod.activation_post_process))
