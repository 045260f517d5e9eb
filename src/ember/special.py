"""``ember.special``: PyTorch's ``torch.special`` namespace over Ember's ops.

Most names are Ember's own ops under SciPy-style names (``expit`` is ``sigmoid``,
``gammaln`` is ``lgamma``, ``multigammaln`` is ``mvlgamma``, ``psi`` is ``digamma``,
``gammainc`` / ``gammaincc`` are ``igamma`` / ``igammac``; ``entr`` is its own primitive,
for PyTorch's derivative at and below 0, and so is ``ndtri``, whose derivative is a function
of its output); ``ndtr``, ``log_ndtr``, ``log1p``, ``expm1``, ``exp2``, ``round``,
``xlog1py`` and ``i1`` are compositions.

torch.special's own functions, computed in float64 on the host:

- Bessel functions ``bessel_j0``, ``bessel_j1``, ``bessel_y0``, ``bessel_y1``,
  ``modified_bessel_i0``, ``modified_bessel_i1``, ``modified_bessel_k0``,
  ``modified_bessel_k1``, ``scaled_modified_bessel_k0``, ``scaled_modified_bessel_k1``,
  ``spherical_bessel_j0`` and the Airy function ``airy_ai`` (none differentiable, as in
  PyTorch: their outputs never require grad); ``i0e`` and ``i1e`` (differentiable).
- ``erfcx`` (``exp(x²) erfc(x)``) and the Hurwitz ``zeta(x, q)`` (differentiable in ``q``
  only, as in PyTorch).
- The orthogonal polynomials ``chebyshev_polynomial_t/u/v/w``,
  ``shifted_chebyshev_polynomial_t/u/v/w``, ``hermite_polynomial_h/he``,
  ``laguerre_polynomial_l`` and ``legendre_polynomial_p``, each ``(input, n)`` with ``n`` a
  tensor or number, truncated to an integer (not differentiable, as in PyTorch).

None of these has a ``torch.*`` or ``Tensor`` alias in PyTorch, so none has one here.

Example:
    >>> ember.special.expit(ember.tensor([0.0]))
    tensor([0.5000])
"""

from __future__ import annotations

import math
from typing import Any

from ember.dtypes import DType
from ember.errors import ShapeError
from ember.ops.bessel import (
    airy_ai,
    bessel_j0,
    bessel_j1,
    bessel_y0,
    bessel_y1,
    i0e,
    i1e,
    modified_bessel_i0,
    modified_bessel_i1,
    modified_bessel_k0,
    modified_bessel_k1,
    scaled_modified_bessel_k0,
    scaled_modified_bessel_k1,
    spherical_bessel_j0,
)
from ember.ops.broadcast import broadcast_shape
from ember.ops.compare import eq, gt, isfinite, isnan, lt
from ember.ops.convert import to_float
from ember.ops.float_host import float_operands
from ember.ops.gamma import digamma, i0, i1, lgamma, mvlgamma, polygamma
from ember.ops.igamma import igamma, igammac
from ember.ops.logsumexp import logsumexp
from ember.ops.numpy_names import add_numpy_names
from ember.ops.orthogonal_polynomials import (
    chebyshev_polynomial_t,
    chebyshev_polynomial_u,
    chebyshev_polynomial_v,
    chebyshev_polynomial_w,
    hermite_polynomial_h,
    hermite_polynomial_he,
    laguerre_polynomial_l,
    legendre_polynomial_p,
    shifted_chebyshev_polynomial_t,
    shifted_chebyshev_polynomial_u,
    shifted_chebyshev_polynomial_v,
    shifted_chebyshev_polynomial_w,
)
from ember.ops.out_arg import add_out_arguments
from ember.ops.out_names import SPECIAL
from ember.ops.primitive import apply, refuse_complex
from ember.ops.rounding import round
from ember.ops.select import where
from ember.ops.softmax import log_softmax, softmax
from ember.ops.special import Ndtri, entr, erfc, erfcx, erfinv, logit, sinc, xlogy
from ember.ops.unary import erf, exp2, expm1, log, log1p, sigmoid
from ember.ops.zeta import zeta
from ember.tensor import Tensor

