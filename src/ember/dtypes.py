"""Ember's dtypes and PyTorch's type-promotion rules.

``ember.float32`` and friends are :class:`DType` objects wrapping a NumPy dtype (``bfloat16``
comes from ``ml_dtypes``). :func:`result_type` implements PyTorch's promotion: categories
bool < integer < floating < complex, tensors with dimensions outrank 0-d tensors, which outrank
Python scalars, and a Python scalar never widens a tensor of its own category
(``float32 tensor * 2.0`` stays float32, ``int32 tensor * 2.5`` becomes the default float).
A complex operand of a lower rank keeps a floating tensor's precision (``float32 tensor * 1j``
is complex64, ``float64 tensor * 1j`` complex128). Ember has no ``complex32``: where PyTorch
gives one (``float16 tensor * 1j``), Ember gives complex64.
"""

from __future__ import annotations

import math
import reprlib
import sys
from functools import cache, lru_cache
from typing import Any

import ml_dtypes
import numpy as np

from ember.errors import DTypeError, type_name


class DType:
    """A tensor element type, e.g. ``ember.float32``.

    Example:
        >>> ember.float32.itemsize, ember.float32.is_floating_point
        (4, True)
    """

    __slots__ = ("name", "np", "itemsize", "is_floating_point", "is_complex", "is_signed",
                 "category")

    def __init__(self, name: str, np_type: type, category: int) -> None:
        self.name = name
        self.np = np.dtype(np_type)
        self.itemsize = self.np.itemsize
        self.category = category  # 0 bool, 1 integer, 2 floating, 3 complex
        self.is_floating_point = category == 2
        self.is_complex = category == 3
        self.is_signed = category >= 2 or (category == 1 and self.np.kind == "i")

    def to_real(self) -> DType:
        """The real dtype of a complex dtype's parts (a real dtype itself).

        Example:
            >>> ember.complex64.to_real()
            ember.float32
        """
        return _REAL_OF.get(self, self)

    def to_complex(self) -> DType:
        """The complex dtype with parts of this floating dtype (a complex dtype itself);
        float16 and bfloat16 give complex64, since Ember has no complex32.

        Example:
            >>> ember.float64.to_complex()
            ember.complex128
        """
        if self.category < FLOAT:
            raise DTypeError(f"to_complex: {self.name} is not a floating or complex dtype")
        if self.category == FLOAT and self not in _COMPLEX_OF:  # (the float8s, as PyTorch)
            raise DTypeError(f"to_complex: {self.name} has no complex dtype, as in PyTorch. "
                             "Hint: convert to float32 first")
        return _COMPLEX_OF.get(self, self)

    def __repr__(self) -> str:
        return f"ember.{self.name}"

    def __reduce__(self) -> str:
        return self.name


BOOL, INT, FLOAT, COMPLEX = 0, 1, 2, 3
_builtin_float, _builtin_int, _builtin_bool, _builtin_complex = float, int, bool, complex

bool_ = DType("bool", np.bool_, BOOL)
uint8 = DType("uint8", np.uint8, INT)
int8 = DType("int8", np.int8, INT)
int16 = DType("int16", np.int16, INT)
int32 = DType("int32", np.int32, INT)
int64 = DType("int64", np.int64, INT)
float16 = DType("float16", np.float16, FLOAT)
bfloat16 = DType("bfloat16", ml_dtypes.bfloat16, FLOAT)
float32 = DType("float32", np.float32, FLOAT)
float64 = DType("float64", np.float64, FLOAT)
complex64 = DType("complex64", np.complex64, COMPLEX)
complex128 = DType("complex128", np.complex128, COMPLEX)
# PyTorch's "limited support" dtypes: made, cast, compared, stored; never promoted with other
# dtypes (float8s with none, the wide unsigned ints with none but floating and complex ones)
uint16 = DType("uint16", np.uint16, INT)
uint32 = DType("uint32", np.uint32, INT)
uint64 = DType("uint64", np.uint64, INT)
float8_e4m3fn = DType("float8_e4m3fn", ml_dtypes.float8_e4m3fn, FLOAT)
float8_e5m2 = DType("float8_e5m2", ml_dtypes.float8_e5m2, FLOAT)
float8_e4m3fnuz = DType("float8_e4m3fnuz", ml_dtypes.float8_e4m3fnuz, FLOAT)
float8_e5m2fnuz = DType("float8_e5m2fnuz", ml_dtypes.float8_e5m2fnuz, FLOAT)
float8_e8m0fnu = DType("float8_e8m0fnu", ml_dtypes.float8_e8m0fnu, FLOAT)
WIDE_UNSIGNED_DTYPES = (uint16, uint32, uint64)
FLOAT8_DTYPES = (float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz, float8_e8m0fnu)

