"""The meta backend: arrays that carry a shape, a dtype and strides but no data.

A tensor on ``ember.device("meta")`` holds a :class:`MetaArray`. Ops on it run no kernel: the
core computes each primitive's output from its ``infer`` rule (see ``ember.ops.meta``), so a
model of any size builds in no memory and no time; ``Module.to_empty`` gives it real memory
later. Anything that needs the values (``item()``, ``numpy()``, a copy to the CPU) raises
:class:`~ember.errors.NoDataError` (a ``DeviceError`` and, as PyTorch's, a
``NotImplementedError``).
"""

from __future__ import annotations

import math
from typing import Any, NoReturn

import numpy as np

from ember.backend.device import Device, register_backend
from ember.errors import NoDataError


def no_data(what: str) -> NoReturn:
    """Raises the error of reading a meta tensor's values for ``what``."""
    raise NoDataError(f"{what}: meta tensors have no data (device 'meta' holds only shapes, "
                      "dtypes and strides). Hint: materialize first, e.g. "
                      "module.to_empty(device='cpu') then load_state_dict(..., assign=True), "
                      "or build the tensor on the CPU")


def copy_out(what: str, device: Any) -> NoReturn:
    """Raises the error of copying a meta tensor's (missing) values onto ``device``."""
    no_data(f"{what} (cannot copy out of a meta tensor into one on {device})")


