"""Power-average pooling: ``lp_pool1d/2d/3d``, the ``p``-norm of each window,
``(Σ xᵖ)^(1/p)``, a composite of ``pow``, average pooling and a root (PyTorch's semantics:
the window sum is the average times the kernel's element count, also for ``ceil_mode``'s
partial windows, and there is no padding). ``p = ±inf`` is the largest (smallest) ``|x|`` of
each window, a max pooling. An integer input is PyTorch's too: an integer power pooled by
int64 average pooling (truncated) under a float32 root, or float32 throughout for a float
power."""

from __future__ import annotations

from math import inf, prod
from typing import Any

from ember.errors import ArgumentError, refuse_non_tensor
from ember.ops.im2col import ntuple
from ember.ops.pool import _avg_pool, _max_pool
from ember.tensor import Tensor

__all__: list[str] = []


def _lp_pool(op: str, nd: int, input: Tensor, norm_type: float, kernel_size: Any,
             stride: Any, ceil_mode: bool) -> Tensor:
    if not isinstance(input, Tensor):
        refuse_non_tensor(op, "input", input)
    kernel = ntuple(kernel_size, nd, op, "kernel_size")
    if norm_type == 0:
        raise ArgumentError(f"{op}: norm_type must be nonzero (the result is the window sum to "
                            f"the power 1/norm_type), got {norm_type}")
    if norm_type in (inf, -inf):
        sign = 1 if norm_type > 0 else -1
        return sign * _max_pool(op, nd, sign * input.abs(), kernel, stride, 0, 1, ceil_mode,
                                False)
    mean = _avg_pool(op, nd, input.pow(norm_type), kernel, stride, 0, ceil_mode, True, None)
    # sign·relu(|s|) is s, with a zero gradient where a window's sum is 0
    total = mean.sign() * mean.abs().relu() * prod(kernel)
    return total.pow(1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: int, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    """``(Σ xᵖ)^(1/p)`` over sliding windows of a (N, C, L) or (C, L) input, ``p`` being
    ``norm_type``; ``stride`` defaults to ``kernel_size``.

    Example:
        >>> F.lp_pool1d(ember.tensor([[3.0, 4.0, 1.0, 0.0]]), 2, 2)
        tensor([[5., 1.]])
    """
    return _lp_pool("lp_pool1d", 1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    """``(Σ xᵖ)^(1/p)`` over sliding windows of a (N, C, H, W) or (C, H, W) input.

    Example:
        >>> F.lp_pool2d(ember.ones(1, 1, 4, 4), 2, 2)
        tensor([[[[2., 2.],
                  [2., 2.]]]])
    """
    return _lp_pool("lp_pool2d", 2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Tensor:
    """``(Σ xᵖ)^(1/p)`` over sliding windows of a (N, C, D, H, W) or (C, D, H, W) input.

    Example:
        >>> F.lp_pool3d(ember.ones(1, 1, 2, 2, 2), 1, 2).shape
        ember.Size([1, 1, 1, 1, 1])
    """
    return _lp_pool("lp_pool3d", 3, input, norm_type, kernel_size, stride, ceil_mode)
