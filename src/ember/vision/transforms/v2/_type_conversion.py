"""Conversions into and out of the tv_tensor types, and to and from PIL images, as v2
transforms."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.vision import tv_tensors
from ember.vision.transforms._pil import is_pil_image
from ember.vision.transforms.v2 import functional as F
from ember.vision.transforms.v2._transform import Transform
from ember.vision.transforms.v2._utils import is_array_image
from ember.vision.transforms.v2.functional import is_pure_tensor

__all__ = ["PILToTensor", "ToImage", "ToPILImage", "ToPureTensor", "ToTensor"]


class ToImage(Transform):
    """Makes the image of the sample (a NumPy array ``(H, W[, C])``, a PIL image, or the pure
    tensor taken as the image) an :class:`~ember.vision.tv_tensors.Image`; values and dtype
    are kept (follow with ``ToDtype(ember.float32, scale=True)`` for ``ToTensor``'s result).

    Example:
        >>> import numpy as np
        >>> type(ToImage()(np.zeros((2, 2, 3), np.uint8))).__name__
        'Image'
    """

    _transformed_types = (is_pure_tensor, is_array_image)

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return F.to_image(inpt)


class ToPureTensor(Transform):
    """Makes every tv_tensor of the sample a plain tensor (the same data).

    Example:
        >>> from ember.vision import tv_tensors
        >>> type(ToPureTensor()(tv_tensors.Image(ember.zeros(1, 2, 2)))).__name__
        'Tensor'
    """

    _transformed_types = (tv_tensors.TVTensor,)

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return F.to_pure_tensor(inpt)


class PILToTensor(Transform):
    """Makes the sample's PIL image a plain ``(C, H, W)`` tensor of its own dtype (values
    unscaled).

    Example:
        >>> from PIL import Image
        >>> PILToTensor()(Image.new("RGB", (3, 2))).shape
        ember.Size([3, 2, 3])
    """

    _transformed_types = (is_pil_image,)

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return F.pil_to_tensor(inpt)


class ToPILImage(Transform):
    """Makes the sample's image (a tensor ``(C, H, W)``, an ``Image`` or an array) a PIL image
    of ``mode`` (default: the mode its channels and dtype give).

    Example:
        >>> ToPILImage()(ember.zeros(3, 2, 4)).size
        (4, 2)
    """

    _transformed_types = (is_pure_tensor, tv_tensors.Image, np.ndarray)

    def __init__(self, mode: str | None = None) -> None:
        super().__init__()
        self.mode = mode

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return F.to_pil_image(F.to_pure_tensor(inpt), mode=self.mode)


class ToTensor(Transform):
    """v1's ``ToTensor`` on the sample's PIL image or array: a float ``(C, H, W)`` tensor in
    ``[0, 1]`` (deprecated in torchvision's v2 for ``ToImage`` then
    ``ToDtype(float32, scale=True)``).

    Example:
        >>> ToTensor()(np.full((1, 2), 255, np.uint8)).tolist()
        [[[1.0, 1.0]]]
    """

    _transformed_types = (is_array_image,)

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return F.to_tensor(inpt)