def contiguous_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """C-order strides in bytes, as NumPy reports them (all 0 for a new array without
    elements, as NumPy allocates those)."""
    if 0 in shape:
        return (0,) * len(shape)
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def _resolved(shape: Any, size: int) -> tuple[int, ...]:
    """``shape`` with its -1 (if any) replaced by the size that makes ``size`` elements."""
    shape = (shape,) if isinstance(shape, int) else tuple(int(n) for n in shape)
    known = int(np.prod([n for n in shape if n != -1], dtype=np.int64))
    return tuple(size // max(known, 1) if n == -1 else n for n in shape)


class _Flags:
    """The NumPy ``flags`` a meta array answers: its layout, and read-only (writes into it
    are no-ops, so nothing may take it for memory to sum gradients into)."""

    __slots__ = ("c_contiguous", "f_contiguous")
    writeable = False

    def __init__(self, shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> None:
        self.c_contiguous = _dense(shape, strides, itemsize, reversed(range(len(shape))))
        self.f_contiguous = _dense(shape, strides, itemsize, range(len(shape)))


def _dense(shape: tuple, strides: tuple, itemsize: int, dims: Any) -> bool:
    if 0 in shape:  # (NumPy's: an array without elements is contiguous in every order)
        return True
    step = itemsize
    for d in dims:
        if shape[d] != 1 and strides[d] != step:
            return False
        step *= shape[d]
    return True


class MetaArray:
    """A shape, a NumPy dtype and byte strides standing in for an array: what a meta tensor
    holds. Attribute reads NumPy answers without data work; reading values raises.

    Example:
        >>> a = MetaArray((2, 3), np.dtype(np.float32))
        >>> a.strides, a.nbytes
        ((12, 4), 24)
    """

    __slots__ = ("shape", "dtype", "strides", "_flags")
    base = None  # (owns its "memory": autograd's aliasing checks read it)
    __array_priority__ = 2000  # NumPy's operators defer to this class's (which refuse)

    def __init__(self, shape: tuple[int, ...], dtype: Any,
                 strides: tuple[int, ...] | None = None) -> None:
        self.shape = tuple(int(n) for n in shape)
        self.dtype = np.dtype(dtype)
        self.strides = contiguous_strides(self.shape, self.dtype.itemsize) if strides is None \
            else tuple(strides)
        self._flags = None

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def flags(self) -> _Flags:
        if self._flags is None:
            self._flags = _Flags(self.shape, self.strides, self.dtype.itemsize)
        return self._flags

    def skeleton(self) -> np.ndarray:
        """A read-only NumPy array of this shape and dtype whose elements all alias one zero:
        what shape-only NumPy code (basic or advanced indexing) may run on safely."""
        return np.broadcast_to(np.zeros((), self.dtype), self.shape)

    def reshape(self, *shape: Any, copy: bool | None = None) -> MetaArray:
        """NumPy's ``reshape``: a view's strides where one exists, else C order (a copy's);
        ``copy=False`` raises ValueError when no view exists, as NumPy's does."""
        shape = shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape
        stand_in = np.lib.stride_tricks.as_strided(np.zeros(1, self.dtype), self.shape,
                                                   self.strides, writeable=False)
        try:  # (copy=False reads no element: the stand-in's lie outside its buffer)
            view = np.reshape(stand_in, shape, copy=False)
        except ValueError:
            if copy is False:
                raise
            return MetaArray(_resolved(shape, self.size), self.dtype)
        return MetaArray(view.shape, self.dtype, view.strides)

    def transpose(self, *axes: Any) -> MetaArray:
        axes = axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else axes
        order = tuple(axes) if axes else tuple(reversed(range(self.ndim)))
        return MetaArray(tuple(self.shape[d] for d in order), self.dtype,
                         tuple(self.strides[d] for d in order))

    def astype(self, dtype: Any, **_: Any) -> MetaArray:
        return MetaArray(self.shape, dtype)

    def copy(self, order: str = "C") -> MetaArray:
        return MetaArray(self.shape, self.dtype)

    def __getitem__(self, key: Any) -> MetaArray:
        return MetaArray(self.skeleton()[key].shape, self.dtype)

    def __setitem__(self, key: Any, value: Any) -> None:
        """A write into a meta array stores nothing (``copy_``, ``zero_``, ``x[i] = v``)."""

    def __iadd__(self, other: Any) -> MetaArray:  # (gradient sums in place: nothing to add)
        return self

    def _arith(self, other: Any) -> MetaArray:
        """Arithmetic with a number or array (a factory's ``start + step * arange(n)``): the
        result's broadcast shape and NumPy's result dtype."""
        shape = np.broadcast_shapes(self.shape, np.shape(other))
        other = other.dtype if isinstance(other, MetaArray) else other
        return MetaArray(shape, np.result_type(self.dtype, other))

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = _arith

    def __array__(self, dtype: Any = None, copy: Any = None) -> NoReturn:
        no_data("a NumPy conversion")

    def __bool__(self) -> NoReturn:
        no_data("bool()")

    def __getattr__(self, name: str) -> NoReturn:
        no_data(f"array.{name}")

    def __reduce__(self) -> tuple:  # (pickling and deepcopy carry the layout: no data)
        return MetaArray, (self.shape, self.dtype, self.strides)

    def __repr__(self) -> str:
        return f"MetaArray(shape={self.shape}, dtype={self.dtype})"


class _MetaNamespace:
    """The array namespace of the meta device: makes :class:`MetaArray` s where NumPy would
    make arrays (the factories), and refuses every function that would compute on values."""

    def empty(self, shape: Any, dtype: Any = float, **_: Any) -> MetaArray:
        return MetaArray((shape,) if isinstance(shape, int) else shape, dtype)

    zeros = ones = empty

    def arange(self, start: float, stop: float | None = None, step: float = 1,
               dtype: Any = None) -> MetaArray:
        if stop is None:
            start, stop = 0, start
        n = max(0, math.ceil((stop - start) / step))
        return MetaArray((n,), np.result_type(start, stop, step) if dtype is None else dtype)

    def linspace(self, start: float, stop: float, num: int, **_: Any) -> MetaArray:
        return MetaArray((num,), np.float64)

    def eye(self, n: int, m: int | None = None, dtype: Any = float, **_: Any) -> MetaArray:
        return MetaArray((n, n if m is None else m), dtype)

    def full(self, shape: Any, fill_value: Any, dtype: Any = None, **_: Any) -> MetaArray:
        return self.empty(shape, np.asarray(fill_value).dtype if dtype is None else dtype)

    def asarray(self, a: Any, dtype: Any = None, **_: Any) -> MetaArray:
        """A meta array of ``a``'s shape and dtype (``a``: a meta or NumPy array, or data)."""
        if isinstance(a, MetaArray):
            return a if dtype is None else MetaArray(a.shape, dtype)
        a = np.asarray(a)
        return MetaArray(a.shape, a.dtype if dtype is None else dtype)

    array = asarray

    def broadcast_to(self, a: Any, shape: tuple[int, ...]) -> MetaArray:
        np.broadcast_shapes(a.shape, tuple(shape))  # (NumPy's error for shapes that do not)
        return MetaArray(shape, a.dtype, (0,) * len(shape))

    def may_share_memory(self, a: Any, b: Any) -> bool:
        return isinstance(a, MetaArray) and isinstance(b, MetaArray)

    def zeros_like(self, a: MetaArray, dtype: Any = None, **_: Any) -> MetaArray:
        """A meta array of ``a``'s shape (and dtype unless given); also ``tril``, ``triu``
        and the other functions whose result has their input's shape."""
        return MetaArray(a.shape, a.dtype if dtype is None else dtype)

    empty_like = ones_like = tril = triu = zeros_like

    def __getattr__(self, name: str) -> Any:
        found = getattr(np, name, None)
        if isinstance(found, type):  # NumPy's dtypes and types (``xp.float32``) carry no data
            return found
        no_data(name)


def _zero_view(shape: tuple[int, ...], dtype: Any) -> MetaArray:
    return MetaArray(shape, dtype, (0,) * len(shape))


META = Device("meta", None, _MetaNamespace(), _zero_view, is_meta=True)


def _make_meta(index: int | None) -> Device:
    return META


register_backend("meta", _make_meta)
