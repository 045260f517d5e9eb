"""Lazy layers, as in PyTorch: ``LazyLinear``, ``LazyConv{1,2,3}d``,
``LazyConvTranspose{1,2,3}d``, ``LazyBatchNorm{1,2,3}d`` and ``LazyInstanceNorm{1,2,3}d`` take
their input size from the first input. Until then their parameters are
:class:`UninitializedParameter` objects (their running statistics
:class:`~ember.nn.UninitializedBuffer` objects); the first call materializes the parameters in
place (so an optimizer built before it keeps working) and the module becomes the ordinary
layer (``LazyLinear`` -> ``Linear``). Loading a state dict before the first call materializes
them with the checkpoint's shapes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import ember
from ember.errors import ShapeError
from ember.nn.conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ember.nn.linear import Linear
from ember.nn.module import Module
from ember.nn.normalization import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    _BatchNorm,
    _InstanceNorm,
)
from ember.nn.parameter import UninitializedBuffer, UninitializedParameter, is_lazy
from ember.random import fork_rng
from ember.tensor import Tensor

__all__ = ["UninitializedParameter", "LazyModuleMixin", "LazyLinear", "LazyConv1d",
           "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
           "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
           "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"]

def _is_placeholder(value: Tensor) -> bool:
    """Whether a state-dict entry is what a lazy module saves before its first call."""
    return is_lazy(value) or tuple(value.shape) == (0,)


def _materialize(module: LazyModuleMixin, input: Tensor) -> None:
    """Builds the real layer for ``input``'s size and takes over its initial parameter values
    (into the parameter objects), its running statistics and its size attribute. What was set
    on the module before stays: attributes (``momentum``, ...), a statistic set to None, a
    parameter loaded or materialized before (then the real layer is built under a forked RNG,
    only for its shapes, so that the weights do not depend on an earlier
    ``initialize_parameters``)."""
    with fork_rng(enabled=not module.has_uninitialized_params()):
        real = module.cls_to_become(module._infer_size(input), *module._lazy_args[0],
                                    **module._lazy_args[1])
    for name, value in real._parameters.items():
        mine = module._parameters.get(name)
        if isinstance(mine, UninitializedParameter):
            mine.materialize(tuple(value.shape))
            with ember.no_grad():
                mine.copy_(value)
        elif mine is not None and value is not None and tuple(mine.shape) != tuple(value.shape):
            raise ShapeError(f"{type(module).__name__}: the parameter '{name}' (loaded or "
                             f"initialized before) has shape {tuple(mine.shape)}, but the "
                             f"input {tuple(input.shape)} needs {tuple(value.shape)}")
    for name in module._lazy_buffers:
        mine = module._buffers.get(name)
        if mine is not None:  # (in the dtype and device of a .to() before this call)
            module._buffers[name] = real._buffers[name].to(dtype=mine.dtype, device=mine.device)
    module._lazy_buffers.clear()
    for key, value in real.__dict__.items():
        if key == module._size_attr or key not in module.__dict__:
            module.__dict__[key] = value


def _initialize(module: LazyModuleMixin, args: tuple) -> None:
    """The forward pre-hook of a lazy module: materializes it for the first input's size
    and makes it the real layer."""
    if not args or not isinstance(args[0], Tensor):
        raise TypeError(f"{type(module).__name__}: the first call needs a tensor input to "
                        "infer the layer's size from")
    _materialize(module, args[0])
    module._initialize_hook.remove()
    for key in ("_lazy_args", "_lazy_buffers", "_initialize_hook"):
        del module.__dict__[key]
    module.__class__ = module.cls_to_become


class LazyModuleMixin(Module):
    """The shared machinery of lazy layers: a subclass names the layer it becomes
    (``cls_to_become``, whose first constructor argument is the inferred size) and how to
    read that size from an input (``_infer_size``)."""

    cls_to_become: type[Module]
    _size_attr: str  # the attribute of ``cls_to_become`` read from the first input

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        Module.__init__(self)  # (not the layer's own: its sizes come later)
        with fork_rng():  # (the probe's random init draws nothing, as PyTorch's lazy layers)
            probe = self.cls_to_become(kwargs.get("groups", 1), *args, **kwargs)
        for name, p in probe._parameters.items():
            self._parameters[name] = None if p is None else \
                UninitializedParameter(p.requires_grad, p.device, p.dtype)
        lazy = set()
        for name, b in probe._buffers.items():
            if b is not None and b.dtype.is_floating_point:  # statistics: sized later
                lazy.add(name)
                b = UninitializedBuffer(device=b.device, dtype=b.dtype)
            self._buffers[name] = b
        self._non_persistent_buffers_set.update(probe._non_persistent_buffers_set)
        # the layer's attributes (out_features, kernel_size, …) with the size still 0, as in
        # PyTorch, so that they can be read (and the module printed) before the first call
        for key, value in probe.__dict__.items():
            self.__dict__.setdefault(key, value)
        self.__dict__[self._size_attr] = 0
        object.__setattr__(self, "_lazy_args", (args, kwargs))
        object.__setattr__(self, "_lazy_buffers", lazy)
        object.__setattr__(self, "_initialize_hook", self.register_forward_pre_hook(_initialize))

    def _infer_size(self, input: Tensor) -> int:
        raise NotImplementedError

    def has_uninitialized_params(self) -> bool:
        """Whether a parameter or buffer still waits for its shape."""
        return any(self._buffers.get(name) is not None for name in self._lazy_buffers) or \
            any(isinstance(p, UninitializedParameter) for p in self._parameters.values())

    def initialize_parameters(self, input: Tensor) -> None:
        """Materializes the parameters and buffers for ``input``'s size, as the first call
        would (a no-op once they are); the module becomes the real layer at its first call.

        Example:
            >>> m = nn.LazyLinear(3)
            >>> m.initialize_parameters(ember.ones(2, 5)); tuple(m.weight.shape)
            (3, 5)
        """
        if self.has_uninitialized_params():
            _materialize(self, input)

    def _sized(self) -> bool:
        """Whether the shapes are known from an input (a loaded state dict does not set the
        size attribute, so, as in PyTorch, resetting leaves loaded values alone)."""
        return not self.has_uninitialized_params() and getattr(self, self._size_attr) != 0

    def reset_parameters(self) -> None:
        """The real layer's ``reset_parameters`` once the shapes are known from an input;
        before, a no-op."""
        if self._sized():
            self.cls_to_become.reset_parameters(self)

    def _load_from_state_dict(self, state_dict: Mapping, prefix: str, local_metadata: dict,
                              strict: bool, missing_keys: list, unexpected_keys: list,
                              error_msgs: list) -> None:
        for name, p in self._parameters.items():
            value = state_dict.get(prefix + name)
            if isinstance(p, UninitializedParameter) and value is not None and \
                    not _is_placeholder(value):
                p.materialize(tuple(value.shape))
        for name in list(self._lazy_buffers):
            value = state_dict.get(prefix + name)
            if value is not None and not _is_placeholder(value):
                old = self._buffers[name]
                self._buffers[name] = ember.empty(*value.shape, dtype=old.dtype,
                                                  device=old.device)
                self._lazy_buffers.discard(name)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)

    def extra_repr(self) -> str:
        return self.cls_to_become.extra_repr(self)


class LazyLinear(LazyModuleMixin, Linear):
    """:class:`~ember.nn.Linear` with ``in_features`` from the first input's last dimension.

    Example:
        >>> m = nn.LazyLinear(3)
        >>> m(ember.randn(2, 5)).shape, type(m).__name__, tuple(m.weight.shape)
        (ember.Size([2, 3]), 'Linear', (3, 5))
    """

    cls_to_become = Linear
    _size_attr = "in_features"

    def __init__(self, out_features: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(out_features, bias=bias, device=device, dtype=dtype)

    def _infer_size(self, input: Tensor) -> int:
        return input.shape[-1]


class _LazyConvNd(LazyModuleMixin):
    """A convolution with ``in_channels`` from the first input (dimension 1, or 0 when
    unbatched)."""

    _size_attr = "in_channels"

    def __init__(self, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__(out_channels, kernel_size, stride=stride, padding=padding,
                         dilation=dilation, groups=groups, bias=bias, padding_mode=padding_mode,
                         device=device, dtype=dtype)

    def _infer_size(self, input: Tensor) -> int:
        batched = input.ndim == self.cls_to_become._n + 2
        return input.shape[1 if batched else 0]


class LazyConv1d(_LazyConvNd, Conv1d):
    """:class:`~ember.nn.Conv1d` with ``in_channels`` from the first input."""

    cls_to_become = Conv1d


class LazyConv2d(_LazyConvNd, Conv2d):
    """:class:`~ember.nn.Conv2d` with ``in_channels`` from the first input.

    Example:
        >>> m = nn.LazyConv2d(4, 3)
        >>> m(ember.randn(1, 2, 5, 5)).shape, m.in_channels
        (ember.Size([1, 4, 3, 3]), 2)
    """

    cls_to_become = Conv2d


class LazyConv3d(_LazyConvNd, Conv3d):
    """:class:`~ember.nn.Conv3d` with ``in_channels`` from the first input."""

    cls_to_become = Conv3d


class _LazyConvTransposeNd(_LazyConvNd):
    def __init__(self, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 output_padding: Any = 0, groups: int = 1, bias: bool = True,
                 dilation: Any = 1, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None) -> None:
        LazyModuleMixin.__init__(self, out_channels, kernel_size, stride=stride,
                                 padding=padding, output_padding=output_padding, groups=groups,
                                 bias=bias, dilation=dilation, padding_mode=padding_mode,
                                 device=device, dtype=dtype)


class LazyConvTranspose1d(_LazyConvTransposeNd, ConvTranspose1d):
    """:class:`~ember.nn.ConvTranspose1d` with ``in_channels`` from the first input."""

    cls_to_become = ConvTranspose1d


class LazyConvTranspose2d(_LazyConvTransposeNd, ConvTranspose2d):
    """:class:`~ember.nn.ConvTranspose2d` with ``in_channels`` from the first input."""

    cls_to_become = ConvTranspose2d


class LazyConvTranspose3d(_LazyConvTransposeNd, ConvTranspose3d):
    """:class:`~ember.nn.ConvTranspose3d` with ``in_channels`` from the first input."""

    cls_to_become = ConvTranspose3d


class _LazyNormBase(LazyModuleMixin):
    """A batch or instance norm with ``num_features`` from the first input's channel
    dimension (PyTorch's base of the lazy norms, under its name)."""

    _size_attr = "num_features"

    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__(eps=eps, momentum=momentum, affine=affine,
                         track_running_stats=track_running_stats, device=device, dtype=dtype,
                         bias=bias)

    def _infer_size(self, input: Tensor) -> int:
        unbatched = input.ndim == self.cls_to_become._dims[0] and \
            issubclass(self.cls_to_become, _InstanceNorm)
        return input.shape[0 if unbatched else 1]


class LazyBatchNorm1d(_LazyNormBase, _BatchNorm):
    """:class:`~ember.nn.BatchNorm1d` with ``num_features`` from the first input.

    Example:
        >>> m = nn.LazyBatchNorm1d()
        >>> _ = m(ember.randn(4, 3)); tuple(m.running_mean.shape)
        (3,)
    """

    cls_to_become = BatchNorm1d


class LazyBatchNorm2d(_LazyNormBase, _BatchNorm):
    """:class:`~ember.nn.BatchNorm2d` with ``num_features`` from the first input."""

    cls_to_become = BatchNorm2d


class LazyBatchNorm3d(_LazyNormBase, _BatchNorm):
    """:class:`~ember.nn.BatchNorm3d` with ``num_features`` from the first input."""

    cls_to_become = BatchNorm3d


class LazyInstanceNorm1d(_LazyNormBase, _InstanceNorm):
    """:class:`~ember.nn.InstanceNorm1d` with ``num_features`` from the first input's
    channels (dimension 1, or 0 when unbatched). As in PyTorch, ``affine`` and
    ``track_running_stats`` default to True here, unlike ``InstanceNorm1d``.

    Example:
        >>> m = nn.LazyInstanceNorm1d()
        >>> _ = m(ember.randn(2, 3, 5)); type(m).__name__, tuple(m.weight.shape)
        ('InstanceNorm1d', (3,))
    """

    cls_to_become = InstanceNorm1d


class LazyInstanceNorm2d(_LazyNormBase, _InstanceNorm):
    """:class:`~ember.nn.InstanceNorm2d` with ``num_features`` from the first input."""

    cls_to_become = InstanceNorm2d


class LazyInstanceNorm3d(_LazyNormBase, _InstanceNorm):
    """:class:`~ember.nn.InstanceNorm3d` with ``num_features`` from the first input."""

    cls_to_become = InstanceNorm3d
