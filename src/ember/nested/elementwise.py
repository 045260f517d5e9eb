"""The rest of the elementwise Tensor methods PyTorch's jagged nested tensors take (``sinc``,
``hypot``, ``clamp_min``, ``logical_and``, ``divide``, the in-place forms, …): each calls the
values' method of its name, with nested operands of the same structure and dense ones read as
:func:`~ember.nested.functional.dense_operand` reads them. The ``ember.*`` functions of these
names hand their nested argument to these methods (``ember.sinc(nt)``), or, for the binary
ones, compute with it in any place (``ember.hypot(dense, nt)``, and a dense tensor's method
``dense.hypot(nt)``: see :func:`ember.ops.forwarding.hand_over_methods`).

Example:
    >>> nt = ember.nested.nested_tensor([ember.zeros(2, 3), ember.ones(1, 3)])
    >>> nt.clamp_min(0.5).hypot(nt).values()[:, 0]
    tensor([0.5000, 0.5000, 1.4142])
"""

from __future__ import annotations

import ember
import ember.special
from ember import return_types
from ember.nested.functional import (
    IMPLEMENTATIONS,
    broadcasting,
    pointwise,
    reflected,
    values_method,
)
from ember.nested.nested_tensor import NestedTensor
from ember.tensor import Tensor

__all__: list[str] = []

_UNARY = ("sinc", "erfc", "erfinv", "lgamma", "digamma", "i0", "logit", "deg2rad", "rad2deg",
          "fix", "positive", "__pos__", "signbit", "isneginf", "isposinf", "angle", "conj",
          "conj_physical", "isreal", "resolve_conj", "resolve_neg", "mvlgamma", "polygamma")
# one-tensor functions of ember.special (and ember.*) that are no Tensor methods
_SPECIAL = ("i0e", "i1", "i1e", "ndtri", "entr", "erfcx", "airy_ai", "bessel_j0", "bessel_j1",
            "bessel_y0", "bessel_y1", "modified_bessel_i0", "modified_bessel_i1",
            "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
            "scaled_modified_bessel_k1", "mvlgamma", "multigammaln")
_BINARY = ("divide", "multiply", "subtract", "true_divide", "greater", "greater_equal", "less",
           "less_equal", "not_equal", "hypot", "copysign", "logaddexp", "logaddexp2", "xlogy",
           "fmax", "fmin", "nextafter", "heaviside", "float_power", "logical_and", "logical_or",
           "logical_xor", "clamp_min", "clamp_max", "arctan2", "igamma", "igammac", "ldexp",
           "gcd", "lcm", "bitwise_left_shift", "bitwise_right_shift")
_CONVERTERS = ("byte", "char", "short", "cdouble", "cfloat")

for _name in (*_UNARY, *_BINARY, *(f"{n}_" for n in _UNARY + _BINARY), *_CONVERTERS):
    if hasattr(Tensor, _name) and _name not in vars(NestedTensor):
        setattr(NestedTensor, _name, values_method(_name))


def _functions(name: str) -> list:
    """The functions a call of ``ember.name`` (or ``ember.special.name``, ``Tensor.name``)
    may hand over: each public one and those it wraps (an ``out=`` form's op)."""
    found = []
    for fn in (getattr(ember, name, None), getattr(ember.special, name, None),
               vars(Tensor).get(name)):
        while fn is not None and fn not in found:
            found.append(fn)
            fn = getattr(fn, "__wrapped__", None)
    return found


# ``ember.special.i0e(nt)``, ``ember.mvlgamma(nt, p)``: of the values
for _name in _SPECIAL:
    _fns = _functions(_name)
    for _fn in _fns:
        IMPLEMENTATIONS.setdefault(_fn, pointwise(_fns[0]))


def _polygamma(n: int, input: NestedTensor) -> NestedTensor:
    """``ember.polygamma(n, nt)``: of the values."""
    return input._with(ember.polygamma(n, input._values))


for _fn in _functions("polygamma"):
    IMPLEMENTATIONS.setdefault(_fn, _polygamma)

def _frexp(input: NestedTensor) -> return_types.frexp:
    """``ember.frexp(nt)``: the mantissa and exponent of each element, two nested tensors."""
    mantissa, exponent = ember.frexp(input._values)
    return return_types.frexp((input._with(mantissa), input._with(exponent)))


for _fn in _functions("frexp"):
    IMPLEMENTATIONS.setdefault(_fn, _frexp)
NestedTensor.frexp = _frexp

# with the nested tensor anywhere (``ember.hypot(dense, nt)``): every operand broadcast
for _name in _BINARY:
    _fns = _functions(_name)
    for _fn in _fns:  # (one already registered, as atan2, keeps its own)
        IMPLEMENTATIONS.setdefault(_fn, broadcasting(_fns[0]))

# the shift operators: ``nt << d``, ``d << nt`` (the dense tensor's hands over), ``1 << nt``,
# ``nt <<= d`` (in the values)
for _name, _symbol in (("bitwise_left_shift", "lshift"), ("bitwise_right_shift", "rshift")):
    setattr(NestedTensor, f"__{_symbol}__", getattr(NestedTensor, _name))
    setattr(NestedTensor, f"__i{_symbol}__", getattr(NestedTensor, f"{_name}_"))
    setattr(NestedTensor, f"__r{_symbol}__", reflected(IMPLEMENTATIONS[vars(Tensor)[_name]]))