# (distributed code numbers dtypes by their index here: add new ones at the end)
ALL_DTYPES = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64,
              complex64, complex128, *WIDE_UNSIGNED_DTYPES, *FLOAT8_DTYPES)
FLOATING_DTYPES = (float16, bfloat16, float32, float64)
COMPLEX_DTYPES = (complex64, complex128)
_REAL_OF = {complex64: float32, complex128: float64}
_COMPLEX_OF = {float16: complex64, bfloat16: complex64, float32: complex64, float64: complex128}
_BY_NUMPY = {d.np: d for d in ALL_DTYPES}
_BY_NAME = {d.name: d for d in ALL_DTYPES}
_BY_NAME.update({"float": float32, "double": float64, "half": float16, "long": int64,
                 "int": int32, "short": int16, "bool_": bool_, "cfloat": complex64,
                 "cdouble": complex128})

_default_float = float32


def get_default_dtype() -> DType:
    """The dtype of floating tensors made from Python floats (float32 unless changed)."""
    return _default_float


def set_default_dtype(dtype: DType) -> None:
    """Sets the default floating dtype, e.g. ``ember.set_default_dtype(ember.float64)``."""
    global _default_float
    dtype = to_dtype(dtype)
    if not dtype.is_floating_point:
        raise DTypeError(f"set_default_dtype: {dtype.name} is not a floating dtype; "
                         "use one of float16, bfloat16, float32, float64")
    _default_float = dtype
    _scalar_dtype.cache_clear()
    _result_type.cache_clear()


def extreme(dtype: DType, highest: bool = False) -> bool | int | float:
    """The value no element of ``dtype`` lies below (with ``highest``: above), where a running
    maximum (minimum) starts: -inf (+inf) for floating and complex dtypes, the least (greatest)
    integer, False (True) for bool.

    Example:
        >>> ember.dtypes.extreme(ember.int8), ember.dtypes.extreme(ember.float32, highest=True)
        (-128, inf)
    """
    if dtype.category >= 2:
        return math.inf if highest else -math.inf
    if dtype.category == 0:
        return highest
    info = np.iinfo(dtype.np)
    return info.max if highest else info.min


def has_numpy(np_dtype: np.dtype) -> bool:
    """Whether a NumPy dtype is one of Ember's (ml_dtypes' bfloat16 and float8 included)."""
    return np_dtype in _BY_NUMPY


def from_numpy(np_dtype: np.dtype) -> DType:
    """The Ember dtype of a NumPy dtype; a clear error for types Ember has none of."""
    try:
        return _BY_NUMPY[np_dtype]
    except KeyError:
        pass
    np_dtype = np.dtype(np_dtype)
    if np_dtype in _BY_NUMPY:
        return _BY_NUMPY[np_dtype]
    raise DTypeError(f"NumPy dtype {np_dtype} has no Ember equivalent; supported: "
                     + ", ".join(d.name for d in ALL_DTYPES))


def to_dtype(x: object) -> DType:
    """Reads a dtype given as a DType, a name, a NumPy dtype or a Python type (``float`` is
    float64, ``complex`` complex128, ``int`` int64, as in PyTorch)."""
    if isinstance(x, DType):
        return x
    if x is _builtin_float:  # (Python's float is a double: float64 whatever the default, as
        return float64      # in PyTorch; complex likewise complex128)
    if isinstance(x, str):
        try:
            return _BY_NAME[x.removeprefix("ember.").removeprefix("torch.")]
        except KeyError:
            raise DTypeError(f"unknown dtype name {x!r}; known: {', '.join(_BY_NAME)}") from None
    if x is _builtin_int:
        return int64
    if x is _builtin_bool:
        return bool_
    if x is _builtin_complex:
        return complex128
    if hasattr(type(x), "__ember_dtype__"):  # (quantized dtypes: they raise their own error)
        return x.__ember_dtype__()
    try:
        np_dtype = np.dtype(x)
    except (TypeError, ValueError):  # (ValueError: NumPy reads a tensor's .dtype, and fails)
        raise DTypeError(f"cannot read a dtype from {_what(x)}") from None
    return from_numpy(np_dtype)


def _what(x: object) -> str:
    """``x``, no dtype, as an error names it: an array or tensor by its type and dtype, with a
    hint to pass that; else in short (a PyTorch dtype Ember has: with a hint naming Ember's)."""
    if hasattr(x, "dtype") and not isinstance(x, type):
        return f"a {type_name(x)} of dtype {x.dtype}. Hint: pass its dtype, x.dtype"
    return f"{reprlib.repr(x)}{_torch_dtype_hint(x)}"


