"""Quantizable MobileNetV3-Large, as torchvision's ``models.quantization.mobilenetv3``:
squeeze-and-excitation through ``FloatFunctional.mul`` with a hard sigmoid, residual sums
through ``FloatFunctional.add``, stubs around the model, ``fuse_model`` fusing each conv and
batch norm (and ReLU). ``quantize=True`` follows torchvision, whose published weights are
QAT ones: ``fuse_model(is_qat=True)`` (``ConvBn2d``/``ConvBnReLU2d``), the backend's QAT
qconfig, ``prepare_qat`` and ``convert`` (the quantized engine is left as it is).

Example:
    >>> model = mobilenet_v3_large(num_classes=10).eval()
    >>> model.fuse_model()
    >>> type(model.features[1].block[0][0]).__name__
    'ConvReLU2d'
"""

from __future__ import annotations

from typing import Any

from ember import Tensor, nn, tensor
from ember.quant.models._utils import BetweenStubs, fuse, register, replace_relu
from ember.quant.modules.functional_modules import FloatFunctional
from ember.quant.qconfig import get_default_qat_qconfig
from ember.quant.quantize import convert, prepare_qat
from ember.vision.models import quantization as listed
from ember.vision.models.mobilenetv3 import (
    _LARGE,
    InvertedResidual,
    MobileNetV3,
    _config,
)
from ember.vision.ops import Conv2dNormActivation, SqueezeExcitation

__all__ = ["QuantizableMobileNetV3", "mobilenet_v3_large"]


class QuantizableSqueezeExcitation(SqueezeExcitation):
    """Squeeze-and-excitation with a hard sigmoid, its product as ``skip_mul.mul``."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **{**kwargs, "scale_activation": nn.Hardsigmoid})
        self.skip_mul = FloatFunctional()

    def forward(self, input: Tensor) -> Tensor:
        scale = self.fc2(self.activation(self.fc1(self.avgpool(input))))
        return self.skip_mul.mul(self.scale_activation(scale), input)

    def fuse_model(self, is_qat: bool | None = None) -> None:
        """Fuses fc1 and its ReLU in place."""
        fuse(self, ["fc1", "activation"], is_qat)

    # (version 1: torchvision's checkpoints from before the hard sigmoid was observed, its
    # published QAT weights among them; loading one into a prepared model adds torchvision's
    # defaults for the entries of that observer the module has: a QAT fake quantizer's, not a
    # post-training observer's)
    _version = 2

    def _load_from_state_dict(self, state_dict: Any, prefix: str, local_metadata: dict,
                              *args: Any) -> None:
        version = local_metadata.get("version")
        if hasattr(self, "qconfig") and (version is None or version < 2):
            observer = prefix + "scale_activation.activation_post_process."
            own = self.scale_activation.state_dict(prefix=prefix + "scale_activation.")
            for name, value in (("scale", 1.0), ("zero_point", 0), ("fake_quant_enabled", 1),
                                ("observer_enabled", 1), ("activation_post_process.scale", 1.0),
                                ("activation_post_process.zero_point", 0)):
                if observer + name in own:
                    state_dict.setdefault(observer + name,
                                          tensor([value], dtype=own[observer + name].dtype))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, *args)


class QuantizableInvertedResidual(InvertedResidual):
    """MobileNetV3's block with quantizable squeeze-and-excitation and its residual sum as
    ``skip_add.add``."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, se_layer=QuantizableSqueezeExcitation, **kwargs)
        self.skip_add = FloatFunctional()

    def forward(self, x: Tensor) -> Tensor:
        return self.skip_add.add(x, self.block(x)) if self.use_res_connect else self.block(x)


class QuantizableMobileNetV3(BetweenStubs, MobileNetV3):
    """MobileNetV3 between a ``QuantStub`` (``quant``) and a ``DeQuantStub``
    (``dequant``)."""

    def fuse_model(self, is_qat: bool | None = None) -> None:
        """Fuses every conv+bn (+relu) and the squeeze-and-excitations' fc1+relu (in
        place)."""
        for m in self.modules():
            if type(m) is Conv2dNormActivation:
                names = ["0", "1", "2"] if len(m) == 3 and type(m[2]) is nn.ReLU else ["0", "1"]
                fuse(m, names, is_qat)
            elif type(m) is QuantizableSqueezeExcitation:
                m.fuse_model(is_qat)


def _large(quantize: bool = False, backend: str = "qnnpack", **kwargs: Any) -> nn.Module:
    options = {k: kwargs.pop(k) for k in ("width_mult", "reduced_tail", "dilated")
               if k in kwargs}
    setting, last_channel = _config(_LARGE, 1280, **options)
    model = QuantizableMobileNetV3(setting, last_channel, block=QuantizableInvertedResidual,
                                   **kwargs)
    replace_relu(model)
    if quantize:  # (as torchvision: its published weights are QAT ones)
        model.fuse_model(is_qat=True)
        model.qconfig = get_default_qat_qconfig(backend)
        prepare_qat(model, inplace=True)
        convert(model, inplace=True)  # (in training mode, as torchvision)
        model.eval()
    return model


mobilenet_v3_large = register("mobilenet_v3_large", _large, "MobileNetV3-Large", __name__,
                              backend="qnnpack", raw=True)
listed.register("QuantizableMobileNetV3", QuantizableMobileNetV3)
