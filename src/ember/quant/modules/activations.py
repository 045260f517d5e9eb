"""Quantized activations with fixed output parameters (``Sigmoid``, ``Tanh``,
``Hardsigmoid``): the input dequantized, the float function applied, the result quantized to
the range the function covers (``[0, 1]`` in steps of 1/256 with zero point 0; ``Tanh``:
``[-1, 1]`` in steps of 2/256 with zero point 128), as PyTorch's quantized kernels do."""

from __future__ import annotations

from typing import Any, ClassVar

from ember.nn import functional as F
from ember.nn.module import Module
from ember.ops.unary import tanh
from ember.quant.modules.quantized import _quantized_input
from ember.quant.qtensor import QuantizedTensor, quantize_per_tensor
from ember.quant.qtypes import quint8
from ember.tensor import Tensor

__all__ = ["Sigmoid", "Tanh", "Hardsigmoid"]


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
        scale, zero_point = post.calculate_qparams()
        return cls(float(scale.item()), int(zero_point.item()))

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
