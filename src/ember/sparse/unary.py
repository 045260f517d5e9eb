"""One-tensor ops that keep zero at zero, on sparse tensors, as PyTorch's: ``sqrt``, ``sin``,
``tanh``, ``floor``, ``sign``, ``isnan``, … of the specified elements, on the same pattern
(an unspecified element stays unspecified, as ``f(0) == 0``). As PyTorch's, a COO tensor is
coalesced first (an uncoalesced element is the sum of its entries), except for the linear
``neg``, ``positive`` and ``conj_physical``, which keep each entry. Dtypes and errors are
the dense op's on the values; gradients reach the values.

Both forms work: ``s.sqrt()`` and ``ember.sqrt(s)`` (the dense op hands a sparse operand to
:mod:`ember.sparse.elementwise`, which looks it up here by name).

Example:
    >>> ember.sparse_coo_tensor([[0, 2]], [4.0, 9.0], (3,)).sqrt().to_dense()
    tensor([2., 0., 3.])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.layouts import sparse_coo
from ember.sparse.convert import coalesce
from ember.sparse.ops import with_values
from ember.sparse.tensor import SparseTensor

__all__ = ["ENTRYWISE", "UNARY", "ZERO_PRESERVING", "same_pattern"]

#: coalesce a COO tensor first (``f(a + b) != f(a) + f(b)``)
ZERO_PRESERVING = (
    "sqrt", "sin", "tan", "tanh", "sinh", "asin", "asinh", "atan", "atanh", "expm1", "log1p",
    "sign", "sgn", "floor", "ceil", "round", "trunc", "frac", "erf", "erfinv", "relu",
    "square", "signbit", "isnan", "isinf", "isposinf", "isneginf", "nan_to_num", "deg2rad",
    "rad2deg")
#: linear: each entry on its own, an uncoalesced tensor stays so
ENTRYWISE = ("neg", "positive", "conj_physical")


def same_pattern(name: str, coalescing: bool = False) -> Callable[..., SparseTensor]:
    """The sparse op applying the values' method ``name`` on the same pattern (``coalescing``:
    a COO tensor coalesced first, for an op not additive over the entries of an element)."""
    def op(input: SparseTensor, *args: Any, **kwargs: Any) -> SparseTensor:
        s = coalesce(input) if coalescing and input.layout is sparse_coo else input
        return with_values(s, getattr(s._vals, name)(*args, **kwargs))
    op.__name__ = op.__qualname__ = name
    op.__doc__ = (f"``{name}`` of each specified element, on the same pattern"
                  f"{' (a COO tensor coalesced first)' if coalescing else ''}.")
    return op


#: name -> the sparse op (``ember.<name>(s)`` and ``s.<name>()``)
UNARY = {name: same_pattern(name, name in ZERO_PRESERVING) for name in ZERO_PRESERVING + ENTRYWISE}
UNARY["conj"] = UNARY["conj_physical"]  # (the dense conj_physical hands over as conj)


def _part(name: str) -> Callable[[SparseTensor], SparseTensor]:
    def op(input: SparseTensor) -> SparseTensor:  # (each entry: linear)
        return with_values(input, getattr(input._vals, name))
    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"The {name} part of each specified element (a real tensor's real: itself)."
    return op


UNARY["real"], UNARY["imag"] = _part("real"), _part("imag")
