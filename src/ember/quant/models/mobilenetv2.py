"""Quantizable MobileNetV2, as torchvision's ``models.quantization.mobilenetv2``: residual
sums through ``FloatFunctional.add``, stubs around the model, ReLU6 replaced by ReLU (which
fuses), ``fuse_model`` fusing each conv, batch norm and ReLU; default backend ``qnnpack``.

Example:
    >>> model = mobilenet_v2(num_classes=10).eval()
    >>> model.fuse_model()
    >>> type(model.features[0][0]).__name__
    'ConvReLU2d'
"""

from __future__ import annotations

from ember import Tensor, nn
from ember.quant.models._utils import BetweenStubs, adaptive_avg_pool2d, fuse, register
from ember.quant.modules.functional_modules import FloatFunctional
from ember.vision.models import quantization as listed
from ember.vision.models.mobilenetv2 import InvertedResidual, MobileNetV2
from ember.vision.ops import Conv2dNormActivation

__all__ = ["QuantizableMobileNetV2", "mobilenet_v2"]


class QuantizableInvertedResidual(InvertedResidual):
    """MobileNetV2's block with its residual sum as ``skip_add.add``."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.skip_add = FloatFunctional()

    def forward(self, x: Tensor) -> Tensor:
        return self.skip_add.add(x, self.conv(x)) if self.use_res_connect else self.conv(x)

    def fuse_model(self, is_qat: bool | None = None) -> None:
        """Fuses the projection's conv and batch norm in place."""
        for index, layer in enumerate(self.conv):
            if type(layer) is nn.Conv2d:
                fuse(self.conv, [str(index), str(index + 1)], is_qat)


class QuantizableMobileNetV2(BetweenStubs, MobileNetV2):
    """MobileNetV2 between a ``QuantStub`` (``quant``) and a ``DeQuantStub`` (``dequant``),
    built of :class:`QuantizableInvertedResidual` blocks."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **{"block": QuantizableInvertedResidual, **kwargs})

    def forward(self, x: Tensor) -> Tensor:
        x = adaptive_avg_pool2d(self.features(self.quant(x)), (1, 1))
        return self.dequant(self.classifier(x.flatten(1)))

    def fuse_model(self, is_qat: bool | None = None) -> None:
        """Fuses every conv+bn+relu and the blocks' conv+bn (in place)."""
        for m in self.modules():
            if type(m) is Conv2dNormActivation:
                fuse(m, ["0", "1", "2"], is_qat)
            if type(m) is QuantizableInvertedResidual:
                m.fuse_model(is_qat)


mobilenet_v2 = register("mobilenet_v2", QuantizableMobileNetV2, "MobileNetV2", __name__,
                        backend="qnnpack")
listed.register("QuantizableMobileNetV2", QuantizableMobileNetV2)
