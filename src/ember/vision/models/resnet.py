"""torchvision's ResNet family (ResNet, ResNeXt, Wide ResNet) on
:class:`ember.models.resnet.ResNet`, which has torchvision's module names and initialization.

Example:
    >>> resnet50(num_classes=10)(ember.randn(1, 3, 64, 64)).shape
    ember.Size([1, 10])
"""

from __future__ import annotations

from functools import partial

from ember.models.resnet import BasicBlock, Bottleneck, ResNet
from ember.vision.models._api import make_builder

__all__ = ["ResNet", "resnet18", "resnet34", "resnet50", "resnet101", "resnet152",
           "resnext50_32x4d", "resnext101_32x8d", "resnext101_64x4d", "wide_resnet50_2",
           "wide_resnet101_2"]


def _builder(name: str, block: type, layers: list[int], doc: str, **fixed: int):
    return make_builder(name, partial(ResNet, block, layers), doc, __name__, fixed=fixed)


resnet18 = _builder("resnet18", BasicBlock, [2, 2, 2, 2], "ResNet-18")
resnet34 = _builder("resnet34", BasicBlock, [3, 4, 6, 3], "ResNet-34")
resnet50 = _builder("resnet50", Bottleneck, [3, 4, 6, 3], "ResNet-50")
resnet101 = _builder("resnet101", Bottleneck, [3, 4, 23, 3], "ResNet-101")
resnet152 = _builder("resnet152", Bottleneck, [3, 8, 36, 3], "ResNet-152")
resnext50_32x4d = _builder("resnext50_32x4d", Bottleneck, [3, 4, 6, 3], "ResNeXt-50 32x4d",
                           groups=32, width_per_group=4)
resnext101_32x8d = _builder("resnext101_32x8d", Bottleneck, [3, 4, 23, 3],
                            "ResNeXt-101 32x8d", groups=32, width_per_group=8)
resnext101_64x4d = _builder("resnext101_64x4d", Bottleneck, [3, 4, 23, 3],
                            "ResNeXt-101 64x4d", groups=64, width_per_group=4)
wide_resnet50_2 = _builder("wide_resnet50_2", Bottleneck, [3, 4, 6, 3], "Wide ResNet-50-2",
                           width_per_group=128)
wide_resnet101_2 = _builder("wide_resnet101_2", Bottleneck, [3, 4, 23, 3],
                            "Wide ResNet-101-2", width_per_group=128)
