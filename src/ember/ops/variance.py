"""Variance and standard deviation over dimensions (``var``, ``std``, ``var_mean``,
``std_mean``): composites of :func:`~ember.ops.reduce.mean` and the ``Sum`` primitive, so
their gradients come for free."""

from __future__ import annotations

from math import prod as _product
from typing import Any

import numpy as np

from ember import dtypes
from ember.autograd.graph import name_node
from ember.errors import ArgumentError, DTypeError
from ember.ops.convert import cast, reduces_in_float32
from ember.ops.dims import Dim, reduce_dims, with_reduced_dims
from ember.ops.overrides import TENSOR_LIKE, handle
from ember.ops.primitive import apply
from ember.ops.reduce import Sum, mean
from ember.ops.select import where
from ember.ops.unary import sqrt
from ember.ops.variance_kernel import fused_var
from ember.tensor import Tensor, method

__all__ = ["var", "std", "var_mean", "std_mean"]

_FUSED = (np.dtype(np.float32), np.dtype(np.float64))  # (the fused var's dtypes)


def _var_and_mean(input: Tensor, dim: Any, unbiased: bool | None, keepdim: bool,
                  correction: float | None, op: str, root: bool = False, mean_too: bool = True
                  ) -> tuple[Tensor, Tensor | None]:
    """``(var, mean)``, or ``(std, mean)`` with ``root``; half precision computes in float32
    (the square of 300 overflows float16) and rounds each result once. Without ``mean_too``
    the mean is None. A real float32/float64 spread is the fused ``var`` or ``std`` primitive
    (:mod:`ember.ops.variance_kernel`: float32 squares that overflow are summed again in
    float64, as PyTorch's accumulation), eagerly and under jit, vmap and forward mode alike,
    so that they agree; a complex one is the composite below."""
    if isinstance(dim, bool):  # the var(input, unbiased) overload
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise ArgumentError(f"{op}: pass either unbiased or correction, not both")
    if correction is None:
        correction = 0 if unbiased is False else 1
    if not input.dtype.is_floating_point and not input.dtype.is_complex:
        raise DTypeError(f"{op}: only floating inputs are supported, got {input.dtype.name}. "
                         "Hint: call .float() first")
    dims = reduce_dims(input, dim, op)
    if reduces_in_float32(input):
        spread, mu = _var_and_mean(cast(input, dtypes.float32), dims, None, keepdim, correction,
                                   op, root, mean_too)
        return cast(spread, input.dtype), None if mu is None else cast(mu, input.dtype)
    n = _product(input.shape[d] for d in dims)
    if n and input._data.dtype in _FUSED:
        spread = fused_var(input, dims, keepdim, correction, root)
        return spread, mean(input, dims, keepdim=keepdim) if mean_too else None
    mu = mean(input, dims, keepdim=True)
    centered = input - mu
    if centered.is_complex():  # squared moduli: the spread is real, as PyTorch's
        squared = centered.real * centered.real + centered.imag * centered.imag
    else:
        squared = centered * centered
    squares = apply(Sum, squared, dims=dims, keepdim=keepdim)
    dof = n - correction
    variance = squares / (dof if dof > 0 else 0.0)  # nan or inf, with no dof left, as PyTorch
    if not mean_too:
        mu = None
    elif not keepdim:
        mu = with_reduced_dims(mu, input.shape, dims, False)
    return (_root(variance) if root else variance), mu


def _root(variance: Tensor) -> Tensor:
    """The standard deviation, with PyTorch's zero gradient where it is 0 (a constant slice:
    the chain rule alone gives ``0 * inf = NaN`` there)."""
    if not variance.requires_grad:
        return sqrt(variance)
    zero = variance == 0
    return where(zero, 0.0, sqrt(where(zero, 1.0, variance)))


@method()
def var(input: Tensor, dim: Dim = None, unbiased: bool | None = None, keepdim: bool = False,
        *, correction: float | None = None) -> Tensor:
    """The variance over ``dim``: ``sum(|x - mean|²) / (N - correction)``, correction 1 by
    default (``unbiased=False`` means correction 0); real also for a complex input.

    Example:
        >>> ember.tensor([1.0, 2.0, 3.0, 4.0]).var()
        tensor(1.6667)
    """
    if type(input) in TENSOR_LIKE:  # (a MaskedTensor)
        return handle(var, (input, dim), {"unbiased": unbiased, "keepdim": keepdim,
                                              "correction": correction})
    return name_node(_var_and_mean(input, dim, unbiased, keepdim, correction, "var",
                                   mean_too=False)[0], "VarBackward0")


@method()
def std(input: Tensor, dim: Dim = None, unbiased: bool | None = None, keepdim: bool = False,
        *, correction: float | None = None) -> Tensor:
    """The standard deviation over ``dim``: the square root of :func:`var`.

    Example:
        >>> ember.tensor([1.0, 3.0]).std(correction=0)
        tensor(1.)
    """
    if type(input) in TENSOR_LIKE:  # (a MaskedTensor)
        return handle(std, (input, dim), {"unbiased": unbiased, "keepdim": keepdim,
                                              "correction": correction})
    return name_node(_var_and_mean(input, dim, unbiased, keepdim, correction, "std", root=True,
                                   mean_too=False)[0], "StdBackward0")


def var_mean(input: Tensor, dim: Dim = None, unbiased: bool | None = None,
             keepdim: bool = False, *, correction: float | None = None) -> tuple[Tensor, Tensor]:
    """``(var, mean)`` over ``dim`` in one pass over the data.

    Example:
        >>> v, m = ember.var_mean(ember.tensor([1.0, 3.0]))
    """
    spread, mu = _var_and_mean(input, dim, unbiased, keepdim, correction, "var_mean")
    return name_node(spread, "VarMeanBackward0"), name_node(mu, "VarMeanBackward0")


def std_mean(input: Tensor, dim: Dim = None, unbiased: bool | None = None,
             keepdim: bool = False, *, correction: float | None = None) -> tuple[Tensor, Tensor]:
    """``(std, mean)`` over ``dim``.

    Example:
        >>> s, m = ember.std_mean(ember.tensor([1.0, 3.0]))
    """
    spread, mu = _var_and_mean(input, dim, unbiased, keepdim, correction, "std_mean", root=True)
    return name_node(spread, "StdMeanBackward0"), name_node(mu, "StdMeanBackward0")
