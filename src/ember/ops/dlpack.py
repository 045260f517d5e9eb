"""DLPack, the array-exchange protocol: ``ember.from_dlpack(obj)`` makes a tensor sharing the
memory of any object with ``__dlpack__`` (a PyTorch tensor, a NumPy array, …), and Ember
tensors have ``__dlpack__``/``__dlpack_device__``, so ``torch.from_dlpack(x)`` and
``np.from_dlpack(x)`` share theirs. No copy either way: writes show on both sides.

The CPU exchange goes through NumPy's DLPack support (and a device's through its array
library), so the dtypes are NumPy's: bfloat16, which NumPy's DLPack does not carry, is refused
with a hint instead of being copied silently. A tensor that requires grad is refused on export,
as in PyTorch (DLPack carries no history).

Example:
    >>> a = np.zeros(3)
    >>> t = ember.from_dlpack(a)
    >>> t[0] = 5.0
    >>> a
    array([5., 0., 0.])
"""

from __future__ import annotations

from typing import Any

from ember import dtypes
from ember.backend import device as to_device
from ember.errors import DeviceError, DTypeError, GradError
from ember.ops.creation import from_numpy
from ember.tensor import Tensor, _wrap, method

__all__ = ["from_dlpack"]

_CPU, _CUDA = 1, 2  # DLPack's device type codes


def from_dlpack(ext_tensor: Any) -> Tensor:
    """A tensor sharing the memory of ``ext_tensor``, any object with ``__dlpack__`` and
    ``__dlpack_device__`` (PyTorch tensors, NumPy arrays, …), on the matching device.

    Example:
        >>> ember.from_dlpack(np.arange(3))
        tensor([0, 1, 2])
    """
    if isinstance(ext_tensor, Tensor):
        return ext_tensor.detach()
    if not hasattr(ext_tensor, "__dlpack__") or not hasattr(ext_tensor, "__dlpack_device__"):
        raise TypeError(f"from_dlpack: expected an object with __dlpack__ and "
                        f"__dlpack_device__ (a tensor or array), got "
                        f"{type(ext_tensor).__name__}. Hint: pass the array itself, not a "
                        "capsule from its __dlpack__()")
    kind, index = ext_tensor.__dlpack_device__()
    if kind == _CPU:
        dev = to_device("cpu")
    elif kind == _CUDA:
        dev = to_device(f"cuda:{index}")
    else:
        raise DeviceError(f"from_dlpack: DLPack device type {kind} (index {index}) is not one "
                          "Ember runs on; expected the CPU (1) or CUDA (2)")
    try:
        array = dev.xp.from_dlpack(ext_tensor)
    except (RuntimeError, BufferError, TypeError) as err:
        reason = str(err).rstrip(".")
        raise DTypeError(f"from_dlpack: could not import {type(ext_tensor).__name__} of dtype "
                         f"{getattr(ext_tensor, 'dtype', '?')}: {reason}. Hint: bfloat16 does "
                         "not cross DLPack through NumPy; convert to float32 first and back "
                         "with .to(ember.bfloat16)") from None
    if dev.type == "cpu":
        return from_numpy(array)
    dtypes.from_numpy(array.dtype)  # a clear error for dtypes Ember has not
    return _wrap(array, dev)


@method("__dlpack__")
def _dlpack(self: Tensor, *, stream: Any = None, max_version: tuple[int, int] | None = None,
            dl_device: Any = None, copy: bool | None = None) -> Any:
    """The DLPack capsule of the tensor's memory (for ``torch.from_dlpack``,
    ``np.from_dlpack`` and other consumers)."""
    if self.requires_grad:
        raise GradError("__dlpack__: can't export a tensor that requires grad (DLPack carries "
                        "no history). Hint: export tensor.detach()")
    if self.dtype is dtypes.bfloat16:
        raise DTypeError("__dlpack__: bfloat16 cannot be exported through NumPy's DLPack. Hint: "
                         "export tensor.float() and convert on the other side")
    self._vc.shared = True  # (the consumer's writes move no version counter, as from_numpy's)
    kwargs: dict[str, Any] = {"stream": stream}
    if max_version is not None:
        kwargs["max_version"] = max_version
    if dl_device is not None:
        kwargs["dl_device"] = dl_device
    if copy is not None:
        kwargs["copy"] = copy
    return self._data.__dlpack__(**kwargs)


@method("__dlpack_device__")
def _dlpack_device(self: Tensor) -> tuple[int, int]:
    """DLPack's ``(device type, index)`` of the tensor: ``(1, 0)`` on the CPU."""
    return self._data.__dlpack_device__()
