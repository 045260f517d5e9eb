"""``ember.signal.windows``: PyTorch's ``torch.signal.windows``, window functions in SciPy's
convention. Unlike ``ember.hann_window`` and its kin (``periodic=True`` by default), these
are symmetric by default (``sym=True``, for filter design); ``sym=False`` gives the periodic
window for spectral analysis. Every parameter is keyword-only, as in PyTorch.

They share :mod:`ember.ops.windows`' construction (computed in float64, cast to ``dtype``,
float32 or float64).

Example:
    >>> ember.signal.windows.hann(5)
    tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000])
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from ember import dtypes
from ember.errors import ArgumentError, ArgumentTypeError
from ember.layouts import strided
from ember.ops.unary import abs, exp, sin
from ember.ops.windows import bartlett_shape, blackman_shape, cosine_sum, kaiser_shape, make_window
from ember.tensor import Tensor

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
           "general_hamming", "hamming", "hann", "kaiser", "nuttall"]


def _window(name: str, M: int, sym: bool, dtype: Any, layout: Any, device: Any,
            requires_grad: bool, shape: Callable[[Tensor, int], Tensor],
            ones_below: int = 2, check: Callable[[], None] | None = None) -> Tensor:
    """torch.signal.windows' checks, in its order (ValueError for a negative length, a layout
    other than strided, a dtype other than float32 and float64, then ``check``: the window's
    own parameters), then the window."""
    dt = dtypes.get_default_dtype() if dtype is None else dtypes.to_dtype(dtype)
    if M < 0:
        raise ArgumentError(f"{name} requires non-negative window length, got M={M}")
    if layout is not None and layout is not strided:  # (anything else: a ValueError in torch)
        raise ArgumentError(f"{name} is implemented for strided tensors only, got: {layout}. "
                            "Hint: pass ember.strided, or convert with .to_sparse()")
    if dt not in (dtypes.float32, dtypes.float64):
        raise ArgumentError(f"{name} expects float32 or float64 dtypes, got: {dt.name}")
    if check is not None:
        check()
    # (a bool M is taken as an int, as torch's cosine-sum windows take it; the top-level
    # *_window functions refuse it, as torch's)
    return make_window(name, int(M) if isinstance(M, bool) else M, not sym, dt, None, device,
                       requires_grad, shape, ones_below=ones_below)  # (layout: checked above)


def exponential(M: int, *, center: float | None = None, tau: float = 1.0, sym: bool = True,
                dtype: Any = None, layout: Any = None, device: Any = None,
                requires_grad: bool = False) -> Tensor:
    """The exponential (Poisson) window, ``exp(-|n - center| / tau)``; ``center`` defaults to
    the window's middle and may only be given for a periodic window (``sym=False``).

    Example:
        >>> ember.signal.windows.exponential(3, tau=1.0)
        tensor([0.3679, 1.0000, 0.3679])
    """
    def check() -> None:
        if tau <= 0:
            raise ArgumentError(f"exponential: Tau must be positive, got: {tau} instead.")
        if sym and center is not None:
            raise ArgumentError("exponential: Center must be None for symmetric windows")

    def shape(n: Tensor, span: int) -> Tensor:
        middle = (span / 2 if M > 1 else 0.0) if center is None else center
        return exp(-abs(n - middle) / tau)

    # a one-point window is exp(-|center| / tau), 1 unless an off-centre center is given
    return _window("exponential", M, sym, dtype, layout, device, requires_grad, shape,
                   ones_below=1, check=check)


def cosine(M: int, *, sym: bool = True,
           dtype: Any = None, layout: Any = None, device: Any = None,
           requires_grad: bool = False) -> Tensor:
    """The cosine (sine) window, ``sin(π (n + 0.5) / M)``, as SciPy's.

    Example:
        >>> ember.signal.windows.cosine(3)
        tensor([0.5000, 1.0000, 0.5000])
    """
    return _window("cosine", M, sym, dtype, layout, device, requires_grad,
                   lambda n, span: sin(math.pi * (n + 0.5) / (span + 1)))


def gaussian(M: int, *, std: float = 1.0, sym: bool = True,
             dtype: Any = None, layout: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """The Gaussian window, ``exp(-(n - span / 2)² / (2 std²))``.

    Example:
        >>> ember.signal.windows.gaussian(3, std=1.0)
        tensor([0.6065, 1.0000, 0.6065])
    """
    def check() -> None:
        if std <= 0:
            raise ArgumentError(f"gaussian: Standard deviation must be positive, got: {std} "
                                "instead.")

    return _window("gaussian", M, sym, dtype, layout, device, requires_grad,
                   lambda n, span: exp(-((n - span / 2) / std) ** 2 / 2), check=check)


def kaiser(M: int, *, beta: float = 12.0, sym: bool = True,
           dtype: Any = None, layout: Any = None, device: Any = None,
           requires_grad: bool = False) -> Tensor:
    """The Kaiser window, ``I0(beta sqrt(1 - (2n / span - 1)²)) / I0(beta)``.

    Example:
        >>> ember.signal.windows.kaiser(3, beta=0.0)
        tensor([1., 1., 1.])
    """
    def check() -> None:
        if beta < 0:
            raise ArgumentError(f"kaiser: beta must be non-negative, got: {beta} instead.")

    return _window("kaiser", M, sym, dtype, layout, device, requires_grad, kaiser_shape(beta),
                   check=check)


def bartlett(M: int, *, sym: bool = True,
             dtype: Any = None, layout: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """The Bartlett (triangular) window, ``1 - |2n / span - 1|``.

    Example:
        >>> ember.signal.windows.bartlett(5)
        tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000])
    """
    return _window("bartlett", M, sym, dtype, layout, device, requires_grad, bartlett_shape)


def general_cosine(M: int, *, a: Iterable[float], sym: bool = True,
                   dtype: Any = None, layout: Any = None, device: Any = None,
                   requires_grad: bool = False) -> Tensor:
    """The general cosine window, ``sum_i (-1)^i a_i cos(2πi n / span)``.

    Example:
        >>> ember.signal.windows.general_cosine(3, a=[0.5, 0.5])
        tensor([0., 1., 0.])
    """
    # `a` is read only for windows of 2 points or more (shorter ones are ones, whatever `a`
    # is), after the length, layout and dtype checks, as in torch
    return _window("general_cosine", M, sym, dtype, layout, device, requires_grad,
                   lambda n, span: cosine_sum(_coefficients(a))(n, span))


def _coefficients(a: Any) -> list[float]:
    """general_cosine's ``a`` as floats: a non-empty list or tuple of real numbers."""
    if isinstance(a, str) or not isinstance(a, Iterable):  # (a str: its characters)
        raise ArgumentTypeError("general_cosine: Coefficients must be a list/tuple")
    coefficients = [_real(i, c) for i, c in enumerate(a)]
    if not coefficients:
        raise ArgumentError("general_cosine: Coefficients cannot be empty")
    return coefficients


