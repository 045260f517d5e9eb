"""Observers that choose nothing from data: fixed quantization parameters (the outputs of
``sigmoid``, ``tanh``, ``hardsigmoid`` and ``softmax`` have known ranges), a no-op that only
carries a dtype, a recorder for debugging, and FX's reuse-the-input marker; and the fake
quantizer with fixed parameters (``torch.ao.quantization``'s names)."""

from __future__ import annotations

from typing import Any

from ember.dtypes import float16
from ember.errors import ArgumentError, ArgumentTypeError, OpError
from ember.ops.creation import tensor
from ember.quant.fake_quantize import FakeQuantize
from ember.quant.observer import ObserverBase, refuse_other_kwargs
from ember.quant.qtypes import QDType, QScheme, per_tensor_affine, quint8
from ember.tensor import Tensor

__all__ = ["FixedQParamsObserver", "FixedQParamsFakeQuantize", "NoopObserver",
           "RecordingObserver", "ReuseInputObserver",
           "default_fixed_qparams_range_0to1_observer",
           "default_fixed_qparams_range_neg1to1_observer",
           "default_affine_fixed_qparams_observer", "default_symmetric_fixed_qparams_observer",
           "default_fixed_qparams_range_0to1_fake_quant",
           "default_fixed_qparams_range_neg1to1_fake_quant",
           "default_affine_fixed_qparams_fake_quant", "default_symmetric_fixed_qparams_fake_quant",
           "default_debug_observer", "default_reuse_input_observer"]


class FixedQParamsObserver(ObserverBase):
    """Passes its input through; its parameters are the fixed ``scale`` and ``zero_point``
    (per tensor).

    Example:
        >>> FixedQParamsObserver(1.0 / 256, 0).calculate_qparams()
        (tensor([0.0039]), tensor([0], dtype=ember.int32))
    """

    def __init__(self, scale: float, zero_point: int, dtype: QDType = quint8,
                 qscheme: QScheme = per_tensor_affine, quant_min: int = 0, quant_max: int = 255,
                 is_dynamic: bool = False, **kwargs: Any) -> None:
        refuse_other_kwargs(self, kwargs, allowed=())
        if is_dynamic:
            raise NotImplementedError("FixedQParamsObserver doesn't support dynamic quantization")
        super().__init__(dtype, is_dynamic)
        self.quant_min, self.quant_max, self.qscheme = quant_min, quant_max, qscheme
        self.register_buffer("scale", tensor([scale], dtype="float32"))
        self.register_buffer("zero_point", tensor([zero_point], dtype="int32"))

    def forward(self, X: Tensor) -> Tensor:  # noqa: N803 - PyTorch's argument name
        return X

    def calculate_qparams(self) -> tuple[Tensor, Tensor]:
        return self.scale, self.zero_point


class FixedQParamsFakeQuantize(FakeQuantize):
    """Fake quantization with the fixed parameters of its :class:`FixedQParamsObserver`
    (what ``prepare_qat`` puts after ``Sigmoid``, ``Tanh``, ``Hardsigmoid`` and ``Softmax``).

    Example:
        >>> fq = default_fixed_qparams_range_0to1_fake_quant()
        >>> fq(ember.tensor([0.3, 1.5]))
        tensor([0.3008, 0.9961])
    """

    def __init__(self, observer: Any) -> None:
        super().__init__(observer=observer)
        if type(self.activation_post_process) is not FixedQParamsObserver:
            raise ArgumentTypeError(f"FixedQParamsFakeQuantize's observer must be a "
                                    f"FixedQParamsObserver, got "
                                    f"{type(self.activation_post_process).__name__}")
        if self.qscheme.per_channel:
            raise ArgumentError(f"Only per tensor quantization is supported by "
                                f"FixedQParamsFakeQuantize, got qscheme {self.qscheme!r}")
        self.scale = self.activation_post_process.scale
        self.zero_point = self.activation_post_process.zero_point

    def calculate_qparams(self) -> tuple[Tensor, Tensor]:
        return self.scale, self.zero_point

    def extra_repr(self) -> str:
        return (f"fake_quant_enabled={self.fake_quant_enabled}, observer_enabled="
                f"{self.observer_enabled}, scale={self.scale}, zero_point={self.zero_point}, "
                f"dtype={self.dtype!r}, quant_min={self.quant_min}, quant_max={self.quant_max}, "
                f"qscheme={self.qscheme!r}")  # (PyTorch's fields, in its order)


class _PassThroughObserver(ObserverBase):
    """An observer that computes no parameters."""

    def forward(self, x: Tensor) -> Tensor:
        return x

    def calculate_qparams(self) -> tuple[Tensor, Tensor]:
        raise OpError(f"calculate_qparams should not be called for {type(self).__name__}")


class NoopObserver(_PassThroughObserver):
    """Observes nothing and passes its ``dtype`` on (float16 quantization needs no ranges).

    Example:
        >>> NoopObserver()(ember.tensor([1.0]))
        tensor([1.])
    """

    def __init__(self, dtype: Any = None, custom_op_name: str = "") -> None:
        super().__init__(float16 if dtype is None else dtype, False)
        self.custom_op = custom_op_name


class RecordingObserver(_PassThroughObserver):
    """Keeps a copy of every tensor it sees, for debugging (``get_tensor_value()``).

    Example:
        >>> obs = RecordingObserver()
        >>> _ = obs(ember.tensor([1.0, 2.0]))
        >>> obs.get_tensor_value()
        [tensor([1., 2.])]
    """

    def __init__(self, dtype: QDType = quint8) -> None:
        super().__init__(dtype, False)
        self.tensor_val: list[Tensor] = []

    def forward(self, x: Tensor) -> Tensor:
        self.tensor_val.append(x.clone())
        return x

    def get_tensor_value(self) -> list[Tensor]:
        return self.tensor_val


class ReuseInputObserver(_PassThroughObserver):
    """Marks an op whose output reuses its input's observer (PyTorch uses it in FX graph
    mode only; in eager mode it passes its input through)."""

    def __init__(self) -> None:
        super().__init__(quint8, False)


default_fixed_qparams_range_0to1_observer = FixedQParamsObserver.with_args(
    scale=1.0 / 256.0, zero_point=0, dtype=quint8, quant_min=0, quant_max=255)
default_fixed_qparams_range_neg1to1_observer = FixedQParamsObserver.with_args(
    scale=2.0 / 256.0, zero_point=128, dtype=quint8, quant_min=0, quant_max=255)
default_affine_fixed_qparams_observer = default_fixed_qparams_range_0to1_observer
default_symmetric_fixed_qparams_observer = default_fixed_qparams_range_neg1to1_observer
default_fixed_qparams_range_0to1_fake_quant = FixedQParamsFakeQuantize.with_args(
    observer=default_fixed_qparams_range_0to1_observer)
default_fixed_qparams_range_neg1to1_fake_quant = FixedQParamsFakeQuantize.with_args(
    observer=default_fixed_qparams_range_neg1to1_observer)
default_affine_fixed_qparams_fake_quant = default_fixed_qparams_range_0to1_fake_quant
default_symmetric_fixed_qparams_fake_quant = default_fixed_qparams_range_neg1to1_fake_quant
default_debug_observer = RecordingObserver
default_reuse_input_observer = ReuseInputObserver
