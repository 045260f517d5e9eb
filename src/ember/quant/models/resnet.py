"""Quantizable ResNets and ResNeXts, as torchvision's ``models.quantization.resnet``: the
blocks add (and ReLU) through ``FloatFunctional.add_relu``, the model quantizes its input and
dequantizes its output through stubs, and ``fuse_model`` fuses each conv, batch norm and ReLU.

Example:
    >>> model = resnet18(num_classes=10).eval()
    >>> model.fuse_model()
    >>> type(model.conv1).__name__
    'ConvReLU2d'
"""

from __future__ import annotations

from functools import partial

from ember import Tensor, nn
from ember.models.resnet import BasicBlock, Bottleneck, ResNet
from ember.quant.models._utils import BetweenStubs, fuse, register
from ember.quant.modules.functional_modules import FloatFunctional
from ember.vision.models import quantization as listed

__all__ = ["QuantizableResNet", "QuantizableBasicBlock", "QuantizableBottleneck", "resnet18",
           "resnet50", "resnext101_32x8d", "resnext101_64x4d"]


class QuantizableBasicBlock(BasicBlock):
    """:class:`~ember.models.resnet.BasicBlock` whose residual sum and ReLU are
    ``add_relu.add_relu``."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.add_relu = FloatFunctional()

    def forward(self, x: Tensor) -> Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x)))))
        return self.add_relu.add_relu(out, identity)

    def fuse_model(self, is_qat: bool | None = None) -> None:
        """Fuses conv1+bn1+relu and conv2+bn2 (and the shortcut's conv+bn) in place."""
        fuse(self, [["conv1", "bn1", "relu"], ["conv2", "bn2"]], is_qat)
        if self.downsample is not None:
            fuse(self.downsample, ["0", "1"], is_qat)


class QuantizableBottleneck(Bottleneck):
    """:class:`~ember.models.resnet.Bottleneck` with a ReLU module per use (``relu1``,
    ``relu2``) and the residual sum and ReLU as ``skip_add_relu.add_relu``."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.skip_add_relu = FloatFunctional()
        self.relu1 = nn.ReLU()
        self.relu2 = nn.ReLU()

    def forward(self, x: Tensor) -> Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu1(self.bn1(self.conv1(x)))
        out = self.relu2(self.bn2(self.conv2(out)))
        return self.skip_add_relu.add_relu(self.bn3(self.conv3(out)), identity)

    def fuse_model(self, is_qat: bool | None = None) -> None:
        """Fuses conv1+bn1+relu1, conv2+bn2+relu2 and conv3+bn3 (and the shortcut's)."""
        fuse(self, [["conv1", "bn1", "relu1"], ["conv2", "bn2", "relu2"], ["conv3", "bn3"]],
             is_qat)
        if self.downsample is not None:
            fuse(self.downsample, ["0", "1"], is_qat)


class QuantizableResNet(BetweenStubs, ResNet):
    """:class:`~ember.models.resnet.ResNet` between a ``QuantStub`` (``quant``) and a
    ``DeQuantStub`` (``dequant``)."""

    def fuse_model(self, is_qat: bool | None = None) -> None:
        """Fuses the stem's conv+bn+relu and every block's (in place; the float outputs do
        not change)."""
        fuse(self, ["conv1", "bn1", "relu"], is_qat)
        for m in self.modules():
            if type(m) in (QuantizableBasicBlock, QuantizableBottleneck):
                m.fuse_model(is_qat)


def _builder(name: str, block: type, layers: list[int], doc: str, **fixed: int):
    return register(name, partial(QuantizableResNet, block, layers), doc, __name__, **fixed)


resnet18 = _builder("resnet18", QuantizableBasicBlock, [2, 2, 2, 2], "ResNet-18")
resnet50 = _builder("resnet50", QuantizableBottleneck, [3, 4, 6, 3], "ResNet-50")
resnext101_32x8d = _builder("resnext101_32x8d", QuantizableBottleneck, [3, 4, 23, 3],
                            "ResNeXt-101 32x8d", groups=32, width_per_group=8)
resnext101_64x4d = _builder("resnext101_64x4d", QuantizableBottleneck, [3, 4, 23, 3],
                            "ResNeXt-101 64x4d", groups=64, width_per_group=4)
listed.register("QuantizableResNet", QuantizableResNet)
