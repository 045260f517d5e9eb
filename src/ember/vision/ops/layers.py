"""Building blocks of torchvision's models under its names: stochastic depth, conv-norm-
activation stacks, squeeze-and-excitation, an MLP, a frozen batch norm and a permutation."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import ember
from ember import nn
from ember.errors import ArgumentError
from ember.tensor import Tensor

__all__ = ["Conv2dNormActivation", "Conv3dNormActivation", "FrozenBatchNorm2d", "MLP",
           "Permute", "SqueezeExcitation", "StochasticDepth", "stochastic_depth"]


def stochastic_depth(input: Tensor, p: float, mode: str, training: bool = True) -> Tensor:
    """Drops whole residual branches with probability ``p`` (``mode="row"``: each sample of
    the batch on its own; ``"batch"``: all or none), scaling survivors by ``1 / (1 - p)``.

    Example:
        >>> stochastic_depth(ember.ones(2, 3), 0.5, "row", training=False)
        tensor([[1., 1., 1.],
                [1., 1., 1.]])
    """
    if not 0.0 <= p <= 1.0:
        raise ArgumentError(f"stochastic_depth: drop probability has to be between 0 and 1, "
                            f"but got {p}")
    if mode not in ("batch", "row"):
        raise ArgumentError(f"stochastic_depth: mode has to be either 'batch' or 'row', but got "
                            f"{mode!r}")
    if not training or p == 0.0:
        return input
    keep = 1.0 - p
    shape = [input.shape[0]] + [1] * (input.ndim - 1) if mode == "row" else [1] * input.ndim
    noise = ember.empty(shape, dtype=input.dtype).bernoulli_(keep)
    if keep > 0.0:
        noise = noise / keep
    return input * noise


class StochasticDepth(nn.Module):
    """:func:`stochastic_depth` as a layer (active in training mode).

    Example:
        >>> StochasticDepth(0.2, "row").eval()(ember.ones(2)).tolist()
        [1.0, 1.0]
    """

    def __init__(self, p: float, mode: str) -> None:
        super().__init__()
        self.p, self.mode = p, mode

    def forward(self, input: Tensor) -> Tensor:
        return stochastic_depth(input, self.p, self.mode, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}, mode={self.mode}"


class _BatchNormOfTheConv:
    """The default ``norm_layer``: the batch norm matching the convolution (``None`` means no
    norm)."""

    def __repr__(self) -> str:
        return "BatchNorm2d/BatchNorm3d"


_BATCH_NORM = _BatchNormOfTheConv()


class _ConvNormActivation(nn.Sequential):
    """Convolution, then an optional norm layer, then an optional activation."""

    conv: type[nn.Module]
    batch_norm: type[nn.Module]

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int | Sequence[int] = 3,
                 stride: int | Sequence[int] = 1, padding: int | Sequence[int] | str | None = None,
                 groups: int = 1,
                 norm_layer: Callable[..., nn.Module] | _BatchNormOfTheConv | None = _BATCH_NORM,
                 activation_layer: Callable[..., nn.Module] | None = nn.ReLU,
                 dilation: int | Sequence[int] = 1, inplace: bool | None = True,
                 bias: bool | None = None) -> None:
        if norm_layer is _BATCH_NORM:
            norm_layer = self.batch_norm
        if padding is None:  # "same" for odd kernels: (k - 1) / 2 * dilation per dimension
            ks = (kernel_size,) if isinstance(kernel_size, int) else tuple(kernel_size)
            ds = (dilation,) if isinstance(dilation, int) else tuple(dilation)
            if len(ks) == 1 and len(ds) == 1:
                padding = (ks[0] - 1) // 2 * ds[0]
            else:
                n = max(len(ks), len(ds))
                ks, ds = ks * (n // len(ks)), ds * (n // len(ds))
                padding = tuple((k - 1) // 2 * d for k, d in zip(ks, ds))
        if bias is None:
            bias = norm_layer is None
        layers: list[nn.Module] = [self.conv(in_channels, out_channels, kernel_size, stride,
                                             padding, dilation=dilation, groups=groups,
                                             bias=bias)]
        if norm_layer is not None:
            layers.append(norm_layer(out_channels))
        if activation_layer is not None:
            layers.append(activation_layer() if inplace is None
                          else activation_layer(inplace=inplace))
        super().__init__(*layers)
        self.out_channels = out_channels


class Conv2dNormActivation(_ConvNormActivation):
    """``Conv2d`` → norm (default ``nn.BatchNorm2d``, as torchvision; ``None`` for none) →
    activation (default ``ReLU``), with "same" padding for odd kernels and no conv bias when
    normalized.

    Example:
        >>> block = Conv2dNormActivation(3, 8, stride=2)
        >>> [type(m).__name__ for m in block], block(ember.randn(1, 3, 5, 5)).shape
        (['Conv2d', 'BatchNorm2d', 'ReLU'], ember.Size([1, 8, 3, 3]))
    """

    conv, batch_norm = nn.Conv2d, nn.BatchNorm2d


class Conv3dNormActivation(_ConvNormActivation):
    """:class:`Conv2dNormActivation` with ``Conv3d`` (and ``nn.BatchNorm3d`` by default).

    Example:
        >>> Conv3dNormActivation(1, 2, 3)(ember.randn(2, 1, 4, 4, 4)).shape
        ember.Size([2, 2, 4, 4, 4])
    """

    conv, batch_norm = nn.Conv3d, nn.BatchNorm3d


class SqueezeExcitation(nn.Module):
    """Squeeze-and-excitation: channel weights from the globally pooled input
    (``fc1`` → ``activation`` → ``fc2`` → ``scale_activation``), multiplied in.

    Example:
        >>> SqueezeExcitation(8, 2)(ember.randn(1, 8, 4, 4)).shape
        ember.Size([1, 8, 4, 4])
    """

    def __init__(self, input_channels: int, squeeze_channels: int,
                 activation: Callable[..., nn.Module] = nn.ReLU,
                 scale_activation: Callable[..., nn.Module] = nn.Sigmoid) -> None:
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(input_channels, squeeze_channels, 1)
        self.fc2 = nn.Conv2d(squeeze_channels, input_channels, 1)
        self.activation = activation()
        self.scale_activation = scale_activation()

    def forward(self, input: Tensor) -> Tensor:
        scale = self.fc2(self.activation(self.fc1(self.avgpool(input))))
        return self.scale_activation(scale) * input


class MLP(nn.Sequential):
    """Linear layers of ``hidden_channels`` (the last one the output), each but the last
    followed by an optional norm, the activation and dropout; dropout after the last too.

    Example:
        >>> MLP(4, [8, 2])(ember.randn(3, 4)).shape
        ember.Size([3, 2])
    """

    def __init__(self, in_channels: int, hidden_channels: list[int],
                 norm_layer: Callable[..., nn.Module] | None = None,
                 activation_layer: Callable[..., nn.Module] | None = nn.ReLU,
                 inplace: bool | None = None, bias: bool = True, dropout: float = 0.0) -> None:
        extra = {} if inplace is None else {"inplace": inplace}
        layers: list[nn.Module] = []
        width = in_channels
        for hidden in hidden_channels[:-1]:
            layers.append(nn.Linear(width, hidden, bias=bias))
            if norm_layer is not None:
                layers.append(norm_layer(hidden))
            if activation_layer is not None:
                layers.append(activation_layer(**extra))
            layers.append(nn.Dropout(dropout, **extra))
            width = hidden
        layers.append(nn.Linear(width, hidden_channels[-1], bias=bias))
        layers.append(nn.Dropout(dropout, **extra))
        super().__init__(*layers)


class FrozenBatchNorm2d(nn.Module):
    """``BatchNorm2d`` with fixed statistics and affine parameters (all buffers), as detection
    backbones use it: ``(x - running_mean) / sqrt(running_var + eps) * weight + bias``.

    Example:
        >>> FrozenBatchNorm2d(3)(ember.ones(1, 3, 2, 2)).shape
        ember.Size([1, 3, 2, 2])
    """

    def __init__(self, num_features: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.register_buffer("weight", ember.ones(num_features))
        self.register_buffer("bias", ember.zeros(num_features))
        self.register_buffer("running_mean", ember.zeros(num_features))
        self.register_buffer("running_var", ember.ones(num_features))

    def _load_from_state_dict(self, state_dict: dict, prefix: str, *args: object,
                              **kwargs: object) -> None:
        skip = prefix + "num_batches_tracked"  # a BatchNorm2d's state loads (the user's dict
        if skip in state_dict:                  # is left as it is)
            state_dict = {k: v for k, v in state_dict.items() if k != skip}
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def forward(self, x: Tensor) -> Tensor:
        scale = self.weight * (self.running_var + self.eps).rsqrt()
        shift = self.bias - self.running_mean * scale
        return x * scale.reshape(1, -1, 1, 1) + shift.reshape(1, -1, 1, 1)

    def extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, eps={self.eps}"


class Permute(nn.Module):
    """``x.permute(*dims)`` as a layer.

    Example:
        >>> Permute([0, 2, 1])(ember.zeros(1, 2, 3)).shape
        ember.Size([1, 3, 2])
    """

    def __init__(self, dims: list[int]) -> None:
        super().__init__()
        self.dims = dims

    def forward(self, x: Tensor) -> Tensor:
        return x.permute(*self.dims)
