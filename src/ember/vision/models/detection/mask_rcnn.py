"""Mask R-CNN (He et al., 2017) under torchvision's names: ``MaskRCNN`` (Faster R-CNN plus a
mask branch), its mask head and predictor, and the ``maskrcnn_resnet50_fpn`` builder.

Example:
    >>> from ember.vision.models.detection.anchor_utils import AnchorGenerator
    >>> backbone = nn.Sequential(nn.Conv2d(3, 8, 3, stride=4, padding=1))
    >>> backbone.out_channels = 8
    >>> model = MaskRCNN(backbone, 2, min_size=64, max_size=64, rpn_post_nms_top_n_test=10,
    ...                  rpn_anchor_generator=AnchorGenerator(((16, 32),), ((1.0,),)),
    ...                  box_roi_pool=MultiScaleRoIAlign(["0"], 7, 2),
    ...                  mask_roi_pool=MultiScaleRoIAlign(["0"], 14, 2))
    >>> sorted(model.eval()([ember.rand(3, 64, 64)])[0])
    ['boxes', 'labels', 'masks', 'scores']
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from ember import nn
from ember.errors import ArgumentError
from ember.vision.models import resnet
from ember.vision.models._api import make_builder
from ember.vision.models.detection._utils import kaiming_init_convs
from ember.vision.models.detection.backbone_utils import _resnet_fpn_extractor
from ember.vision.models.detection.faster_rcnn import FasterRCNN, _trainable_layers, _v2_parts
from ember.vision.ops.layers import Conv2dNormActivation
from ember.vision.ops.poolers import MultiScaleRoIAlign

__all__ = ["MaskRCNN", "MaskRCNNHeads", "MaskRCNNPredictor", "maskrcnn_resnet50_fpn",
           "maskrcnn_resnet50_fpn_v2"]


class MaskRCNNHeads(nn.Sequential):
    """3×3 convolutions with ReLU (``layers`` gives their widths) over the pooled mask
    features.

    Example:
        >>> MaskRCNNHeads(4, [8, 8], 1)(ember.randn(2, 4, 14, 14)).shape
        ember.Size([2, 8, 14, 14])
    """

    def __init__(self, in_channels: int, layers: list[int] | tuple[int, ...], dilation: int,
                 norm_layer: Callable[..., nn.Module] | None = None) -> None:
        blocks, width = [], in_channels
        for out in layers:
            blocks.append(Conv2dNormActivation(width, out, kernel_size=3, padding=dilation,
                                               dilation=dilation, norm_layer=norm_layer))
            width = out
        super().__init__(*blocks)
        kaiming_init_convs(self)


class MaskRCNNPredictor(nn.Sequential):
    """A stride-2 transposed convolution (``conv5_mask``), ReLU, and a 1×1 convolution to one
    mask logit map per class (``mask_fcn_logits``).

    Example:
        >>> MaskRCNNPredictor(4, 8, 3)(ember.randn(2, 4, 14, 14)).shape
        ember.Size([2, 3, 28, 28])
    """

    def __init__(self, in_channels: int, dim_reduced: int, num_classes: int) -> None:
        super().__init__(OrderedDict([
            ("conv5_mask", nn.ConvTranspose2d(in_channels, dim_reduced, 2, 2, 0)),
            ("relu", nn.ReLU(inplace=True)),
            ("mask_fcn_logits", nn.Conv2d(dim_reduced, num_classes, 1, 1, 0))]))
        for name, param in self.named_parameters():
            if "weight" in name:
                nn.init.kaiming_normal_(param, mode="fan_out", nonlinearity="relu")


class MaskRCNN(FasterRCNN):
    """torchvision's ``MaskRCNN(backbone, num_classes=None, ..., mask_roi_pool=None,
    mask_head=None, mask_predictor=None, **kwargs)``: :class:`FasterRCNN` with a mask branch
    (14×14 RoI Align, four 256-channel convolutions, 28×28 logits). Training targets also
    need ``"masks"`` (``(N, H, W)`` uint8); eval outputs gain ``"masks"`` (``(N, 1, H, W)``
    probabilities over the input image).
    """

    def __init__(self, backbone: nn.Module, num_classes: int | None = None, *,
                 mask_roi_pool: MultiScaleRoIAlign | None = None,
                 mask_head: nn.Module | None = None, mask_predictor: nn.Module | None = None,
                 **kwargs: Any) -> None:
        if mask_roi_pool is not None and not isinstance(mask_roi_pool, MultiScaleRoIAlign):
            raise TypeError(f"mask_roi_pool should be of type MultiScaleRoIAlign or None "
                            f"instead of {type(mask_roi_pool).__name__}")
        if num_classes is not None and mask_predictor is not None:
            raise ArgumentError("num_classes should be None when mask_predictor is specified")
        out_channels = getattr(backbone, "out_channels", None)
        mask_roi_pool = mask_roi_pool or MultiScaleRoIAlign(["0", "1", "2", "3"], 14, 2)
        if mask_head is None and out_channels is not None:
            mask_head = MaskRCNNHeads(out_channels, (256, 256, 256, 256), 1)
        if mask_predictor is None and num_classes is not None:
            mask_predictor = MaskRCNNPredictor(256, 256, num_classes)
        super().__init__(backbone, num_classes, **kwargs)
        self.roi_heads.mask_roi_pool = mask_roi_pool
        self.roi_heads.mask_head = mask_head
        self.roi_heads.mask_predictor = mask_predictor


def _maskrcnn_resnet50_fpn(num_classes: int = 91, weights_backbone: Any = None,
                           trainable_backbone_layers: int | None = None,
                           **kwargs: Any) -> MaskRCNN:
    layers = _trainable_layers(weights_backbone, trainable_backbone_layers, 5)
    backbone = _resnet_fpn_extractor(resnet.resnet50(norm_layer=nn.BatchNorm2d), layers)
    return MaskRCNN(backbone, num_classes=num_classes, **kwargs)


maskrcnn_resnet50_fpn = make_builder("maskrcnn_resnet50_fpn", _maskrcnn_resnet50_fpn,
                                     "Mask R-CNN with a ResNet-50-FPN backbone", __name__)


def _maskrcnn_resnet50_fpn_v2(num_classes: int = 91, weights_backbone: Any = None,
                              trainable_backbone_layers: int | None = None,
                              **kwargs: Any) -> MaskRCNN:
    backbone, rpn_head, box_head = _v2_parts(weights_backbone, trainable_backbone_layers)
    mask_head = MaskRCNNHeads(backbone.out_channels, [256, 256, 256, 256], 1,
                              norm_layer=nn.BatchNorm2d)
    return MaskRCNN(backbone, num_classes=num_classes, rpn_head=rpn_head, box_head=box_head,
                    mask_head=mask_head, **kwargs)


maskrcnn_resnet50_fpn_v2 = make_builder(
    "maskrcnn_resnet50_fpn_v2", _maskrcnn_resnet50_fpn_v2,
    "Mask R-CNN v2 (Faster R-CNN v2's parts and a batch-normed mask head) with a "
    "ResNet-50-FPN backbone", __name__)