def _real(i: int, c: Any) -> float:
    """The coefficient ``a[i]`` as a float; a str is refused, as PyTorch's (float() takes
    "0.5")."""
    if not isinstance(c, (str, bytes)):
        try:
            return float(c)
        except (TypeError, ValueError):
            pass
    raise ArgumentTypeError(f"general_cosine: coefficient a[{i}] must be a real number, got "
                            f"{type(c).__name__}")


def general_hamming(M: int, *, alpha: float = 0.54, sym: bool = True,
                    dtype: Any = None, layout: Any = None, device: Any = None,
                    requires_grad: bool = False) -> Tensor:
    """The general Hamming window, ``alpha - (1 - alpha) cos(2πn / span)``.

    Example:
        >>> ember.signal.windows.general_hamming(3, alpha=0.6)
        tensor([0.2000, 1.0000, 0.2000])
    """
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def hamming(M: int, *, sym: bool = True,
            dtype: Any = None, layout: Any = None, device: Any = None,
            requires_grad: bool = False) -> Tensor:
    """The Hamming window, :func:`general_hamming` with ``alpha=0.54``.

    Example:
        >>> ember.signal.windows.hamming(3)
        tensor([0.0800, 1.0000, 0.0800])
    """
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def hann(M: int, *, sym: bool = True,
         dtype: Any = None, layout: Any = None, device: Any = None,
         requires_grad: bool = False) -> Tensor:
    """The Hann window, :func:`general_hamming` with ``alpha=0.5``.

    Example:
        >>> ember.signal.windows.hann(4, sym=False)
        tensor([0.0000, 0.5000, 1.0000, 0.5000])
    """
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M: int, *, sym: bool = True,
             dtype: Any = None, layout: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """The Blackman window, :func:`general_cosine` with ``a=[0.42, 0.5, 0.08]`` (summed so
    that a symmetric window's ends are exactly 0, where torch's are rounding noise).

    Example:
        >>> ember.signal.windows.blackman(3)
        tensor([0., 1., 0.])
    """
    return _window("blackman", M, sym, dtype, layout, device, requires_grad, blackman_shape)


def nuttall(M: int, *, sym: bool = True,
            dtype: Any = None, layout: Any = None, device: Any = None,
            requires_grad: bool = False) -> Tensor:
    """Nuttall's minimum 4-term Blackman-Harris window, :func:`general_cosine` with
    ``a=[0.3635819, 0.4891775, 0.1365995, 0.0106411]``.

    Example:
        >>> ember.signal.windows.nuttall(3)
        tensor([3.6280e-04, 1.0000e+00, 3.6280e-04])
    """
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym,
                          dtype=dtype, layout=layout, device=device, requires_grad=requires_grad)
