"""``from_file``: a tensor whose elements live in a memory-mapped file, as PyTorch's
``torch.from_file``. With ``shared=True`` writes reach the file (and other processes mapping
it); otherwise the mapping is copy-on-write and the file is never changed."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ember import dtypes
from ember.backend import device as to_device
from ember.errors import ArgumentError, DeviceError, OpError
from ember.ops.creation import _finish

__all__ = ["from_file"]


def from_file(filename: str | os.PathLike, shared: bool | None = None, size: int = 0, *,
              dtype: Any = None, layout: Any = None, device: Any = None,
              pin_memory: bool = False, requires_grad: bool = False) -> Any:
    """A 1-d tensor of ``size`` elements of ``dtype`` (the default dtype when None) mapped
    from the start of ``filename``. ``shared=True`` creates or grows the file as needed and
    writes changes back to it; otherwise the file must hold ``size`` elements already and
    changes stay in memory.

    Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "weights.bin")
        >>> ember.from_file(path, shared=True, size=3).add_(2)
        tensor([2., 2., 2.])
        >>> ember.from_file(path, size=3)
        tensor([2., 2., 2.])
    """
    op = "from_file"
    dt = dtypes.get_default_dtype() if dtype is None else dtypes.to_dtype(dtype)
    dev = to_device(device)
    if dev.type != "cpu":
        raise DeviceError(f"{op}: only CPU tensors can be mapped to files, got device {dev}. "
                          "Hint: map it on the CPU, then move it with .to(device)")
    if pin_memory:
        raise OpError(f"{op}: memory-mapped tensors cannot be pinned, as in PyTorch")
    if layout is not None and getattr(layout, "name", layout) != "strided":
        raise OpError(f"{op}: only the strided layout can be mapped, got {layout}")
    size = int(size)
    if size < 0:
        raise ArgumentError(f"{op}: size must be non-negative, got {size}")
    path = os.fspath(filename)
    need = size * dt.itemsize
    if shared:
        with open(path, "ab") as f:  # creates it; grows it to the mapping, as PyTorch does
            if f.tell() < need:
                f.truncate(need)
    elif not os.path.exists(path):
        raise FileNotFoundError(f"{op}: no file {path!r} to map read-only. Hint: pass "
                                "shared=True to create it")
    elif os.path.getsize(path) < need:
        raise OpError(f"{op}: file {path!r} holds {os.path.getsize(path)} bytes, fewer than "
                      f"the {need} that {size} {dt.name} elements need")
    if size == 0:
        array = np.empty(0, dt.np)
    else:
        array = np.memmap(path, dtype=dt.np, mode="r+" if shared else "c", shape=(size,))
    return _finish(array, dev, requires_grad)
