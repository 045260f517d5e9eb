"""Quantized dtypes (``qint8``, ``quint8``, ``qint32``) and quantization schemes
(``per_tensor_affine``, ``per_channel_symmetric``, …), PyTorch's names.

They are markers, not tensor dtypes: a quantized tensor (:class:`QuantizedTensor`) keeps its
integers in an ordinary ``int8``/``uint8``/``int32`` tensor beside its scale and zero point,
so ordinary tensors' dtype handling (and its speed) is untouched.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

from ember import dtypes
from ember.dtypes import DType
from ember.errors import DTypeError
from ember.ops.overrides import calling_op, outermost_op

__all__ = ["QuantizedOperandError", "QDType", "QScheme", "qint8", "quint8", "qint32", "quint4x2",
           "per_tensor_affine", "per_tensor_symmetric", "per_channel_affine",
           "per_channel_symmetric", "per_channel_affine_float_qparams"]


class QuantizedOperandError(DTypeError, AttributeError):
    """A float op (or a float module) given a quantized tensor: it read the tensor's dtype,
    memory or a method only ordinary tensors have. The message names the op and the float
    module whose ``forward`` called it, with the fix, found when it is read."""

    def __str__(self) -> str:
        op = outermost_op(self.__traceback__)
        if op == _NO_OP and self.args and self.args[0] not in ("", "_data"):
            op = self.args[0]  # (read outside the ops: the attribute or the operator)
        module = _float_module(self.__traceback__)
        if module is None:
            return (f"{op}: quantized tensors are not supported by this op. Hint: call "
                    ".dequantize() first, or use a quantized module (ember.ao.nn.quantized) "
                    "that takes them")
        return (f"{op}: quantized tensors are not supported by this op, called by the float "
                f"module {type(module).__name__}. Hint: {_module_hint(type(module))}")


_NO_OP = outermost_op(None)  # (what outermost_op answers outside the ops)


def _float_module(tb: TracebackType | None) -> Any:
    """The innermost module in ``tb`` whose ``forward`` runs, if it is no quantized module
    (which take quantized tensors): the float module that was given one."""
    from ember.nn.module import Module

    found = None
    while tb is not None:
        frame = tb.tb_frame
        owner = frame.f_locals.get("self") if frame.f_code.co_name == "forward" else None
        if isinstance(owner, Module):
            found = owner
        tb = tb.tb_next
    if found is None or type(found).__module__.startswith("ember.quant."):
        return None
    return found


def _module_hint(kind: type) -> str:
    """How to get a float module of type ``kind`` out of the way of quantized tensors."""
    from ember.quant.mappings import (
        DEFAULT_STATIC_QUANT_MODULE_MAPPINGS,
        QUANTIZED_PASSTHROUGH_MAPPINGS,
    )

    dequantize = "dequantize its input first (a DeQuantStub before it)"
    twin = {**DEFAULT_STATIC_QUANT_MODULE_MAPPINGS, **QUANTIZED_PASSTHROUGH_MAPPINGS}.get(kind)
    if twin is not None:
        return (f"give it a qconfig before prepare, so that convert swaps it for "
                f"ember.ao.nn.quantized.{twin.__name__}; or {dequantize}")
    if kind.__module__.startswith("ember.nn"):
        return (f"Ember has no quantized {kind.__name__} (see docs/quantization.md): "
                f"{dequantize}, and a QuantStub after it to quantize again")
    return f"{dequantize}, or call .dequantize() on it in its forward"


class QDType:
    """A quantized dtype: the integer dtype holding the values and its range. Asked for what
    only an ordinary dtype has (``is_floating_point``, …), or read as one (``ember.full(…,
    dtype=q.dtype)``), it raises :class:`QuantizedOperandError`: a float op was given a
    quantized tensor."""

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

    def __ember_dtype__(self) -> DType:  # (what ember.dtypes.to_dtype reads)
        op = calling_op()  # (none outside an op: can_cast, set_default_dtype, iinfo)
        raise DTypeError(f"{'' if op == _NO_OP else op + ': '}{self!r} is a quantized dtype, "
                         "which no op makes or converts a tensor to. Hint: quantize a float "
                         f"tensor with ember.quantize_per_tensor(x, scale, zero_point, {self!r})")


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
