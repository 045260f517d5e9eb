"""``QuantType``: which kind of quantization a model gets (PyTorch's enum)."""

from __future__ import annotations

import enum

__all__ = ["QuantType"]


class QuantType(enum.IntEnum):
    """Dynamic, static, quantization-aware training or weight-only quantization.

    Example:
        >>> QuantType.STATIC, int(QuantType.QAT)
        (<QuantType.STATIC: 1>, 2)
    """

    DYNAMIC = 0
    STATIC = 1
    QAT = 2
    WEIGHT_ONLY = 3
