"""Storage objects, as PyTorch exposes a tensor's memory block: ``x.untyped_storage()`` (its
bytes), ``x.storage()`` (its elements: PyTorch's deprecated ``TypedStorage``), and the methods
that point a tensor at memory: ``set_``, ``is_set_to``, and the deprecated out-of-place
``resize`` / ``resize_as``.

A storage is the memory block a tensor's array lives in (see :mod:`ember.ops.storage`): a
view's storage is its base's, so ``x[1:].untyped_storage().nbytes()`` counts all of ``x``.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ember import dtypes
from ember.autograd.grad_mode import is_grad_enabled
from ember.backend import Device
from ember.errors import DTypeError, GradError, ShapeError, type_name
from ember.ops.inplace import refuse_inference_write, transforms_follow
from ember.ops.primitive import DISPATCH
from ember.ops.shape import read_sizes
from ember.ops.storage import _storage, _strided
from ember.tensor import STRUCTURE, Tensor, method

__all__ = ["UntypedStorage", "TypedStorage"]


class _Storage:
    """What both storages share: a flat array over the memory block, and its device."""

    __slots__ = ("_bytes", "device")

    def __init__(self, data: Any, device: Device) -> None:
        self._bytes, self.device = data, device

    def nbytes(self) -> int:
        """The size of the block in bytes."""
        return self._bytes.nbytes

    def __len__(self) -> int:
        return self._bytes.size

    def element_size(self) -> int:
        return self._bytes.itemsize

    def data_ptr(self) -> int:
        """The address of the block's first byte."""
        return self._bytes.__array_interface__["data"][0]

    def __getitem__(self, key: int | slice) -> Any:
        out = self._bytes[key]
        return type(self)(out, self.device) if isinstance(key, slice) else out.item()

    def __setitem__(self, key: int | slice, value: Any) -> None:
        self._writable()[key] = value

    def fill_(self, value: Any) -> Any:
        """Writes ``value`` into every byte (element, for a typed storage); returns self.

        Example:
            >>> x = ember.zeros(2, dtype=ember.uint8)
            >>> _ = x.untyped_storage().fill_(7); x
            tensor([7, 7], dtype=ember.uint8)
        """
        self._writable()[...] = value
        return self

    def _writable(self) -> np.ndarray:
        if not self._bytes.flags.writeable:
            raise GradError("storage: this memory is read-only (a read-only NumPy array's, "
                            "shared with from_numpy). Hint: write into a clone()")
        return self._bytes

    def tolist(self) -> list:
        return self._bytes.tolist()

    def clone(self) -> Any:
        """A copy in new memory."""
        return type(self)(self._bytes.copy(), self.device)

    def cpu(self) -> Any:
        return self

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"


class UntypedStorage(_Storage):
    """The bytes of a tensor's memory block (``x.untyped_storage()``); indexing reads a byte.
    Writes through it are not tracked by autograd.

    Example:
        >>> s = ember.arange(4.0).untyped_storage()
        >>> s.nbytes(), s.element_size(), s[4:8].tolist()
        (16, 1, [0, 0, 128, 63])
    """

    __slots__ = ()

    def size(self) -> int:
        """The number of bytes."""
        return self._bytes.size

    @property
    def dtype(self) -> dtypes.DType:
        return dtypes.uint8

    def __repr__(self) -> str:
        return (f"[ember.UntypedStorage(device={self.device.type}) of size "
                f"{self.nbytes()}]")


class TypedStorage(_Storage):
    """A tensor's memory block read as elements of its dtype (``x.storage()``, deprecated in
    PyTorch in favour of :meth:`Tensor.untyped_storage`).

    Example:
        >>> s = ember.arange(3.0)[1:].storage()
        >>> s.size(), s.dtype, s.tolist()
        (3, ember.float32, [0.0, 1.0, 2.0])
    """

    __slots__ = ()

    def size(self) -> int:
        """The number of elements."""
        return self._bytes.size

    @property
    def dtype(self) -> dtypes.DType:
        return dtypes.from_numpy(self._bytes.dtype)

    def untyped(self) -> UntypedStorage:
        """The same memory as bytes."""
        return UntypedStorage(self._bytes.view(np.uint8), self.device)

    def __repr__(self) -> str:
        return (f"[ember.TypedStorage(dtype=ember.{self.dtype.name}, device="
                f"{self.device.type}) of size {self.size()}]")


def _block(x: Tensor) -> np.ndarray:
    return _storage(x._data)[0]


@method()
def untyped_storage(self: Tensor) -> UntypedStorage:
    """The bytes of the memory block the tensor lives in (its base's, for a view).

    Example:
        >>> x = ember.zeros(4)
        >>> x[1:].untyped_storage().nbytes(), x[1:].untyped_storage().data_ptr() == x.data_ptr()
        (16, True)
    """
    return UntypedStorage(_block(self), self._device)


@method()
def storage(self: Tensor) -> TypedStorage:
    """The memory block the tensor lives in, as elements of its dtype. Deprecated, as in
    PyTorch (it warns): use :meth:`untyped_storage`.

    Example:
        >>> ember.zeros(2, 3).storage().size()
        6
    """
    warnings.warn("TypedStorage is deprecated, as in PyTorch; use tensor.untyped_storage() "
                  "instead of tensor.storage()", UserWarning, stacklevel=2)
    return TypedStorage(_block(self).view(self._data.dtype), self._device)