def _torch_dtype_hint(x: object) -> str:
    """For a PyTorch dtype Ember also has (``ember.float32``, ``ember.qint8``), a hint naming
    Ember's; else (``torch.int4``, not a torch dtype) nothing."""
    name = str(x).partition(".")[2]
    ours = getattr(sys.modules.get("ember"), name, None)  # (ember.qint8: from ember.quant)
    if type_name(x) != "torch.dtype" or not (isinstance(ours, DType)
                                            or hasattr(type(ours), "__ember_dtype__")):
        return ""
    return f". Hint: use Ember's, ember.{name}"


# PyTorch computes only a few ops on these (casts, copies, indexing, mul, ==, ...): a primitive
# lists the ones it takes in ``Primitive.limited_dtypes`` and refuses the rest
LIMITED_DTYPES = WIDE_UNSIGNED_DTYPES + FLOAT8_DTYPES
ALL_LIMITED = frozenset(LIMITED_DTYPES)
WIDE_UNSIGNED = frozenset(WIDE_UNSIGNED_DTYPES)
SIGNED_FLOAT8 = frozenset(FLOAT8_DTYPES[:4])  # all but float8_e8m0fnu, which has no sign


def cast_ready(xp: object, a: Any, dtype: DType) -> Any:
    """``a`` (an array or a number) made ready for conversion to ``dtype`` with PyTorch's CPU
    conversions, where they differ from NumPy's: a float64 bound for ``float16`` is rounded to
    float32 first (PyTorch rounds twice there, so a value just past a float16 halfway point
    can land on the other neighbour than NumPy's direct rounding); ``float8_e4m3fn`` (no
    infinity) saturates to ±448, infinities included; ``float8_e8m0fnu`` (no sign, no zero)
    takes ``|a|``, with 0 and values below its range becoming its smallest value 2**-127.
    Other dtypes: ``a`` as is.

    Example:
        >>> cast_ready(np, np.array([1 + 2**-11 + 2**-40]), float16).astype(np.float16)
        array([1.], dtype=float16)
    """
    if dtype is float16:
        if isinstance(a, _builtin_float):  # (a Python float or np.float64; one that float32
            # holds, as 1.0 or 0.1f, rounds the same either way: kept, ~1 µs less a scalar)
            return a if (math.frexp(a)[0] * 16777216.0).is_integer() else \
                _builtin_float(np.float32(a))
        return a.astype(np.float32) if getattr(a, "dtype", None) == np.float64 else a
    if dtype is float8_e4m3fn:
        return xp.clip(xp.asarray(a, dtype=np.float64), -448.0, 448.0)
    if dtype is float8_e8m0fnu:
        return xp.maximum(xp.abs(xp.asarray(a, dtype=np.float64)), 2.0 ** -127)
    return a


def _promote_pair(a: DType, b: DType) -> DType:
    if a is b:
        return a
    if a in ALL_LIMITED or b in ALL_LIMITED:
        return _promote_limited(a, b)
    if a.category != b.category:
        if COMPLEX in (a.category, b.category) and FLOAT in (a.category, b.category):
            real = _promote_pair(a.to_real(), b.to_real())  # float64 with complex64: complex128
            return real.to_complex()
        return a if a.category > b.category else b
    if a.category == COMPLEX:
        return a if a.itemsize >= b.itemsize else b
    if a.category == FLOAT:
        if {a, b} == {float16, bfloat16}:
            return float32
        return a if a.itemsize >= b.itemsize else b
    return from_numpy(np.promote_types(a.np, b.np))


def _promote_limited(a: DType, b: DType) -> DType:
    """PyTorch's rule for its limited-support dtypes: a wide unsigned int promotes only with a
    floating dtype (to that dtype); a float8 with nothing."""
    if a in FLOAT8_DTYPES or b in FLOAT8_DTYPES:
        kind = "float8 types"
    else:
        other = b if a in WIDE_UNSIGNED_DTYPES else a
        if other.category == FLOAT and other not in ALL_LIMITED:
            return other
        kind = "uint16, uint32, uint64"
    raise DTypeError(f"promote_types: promotion for {kind} is not supported (as in PyTorch), "
                     f"attempted to promote {a.name} and {b.name}. Hint: convert one side "
                     "explicitly with .to(dtype)")


@cache
def promote_types(a: DType, b: DType) -> DType:
    """PyTorch's ``promote_types``: the smallest dtype both ``a`` and ``b`` convert to safely.

    Example:
        >>> ember.promote_types(ember.uint8, ember.int8)
        ember.int16
    """
    if a.__class__ is not DType or b.__class__ is not DType:  # (anything else: refused, named)
        a, b = (_dtype_argument(a, "type1"), _dtype_argument(b, "type2"))
    return _promote_pair(a, b)


