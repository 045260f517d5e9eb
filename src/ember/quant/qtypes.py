"""Quantized dtypes (``qint8``, ``quint8``, ``qint32``) and quantization schemes
(``per_tensor_affine``, ``per_channel_symmetric``, …), PyTorch's names.

They are markers, not tensor dtypes: a quantized tensor (:class:`QuantizedTensor`) keeps its
integers in an ordinary ``int8``/``uint8``/``int32`` tensor beside its scale and zero point,
so ordinary tensors' dtype handling (and its speed) is untouched.
"""

from __future__ import annotations

from ember import dtypes
from ember.dtypes import DType

__all__ = ["QDType", "QScheme", "qint8", "quint8", "qint32", "per_tensor_affine",
           "per_tensor_symmetric", "per_channel_affine", "per_channel_symmetric",
           "per_channel_affine_float_qparams"]


class QDType:
    """A quantized dtype: the integer dtype holding the values and its range."""

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
per_tensor_affine = QScheme("per_tensor_affine")
per_tensor_symmetric = QScheme("per_tensor_symmetric")
per_channel_affine = QScheme("per_channel_affine")
per_channel_symmetric = QScheme("per_channel_symmetric")
per_channel_affine_float_qparams = QScheme("per_channel_affine_float_qparams")
