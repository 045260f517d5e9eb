"""Typed tensors under ``torchvision.tv_tensors``' names: :class:`Image`, :class:`Video`,
:class:`Mask` and :class:`BoundingBoxes` tell ``ember.vision.transforms.v2`` what each input
of a sample is, so one random crop moves the image, its boxes and its masks together."""

from ember.vision.tv_tensors._bounding_boxes import BoundingBoxes, BoundingBoxFormat
from ember.vision.tv_tensors._image import Image, Mask, Video
from ember.vision.tv_tensors._tv_tensor import TVTensor
from ember.vision.tv_tensors._wrap import wrap

__all__ = ["BoundingBoxFormat", "BoundingBoxes", "Image", "Mask", "TVTensor", "Video", "wrap"]
