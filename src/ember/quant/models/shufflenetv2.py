"""Quantizable ShuffleNetV2, as torchvision's ``models.quantization.shufflenetv2``: each
unit concatenates through ``FloatFunctional.cat``, stubs around the model, ``fuse_model``
fusing each conv, batch norm and ReLU.

Example:
    >>> model = shufflenet_v2_x0_5(num_classes=10).eval()
    >>> model.fuse_model()
    >>> type(model.conv1[0]).__name__
    'ConvReLU2d'
"""

from __future__ import annotations

from functools import partial

from ember import Tensor
from ember.quant.models._utils import BetweenStubs, fuse, register, spatial_mean
from ember.quant.modules.functional_modules import FloatFunctional
from ember.vision.models import quantization as listed
from ember.vision.models.shufflenetv2 import (
    WIDTHS,
    InvertedResidual,
    ShuffleNetV2,
    channel_shuffle,
)

__all__ = ["QuantizableShuffleNetV2", "shufflenet_v2_x0_5", "shufflenet_v2_x1_0",
           "shufflenet_v2_x1_5", "shufflenet_v2_x2_0"]


class QuantizableInvertedResidual(InvertedResidual):
    """ShuffleNetV2's unit with its concatenation as ``cat.cat``."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.cat = FloatFunctional()

    def forward(self, x: Tensor) -> Tensor:
        if self.stride == 1:
            half = x.shape[1] // 2  # (x.chunk(2, dim=1), which quantized tensors lack)
            out = self.cat.cat([x[:, :half], self.branch2(x[:, half:])], dim=1)
        else:
            out = self.cat.cat([self.branch1(x), self.branch2(x)], dim=1)
        return channel_shuffle(out, 2)


class QuantizableShuffleNetV2(BetweenStubs, ShuffleNetV2):
    """ShuffleNetV2 between a ``QuantStub`` (``quant``) and a ``DeQuantStub`` (``dequant``),
    built of :class:`QuantizableInvertedResidual` units."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **{"inverted_residual": QuantizableInvertedResidual, **kwargs})

    def forward(self, x: Tensor) -> Tensor:
        x = self.maxpool(self.conv1(self.quant(x)))
        x = self.conv5(self.stage4(self.stage3(self.stage2(x))))
        return self.dequant(self.fc(spatial_mean(x)))

    def fuse_model(self, is_qat: bool | None = None) -> None:
        """Fuses the stem's, the last layer's and every unit's conv+bn(+relu) (in place)."""
        for name in ("conv1", "conv5"):
            fuse(getattr(self, name), [["0", "1", "2"]], is_qat)
        for m in self.modules():
            if type(m) is QuantizableInvertedResidual:
                if len(m.branch1) > 0:
                    fuse(m.branch1, [["0", "1"], ["2", "3", "4"]], is_qat)
                fuse(m.branch2, [["0", "1", "2"], ["3", "4"], ["5", "6", "7"]], is_qat)


def _builder(name: str):
    widths, doc = WIDTHS[name]
    return register(name, partial(QuantizableShuffleNetV2, [4, 8, 4], widths), doc, __name__)


shufflenet_v2_x0_5 = _builder("shufflenet_v2_x0_5")
shufflenet_v2_x1_0 = _builder("shufflenet_v2_x1_0")
shufflenet_v2_x1_5 = _builder("shufflenet_v2_x1_5")
shufflenet_v2_x2_0 = _builder("shufflenet_v2_x2_0")
listed.register("QuantizableShuffleNetV2", QuantizableShuffleNetV2)
