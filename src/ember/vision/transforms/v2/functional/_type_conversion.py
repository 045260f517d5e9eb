"""Conversions into and out of the tv_tensor types, and v1's PIL conversions
(``pil_to_tensor``, ``to_pil_image``, ``to_tensor``) under their v2 names."""

from __future__ import annotations

from typing import Any

import numpy as np

import ember
from ember.tensor import Tensor
from ember.vision.transforms._pil import native_order
from ember.vision.transforms.convert import pil_to_tensor, to_pil_image
from ember.vision.transforms.functional import to_tensor
from ember.vision.tv_tensors import Image, TVTensor

__all__ = ["pil_to_tensor", "to_image", "to_pil_image", "to_pure_tensor", "to_tensor"]


def to_image(inpt: Any) -> Image:
    """An :class:`~ember.vision.tv_tensors.Image` from a tensor ``(..., C, H, W)``, a NumPy
    array ``(H, W[, C])`` or anything ``np.asarray`` reads as one (a PIL image); values and
    dtype are kept.

    Example:
        >>> to_image(np.zeros((4, 5, 3), np.uint8)).shape
        ember.Size([3, 4, 5])
    """
    if isinstance(inpt, Tensor):
        return Image(inpt)
    if isinstance(inpt, np.ndarray) or hasattr(inpt, "__array_interface__"):
        array = np.atleast_3d(native_order(np.asarray(inpt)))  # ("I;16B": >u2)
        return Image(ember.from_numpy(np.ascontiguousarray(array.transpose(2, 0, 1))))
    raise TypeError(f"to_image: input can be a tensor, a NumPy array or a PIL image, got "
                    f"{type(inpt).__name__}")


def to_pure_tensor(inpt: Tensor) -> Tensor:
    """A tv_tensor as a plain tensor (the same data and history).

    Example:
        >>> type(to_pure_tensor(Image(ember.zeros(1, 2, 2)))).__name__
        'Tensor'
    """
    return inpt.as_subclass(Tensor) if isinstance(inpt, TVTensor) else inpt
