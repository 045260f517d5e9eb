"""Affine maps of features: ``linear`` (``x Aᵀ + b``) and ``bilinear`` (``x₁ᵀ A x₂ + b``),
composites of ``matmul`` and ``einsum``."""

from __future__ import annotations

from typing import Any

from ember.autograd.function import Function
from ember.dtypes import DType
from ember.errors import DTypeError, ShapeError
from ember.ops.convert import cast
from ember.ops.forwarding import check_layer_operands
from ember.ops.half_gemm import half_product, wide_matmul
from ember.ops.linalg import einsum, matmul
from ember.ops.overrides import TENSOR_LIKE, handle
from ember.ops.primitive import DISPATCH
from ember.tensor import Tensor

__all__: list[str] = []


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias`` over the last dimension, as ``torch.nn.functional.linear``.

    ``weight`` is (out_features, in_features) (or (in_features,) for a single output).

    Example:
        >>> F.linear(ember.ones(4, 3), ember.ones(2, 3), ember.zeros(2)).shape
        ember.Size([4, 2])
    """
    if type(input) in TENSOR_LIKE or type(weight) in TENSOR_LIKE:  # (a sparse weight too)
        return handle(linear, (input, weight, bias), {})
    check_layer_operands("linear", input, weight, bias)
    if weight.ndim not in (1, 2):
        raise ShapeError(f"linear: weight must be 1-D or 2-D, got shape {tuple(weight.shape)}")
    if input.ndim == 0 or input._data.shape[-1] != weight._data.shape[-1]:
        raise ShapeError(f"linear: input of shape {tuple(input.shape)} has "
                         f"{input.shape[-1] if input.ndim else 0} features but weight of shape "
                         f"{tuple(weight.shape)} expects {weight.shape[-1]}")
    if input.dtype is not weight.dtype and not DISPATCH.casting:
        raise DTypeError(f"linear: input is {input.dtype.name} but weight is "
                         f"{weight.dtype.name}; they must match")
    if bias is not None and bias.dtype is not input.dtype and not DISPATCH.casting:
        raise DTypeError(f"linear: input is {input.dtype.name} but bias is "
                         f"{bias.dtype.name}; they must match, as in PyTorch")
    low = _rounded_once(input, weight, bias)
    product = wide_matmul if low is not None else matmul
    if input.ndim > 2 and weight.ndim == 2:
        # (…, in) as one (rows, in) matrix: one GEMM, and the weight gradient one GEMM too,
        # not a batch of them summed over the leading dims
        lead = tuple(input.shape[:-1])
        rows = 1
        for s in lead:
            rows *= s
        out = product(input.reshape((rows, input.shape[-1])), weight.t()).reshape(
            lead + (weight.shape[0],))
    else:
        out = product(input, weight.t())
    if bias is None:
        return out
    if tuple(bias.shape) != tuple(out.shape[-1:]):
        _check_bias(tuple(bias.shape), tuple(out.shape))
    if low is not None and out.dtype is not low:  # the float32 product: one rounding
        return cast(out + cast(cast(bias, low), out.dtype), low)
    if DISPATCH.casting and bias.dtype is not out.dtype:  # autocast: one low-precision GEMM
        bias = bias.to(out.dtype)
    return out + bias


class _AutocastBilinear(Function):
    """``bilinear`` under autocast, as PyTorch's: the value is x₁·A, then ·x₂, each a lowered
    GEMM rounded to the autocast dtype, back in the inputs' dtype; the derivatives are the
    exact product's (PyTorch's backward formula runs outside autocast, on the inputs)."""

    @staticmethod
    def forward(ctx: Any, input1: Tensor, input2: Tensor, weight: Tensor) -> Tensor:
        ctx.save_for_backward(input1, input2, weight)
        ctx.save_for_forward(input1, input2, weight)
        return _lowered_bilinear(input1, weight, input2)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple:
        x1, x2, w = ctx.saved_tensors
        need = ctx.needs_input_grad
        return (einsum("...o,oij,...j->...i", grad, w, x2) if need[0] else None,
                einsum("...o,oij,...i->...j", grad, w, x1) if need[1] else None,
                einsum("...o,...i,...j->oij", grad, x1, x2) if need[2] else None)

    @staticmethod
    def jvp(ctx: Any, d1: Tensor | None, d2: Tensor | None, dw: Tensor | None) -> Tensor:
        x1, x2, w = ctx.saved_tensors
        # each term in the forward's order and dtype, as PyTorch's forward derivative
        terms = [_lowered_bilinear(*t) for t in ((d1, w, x2), (x1, dw, x2), (x1, w, d2))
                 if None not in t]
        return sum(terms[1:], terms[0])


def _lowered_bilinear(input1: Tensor, weight: Tensor, input2: Tensor) -> Tensor:
    """``(x₁·A)·x₂`` as two GEMMs (each lowered under autocast), back in ``input1``'s dtype."""
    half = einsum("...i,oij->...oj", input1, weight)
    return cast(einsum("...oj,...j->...o", half, input2), input1.dtype)


def _rounded_once(input: Tensor, weight: Tensor, bias: Tensor | None) -> DType | None:
    """The half dtype linear's float32 product takes the bias in before it is rounded, once
    (:func:`~ember.ops.half_gemm.half_product`), where PyTorch's CPU linear is one addmm: for
    a matrix input, or a contiguous one with a 1-D bias (else it rounds the product, then
    adds); None otherwise."""
    if bias is None or weight.ndim != 2 or \
            not (input.ndim == 2 or (bias.ndim == 1 and input.is_contiguous())):
        return None
    return half_product(input)


def _check_bias(bias: tuple, out: tuple) -> None:
    """Refuses a bias that would broadcast the result to another shape, as PyTorch does."""
    if len(bias) > len(out) or any(b not in (1, o) for b, o in zip(bias[::-1], out[::-1])):
        raise ShapeError(f"linear: bias of shape {bias} does not broadcast to the output's "
                         f"shape {out}. Hint: a bias has weight.shape[0] elements")


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor,
             bias: Tensor | None = None) -> Tensor:
    """``y_o = x₁ᵀ A_o x₂ + b_o`` with ``weight`` (out, in1, in2), over the last dimension.

    Example:
        >>> F.bilinear(ember.ones(4, 2), ember.ones(4, 3), ember.ones(5, 2, 3)).shape
        ember.Size([4, 5])
    """
    if weight.ndim != 3 or input1.shape[-1] != weight.shape[1] or \
            input2.shape[-1] != weight.shape[2] or input1.shape[:-1] != input2.shape[:-1]:
        raise ShapeError(f"bilinear: inputs of shapes {tuple(input1.shape)} and "
                         f"{tuple(input2.shape)} do not fit weight of shape "
                         f"{tuple(weight.shape)} (out, in1, in2)")
    given = {"input1": input1, "input2": input2, "weight": weight, "bias": bias}
    if len({t.dtype for t in given.values() if t is not None}) > 1:
        shown = ", ".join(f"{k}: {t.dtype.name}" for k, t in given.items() if t is not None)
        raise DTypeError(f"bilinear: all tensors must have the same dtype, got {shown}. "
                         "Hint: convert them with .to(input1.dtype)")
    if DISPATCH.casting:
        out = _AutocastBilinear.apply(input1, input2, weight)
    else:
        out = einsum("...i,oij,...j->...o", input1, weight, input2)
    return out if bias is None else out + bias