def _dtype_argument(x: object, name: str) -> DType:
    """``promote_types``'s argument ``name`` if a dtype, else a DTypeError (a TypeError, as
    PyTorch's) naming it (a name, a PyTorch or NumPy dtype too: PyTorch takes only its own)."""
    if isinstance(x, DType):
        return x
    raise DTypeError(f"promote_types(): argument '{name}' must be an ember.dtype, not "
                     f"{_what(x)}")


@cache
def _scalar_dtype(kind: type) -> DType:
    """The dtype a Python number of type ``kind`` (or a subclass: NumPy's float64 and
    complex128) brings to promotion."""
    if issubclass(kind, _builtin_complex):
        return _default_float.to_complex()
    return bool_ if issubclass(kind, _builtin_bool) else \
        int64 if issubclass(kind, _builtin_int) else _default_float


# a NumPy scalar's kind -> the Python number type it holds (clongdouble's item() is no complex)
_NUMPY_KINDS = {"b": _builtin_bool, "i": _builtin_int, "u": _builtin_int, "f": _builtin_float,
                "c": _builtin_complex}


def _combine(higher: DType | None, lower: DType | None) -> DType | None:
    """Merges the dtype of a higher-priority group with a lower one (PyTorch's rule)."""
    if higher is None:
        return lower
    if lower is None or higher.category == COMPLEX:
        return higher
    if lower.category == COMPLEX:  # a floating tensor keeps its precision: float32 * 1j
        return higher.to_complex() if higher.category == FLOAT else lower
    if higher.category == FLOAT:
        return higher
    if higher is bool_ or lower.category == FLOAT or lower.category > higher.category:
        return promote_types(higher, lower)
    return higher


_INT64_END, _UINT64_END = 1 << 63, 1 << 64


@lru_cache(maxsize=4096)
def _result_type(keys: tuple) -> DType:
    groups: list[DType | None] = [None] * 4  # tensors with dims, 0-d tensors, scalars, arrays
    for rank, dtype in keys:
        groups[rank] = dtype if groups[rank] is None else promote_types(groups[rank], dtype)
    rest, arrays = _combine(groups[0], _combine(groups[1], groups[2])), groups[3]
    if rest is None or arrays is None or rest in ALL_LIMITED or arrays in ALL_LIMITED:
        return _combine(arrays, rest)
    try:  # (PyTorch hands ``tensor + ndarray`` to NumPy, whatever the array's rank)
        return from_numpy(np.promote_types(rest.np, arrays.np))
    except TypeError:  # (bfloat16 with an integer array: NumPy has no rule)
        return _combine(arrays, rest)


def result_type(*operands: object) -> DType:
    """The dtype PyTorch gives an op over these tensors and Python scalars.

    Example:
        >>> ember.result_type(ember.ones(3, dtype=ember.int32), 2.5)
        ember.float32
    """
    keys = []
    for x in operands:
        dtype = getattr(x, "dtype", None)
        if isinstance(dtype, DType):
            keys.append((0 if x.ndim else 1, dtype))
        elif isinstance(x, (_builtin_bool, _builtin_int, _builtin_float, _builtin_complex)):
            # (PyTorch's int in [2^63, 2^64) is a uint64 number: a bool tensor refuses it)
            # (an int subclass too, an IntEnum member say; a bool never lies in that range)
            keys.append((2, uint64 if isinstance(x, _builtin_int) and _INT64_END <= x < _UINT64_END
                         else _scalar_dtype(type(x))))
        elif isinstance(x, (np.number, np.bool_)):  # as the Python number it holds (PyTorch)
            keys.append((2, _scalar_dtype(_NUMPY_KINDS[x.dtype.kind])))
        elif isinstance(x, np.ndarray):
            keys.append((3, from_numpy(x.dtype)))
        else:
            raise DTypeError(f"result_type: cannot take an operand of type {type_name(x)}")
    return _result_type(tuple(keys))


def number_dtype(*values: object) -> DType:
    """The dtype a tensor made from these numbers takes (``full``, ``arange``): as
    :func:`result_type`, except that an int is int64 even in [2^63, 2^64), where it is a
    uint64 operand (PyTorch then refuses to store it: it overflows int64).

    Example:
        >>> ember.dtypes.number_dtype(2 ** 63)
        ember.int64
    """
    return result_type(*(0 if isinstance(v, _builtin_int) and type(v) is not _builtin_bool else v
                         for v in values))


# Aliases PyTorch users type (``torch.float`` is float32, ``torch.int`` int32, …). Defined last:
# they shadow the builtins of the same names in this module.
half, double, long, short = float16, float64, int64, int16
float, int, bool = float32, int32, bool_  # noqa: A001
cfloat, cdouble = complex64, complex128
