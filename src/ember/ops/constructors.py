"""Constructors PyTorch has beside the basic ones: ``asarray`` (a tensor from anything, sharing
memory where it can), ``scalar_tensor`` and ``logspace``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import dtypes
from ember.backend import device as to_device
from ember.errors import ShapeError
from ember.ops.convert import to
from ember.ops.creation import from_numpy, linspace, tensor
from ember.tensor import Tensor

__all__ = ["asarray", "scalar_tensor", "logspace"]


def asarray(obj: Any, *, dtype: Any = None, device: Any = None, copy: bool | None = None,
            requires_grad: bool | None = None) -> Tensor:
    """``obj`` as a tensor: a tensor itself (kept in the graph) or a NumPy array shared when no
    conversion is needed, unless ``copy=True``; ``copy=False`` refuses to copy. Other data
    (lists, numbers) is copied. ``requires_grad`` defaults to ``obj``'s, as in PyTorch 2.13.

    Example:
        >>> a = np.zeros(2)
        >>> t = ember.asarray(a)
        >>> a[0] = 5
        >>> t
        tensor([5., 0.], dtype=ember.float64)
    """
    if isinstance(obj, np.ndarray) and (device is None or to_device(device).type == "cpu"):
        obj = from_numpy(obj)
    if isinstance(obj, Tensor):
        dt = obj.dtype if dtype is None else dtypes.to_dtype(dtype)
        dev = obj.device if device is None else to_device(device)
        if copy is False and (dt is not obj.dtype or dev != obj.device):
            raise ValueError(f"asarray: can't alias a {obj.dtype.name} tensor on {obj.device} "
                             f"as {dt.name} on {dev}. Hint: allow a copy (copy=None)")
        out = to(obj, dtype=dt, device=dev, copy=bool(copy))
    elif copy is False:
        raise ValueError(f"asarray: can't alias a {type(obj).__name__} into a tensor. Hint: "
                         "allow a copy (copy=None)")
    else:
        out = tensor(obj, dtype=dtype, device=device)
    if requires_grad is False and out.requires_grad:
        return out.detach()
    return out.requires_grad_(True) if requires_grad and not out.requires_grad else out


def scalar_tensor(s: Any, *, dtype: Any = None, device: Any = None,
                  requires_grad: bool = False) -> Tensor:
    """A 0-d tensor holding ``s``, of the default float dtype unless ``dtype`` is given.

    Example:
        >>> ember.scalar_tensor(3)
        tensor(3.)
    """
    dt = dtypes.get_default_dtype() if dtype is None else dtype
    return tensor(s, dtype=dt, device=device, requires_grad=requires_grad)


def logspace(start: float, end: float, steps: int, base: float = 10.0, *, dtype: Any = None,
             device: Any = None, requires_grad: bool = False) -> Tensor:
    """``steps`` values from ``base ** start`` to ``base ** end``, evenly spaced in the
    exponent.

    Example:
        >>> ember.logspace(0, 2, 3)
        tensor([  1.,  10., 100.])
    """
    if int(steps) < 0:
        raise ShapeError(f"logspace: number of steps must be non-negative, got {steps}")
    dt = dtypes.get_default_dtype() if dtype is None else dtypes.to_dtype(dtype)
    exponents = linspace(start, end, steps, dtype=dtypes.float64, device=device)
    out = (float(base) ** exponents).to(dt)
    return out.requires_grad_(True) if requires_grad else out
