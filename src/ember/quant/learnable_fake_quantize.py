"""``_LearnableFakeQuantize`` (``torch.ao.quantization._learnable_fake_quantize``): fake
quantization whose scale and zero point are parameters, estimated by an observer (static) or
learned by backpropagation (LSQ, with :func:`ember._fake_quantize_learnable_per_tensor_affine`
and its per-channel twin)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.errors import ArgumentError
from ember.nn.parameter import Parameter
from ember.ops.creation import tensor
from ember.ops.fake_quantize_learnable import (
    _fake_quantize_learnable_per_channel_affine,
    _fake_quantize_learnable_per_tensor_affine,
)
from ember.quant.fake_quantize import FakeQuantizeBase
from ember.quant.qtypes import per_channel_affine, per_channel_symmetric, per_tensor_symmetric
from ember.tensor import Tensor

__all__ = ["_LearnableFakeQuantize"]


class _LearnableFakeQuantize(FakeQuantizeBase):  # noqa: N801 - PyTorch's name
    """Observes and copies the observer's scale and zero point while static estimation is on
    (the default), and fake-quantizes with them; ``enable_param_learning()`` stops observing
    and lets ``scale`` and ``zero_point`` (float parameters, ``channel_len`` of them per
    channel) take gradients, scaled by ``1 / sqrt(numel * quant_max)`` with
    ``use_grad_scaling``.

    Example:
        >>> from ember.ao.quantization import MovingAverageMinMaxObserver
        >>> fq = _LearnableFakeQuantize(MovingAverageMinMaxObserver, quant_min=0, quant_max=255)
        >>> y = fq(ember.tensor([-1.0, 0.0, 1.0]))
        >>> fq.scale, fq.calculate_qparams()[1]
        (Parameter containing:
        tensor([0.0078], requires_grad=True), tensor([127]))
    """

    def __init__(self, observer: Any, quant_min: int = 0, quant_max: int = 255,
                 scale: float = 1.0, zero_point: float = 0.0, channel_len: int = -1,
                 use_grad_scaling: bool = False, **observer_kwargs: Any) -> None:
        super().__init__()
        if quant_min >= quant_max:
            raise ArgumentError(f"_LearnableFakeQuantize: quant_min ({quant_min}) must be "
                                f"strictly less than quant_max ({quant_max})")
        self.quant_min, self.quant_max = quant_min, quant_max
        self.use_grad_scaling = use_grad_scaling
        if channel_len != -1 and not (isinstance(channel_len, int) and channel_len > 0):
            raise ArgumentError("_LearnableFakeQuantize: channel_len must be a positive int "
                                f"(or -1 per tensor), got {channel_len!r}")
        n = 1 if channel_len == -1 else channel_len
        self.scale = Parameter(tensor([float(scale)] * n))
        self.zero_point = Parameter(tensor([float(zero_point)] * n))
        self.activation_post_process = observer(quant_min=quant_min, quant_max=quant_max,
                                                **observer_kwargs)
        post = self.activation_post_process
        if not post.dtype.min <= quant_min < quant_max <= post.dtype.max:
            raise ArgumentError(f"_LearnableFakeQuantize: [{quant_min}, {quant_max}] is out of "
                                f"{post.dtype!r}'s range [{post.dtype.min}, {post.dtype.max}]")
        self.dtype, self.qscheme = post.dtype, post.qscheme
        self.ch_axis = getattr(post, "ch_axis", -1)
        self.register_buffer("static_enabled", tensor([1], dtype="uint8"))
        self.register_buffer("learning_enabled", tensor([0], dtype="uint8"))
        self.bitwidth = int(np.log2(float(quant_max - quant_min + 1)))
        self.register_buffer("eps", tensor([float(np.finfo(np.float32).eps)]))

    def enable_param_learning(self) -> _LearnableFakeQuantize:
        """Learn ``scale`` and ``zero_point``; no observing; fake quantization on."""
        return self.toggle_qparam_learning(True).toggle_fake_quant(True) \
            .toggle_observer_update(False)

    def enable_static_estimate(self) -> None:
        """Observe and copy the observer's parameters; no learning; fake quantization on."""
        self.toggle_qparam_learning(False).toggle_fake_quant(True).toggle_observer_update(True)

    def enable_static_observation(self) -> None:
        """Observe only: the parameters stay, and the input passes unchanged."""
        self.toggle_qparam_learning(False).toggle_fake_quant(False).toggle_observer_update(True)

    def toggle_observer_update(self, enabled: bool = True) -> _LearnableFakeQuantize:
        self.static_enabled[0] = int(enabled)
        return self

    def enable_observer(self, enabled: bool = True) -> None:  # (PyTorch's returns None)
        self.toggle_observer_update(enabled)

    def toggle_qparam_learning(self, enabled: bool = True) -> _LearnableFakeQuantize:
        self.learning_enabled[0] = int(enabled)
        self.scale.requires_grad = self.zero_point.requires_grad = bool(enabled)
        return self

    def toggle_fake_quant(self, enabled: bool = True) -> _LearnableFakeQuantize:
        self.enable_fake_quant(enabled)
        return self

    def observe_quant_params(self) -> None:
        print(f"_LearnableFakeQuantize Scale: {self.scale.detach()}")
        print(f"_LearnableFakeQuantize Zero Point: {self.zero_point.detach()}")

    def calculate_qparams(self) -> tuple[Tensor, Tensor]:
        """The scale (clamped to ``eps`` first, in place) and the zero point rounded and
        clamped to an int64 tensor."""
        self.scale.data.clamp_(min=self.eps.item())
        zero_point = self.zero_point.detach().round().clamp(self.quant_min, self.quant_max)
        return self.scale.detach(), zero_point.long()

    def forward(self, X: Tensor) -> Tensor:  # noqa: N803 - PyTorch's argument name
        if self.static_enabled[0].item() == 1:
            self.activation_post_process(X.detach())
            scale, zero_point = self.activation_post_process.calculate_qparams()
            self.scale.data.copy_(scale)
            self.zero_point.data.copy_(zero_point.float())
        else:
            self.scale.data.clamp_(min=self.eps.item())
        if not self.fake_quant_on:
            return X
        if self.qscheme in (per_channel_symmetric, per_tensor_symmetric):
            self.zero_point.data.zero_()
        factor = (1.0 / (X.numel() * self.quant_max) ** 0.5) if self.use_grad_scaling else 1.0
        if self.qscheme in (per_channel_symmetric, per_channel_affine):  # (as PyTorch's)
            return _fake_quantize_learnable_per_channel_affine(
                X, self.scale, self.zero_point, self.ch_axis, self.quant_min, self.quant_max,
                factor)
        return _fake_quantize_learnable_per_tensor_affine(
            X, self.scale, self.zero_point, self.quant_min, self.quant_max, factor)
