"""Quantized activations (``torch.ao.nn.quantized``'s): ``ReLU6`` clamps the integers (same
scale and zero point); ``Hardswish``, ``LeakyReLU`` and ``ELU`` dequantize, apply the float
function and quantize to the output parameters their observer chose (ATen's vectorized
kernels, :func:`ember.quant.elementwise.unary`); ``Sigmoid``, ``Tanh`` and ``Hardsigmoid``
quantize to the fixed range the function covers (``[0, 1]`` in steps of 1/256 with zero point
0; ``Tanh``: ``[-1, 1]`` in steps of 2/256 with zero point 128), as PyTorch's quantized
kernels do."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from ember.nn import functional as F
from ember.nn.module import Module
from ember.ops.creation import from_numpy
from ember.ops.unary import tanh
from ember.quant import elementwise, kernels
from ember.quant.modules.quantized import OutputQParams, _quantized_input, output_qparams
from ember.quant.qtensor import QuantizedTensor, quantize_per_tensor
from ember.quant.qtypes import quint8
from ember.tensor import Tensor

__all__ = ["Sigmoid", "Tanh", "Hardsigmoid", "ReLU6", "Hardswish", "LeakyReLU", "ELU"]

_F32 = np.float32


class ReLU6(Module):
    """ReLU6 of a quantized tensor: its integers clamped to ``[zero_point, q(6.0)]``, same
    scale and zero point (PyTorch's ``quantized::relu6``); a float tensor gets the float
    ReLU6.

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
        x = _quantized_input("relu6", input)
        six = kernels.quantize(np.asarray(6.0, _F32), x._scale, x._zero_point, 0, 255, np.uint8)
        q = np.clip(x._int.numpy(), np.uint8(x._zero_point), six)
        return QuantizedTensor(from_numpy(q), x.dtype, x._scale, x._zero_point)

    @classmethod
    def from_float(cls, mod: Module) -> ReLU6:
        return cls(mod.inplace)


class _ObservedActivation(OutputQParams):
    """An activation of a quantized tensor quantized to the output ``scale`` and
    ``zero_point`` its observer chose; a float tensor (after a ``DeQuantize``) gets the float
    function."""

    op: ClassVar[str]

    def __init__(self, scale: float, zero_point: int) -> None:
        super().__init__()
        self.scale, self.zero_point = float(scale), int(zero_point)

    def _float(self, x: Tensor) -> Tensor:
        raise NotImplementedError

    def _values(self, x: np.ndarray) -> np.ndarray:
        """The function on float32 values, operation for operation as ATen's kernel."""
        raise NotImplementedError

    def forward(self, input: QuantizedTensor | Tensor) -> QuantizedTensor | Tensor:
        if isinstance(input, Tensor):
            return self._float(input)
        x = _quantized_input(self.op, input)
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
        return f"scale={self.scale}, zero_point={self.zero_point}"


class Hardswish(_ObservedActivation):
    """Quantized hardswish, ``x * min(max(x + 3, 0), 6) / 6``, to ``scale`` and
    ``zero_point``.

    Example:
        >>> x = ember.quantize_per_tensor(ember.tensor([-4.0, 1.0, 4.0]), 0.5, 8, ember.quint8)
        >>> Hardswish(0.25, 8)(x).dequantize()
        tensor([0.0000, 0.7500, 4.0000])
    """

    op = "hardswish"

    def _float(self, x: Tensor) -> Tensor:
        return F.hardswish(x)

    def _values(self, x: np.ndarray) -> np.ndarray:
        return x * np.minimum(np.maximum(x + _F32(3), _F32(0)), _F32(6)) / _F32(6)

    def _inverse_scale(self) -> np.float32:
        return _F32(1.0 / self.scale)  # (its kernel divides in float64)


class LeakyReLU(_ObservedActivation):
    """Quantized leaky ReLU (``negative_slope``) to ``scale`` and ``zero_point``."""

    op = "leaky_relu"

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
        return f"negative_slope={self.negative_slope}, {super().extra_repr()}"


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
        return f"alpha={self.alpha}, {super().extra_repr()}"


class _FixedRangeActivation(Module):
    """An activation of a quantized tensor quantized to ``output_scale`` and
    ``output_zero_point``; a float tensor (after a ``DeQuantize``) gets the float function."""

    fn: ClassVar[Any]
    fixed: ClassVar[tuple[float, int]]

    def __init__(self, output_scale: float | None = None,
                 output_zero_point: int | None = None) -> None:
        super().__init__()
        self.scale = float(self.fixed[0] if output_scale is None else output_scale)
        self.zero_point = int(self.fixed[1] if output_zero_point is None else output_zero_point)

    def forward(self, input: QuantizedTensor | Tensor) -> QuantizedTensor | Tensor:
        if isinstance(input, Tensor):
            return type(self).fn(input)
        x = _quantized_input(type(self).__name__.lower(), input)
        return quantize_per_tensor(type(self).fn(x.dequantize()), self.scale, self.zero_point,
                                   quint8)

    @classmethod
    def from_float(cls, mod: Module) -> _FixedRangeActivation:
        """The quantized twin of ``mod``: with its observer's parameters if it has one (a
        ``FixedQParamsFakeQuantize`` after ``prepare_qat``), else the fixed ones."""
        post = getattr(mod, "activation_post_process", None)
        if post is None:
            return cls()
        return cls(*output_qparams(post))

    def extra_repr(self) -> str:
        return f"output_scale={self.scale}, output_zero_point={self.zero_point}"


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
