"""Products plus a scaled input: ``beta * input + alpha * product`` for ``addmm``,
``baddbmm``, ``addbmm``, ``addmv`` and ``addr`` (and their in-place forms), composites of
:mod:`ember.ops.linalg`'s products."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import dtypes
from ember.errors import ArgumentError, DTypeError, ShapeError, dtype_name
from ember.ops.broadcast import broadcast_shapes
from ember.ops.convert import cast, promote
from ember.ops.creation import zeros_like
from ember.ops.half_gemm import half_product, wide_matmul
from ember.ops.inplace import bind_inplace
from ember.ops.linalg import _expect_ndim, bmm, bmm_operands, mm, mm_operands, mv, outer
from ember.ops.overrides import TENSOR_LIKE
from ember.ops.primitive import DISPATCH
from ember.ops.select import zero_grad_from
from ember.ops.shape import reshape, transpose
from ember.tensor import Tensor, method

__all__ = ["addmm", "baddbmm", "addbmm", "addmv", "addr"]


def _integral_scale(op: str, name: str, value: Any, product: Tensor) -> Any:
    """``beta`` or ``alpha`` for an integer ``product``: a whole number (as an int, so the
    result stays integer); a fraction is refused (PyTorch's addmm truncates it silently)."""
    if product.dtype.is_floating_point or product.dtype.is_complex or \
            not isinstance(value, (float, np.floating)):
        return value
    if value != int(value):
        raise ArgumentError(f"{op}: for integer tensors ({product.dtype!r}) {name} must be a whole "
                            f"number, got {name}={value}. Hint: convert the tensors with .float() "
                            f"(PyTorch truncates {name} to {int(value)})")
    return int(value)


def scaled_sum(op: str, input: Tensor, product: Tensor, beta: float, alpha: float,
               promotes: bool = False) -> Tensor:
    """``beta * input + alpha * product`` (for bool tensors ``(beta and input) or (alpha and
    product)``, as PyTorch's); with ``beta == 0`` the input is ignored, nan or not.
    As in PyTorch, ``input`` broadcasts to the product's shape, whatever ``beta``, and has its
    dtype (autocast casts it) or, where the op ``promotes`` (``addr``), both take their
    common dtype."""
    beta, alpha = (_integral_scale(op, n, v, product) for n, v in (("beta", beta),
                                                                   ("alpha", alpha)))
    shape = tuple(product.shape)
    if input.shape != shape and broadcast_shapes(input.shape, shape, op=op) != shape:
        raise ShapeError(f"{op}: input of shape {tuple(input.shape)} does not broadcast to "
                         f"the product's shape {shape}")
    if input.dtype is not product.dtype and promotes and not DISPATCH.casting:
        input, product = promote(input, product)
    if input.dtype is not product.dtype:
        if not DISPATCH.casting:  # (autocast: one low-precision op)
            raise DTypeError(f"{op}: input is {dtype_name(op, 'input', input)} but the product is "
                             f"{product.dtype.name}; they must have one dtype, as in PyTorch. "
                             f"Hint: convert input with .to(ember.{product.dtype.name})")
        input = cast(input, product.dtype)
    if product.dtype is dtypes.bool_:  # beta and alpha are truth values
        product = product if alpha else zeros_like(product)
        return product | input if beta else product
    if alpha != 1:
        product = product * alpha
    if beta == 0:  # (an input needing a gradient gets zeros, as PyTorch's)
        return zero_grad_from(input, product)
    return product + (input if beta == 1 else input * beta)


@method()
def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: float = 1,
          alpha: float = 1) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)`` (``input`` broadcasts).

    Example:
        >>> ember.addmm(ember.zeros(3), ember.ones(2, 4), ember.ones(4, 3)).shape
        ember.Size([2, 3])
    """
    return _scaled("addmm", mm, mm_operands, input, mat1, mat2, beta, alpha)


@method()
def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: float = 1,
            alpha: float = 1) -> Tensor:
    """``beta * input + alpha * bmm(batch1, batch2)``.

    Example:
        >>> ember.baddbmm(ember.zeros(1, 3), ember.ones(2, 2, 4), ember.ones(2, 4, 3)).shape
        ember.Size([2, 2, 3])
    """
    return _scaled("baddbmm", bmm, bmm_operands, input, batch1, batch2, beta, alpha)


def _scaled(op: str, product: Any, check: Any, input: Tensor, a: Tensor, b: Tensor,
            beta: float, alpha: float) -> Tensor:
    """``beta * input + alpha * product(a, b)``; for half operands all in float32 and rounded
    once (:func:`~ember.ops.half_gemm.half_product`), as PyTorch's CPU kernels."""
    low = half_product(a) if _dense(a) and _dense(input) and (
        input.dtype is a.dtype or DISPATCH.casting) else None
    if low is None:
        return scaled_sum(op, input, product(a, b), beta, alpha)
    check(a, b)
    wide = wide_matmul(a, b)
    return cast(scaled_sum(op, cast(cast(input, low), wide.dtype), wide, beta, alpha), low)


def _dense(x: Any) -> bool:
    """Whether ``x`` is a strided tensor (a Parameter too), not a nested or masked one."""
    return isinstance(x, Tensor) and type(x) not in TENSOR_LIKE


@method()
def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: float = 1,
           alpha: float = 1) -> Tensor:
    """``beta * input + alpha * sum(bmm(batch1, batch2), 0)``: the products of the ``(b, n, m)``
    and ``(b, m, p)`` batches summed into one ``(n, p)`` matrix (``input`` broadcasts to it).

    Example:
        >>> ember.addbmm(ember.zeros(3), ember.ones(2, 2, 4), ember.ones(2, 4, 3))
        tensor([[8., 8., 8.],
                [8., 8., 8.]])
    """
    _expect_ndim("addbmm", ("batch1", batch1, 3), ("batch2", batch2, 3))
    (b, n, m), (b2, m2, p) = batch1.shape, batch2.shape
    if b != b2 or m != m2:
        raise ShapeError(f"addbmm: batch1 {tuple(batch1.shape)} and batch2 "
                         f"{tuple(batch2.shape)} need equal batch sizes and inner sizes")
    # the batch sum is one GEMM over the batch and inner dims together: (n, b·m) @ (b·m, p)
    summed = mm(reshape(transpose(batch1, 0, 1), (n, b * m)), reshape(batch2, (b * m, p)))
    return scaled_sum("addbmm", input, summed, beta, alpha)


@method()
def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta: float = 1,
          alpha: float = 1) -> Tensor:
    """``beta * input + alpha * (mat @ vec)``.

    Example:
        >>> ember.addmv(ember.ones(2), ember.ones(2, 3), ember.ones(3))
        tensor([4., 4.])
    """
    return scaled_sum("addmv", input, mv(mat, vec), beta, alpha)


@method()
def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta: float = 1,
         alpha: float = 1) -> Tensor:
    """``beta * input + alpha * outer(vec1, vec2)``.

    Example:
        >>> ember.addr(ember.zeros(2, 3), ember.ones(2), ember.ones(3)).shape
        ember.Size([2, 3])
    """
    return scaled_sum("addr", input, outer(vec1, vec2), beta, alpha, promotes=True)


bind_inplace(addmm_=addmm, baddbmm_=baddbmm, addbmm_=addbmm, addmv_=addmv, addr_=addr)
