"""``FakeQuantize``: an observer plus fake quantization, the module quantization-aware
training inserts (``torch.ao.quantization.FakeQuantize``), and its default configurations."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.errors import ArgumentError, ArgumentTypeError
from ember.jit import TraceError
from ember.nn.module import Module
from ember.ops.creation import from_numpy, tensor
from ember.ops.fake_quantize import (
    fake_quantize_per_channel_affine,
    fake_quantize_per_tensor_affine,
)
from ember.ops.select import where
from ember.quant import kernels
from ember.quant.histogram_observer import HistogramObserver
from ember.quant.observer import (
    MovingAverageMinMaxObserver,
    MovingAveragePerChannelMinMaxObserver,
    _WithArgs,
)
from ember.quant.qtypes import (
    per_channel_affine_float_qparams,
    per_channel_symmetric,
    per_tensor_affine,
    per_tensor_symmetric,
    qint8,
    quint4x2,
    quint8,
)
from ember.tensor import Tensor

__all__ = ["FakeQuantizeBase", "FakeQuantize", "FusedMovingAvgObsFakeQuantize",
           "default_fake_quant", "default_weight_fake_quant",
           "default_per_channel_weight_fake_quant", "default_embedding_fake_quant",
           "default_embedding_fake_quant_4bit",
           "disable_fake_quant", "enable_fake_quant",
           "disable_observer", "enable_observer", "default_histogram_fake_quant",
           "default_fused_act_fake_quant", "default_fused_wt_fake_quant",
           "default_fused_per_channel_wt_fake_quant", "fused_wt_fake_quant_range_neg_127_to_127",
           "fused_per_channel_wt_fake_quant_range_neg_127_to_127"]


class FakeQuantizeBase(_WithArgs, Module):
    """The switches every fake-quantize module has: observing and fake quantizing. They are
    the buffers ``fake_quant_enabled`` and ``observer_enabled`` (saved in state dicts, as in
    PyTorch) and the Python flags ``forward`` reads (so ``ember.jit`` keys compiled code on
    them); set them with the methods below, or by loading a state dict."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("fake_quant_enabled", tensor([1], dtype="uint8"))
        self.register_buffer("observer_enabled", tensor([1], dtype="uint8"))
        self.fake_quant_on = self.observer_on = True

    def enable_fake_quant(self, enabled: bool = True) -> FakeQuantizeBase:
        self.fake_quant_enabled[0] = 1 if enabled else 0
        self.fake_quant_on = bool(enabled)
        return self

    def disable_fake_quant(self) -> FakeQuantizeBase:
        return self.enable_fake_quant(False)

    def enable_observer(self, enabled: bool = True) -> FakeQuantizeBase:
        self.observer_enabled[0] = 1 if enabled else 0
        self.observer_on = bool(enabled)
        return self

    def disable_observer(self) -> FakeQuantizeBase:
        return self.enable_observer(False)

    def _load_from_state_dict(self, *args: Any) -> None:
        super()._load_from_state_dict(*args)
        self.fake_quant_on = bool(self.fake_quant_enabled[0].item())
        self.observer_on = bool(self.observer_enabled[0].item())


