"""``torchvision.transforms.v2`` under its names. A v2 transform takes a whole sample: any
nesting of tuples, lists and dicts holding images, videos, masks, bounding boxes
(:mod:`ember.vision.tv_tensors`), labels and other values. It draws its random parameters
once per call and applies them to every input by its type: a crop moves the image, its masks
and its boxes together; colour changes touch images only; the rest passes through. Key points
(``KeyPoints``) move with every geometric transform as boxes do. A plain tensor is an image
when the sample has no ``Image`` or ``Video`` (the first one found only).

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

from ember.vision.transforms.policies import AutoAugmentPolicy
from ember.vision.transforms.v2 import functional
from ember.vision.transforms.v2._augment import JPEG, CutMix, MixUp, RandomErasing
from ember.vision.transforms.v2._auto_augment import (
    AugMix,
    AutoAugment,
    RandAugment,
    TrivialAugmentWide,
)
from ember.vision.transforms.v2._color import (
    RGB,
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
    FiveCrop,
    Pad,
    RandomAffine,
    RandomCrop,
    RandomHorizontalFlip,
    RandomResize,
    RandomResizedCrop,
    RandomRotation,
    RandomVerticalFlip,
    Resize,
    TenCrop,
)
from ember.vision.transforms.v2._meta import (
    ClampBoundingBoxes,
    ClampKeyPoints,
    ConvertBoundingBoxFormat,
    SetClampingMode,
)
from ember.vision.transforms.v2._misc import (
    ConvertImageDtype,
    GaussianBlur,
    GaussianNoise,
    Identity,
    Lambda,
    LinearTransformation,
    Normalize,
    SanitizeBoundingBoxes,
    SanitizeKeyPoints,
    ToDtype,
)
from ember.vision.transforms.v2._temporal import UniformTemporalSubsample
from ember.vision.transforms.v2._transform import Transform
from ember.vision.transforms.v2._type_conversion import (
    PILToTensor,
    ToImage,
    ToPILImage,
    ToPureTensor,
    ToTensor,
)
from ember.vision.transforms.v2._utils import (
    check_type,
    get_bounding_boxes,
    get_keypoints,
    has_all,
    has_any,
    query_chw,
    query_size,
)
from ember.vision.transforms.v2._warp import ElasticTransform, RandomPerspective
from ember.vision.transforms.v2.functional import InterpolationMode

__all__ = ["AugMix", "AutoAugment", "AutoAugmentPolicy", "CenterCrop", "ClampBoundingBoxes",
           "ClampKeyPoints", "ColorJitter", "Compose", "ConvertBoundingBoxFormat",
           "ConvertImageDtype", "CutMix", "ElasticTransform", "FiveCrop", "GaussianBlur",
           "GaussianNoise", "Grayscale", "Identity", "InterpolationMode", "JPEG", "Lambda",
           "LinearTransformation", "MixUp", "Normalize", "PILToTensor", "Pad", "RGB", "RandAugment",
           "RandomAdjustSharpness", "RandomAffine", "RandomApply", "RandomAutocontrast",
           "RandomChannelPermutation", "RandomChoice", "RandomCrop", "RandomEqualize",
           "RandomErasing", "RandomGrayscale", "RandomHorizontalFlip", "RandomInvert",
           "RandomIoUCrop", "RandomOrder", "RandomPerspective", "RandomPhotometricDistort",
           "RandomPosterize", "RandomResize", "RandomResizedCrop", "RandomRotation",
           "RandomShortestSize", "RandomSolarize", "RandomVerticalFlip", "RandomZoomOut",
           "Resize", "SanitizeBoundingBoxes", "SanitizeKeyPoints", "ScaleJitter",
           "SetClampingMode", "TenCrop", "ToDtype",
           "ToImage", "ToPILImage", "ToPureTensor", "ToTensor", "Transform", "TrivialAugmentWide",
           "UniformTemporalSubsample", "check_type", "functional", "get_bounding_boxes",
           "get_keypoints", "has_all", "has_any", "query_chw", "query_size"]
