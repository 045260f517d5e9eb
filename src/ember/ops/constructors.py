"""Constructors PyTorch has beside the basic ones: ``asarray`` (a tensor from anything, sharing
memory where it can), ``frombuffer`` (a tensor over a Python buffer's memory),
``empty_strided``/``empty_permuted`` (uninitialised memory in a chosen layout),
``scalar_tensor`` and ``logspace``.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ember import dtypes
from ember.backend import MetaArray
from ember.backend import device as to_device
from ember.errors import (
    AllocationError,
    ArgumentError,
    ShapeError,
    allocation_error,
    is_allocation_failure,
)
from ember.ops.convert import to
from ember.ops.creation import (
    _finish,
    as_tensor,
    check_strided,
    from_numpy,
    linspace,
    sequence_size,
    tensor,
)
from ember.ops.dlpack import from_dlpack
from ember.ops.fits import check_fits, check_number_int
from ember.ops.grad_flag import grad_flag
from ember.ops.int_args import as_int, as_ints
from ember.ops.spaced import spaced_dtype, unfused_spaced
from ember.ops.tensor_data import resolved, torch_memory
from ember.tensor import Tensor

__all__ = ["asarray", "frombuffer", "empty_strided", "empty_permuted", "scalar_tensor",
           "logspace"]


def asarray(obj: Any, *, dtype: Any = None, device: Any = None, copy: bool | None = None,
            requires_grad: bool | None = None) -> Tensor:
    """``obj`` as a tensor: a tensor itself (kept in the graph), a NumPy array or another
    library's CPU tensor with DLPack (a ``torch.Tensor`` not requiring grad) shared when no
    conversion is needed, unless ``copy=True``; ``copy=False`` refuses to copy. A
    ``torch.Tensor`` with its negative or conjugate bit set (``z.conj()``) is copied with them
    applied, Ember having no such bits. An object with Python's buffer protocol
    (``bytearray``, ``array.array``) is its memory read as ``dtype`` (the default dtype unless
    given), shared as PyTorch shares it. Other data (lists, numbers) is copied.
    ``requires_grad`` defaults to ``obj``'s, as in PyTorch 2.13.

    Example:
        >>> a = np.zeros(2)
        >>> t = ember.asarray(a)
        >>> a[0] = 5
        >>> t
        tensor([5., 0.], dtype=ember.float64)
    """
    on_cpu = device is None or to_device(device).type == "cpu"
    if isinstance(obj, np.ndarray) and on_cpu:
        obj = from_numpy(obj)
    elif on_cpu and (memory := torch_memory(obj)) is not None:  # (a torch.Tensor, quickly)
        obj = from_numpy(memory)
    elif _shares_by_dlpack(obj):  # (a torch.Tensor: its memory, as torch.asarray shares it)
        pending = resolved(obj)  # (a negative or conjugate bit: a copy, its values applied)
        if pending is not obj:
            if copy is False:
                raise ArgumentError(f"asarray: can't alias a {type(obj).__module__}."
                                    f"{type(obj).__qualname__} with its "
                                    "negative or conjugate bit set: Ember has no such bits, "
                                    "its values must be copied. Hint: allow a copy (copy=None)")
            obj, copy = pending, None
        obj = from_dlpack(obj)
    if isinstance(obj, Tensor) and dtype is None and device is None and not copy:
        out = obj  # (what ``to`` returns then, without reading its arguments)
    elif isinstance(obj, Tensor):
        dt = obj.dtype if dtype is None else dtypes.to_dtype(dtype)
        dev = obj.device if device is None else to_device(device)
        if copy is False and (dt is not obj.dtype or dev != obj.device):
            raise ArgumentError(f"asarray: can't alias a {obj.dtype.name} tensor on {obj.device} "
                                f"as {dt.name} on {dev}. Hint: allow a copy (copy=None)")
        out = to(obj, dtype=dt, device=dev, copy=bool(copy))
    elif _is_buffer(obj):  # its memory, read as dtype (the default dtype unless given)
        out = frombuffer(obj, dtype=dtypes.get_default_dtype() if dtype is None else dtype)
        out = out.to(device=device, copy=bool(copy)) if device is not None or copy else out
    elif copy is False:
        raise ArgumentError(f"asarray: can't alias a {type(obj).__name__} into a tensor. Hint: "
                            "allow a copy (copy=None)")
    else:
        out = tensor(obj, dtype=dtype, device=device)
    if requires_grad is False and out.requires_grad:
        return out.detach()
    return out.requires_grad_(True) if grad_flag(requires_grad) and not out.requires_grad else out


def _shares_by_dlpack(obj: Any) -> bool:
    """Whether ``obj`` is another library's array or tensor with DLPack on the CPU, not
    requiring grad (DLPack carries no history: such a tensor is copied, detached)."""
    if isinstance(obj, Tensor) or not hasattr(obj, "__dlpack__") or \
            getattr(obj, "requires_grad", False):
        return False
    try:
        return obj.__dlpack_device__()[0] == 1  # (kDLCPU)
    except (AttributeError, TypeError, ValueError, BufferError):
        return False


def _is_buffer(obj: Any) -> bool:
    """Whether ``obj`` exposes Python's buffer protocol (``bytearray``, ``array.array``, …)."""
    if isinstance(obj, np.generic):  # (a NumPy scalar has one too, but is read as a number)
        return False
    try:
        memoryview(obj)
    except TypeError:
        return False
    return True