class FakeQuantize(FakeQuantizeBase):
    """Observes its input (when the observer is on), updates ``scale`` and ``zero_point``,
    and fake-quantizes (when fake quantization is on) with a straight-through gradient.

    Example:
        >>> fq = FakeQuantize(quant_min=0, quant_max=255)
        >>> fq(ember.tensor([-1.0, 0.0, 1.0]))
        tensor([-0.9961,  0.0000,  0.9961])
    """

    def __init__(self, observer: Any = MovingAverageMinMaxObserver, quant_min: int | None = None,
                 quant_max: int | None = None, is_dynamic: bool = False,
                 **observer_kwargs: Any) -> None:
        super().__init__()
        if quant_min is not None and quant_max is not None:
            if quant_min > quant_max:
                raise ArgumentError(f"FakeQuantize: quant_min ({quant_min}) must be less than or "
                                    f"equal to quant_max ({quant_max})")
            dtype = observer_kwargs.get("dtype", getattr(observer, "kwargs", {}).get("dtype",
                                                                                     quint8))
            if not dtype.min <= quant_min <= quant_max <= dtype.max:
                raise ArgumentError("FakeQuantize: quant_min/quant_max out of bound: "
                                    f"[{quant_min}, {quant_max}] is not within {dtype!r}'s range "
                                    f"[{dtype.min}, {dtype.max}]")
            observer_kwargs.update(quant_min=quant_min, quant_max=quant_max)
        self.activation_post_process = observer(is_dynamic=is_dynamic, **observer_kwargs)
        post = self.activation_post_process
        self.quant_min, self.quant_max = post.quant_min, post.quant_max
        self.is_dynamic = is_dynamic
        self.register_buffer("scale", tensor([1.0]))
        self.dtype, self.qscheme = post.dtype, post.qscheme
        self._float_zero_point = post.qscheme is per_channel_affine_float_qparams
        self.register_buffer("zero_point", tensor(
            [0], dtype="float32" if self._float_zero_point else "int32"))
        self.ch_axis = getattr(post, "ch_axis", -1)
        self.is_per_channel = post.qscheme.per_channel

    def calculate_qparams(self) -> tuple[Tensor, Tensor]:
        return self.activation_post_process.calculate_qparams()

    def _observed_qparams(self) -> tuple[Tensor, Tensor]:
        """The scale and zero point ``forward`` fake-quantizes with after observing."""
        return self.calculate_qparams()

    def _chooses_qparams(self) -> bool:
        """Whether ``forward`` updates ``scale`` and ``zero_point``: after observing."""
        return self.observer_on

    def _observe(self, X: Tensor) -> None:  # noqa: N803 - PyTorch's argument name
        self.activation_post_process(X.detach())

    def forward(self, X: Tensor) -> Tensor:  # noqa: N803 - PyTorch's argument name
        if self.observer_on:
            try:
                self._observe(X)
            except TraceError as e:
                raise TraceError(f"FakeQuantize: its observer computes statistics from the "
                                 f"values it sees, which a compiled function cannot read ({e}). "
                                 "Hint: observe in eager steps, then call model.apply("
                                 "ember.ao.quantization.disable_observer) before compiling "
                                 "the training step") from e
        if self._chooses_qparams():
            scale, zero_point = self._observed_qparams()
            self.scale = scale.float().clone()
            self.zero_point = (zero_point.float() if self._float_zero_point
                               else zero_point.int()).clone()
        if self.fake_quant_on:
            return self._fake_quantize(X)
        return X

    def _fake_quantize(self, X: Tensor) -> Tensor:  # noqa: N803 - PyTorch's argument name
        if self.is_per_channel:
            return fake_quantize_per_channel_affine(X, self.scale, self.zero_point,
                                                    self.ch_axis, self.quant_min, self.quant_max)
        # (0-d parameters: a 0-d input stays 0-d, as PyTorch's module keeps its input's shape)
        return fake_quantize_per_tensor_affine(X, self.scale.reshape(()),
                                               self.zero_point.reshape(()), self.quant_min,
                                               self.quant_max)

    def _load_from_state_dict(self, state_dict: Any, prefix: str, *args: Any) -> None:
        for name in ("scale", "zero_point"):  # per channel, the size comes with the values
            if prefix + name in state_dict:
                setattr(self, name, tensor(state_dict[prefix + name]).clone())
        super()._load_from_state_dict(state_dict, prefix, *args)

    def extra_repr(self) -> str:
        return (f"fake_quant_enabled={self.fake_quant_enabled}, observer_enabled="
                f"{self.observer_enabled}, quant_min={self.quant_min}, quant_max="
                f"{self.quant_max}, dtype={self.dtype!r}, qscheme={self.qscheme!r}, ch_axis="
                f"{self.ch_axis}, scale={self.scale}, zero_point={self.zero_point}")


