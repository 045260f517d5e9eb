"""Elementwise arithmetic on backend arrays rounded step by step where PyTorch's CPU kernels
take steps of their own (NumPy's one call rounds once, or differently): ``x ** 0.5, -0.5,
3, -2`` through sqrt, 1/sqrt and products (complex ``z ** -2`` too; the products of its loops'
scalar steps are fused), and float16/bfloat16 floor division in the half dtype. Bit for bit
PyTorch's, tested against it in ``tests/ops/test_torch_steps.py``.
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import numpy as np

from ember import dtypes
from ember.backend import compiled
from ember.layouts import in_operands_layout
from ember.ops.complex_power import complex_power
from ember.ops.complex_reciprocal import complex_reciprocal
from ember.ops.convert import _float16_looped
from ember.ops.modulus_kernel import modulus32
from ember.ops.relu_kernel import rsqrt_array

__all__: list[str] = []

POW_SHORTCUTS = frozenset((0.5, -0.5, 3, -2))  # (a set: 2.5 misses it in ~20 ns)
_BFLOAT16 = dtypes.bfloat16.np
POW_SHORTCUT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64), _BFLOAT16)
HALF_ARRAYS = (np.dtype(np.float16), _BFLOAT16)


def pow_shortcut(xp: Any, a: Any, exponent: float) -> Any:
    """``a ** exponent`` for an exponent of ``POW_SHORTCUTS`` as PyTorch's float32, float64
    and bfloat16 kernels compute it (float16's use pow): sqrt and 1/sqrt (so (-0) ** -0.5 is
    -inf and (-inf) ** 0.5 NaN; bfloat16's rounded once, but in its loop's scalar steps 1 / sqrt
    rounds the root first: :func:`scalar_steps`), ``x * x * x`` and ``1 / (x * x)``
    (each step rounded: power's one rounding was an ulp off at times).

    Example:
        >>> pow_shortcut(np, np.array([-0.0, 4.0]), -0.5)
        array([-inf,  0.5])
    """
    if exponent in (3, -2):
        square = a * a
        return square * a if exponent == 3 else 1 / square
    wide = a.astype(np.float32) if a.dtype == _BFLOAT16 else a
    root = xp.sqrt(wide) if exponent == 0.5 else rsqrt_array(xp, wide)
    root = root.astype(a.dtype, copy=False)
    if exponent == -0.5 and a.dtype == _BFLOAT16:  # (its scalar 1 / sqrt rounds the root)
        root = xp.asarray(root)  # (a 0-d array's root is a scalar)
        _in_scalar_steps(a, root, lambda x: (1 / _bfloat16_sqrt(xp, x)).astype(_BFLOAT16))
    return root


COMPLEX_SHORTCUTS = frozenset((0.5, -0.5, -1, -2))


def complex_pow_shortcut(xp: Any, z: Any, exponent: float) -> Any:
    """``z ** exponent`` of a complex array for an exponent of ``COMPLEX_SHORTCUTS`` as
    PyTorch computes it: sqrt, 1 / sqrt, 1 / z and 1 / (z * z), its reciprocal
    (:func:`ember.ops.complex_reciprocal.complex_reciprocal`) of its product ``(a² - b²,
    ab + ab)``, each product rounded (NumPy's power: exp(b log z), sqrt(-1) ≈ 6e-17+1j; its
    z * z rounds otherwise: ~8% of complex64 ** -2 an ulp off; (1e300+1j) ** -2 NaN
    where PyTorch's is 0).

    Example:
        >>> complex_pow_shortcut(np, np.array([1e300 + 1j, 2j]), -2)
        array([ 0.  +0.j, -0.25-0.j])
    """
    if exponent == 0.5:
        return xp.sqrt(z)
    if exponent == -2:  # (its scalar product fuses one: NumPy's square)
        a, b = z.real, z.imag
        ab, base = a * b, xp.empty_like(z)
        base.real, base.imag = a * a - b * b, ab + ab
        _in_scalar_steps(z, base, xp.square)
    else:
        base = xp.sqrt(z) if exponent == -0.5 else z
    return complex_reciprocal(xp, base)


_VECTOR_BYTES = 128  # a vectorized step of PyTorch's elementwise loops (two AVX-512 vectors)
_GRAIN = 32768  # elements from which PyTorch splits a loop among its threads (each its tail)


def _bfloat16_sqrt(xp: Any, x: Any) -> Any:
    return xp.sqrt(x.astype(np.float32)).astype(_BFLOAT16).astype(np.float32)


def _in_scalar_steps(a: Any, out: Any, step: Any) -> None:
    """Writes ``step(a)`` into ``out`` (``a``'s shape, and layout where ``a`` is C-contiguous)
    where PyTorch's loop runs its scalar code (:func:`scalar_steps`), whose rounding differs
    from its vector steps'; below ``_GRAIN`` elements only."""
    if a.size >= _GRAIN:
        return
    vector = _VECTOR_BYTES // a.itemsize
    if a.flags.c_contiguous:  # (the last elements of a vector step's multiple)
        where, a, out = slice(a.size - a.size % vector, None), a.reshape(-1), out.reshape(-1)
    else:  # (PyTorch's result: a's layout if dense, else dense in a's order)
        where = scalar_steps(in_operands_layout(np, np.empty(a.shape, a.dtype), a), a,
                             vector=vector)
    out[where] = step(a[where])


def scalar_steps(out: Any, *inputs: Any, vector: int) -> Any:
    """Where PyTorch's CPU elementwise loop computing ``out`` from ``inputs`` (broadcast to
    its shape) runs its scalar code: a mask, or True for everywhere. Its innermost run is
    ``out``'s dimension of least stride, coalesced outward with those that continue it in
    every array; the run takes vector steps of ``vector`` elements where ``out`` and the
    inputs are contiguous along it (one input may be broadcast along it), its rest one
    element at a time; a run not so is all scalar.

    Example:
        >>> x = np.zeros((2, 40), np.float16)
        >>> scalar_steps(x, x, x, vector=32).nonzero()[1].tolist()  # (one run of 80)
        [24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39]
        >>> scalar_steps(x, x, np.zeros((40, 2), np.float16).T, vector=32)  # (strided)
        True
    """
    arrays = (out, *inputs)
    dims = sorted((d for d in range(out.ndim) if out.shape[d] > 1),
                  key=lambda d: -out.strides[d])
    if not dims:
        return True
    inner = [x.strides[dims[-1]] / x.itemsize for x in arrays]
    if inner[0] != 1 or not set(inner) <= {0, 1} or inner.count(0) > 1:
        return True
    index, run, last = np.zeros(out.shape, np.int64), 1, None
    for d in reversed(dims):
        if last is not None and any(x.strides[d] != x.strides[last] * out.shape[last]
                                    for x in arrays):
            break
        index = index + np.arange(out.shape[d]).reshape(
            [-1 if k == d else 1 for k in range(out.ndim)]) * run
        run, last = run * out.shape[d], d
    return index >= run - run % vector


# quotients below which NumPy's once-rounded float32 floor division is the half dtype's
# step by step: a - fmod(a, b) and its quotient by b, each rounded (relative error 2**-11 or
# 2**-8), stay within a quarter of the integer, which the floor and half fix restore
_ONCE_BELOW = {np.dtype(np.float16): 256, _BFLOAT16: 32}
_STEPPED_FROM = 1024  # elements from which every one takes the steps (NumPy's half loops
# cost ~25 ns (float16) and ~50 ns (bfloat16) an element, the steps ~15 after ~25 us)


def half_floor_divide(xp: Any, a: Any, b: Any) -> Any:
    """``a // b`` of two float16 (or two bfloat16) arrays as PyTorch's kernel for two half
    tensors: the exact quotient ``(a - fmod(a, b)) / b``, one less where the remainder's sign
    is not the divisor's, floored, one more past a half, each step rounded in the half dtype
    (NumPy's float32 loop rounds once: 1 result in 16 was 1 or 2 apart past 2048). Below
    ``_STEPPED_FROM`` elements NumPy's result stands where it is small (``_ONCE_BELOW``).

    Example:
        >>> a, b = np.float16([-3968.0, 7.0]), np.float16([1.1318359375, -2.0])
        >>> half_floor_divide(np, a, b).tolist()  # (NumPy's a // b: -3506, -4)
        [-3508.0, -4.0]
    """
    shape = xp.broadcast_shapes(a.shape, b.shape)
    if math.prod(shape) >= _STEPPED_FROM:
        return _stepped_floor_divide(xp, a, b, shape)
    r = xp.floor_divide(a, b)
    stepped = ~(xp.abs(r) < _ONCE_BELOW[a.dtype])  # (NaN and inf too)
    if not stepped.any():
        return r
    if r.ndim == 0:
        return _stepped_floor_divide(xp, a, b, shape)
    a, b = (v[stepped] if v.shape == shape else xp.broadcast_to(v, shape)[stepped]
            for v in (a, b))
    r[stepped] = _stepped_floor_divide(xp, a, b, a.shape)
    return r


def _stepped_floor_divide(xp: Any, a: Any, b: Any, shape: tuple) -> Any:
    """:func:`half_floor_divide`'s steps in float32, rounded to the half dtype after each (a
    half operation's value: float32's 24 bits hold a half's twice over and two more, so the
    two roundings give the half's one), for ``a`` and ``b`` broadcast to ``shape``."""
    half, wide = a.dtype, np.dtype(np.float32)
    # float16 by numba's loop and a table of its values: NumPy's casts take ~5-10 ns an
    # element at a zero, a subnormal or past the range (100,000 random quotients 0.9 ms)
    looped = xp is np and half == np.float16 and math.prod(shape) >= _STEPPED_FROM and \
        compiled.numba_enabled()

    def widened(x: Any) -> Any:
        return _float16_values().take(x.view(np.uint16)) if looped else x.astype(wide)

    def rounded(x: Any) -> Any:
        narrow = _float16_looped(x) if looped else None
        return widened(x.astype(half) if narrow is None else narrow)

    a, b = (widened(v if v.shape == shape else xp.broadcast_to(v, shape)) for v in (a, b))
    mod = modulus32(xp, a, b, python=False)  # (numba's exact pass; glibc's fmodf ~13 ns)
    mod = xp.fmod(a, b) if mod is None else mod
    div = rounded(rounded(a - mod) / b)
    div = rounded(div - ((mod != 0) & ((b < 0) != (mod < 0))))  # (arithmetic: NumPy's
    floor = xp.floor(div)  # where takes ~4 ns an element on a random mask, these ~0.1)
    floor = rounded(floor + (div - floor > 0.5))
    quotient = a / b  # (its sign for a zero; the IEEE value for a zero divisor)
    xp.copysign(floor, quotient, out=floor)  # (a nonzero floor has the quotient's sign)
    xp.copyto(floor, quotient, where=b == 0)
    narrow = _float16_looped(floor) if looped else None
    return floor.astype(half) if narrow is None else narrow


@cache
def _float16_values() -> np.ndarray:
    """Every float16 bit pattern's value as a float32 (256 KiB), to look up."""
    return np.arange(1 << 16, dtype=np.uint16).view(np.float16).astype(np.float32)


def tensor_power(xp: Any, a: Any, b: Any) -> Any:
    """``a ** b`` of two float (or complex) arrays as PyTorch's pow: C's, which NumPy's
    power is but at an exponent of one element 0.5, where it takes sqrt (-0 and NaN at -0
    and -inf, where C's pow gives +0 and +inf), and at complex shortcuts of its own
    (:func:`ember.ops.complex_power.complex_power`).

    Example:
        >>> tensor_power(np, np.array([-0.0, -np.inf, 4.0]), np.array(0.5))
        array([ 0., inf,  2.])
    """
    if b.size == 1 and a.dtype.kind == "f" and b.reshape(-1)[0] == 0.5:
        r = xp.empty((1,) * (b.ndim - a.ndim) + a.shape, a.dtype)  # (b: one element)
        xp.sqrt(a + 0.0, out=r)  # (+0 at -0; NumPy's call is ~10x slower than sqrt)
        xp.copyto(r, xp.inf, where=a == -xp.inf)
        return r
    if a.dtype.kind == "c":
        return complex_power(xp, a, b)
    return xp.power(a, b)


def integer_pow(xp: Any, a: Any, b: Any) -> Any:
    """Integer powers with negative exponents, as PyTorch computes them: 1 and -1 keep their
    magnitude, every other base gives 0 (NumPy refuses).

    Example:
        >>> integer_pow(np, np.array([1, -1, 2]), np.array([-3, -3, -1]))
        array([ 1, -1,  0])
    """
    positive = xp.power(a, xp.where(b < 0, 0, b))
    unit = xp.where(a == 1, 1, xp.where(a == -1, 1 - 2 * (b & 1), 0))
    return xp.where(b < 0, unit, positive).astype(a.dtype, copy=False)
