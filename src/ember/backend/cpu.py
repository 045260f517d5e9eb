"""The CPU backend: NumPy arrays, BLAS through NumPy's linked library."""

from __future__ import annotations

import numpy as np

from ember.backend.device import Device, register_backend


def _zero_view(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """A zero-strided view of one zero: 3× faster than ``np.broadcast_to`` (a hot spot of
    backward, which makes one per input it kept only the shape of)."""
    view = np.ndarray(shape, dtype, buffer=np.zeros(1, dtype), strides=(0,) * len(shape))
    view.flags.writeable = False
    return view


def broadcast_view(a: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``np.broadcast_to(a, shape)`` (a read-only view whose base is ``a``), made directly for
    a C-contiguous ``a``: 2-3× faster (every sum's and mean's backward makes one).

    Example:
        >>> broadcast_view(np.ones((1, 3)), (2, 3)).strides
        (0, 8)
    """
    lead = len(shape) - a.ndim
    if type(a) is not np.ndarray or not a.flags.c_contiguous or not a.size or lead < 0:
        return np.broadcast_to(a, shape)
    strides = [0] * lead
    for n, m, s in zip(a.shape, shape[lead:], a.strides):
        if n == 1 and m >= 0:  # (a size-1 dimension gets stride 0, as NumPy gives it)
            strides.append(0)
        elif n == m:
            strides.append(s)
        else:  # (NumPy's error)
            return np.broadcast_to(a, shape)
    view = np.ndarray(shape, a.dtype, buffer=a, strides=strides)
    view.flags.writeable = False
    return view


CPU = Device("cpu", None, np, _zero_view)


def _make_cpu(index: int | None) -> Device:
    return CPU


register_backend("cpu", _make_cpu)

# PyTorch computes 1/0 = inf and 0/0 = nan silently; so does Ember (anomaly mode finds NaNs).
np.seterr(divide="ignore", invalid="ignore", over="ignore", under="ignore")
