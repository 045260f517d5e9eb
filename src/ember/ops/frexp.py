"""``frexp``: a float split into a mantissa in ``[0.5, 1)`` (in magnitude) and an int32 power of
two, ``input = mantissa * 2 ** exponent``; 0, infinities and NaN keep their value with
exponent 0. The mantissa's gradient is ``grad / 2 ** exponent``, as PyTorch's.
"""

from __future__ import annotations

import numpy as np

from ember import dtypes, return_types
from ember.errors import DTypeError
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive
from ember.ops.unary import exp2
from ember.tensor import Tensor, method

__all__ = ["frexp"]


@primitive
class Frexp(Primitive):
    name = "frexp"
    nout = 2
    save_inputs = False
    save_outputs = (1,)  # the rules read the exponent

    def forward(self, xp, a):
        wide = a.astype(np.float32) if a.dtype == dtypes.bfloat16.np else a  # (exact)
        m, e = xp.frexp(wide)
        return m.astype(a.dtype, copy=False), e.astype(np.int32)

    def infer(self, a):
        return a, TensorSpec(a.shape, dtypes.int32)

    def _scale(self, ctx, t: Tensor) -> Tensor:
        return t / exp2(ctx.output(1).to(t.dtype))

    def vjp(self, ctx, g, g_exponent):
        return (None if g is None else self._scale(ctx, g),)

    def jvp(self, ctx, dx):
        return self._scale(ctx, dx), None


@method()
def frexp(input: Tensor) -> return_types.frexp:
    """``(mantissa, exponent)`` with ``input = mantissa * 2 ** exponent``, ``0.5 <= |mantissa|
    < 1`` and ``exponent`` int32.

    Example:
        >>> ember.frexp(ember.tensor([8.0, -0.75]))
        ember.return_types.frexp(
        mantissa=tensor([ 0.5000, -0.7500]),
        exponent=tensor([4, 0], dtype=ember.int32))
    """
    if not input.dtype.is_floating_point:
        raise DTypeError(f"frexp: only supports floating-point dtypes, got "
                         f"{input.dtype.name}. Hint: call .float() first")
    return return_types.frexp(*apply(Frexp, input))
