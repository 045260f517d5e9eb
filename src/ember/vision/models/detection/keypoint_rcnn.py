"""Keypoint R-CNN (He et al., 2017) under torchvision's names: ``KeypointRCNN`` (Faster R-CNN
plus a keypoint branch predicting one heatmap per keypoint), its head and predictor, and the
``keypointrcnn_resnet50_fpn`` builder.

Example:
    >>> from ember.vision.models.detection.anchor_utils import AnchorGenerator
    >>> backbone = nn.Sequential(nn.Conv2d(3, 8, 3, stride=4, padding=1))
    >>> backbone.out_channels = 8
    >>> model = KeypointRCNN(backbone, 2, min_size=64, max_size=64,
    ...                      rpn_post_nms_top_n_test=10,
    ...                      rpn_anchor_generator=AnchorGenerator(((16, 32),), ((1.0,),)),
    ...                      box_roi_pool=MultiScaleRoIAlign(["0"], 7, 2),
    ...                      keypoint_roi_pool=MultiScaleRoIAlign(["0"], 7, 2),
    ...                      keypoint_head=KeypointRCNNHeads(8, [16]),
    ...                      keypoint_predictor=KeypointRCNNPredictor(16, 3))
    >>> sorted(model.eval()([ember.rand(3, 64, 64)])[0])
    ['boxes', 'keypoints', 'keypoints_scores', 'labels', 'scores']
"""

from __future__ import annotations

from typing import Any

import ember.nn.functional as F
from ember import nn
from ember.errors import ArgumentError
from ember.tensor import Tensor
from ember.vision.models import resnet
from ember.vision.models._api import make_builder
from ember.vision.models.detection._utils import kaiming_init_convs
from ember.vision.models.detection.backbone_utils import _resnet_fpn_extractor
from ember.vision.models.detection.faster_rcnn import FasterRCNN, _trainable_layers
from ember.vision.ops.poolers import MultiScaleRoIAlign

__all__ = ["KeypointRCNN", "KeypointRCNNHeads", "KeypointRCNNPredictor",
           "keypointrcnn_resnet50_fpn"]


class KeypointRCNNHeads(nn.Sequential):
    """3×3 convolutions each followed by ReLU (``layers`` gives their widths) over the pooled
    keypoint features; weights Kaiming-normal (fan out), biases zero.

    Example:
        >>> KeypointRCNNHeads(4, [8, 8])(ember.randn(2, 4, 14, 14)).shape
        ember.Size([2, 8, 14, 14])
    """

    def __init__(self, in_channels: int, layers: list[int] | tuple[int, ...]) -> None:
        blocks, width = [], in_channels
        for out in layers:
            blocks += [nn.Conv2d(width, out, 3, stride=1, padding=1), nn.ReLU(inplace=True)]
            width = out
        super().__init__(*blocks)
        kaiming_init_convs(self)


class KeypointRCNNPredictor(nn.Module):
    """One heatmap logit map per keypoint: a stride-2 4×4 transposed convolution
    (``kps_score_lowres``), then bilinear upsampling by ``up_scale`` (2), so 14×14 features
    give 56×56 heatmaps.

    Example:
        >>> KeypointRCNNPredictor(4, 17)(ember.randn(2, 4, 14, 14)).shape
        ember.Size([2, 17, 56, 56])
    """

    def __init__(self, in_channels: int, num_keypoints: int) -> None:
        super().__init__()
        kernel = 4
        self.kps_score_lowres = nn.ConvTranspose2d(in_channels, num_keypoints, kernel, stride=2,
                                                   padding=kernel // 2 - 1)
        nn.init.kaiming_normal_(self.kps_score_lowres.weight, mode="fan_out",
                                nonlinearity="relu")
        nn.init.zeros_(self.kps_score_lowres.bias)
        self.up_scale = 2
        self.out_channels = num_keypoints

    def forward(self, x: Tensor) -> Tensor:
        return F.interpolate(self.kps_score_lowres(x), scale_factor=float(self.up_scale),
                             mode="bilinear", align_corners=False,
                             recompute_scale_factor=False)


class KeypointRCNN(FasterRCNN):
    """torchvision's ``KeypointRCNN(backbone, num_classes=None, ..., keypoint_roi_pool=None,
    keypoint_head=None, keypoint_predictor=None, num_keypoints=None, **kwargs)``:
    :class:`FasterRCNN` with a keypoint branch (14×14 RoI Align, eight 512-channel
    convolutions, 56×56 heatmaps for ``num_keypoints``, default 17). ``min_size`` defaults to
    torchvision's multi-scale training sizes (640 to 800). Training targets also need
    ``"keypoints"`` (``(N, K, 3)`` float: x, y, visibility; 0 means not labelled) and the
    losses gain ``loss_keypoint``; eval outputs gain ``"keypoints"`` (``(N, K, 3)``, in the
    input's pixels) and ``"keypoints_scores"`` (``(N, K)`` heatmap logits).
    """

    def __init__(self, backbone: nn.Module, num_classes: int | None = None,
                 min_size: int | tuple[int, ...] | None = None, max_size: int = 1333, *,
                 keypoint_roi_pool: MultiScaleRoIAlign | None = None,
                 keypoint_head: nn.Module | None = None,
                 keypoint_predictor: nn.Module | None = None,
                 num_keypoints: int | None = None, **kwargs: Any) -> None:
        if keypoint_roi_pool is not None and not isinstance(keypoint_roi_pool,
                                                            MultiScaleRoIAlign):
            raise TypeError(f"keypoint_roi_pool should be of type MultiScaleRoIAlign or None "
                            f"instead of {type(keypoint_roi_pool).__name__}")
        if num_keypoints is not None and keypoint_predictor is not None:
            raise ArgumentError("num_keypoints should be None when keypoint_predictor is "
                                "specified")
        num_keypoints = 17 if num_keypoints is None else num_keypoints
        min_size = (640, 672, 704, 736, 768, 800) if min_size is None else min_size
        out_channels = getattr(backbone, "out_channels", None)
        keypoint_roi_pool = keypoint_roi_pool or MultiScaleRoIAlign(["0", "1", "2", "3"], 14, 2)
        if keypoint_head is None and out_channels is not None:
            keypoint_head = KeypointRCNNHeads(out_channels, (512,) * 8)
        keypoint_predictor = keypoint_predictor or KeypointRCNNPredictor(512, num_keypoints)
        super().__init__(backbone, num_classes, min_size, max_size, **kwargs)
        self.roi_heads.keypoint_roi_pool = keypoint_roi_pool
        self.roi_heads.keypoint_head = keypoint_head
        self.roi_heads.keypoint_predictor = keypoint_predictor


def _keypointrcnn_resnet50_fpn(num_classes: int = 2, num_keypoints: int = 17,
                               weights_backbone: Any = None,
                               trainable_backbone_layers: int | None = None,
                               **kwargs: Any) -> KeypointRCNN:
    layers = _trainable_layers(weights_backbone, trainable_backbone_layers, 5)
    backbone = _resnet_fpn_extractor(resnet.resnet50(norm_layer=nn.BatchNorm2d), layers)
    return KeypointRCNN(backbone, num_classes, num_keypoints=num_keypoints, **kwargs)


keypointrcnn_resnet50_fpn = make_builder(
    "keypointrcnn_resnet50_fpn", _keypointrcnn_resnet50_fpn,
    "Keypoint R-CNN with a ResNet-50-FPN backbone", __name__)
