"""Pooling layers over ``ember.nn.functional``: max, average, adaptive and power-average
pooling, fractional max pooling, and max unpooling."""

from __future__ import annotations

from typing import Any

from ember.errors import ArgumentError
from ember.nn import functional as F
from ember.nn.module import Module
from ember.tensor import Tensor

__all__ = ["MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
           "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d",
           "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "LPPool1d", "LPPool2d", "LPPool3d",
           "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "FractionalMaxPool2d",
           "FractionalMaxPool3d"]


def _single(x: Any) -> tuple:
    """``x`` as a tuple, an int as a 1-tuple (PyTorch's ``_single``; importing
    ``ember.nn.modules.utils``' from here would be an import cycle)."""
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


class _MaxPoolNd(Module):
    _fn = "max_pool2d"

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 dilation: Any = 1, return_indices: bool = False,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input: Tensor) -> Any:
        return getattr(F, self._fn)(input, self.kernel_size, self.stride, self.padding,
                                    self.dilation, ceil_mode=self.ceil_mode,
                                    return_indices=self.return_indices)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """Max over sliding windows of ``(N, C, L)``."""

    _fn = "max_pool1d"


class MaxPool2d(_MaxPoolNd):
    """Max over sliding windows of ``(N, C, H, W)``; ``stride`` defaults to ``kernel_size``.

    Example:
        >>> nn.MaxPool2d(2)(ember.randn(1, 3, 8, 8)).shape
        ember.Size([1, 3, 4, 4])
    """

    _fn = "max_pool2d"


class MaxPool3d(_MaxPoolNd):
    """Max over sliding windows of ``(N, C, D, H, W)``."""

    _fn = "max_pool3d"


class _AvgPoolNd(Module):
    _fn = "avg_pool2d"

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override: int | None = None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input: Tensor) -> Tensor:
        extra = {} if self._fn == "avg_pool1d" else {"divisor_override": self.divisor_override}
        return getattr(F, self._fn)(input, self.kernel_size, self.stride, self.padding,
                                    self.ceil_mode, self.count_include_pad, **extra)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(_AvgPoolNd):
    """Average over sliding windows of ``(N, C, L)``."""

    _fn = "avg_pool1d"

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True) -> None:
        # as 1-tuples, PyTorch's attributes (and repr): kernel_size=(3,)
        super().__init__(_single(kernel_size), _single(kernel_size if stride is None else stride),
                         _single(padding), ceil_mode, count_include_pad)


class AvgPool2d(_AvgPoolNd):
    """Average over sliding windows of ``(N, C, H, W)``.

    Example:
        >>> nn.AvgPool2d(2)(ember.randn(1, 3, 8, 8)).shape
        ember.Size([1, 3, 4, 4])
    """

    _fn = "avg_pool2d"


class AvgPool3d(_AvgPoolNd):
    """Average over sliding windows of ``(N, C, D, H, W)``."""

    _fn = "avg_pool3d"


