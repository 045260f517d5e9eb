"""Quantized dtypes (``qint8``, ``quint8``, ``qint32``) and quantization schemes
(``per_tensor_affine``, ``per_channel_symmetric``, …), PyTorch's names.

They are markers, not tensor dtypes: a quantized tensor (:class:`QuantizedTensor`) keeps its
integers in an ordinary ``int8``/``uint8``/``int32`` tensor beside its scale and zero point,
so ordinary tensors' dtype handling (and its speed) is untouched.
"""

from __future__ import annotations

from typing import Any

from ember import dtypes
from ember.dtypes import DType
from ember.errors import DTypeError
from ember.ops.overrides import outermost_op

__all__ = ["QuantizedOperandError", "QDType", "QScheme", "qint8", "quint8", "qint32", "quint4x2",
           "per_tensor_affine", "per_tensor_symmetric", "per_channel_affine",
           "per_channel_symmetric", "per_channel_affine_float_qparams"]


class QuantizedOperandError(DTypeError, AttributeError):
    """A float op given a quantized tensor (it read the tensor's dtype or memory as an
    ordinary tensor's); the message names the op, found when it is read."""

    def __str__(self) -> str:
        return (f"{outermost_op(self.__traceback__)}: quantized tensors are not supported by "
                "this op. Hint: call .dequantize() first, or use a quantized module "
                "(ember.ao.nn.quantized) that takes them")


class QDType:
    """A quantized dtype: the integer dtype holding the values and its range. Asked for what
    only an ordinary dtype has (``is_floating_point``, …), it raises
    :class:`QuantizedOperandError`: a float op was given a quantized tensor."""

    __slots__ = ("name", "storage", "min", "max")

    def __init__(self, name: str, storage: DType, low: int, high: int) -> None:
        self.name, self.storage, self.min, self.max = name, storage, low, high

    @property
    def bits(self) -> int:
        return self.storage.itemsize * 8

    @property
    def is_signed(self) -> bool:
        return self.min < 0

    def __repr__(self) -> str:
        return f"ember.{self.name}"

    def __reduce__(self) -> str:
        return self.name

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # (protocols: copy, pickle, … look for these)
            raise AttributeError(name)
        raise QuantizedOperandError(name)


class QScheme:
    """How a tensor is quantized: one scale for all of it, or one per channel."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    @property
    def per_channel(self) -> bool:
        return self.name.startswith("per_channel")

    @property
    def symmetric(self) -> bool:
        return self.name.endswith("symmetric")

    def __repr__(self) -> str:
        return f"ember.{self.name}"

    def __reduce__(self) -> str:
        return self.name


qint8 = QDType("qint8", dtypes.int8, -128, 127)
quint8 = QDType("quint8", dtypes.uint8, 0, 255)
qint32 = QDType("qint32", dtypes.int32, -2**31, 2**31 - 1)
# 4-bit unsigned values, one per uint8 here (PyTorch packs two per byte): embedding tables
quint4x2 = QDType("quint4x2", dtypes.uint8, 0, 15)
per_tensor_affine = QScheme("per_tensor_affine")
per_tensor_symmetric = QScheme("per_tensor_symmetric")
per_channel_affine = QScheme("per_channel_affine")
per_channel_symmetric = QScheme("per_channel_symmetric")
per_channel_affine_float_qparams = QScheme("per_channel_affine_float_qparams")
