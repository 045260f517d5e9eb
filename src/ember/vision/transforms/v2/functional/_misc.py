"""Image functions of ``v2.functional`` with no v1 counterpart: ``jpeg`` (a JPEG round trip),
``gaussian_noise``, ``grayscale_to_rgb``, and the v1 ``convert_image_dtype``. They act on
images, videos and pure tensors (and PIL images / arrays where noted)."""

from __future__ import annotations

import io
from typing import Any

import numpy as np

import ember
from ember.errors import ArgumentError, DTypeError
from ember.tensor import Tensor
from ember.vision.transforms._pil import is_pil_image
from ember.vision.transforms.convert import convert_image_dtype
from ember.vision.transforms.v2.functional._color import _image_functional

__all__ = ["convert_image_dtype", "gaussian_noise", "grayscale_to_rgb", "jpeg"]


def _pillow_jpeg(img: Any, quality: int) -> Any:
    """A PIL image saved as a JPEG at ``quality`` and read back, as torchvision's PIL kernel
    (modes Pillow cannot write as JPEG, such as "RGBA", raise Pillow's error)."""
    from PIL import Image as PILImage

    buffer = io.BytesIO()
    img.save(buffer, format="JPEG", quality=quality)
    buffer.seek(0)
    return PILImage.open(buffer).copy()


def _jpeg_array(hwc: np.ndarray, quality: int) -> np.ndarray:
    from PIL import Image as PILImage

    if hwc.dtype != np.uint8 or not (hwc.ndim == 2 or hwc.ndim == 3 and hwc.shape[2] in (1, 3)):
        raise TypeError(f"jpeg: expected a uint8 array (H, W[, 1 or 3]), got {hwc.dtype} of "
                        f"shape {hwc.shape}")
    gray = hwc.ndim == 3 and hwc.shape[2] == 1
    out = _pillow_jpeg(PILImage.fromarray(hwc[..., 0] if gray else hwc), quality)
    return np.asarray(out).reshape(hwc.shape)


def _jpeg_image(image: Tensor, quality: int) -> Tensor:
    """Each ``(C, H, W)`` image of ``image`` encoded as a JPEG at ``quality`` (1 to 100) and
    decoded again, through Pillow's libjpeg (torchvision uses its own libjpeg binding, so
    results may differ by a level). uint8 images of 1 or 3 channels; arrays
    ``(H, W[, C])`` and PIL images (Pillow's round trip, as torchvision's PIL kernel) too.

    Example:
        >>> x = ember.full((3, 8, 8), 100, dtype=ember.uint8)
        >>> jpeg(x, 90).tolist() == x.tolist()
        True
    """
    if not 1 <= quality <= 100:
        raise ArgumentError(f"jpeg: quality must be an integer from 1 to 100, got {quality}")
    if is_pil_image(image):
        return _pillow_jpeg(image, quality)
    if isinstance(image, np.ndarray):
        return _jpeg_array(image, quality)
    if image.dtype is not ember.uint8:
        raise DTypeError(f"jpeg: input tensor must have a uint8 dtype, got {image.dtype}")
    if image.ndim < 3 or image.shape[-3] not in (1, 3):
        raise ArgumentError(f"jpeg: expected an image (..., C, H, W) of 1 or 3 channels, got "
                            f"shape {tuple(image.shape)}")
    if image.numel() == 0:
        return image.clone()
    flat = image.numpy().reshape(-1, *image.shape[-3:])
    out = np.stack([_jpeg_array(np.ascontiguousarray(x.transpose(1, 2, 0)), quality)
                    .transpose(2, 0, 1) for x in flat])
    return ember.from_numpy(np.ascontiguousarray(out.reshape(image.shape)))


_jpeg_image.takes_pil = True  # (the dispatcher hands it PIL images as they are)
jpeg = _image_functional(_jpeg_image, name="jpeg")


def _gaussian_noise_image(image: Tensor, mean: float = 0.0, sigma: float = 0.1,
                          clip: bool = True) -> Tensor:
    """``image`` plus Gaussian noise of ``mean`` and ``sigma``, clamped to ``[0, 1]`` with
    ``clip``. A uint8 image takes the noise scaled by 255 and truncated to integers (clamped
    to ``[0, 255]`` with ``clip``, wrapped around without), as torchvision's.

    Example:
        >>> gaussian_noise(ember.zeros(1, 2, 2), sigma=0.0).tolist()
        [[[0.0, 0.0], [0.0, 0.0]]]
    """
    if not isinstance(image, Tensor):
        raise TypeError("gaussian_noise: not supported for PIL images or arrays (as "
                        "torchvision's); ToImage() and ToDtype(ember.float32, scale=True) first")
    if sigma < 0:
        raise ArgumentError(f"gaussian_noise: sigma shouldn't be negative, got {sigma}")
    if image.dtype is ember.uint8:
        noise = (ember.randn(*image.shape) * (sigma * 255) + mean * 255).to(ember.int16)
        out = image.to(ember.int16) + noise
        return (out.clamp(0, 255) if clip else out).to(ember.uint8)
    if not image.is_floating_point():
        raise ArgumentError(f"gaussian_noise: input tensor is expected to be in uint8 or float "
                            f"dtype, got {image.dtype}. Hint: ToDtype(ember.float32, scale=True) "
                            f"first")
    out = image + (ember.randn(*image.shape, dtype=image.dtype) * sigma + mean)
    return out.clamp(0, 1) if clip else out


_gaussian_noise_image.takes_pil = True  # (it refuses them with a hint)
gaussian_noise = _image_functional(_gaussian_noise_image, name="gaussian_noise")


def _grayscale_to_rgb_image(image: Tensor) -> Tensor:
    """A one-channel image repeated to three channels; one of three channels or more as it
    is; a PIL image converted to "RGB" by Pillow (any mode), as torchvision's.

    Example:
        >>> grayscale_to_rgb(ember.zeros(1, 2, 2)).shape
        ember.Size([3, 2, 2])
    """
    if is_pil_image(image):
        return image.convert("RGB")
    if isinstance(image, np.ndarray):
        return np.repeat(np.atleast_3d(image), 3, axis=2) if image.ndim == 2 or \
            image.shape[2] == 1 else image
    if image.ndim < 3 or image.shape[-3] == 2:
        raise ArgumentError(f"grayscale_to_rgb: expected an image (..., C, H, W) of 1 channel, or "
                            f"3 or more, got shape {tuple(image.shape)}")
    return image if image.shape[-3] >= 3 else image.expand(*image.shape[:-3], 3,
                                                           *image.shape[-2:]).clone()


_grayscale_to_rgb_image.takes_pil = True
grayscale_to_rgb = _image_functional(_grayscale_to_rgb_image, name="grayscale_to_rgb")
