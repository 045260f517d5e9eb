"""``Identity``, ``Linear`` and ``Bilinear`` with PyTorch's default initialisation, and
``NonDynamicallyQuantizableLinear`` (``MultiheadAttention.out_proj``'s class)."""

from __future__ import annotations

import math
from typing import Any

from ember.nn import functional as F
from ember.nn import init
from ember.nn.module import Module
from ember.nn.parameter import Parameter
from ember.tensor import Tensor

__all__ = ["Identity", "Linear", "Bilinear", "NonDynamicallyQuantizableLinear"]


def _empty(*shape: int, dtype: Any = None, device: Any = None) -> Parameter:
    import ember

    return Parameter(ember.empty(*shape, dtype=dtype, device=device))


def reset_weight_and_bias(weight: Tensor, bias: Tensor | None) -> None:
    """PyTorch's default for Linear and Conv layers: kaiming_uniform(a=√5) weights and
    uniform(±1/√fan_in) biases."""
    init.kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in, _ = init._calculate_fan_in_and_fan_out(weight)
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        init.uniform_(bias, -bound, bound)


class Identity(Module):
    """Returns its input; takes (and ignores) any constructor arguments.

    Example:
        >>> nn.Identity(54, unused="x")(ember.ones(2)).shape
        ember.Size([2])
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:
        return input


class Linear(Module):
    """``y = x @ weight.T + bias``; ``weight`` is ``(out_features, in_features)``, initialised
    with ``kaiming_uniform_(a=√5)`` and ``bias`` with U(±1/√in_features), as in PyTorch.

    Example:
        >>> fc = nn.Linear(20, 30)
        >>> fc(ember.randn(128, 20)).shape
        ember.Size([128, 30])
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = _empty(out_features, in_features, dtype=dtype, device=device)
        if bias:
            self.bias = _empty(out_features, dtype=dtype, device=device)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        reset_weight_and_bias(self.weight, self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Bilinear(Module):
    """``y = x1ᵀ A x2 + b`` with ``weight`` ``(out, in1, in2)``, both initialised from
    U(±1/√in1_features).

    Example:
        >>> m = nn.Bilinear(20, 30, 40)
        >>> m(ember.randn(8, 20), ember.randn(8, 30)).shape
        ember.Size([8, 40])
    """

    def __init__(self, in1_features: int, in2_features: int, out_features: int,
                 bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.in1_features, self.in2_features = in1_features, in2_features
        self.out_features = out_features
        self.weight = _empty(out_features, in1_features, in2_features, dtype=dtype,
                             device=device)
        if bias:
            self.bias = _empty(out_features, dtype=dtype, device=device)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class NonDynamicallyQuantizableLinear(Linear):
    """A :class:`Linear` that dynamic quantization leaves alone: PyTorch's class of
    ``MultiheadAttention.out_proj``, whose weight the attention reads directly.

    Example:
        >>> type(nn.MultiheadAttention(4, 2).out_proj).__name__
        'NonDynamicallyQuantizableLinear'
    """
