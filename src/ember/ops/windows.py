"""Window functions for spectral analysis, as ``torch.*_window``: ``hann_window``,
``hamming_window``, ``blackman_window``, ``bartlett_window``, ``kaiser_window``.

Each is a function of ``n / (M - 1)`` over a symmetric window of ``M`` points; a *periodic*
window of length ``N`` (the default, what ``stft`` wants) is the symmetric one of ``N + 1``
points without its last. Computed in float64, then cast to ``dtype`` (a floating one).
``window_length`` is an int (not a bool) and ``periodic`` a bool, as PyTorch's parser wants;
``pin_memory=`` is accepted, as by the other factories (the CPU has nothing to pin).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

from ember import dtypes
from ember.errors import ArgumentTypeError, DTypeError, ShapeError, type_name
from ember.ops.bessel import i0e
from ember.ops.creation import arange, check_strided, full_like, ones, tensor
from ember.ops.unary import abs, cos, exp, sqrt
from ember.tensor import Tensor

__all__ = ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
           "kaiser_window"]


def make_window(op: str, length: int, periodic: bool, dtype: Any, layout: Any, device: Any,
                requires_grad: bool, shape: Callable[[Tensor, int], Tensor], *,
                ones_below: int = 2) -> Tensor:
    """``shape(n, span)`` for ``n`` in ``0 … length - 1`` (float64), with ``span = M - 1`` for
    ``M`` the symmetric window's size; a window shorter than ``ones_below`` is all ones."""
    check_strided(op, layout)
    dt = dtypes.get_default_dtype() if dtype is None else dtypes.to_dtype(dtype)
    if not dt.is_floating_point:
        raise DTypeError(f"{op}: expects a floating point dtype, got {dt.name}")
    try:
        if isinstance(length, bool):  # (no length: torch refuses True, as it does a float)
            raise TypeError
        length = operator.index(length)
    except TypeError:
        raise ArgumentTypeError(f"{op}: window_length must be an int, got "
                                f"{type_name(length)}") from None
    if not isinstance(periodic, bool):  # (None or 0 silently gave the symmetric window)
        raise ArgumentTypeError(f"{op}: periodic must be a bool, got {type_name(periodic)} "
                                f"{periodic!r}. Hint: periodic=True (for stft) or periodic=False")
    if length < 0:
        raise ShapeError(f"{op}: requires a non-negative window_length, got {length}")
    if length < ones_below:
        out = ones(length, dtype=dt, device=device)
    else:
        span = length if periodic else length - 1
        out = shape(arange(length, dtype=dtypes.float64, device=device), span).to(dt)
    return out.requires_grad_(True) if requires_grad else out


def of_fraction(shape: Callable[[Tensor], Tensor]) -> Callable[[Tensor, int], Tensor]:
    """A window shape given as a function of ``n / span`` (0 to 1 over a symmetric window)."""
    return lambda n, span: shape(n / span)


def cosine_sum(coefficients: Sequence[float]) -> Callable[[Tensor, int], Tensor]:
    """The shape ``sum_i (-1)^i a_i cos(2πi n / span)`` (Hann, Hamming, Blackman, Nuttall)."""
    def shape(t: Tensor) -> Tensor:
        if len(coefficients) == 1:
            return full_like(t, coefficients[0])
        out = coefficients[0] - coefficients[1] * cos(2 * math.pi * t)
        for i, a in enumerate(coefficients[2:], 2):
            out = out + (-1) ** i * a * cos(2 * math.pi * i * t)
        return out
    return of_fraction(shape)


def kaiser_shape(beta: float) -> Callable[[Tensor, int], Tensor]:
    """``I0(beta sqrt(1 - (2n / span - 1)²)) / I0(beta)`` (differentiable in a tensor
    ``beta``), as ``i0e(x) / i0e(beta) * exp(|x| - |beta|)``: I0 overflows float64 past
    beta ≈ 713, where the plain ratio is inf / inf = NaN (as torch's is)."""
    scale = (beta.to(dtypes.float64) if isinstance(beta, Tensor)
             else tensor(float(beta), dtype=dtypes.float64))

    def shape(t: Tensor) -> Tensor:
        x = scale * sqrt((1 - (2 * t - 1) ** 2).clamp(min=0))
        return i0e(x) / i0e(scale) * exp(abs(x) - abs(scale))

    return of_fraction(shape)


def blackman_shape(n: Tensor, span: int) -> Tensor:
    """``0.42 - 0.5 cos(2πn / span) + 0.08 cos(4πn / span)``, summed in the order that makes
    the ends exactly 0 (0.08 - 0.5 + 0.42), as in ``torch.blackman_window``."""
    t = n / span
    return 0.08 * cos(4 * math.pi * t) - 0.5 * cos(2 * math.pi * t) + 0.42


def bartlett_shape(n: Tensor, span: int) -> Tensor:
    """``1 - |2n / span - 1|``."""
    return 1 - abs(2 * (n / span) - 1)


def hann_window(window_length: int, periodic: bool = True, *, dtype: Any = None,
                layout: Any = None, device: Any = None, requires_grad: bool = False,
                pin_memory: bool = False) -> Tensor:
    """The Hann window, ``0.5 - 0.5 cos(2πn / (M - 1))``.

    Example:
        >>> ember.hann_window(4)
        tensor([0.0000, 0.5000, 1.0000, 0.5000])
    """
    return make_window("hann_window", window_length, periodic, dtype, layout, device,
                       requires_grad, cosine_sum((0.5, 0.5)))


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54,
                   beta: float = 0.46, *, dtype: Any = None, layout: Any = None,
                   device: Any = None, requires_grad: bool = False,
                   pin_memory: bool = False) -> Tensor:
    """The Hamming window, ``alpha - beta cos(2πn / (M - 1))``.

    Example:
        >>> ember.hamming_window(3, periodic=False)
        tensor([0.0800, 1.0000, 0.0800])
    """
    return make_window("hamming_window", window_length, periodic, dtype, layout, device,
                       requires_grad, cosine_sum((alpha, beta)))


def blackman_window(window_length: int, periodic: bool = True, *, dtype: Any = None,
                    layout: Any = None, device: Any = None, requires_grad: bool = False,
                    pin_memory: bool = False) -> Tensor:
    """The Blackman window, ``0.42 - 0.5 cos(2πn / (M - 1)) + 0.08 cos(4πn / (M - 1))``.

    Example:
        >>> ember.blackman_window(4)
        tensor([0.0000, 0.3400, 1.0000, 0.3400])
    """
    return make_window("blackman_window", window_length, periodic, dtype, layout, device,
                       requires_grad, blackman_shape)


def bartlett_window(window_length: int, periodic: bool = True, *, dtype: Any = None,
                    layout: Any = None, device: Any = None, requires_grad: bool = False,
                    pin_memory: bool = False) -> Tensor:
    """The Bartlett (triangular) window, ``1 - |2n / (M - 1) - 1|``.

    Example:
        >>> ember.bartlett_window(5, periodic=False)
        tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000])
    """
    return make_window("bartlett_window", window_length, periodic, dtype, layout, device,
                       requires_grad, bartlett_shape)


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *,
                  dtype: Any = None, layout: Any = None, device: Any = None,
                  requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """The Kaiser window, ``I0(beta sqrt(1 - (2n / (M - 1) - 1)²)) / I0(beta)``.

    Example:
        >>> ember.kaiser_window(3, periodic=False, beta=0.0)
        tensor([1., 1., 1.])
    """
    return make_window("kaiser_window", window_length, periodic, dtype, layout, device,
                       requires_grad, kaiser_shape(beta))