__all__ = ["erf", "erfc", "erfinv", "expit", "logit", "xlogy", "xlog1py", "i0", "i1",
           "gammaln", "gammainc", "gammaincc", "digamma", "psi", "polygamma", "multigammaln",
           "log_softmax", "softmax", "logsumexp", "sinc", "entr", "ndtr", "ndtri", "log_ndtr",
           "exp2", "expm1", "log1p", "round", "erfcx", "zeta", "i0e", "i1e", "bessel_j0",
           "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0", "modified_bessel_i1",
           "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
           "scaled_modified_bessel_k1", "spherical_bessel_j0", "airy_ai",
           "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
           "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
           "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
           "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
           "laguerre_polynomial_l", "legendre_polynomial_p"]

expit = sigmoid
gammaln = lgamma
gammainc = igamma
gammaincc = igammac
psi = digamma
multigammaln = mvlgamma
_SQRT2 = math.sqrt(2.0)


def xlog1py(input: Any, other: Any) -> Tensor:
    """``input * log1p(other)``, 0 where ``input`` is 0 (NaN ``other`` stays NaN); either may
    be a number.

    Example:
        >>> ember.special.xlog1py(ember.tensor([0.0, 2.0]), ember.tensor([-1.0, 0.0]))
        tensor([0., 0.])
    """
    x, y = float_operands("xlog1py", input, other)
    log1p_y = log1p(y)
    # a zero input hides only an infinite or NaN log1p(other <= -1): its x-gradient stays
    # log1p(other) elsewhere, as PyTorch's (but for other = +inf: 0 here, inf in PyTorch)
    try:
        hidden = eq(x, 0) & ~isnan(y) & ~isfinite(log1p_y)
    except ShapeError:  # (named xlog1py's, not the inner bitwise_and's; free when they fit)
        broadcast_shape((x.shape, y.shape), "xlog1py")
        raise
    return x * where(hidden, 0.0, log1p_y)


def _in_float64(op: str, input: Tensor) -> tuple[DType, Tensor]:
    """``input``'s float dtype and ``input`` in float64 (complex refused, as PyTorch)."""
    x = to_float(input)
    refuse_complex(op, x)
    return x.dtype, x.double()


def ndtr(input: Tensor) -> Tensor:
    """The standard normal cumulative distribution function, accurate in the far left tail
    (computed in float64: in float32, rounding ``x / sqrt(2)`` cost ``ndtr(-13)`` 50 ulps).

    Example:
        >>> ember.special.ndtr(ember.tensor([0.0, 1.0]))
        tensor([0.5000, 0.8413])
    """
    dtype, x = _in_float64("ndtr", input)
    return (erfc(-x / _SQRT2) / 2).to(dtype)


def log_ndtr(input: Tensor) -> Tensor:
    """``log(ndtr(x))`` (computed in float64), accurate where ``ndtr`` underflows (an
    asymptotic series below -20) and where it rounds to 1 (``log1p(-ndtr(-x))`` above 0).

    Example:
        >>> ember.special.log_ndtr(ember.tensor([0.0, -40.0], dtype=ember.float64))
        tensor([-6.9315e-01, -8.0461e+02], dtype=ember.float64)
    """
    dtype, x = _in_float64("log_ndtr", input)
    tail = lt(x, -20)
    xt = where(tail, x, -20.0)
    z = 1 / (xt * xt)
    series = 1 + z * (-1 + z * (3 + z * (-15 + z * (105 - 945 * z))))
    asym = -xt * xt / 2 - log(-xt) - 0.5 * math.log(2 * math.pi) + log(series)
    pos = gt(x, 0)
    xn = where(tail | pos, 0.0, x)
    xp = where(pos, x, 0.0)
    return where(tail, asym, where(pos, log1p(-ndtr(-xp)), log(ndtr(xn)))).to(dtype)


def ndtri(input: Tensor) -> Tensor:
    """The inverse of :func:`ndtr`: the standard normal quantile of ``p`` in ``[0, 1]``
    (``-inf`` at 0, ``inf`` at 1, NaN outside), computed in float64 by Wichura's rationals
    (AS 241, to 7e-16 relative down to ``p = 5e-324``). Its gradient is
    ``sqrt(2 pi) exp(x² / 2)``.

    Example:
        >>> ember.special.ndtri(ember.tensor([0.5, 0.975]))
        tensor([0.0000, 1.9600])
    """
    x = to_float(input)
    refuse_complex("ndtri", x)
    return apply(Ndtri, x)


add_out_arguments(globals(), SPECIAL)  # torch's out= keyword
add_numpy_names(globals())  # axis= and keepdims=
