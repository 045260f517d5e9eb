"""Arithmetic's fused forms: ``addcmul`` (``input + value * t1 * t2``), ``addcdiv`` and
``lerp``, in PyTorch's result dtype of all their operands."""

from __future__ import annotations

import numbers
from typing import Any

from ember import dtypes
from ember.errors import DTypeError
from ember.ops.addc_half import AddcHalf
from ember.ops.arithmetic import Add, Div, Mul, _scaled
from ember.ops.convert import (
    HALF,
    laid_out_as_operands,
    laid_out_like,
    promote,
    result_dtype,
)
from ember.ops.fits import _dtype_name, check_factor, check_number_int
from ember.ops.inplace import bind_inplace
from ember.ops.lerp_kernel import Lerp
from ember.ops.primitive import Primitive, apply
from ember.tensor import Tensor, method

__all__ = ["addcmul", "addcdiv", "lerp"]


@method()
def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: float = 1) -> Tensor:
    """``input + value * tensor1 * tensor2``, with broadcasting.

    Example:
        >>> ember.addcmul(ember.zeros(2), ember.ones(2), ember.full((2,), 3.0), value=0.5)
        tensor([1.5000, 1.5000])
    """
    return _add_product("addcmul", Mul, input, tensor1, tensor2, value)


@method()
def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: float = 1) -> Tensor:
    """``input + value * tensor1 / tensor2``, with broadcasting."""
    if result_dtype(tensor1, tensor2).category < dtypes.FLOAT:
        raise DTypeError(f"addcdiv: integer division of tensor1 ({_dtype_name(tensor1)}) by "
                         f"tensor2 ({_dtype_name(tensor2)}) is not supported, as in PyTorch. "
                         f"Hint: convert one of them to a float dtype, or use "
                         f"input + value * ember.div(tensor1, tensor2, rounding_mode='trunc')")
    return _add_product("addcdiv", Div, input, tensor1, tensor2, value)


def _add_product(op: str, prim: Primitive, input: Any, tensor1: Any, tensor2: Any,
                 value: Any) -> Tensor:
    """``input + value * prim(tensor1, tensor2)`` in PyTorch's result dtype of all three
    (``uint8 + int8_0d * bool`` stays uint8; ``int8 * int8`` does not overflow on its way to an
    int16 sum), in PyTorch's order, ``(value * tensor1) op tensor2``; float16/bfloat16 in one
    primitive, :class:`~ember.ops.addc_half.AddcHalf` (PyTorch's float32 rounding and its
    half gradient formulas)."""
    a, b, c = promote(input, tensor1, tensor2)
    if a.dtype in HALF:
        check_factor(op, "value", value, a.dtype, (input, tensor1, tensor2))
        operands = tuple(t if isinstance(t, Tensor) else p  # (PyTorch's gradient formulas
                         for t, p in zip((input, tensor1, tensor2), (a, b, c)))  # take these)
        return apply(AddcHalf, *operands, value=value, divide=prim is Div, dtype=a.dtype)
    if value != 1:
        b = _scaled(op, "value", b, value, input, tensor1, tensor2)
    product = apply(prim, b, c)
    if not a._data.flags.c_contiguous:  # (``input``'s layout, as PyTorch's, when dense)
        product = laid_out_like(product, a)
    return apply(Add, a, product)


@method()
def lerp(input: Tensor, end: Tensor, weight: Any) -> Tensor:
    """Linear interpolation ``input + weight * (end - input)``; ``weight`` is a number or a
    tensor. As in PyTorch, a weight of magnitude 0.5 or more computes
    ``end + (weight - 1) * (end - input)`` instead, so weight 1 gives ``end`` exactly (and
    infinities give what PyTorch gives). float32, float16 and bfloat16 round once, as
    PyTorch's fused kernel (:mod:`ember.ops.lerp_kernel`): its values bit for bit; real
    dtypes take PyTorch's gradient rules (±inf where they are).

    Example:
        >>> ember.lerp(ember.zeros(2), ember.ones(2), 0.25)
        tensor([0.2500, 0.2500])
    """
    if isinstance(weight, Tensor) and not weight.ndim and weight.dtype is not input.dtype \
            and isinstance(end, Tensor) and end.dtype is input.dtype:
        # (a 0-d weight joins the result dtype, as in PyTorch: float32 ends weighed by a uint8
        # 118 take 118.0, not 1 - 118 wrapped in uint8; int8 ends and a float weight are float)
        dtype = result_dtype(input, end, weight)
        input, end, weight = input.to(dtype), end.to(dtype), weight.to(dtype)
    if input.dtype.category < dtypes.FLOAT or result_dtype(end).category < dtypes.FLOAT:
        raise DTypeError(f"lerp: needs floating tensors, got {_dtype_name(input)} and "
                         f"{_dtype_name(end)}, as in PyTorch. Hint: convert with .float() first")
    check_number_int("lerp", weight)
    fused = _fused(input, end, weight)
    if fused is not None:
        return fused
    diff = end - input
    if isinstance(weight, Tensor):
        from ember.ops.select import where

        out = where(abs(weight) < 0.5, input + weight * diff, end - diff * (1 - weight))
    else:
        out = input + weight * diff if abs(weight) < 0.5 else end - diff * (1 - weight)
    # (laid out as PyTorch's one kernel of input, end and weight: the first operand that
    # tells two dimensions apart decides; the steps above may have taken another order)
    if input._data.flags.c_contiguous and out._data.flags.c_contiguous and \
            input.shape == out.shape:
        return out
    return laid_out_as_operands(out, input, end, weight)


_FUSED = frozenset((dtypes.float32, dtypes.float16, dtypes.bfloat16, dtypes.float64))


def _fused(input: Tensor, end: Any, weight: Any) -> Tensor | None:
    """lerp as one primitive (:mod:`ember.ops.lerp_kernel`: PyTorch's values and gradients)
    where the tensors share a real float dtype (a 0-d weight tensor may have another float
    dtype) and a number weight is real;
    None elsewhere (complex: the composite)."""
    if input.dtype not in _FUSED or not isinstance(end, Tensor) or end.dtype is not input.dtype:
        return None
    if isinstance(weight, Tensor):  # (a 0-d one is in the inputs' dtype: see lerp)
        return apply(Lerp, input, end, weight) if weight.dtype is input.dtype else None
    if type(weight) is float or isinstance(weight, numbers.Real) and not isinstance(weight, bool):
        return apply(Lerp, input, end, weight=float(weight))
    return None


bind_inplace(addcmul_=addcmul, addcdiv_=addcdiv, lerp_=lerp)