def scalar_tensor(s: Any, *, dtype: Any = None, device: Any = None,
                  requires_grad: bool = False, layout: Any = None,
                  pin_memory: bool = False) -> Tensor:
    """A 0-d tensor holding ``s``, of the default float dtype unless ``dtype`` is given.

    Example:
        >>> ember.scalar_tensor(3)
        tensor(3.)
    """
    check_strided("scalar_tensor", layout)
    check_number_int("scalar_tensor", s)  # (a number, not data: 2**70 raises, as in PyTorch)
    dt = dtypes.get_default_dtype() if dtype is None else dtype
    return tensor(s, dtype=dt, device=device, requires_grad=requires_grad)


def logspace(start: float, end: float, steps: int, base: float = 10.0, *, dtype: Any = None,
             device: Any = None, requires_grad: bool = False, layout: Any = None,
             pin_memory: bool = False) -> Tensor:
    """``steps`` values from ``base ** start`` to ``base ** end``, evenly spaced in the
    exponent; complex ends (or a complex ``dtype``) space complex exponents.

    Example:
        >>> ember.logspace(0, 2, 3)
        tensor([  1.,  10., 100.])
    """
    check_strided("logspace", layout)
    steps = as_int(steps, "logspace", "steps")  # (2.5 refused, as linspace and PyTorch)
    if steps < 0:
        raise ShapeError(f"logspace: number of steps must be non-negative, got {steps}")
    # (one step: PyTorch fills base ** start, so that must fit, checked below)
    dt = spaced_dtype("logspace", start, end, dtype, 0 if steps == 1 else steps)
    integer = dt.category == dtypes.INT and steps > 1
    if integer:
        # (PyTorch casts the ends to the dtype first, 7.5 is 7 and -4 is 252 in uint8, in its
        # step; one step has none)
        start, end = (int(np.array(int(v)).astype(dt.np)) for v in (start, end))
    try:
        if integer:  # (exponents without linspace's fused multiply-add: 10 ** 2.0, not
            # 10 ** 1.9999999999999998, is 100, as PyTorch's)
            exponents = as_tensor(unfused_spaced(start, end, steps), device=device)
        else:
            exponents = linspace(start, end, steps, device=device,
                                 dtype=dtypes.complex128 if dt.is_complex else dtypes.float64)
    except (MemoryError, ValueError) as exc:  # (named for logspace and its dtype)
        cause = exc.__cause__ if isinstance(exc, AllocationError) else exc
        if not is_allocation_failure(cause):
            raise
        raise allocation_error("logspace", (steps,), dt, cause) from cause
    powers = float(base) ** exponents
    if steps == 1:
        check_fits("logspace", powers[0], dt)
    out = powers.to(dt)
    return out.requires_grad_(True) if grad_flag(requires_grad) else out


