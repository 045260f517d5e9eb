"""``QuantStub``, ``DeQuantStub`` and ``QuantWrapper``: where a float model's quantized region
starts and ends. Identities until ``convert`` swaps them for ``Quantize`` and ``DeQuantize``."""

from __future__ import annotations

from typing import Any

from ember.nn.module import Module
from ember.tensor import Tensor

__all__ = ["QuantStub", "DeQuantStub", "QuantWrapper"]


class QuantStub(Module):
    """Marks where float input becomes quantized; observed by ``prepare``, then replaced by
    a ``Quantize`` module by ``convert``.

    Example:
        >>> QuantStub()(ember.tensor([1.5]))
        tensor([1.5000])
    """

    def __init__(self, qconfig: Any = None) -> None:
        super().__init__()
        if qconfig is not None:
            self.qconfig = qconfig

    def forward(self, x: Tensor) -> Tensor:
        return x


class DeQuantStub(Module):
    """Marks where quantized values become float again; ``convert`` makes it a
    ``DeQuantize``."""

    def __init__(self, qconfig: Any = None) -> None:
        super().__init__()
        if qconfig is not None:
            self.qconfig = qconfig

    def forward(self, x: Any) -> Any:
        return x


class QuantWrapper(Module):
    """``module`` between a :class:`QuantStub` and a :class:`DeQuantStub`, taking its
    ``qconfig``."""

    def __init__(self, module: Module) -> None:
        super().__init__()
        qconfig = getattr(module, "qconfig", None)
        self.add_module("quant", QuantStub(qconfig))
        self.add_module("dequant", DeQuantStub(qconfig))
        self.add_module("module", module)
        self.train(module.training)

    def forward(self, X: Any) -> Any:  # noqa: N803 - PyTorch's argument name
        return self.dequant(self.module(self.quant(X)))
