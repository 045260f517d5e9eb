"""Logical ops: ``logical_and``/``or``/``xor``/``not``, the bitwise primitives applied to their
operands' truth values (nonzero is True), so the primitive set stays small.

Example:
    >>> ember.logical_or(ember.tensor([0, 3]), False)
    tensor([False,  True])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import dtypes
from ember.errors import refuse_non_tensor
from ember.ops.compare import BitwiseAnd, BitwiseNot, BitwiseOr, BitwiseXor
from ember.ops.convert import cast, promote
from ember.ops.forwarding import hands_over
from ember.ops.inplace import bind_inplace
from ember.ops.overrides import TENSOR_LIKE, TensorLikeOperand, calling_op
from ember.ops.primitive import apply, refuse_limited
from ember.tensor import Tensor, method

__all__ = ["logical_and", "logical_or", "logical_xor", "logical_not"]


def _truth(x: Any, name: str) -> Any:
    """``x``'s truth values: a bool tensor, or a number's bool; a tensor-like ``x`` (a nested
    tensor, also as the method form's ``other``: ``t.logical_and(nt)``) hands the call over
    (:func:`~ember.ops.forwarding.hands_over`)."""
    if isinstance(x, Tensor):
        return cast(x, dtypes.bool_)
    if type(x) in TENSOR_LIKE:  # (a nested tensor: its class computes the op)
        raise TensorLikeOperand(name)
    if not isinstance(x, (int, float, complex, np.generic)):  # (bool() of an array: ambiguous)
        refuse_non_tensor(calling_op(), name, x)
    return bool(x)


@method()
@hands_over
def logical_and(input: Tensor, other: Any) -> Tensor:
    """Elementwise ``input and other`` of truth values (nonzero is True), as a bool tensor.

    Example:
        >>> ember.logical_and(ember.tensor([0.0, 2.0]), ember.tensor([1, 1]))
        tensor([False,  True])
    """
    refuse_limited("logical_and", getattr(input, "dtype", None))  # (a number: none)
    return apply(BitwiseAnd, *promote(_truth(input, "input"), _truth(other, "other")))


@method()
@hands_over
def logical_or(input: Tensor, other: Any) -> Tensor:
    """Elementwise ``input or other`` of truth values, as a bool tensor."""
    refuse_limited("logical_or", getattr(input, "dtype", None))  # (a number: none)
    return apply(BitwiseOr, *promote(_truth(input, "input"), _truth(other, "other")))


@method()
@hands_over
def logical_xor(input: Tensor, other: Any) -> Tensor:
    """Elementwise exclusive or of truth values, as a bool tensor."""
    return apply(BitwiseXor, *promote(_truth(input, "input"), _truth(other, "other")))


@method()
def logical_not(input: Tensor) -> Tensor:
    """Elementwise ``not input`` (zero is False), as a bool tensor."""
    refuse_limited("logical_not", input.dtype)
    return apply(BitwiseNot, cast(input, dtypes.bool_))


bind_inplace(logical_and_=logical_and, logical_or_=logical_or, logical_xor_=logical_xor,
             logical_not_=logical_not)
