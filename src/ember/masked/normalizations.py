"""Masked functions that keep the input's shape: ``cumsum``, ``cumprod``, ``softmax``,
``log_softmax``, ``softmin``, ``normalize``, and the elementwise ``logaddexp``.

A masked-out element does not take part: it counts as 0 in ``cumsum`` and ``normalize``, 1 in
``cumprod``, and has probability 0 in the softmaxes (a slice with nothing masked in gives nan
there, as torch.masked does). The output still has a value at masked-out positions; read it
where the mask is True.
"""

from __future__ import annotations

from typing import Any

import ember
import ember.nn.functional as F
from ember.dtypes import DType
from ember.masked.masks import fill_masked_out, first_dim, unwrap
from ember.masked.reductions import norm
from ember.tensor import Tensor

__all__ = ["cumsum", "cumprod", "softmax", "log_softmax", "softmin", "normalize", "logaddexp"]


def _scan(op: str, identity_of: str, input: Any, dim: int, dtype: DType | None,
          mask: Tensor | None) -> Tensor:
    input, mask = unwrap(input, mask, op)
    d = first_dim(dim, input.ndim, op)
    dtype = dtype or input.dtype
    return getattr(ember, op)(fill_masked_out(identity_of, input, mask), d, dtype=dtype)


def cumsum(input: Any, dim: int, *, dtype: DType | None = None,
           mask: Tensor | None = None) -> Tensor:
    """Running sum along ``dim`` that skips masked-out elements.

    Example:
        >>> x = ember.tensor([1.0, 2.0, 3.0, 4.0])
        >>> ember.masked.cumsum(x, 0, mask=ember.tensor([True, False, True, True]))
        tensor([1., 1., 4., 8.])
    """
    return _scan("cumsum", "sum", input, dim, dtype, mask)


def cumprod(input: Any, dim: int, *, dtype: DType | None = None,
            mask: Tensor | None = None) -> Tensor:
    """Running product along ``dim`` that skips masked-out elements.

    Example:
        >>> x = ember.tensor([2.0, 5.0, 3.0, 4.0])
        >>> ember.masked.cumprod(x, 0, mask=ember.tensor([True, False, True, True]))
        tensor([ 2.,  2.,  6., 24.])
    """
    return _scan("cumprod", "prod", input, dim, dtype, mask)


def _softmax_like(fn: Any, identity_of: str, input: Any, dim: int, dtype: DType | None,
                  mask: Tensor | None) -> Tensor:
    input, mask = unwrap(input, mask, fn.__name__)
    d = first_dim(dim, input.ndim, fn.__name__)
    return fn(fill_masked_out(identity_of, input, mask), d, dtype=dtype or input.dtype)


def softmax(input: Any, dim: int, *, dtype: DType | None = None,
            mask: Tensor | None = None) -> Tensor:
    """Softmax along ``dim`` over the masked-in elements; masked-out ones get 0.

    Example:
        >>> x = ember.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        >>> m = ember.tensor([[True, False, True], [False, False, False]])
        >>> ember.masked.softmax(x, 1, mask=m)
        tensor([[0.1192, 0.0000, 0.8808],
                [   nan,    nan,    nan]])
    """
    return _softmax_like(F.softmax, "amax", input, dim, dtype, mask)


def log_softmax(input: Any, dim: int, *, dtype: DType | None = None,
                mask: Tensor | None = None) -> Tensor:
    """Log of :func:`softmax`; masked-out elements get -inf.

    Example:
        >>> x = ember.tensor([1.0, 2.0, 3.0])
        >>> ember.masked.log_softmax(x, 0, mask=ember.tensor([True, False, True]))
        tensor([-2.1269,    -inf, -0.1269])
    """
    return _softmax_like(F.log_softmax, "amax", input, dim, dtype, mask)


def softmin(input: Any, dim: int, *, dtype: DType | None = None,
            mask: Tensor | None = None) -> Tensor:
    """Softmax of ``-input`` along ``dim`` over the masked-in elements; masked-out ones get 0.

    Example:
        >>> x = ember.tensor([1.0, 2.0, 3.0])
        >>> ember.masked.softmin(x, 0, mask=ember.tensor([True, False, True]))
        tensor([0.8808, 0.0000, 0.1192])
    """
    return _softmax_like(F.softmin, "amin", input, dim, dtype, mask)


def normalize(input: Any, ord: float, dim: int, *, eps: float = 1e-12,
              dtype: DType | None = None, mask: Tensor | None = None) -> Tensor:
    """``input`` divided by the ``ord``-norm of its masked-in elements along ``dim`` (at least
    ``eps``); masked-out elements become 0.

    Example:
        >>> x = ember.tensor([3.0, 7.0, 4.0])
        >>> ember.masked.normalize(x, 2.0, 0, mask=ember.tensor([True, False, True]))
        tensor([0.6000, 0.0000, 0.8000])
    """
    input, mask = unwrap(input, mask, "normalize")
    dtype = dtype or input.dtype
    denominator = ember.clamp(norm(input, ord, dim, keepdim=True, dtype=dtype, mask=mask),
                              min=eps)
    return fill_masked_out("sum", input, mask) / denominator


def logaddexp(input: Any, other: Any, *, dtype: DType | None = None,
              input_mask: Tensor | None = None, other_mask: Tensor | None = None) -> Tensor:
    """``log(exp(input) + exp(other))`` where a masked-out element counts as -inf.

    Example:
        >>> a, b = ember.tensor([-100.0, -200.0, -300.0]), ember.tensor([-1.0, -2.0, -3.0])
        >>> m = ember.tensor([True, False, True])
        >>> ember.masked.logaddexp(a, b, input_mask=m, other_mask=m)
        tensor([-1., -inf, -3.])
    """
    input, input_mask = unwrap(input, input_mask, "logaddexp", ("input", "input_mask"))
    other, other_mask = unwrap(other, other_mask, "logaddexp", ("other", "other_mask"))
    result = ember.logaddexp(fill_masked_out("logaddexp", input, input_mask),
                             fill_masked_out("logaddexp", other, other_mask))
    return result.to(dtype or input.dtype)
