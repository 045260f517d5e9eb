"""Normalisation layers: ``BatchNorm1d/2d/3d`` (running statistics as buffers),
``LayerNorm``, ``GroupNorm``, ``RMSNorm``, ``InstanceNorm1d/2d/3d``, and the cross-channel
``LocalResponseNorm`` and ``CrossMapLRN2d``."""

from __future__ import annotations

import math
import numbers
import operator
import warnings
from collections import ChainMap
from collections.abc import Mapping
from typing import Any

import ember
from ember.errors import ArgumentError
from ember.nn import functional as F
from ember.nn import init
from ember.nn.module import Module
from ember.nn.parameter import Parameter
from ember.ops.local_response_norm import cross_map_lrn2d
from ember.ops.normalization import _count_batch
from ember.tensor import Tensor

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LayerNorm", "GroupNorm", "RMSNorm",
           "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LocalResponseNorm",
           "CrossMapLRN2d"]


def _shape(normalized_shape: Any) -> tuple[int, ...]:
    """``normalized_shape`` as a tuple; an integer (a NumPy one too, as PyTorch's
    ``numbers.Integral``) is the one-dimensional shape."""
    if isinstance(normalized_shape, numbers.Integral):
        return (operator.index(normalized_shape),)
    return tuple(normalized_shape)


def _affine_parameters(module: Module, n: int, affine: bool, bias: bool, kw: dict) -> None:
    """Registers ``weight`` (ones) and ``bias`` (zeros) of shape ``(n,)``, or ``None``s."""
    if affine:
        module.weight = Parameter(ember.ones(n, **kw))
    else:
        module.register_parameter("weight", None)
    if affine and bias:
        module.bias = Parameter(ember.zeros(n, **kw))
    else:
        module.register_parameter("bias", None)


def _reset_affine(module: Module) -> None:
    """Sets ``weight`` (where there is one) to ones and ``bias`` to zeros."""
    if module.weight is not None:
        init.ones_(module.weight)
    if getattr(module, "bias", None) is not None:
        init.zeros_(module.bias)


