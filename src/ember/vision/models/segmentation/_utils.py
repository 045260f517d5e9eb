"""What torchvision's segmentation models share: the frame of FCN and DeepLabV3 (a backbone
giving ``{"out", "aux"}`` feature maps, a classifier head on each, logits upsampled bilinearly
to the input size), the MobileNetV3 backbone of DeepLabV3 and LR-ASPP, the refusal of
pretrained backbone weights and the default number of classes."""

from __future__ import annotations

from collections import OrderedDict

from ember import Tensor, nn
from ember.nn import functional as F
from ember.vision.models._api import _no_weights
from ember.vision.models._utils import IntermediateLayerGetter
from ember.vision.models.mobilenetv3 import mobilenet_v3_large


class _SimpleSegmentationModel(nn.Module):
    """``backbone`` (returning a dict with ``"out"`` and, for ``aux_classifier``, ``"aux"``),
    ``classifier`` and an optional ``aux_classifier``; the forward returns an ``OrderedDict``
    with ``"out"`` (and ``"aux"``) logits of the input's height and width."""

    def __init__(self, backbone: nn.Module, classifier: nn.Module,
                 aux_classifier: nn.Module | None = None) -> None:
        super().__init__()
        self.backbone = backbone
        self.classifier = classifier
        self.aux_classifier = aux_classifier

    def forward(self, x: Tensor) -> OrderedDict[str, Tensor]:
        size = tuple(x.shape[-2:])
        features = self.backbone(x)
        result: OrderedDict[str, Tensor] = OrderedDict()
        result["out"] = F.interpolate(self.classifier(features["out"]), size=size,
                                      mode="bilinear", align_corners=False)
        if self.aux_classifier is not None:
            result["aux"] = F.interpolate(self.aux_classifier(features["aux"]), size=size,
                                          mode="bilinear", align_corners=False)
        return result


def voc_classes(num_classes: int | None) -> int:
    """``num_classes``, or torchvision's default when None: Pascal VOC's 20 classes and the
    background."""
    return 21 if num_classes is None else num_classes


def refuse_backbone_weights(name: str, weights_backbone: object,
                            pretrained_backbone: bool | None) -> None:
    """Raises as the builders do for ``weights``: torchvision's segmentation builders fetch
    ImageNet backbone weights by default, Ember's start from random ones (none are bundled)."""
    if pretrained_backbone:
        raise _no_weights(name, "pretrained_backbone=True")
    if weights_backbone is not None:
        raise _no_weights(name, f"weights_backbone={weights_backbone!r}")


def mobilenet_v3_large_features(return_c2: str | None, return_c5: str
                                ) -> tuple[IntermediateLayerGetter, int, int]:
    """A dilated MobileNetV3-Large's ``features`` returning its last layer (C5, output stride
    16) as ``return_c5`` and, when ``return_c2`` is given, the last block at output stride 8
    (C2) under that name; also the two layers' channel counts."""
    features = mobilenet_v3_large(dilated=True).features
    # C0 (the stem), the blocks that would stride (dilated or not), and the last layer
    stages = ([0] + [i for i, b in enumerate(features) if getattr(b, "_is_cn", False)]
              + [len(features) - 1])
    c2, c5 = stages[-4], stages[-1]
    return_layers = {str(c5): return_c5, **({str(c2): return_c2} if return_c2 else {})}
    return (IntermediateLayerGetter(features, return_layers), features[c2].out_channels,
            features[c5].out_channels)
