"""Complex ``a ** b`` as PyTorch's CPU kernels compute it: C's ``cpow``, which is
``exp(b * log(a))`` with C's complex product (its Annex G recovery of infinities). NumPy's
power is the same call except where it takes shortcuts of its own: a real integer exponent
below 100 by repeated products (an ulp or more off: ``z ** 4``), a zero exponent as 1
(PyTorch's ``0j ** 0j`` is NaN) and a zero base as 0 or NaN (PyTorch's ``0j ** -1.5`` is
``inf+nanj``). Tested bit for bit against PyTorch in ``tests/ops/test_complex_power.py``.
"""

from __future__ import annotations

from typing import Any

__all__: list[str] = []


def complex_power(xp: Any, a: Any, b: Any) -> Any:
    """``a ** b`` of two complex arrays of one dtype (broadcast), as PyTorch's pow.

    Example:
        >>> import numpy as np
        >>> complex_power(np, np.array([0j, 0j]), np.array([0j, -1.5 + 0j]))
        array([nan+nanj, inf+nanj])
    """
    if b.size == 1 and b.reshape(-1)[0].imag == 0:
        return _c_power(xp, a, b)
    r = xp.asarray(xp.power(a, b))
    a, b = xp.broadcast_arrays(a, b)
    own = (a == 0) if b.size == 1 else (b.imag == 0) | (a == 0)  # (NumPy's shortcuts, and
    if own.any():  # more: C's pow there too)
        r[own] = _c_power(xp, a[own], b[own])
    return r


def _c_power(xp: Any, a: Any, b: Any) -> Any:
    return xp.exp(c_multiply(xp, b, xp.log(a)))


def c_multiply(xp: Any, x: Any, y: Any) -> Any:
    """``x * y`` of complex arrays as C's complex product (Annex G): where both parts come out
    NaN from an infinite factor (or a product overflowing), the infinity is recovered.

    Example:
        >>> import numpy as np
        >>> c_multiply(np, np.array([complex(np.inf, np.nan)]), np.array([4 + 0j]))
        array([inf+nanj])
    """
    a, b, c, d = x.real, x.imag, y.real, y.imag
    ac, bd, ad, bc = a * c, b * d, a * d, b * c
    out = xp.empty(ac.shape, xp.result_type(x.dtype, y.dtype))
    out.real, out.imag = ac - bd, ad + bc
    lost = xp.isnan(out.real) & xp.isnan(out.imag)
    if lost.any():
        parts = (xp.broadcast_to(v, out.shape)[lost] for v in (a, b, c, d, ac, bd, ad, bc))
        out[lost] = _recovered(xp, *parts)
    return out


def _recovered(xp: Any, a: Any, b: Any, c: Any, d: Any, *products: Any) -> Any:
    """Annex G's recalculation of ``(a + bi)(c + di)`` where the plain one gave NaN + NaN i:
    an infinite factor becomes its unit direction (the other's NaN parts zeros), as do the NaN
    parts of finite factors whose products overflowed."""
    x_inf = xp.isinf(a) | xp.isinf(b)
    a, b = _unit(xp, a, x_inf), _unit(xp, b, x_inf)
    c, d = _nan_zero(xp, c, x_inf), _nan_zero(xp, d, x_inf)
    y_inf = xp.isinf(c) | xp.isinf(d)
    c, d = _unit(xp, c, y_inf), _unit(xp, d, y_inf)
    a, b = _nan_zero(xp, a, y_inf), _nan_zero(xp, b, y_inf)
    ac, bd, ad, bc = (xp.isinf(p) for p in products)
    overflowed = ~x_inf & ~y_inf & (ac | bd | ad | bc)
    a, b, c, d = (_nan_zero(xp, v, overflowed) for v in (a, b, c, d))
    recalc = x_inf | y_inf | overflowed
    out = xp.empty(a.shape, xp.result_type(a.dtype, xp.complex64))
    out.real = xp.where(recalc, xp.inf * (a * c - b * d), xp.nan)
    out.imag = xp.where(recalc, xp.inf * (a * d + b * c), xp.nan)
    return out


def _unit(xp: Any, v: Any, where: Any) -> Any:
    """``copysign(isinf(v) ? 1 : 0, v)`` where ``where``, else ``v``."""
    return xp.where(where, xp.copysign(xp.isinf(v).astype(v.dtype), v), v)


def _nan_zero(xp: Any, v: Any, where: Any) -> Any:
    """``copysign(0, v)`` where ``v`` is NaN and ``where``, else ``v``."""
    return xp.where(where & xp.isnan(v), xp.copysign(v.dtype.type(0), v), v)
