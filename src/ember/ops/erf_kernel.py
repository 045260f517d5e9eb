"""The error function on backend arrays: NumPy has none, so Ember evaluates its own fits.

``erf_array`` is the kernel behind the ``erf`` primitive (and exact ``gelu``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__: list[str] = []

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


def erf_array(xp: Any, a: Any) -> Any:
    """The error function of a backend float array, computed in float64, in ``a``'s dtype."""
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
