"""The examples in the docstrings of ember.vision's ops and utils run and print what they say."""

import doctest
import importlib

import numpy as np
import pytest

import ember
from ember import nn

MODULES = ["ember.vision.ops", "ember.vision.ops.boxes", "ember.vision.ops.nms",
           "ember.vision.ops.losses", "ember.vision.ops.layers", "ember.vision.ops.roi",
           "ember.vision.utils", "ember.vision.transforms.functional",
           "ember.vision.transforms.color", "ember.vision.transforms.augment",
           "ember.vision.transforms.autoaugment", "ember.vision.transforms.basic",
           "ember.vision.transforms.warp", "ember.vision.transforms.geometric",
           "ember.vision.transforms.convert", "ember.vision.transforms.policies",
           "ember.vision.transforms.augmix",
           "ember.vision.models", "ember.vision.models._api", "ember.vision.models.alexnet",
           "ember.vision.models.convnext", "ember.vision.models.densenet",
           "ember.vision.models.efficientnet", "ember.vision.models.mnasnet",
           "ember.vision.models.mobilenetv2",
           "ember.vision.models.mobilenetv3", "ember.vision.models.resnet",
           "ember.vision.models.shufflenetv2", "ember.vision.models.squeezenet",
           "ember.vision.models.vgg", "ember.vision.models.vision_transformer",
           "ember.vision.models.googlenet", "ember.vision.models.inception",
           "ember.vision.models.regnet", "ember.vision.models.swin_transformer",
           "ember.vision.models.maxvit",
           "ember.vision.models._utils", "ember.vision.models.segmentation",
           "ember.vision.models.segmentation.fcn", "ember.vision.models.segmentation.deeplabv3",
           "ember.vision.models.segmentation.lraspp"]
MODULES += [f"ember.vision.tv_tensors.{m}" for m in ("_tv_tensor", "_image",
                                                      "_bounding_boxes", "_wrap", "_keypoints")]
MODULES += ["ember.vision.ops.feature_pyramid_network", "ember.vision.ops.poolers",
            "ember.vision.models.detection"]
MODULES += [f"ember.vision.models.detection.{m}" for m in (
    "_utils", "anchor_utils", "image_list", "transform", "backbone_utils", "rpn", "faster_rcnn",
    "mask_rcnn", "retinanet", "roi_heads", "keypoint_rcnn", "fcos", "ssd", "ssdlite")]
MODULES += ["ember.vision.transforms.v2"]
MODULES += [f"ember.vision.models.video{m}"
            for m in ("", ".resnet", ".s3d", ".swin_transformer", ".mvit")]
MODULES += [f"ember.vision.{m}" for m in ("datasets.vision", "ops.deform_conv",
                                           "ops.drop_block", "ops.ps_roi")]
MODULES += [f"ember.vision.transforms.v2.{m}" for m in (
    "_transform", "_geometry", "_detection", "_color", "_misc", "_meta", "_type_conversion",
    "_augment", "_container", "_auto_augment", "_temporal", "functional", "functional._utils",
    "functional._meta", "functional._box_geometry", "functional._geometry", "functional._color",
    "functional._type_conversion", "functional._temporal", "functional._keypoints",
    "functional._rotated_clamp", "functional._rotated_geometry", "functional._warp", "_utils",
    "_warp", "functional._misc")]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    extra = {**vars(module), "ember": ember, "nn": nn, "np": np}
    result = doctest.testmod(module, extraglobs=extra, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0
