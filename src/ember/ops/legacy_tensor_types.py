"""PyTorch's legacy tensor types: ``ember.FloatTensor``, ``ember.LongTensor``, … one per
dtype. Calling one makes a CPU tensor of its dtype (``FloatTensor(2, 3)``: uninitialised
memory of that shape; ``FloatTensor([1, 2])``: from data); ``isinstance(x, ember.FloatTensor)``
is true for float32 CPU tensors, as PyTorch's metaclass makes it. They are not subclasses of
:class:`Tensor`: the tensors they make are plain ``Tensor`` objects.
"""

from __future__ import annotations

import warnings
from typing import Any

from ember import dtypes
from ember.dtypes import DType
from ember.errors import ArgumentError, type_name
from ember.ops.creation import empty, tensor
from ember.size import Size
from ember.tensor import Tensor

__all__ = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor",
           "IntTensor", "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor",
           "set_default_tensor_type"]


class TensorType(type):
    """The metaclass: a legacy type's instances are the CPU tensors of its dtype."""

    dtype: DType

    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype and obj.device.type == "cpu"

    def __repr__(cls) -> str:
        return f"<class 'ember.{cls.__name__}'>"


class _LegacyTensor(metaclass=TensorType):
    """A legacy tensor type: call it with sizes or with data."""

    is_cuda = False

    def __new__(cls, *args: Any, device: Any = None) -> Tensor:  # type: ignore[misc]
        name = cls.__name__
        if device is not None and str(device) != "cpu":
            raise TypeError(f"{name}: a legacy tensor type makes CPU tensors, got device "
                            f"{device!r}; use ember.empty(..., dtype=ember.{cls.dtype.name}, "
                            "device=...)")
        if len(args) == 1 and not isinstance(args[0], int):
            data = args[0]
            if isinstance(data, Size):
                return empty(tuple(data), dtype=cls.dtype)
            if isinstance(data, Tensor):
                if data.dtype is not cls.dtype:
                    raise TypeError(f"{name}: expected a tensor of dtype {cls.dtype.name}, "
                                    f"got {data.dtype.name}; convert it with .to(ember."
                                    f"{cls.dtype.name})")
                return data.detach()
            if isinstance(data, (int, float, complex, bool)):
                raise TypeError(f"{name}: data must be a sequence (got "
                                f"{type_name(data)}); for a shape, pass sizes")
            return tensor(data, dtype=cls.dtype)
        if not all(isinstance(n, int) for n in args):
            raise TypeError(f"{name}: expected sizes (ints) or one sequence of data, got "
                            f"({', '.join(type_name(a) for a in args)})")
        if any(n < 0 for n in args):
            raise ArgumentError(f"{name}: negative dimension in size {args}")
        return empty(args if args else (0,), dtype=cls.dtype)


def _legacy_type(name: str, dtype: DType) -> type:
    doc = (f"Makes a CPU tensor of dtype {dtype.name}: ``ember.{name}(2, 3)`` (uninitialised) "
           f"or ``ember.{name}([1, 2])``; ``isinstance(x, ember.{name})`` is true for CPU "
           f"tensors of dtype {dtype.name}.")
    return TensorType(name, (_LegacyTensor,), {"dtype": dtype, "__doc__": doc,
                                                "__module__": "ember"})


# PyTorch's legacy type name of each dtype
TYPE_NAMES = {dtypes.float32: "FloatTensor", dtypes.float64: "DoubleTensor",
              dtypes.float16: "HalfTensor", dtypes.bfloat16: "BFloat16Tensor",
              dtypes.int64: "LongTensor", dtypes.int32: "IntTensor", dtypes.int16: "ShortTensor",
              dtypes.int8: "CharTensor", dtypes.uint8: "ByteTensor", dtypes.bool_: "BoolTensor"}
TYPES = {name: _legacy_type(name, dtype) for dtype, name in TYPE_NAMES.items()}
# names ``x.type()`` gives for dtypes with no legacy type (PyTorch's 'torch.UInt16Tensor'…)
TYPE_NAMES.update({d: f"UInt{d.itemsize * 8}Tensor" for d in dtypes.WIDE_UNSIGNED_DTYPES})
TYPE_NAMES.update({d: d.name.capitalize() + "Tensor" for d in dtypes.FLOAT8_DTYPES})
TYPE_NAMES.update({dtypes.complex64: "ComplexFloatTensor",
                   dtypes.complex128: "ComplexDoubleTensor"})
(FloatTensor, DoubleTensor, HalfTensor, BFloat16Tensor, LongTensor, IntTensor, ShortTensor,
 CharTensor, ByteTensor, BoolTensor) = TYPES.values()


def tensor_type(t: Any) -> type:
    """The legacy type a class or a name (``'ember.FloatTensor'``, ``'torch.LongTensor'``,
    ``'FloatTensor'``) stands for; a clear error for other names."""
    if isinstance(t, TensorType):
        return t
    if isinstance(t, str):
        found = TYPES.get(t.rsplit(".", 1)[-1])
        if found is not None and t.count(".") <= 1:
            return found
    raise TypeError(f"unknown tensor type {t!r}; known: "
                    + ", ".join(f"ember.{n}" for n in TYPES))


def set_default_tensor_type(t: Any) -> None:
    """Deprecated, as in PyTorch (it warns): sets the default floating dtype to that of the
    legacy type ``t`` (a type or its name); use :func:`ember.set_default_dtype`.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     ember.set_default_tensor_type(ember.DoubleTensor)
        >>> ember.get_default_dtype()
        ember.float64
        >>> ember.set_default_dtype(ember.float32)
    """
    warnings.warn("ember.set_default_tensor_type() is deprecated, as torch's is since 2.1; "
                  "use ember.set_default_dtype() and ember.set_default_device()", UserWarning,
                  stacklevel=2)
    cls = tensor_type(t)
    if not cls.dtype.is_floating_point:
        raise TypeError(f"set_default_tensor_type: only floating-point types are supported as "
                        f"the default type, got ember.{cls.__name__}")
    dtypes.set_default_dtype(cls.dtype)
