"""The tv_tensors that are a type and nothing more: :class:`Image`, :class:`Video` and
:class:`Mask`."""

from __future__ import annotations

from typing import Any

import numpy as np

import ember
from ember.errors import ArgumentError
from ember.tensor import Tensor
from ember.vision.tv_tensors._tv_tensor import TVTensor, _as_tensor


def _from_pil(data: Any) -> Any:
    """A PIL image (pixels behind ``__array_interface__``, no array or tensor) as a
    ``(C, H, W)`` array, as torchvision reads one; anything else as it is."""
    if not hasattr(data, "__array_interface__") or isinstance(data, (np.ndarray, Tensor)):
        return data
    return np.ascontiguousarray(np.atleast_3d(np.asarray(data)).transpose(2, 0, 1))


class Image(TVTensor):
    """An image ``(..., C, H, W)``; a 2-d ``(H, W)`` input gets a channel dimension, and a PIL
    image becomes ``(C, H, W)``.

    Example:
        >>> from ember.vision.tv_tensors import Image
        >>> Image(ember.zeros(4, 5)).shape
        ember.Size([1, 4, 5])
    """

    def __new__(cls, data: Any, *, dtype: ember.DType | None = None, device: Any = None,
                requires_grad: bool | None = None) -> Image:
        tensor = _as_tensor(_from_pil(data), dtype, device, requires_grad)
        if tensor.ndim < 2:
            raise ArgumentError(f"Image: expected an image of at least 2 dimensions (H, W), got "
                                f"shape {tuple(tensor.shape)}")
        if tensor.ndim == 2:
            tensor = tensor.unsqueeze(0)
        return cls._wrap(tensor)


class Video(TVTensor):
    """A video ``(..., T, C, H, W)``.

    Example:
        >>> from ember.vision.tv_tensors import Video
        >>> Video(ember.zeros(2, 3, 4, 5)).shape
        ember.Size([2, 3, 4, 5])
    """

    def __new__(cls, data: Any, *, dtype: ember.DType | None = None, device: Any = None,
                requires_grad: bool | None = None) -> Video:
        tensor = _as_tensor(data, dtype, device, requires_grad)
        if tensor.ndim < 4:
            raise ArgumentError(f"Video: expected a video of at least 4 dimensions (T, C, H, W), "
                                f"got shape {tuple(tensor.shape)}")
        return cls._wrap(tensor)


class Mask(TVTensor):
    """A segmentation mask ``(..., H, W)``: one map of class ids, or ``(N, H, W)`` for N
    objects (a PIL image becomes ``(C, H, W)``). Geometric transforms resample it with
    nearest-neighbour interpolation.

    Example:
        >>> from ember.vision.tv_tensors import Mask
        >>> Mask([[0, 1], [1, 0]]).dtype
        ember.int64
    """

    def __new__(cls, data: Any, *, dtype: ember.DType | None = None, device: Any = None,
                requires_grad: bool | None = None) -> Mask:
        return cls._wrap(_as_tensor(_from_pil(data), dtype, device, requires_grad))
