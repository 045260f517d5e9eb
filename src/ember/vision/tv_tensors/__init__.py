"""Typed tensors under ``torchvision.tv_tensors``' names: :class:`Image`, :class:`Video`,
:class:`Mask`, :class:`BoundingBoxes` and :class:`KeyPoints` tell
``ember.vision.transforms.v2`` what each input of a sample is, so one random crop moves the
image, its boxes, masks and key points together."""

from ember.vision.tv_tensors._bounding_boxes import (
    BoundingBoxes,
    BoundingBoxFormat,
    is_rotated_bounding_format,
)
from ember.vision.tv_tensors._image import Image, Mask, Video
from ember.vision.tv_tensors._keypoints import KeyPoints
from ember.vision.tv_tensors._tv_tensor import TVTensor, set_return_type
from ember.vision.tv_tensors._wrap import wrap

__all__ = ["BoundingBoxFormat", "BoundingBoxes", "Image", "KeyPoints", "Mask", "TVTensor", "Video",
           "is_rotated_bounding_format", "set_return_type", "wrap"]
