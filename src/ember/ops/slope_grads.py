"""leaky_relu's and hardtanh's backward as primitives, ``leaky_relu_grad`` and
``hardtanh_grad``, of the upstream gradient ``v`` and the input ``x``: ``v`` where ``x > 0``
else ``v · negative_slope``; ``v`` where ``min_val < x < max_val`` else 0. Float32/float64
arrays of one shape and dense layout take numba's one pass
(:mod:`ember.ops.slope_grads_numba`), others the composite's compare, product and select;
the same values. Each is linear in ``v`` with ``x`` a mask, so its rules are itself.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.backend import compiled, parallel
from ember.ops.broadcast import broadcast_spec, sum_to
from ember.ops.primitive import Primitive, apply, primitive
from ember.ops.relu_kernel import flat_blocks
from ember.ops.select import Where

__all__: list[str] = []

_KERNELS = compiled.register("ember.ops.slope_grads_numba")
_SMALL = 1 << 14  # elements: NumPy's calls are as fast, without numba's dispatch (~7 µs)
_SHARE = 1 << 21  # elements a piece takes at least


def _looped(xp: Any, name: str, v: Any, x: Any, numbers: tuple) -> Any:
    if xp is not np or v.size <= _SMALL or v.dtype not in (np.float32, np.float64) or \
            x.dtype != v.dtype or not compiled.numba_enabled():
        return None
    out = np.empty_like(v)
    flat = flat_blocks(v, x, out)
    if flat is None:
        return None
    parallel.over_rows(getattr(compiled.load(_KERNELS), name), flat, _SHARE,
                       *(v.dtype.type(n) for n in numbers))
    return out


class _MaskedGrad(Primitive):
    """``v`` times a slope chosen by ``x``: linear in ``v``, no gradient for ``x``."""

    def reads(self, ctx, i):
        return i == 1

    def infer(self, v, x, **params):
        return broadcast_spec(v, x, op=self.name)

    def vjp(self, ctx, g):
        v, x = ctx.inputs
        return sum_to(apply(self, g, x, **ctx.params), v.shape), None

    def jvp(self, ctx, dv, dx):
        return apply(self, dv, ctx.inputs[1], **ctx.params)


@primitive
class LeakyReluGrad(_MaskedGrad):
    name = "leaky_relu_grad"

    def forward(self, xp, v, x, *, negative_slope):
        out = _looped(xp, self.name, v, x, (negative_slope, 0.0))
        return Where.forward(xp, x > 0, v, v * negative_slope) if out is None else out


@primitive
class HardtanhGrad(_MaskedGrad):
    name = "hardtanh_grad"

    def forward(self, xp, v, x, *, min_val, max_val):
        out = _looped(xp, self.name, v, x, (min_val, max_val))
        if out is not None:
            return out
        return Where.forward(xp, (x > min_val) & (x < max_val), v, xp.zeros((), v.dtype))