class FusedMovingAvgObsFakeQuantize(FakeQuantize):
    """PyTorch's fused observer and fake quantizer (its default for quantization-aware
    training): a moving-average min/max observer, and in ``forward`` the scale and zero point
    of its C++ kernel (``ChooseQuantizationParams``; a symmetric scheme makes a range across
    zero symmetric, and uses all the integers for a range on one side of zero), which may
    differ from the observer's own ``calculate_qparams`` (what ``convert`` uses, as PyTorch).

    Example:
        >>> fq = FusedMovingAvgObsFakeQuantize.with_args(
        ...     observer=MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127,
        ...     dtype=ember.qint8, qscheme=ember.per_channel_symmetric)()
        >>> _ = fq(ember.tensor([[1.0, 2.0], [-1.0, 0.5]]))
        >>> fq.scale, fq.zero_point
        (tensor([0.0078, 0.0078]), tensor([-128,    0], dtype=ember.int32))
    """

    def __init__(self, observer: Any = MovingAverageMinMaxObserver, quant_min: int = 0,
                 quant_max: int = 255, **observer_kwargs: Any) -> None:
        super().__init__(observer, quant_min, quant_max, **observer_kwargs)
        if not isinstance(self.activation_post_process, (MovingAverageMinMaxObserver,
                                                         MovingAveragePerChannelMinMaxObserver)):
            raise ArgumentTypeError("FusedMovingAvgObsFakeQuantize: the observer must be a "
                                    "MovingAverageMinMaxObserver or "
                                    "MovingAveragePerChannelMinMaxObserver, got "
                                    f"{type(self.activation_post_process).__name__}")
        self.register_buffer("fake_quant_enabled", tensor([1]))  # (int64, as PyTorch's)
        self.register_buffer("observer_enabled", tensor([1]))
        self.is_symmetric_quant = self.qscheme.symmetric

    def forward(self, X: Tensor) -> Tensor:  # noqa: N803 - PyTorch's argument name
        """An empty input changes nothing, the scale included (PyTorch's kernel returns)."""
        return super().forward(X) if X.numel() else X.clone()

    def _observe(self, X: Tensor) -> None:  # noqa: N803 - PyTorch's argument name
        """The kernel's moving average (:func:`moving_range`), not the observer's own."""
        post = self.activation_post_process
        if X.numel():
            post._record(*moving_range(post.min_val.numpy(), post.max_val.numpy(),
                                       *post._extremes(X), post.averaging_constant))

    def _observed_qparams(self) -> tuple[Tensor, Tensor]:
        post = self.activation_post_process
        return fused_qparams(post.min_val.numpy(), post.max_val.numpy(), self.quant_min,
                             self.quant_max, self.is_symmetric_quant)

    def _chooses_qparams(self) -> bool:
        """As PyTorch's kernel: whenever it fake-quantizes, observing or not."""
        return self.fake_quant_on

    def extra_repr(self) -> str:
        post = self.activation_post_process  # (PyTorch's fields, in its order)
        return (f"fake_quant_enabled={self.fake_quant_enabled}, observer_enabled="
                f"{self.observer_enabled}, scale={self.scale}, zero_point={self.zero_point}, "
                f"dtype={self.dtype!r}, quant_min={post.quant_min}, quant_max={post.quant_max}, "
                f"qscheme={self.qscheme!r}, reduce_range={post.reduce_range}")

    def _fake_quantize(self, X: Tensor) -> Tensor:  # noqa: N803 - PyTorch's argument name
        if not self.is_per_channel and not bool(np.isfinite(self.scale.numpy()).all()):
            return fused_nonfinite(X, self.scale, self.zero_point, self.quant_min,
                                   self.quant_max)
        return super()._fake_quantize(X)


def moving_range(old_low: np.ndarray, old_high: np.ndarray, low: Any, high: Any,
                 averaging_constant: float) -> tuple[np.ndarray, np.ndarray]:
    """The running range of PyTorch's fused observer and fake quantizer after an input with
    bounds ``[low, high]`` (per row, or one each): each bound moved towards the input's by
    ``averaging_constant``, in float32, or set to it where it is infinite (at first, and
    after an infinite input); an empty one (per channel, at first) becomes the input's."""
    low, high = np.asarray(low, np.float32), np.asarray(high, np.float32)
    if old_low.size == 0:
        return low, high
    c = np.float32(averaging_constant)
    return (np.where(np.isinf(old_low), low, old_low + c * (low - old_low)).astype(np.float32),
            np.where(np.isinf(old_high), high, old_high + c * (high - old_high)
                     ).astype(np.float32))


