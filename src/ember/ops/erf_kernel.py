"""The error function on backend arrays: NumPy has none, so Ember evaluates its own fits.

``erf_array`` is the kernel behind the ``erf`` primitive (and exact ``gelu``). float32 arrays
take a rational fit evaluated in float32, block by block (:func:`blockwise`): each block's
dozen passes stay in cache, 15-20× faster than the float64 fits on a large array, and the
blocks are shared among the cores. With numba (:mod:`ember.backend.compiled`) each block is
one pass instead (:mod:`ember.ops.erf_numba`, about 3× faster again).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from ember.backend import compiled, parallel

__all__: list[str] = []

_KERNELS = compiled.register("ember.ops.erf_numba")

# erf(x) in float64 to a few ulps, from three Chebyshev fits made for Ember against a float64
# reference: erf(x) / x in u = 2x^2 - 1 on |x| < 1, and x exp(x^2) erfc(x) in u = 2x - 3 on
# [1, 2) and in u = 6/x - 2 on [2, 6); erf(x) is 1 in float64 beyond 6. NumPy has no erf.
_ERF_FITS = (
    (0.9754769393826539, -0.14226120510371373, 0.01003558218759974, -0.0005768764699767833,
     2.7419931252175975e-05, -1.1043175507711626e-06, 3.8488755425370397e-08,
     -1.180858261306337e-09, 3.233419825233041e-11, -7.9911047240054e-13,
     1.79941282039432e-14, -3.888696858025317e-16, -2.9577991207780493e-17),
    (0.47589038803249223, 0.040698216094977736, -0.006594115617041833,
     0.0008937067291132603, -0.00010758275571684928, 1.1847238617670226e-05,
     -1.2144505346577123e-06, 1.1722340109745781e-07, -1.0741333142616895e-08,
     9.400665144905195e-10, -7.895423973216586e-11, 6.387932215198222e-12,
     -4.994243355239261e-13, 3.7828387884648853e-14, -2.780818121112563e-15),
    (0.5353732068438818, -0.02315541213946936, -0.0016392210759605807,
     0.00022227996277607474, -8.78999954275569e-06, -8.810395716596254e-07,
     1.8418972156871555e-07, -1.4087247654284502e-08, -2.163390982597553e-10,
     2.1064317932441498e-10, -2.979315102576965e-11, 1.815351541732253e-12,
     1.4524930604084093e-13, -5.4765085180014106e-14),
)
# evaluated by Horner's rule in the power basis of u (as accurate here, and faster)
_ERF_POLYS = tuple(tuple(np.polynomial.chebyshev.cheb2poly(c)[::-1]) for c in _ERF_FITS)


def _horner(coefs: tuple, u: Any) -> Any:
    acc = coefs[0] * u + coefs[1]
    for c in coefs[2:]:
        acc = acc * u + c
    return acc


# erf(x) in float32 to 4e-7 absolute (3 ulps): x·P(x²)/Q(x²) on x clipped to [-4, 4] (erf(4)
# rounds to 1 in float32), the rational fit Eigen and XLA use for float32; its value is clipped
# to [-1, 1] (it exceeds 1 on 3.61…4: gelu(x) would be positive for some x < 0)
_ERF32_P = tuple(np.float32(c) for c in (
    -2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
    -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02))
_ERF32_Q = tuple(np.float32(c) for c in (
    -1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
    -7.37332916720468e-03, -1.42647390514189e-02))
_BLOCK = 131072  # elements: a block's float32 temporaries stay in cache (measured best)


def erf32_block(s: np.ndarray, out: np.ndarray) -> np.ndarray:
    """erf of a float32 NumPy block ``s`` into ``out`` (same shape, may be ``s`` itself)."""
    x = np.clip(s, -4.0, 4.0, out=out)
    x2 = x * x
    p = x2 * _ERF32_P[0]
    p += _ERF32_P[1]
    for c in _ERF32_P[2:]:
        p *= x2
        p += c
    p *= x
    q = x2 * _ERF32_Q[0]
    q += _ERF32_Q[1]
    for c in _ERF32_Q[2:]:
        q *= x2
        q += c
    np.divide(p, q, out=out)
    return np.clip(out, -1.0, 1.0, out=out)


def blockwise(xp: Any, kernel: Callable[[np.ndarray, np.ndarray], Any], a: Any) -> Any:
    """``kernel(block, out_block)`` over blocks of a NumPy array's memory, into a new array
    of its layout where that is dense (a channels-last array stays so, as NumPy's ufuncs
    keep it), else C-contiguous: elementwise chains of many passes stay in cache."""
    out = xp.empty_like(a)
    if out.strides == a.strides:
        flat, flat_out = a.ravel(order="K"), out.ravel(order="K")  # views, in memory order
    else:
        flat, out = xp.ascontiguousarray(a).reshape(-1), xp.empty(a.shape, a.dtype)
        flat_out = out.reshape(-1)
    parallel.run([partial(kernel, flat[i:i + _BLOCK], flat_out[i:i + _BLOCK])
                  for i in range(0, flat.size, _BLOCK)])  # the blocks spread over the cores
    return out


_SQRT1_2 = np.float32(1 / np.sqrt(2))
_INV_SQRT_2PI = np.float32(1 / np.sqrt(2 * np.pi))


def gelu32_block(a: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Exact gelu ``a·Φ(a)`` of a float32 block into ``out`` (as Φ(a)·a: (1 + erf)·a would
    overflow)."""
    erf32_block(a * _SQRT1_2, out)
    out += 1
    out *= 0.5
    out *= a
    return out


