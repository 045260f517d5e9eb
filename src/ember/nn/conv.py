"""Convolution layers: ``Conv1d/2d/3d`` and ``ConvTranspose1d/2d/3d`` with PyTorch's
arguments, parameter shapes and default initialisation (``kaiming_uniform_(a=√5)``)."""

from __future__ import annotations

import operator
from typing import Any

from ember.errors import ArgumentError
from ember.nn import functional as F
from ember.nn.linear import _empty, reset_weight_and_bias
from ember.nn.module import Module
from ember.tensor import Tensor

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
           "ConvTranspose3d"]


def _tuple(value: Any, n: int) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * n


class _ConvNd(Module):
    """Shared state of the convolutions: ``weight`` ``(out, in/groups, *k)`` (transposed:
    ``(in, out/groups, *k)``), ``bias`` ``(out,)``, and the repr."""

    _n = 2
    _transposed = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None,
                 output_padding: Any = 0) -> None:
        super().__init__()
        n = self._n
        groups = operator.index(groups)  # (a NumPy integer too, as PyTorch)
        if groups <= 0:
            raise ArgumentError("groups must be a positive integer")
        if in_channels % groups or out_channels % groups:
            raise ArgumentError(f"in_channels ({in_channels}) and out_channels ({out_channels}) "
                                f"must be divisible by groups ({groups})")
        if padding_mode not in ("zeros", "reflect", "replicate", "circular"):
            raise ArgumentError(f"padding_mode must be one of 'zeros', 'reflect', 'replicate', "
                                f"'circular', got {padding_mode!r}")
        for name, value in (("kernel_size", kernel_size), ("stride", stride),
                            ("padding", padding), ("dilation", dilation),
                            ("output_padding", output_padding)):
            if isinstance(value, (tuple, list)) and len(value) not in \
                    ((n,) if name == "kernel_size" else (1, n)):
                raise ArgumentError(f"{type(self).__name__}: {name} must be an int or a tuple of "
                                    f"{n} ints, got {tuple(value)}")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ArgumentError(f"Invalid padding string {padding!r}, should be one of "
                                    "{'valid', 'same'}")
            if padding == "same" and any(s != 1 for s in _tuple(stride, n)):
                raise ArgumentError("padding='same' is not supported for strided convolutions")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride = _tuple(kernel_size, n), _tuple(stride, n)
        self.padding = padding if isinstance(padding, str) else _tuple(padding, n)
        self.dilation, self.groups = _tuple(dilation, n), groups
        self.output_padding = _tuple(output_padding, n)
        self.transposed, self.padding_mode = self._transposed, padding_mode
        # PyTorch's attribute (which third-party code reads): the padding as F.pad takes it,
        # last dim first, (left, right) each; a list for 'same'/'valid', else a tuple
        if isinstance(self.padding, str):
            totals = [d * (k - 1) if self.padding == "same" else 0
                      for d, k in zip(self.dilation, self.kernel_size, strict=True)]
            self._reversed_padding_repeated_twice = [a for t in reversed(totals)
                                                     for a in (t // 2, t - t // 2)]
        else:
            self._reversed_padding_repeated_twice = tuple(p for p in reversed(self.padding)
                                                          for _ in range(2))
        shape = (in_channels, out_channels // groups) if self._transposed else \
            (out_channels, in_channels // groups)
        self.weight = _empty(*shape, *self.kernel_size, dtype=dtype, device=device)
        if bias:
            self.bias = _empty(out_channels, dtype=dtype, device=device)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        reset_weight_and_bias(self.weight, self.bias)

    def extra_repr(self) -> str:
        n = self._n
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    _fn = "conv2d"

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype)

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        """The convolution with this layer's geometry and the given ``weight`` and ``bias``
        (PyTorch's hook, which subclasses that transform the weight call)."""
        fn = getattr(F, self._fn)
        if self.padding_mode != "zeros":
            pad = self._reversed_padding_repeated_twice
            if len(pad) != 2 * self._n:  # (padding=(1,): F.pad would pad the last dim only)
                raise NotImplementedError(
                    f"{type(self).__name__}: padding={self.padding} names {len(pad) // 2} of "
                    f"the {self._n} spatial dimensions, and padding_mode={self.padding_mode!r} "
                    f"needs all (as PyTorch's). Hint: pass padding={self.padding * self._n} "
                    "(or an int)")
            padded = F.pad(input, pad, mode=self.padding_mode)
            return fn(padded, weight, bias, self.stride, 0, self.dilation, self.groups)
        return fn(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """1-D convolution over ``(N, C_in, L)``.

    Example:
        >>> nn.Conv1d(16, 33, 3, stride=2)(ember.randn(20, 16, 50)).shape
        ember.Size([20, 33, 24])
    """

    _n, _fn = 1, "conv1d"


class Conv2d(_Conv):
    """2-D convolution over ``(N, C_in, H, W)``.

    Example:
        >>> nn.Conv2d(1, 8, 3, padding=1)(ember.randn(2, 1, 28, 28)).shape
        ember.Size([2, 8, 28, 28])
    """

    _n, _fn = 2, "conv2d"


class Conv3d(_Conv):
    """3-D convolution over ``(N, C_in, D, H, W)``."""

    _n, _fn = 3, "conv3d"


class _ConvTransposeNd(_ConvNd):
    _transposed = True
    _fn = "conv_transpose2d"

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, output_padding: Any = 0, groups: int = 1, bias: bool = True,
                 dilation: Any = 1, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None) -> None:
        if padding_mode != "zeros":
            raise ArgumentError(f'Only "zeros" padding mode is supported for '
                                f"{type(self).__name__}")
        if isinstance(padding, str):
            raise ArgumentError(f"{type(self).__name__} does not take string padding")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype, output_padding)

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:
        output_padding = self._output_padding(input, output_size, self.stride, self.padding,
                                              self.kernel_size, self._n, self.dilation)
        return getattr(F, self._fn)(input, self.weight, self.bias, self.stride, self.padding,
                                    output_padding, self.groups, self.dilation)

    def _output_padding(self, input: Tensor, output_size: Any, stride: Any, padding: Any,
                        kernel_size: Any, num_spatial_dims: int, dilation: Any = None) -> Any:
        """The ``output_padding`` that gives ``output_size`` (``self.output_padding`` when
        None) with the given geometry; PyTorch's signature, which subclasses call."""
        if output_size is None:
            return self.output_padding
        n = num_spatial_dims
        output_size = tuple(output_size)
        if len(output_size) not in (n, input.ndim):
            raise ArgumentError(f"{type(self).__name__}: for a {input.ndim}-D input, output_size "
                                f"must have {n} or {input.ndim} elements (got {output_size})")
        output_size = output_size[-n:]
        spatial = input.shape[-n:]
        dilation = (1,) * n if dilation is None else dilation
        pads = []
        for i in range(n):
            least = ((spatial[i] - 1) * stride[i] - 2 * padding[i]
                     + dilation[i] * (kernel_size[i] - 1) + 1)
            extra = output_size[i] - least
            if not 0 <= extra < max(stride[i], dilation[i]):
                raise ArgumentError(f"requested an output size of {output_size}, but valid sizes "
                                    f"for dim {i} range from {least} to "
                                    f"{least + max(stride[i], dilation[i]) - 1}")
            pads.append(extra)
        return pads


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution (the gradient of ``conv1d`` with respect to its input)."""

    _n, _fn = 1, "conv_transpose1d"


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution; ``forward(x, output_size=…)`` picks ``output_padding``.

    Example:
        >>> up = nn.ConvTranspose2d(16, 8, 3, stride=2, padding=1)
        >>> up(ember.randn(1, 16, 12, 12), output_size=(1, 8, 24, 24)).shape
        ember.Size([1, 8, 24, 24])
    """

    _n, _fn = 2, "conv_transpose2d"


class ConvTranspose3d(_ConvTransposeNd):
    """3-D transposed convolution."""

    _n, _fn = 3, "conv_transpose3d"
