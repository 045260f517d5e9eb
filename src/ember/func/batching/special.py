"""Batching rules of special elementwise functions (ember/ops/special.py, discrete.py, and
torch.special's Bessel functions, Hurwitz zeta and orthogonal polynomials).

Every primitive there is elementwise with broadcasting, so each takes the shared rule of
:mod:`ember.func.batching.elementwise` (align the operands' ranks, then broadcast).
"""

from __future__ import annotations

import ember.ops.bessel  # noqa: F401 - registers the primitives named below
import ember.ops.discrete  # noqa: F401
import ember.ops.orthogonal_polynomials  # noqa: F401
import ember.ops.special  # noqa: F401
import ember.ops.zeta  # noqa: F401
from ember.func.batching import rule
from ember.func.batching.elementwise import elementwise_rule

SPECIAL = ("atan2", "hypot", "xlogy", "copysign", "logaddexp", "logaddexp2", "nextafter",
           "ldexp", "heaviside", "gcd", "lcm", "logit", "sinc", "erfc", "erfinv",
           "erfcx", "zeta", "bessel_function", "i0e", "i1e", "orthogonal_polynomial",
           "special_entr", "special_ndtri")

for _name in SPECIAL:
    rule(_name)(elementwise_rule(_name))
