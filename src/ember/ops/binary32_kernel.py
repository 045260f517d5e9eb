"""The dispatcher of float32 two-operand numba passes (:func:`float32_pass`), and the ones
without a module of their own: ``hypot`` and ``copysign`` (kernels in
:mod:`ember.ops.binary32_numba`). ``fmod``/``remainder`` (:mod:`ember.ops.modulus_kernel`) and
``logaddexp`` (:mod:`ember.ops.softplus_mish`) take it too. A pass applies to a C-contiguous
float32 first operand over a size of its own (numba's dispatch, ~3 µs, costs more than it
saves below), a float32 second one of its shape and layout or of one element, numba on.
Measured (process CPU time, 2 cores, load 7-8.5), 10^6 float32: hypot 5.8 -> 1.2 ms,
copysign 0.63 -> 0.37 ms (PyTorch 1.32, 0.37).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from ember.backend import compiled, parallel

__all__: list[str] = []

_KERNELS = compiled.register("ember.ops.binary32_numba")
_SHARE = 1 << 17  # elements a piece takes at least


def hypot32(xp: Any, a: Any, b: Any) -> Any:
    """``hypot(a, b)`` of float32 arrays as a new C-contiguous array, or None where the pass
    does not apply (NumPy's call then).

    Example:
        >>> hypot32(np, np.full(2000, 3, np.float32), np.float32([4]))[:2]
        array([5., 5.], dtype=float32)
    """
    return float32_pass(xp, _KERNELS, "hypot_block", 1024, a, b)


def copysign32(xp: Any, a: Any, b: Any) -> Any:
    """``copysign(a, b)`` of float32 arrays as a new C-contiguous array, or None where the pass
    does not apply (NumPy's call then: its SIMD bit operation is cheaper than numba's dispatch
    below ~4K elements).

    Example:
        >>> copysign32(np, np.full(20000, 3, np.float32), np.float32([-0.0]))[:2]
        array([-3., -3.], dtype=float32)
    """
    return float32_pass(xp, _KERNELS, "copysign_block", 1 << 12, a, b)


def float32_pass(xp: Any, module: str, name: str, small: int, a: Any, b: Any,
                 *args: Any) -> Any:
    """Kernel ``name`` of ``module`` over blocks of ``a`` and ``b`` (or ``b``'s one element)
    into a new array, shared among the cores; None where it does not apply (``a`` of
    ``small`` elements or fewer among those cases).

    Example:
        >>> float32_pass(np, _KERNELS, "hypot_block", 1024, np.ones(8, np.float32),
        ...              np.ones(8, np.float32)) is None  # (8 elements: NumPy's call)
        True
    """
    if xp is not np or a.dtype != np.float32 or b.dtype != np.float32 or \
            a.size <= small or not a.flags.c_contiguous or not compiled.numba_enabled():
        return None
    if b.size == 1 and b.ndim <= a.ndim:
        flat_b = b.reshape(1)
    elif b.shape == a.shape and b.flags.c_contiguous:
        flat_b = b.reshape(-1)
    else:
        return None
    kernels = compiled.load(module)  # (None where they fail to load: numba is off then)
    if kernels is None:
        return None
    out = np.empty(a.shape, np.float32)
    flat_a, flat_out, n = a.reshape(-1), out.reshape(-1), a.size
    kernel, shares = getattr(kernels, name), parallel.share_count(n, _SHARE)
    if shares == 1:
        kernel(flat_a, flat_b, flat_out, *args)
        return out
    parallel.run([partial(kernel, flat_a[lo:hi], flat_b if flat_b.size == 1 else flat_b[lo:hi],
                          flat_out[lo:hi], *args) for lo, hi in parallel.blocks(n, shares)])
    return out
