"""Image transforms under torchvision's names (``torchvision.transforms`` →
``ember.vision.transforms``; ``transforms.functional`` has the functions behind them).

Images are NumPy arrays (``(H, W)`` or ``(H, W, C)``, as a PIL image converts to) before
:class:`ToTensor`, and tensors ``(..., C, H, W)`` after it; the geometric and colour
transforms take both. Random transforms draw from Ember's default generator, so
``ember.manual_seed`` makes them repeat, or from the ``generator`` they are given (an Ember
extension).
"""

from ember.vision.transforms import functional
from ember.vision.transforms.augment import (
    ColorJitter,
    GaussianBlur,
    Grayscale,
    RandomAdjustSharpness,
    RandomApply,
    RandomAutocontrast,
    RandomChoice,
    RandomEqualize,
    RandomErasing,
    RandomGrayscale,
    RandomInvert,
    RandomOrder,
    RandomPosterize,
    RandomResizedCrop,
    RandomRotation,
    RandomSolarize,
    Resize,
)
from ember.vision.transforms.augmix import AugMix
from ember.vision.transforms.autoaugment import RandAugment, RandomAffine, TrivialAugmentWide
from ember.vision.transforms.basic import (
    CenterCrop,
    Compose,
    Lambda,
    LinearTransformation,
    Normalize,
    Pad,
    RandomCrop,
    RandomHorizontalFlip,
    RandomVerticalFlip,
    ToTensor,
    crop,
    pad,
)
from ember.vision.transforms.convert import ConvertImageDtype, PILToTensor, ToPILImage
from ember.vision.transforms.functional import InterpolationMode
from ember.vision.transforms.geometric import (
    ElasticTransform,
    FiveCrop,
    RandomPerspective,
    TenCrop,
)
from ember.vision.transforms.policies import AutoAugment, AutoAugmentPolicy

__all__ = ["AugMix", "AutoAugment", "AutoAugmentPolicy", "CenterCrop", "ColorJitter", "Compose",
           "ConvertImageDtype",
           "ElasticTransform", "FiveCrop", "GaussianBlur", "Grayscale", "InterpolationMode",
           "Lambda", "LinearTransformation", "Normalize", "PILToTensor", "Pad", "RandAugment",
           "RandomAdjustSharpness", "RandomAffine", "RandomApply", "RandomAutocontrast",
           "RandomChoice", "RandomCrop", "RandomEqualize", "RandomErasing", "RandomGrayscale",
           "RandomHorizontalFlip", "RandomInvert", "RandomOrder", "RandomPerspective",
           "RandomPosterize", "RandomResizedCrop", "RandomRotation", "RandomSolarize",
           "RandomVerticalFlip", "Resize", "TenCrop", "ToPILImage", "ToTensor",
           "TrivialAugmentWide", "crop", "functional", "pad"]
