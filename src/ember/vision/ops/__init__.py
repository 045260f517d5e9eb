"""``ember.vision.ops``: torchvision's detection operators and model building blocks.

Example:
    >>> from ember.vision import ops
    >>> ops.box_iou(ember.tensor([[0.0, 0, 2, 2]]), ember.tensor([[1.0, 1, 3, 3]]))
    tensor([[0.1429]])
"""

from ember.vision.ops.boxes import (
    box_area,
    box_convert,
    box_iou,
    clip_boxes_to_image,
    complete_box_iou,
    distance_box_iou,
    generalized_box_iou,
    masks_to_boxes,
    remove_small_boxes,
)
from ember.vision.ops.deform_conv import DeformConv2d, deform_conv2d
from ember.vision.ops.drop_block import DropBlock2d, DropBlock3d, drop_block2d, drop_block3d
from ember.vision.ops.feature_pyramid_network import (
    ExtraFPNBlock,
    FeaturePyramidNetwork,
    LastLevelMaxPool,
    LastLevelP6P7,
)
from ember.vision.ops.layers import (
    MLP,
    Conv2dNormActivation,
    Conv3dNormActivation,
    FrozenBatchNorm2d,
    Permute,
    SqueezeExcitation,
    StochasticDepth,
    stochastic_depth,
)
from ember.vision.ops.losses import (
    complete_box_iou_loss,
    distance_box_iou_loss,
    generalized_box_iou_loss,
    sigmoid_focal_loss,
)
from ember.vision.ops.nms import batched_nms, nms
from ember.vision.ops.poolers import MultiScaleRoIAlign
from ember.vision.ops.ps_roi import PSRoIAlign, PSRoIPool, ps_roi_align, ps_roi_pool
from ember.vision.ops.roi import RoIAlign, RoIPool, roi_align, roi_pool

__all__ = ["MLP", "Conv2dNormActivation", "Conv3dNormActivation", "DeformConv2d", "DropBlock2d",
           "DropBlock3d", "ExtraFPNBlock", "FeaturePyramidNetwork", "FrozenBatchNorm2d",
           "LastLevelMaxPool", "LastLevelP6P7", "MultiScaleRoIAlign", "PSRoIAlign", "PSRoIPool",
           "Permute", "RoIAlign", "RoIPool", "SqueezeExcitation", "StochasticDepth",
           "batched_nms", "box_area", "box_convert", "box_iou", "clip_boxes_to_image",
           "complete_box_iou", "complete_box_iou_loss", "deform_conv2d", "distance_box_iou",
           "distance_box_iou_loss", "drop_block2d", "drop_block3d", "generalized_box_iou",
           "generalized_box_iou_loss", "masks_to_boxes", "nms", "ps_roi_align", "ps_roi_pool",
           "remove_small_boxes", "roi_align", "roi_pool", "sigmoid_focal_loss",
           "stochastic_depth"]
