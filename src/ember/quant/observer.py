"""Observers: modules that watch the tensors flowing through them and choose quantization
parameters (``calculate_qparams``) from what they saw, as ``torch.ao.quantization.observer``.

The statistics and the parameter formulas are PyTorch's, in float32: per tensor or per
channel, affine (``scale = (max(max, 0) - min(min, 0)) / (quant_max - quant_min)``, ``zero_point
= quant_min - round(min / scale)``, clamped) or symmetric (``scale = max(-min, max) /
((quant_max - quant_min) / 2)``, zero point 0, or 128 for ``quint8``), the scale at least
``eps``.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ember.dtypes import float32
from ember.errors import ArgumentError, ArgumentTypeError, IndexOutOfRange, OpError
from ember.nn.module import Module
from ember.ops.creation import from_numpy, tensor
from ember.quant.qtypes import (
    QDType,
    QScheme,
    per_channel_affine,
    per_channel_affine_float_qparams,
    per_channel_symmetric,
    per_tensor_affine,
    per_tensor_symmetric,
    qint8,
    qint32,
    quint4x2,
    quint8,
)
from ember.tensor import Tensor

__all__ = ["ObserverBase", "UniformQuantizationObserverBase", "MinMaxObserver",
           "MovingAverageMinMaxObserver", "PerChannelMinMaxObserver",
           "MovingAveragePerChannelMinMaxObserver",
           "PlaceholderObserver", "default_observer", "default_weight_observer",
           "default_per_channel_weight_observer", "default_dynamic_quant_observer",
           "default_placeholder_observer", "default_float_qparams_observer",
           "default_float_qparams_observer_4bit",
           "calculate_qmin_qmax", "weight_observer_range_neg_127_to_127",
           "per_channel_weight_observer_range_neg_127_to_127"]

_F32 = np.float32
_EPS = float(np.finfo(np.float32).eps)


class _PartialWrapper:
    """A constructor with some arguments filled in: what ``Observer.with_args(...)`` returns
    (call it for an instance; ``with_args`` again adds more)."""

    def __init__(self, cls: type, **kwargs: Any) -> None:
        self.cls, self.kwargs = cls, kwargs

    def __call__(self, **kwargs: Any) -> Any:
        return self.cls(**{**self.kwargs, **kwargs})

    def with_args(self, **kwargs: Any) -> _PartialWrapper:
        return _PartialWrapper(self.cls, **{**self.kwargs, **kwargs})

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self.kwargs.items())
        return f"functools.partial({self.cls.__name__}, {shown})"


class _WithArgs:
    @classmethod
    def with_args(cls, **kwargs: Any) -> _PartialWrapper:
        """A factory of instances with these arguments (as PyTorch's ``with_args``).

        Example:
            >>> factory = MinMaxObserver.with_args(dtype=ember.qint8)
            >>> factory().dtype
            ember.qint8
        """
        return _PartialWrapper(cls, **kwargs)


def calculate_qmin_qmax(quant_min: int | None, quant_max: int | None, has_customized_qrange: bool,
                        dtype: QDType, reduce_range: bool) -> tuple[int, int]:
    """The integer range an observer quantizes to (PyTorch's rule: a custom range, halved
    with ``reduce_range``, or the dtype's, one bit narrower with ``reduce_range``)."""
    if has_customized_qrange:
        length = quant_max - quant_min + 1
        limit = 2**32 if dtype is qint32 else 256
        if dtype in (qint8, qint32) and not 0 < length <= limit:
            raise ArgumentError(f"quantization range [{quant_min}, {quant_max}] should be "
                                f"positive and not exceed the maximum bit range (={limit}).")
        return (quant_min // 2, quant_max // 2) if reduce_range else (quant_min, quant_max)
    if dtype is qint32:
        return -2**31, 2**31 - 1
    low, high = dtype.min, dtype.max
    return (low // 2, high // 2) if reduce_range else (low, high)


def refuse_other_kwargs(owner: Any, kwargs: dict[str, Any],
                        allowed: tuple[str, ...] = ("factory_kwargs",)) -> None:
    """An observer's keyword arguments it has no use for (a misspelled one, another
    observer's) are refused, as PyTorch's ``ObserverBase.__init__`` refuses them."""
    other = sorted(set(kwargs) - set(allowed))
    if other:
        raise ArgumentTypeError(f"{type(owner).__name__}: unexpected keyword argument(s) "
                                f"{', '.join(map(repr, other))}")


class ObserverBase(_WithArgs, Module):
    """The base of observers: ``forward`` records statistics and returns its input."""

    def __init__(self, dtype: QDType = quint8, is_dynamic: bool = False) -> None:
        super().__init__()
        self.dtype, self.is_dynamic = dtype, is_dynamic

    def calculate_qparams(self) -> tuple[Tensor, Tensor]:
        raise NotImplementedError


class UniformQuantizationObserverBase(ObserverBase):
    """The base of the observers that map a range uniformly onto integers (min/max,
    per-channel and histogram ones), with PyTorch's ``_calculate_qparams``."""

    def __init__(self, dtype: QDType = quint8, qscheme: QScheme = per_tensor_affine,
                 reduce_range: bool = False, quant_min: int | None = None,
                 quant_max: int | None = None, eps: float = _EPS, is_dynamic: bool = False,
                 **kwargs: Any) -> None:
        refuse_other_kwargs(self, kwargs)
        super().__init__(dtype, is_dynamic)
        if dtype not in (qint8, quint8, qint32, quint4x2):
            raise ArgumentError(f"{type(self).__name__}: dtype must be ember.qint8, ember.quint8, "
                                f"ember.qint32 or ember.quint4x2, got {dtype!r}")
        if not isinstance(qscheme, QScheme):
            raise ArgumentError(f"{type(self).__name__}: unknown qscheme {qscheme!r}")
        self.qscheme, self.reduce_range = qscheme, reduce_range
        self.register_buffer("eps", tensor([eps], dtype="float32"))
        self.has_customized_qrange = quant_min is not None and quant_max is not None
        if self.has_customized_qrange and not quant_min <= 0 <= quant_max:
            raise ArgumentError(f"{type(self).__name__}: the range [{quant_min}, {quant_max}] "
                                "must include 0")
        if self.has_customized_qrange and quant_min == quant_max:  # (a scale of 0 / 0)
            raise ArgumentError(f"{type(self).__name__}: the range [{quant_min}, {quant_max}] "
                                "holds one integer; quant_min must be strictly less than "
                                "quant_max")
        self.quant_min, self.quant_max = calculate_qmin_qmax(
            quant_min, quant_max, self.has_customized_qrange, dtype, reduce_range)

    def forward(self, x_orig: Tensor) -> Tensor:
        if x_orig.numel():
            self._record(*self._update(*self._extremes(x_orig)))
        return x_orig

    def _extremes(self, x_orig: Tensor) -> tuple[Any, Any]:
        """The (non-empty) input's minimum and maximum (per channel), float32."""
        raise NotImplementedError

    def _update(self, low: Any, high: Any) -> tuple[Any, Any]:
        """The running range after one more input's ``[low, high]``."""
        raise NotImplementedError

    def _record(self, low: Any, high: Any) -> None:
        """Keeps ``[low, high]`` as the running range (``min_val``, ``max_val``)."""
        self.min_val = from_numpy(np.asarray(low, _F32))
        self.max_val = from_numpy(np.asarray(high, _F32))

    def _calculate_qparams(self, min_val: np.ndarray, max_val: np.ndarray
                           ) -> tuple[Tensor, Tensor]:
        if not _valid(min_val, max_val):
            return tensor([1.0]), tensor([0])
        qmin, qmax = self.quant_min, self.quant_max
        min_neg = np.minimum(min_val, _F32(0))
        max_pos = np.maximum(max_val, _F32(0))
        eps = self.eps.numpy()[0]
        if self.qscheme.symmetric:
            max_pos = np.maximum(-min_neg, max_pos)
            scale = np.maximum(max_pos / _F32((qmax - qmin) / 2), eps)
            middle = (qmin + qmax) // 2 if self.has_customized_qrange else 128
            zero_point = np.full(scale.shape, middle if self.dtype is quint8 else 0, np.int64)
        elif self.qscheme is per_channel_affine_float_qparams:
            scale = (max_val - min_val) / _F32(qmax - qmin)
            scale = np.where(scale > eps, scale, _F32(1))
            zero_point = -1 * min_val / scale
        else:
            scale = np.maximum((max_pos - min_neg) / _F32(qmax - qmin), eps)
            zero_point = qmin - np.rint(min_neg / scale).astype(np.int32)
            zero_point = np.clip(zero_point, qmin, qmax).astype(np.int32)
        return from_numpy(np.atleast_1d(scale).astype(_F32)), from_numpy(
            np.atleast_1d(zero_point))

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}"


def _valid(min_val: np.ndarray, max_val: np.ndarray) -> bool:
    if min_val.size == 0 or (min_val.ndim == 0 and min_val == np.inf and max_val == -np.inf):
        warnings.warn("must run observer before calling calculate_qparams. Returning default "
                      "values.", stacklevel=3)
        return False
    if np.any(min_val > max_val):
        raise ArgumentError(f"min {min_val} should be less than max {max_val}")
    return True


def _refuse_reduced_symmetric_quint8(qscheme: QScheme, reduce_range: bool,
                                     dtype: QDType) -> None:
    """PyTorch's min/max observers (per tensor and per channel, not the histogram one) do not
    halve a symmetric ``quint8`` range."""
    if qscheme.symmetric and reduce_range and dtype is quint8:
        raise NotImplementedError("Cannot reduce range for symmetric quantization for quint8")


class MinMaxObserver(UniformQuantizationObserverBase):
    """Quantization parameters from the running minimum and maximum of every input.

    Example:
        >>> obs = MinMaxObserver()
        >>> _ = obs(ember.tensor([-1.0, 3.0]))
        >>> obs.calculate_qparams()
        (tensor([0.0157]), tensor([64], dtype=ember.int32))
    """

    def __init__(self, dtype: QDType = quint8, qscheme: QScheme = per_tensor_affine,
                 reduce_range: bool = False, quant_min: int | None = None,
                 quant_max: int | None = None, eps: float = _EPS, is_dynamic: bool = False,
                 **kwargs: Any) -> None:
        refuse_other_kwargs(self, kwargs)
        super().__init__(dtype, qscheme, reduce_range, quant_min, quant_max, eps, is_dynamic)
        if qscheme.per_channel:
            raise ArgumentError(f"{type(self).__name__}: a per-tensor observer cannot use qscheme "
                                f"{qscheme!r}. Hint: use PerChannelMinMaxObserver")
        _refuse_reduced_symmetric_quint8(qscheme, reduce_range, dtype)
        self.register_buffer("min_val", tensor(float("inf")))
        self.register_buffer("max_val", tensor(float("-inf")))

    def _update(self, low: np.ndarray, high: np.ndarray) -> tuple[Any, Any]:
        return np.minimum(low, self.min_val.numpy()), np.maximum(high, self.max_val.numpy())

    def _extremes(self, x_orig: Tensor) -> tuple[Any, Any]:
        """The (non-empty) input's minimum and maximum, float32."""
        x = x_orig.detach().numpy().astype(_F32, copy=False)
        return x.min(), x.max()

    def calculate_qparams(self) -> tuple[Tensor, Tensor]:
        return self._calculate_qparams(self.min_val.numpy(), self.max_val.numpy())

    def reset_min_max_vals(self) -> None:
        self.min_val = tensor(float("inf"))
        self.max_val = tensor(float("-inf"))


class MovingAverageMinMaxObserver(MinMaxObserver):
    """Like :class:`MinMaxObserver`, with exponential moving averages of each input's
    minimum and maximum (``averaging_constant``) instead of running extremes."""

    def __init__(self, averaging_constant: float = 0.01, dtype: QDType = quint8,
                 qscheme: QScheme = per_tensor_affine, reduce_range: bool = False,
                 quant_min: int | None = None, quant_max: int | None = None,
                 eps: float = _EPS, is_dynamic: bool = False, **kwargs: Any) -> None:
        refuse_other_kwargs(self, kwargs)
        super().__init__(dtype, qscheme, reduce_range, quant_min, quant_max, eps, is_dynamic)
        self.averaging_constant = averaging_constant

    def _update(self, low: np.ndarray, high: np.ndarray) -> tuple[Any, Any]:
        old_low, old_high = self.min_val.numpy(), self.max_val.numpy()
        if old_low == np.inf and old_high == -np.inf:
            return low, high
        c = _F32(self.averaging_constant)
        return old_low + c * (low - old_low), old_high + c * (high - old_high)


class PerChannelMinMaxObserver(UniformQuantizationObserverBase):
    """Quantization parameters per index along ``ch_axis`` (a weight's output channels),
    from running minima and maxima.

    Example:
        >>> obs = PerChannelMinMaxObserver(dtype=ember.qint8, qscheme=ember.per_channel_symmetric)
        >>> _ = obs(ember.tensor([[-1.0, 0.5], [2.0, 0.25]]))
        >>> obs.calculate_qparams()
        (tensor([0.0078, 0.0157]), tensor([0, 0]))
    """

    def __init__(self, ch_axis: int = 0, dtype: QDType = quint8,
                 qscheme: QScheme = per_channel_affine, reduce_range: bool = False,
                 quant_min: int | None = None, quant_max: int | None = None,
                 eps: float = _EPS, is_dynamic: bool = False, **kwargs: Any) -> None:
        refuse_other_kwargs(self, kwargs)
        if not qscheme.per_channel:
            raise ArgumentError(f"{type(self).__name__}: qscheme must be a per-channel one, got "
                                f"{qscheme!r}")
        super().__init__(dtype, qscheme, reduce_range, quant_min, quant_max, eps, is_dynamic)
        _refuse_reduced_symmetric_quint8(qscheme, reduce_range, dtype)
        self.ch_axis = ch_axis
        self.register_buffer("min_val", tensor([]))
        self.register_buffer("max_val", tensor([]))

    def _update(self, low: np.ndarray, high: np.ndarray) -> tuple[Any, Any]:
        if self.min_val.numel() == 0:
            return low, high
        return np.minimum(low, self.min_val.numpy()), np.maximum(high, self.max_val.numpy())

    def _extremes(self, x_orig: Tensor) -> tuple[Any, Any]:
        """The (non-empty) input's minima and maxima per channel, float32."""
        if not -x_orig.ndim <= self.ch_axis < x_orig.ndim:
            raise IndexOutOfRange(f"{type(self).__name__}: ch_axis {self.ch_axis} is out of range "
                                  f"for a {x_orig.ndim}-D input of shape {tuple(x_orig.shape)}")
        x = np.moveaxis(x_orig.detach().numpy().astype(_F32, copy=False), self.ch_axis, 0)
        x = x.reshape(x.shape[0], -1)
        if self.min_val.numel() not in (0, x.shape[0]):
            raise ArgumentError(f"{type(self).__name__}: it has seen {self.min_val.numel()} "
                                f"channels along ch_axis {self.ch_axis}, this input has "
                                f"{x.shape[0]} (shape {tuple(x_orig.shape)})")
        return x.min(axis=1), x.max(axis=1)

    def calculate_qparams(self) -> tuple[Tensor, Tensor]:
        return self._calculate_qparams(self.min_val.numpy(), self.max_val.numpy())

    def _load_from_state_dict(self, state_dict: Any, prefix: str, *args: Any) -> None:
        for name in ("min_val", "max_val"):  # the number of channels comes with the values
            if prefix + name in state_dict:
                setattr(self, name, tensor(state_dict[prefix + name]).float().clone())
        super()._load_from_state_dict(state_dict, prefix, *args)

    def reset_min_max_vals(self) -> None:
        self.min_val, self.max_val = tensor([]), tensor([])


class MovingAveragePerChannelMinMaxObserver(PerChannelMinMaxObserver):
    """Per-channel moving averages of minima and maxima (``averaging_constant``)."""

    def __init__(self, averaging_constant: float = 0.01, ch_axis: int = 0,
                 dtype: QDType = quint8, qscheme: QScheme = per_channel_affine,
                 reduce_range: bool = False, quant_min: int | None = None,
                 quant_max: int | None = None, eps: float = _EPS, is_dynamic: bool = False,
                 **kwargs: Any) -> None:
        refuse_other_kwargs(self, kwargs)
        super().__init__(ch_axis, dtype, qscheme, reduce_range, quant_min, quant_max, eps,
                         is_dynamic)
        self.averaging_constant = averaging_constant

    def _update(self, low: np.ndarray, high: np.ndarray) -> tuple[Any, Any]:
        if self.min_val.numel() == 0:
            return low, high
        c = _F32(self.averaging_constant)
        old_low, old_high = self.min_val.numpy(), self.max_val.numpy()
        return old_low + c * (low - old_low), old_high + c * (high - old_high)


class PlaceholderObserver(ObserverBase):
    """Observes nothing; passes its configuration (``dtype``, float32 by default, …) on to
    ``from_float``: dynamic quantization's activations, whose parameters are chosen per batch,
    float16 weights, or a weight left float.

    Example:
        >>> PlaceholderObserver()
        PlaceholderObserver(dtype=ember.float32, is_dynamic=False)
    """

    def __init__(self, dtype: Any = float32, custom_op_name: str = "",
                 compute_dtype: Any = None, quant_min: int | None = None,
                 quant_max: int | None = None, qscheme: QScheme | None = None,
                 eps: float | None = None, is_dynamic: bool = False) -> None:
        super().__init__(dtype, is_dynamic)
        self.quant_min, self.quant_max = quant_min, quant_max
        self.qscheme = per_tensor_affine if qscheme is None else qscheme
        self.eps = _EPS if eps is None else eps
        self.custom_op = custom_op_name
        if compute_dtype:  # (PyTorch's warning; like PyTorch, is_dynamic stays as given)
            warnings.warn("Please use `is_dynamic` instead of `compute_dtype`. `compute_dtype` "
                          "will be deprecated in a future release of PyTorch.", stacklevel=2)

    def forward(self, x: Tensor) -> Tensor:
        return x

    def extra_repr(self) -> str:
        return f"dtype={self.dtype!r}, is_dynamic={self.is_dynamic}"

    def calculate_qparams(self) -> tuple[Tensor, Tensor]:
        raise OpError("calculate_qparams should not be called for PlaceholderObserver")


default_observer = MinMaxObserver.with_args(quant_min=0, quant_max=127)
default_weight_observer = MinMaxObserver.with_args(dtype=qint8, qscheme=per_tensor_symmetric)
default_per_channel_weight_observer = PerChannelMinMaxObserver.with_args(
    dtype=qint8, qscheme=per_channel_symmetric)
default_dynamic_quant_observer = PlaceholderObserver.with_args(
    dtype=quint8, quant_min=0, quant_max=255, is_dynamic=True)
default_placeholder_observer = PlaceholderObserver
default_float_qparams_observer = PerChannelMinMaxObserver.with_args(
    dtype=quint8, qscheme=per_channel_affine_float_qparams, ch_axis=0)
default_float_qparams_observer_4bit = PerChannelMinMaxObserver.with_args(
    dtype=quint4x2, qscheme=per_channel_affine_float_qparams, ch_axis=0)
weight_observer_range_neg_127_to_127 = MinMaxObserver.with_args(
    dtype=qint8, qscheme=per_tensor_symmetric, quant_min=-127, quant_max=127, eps=2 ** -12)
per_channel_weight_observer_range_neg_127_to_127 = PerChannelMinMaxObserver.with_args(
    dtype=qint8, qscheme=per_channel_symmetric, quant_min=-127, quant_max=127, eps=2 ** -12)
