"""DLPack, the array-exchange protocol: ``ember.from_dlpack(obj)`` makes a tensor sharing the
memory of any object with ``__dlpack__`` (a PyTorch tensor, a NumPy array, …), and Ember
tensors have ``__dlpack__``/``__dlpack_device__``, so ``torch.from_dlpack(x)`` and
``np.from_dlpack(x)`` share theirs. No copy either way: writes show on both sides.

The exchange goes through NumPy's DLPack support, on the CPU. NumPy has no bfloat16 of its
own (Ember's is ``ml_dtypes``'), so bfloat16 crosses as DLPack's bfloat16 by relabelling the
exchanged descriptor: exported as NumPy's uint16 export with its dtype field set to bfloat16,
imported by reading a bfloat16 descriptor as uint16 and viewing the array as bfloat16 (no copy
either way). ``__dlpack__`` refuses a tensor that requires grad, as in PyTorch (DLPack carries
no history); ``to_dlpack`` exports its memory, as PyTorch's does.

Example:
    >>> a = np.zeros(3)
    >>> t = ember.from_dlpack(a)
    >>> t[0] = 5.0
    >>> a
    array([5., 0., 0.])
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from ember import dtypes
from ember.errors import ArgumentError, DeviceError, DTypeError, GradError, OpError, type_name
from ember.ops.creation import from_numpy
from ember.tensor import Tensor, method

__all__ = ["from_dlpack", "to_dlpack"]

_CPU = 1  # DLPack's device type code of the CPU
_UINT16, _BFLOAT16 = (1, 16, 1), (4, 16, 1)  # DLPack's (type code, bits, lanes)

# where the DLTensor starts in the managed struct a capsule holds (the versioned struct puts a
# version, the manager context, the deleter and flags first), and its dtype field inside it
# (after the data pointer, the device and ndim)
_TENSOR_AT = {b"dltensor": 0, b"dltensor_versioned": 32}
_DTYPE_AT = 20
_DEVICE_AT = 8  # (after the data pointer: the device type and index, two int32s)

_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype, _get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype, _get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]


def _relabel(capsule: Any, old: tuple[int, int, int], new: tuple[int, int, int]) -> bool:
    """Sets the dtype of the (not yet consumed) DLPack ``capsule`` to ``new`` if it is
    ``old``; whether it was. The descriptor is made for this one exchange, so changing it
    touches nothing else."""
    name = _get_name(capsule)
    if name not in _TENSOR_AT:
        return False
    field = _get_pointer(capsule, name) + _TENSOR_AT[name] + _DTYPE_AT
    code, bits = ctypes.c_uint8.from_address(field), ctypes.c_uint8.from_address(field + 1)
    lanes = ctypes.c_uint16.from_address(field + 2)
    if (code.value, bits.value, lanes.value) != old:
        return False
    code.value, bits.value, lanes.value = new
    return True


class _Capsule:
    """A bare DLPack capsule (``to_dlpack``'s, PyTorch's ``to_dlpack``'s) as the exporting
    object the protocol expects, its device read from the descriptor. (The consumer marks
    the capsule used when it takes it; a second import then fails here.)"""

    def __init__(self, capsule: Any) -> None:
        name = _get_name(capsule)
        if name not in _TENSOR_AT:
            raise TypeError(f"from_dlpack: expected an unconsumed DLPack capsule (named "
                            f"'dltensor' or 'dltensor_versioned'), got one named "
                            f"{(name or b'').decode()!r}. "
                            "Hint: a capsule can be imported only once")
        self.capsule = capsule
        at = _get_pointer(capsule, name) + _TENSOR_AT[name] + _DEVICE_AT
        self.device = (ctypes.c_int32.from_address(at).value,
                       ctypes.c_int32.from_address(at + 4).value)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self.capsule


class _AsUInt16:
    """``obj``'s DLPack exports with a bfloat16 dtype read as uint16 (for NumPy)."""

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.obj.__dlpack_device__()

    def __dlpack__(self, **kwargs: Any) -> Any:
        capsule = self.obj.__dlpack__(**kwargs)
        if not _relabel(capsule, _BFLOAT16, _UINT16):
            raise BufferError("not a bfloat16 export")
        return capsule


class _Writable:
    """The memory of ``array``, which NumPy made read-only only because it came in an
    unversioned capsule (one with no read-only flag, so NumPy assumes the worst), offered
    writable as PyTorch's import of such a capsule is; it keeps ``array`` (and through it
    the capsule and the producer's memory) alive."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = array
        interface = dict(array.__array_interface__)
        interface["data"] = (interface["data"][0], False)
        self.__array_interface__ = interface


def _imported(ext_tensor: Any) -> np.ndarray:
    """``np.from_dlpack(ext_tensor)``, writable unless the producer said read-only."""
    array = np.from_dlpack(ext_tensor)
    if array.flags.writeable or not (type(array.base).__name__ == "PyCapsule"
                                     and _get_name(array.base) == b"numpy_dltensor"):
        return array
    return np.asarray(_Writable(array))


def _from_cpu(ext_tensor: Any) -> Any:
    """The NumPy array over ``ext_tensor``'s memory; a bfloat16 one as ``ml_dtypes``'."""
    try:
        return _imported(ext_tensor)
    except (RuntimeError, BufferError, TypeError) as err:
        try:
            return _imported(_AsUInt16(ext_tensor)).view(dtypes.bfloat16.np)
        except (RuntimeError, BufferError, TypeError):
            raise err from None


def from_dlpack(ext_tensor: Any, *, device: Any = None, copy: bool | None = None) -> Tensor:
    """A tensor sharing the memory of ``ext_tensor``: any object with ``__dlpack__`` and
    ``__dlpack_device__`` (PyTorch tensors, NumPy arrays, …) on the CPU, or a DLPack capsule
    (from :func:`to_dlpack` or another library's ``to_dlpack``; it is consumed).

    As PyTorch's: ``copy=True`` gives a tensor of its own instead (``None`` and ``False``
    share), and ``device`` puts it on that device (the CPU: where it is already); a move to
    another device copies, so ``copy=False`` refuses it.

    Example:
        >>> ember.from_dlpack(np.arange(3))
        tensor([0, 1, 2])
        >>> a = np.zeros(2)
        >>> t = ember.from_dlpack(a, copy=True)
        >>> a[0] = 5.0
        >>> t
        tensor([0., 0.], dtype=ember.float64)
    """
    if copy is not None and not isinstance(copy, (bool, np.bool_)):
        raise ArgumentError(f"from_dlpack: copy must be True, False or None, got {copy!r} "
                            f"({type_name(copy)})")
    out = _import(ext_tensor)
    if device is not None:
        moved = out.to(device)
        if copy is False and moved.device != out.device:
            raise ArgumentError(f"from_dlpack: cannot move DLPack tensor from device "
                                f"{out.device} to {moved.device} without copying. Set "
                                "copy=None or copy=True.")
        out = moved
    return out.clone() if copy else out


def _import(ext_tensor: Any) -> Tensor:
    if isinstance(ext_tensor, Tensor):
        _check_no_grad("from_dlpack", ext_tensor)
        return ext_tensor.detach()
    if type(ext_tensor).__name__ == "PyCapsule":
        ext_tensor = _Capsule(ext_tensor)
    if not hasattr(ext_tensor, "__dlpack__") or not hasattr(ext_tensor, "__dlpack_device__"):
        raise TypeError(f"from_dlpack: expected an object with __dlpack__ and "
                        f"__dlpack_device__ (a tensor or array) or a DLPack capsule, got "
                        f"{type_name(ext_tensor)}")
    kind, index = ext_tensor.__dlpack_device__()
    if kind != _CPU:
        raise DeviceError(f"from_dlpack: the object lives on DLPack device type {kind} (index "
                          f"{index}); Ember's backends here run on the CPU (type 1). Hint: move "
                          "it to the CPU first (e.g. .cpu())")
    try:
        array = _from_cpu(ext_tensor)
    except (RuntimeError, BufferError, TypeError) as err:
        reason = str(err).rstrip(".")
        what = "from_dlpack: could not import " + (
            "a DLPack capsule" if isinstance(ext_tensor, _Capsule) else type_name(ext_tensor))
        if "type" not in reason.lower():  # the producer refused for its own reasons
            raise OpError(f"{what}: {reason}") from None
        dtype = getattr(ext_tensor, "dtype", None)
        raise DTypeError(f"{what}{'' if dtype is None else f' of dtype {dtype}'}: {reason}. "
                         "Hint: Ember imports DLPack's bool, (unsigned) integers, floats "
                         "(bfloat16 too) and complex numbers; convert to one of them "
                         "first") from None
    return from_numpy(array)


def to_dlpack(tensor: Tensor) -> Any:
    """A DLPack capsule (the unversioned kind, as PyTorch's ``to_dlpack`` makes) sharing the
    memory of ``tensor``, for a consumer that takes capsules
    (``torch.utils.dlpack.from_dlpack``, :func:`from_dlpack`); it can be imported once.
    Consumers that take the tensor itself are better given the tensor. A tensor that requires
    grad is exported as its detached memory, as PyTorch's ``to_dlpack`` does (``__dlpack__``
    refuses it).

    Example:
        >>> x = ember.arange(3.0)
        >>> y = ember.from_dlpack(ember.to_dlpack(x))
        >>> y.data_ptr() == x.data_ptr()
        True
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(f"to_dlpack: expected an ember.Tensor, got {type_name(tensor)}")
    return tensor.detach().__dlpack__()


def _check_no_grad(op: str, tensor: Tensor) -> None:
    if tensor.requires_grad:  # (as PyTorch's from_dlpack of a tensor that requires grad)
        raise GradError(f"{op}: can't export a tensor that requires grad (DLPack carries no "
                        "history). Hint: export tensor.detach()")


@method("__dlpack__")
def _dlpack(self: Tensor, *, stream: Any = None, max_version: tuple[int, int] | None = None,
            dl_device: Any = None, copy: bool | None = None) -> Any:
    """The DLPack capsule of the tensor's memory (for ``torch.from_dlpack``,
    ``np.from_dlpack`` and other consumers)."""
    _check_no_grad("__dlpack__", self)
    self._vc.shared = True  # (the consumer's writes move no version counter, as from_numpy's)
    kwargs: dict[str, Any] = {"stream": stream}
    if max_version is not None:
        kwargs["max_version"] = max_version
    if dl_device is not None:
        kwargs["dl_device"] = dl_device
    if copy is not None:
        kwargs["copy"] = copy
    if self.dtype is not dtypes.bfloat16:
        try:
            return self._data.__dlpack__(**kwargs)
        except BufferError as err:
            what = (f"__dlpack__: can't export a tensor of dtype {self.dtype} and shape "
                    f"{tuple(self.shape)}")
            if "dtype" not in str(err):
                raise OpError(f"{what}: {err}") from None
            raise DTypeError(f"{what}: {str(err).rstrip('.')}. Hint: convert it first, e.g. "
                             "tensor.float()") from None
    capsule = self._data.view(np.uint16).__dlpack__(**kwargs)
    if not _relabel(capsule, _UINT16, _BFLOAT16):
        raise DTypeError("__dlpack__: could not mark the export as bfloat16 (an unknown DLPack "
                         "capsule). Hint: export tensor.float() instead")
    return capsule


@method("__dlpack_device__")
def _dlpack_device(self: Tensor) -> tuple[int, int]:
    """DLPack's ``(device type, index)`` of the tensor: ``(1, 0)`` on the CPU."""
    return self._data.__dlpack_device__()
