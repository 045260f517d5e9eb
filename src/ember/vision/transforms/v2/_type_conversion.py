"""Conversions into and out of the tv_tensor types as v2 transforms."""

from __future__ import annotations

from typing import Any

from ember.vision import tv_tensors
from ember.vision.transforms.v2 import functional as F
from ember.vision.transforms.v2._transform import Transform
from ember.vision.transforms.v2._utils import is_array_image
from ember.vision.transforms.v2.functional import is_pure_tensor

__all__ = ["ToImage", "ToPureTensor"]


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
