"""Local response normalization across channels (dimension 1): ``local_response_norm``
(``torch.nn.functional``'s) and ``cross_map_lrn2d`` (the op of the legacy ``CrossMapLRN2d``
layer). Both divide each element by ``(k + alpha · mean or sum of the squares of its
neighbouring channels)^beta``; composites of slices, sums and powers.
"""

from __future__ import annotations

from typing import Any

from ember.errors import ArgumentError, DTypeError, ShapeError, is_floating_input
from ember.ops.convert import HALF, float32_under_autocast, laid_out_like
from ember.ops.int_args import as_int, as_number
from ember.ops.pad import pad
from ember.tensor import Tensor

__all__: list[str] = []


def _channel_window_sum(x: Tensor, before: int, after: int) -> Tensor:
    """``Σ x[:, j]`` over the channels ``j`` in ``[c - before, c + after]`` for each channel
    ``c``, counting channels outside the tensor as zeros."""
    channels = x.shape[1]
    padded = pad(x, (0, 0) * (x.ndim - 2) + (before, after))
    total = padded[:, :channels]
    for start in range(1, before + after + 1):
        total = total + padded[:, start:start + channels]
    return total


def _checked(op: str, input: Tensor, size: int, *numbers: Any) -> list[int | float]:
    """Refuses a bad input or size; ``alpha``, ``beta`` and ``k`` (``numbers``) as numbers (a
    string is a TypeError naming the op, as PyTorch's)."""
    if not is_floating_input(op, "input", input):
        raise DTypeError(f"{op}: expected a floating input, got {input.dtype.name}")
    if type(size) is not int:
        as_int(size, op, "size")  # (a NumPy int passes; a float or a str raises, as PyTorch)
    if size < 1:
        raise ArgumentError(f"{op}: size must be a positive integer, got {size}")
    return [as_number(v, op, name) for v, name in zip(numbers, ("alpha", "beta", "k"))]


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0) -> Tensor:
    """``x / (k + alpha · mean(x²))^beta`` with the mean over ``size`` neighbouring channels
    (``size // 2`` before, ``(size - 1) // 2`` after, zeros beyond the edges), for an input
    ``(N, C, *)`` with at least one spatial dimension.

    Under CPU autocast a bfloat16/float16 input of 4 or more dimensions comes out float32, as
    PyTorch's (its avg_pool3d is on the float32 list); a 3-D one keeps its dtype (PyTorch's
    avg_pool2d is not).

    Example:
        >>> F.local_response_norm(ember.ones(1, 2, 1), size=2, alpha=2.0, beta=1.0, k=0.0)
        tensor([[[1.0000],
                 [0.5000]]])
    """
    body = _lrn if getattr(input, "ndim", None) == 3 else _lrn_float32
    return body(input, size, alpha, beta, k)


def _lrn(input: Tensor, size: int, alpha: float, beta: float, k: float) -> Tensor:
    op = "local_response_norm"
    alpha, beta, k = _checked(op, input, size, alpha, beta, k)
    if input.ndim < 3:
        raise ArgumentError(f"{op}: expected an input of 3 or more dimensions (N, C, *), got shape "
                            f"{tuple(input.shape)}")
    if input.numel() == 0:
        return input
    if input.dtype in HALF:  # in float32, as PyTorch's mean of the squares (a sum overflows)
        return _lrn(input.float(), size, alpha, beta, k).to(input.dtype)
    window = _channel_window_sum(input * input, size // 2, (size - 1) // 2)
    return input / laid_out_like((window * (alpha / size) + k) ** beta, input)


_lrn_float32 = float32_under_autocast(_lrn)  # (PyTorch's CPU avg_pool3d, 4-D and up; pow: CUDA)


def cross_map_lrn2d(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                    k: float = 1.0) -> Tensor:
    """``x · (k + alpha / size · Σ x²)^-beta`` with the sum over the channels within
    ``(size - 1) // 2`` of each one, for a 4-D input ``(N, C, H, W)``.

    For odd ``size`` this is ``local_response_norm``. PyTorch's own ``CrossMapLRN2d`` (a port
    of Lua Torch's) keeps channel 0 in the window of every channel from ``(size + 1) // 2``
    on, and its backward reads a window one channel off; Ember computes the documented
    window, and the exact gradient of it.

    Example:
        >>> cross_map_lrn2d(ember.ones(1, 3, 1, 1), 3, alpha=3.0, beta=1.0, k=0.0)[0, :, 0, 0]
        tensor([0.5000, 0.3333, 0.5000])
    """
    op = "cross_map_lrn2d"
    alpha, beta, k = _checked(op, input, size, alpha, beta, k)
    if input.ndim != 4:
        raise ShapeError(f"{op}: expected a 4-D input (N, C, H, W), got shape "
                         f"{tuple(input.shape)}")
    reach = (size - 1) // 2
    window = _channel_window_sum(input * input, reach, reach)
    return input * (window * (alpha / size) + k) ** -beta