def fused_nonfinite(x: Tensor, scale: Tensor, zero_point: Tensor, quant_min: int,
                    quant_max: int) -> Tensor:
    """Per-tensor fake quantization by the non-finite scale (and maybe out-of-range zero
    point) a NaN or infinite running range gives the fused kernel, which PyTorch's kernel
    computes unchecked: ``(clamp(int64(zero_point + nearbyint(x / scale))) - zero_point) *
    scale``, NaN and infinities converting to the bottom, so NaNs and infinities out; the
    gradient passes where that integer was in range (x finite there: the output unchanged)."""
    s, zp = np.float32(scale.numpy().reshape(-1)[0]), int(zero_point.reshape(-1)[0].item())
    t = np.float32(zp) + np.rint(x.detach().float().numpy() * (np.float32(1) / s))
    mask = np.isfinite(t) & (t >= quant_min) & (t <= quant_max)
    q = np.clip(np.where(np.isfinite(t), t, quant_min), quant_min, quant_max)
    out = from_numpy(np.asarray(((q - zp) * np.float64(s)).astype(np.float32)))
    return out.to(x.dtype) + where(from_numpy(mask), x - x.detach(), 0)


def fused_qparams(low: Any, high: Any, quant_min: int, quant_max: int,
                  symmetric: bool) -> tuple[Tensor, Tensor]:
    """The float32 scales and int32 zero points PyTorch's fused observer and fake quantizer
    picks for the ranges ``[low, high]`` (its C++ ``ChooseQuantizationParams``, the zero
    point from the float32 scale)."""
    pairs = [kernels.choose_qparams_for_range(float(lo), float(hi), quant_min, quant_max,
                                              symmetric, float32_scale=True)
             for lo, hi in zip(np.atleast_1d(low), np.atleast_1d(high))]
    return (tensor([s for s, _ in pairs], dtype="float32"),
            tensor([z for _, z in pairs], dtype="int32"))


def _switch(method: str) -> Any:
    def apply(mod: Module) -> None:
        if isinstance(mod, FakeQuantizeBase):
            getattr(mod, method)()
    apply.__name__ = method
    apply.__doc__ = (f"Calls ``{method}()`` on ``mod`` if it is a fake-quantize module: for "
                     f"``model.apply({method})``.")
    return apply


disable_fake_quant = _switch("disable_fake_quant")
enable_fake_quant = _switch("enable_fake_quant")
disable_observer = _switch("disable_observer")
enable_observer = _switch("enable_observer")

default_fake_quant = FakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255, dtype=quint8,
    qscheme=per_tensor_affine, reduce_range=True)
default_weight_fake_quant = FakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=-128, quant_max=127, dtype=qint8,
    qscheme=per_tensor_symmetric, reduce_range=False)
default_per_channel_weight_fake_quant = FakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127, dtype=qint8,
    qscheme=per_channel_symmetric, reduce_range=False, ch_axis=0)
default_embedding_fake_quant = FakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, qscheme=per_channel_affine_float_qparams,
    dtype=quint8, quant_min=0, quant_max=255, ch_axis=0, averaging_constant=1)
default_embedding_fake_quant_4bit = FakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, qscheme=per_channel_affine_float_qparams,
    ch_axis=0, dtype=quint4x2, averaging_constant=1)
default_histogram_fake_quant = FakeQuantize.with_args(
    observer=HistogramObserver, quant_min=0, quant_max=255, dtype=quint8,
    qscheme=per_tensor_affine, reduce_range=True)
default_fused_act_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255, dtype=quint8)
default_fused_wt_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=-128, quant_max=127, dtype=qint8,
    qscheme=per_tensor_symmetric)
default_fused_per_channel_wt_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127, dtype=qint8,
    qscheme=per_channel_symmetric)
fused_wt_fake_quant_range_neg_127_to_127 = default_fused_wt_fake_quant.with_args(
    quant_min=-127, quant_max=127, eps=2 ** -12)
fused_per_channel_wt_fake_quant_range_neg_127_to_127 = \
    default_fused_per_channel_wt_fake_quant.with_args(quant_min=-127, quant_max=127, eps=2 ** -12)
