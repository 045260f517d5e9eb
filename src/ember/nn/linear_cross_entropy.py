"""``nn.LinearCrossEntropyLoss``: a linear layer to class logits and the cross entropy with the
target in one module, over :func:`ember.nn.functional.linear_cross_entropy` (and its chunked
path with ``options``), as ``torch.nn.LinearCrossEntropyLoss``."""

from __future__ import annotations

import math
from typing import Any

from ember.errors import ArgumentError
from ember.nn import functional as F
from ember.nn.linear import Linear
from ember.nn.loss import _WeightedLoss
from ember.ops.linear_cross_entropy import LinearCrossEntropyOptions
from ember.tensor import Tensor

__all__ = ["LinearCrossEntropyLoss", "LinearCrossEntropyOptions"]


class LinearCrossEntropyLoss(_WeightedLoss):
    """The cross entropy between ``target`` and the logits ``self.linear(input)``, of shape
    ``(C, *out_features)`` per sample (a K-dimensional loss when ``out_features`` is given).
    As in PyTorch the layer is one flat :class:`Linear` (``C · prod(out_features)`` outputs),
    reshaped in ``forward``.

    Example:
        >>> loss = nn.LinearCrossEntropyLoss(5, 10, out_features=(4, 3))
        >>> loss(ember.randn(2, 5), ember.randint(0, 10, (2, 4, 3))).shape
        ember.Size([])
    """

    def __init__(self, in_features: int, num_classes: int, *,
                 out_features: tuple[int, ...] = (), bias: bool = False, device: Any = None,
                 dtype: Any = None, reduction: str = "mean", weight: Tensor | None = None,
                 ignore_index: int | None = None, label_smoothing: float = 0.0,
                 options: LinearCrossEntropyOptions | None = None) -> None:
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise ArgumentError(f"LinearCrossEntropyLoss: expected weight shape to be "
                                f"{(num_classes,)}, got {tuple(weight.shape)}")
        if not 0.0 <= label_smoothing <= 1.0:
            raise ArgumentError(f"LinearCrossEntropyLoss: expected label_smoothing to be in "
                                f"range [0, 1], got {label_smoothing}")
        super().__init__(weight=weight, reduction=reduction)
        self.num_classes, self.out_features = num_classes, tuple(out_features)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing
        self.linear = Linear(in_features, math.prod(self.out_features, start=num_classes),
                             bias=bias, device=device, dtype=dtype)
        self.options = options

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        shape = (self.num_classes, *self.out_features)
        bias = self.linear.bias
        return F.linear_cross_entropy(
            input, self.linear.weight.reshape((*shape, self.linear.in_features)), target,
            linear_bias=None if bias is None else bias.reshape(shape), weight=self.weight,
            reduction=self.reduction, ignore_index=self.ignore_index,
            label_smoothing=self.label_smoothing, options=self.options)

    def extra_repr(self) -> str:
        return (f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
                f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
                f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, options={self.options}")