def _check_settable(self: Tensor, source_dtype: Any, what: str) -> None:
    if self.requires_grad and is_grad_enabled():
        raise GradError("set_: a leaf tensor that requires grad cannot be pointed at other "
                        "memory. Hint: do it under ember.no_grad()")
    if DISPATCH.transforming() and not transforms_follow(self, "set_", traceable=False):
        raise GradError("set_: not supported inside vmap and forward mode")
    if source_dtype != self._data.dtype:
        raise DTypeError(f"set_: cannot set a tensor of dtype {self.dtype.name} to {what} of "
                         f"dtype {dtypes.from_numpy(source_dtype).name}")


@method("set_")
def set_(self: Tensor, source: Tensor | UntypedStorage | TypedStorage | None = None,
         storage_offset: int = 0, size: Any = None, stride: Any = None) -> Tensor:
    """Points ``self`` at other memory, in place: ``x.set_(y)`` shares ``y``'s memory, shape
    and strides; ``x.set_(storage, offset, size, stride)`` a window of a storage (writes
    reach the storage; a window whose elements overlap is read-only, as :func:`as_strided`
    views are, where PyTorch writes each shared address in turn); ``x.set_()`` leaves an empty
    tensor.

    Example:
        >>> x, y = ember.zeros(3), ember.arange(4.0)
        >>> x.set_(y).is_set_to(y), x.shape
        (True, ember.Size([4]))
    """
    refuse_inference_write(self, "set_")
    old = self._data
    if source is None:
        _check_settable(self, old.dtype, "empty memory")
        new, vc = self._device.xp.empty((0,), old.dtype), None
    elif isinstance(source, Tensor):
        _check_settable(self, source._data.dtype, "a tensor")
        new, vc = source._data, source._vc
    elif isinstance(source, _Storage):
        block = source._bytes if isinstance(source, TypedStorage) else \
            source._bytes.view(old.dtype) if source.nbytes() % old.itemsize == 0 else None
        if block is None:
            raise ShapeError(f"set_: a storage of {source.nbytes()} bytes is not a whole number "
                             f"of {self.dtype.name} elements")
        _check_settable(self, block.dtype, "a storage")
        shape = (block.size - storage_offset,) if size is None else tuple(read_sizes((size,)))
        strides = _contiguous_strides(shape) if stride is None else tuple(stride)
        needed = storage_offset + sum((n - 1) * s for n, s in zip(shape, strides)) + 1
        if any(n == 0 for n in shape):
            needed = 0
        if storage_offset < 0 or needed > block.size:
            raise ShapeError(f"set_: size {shape} with strides {strides} at offset "
                             f"{storage_offset} needs {needed} elements; the storage has "
                             f"{block.size}")
        new, vc = _strided(block, shape, strides, storage_offset), None
        if block.flags.writeable and not _overlapping(shape, strides):
            new.flags.writeable = True  # (writes reach the storage, as PyTorch's)
    else:
        raise TypeError(f"set_: expected a tensor, a storage or nothing, got "
                        f"{type_name(source)}")
    if new.shape != old.shape or new.dtype != old.dtype:
        STRUCTURE.value += 1
    self._data = new
    self._view = None
    if vc is not None:
        self._vc = vc
    self._vc.value += 1
    return self


def _overlapping(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """Whether two elements of a ``shape`` window with ``strides`` may share an address (by
    PyTorch's test: each stride, smallest first, must clear the span of the smaller ones)."""
    span = 1
    for stride, n in sorted((s, n) for n, s in zip(shape, strides) if n > 1):
        if stride < span:
            return True
        span += stride * (n - 1)
    return False


def _contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


@method()
def is_set_to(self: Tensor, tensor: Tensor) -> bool:
    """Whether both tensors lie in the same memory with the same offset, shape and strides.

    Example:
        >>> x = ember.zeros(3)
        >>> x.is_set_to(x.view(3)), x.is_set_to(x[1:])
        (True, False)
    """
    a, b = self._data, tensor._data
    return (a.dtype == b.dtype and a.shape == b.shape and a.strides == b.strides
            and _storage(a)[0].__array_interface__["data"][0]
            == _storage(b)[0].__array_interface__["data"][0]
            and a.__array_interface__["data"][0] == b.__array_interface__["data"][0])


@method()
def resize(self: Tensor, *sizes: Any) -> Tensor:
    """Deprecated (it warns, as PyTorch's): ``self`` reshaped to ``sizes``, which must hold
    as many elements; prefer :meth:`reshape`.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     ember.arange(6.0).resize(2, 3).shape
        ember.Size([2, 3])
    """
    warnings.warn("non-inplace resize is deprecated; use reshape", UserWarning, stacklevel=2)
    return _resized(self, tuple(read_sizes(sizes)))


@method()
def resize_as(self: Tensor, tensor: Tensor) -> Tensor:
    """Deprecated (it warns, as PyTorch's): ``self`` reshaped to ``tensor``'s shape; prefer
    ``reshape(tensor.shape)``."""
    warnings.warn("non-inplace resize_as is deprecated; use reshape", UserWarning,
                  stacklevel=2)
    return _resized(self, tuple(tensor.shape))


def _resized(x: Tensor, shape: tuple[int, ...]) -> Tensor:
    n = int(np.prod(shape))
    if n != x.numel():
        raise ShapeError(f"resize: requested {shape} ({n} elements) for a tensor of shape "
                         f"{tuple(x.shape)} ({x.numel()} elements); the out-of-place resize "
                         "keeps the number of elements. Hint: resize_ changes it in place")
    return x.contiguous().view(shape)  # (shares the memory of a contiguous x, as PyTorch's)
