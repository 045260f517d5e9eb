"""``FloatFunctional`` and ``QFunctional`` (``torch.ao.nn.quantized``): modules whose methods
(``add``, ``add_relu``, ``mul``, ``cat``, ``add_scalar``, ``mul_scalar``, ``matmul``) stand
for the functional ops of a model, so that ``prepare`` can observe their outputs and ``convert`` can
give them quantized kernels; a residual network's ``out + identity`` becomes
``self.skip_add.add(out, identity)``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember.errors import ArgumentTypeError, OpError
from ember.nn import Identity
from ember.nn import functional as F
from ember.nn.module import Module
from ember.ops.arithmetic import add, mul
from ember.ops.join import cat
from ember.ops.linalg import matmul
from ember.quant import elementwise
from ember.quant.modules.quantized import OutputQParams, output_qparams
from ember.quant.qtensor import QuantizedTensor
from ember.tensor import Tensor

__all__ = ["FloatFunctional", "QFunctional"]


class FloatFunctional(Module):
    """Float ops as module methods; ``activation_post_process`` (an ``Identity`` until
    ``prepare`` puts an observer there) watches the outputs of ``add``, ``add_relu``, ``mul``,
    ``cat`` and ``matmul`` (``add_scalar`` and ``mul_scalar`` need no observer: their
    quantized output parameters follow from the input's).

    Example:
        >>> f = FloatFunctional()
        >>> f.add_relu(ember.tensor([1.0, -3.0]), ember.tensor([1.0, 1.0]))
        tensor([2., 0.])
    """

    def __init__(self) -> None:
        super().__init__()
        self.activation_post_process = Identity()

    def forward(self, x: Any) -> Any:
        raise OpError("FloatFunctional is not intended to use the 'forward'. Please use "
                      "the underlying operation (add, add_relu, mul, cat, add_scalar, "
                      "mul_scalar, matmul)")

    def add(self, x: Tensor, y: Tensor) -> Tensor:
        return self.activation_post_process(add(x, y))

    def add_scalar(self, x: Tensor, y: float) -> Tensor:
        return add(x, y)

    def mul(self, x: Tensor, y: Tensor) -> Tensor:
        return self.activation_post_process(mul(x, y))

    def mul_scalar(self, x: Tensor, y: float) -> Tensor:
        return mul(x, y)

    def cat(self, x: Sequence[Tensor], dim: int = 0) -> Tensor:
        return self.activation_post_process(cat(x, dim=dim))

    def add_relu(self, x: Tensor, y: Tensor) -> Tensor:
        return self.activation_post_process(F.relu(add(x, y)))

    def matmul(self, x: Tensor, y: Tensor) -> Tensor:
        return self.activation_post_process(matmul(x, y))


class QFunctional(OutputQParams):
    """The quantized ops of a :class:`FloatFunctional` (what ``convert`` makes of it): they
    take and return per-tensor ``quint8`` or ``qint8`` quantized tensors (all of one dtype),
    with the observed output ``scale`` and ``zero_point`` (see :mod:`ember.quant.elementwise`
    for the arithmetic).

    Example:
        >>> f = QFunctional()
        >>> f.scale, f.zero_point = 0.5, 0
        >>> x = ember.quantize_per_tensor(ember.tensor([1.0, 2.0]), 0.25, 0, ember.quint8)
        >>> f.add(x, x).dequantize()
        tensor([2., 4.])
    """

    _saves_float32_scale = True  # (a load rounds the scale to float32, as PyTorch's)

    def __init__(self) -> None:
        super().__init__()
        self.scale, self.zero_point = 1.0, 0
        self.activation_post_process = Identity()  # (PyTorch's; it prints in the repr)

    def forward(self, x: Any) -> Any:
        raise OpError("Functional is not intended to use the 'forward'. Please use the "
                      "underlying operation (add, add_relu, mul, cat, add_scalar, "
                      "mul_scalar, matmul)")

    def add(self, x: QuantizedTensor, y: QuantizedTensor) -> QuantizedTensor:
        return elementwise.add(x, y, self.scale, self.zero_point)

    def add_scalar(self, x: QuantizedTensor, y: float) -> QuantizedTensor:
        return elementwise.add_scalar(x, y)

    def mul(self, x: QuantizedTensor, y: QuantizedTensor) -> QuantizedTensor:
        return elementwise.mul(x, y, self.scale, self.zero_point)

    def mul_scalar(self, x: QuantizedTensor, y: float) -> QuantizedTensor:
        return elementwise.mul_scalar(x, y)

    def cat(self, x: Sequence[QuantizedTensor], dim: int = 0) -> QuantizedTensor:
        return elementwise.cat(x, dim, self.scale, self.zero_point)

    def add_relu(self, x: QuantizedTensor, y: QuantizedTensor) -> QuantizedTensor:
        return elementwise.add(x, y, self.scale, self.zero_point, relu=True)

    def matmul(self, x: QuantizedTensor, y: QuantizedTensor) -> QuantizedTensor:
        return elementwise.matmul(x, y, self.scale, self.zero_point)

    @classmethod
    def from_float(cls, mod: Module) -> QFunctional:
        if type(mod) is not FloatFunctional:
            raise ArgumentTypeError(f"QFunctional.from_float expects a FloatFunctional, got "
                                    f"{type(mod).__name__}")
        new = cls()
        new.scale, new.zero_point = output_qparams(mod.activation_post_process)
        return new

    def extra_repr(self) -> str:
        return f"scale={self.scale}, zero_point={self.zero_point}"