class _NormBase(Module):
    """Per-channel affine parameters and, with ``track_running_stats``, the buffers
    ``running_mean``, ``running_var`` and ``num_batches_tracked`` (PyTorch's names)."""

    _dims: tuple[int, ...] = (2, 3)
    _version = 2  # PyTorch's: its format since num_batches_tracked (PyTorch 0.4.1)

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device: Any = None,
                 dtype: Any = None, *, bias: bool = True) -> None:
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        kw = {"dtype": dtype, "device": device}
        _affine_parameters(self, num_features, affine, bias, kw)
        if track_running_stats:
            self.register_buffer("running_mean", ember.zeros(num_features, **kw))
            self.register_buffer("running_var", ember.ones(num_features, **kw))
            self.register_buffer("num_batches_tracked",
                                 ember.tensor(0, dtype=ember.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def _load_from_state_dict(self, state_dict: Mapping, prefix: str, local_metadata: dict,
                              strict: bool, missing_keys: list, unexpected_keys: list,
                              error_msgs: list) -> None:
        key = prefix + "num_batches_tracked"
        old = (local_metadata.get("version") or 1) < 2  # (a version 2 one must have it)
        if old and self.num_batches_tracked is not None and key not in state_dict:
            # checkpoints from before PyTorch 0.4.1 lack the counter; PyTorch loads them
            # (keeping the current count), and so do we
            state_dict = ChainMap({key: self.num_batches_tracked}, state_dict)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            init.zeros_(self.running_mean)
            init.ones_(self.running_var)
            with ember.no_grad():
                self.num_batches_tracked[...] = 0

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        _reset_affine(self)

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim not in self._dims:
            want = " or ".join(f"{d}D" for d in self._dims)
            raise ArgumentError(f"{type(self).__name__}: expected {want} input (got "
                                f"{input.ndim}D input of shape {tuple(input.shape)})")

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        factor = self._momentum_factor()
        keep = not self.training or self.track_running_stats
        mean, var = (self.running_mean, self.running_var) if keep else (None, None)
        return F.batch_norm(input, mean, var, self.weight, self.bias,
                            self._uses_batch_statistics(), factor, self.eps)

    def _uses_batch_statistics(self) -> bool:
        return self.training or (self.running_mean is None and self.running_var is None)

    def _momentum_factor(self) -> float | Tensor:
        """The weight of this batch in the running statistics; in training, counts the batch
        in ``num_batches_tracked``."""
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            _count_batch(self.num_batches_tracked)
            if self.momentum is None:  # cumulative moving average, with ops (so that a
                # compiled step computes 1 / count on every call, as eager does)
                count = self.num_batches_tracked.to(
                    ember.float64 if getattr(self.running_mean, "dtype", None) is ember.float64
                    else ember.float32)
                factor = 1.0 / count
        return factor


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of ``(N, C)`` or ``(N, C, L)`` inputs.

    Example:
        >>> bn = nn.BatchNorm1d(4)
        >>> bn(ember.randn(8, 4)).shape, bn.num_batches_tracked.item()
        (ember.Size([8, 4]), 1)
    """

    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of ``(N, C, H, W)`` inputs over N, H, W per channel.

    Example:
        >>> nn.BatchNorm2d(3).eval()(ember.randn(2, 3, 4, 4)).shape
        ember.Size([2, 3, 4, 4])
    """

    _dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch normalisation of ``(N, C, D, H, W)`` inputs."""

    _dims = (5,)


class _InstanceNorm(_NormBase):
    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = False, track_running_stats: bool = False, device: Any = None,
                 dtype: Any = None, *, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        unbatched = input.ndim == self._dims[0]
        dim = 0 if unbatched else 1
        if input.shape[dim] != self.num_features:
            if self.affine:
                raise ArgumentError(f"expected input's size at dim={dim} to match num_features "
                                    f"({self.num_features}), but got: {input.shape[dim]}.")
            warnings.warn(f"input's size at dim={dim} does not match num_features. You can "
                          "silence this warning by not passing in num_features, which is not "
                          "used because affine=False", stacklevel=2)
        if unbatched:
            input = input.unsqueeze(0)
        use_input_stats = self.training or not self.track_running_stats
        if use_input_stats and math.prod(input.shape[2:]) == 1:
            raise ArgumentError("Expected more than 1 spatial element when training, got input "
                                f"size {input.shape}")
        out = F.instance_norm(input, self.running_mean, self.running_var, self.weight,
                              self.bias, use_input_stats,
                              0.0 if self.momentum is None else self.momentum, self.eps)
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    """Normalises each (sample, channel) of ``(N, C, L)`` over L."""

    _dims = (2, 3)


class InstanceNorm2d(_InstanceNorm):
    """Normalises each (sample, channel) plane of ``(N, C, H, W)``."""

    _dims = (3, 4)


class InstanceNorm3d(_InstanceNorm):
    """Normalises each (sample, channel) volume of ``(N, C, D, H, W)``."""

    _dims = (4, 5)


class LayerNorm(Module):
    """Normalises over the last ``len(normalized_shape)`` dims, with an elementwise affine
    (weight ones, bias zeros).

    Example:
        >>> nn.LayerNorm(10)(ember.randn(2, 5, 10)).shape
        ember.Size([2, 5, 10])
    """

    def __init__(self, normalized_shape: Any, eps: float = 1e-5,
                 elementwise_affine: bool = True, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        kw = {"dtype": dtype, "device": device}
        if elementwise_affine:
            self.weight = Parameter(ember.ones(*self.normalized_shape, **kw))
            if bias:
                self.bias = Parameter(ember.zeros(*self.normalized_shape, **kw))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def reset_parameters(self) -> None:
        _reset_affine(self)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class GroupNorm(Module):
    """Normalises ``num_groups`` groups of channels per sample, with a per-channel affine.

    Example:
        >>> nn.GroupNorm(2, 6)(ember.randn(4, 6, 5, 5)).shape
        ember.Size([4, 6, 5, 5])
    """

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__()
        if num_groups <= 0:
            raise ArgumentError(f"GroupNorm: num_groups must be positive, got {num_groups}")
        if num_channels % num_groups:
            raise ArgumentError(f"num_channels ({num_channels}) must be divisible by num_groups "
                                f"({num_groups})")
        self.num_groups, self.num_channels, self.eps, self.affine = (num_groups, num_channels,
                                                                      eps, affine)
        _affine_parameters(self, num_channels, affine, bias, {"dtype": dtype, "device": device})
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _reset_affine(self)

    def forward(self, input: Tensor) -> Tensor:
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(Module):
    """``x / rms(x) · weight`` over the last dims (``eps=None`` uses the dtype's epsilon)."""

    def __init__(self, normalized_shape: Any, eps: float | None = None,
                 elementwise_affine: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(ember.ones(*self.normalized_shape, dtype=dtype,
                                               device=device))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _reset_affine(self)

    def forward(self, x: Tensor) -> Tensor:  # (PyTorch's name for the argument: x)
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class LocalResponseNorm(Module):
    """Divides each element by ``(k + alpha · mean of x² over size neighbouring
    channels)^beta``, for (N, C, *) inputs.

    Example:
        >>> nn.LocalResponseNorm(2)(ember.randn(2, 4, 3, 3)).shape
        ember.Size([2, 4, 3, 3])
    """

    _fn = staticmethod(F.local_response_norm)

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75,
                 k: float = 1.0) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:
        return self._fn(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class CrossMapLRN2d(LocalResponseNorm):
    """The legacy form of local response normalization for (N, C, H, W) inputs:
    ``x · (k + alpha / size · Σ x²)^-beta`` over the channels within ``(size - 1) // 2``
    (see :func:`ember.ops.local_response_norm.cross_map_lrn2d` for how it differs from
    PyTorch's).

    Example:
        >>> nn.CrossMapLRN2d(3)(ember.randn(2, 4, 3, 3)).shape
        ember.Size([2, 4, 3, 3])
    """

    _fn = staticmethod(cross_map_lrn2d)

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75,
                 k: float = 1) -> None:
        super().__init__(size, alpha, beta, k)