def gelu_slope32_block(a: np.ndarray, out: np.ndarray) -> np.ndarray:
    """gelu's derivative ``Φ(a) + a·φ(a)`` of a float32 block into ``out``."""
    erf32_block(a * _SQRT1_2, out)
    out += 1
    out *= 0.5
    with np.errstate(over="ignore"):  # a² overflows to inf past 1.8e19: φ is 0 there
        pdf = a * a
    pdf *= -0.5
    np.exp(pdf, out=pdf)
    pdf *= _INV_SQRT_2PI
    pdf *= a
    out += pdf
    return out


def fast_float32(xp: Any, a: Any) -> bool:
    """Whether the float32 block kernels apply: a float32 NumPy array."""
    return xp is np and a.dtype == np.float32


_NUMPY_KERNELS = {"erf": erf32_block, "gelu": gelu32_block, "gelu_slope": gelu_slope32_block}


def float32_kernel(xp: Any, name: str, a: Any) -> Any:
    """The float32 kernel ``name`` ("erf", "gelu", "gelu_slope") of a float32 NumPy array,
    block by block over the cores: numba's one-pass loop when it is enabled, else NumPy's."""
    if compiled.numba_enabled():
        kernels = _numba_kernels()
        if kernels is not None:
            return blockwise(xp, kernels[name], a)
    return blockwise(xp, _NUMPY_KERNELS[name], a)


_LOADED: dict[str, Any] = {}


def numba_elements() -> Any:
    """The module of numba's kernels (:mod:`ember.ops.erf_numba`) when eager float32 erf, gelu
    and gelu's slope run them, else None: its functions of one element are what
    :mod:`ember.jit.loops` may call in their place."""
    if not compiled.numba_enabled() or _numba_kernels() is None:
        return None
    return compiled.load(_KERNELS)


def _numba_kernels() -> dict | None:
    """numba's kernels, once checked against NumPy's: a kernel from numba's disk cache keeps
    the constants it was compiled with, so after an edit of the fits above it is compiled
    again; if it still disagrees, NumPy's kernels run."""
    if "kernels" not in _LOADED:  # (only a success is kept: use_numba(True) tries again)
        module = compiled.load(_KERNELS)
        if module is None:
            return None
        kernels = {name: compiled.ready(getattr(module, name + "32")) for name in _NUMPY_KERNELS}
        if not _agree(kernels):
            for kernel in kernels.values():
                kernel.recompile()
            if not _agree(kernels):
                compiled.turn_off("ember.ops.erf_numba disagrees with the NumPy kernels")
                return None
        _LOADED["kernels"] = kernels
    return _LOADED["kernels"]


def _agree(kernels: dict) -> bool:
    x = np.linspace(-6, 6, 1001, dtype=np.float32)
    for name, kernel in kernels.items():
        mine, twin = np.empty_like(x), np.empty_like(x)
        kernel(x, mine)
        _NUMPY_KERNELS[name](x, twin)
        if not np.allclose(mine, twin, rtol=1e-5, atol=1e-6):
            return False
    return True


def erf_array(xp: Any, a: Any) -> Any:
    """The error function of a backend float array, in ``a``'s dtype: float32 NumPy arrays by
    the float32 rational fit, others computed in float64."""
    if fast_float32(xp, a):
        return float32_kernel(xp, "erf", a)
    x = xp.abs(a.astype(np.float64))
    out = xp.where(xp.isnan(x), x, 1.0)
    small, middle, large = _ERF_POLYS
    pieces = [(x < 1, lambda s: s * _horner(small, 2 * s * s - 1)),
              ((x >= 1) & (x < 2), lambda s: 1 - xp.exp(-s * s) * _horner(middle, 2 * s - 3) / s),
              ((x >= 2) & (x < 6), lambda s: 1 - xp.exp(-s * s) * _horner(large, 6 / s - 2) / s)]
    for mask, piece in pieces:  # each piece only on its own elements
        if mask.any():
            out[mask] = piece(x[mask])
    return xp.copysign(out, a).astype(a.dtype, copy=False)