class _Adaptive(Module):
    _fn = "adaptive_avg_pool2d"

    def __init__(self, output_size: Any, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, input: Tensor) -> Any:
        if self.return_indices:
            return getattr(F, self._fn)(input, self.output_size, return_indices=True)
        return getattr(F, self._fn)(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class _AdaptiveAvgPoolNd(_Adaptive):
    """PyTorch's base of the adaptive average pools (which return no indices)."""

    def __init__(self, output_size: Any) -> None:
        super().__init__(output_size)


class _AdaptiveMaxPoolNd(_Adaptive):
    """PyTorch's base of the adaptive max pools (``return_indices`` also returns where each
    maximum was)."""


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """Average pooling to a fixed output length."""

    _fn = "adaptive_avg_pool1d"


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """Average pooling to a fixed output size (``None`` keeps that dim).

    Example:
        >>> nn.AdaptiveAvgPool2d((1, 1))(ember.randn(2, 3, 7, 5)).shape
        ember.Size([2, 3, 1, 1])
    """

    _fn = "adaptive_avg_pool2d"


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """Average pooling to a fixed 3-D output size."""

    _fn = "adaptive_avg_pool3d"


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """Max pooling to a fixed output length."""

    _fn = "adaptive_max_pool1d"


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """Max pooling to a fixed output size."""

    _fn = "adaptive_max_pool2d"


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """Max pooling to a fixed 3-D output size."""

    _fn = "adaptive_max_pool3d"


class _LPPoolNd(Module):
    _fn = "lp_pool2d"

    def __init__(self, norm_type: float, kernel_size: Any, stride: Any = None,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type, self.kernel_size = norm_type, kernel_size
        self.stride, self.ceil_mode = stride, ceil_mode

    def forward(self, input: Tensor) -> Tensor:
        return getattr(F, self._fn)(input, float(self.norm_type), self.kernel_size,
                                    self.stride, self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    """``(Σ xᵖ)^(1/p)`` over sliding windows of ``(N, C, L)``, p being ``norm_type``."""

    _fn = "lp_pool1d"


class LPPool2d(_LPPoolNd):
    """``(Σ xᵖ)^(1/p)`` over sliding windows of ``(N, C, H, W)``.

    Example:
        >>> nn.LPPool2d(2, 3, stride=2)(ember.randn(1, 3, 9, 9)).shape
        ember.Size([1, 3, 4, 4])
    """

    _fn = "lp_pool2d"


class LPPool3d(_LPPoolNd):
    """``(Σ xᵖ)^(1/p)`` over sliding windows of ``(N, C, D, H, W)``."""

    _fn = "lp_pool3d"


class _MaxUnpoolNd(Module):
    _fn = "max_unpool2d"
    _nd = 2

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0) -> None:
        super().__init__()
        self.kernel_size = self._tuple(kernel_size)
        self.stride = self._tuple(stride if stride is not None else kernel_size)
        self.padding = self._tuple(padding)

    def _tuple(self, value: Any) -> tuple[int, ...]:
        return (value,) * self._nd if isinstance(value, int) else tuple(value)

    def forward(self, input: Tensor, indices: Tensor, output_size: Any = None) -> Tensor:
        return getattr(F, self._fn)(input, indices, self.kernel_size, self.stride,
                                    self.padding, output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """Places each value of ``(N, C, L)`` at its index from ``MaxPool1d(return_indices=True)``,
    zeros elsewhere."""

    _fn, _nd = "max_unpool1d", 1


class MaxUnpool2d(_MaxUnpoolNd):
    """The partial inverse of ``MaxPool2d``: each value placed at its index from
    ``return_indices=True``, zeros elsewhere; ``output_size`` resolves ambiguous sizes.

    Example:
        >>> pool, unpool = nn.MaxPool2d(2, return_indices=True), nn.MaxUnpool2d(2)
        >>> unpool(*pool(ember.randn(1, 3, 5, 5)), output_size=(5, 5)).shape
        ember.Size([1, 3, 5, 5])
    """

    _fn, _nd = "max_unpool2d", 2


class MaxUnpool3d(_MaxUnpoolNd):
    """The partial inverse of ``MaxPool3d`` for ``(N, C, D, H, W)``."""

    _fn, _nd = "max_unpool3d", 3


class _FractionalMaxPool(Module):
    _fn = "fractional_max_pool2d"
    _nd = 2

    def __init__(self, kernel_size: Any, output_size: Any = None, output_ratio: Any = None,
                 return_indices: bool = False, _random_samples: Tensor | None = None) -> None:
        super().__init__()
        name = type(self).__name__
        if output_size is None and output_ratio is None:
            raise ArgumentError(f"{name} requires specifying either an output size, or a "
                                f"pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ArgumentError(f"{name}: only one of output_size and output_ratio may be "
                                f"specified")
        self.kernel_size = self._tuple(kernel_size)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = None if output_size is None else self._tuple(output_size)
        self.output_ratio = None if output_ratio is None else self._tuple(output_ratio)
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ArgumentError(f"{name}: output_ratio must be between 0 and 1 (got "
                                f"{output_ratio})")

    def _tuple(self, value: Any) -> tuple:
        return (value,) * self._nd if isinstance(value, int | float) else tuple(value)

    def forward(self, input: Tensor) -> Any:
        return getattr(F, self._fn)(input, self.kernel_size, self.output_size,
                                    self.output_ratio, self.return_indices,
                                    _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPool):
    """Fractional max pooling of ``(N, C, H, W)`` to ``output_size`` or ``output_ratio`` ×
    the input size, over ``kernel_size`` windows at pseudo-random offsets (fresh each call,
    unless ``_random_samples`` fixes them); see :func:`~ember.nn.functional.fractional_max_pool2d`.

    Example:
        >>> nn.FractionalMaxPool2d(3, output_ratio=0.5)(ember.randn(1, 2, 10, 8)).shape
        ember.Size([1, 2, 5, 4])
    """


class FractionalMaxPool3d(_FractionalMaxPool):
    """Fractional max pooling of ``(N, C, T, H, W)``; see :class:`FractionalMaxPool2d`."""

    _fn, _nd = "fractional_max_pool3d", 3
