"""float32 ``fmod`` and ``remainder`` of NumPy arrays by numba's pass
(:mod:`ember.ops.modulus_numba`: NumPy's values, exact; the C library's ``fmodf``, which
NumPy's loops call, costs ~13 ns an element), through :func:`ember.ops.binary32_kernel.
float32_pass` over 512 elements. Measured (process CPU time, 2 cores, load 7-8.5), 10^6
float32: fmod 18.6 -> 1.49 ms, remainder 20.4 -> 1.88 ms (PyTorch 1.28, 1.46).
"""

from __future__ import annotations

from typing import Any

import numpy as np  # noqa: F401 (the example's)

from ember.backend import compiled
from ember.ops.binary32_kernel import float32_pass

__all__: list[str] = []

_KERNELS = compiled.register("ember.ops.modulus_numba")


def modulus32(xp: Any, a: Any, b: Any, python: bool) -> Any:
    """``fmod(a, b)`` (``remainder``, Python's sign rule, where ``python``) of float32 arrays
    as a new C-contiguous array, or None where the pass does not apply (NumPy's call then).

    Example:
        >>> modulus32(np, np.arange(-300, 300, dtype=np.float32), np.float32([3]), True)[:3]
        array([0., 1., 2.], dtype=float32)
    """
    return float32_pass(xp, _KERNELS, "modulus_block", 512, a, b, python)


def zeros_signed_as(xp: Any, r: Any, a: Any) -> Any:
    """``r``, NumPy's fresh ``remainder(a, b)`` (whose zeros take ``b``'s sign), with its
    zeros taking ``a``'s sign, as PyTorch's (``remainder(-4., 2.)`` is -0.0); written in place.

    Example:
        >>> a = np.float64([-4.0, 4.0])
        >>> zeros_signed_as(np, np.remainder(a, -2.0), a)
        array([-0.,  0.])
    """
    if r.dtype.kind in "iub":  # (bfloat16's kind: V)
        return r
    if r.ndim == 0:  # a NumPy scalar, nothing to write into (count_nonzero: ~1.5 us)
        return xp.copysign(r, a) if r == 0 else r
    nonzero = xp.count_nonzero(r)  # (~0.4 us; any() ~1.5)
    if nonzero == 0:  # all zeros, as in integrality checks (x % 1 == 0): no mask (~4 us)
        xp.copysign(r, a, out=r)
    elif nonzero != r.size:
        xp.copysign(r, a, out=r, where=r == 0)
    return r
