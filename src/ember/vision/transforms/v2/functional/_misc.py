"""Image functions of ``v2.functional`` with no v1 counterpart: ``jpeg`` (a JPEG round trip),
``gaussian_noise``, ``grayscale_to_rgb``, and the v1 ``convert_image_dtype``. They act on
images, videos and pure tensors (and PIL images / arrays where noted)."""

from __future__ import annotations

import io

import numpy as np

import ember
from ember.tensor import Tensor
from ember.vision.transforms.convert import convert_image_dtype
from ember.vision.transforms.v2.functional._color import _image_functional

__all__ = ["convert_image_dtype", "gaussian_noise", "grayscale_to_rgb", "jpeg"]


def _jpeg_round_trip(hwc: np.ndarray, quality: int) -> np.ndarray:
    from PIL import Image as PILImage

    buffer = io.BytesIO()
    PILImage.fromarray(hwc[..., 0] if hwc.shape[2] == 1 else hwc).save(buffer, format="JPEG",
                                                                       quality=quality)
    buffer.seek(0)
    return np.atleast_3d(np.asarray(PILImage.open(buffer)))


def _jpeg_image(image: Tensor, quality: int) -> Tensor:
    """Each ``(C, H, W)`` image of ``image`` encoded as a JPEG at ``quality`` (1 to 100) and
    decoded again, through Pillow's libjpeg (torchvision uses its own libjpeg binding, so
    results may differ by a level). uint8 images of 1 or 3 channels.

    Example:
        >>> x = ember.full((3, 8, 8), 100, dtype=ember.uint8)
        >>> jpeg(x, 90).tolist() == x.tolist()
        True
    """
    if not 1 <= quality <= 100:
        raise ValueError(f"jpeg: quality must be an integer from 1 to 100, got {quality}")
    if image.dtype is not ember.uint8:
        raise TypeError(f"jpeg: input tensor must have a uint8 dtype, got {image.dtype}")
    if image.ndim < 3 or image.shape[-3] not in (1, 3):
        raise ValueError(f"jpeg: expected an image (..., C, H, W) of 1 or 3 channels, got "
                         f"shape {tuple(image.shape)}")
    flat = image.numpy().reshape(-1, *image.shape[-3:])
    out = np.stack([_jpeg_round_trip(np.ascontiguousarray(x.transpose(1, 2, 0)), quality)
                    .transpose(2, 0, 1) for x in flat])
    return ember.from_numpy(np.ascontiguousarray(out.reshape(image.shape)))


jpeg = _image_functional(_jpeg_image, arrays=False, name="jpeg")


def _gaussian_noise_image(image: Tensor, mean: float = 0.0, sigma: float = 0.1,
                          clip: bool = True) -> Tensor:
    """``image`` plus Gaussian noise of ``mean`` and ``sigma``, clamped to ``[0, 1]`` with
    ``clip``; float images only, as torchvision's.

    Example:
        >>> gaussian_noise(ember.zeros(1, 2, 2), sigma=0.0).tolist()
        [[[0.0, 0.0], [0.0, 0.0]]]
    """
    if not image.is_floating_point():
        raise ValueError(f"gaussian_noise: input tensor is expected to be in float dtype, got "
                         f"{image.dtype}. Hint: ToDtype(ember.float32, scale=True) first")
    if sigma < 0:
        raise ValueError(f"gaussian_noise: sigma shouldn't be negative, got {sigma}")
    out = image + (ember.randn(*image.shape, dtype=image.dtype) * sigma + mean)
    return out.clamp(0, 1) if clip else out


gaussian_noise = _image_functional(_gaussian_noise_image, arrays=False, name="gaussian_noise")


def _grayscale_to_rgb_image(image: Tensor) -> Tensor:
    """A one-channel image repeated to three channels; a three-channel one as it is.

    Example:
        >>> grayscale_to_rgb(ember.zeros(1, 2, 2)).shape
        ember.Size([3, 2, 2])
    """
    if isinstance(image, np.ndarray):
        return np.repeat(np.atleast_3d(image), 3, axis=2) if image.ndim == 2 or \
            image.shape[2] == 1 else image
    if image.ndim < 3 or image.shape[-3] not in (1, 3):
        raise ValueError(f"grayscale_to_rgb: expected an image (..., C, H, W) of 1 or 3 "
                         f"channels, got shape {tuple(image.shape)}")
    return image if image.shape[-3] == 3 else image.expand(*image.shape[:-3], 3,
                                                           *image.shape[-2:]).clone()


grayscale_to_rgb = _image_functional(_grayscale_to_rgb_image, name="grayscale_to_rgb")
