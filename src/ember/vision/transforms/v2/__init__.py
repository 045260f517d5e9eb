"""``torchvision.transforms.v2`` under its names. A v2 transform takes a whole sample: any
nesting of tuples, lists and dicts holding images, videos, masks, bounding boxes
(:mod:`ember.vision.tv_tensors`), labels and other values. It draws its random parameters
once per call and applies them to every input by its type: a crop moves the image, its masks
and its boxes together; colour changes touch images only; the rest passes through. A plain
tensor is an image when the sample has no ``Image`` or ``Video`` (the first one found only).

Example:
    >>> from ember.vision import tv_tensors
    >>> from ember.vision.transforms import v2
    >>> img = tv_tensors.Image(ember.rand(3, 32, 32))
    >>> boxes = tv_tensors.BoundingBoxes([[4, 4, 20, 28]], format="XYXY", canvas_size=(32, 32))
    >>> out = v2.Compose([v2.RandomHorizontalFlip(p=1.0), v2.Resize(16)])(
    ...     {"image": img, "boxes": boxes, "labels": ember.tensor([1])})
    >>> out["boxes"].tolist(), out["boxes"].canvas_size, out["labels"].tolist()
    ([[6, 2, 14, 14]], (16, 16), [1])
"""

from ember.vision.transforms.v2 import functional
from ember.vision.transforms.v2._augment import CutMix, MixUp, RandomErasing
from ember.vision.transforms.v2._auto_augment import RandAugment, TrivialAugmentWide
from ember.vision.transforms.v2._color import (
    ColorJitter,
    Grayscale,
    RandomAdjustSharpness,
    RandomAutocontrast,
    RandomChannelPermutation,
    RandomEqualize,
    RandomGrayscale,
    RandomInvert,
    RandomPhotometricDistort,
    RandomPosterize,
    RandomSolarize,
)
from ember.vision.transforms.v2._container import Compose, RandomApply, RandomChoice, RandomOrder
from ember.vision.transforms.v2._detection import (
    RandomIoUCrop,
    RandomShortestSize,
    RandomZoomOut,
    ScaleJitter,
)
from ember.vision.transforms.v2._geometry import (
    CenterCrop,
    Pad,
    RandomAffine,
    RandomCrop,
    RandomHorizontalFlip,
    RandomResizedCrop,
    RandomRotation,
    RandomVerticalFlip,
    Resize,
)
from ember.vision.transforms.v2._meta import ClampBoundingBoxes, ConvertBoundingBoxFormat
from ember.vision.transforms.v2._misc import (
    GaussianBlur,
    Lambda,
    Normalize,
    SanitizeBoundingBoxes,
    ToDtype,
)
from ember.vision.transforms.v2._temporal import UniformTemporalSubsample
from ember.vision.transforms.v2._transform import Transform
from ember.vision.transforms.v2._type_conversion import ToImage, ToPureTensor
from ember.vision.transforms.v2.functional import InterpolationMode

__all__ = ["CenterCrop", "ClampBoundingBoxes", "ColorJitter", "Compose",
           "ConvertBoundingBoxFormat", "CutMix", "GaussianBlur", "Grayscale",
           "InterpolationMode", "Lambda", "MixUp", "Normalize", "Pad", "RandAugment",
           "RandomAdjustSharpness", "RandomAffine", "RandomApply", "RandomAutocontrast",
           "RandomChannelPermutation", "RandomChoice", "RandomCrop", "RandomEqualize",
           "RandomErasing", "RandomGrayscale",
           "RandomHorizontalFlip", "RandomInvert", "RandomIoUCrop", "RandomOrder",
           "RandomPhotometricDistort", "RandomPosterize", "RandomResizedCrop",
           "RandomRotation", "RandomShortestSize", "RandomSolarize", "RandomVerticalFlip",
           "RandomZoomOut", "Resize", "SanitizeBoundingBoxes", "ScaleJitter", "ToDtype",
           "ToImage", "ToPureTensor", "Transform", "TrivialAugmentWide",
           "UniformTemporalSubsample", "functional"]