def frombuffer(buffer: Any, *, dtype: Any, count: int = -1, offset: int = 0,
               requires_grad: bool = False) -> Tensor:
    """A 1-D tensor over the memory of an object with Python's buffer protocol (``bytearray``,
    ``memoryview``, ``array.array``, …): ``count`` elements of ``dtype`` (all that fit when
    -1) starting ``offset`` bytes in. Shares the memory; a read-only buffer makes a read-only
    tensor, with PyTorch's warning.

    Example:
        >>> ember.frombuffer(bytearray([1, 0, 2, 0]), dtype=ember.int16)
        tensor([1, 2], dtype=ember.int16)
    """
    dt = dtypes.to_dtype(dtype)
    view = memoryview(buffer).cast("B")
    length, item = view.nbytes, dt.itemsize
    if length == 0 or count == 0:
        raise ArgumentError(f"frombuffer: both buffer length ({length}) and count ({count}) must "
                            "not be 0")
    if not 0 <= offset < length:
        raise ArgumentError(f"frombuffer: offset ({offset} bytes) must be non-negative and no "
                            f"greater than buffer length ({length} bytes) minus 1")
    if count < 0:
        if (length - offset) % item:
            raise ArgumentError(f"frombuffer: buffer length ({length - offset} bytes) after offset "
                                f"({offset} bytes) must be a multiple of element size ({item})")
        count = (length - offset) // item
    elif offset + count * item > length:
        raise ArgumentError(f"frombuffer: requested buffer length ({count} * {item} bytes) after "
                            f"offset ({offset} bytes) must not be greater than actual buffer "
                            f"length ({length} bytes)")
    if view.readonly:
        warnings.warn("frombuffer: the given buffer is not writable; the tensor is read-only "
                      "(writing to it raises). Hint: pass a bytearray, or clone the tensor",
                      UserWarning, stacklevel=2)
    out = from_numpy(np.frombuffer(view, dtype=dt.np, count=count, offset=offset))
    return out.requires_grad_(True) if grad_flag(requires_grad) else out


def _strided_empty(op: str, size: tuple, stride: tuple, dtype: Any, device: Any,
                   requires_grad: bool) -> Tensor:
    dev = to_device(device)
    dt = dtypes.get_default_dtype() if dtype is None else dtypes.to_dtype(dtype)
    if any(n < 0 for n in size) or any(s < 0 for s in stride):
        raise ShapeError(f"{op}: sizes {list(size)} and strides {list(stride)} must be "
                         "non-negative")
    byte_strides = tuple(s * dt.itemsize for s in stride)
    if dev.is_meta:  # (the layout without the memory)
        return _finish(MetaArray(size, dt.np, byte_strides), dev, requires_grad)
    need = 0 if 0 in size else 1 + sum((n - 1) * s for n, s in zip(size, stride))
    xp = dev.xp
    memory = xp.empty(need, dt.np)
    array = np.ndarray(size, dt.np, buffer=memory, strides=byte_strides) if xp is np \
        else xp.lib.stride_tricks.as_strided(memory, size, byte_strides)  # (NumPy's
    # as_strided cannot name ml_dtypes' float8 types)
    return _finish(array, dev, requires_grad)


def empty_strided(size: Any, stride: Any, *, dtype: Any = None, device: Any = None,
                  requires_grad: bool = False, pin_memory: bool = False,
                  layout: Any = None) -> Tensor:
    """An uninitialised tensor of ``size`` laid out with ``stride`` (in elements), over just
    the memory those strides reach. ``pin_memory`` is accepted and changes nothing on the CPU.

    Example:
        >>> ember.empty_strided((2, 3), (1, 2)).stride()
        (1, 2)
    """
    check_strided("empty_strided", layout)
    size = as_ints(sequence_size("empty_strided", size), "empty_strided", "size")
    stride = as_ints(stride, "empty_strided", "stride")
    if len(size) != len(stride):
        raise ShapeError(f"empty_strided: dimensionality of sizes ({len(size)}) must match "
                         f"dimensionality of strides ({len(stride)})")
    return _strided_empty("empty_strided", size, stride, dtype, device, requires_grad)


def empty_permuted(size: Any, physical_layout: Any, *, dtype: Any = None, device: Any = None,
                   requires_grad: bool = False, pin_memory: bool = False,
                   layout: Any = None) -> Tensor:
    """An uninitialised tensor of logical shape ``size`` whose memory is laid out in the order
    ``physical_layout`` (outermost first): ``empty_permuted((N, C, H, W), (0, 2, 3, 1))`` is
    channels-last.

    Example:
        >>> ember.empty_permuted((2, 3, 5, 7), (0, 2, 3, 1)).stride()
        (105, 1, 21, 3)
    """
    check_strided("empty_permuted", layout)
    size = as_ints(sequence_size("empty_permuted", size), "empty_permuted", "size")
    order = as_ints(physical_layout, "empty_permuted", "physical_layout")
    if len(size) != len(order):
        raise ShapeError(f"empty_permuted: physical_layout {list(order)} needs one entry per "
                         f"dimension of size {list(size)}")
    if sorted(order) != list(range(len(size))):
        raise ShapeError(f"empty_permuted: physical_layout {list(order)} must be a "
                         f"permutation of 0..{len(size) - 1} (no duplicate dims)")
    stride = [0] * len(size)
    step = 1
    for d in reversed(order):
        stride[d] = step
        step *= max(size[d], 1)
    return _strided_empty("empty_permuted", size, tuple(stride), dtype, device, requires_grad)
