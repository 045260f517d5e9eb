"""The colour and pixel-value ``v2.functional`` functions. They act on images, videos and pure
tensors only (masks and boxes raise here; the v2 transforms pass them through), with the v1
kernels of the same names."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import wraps
from typing import Any

import numpy as np

import ember
from ember.errors import ArgumentError, DTypeError
from ember.tensor import Tensor
from ember.vision.transforms import functional as TF
from ember.vision.transforms._image import _from_unit, _tensor_op
from ember.vision.transforms._pil import accepts_pil
from ember.vision.transforms.basic import Normalize
from ember.vision.transforms.color import _stretch
from ember.vision.transforms.v2.functional._utils import _dispatch, _register_kernel_internal
from ember.vision.tv_tensors import BoundingBoxes, Image, KeyPoints, Mask, Video

__all__ = ["adjust_brightness", "adjust_contrast", "adjust_gamma", "adjust_hue",
           "adjust_saturation", "adjust_sharpness", "autocontrast", "equalize", "erase",
           "gaussian_blur", "invert", "normalize", "permute_channels", "posterize",
           "rgb_to_grayscale", "solarize", "to_dtype"]

_IMAGES = (Tensor, Image, Video)


def _image_functional(kernel: Callable, arrays: bool = True, name: str | None = None
                      ) -> Callable:
    """A ``v2.functional`` function over the image ``kernel`` (signature and documentation
    are the kernel's, the name ``name`` or the kernel's); with ``arrays``, NumPy images
    ``(H, W[, C])`` go to the kernel too (the v1 kernels take them)."""

    @wraps(kernel)
    def functional(inpt: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        return _dispatch(functional, inpt, *args, **kwargs)

    if name is not None:
        functional.__name__ = functional.__qualname__ = name

    _register_kernel_internal(functional, *_IMAGES, *((np.ndarray,) if arrays else ()))(kernel)
    return functional


adjust_brightness = _image_functional(TF.adjust_brightness)
adjust_contrast = _image_functional(TF.adjust_contrast)
adjust_gamma = _image_functional(TF.adjust_gamma)
adjust_hue = _image_functional(TF.adjust_hue)
adjust_saturation = _image_functional(TF.adjust_saturation)
adjust_sharpness = _image_functional(TF.adjust_sharpness)


@_tensor_op
def _autocontrast_image(image: Tensor) -> Tensor:
    """Stretches each channel to the full range ``0..bound`` of the dtype (1 for floats, the
    dtype's maximum for integers) as torchvision's v2 kernel: ``(x - lo) / ((hi - lo) /
    bound)`` in float32, truncated (a uint8 value can sit one below v1's).

    Example:
        >>> autocontrast(ember.tensor([[[3, 7], [5, 9]]], dtype=ember.uint8)).tolist()
        [[[0, 169], [84, 254]]]
    """
    if image.dtype is ember.bool:   # 0/1 stretched over 0..1: unchanged
        return image.clone()
    return _stretch(image, v2=True)


# PIL images take v1's way (Pillow's modes refused there), as before
autocontrast = _image_functional(accepts_pil(_autocontrast_image, pillow=TF.autocontrast,
                                             use_pillow=lambda img: True),
                                 name="autocontrast")
invert = _image_functional(TF.invert)
solarize = _image_functional(TF.solarize)
rgb_to_grayscale = _image_functional(TF.rgb_to_grayscale)
gaussian_blur = _image_functional(TF.gaussian_blur)
erase = _image_functional(_tensor_op(TF.erase))


def _posterize_image(image: Tensor, bits: int) -> Tensor:
    """Keeps ``bits`` bits of each value: of an integer image, the high ``bits`` of its value
    bits; of a float image, ``floor(x * 2**bits) / 2**bits`` (torchvision's v2 rule).

    Example:
        >>> posterize(ember.tensor([[[0.3, 1.0]]]), 2)
        tensor([[[0.2500, 0.7500]]])
    """
    if not isinstance(image, Tensor) or image.dtype in (ember.uint8, ember.bool):
        return TF.posterize(image, bits)
    if not 0 <= bits <= 8:
        raise ArgumentError(f"posterize: bits must be in [0, 8], got {bits}")
    if not image.is_floating_point():
        value_bits = _value_bits(image.dtype)
        if bits >= value_bits:
            return image
        return ember.bitwise_and(image, ((1 << bits) - 1) << (value_bits - bits))
    levels = 2 ** bits
    return (image * levels).floor().clamp(0, levels - 1) * (1.0 / levels)


posterize = _image_functional(_posterize_image, name="posterize")


def _equalize_image(image: Tensor) -> Tensor:
    """Histogram equalization of each channel; a float or other integer image goes through
    uint8 and back, as in torchvision's v2.

    Example:
        >>> x = (ember.arange(512) // 8).reshape(1, 16, 32) / 255.0  # 0..63 / 255, 8 each
        >>> equalize(x).max().item()                                # spread to the top
        1.0
    """
    if not isinstance(image, Tensor) or image.dtype in (ember.uint8, ember.bool):
        return TF.equalize(image)  # (which refuses bool, naming equalize)
    out = TF.equalize(_to_dtype_image(image, ember.uint8, scale=True))
    return _to_dtype_image(out, image.dtype, scale=True)


equalize = _image_functional(_equalize_image, name="equalize")


def _normalize_image(image: Tensor, mean: Sequence[float], std: Sequence[float],
                     inplace: bool = False) -> Tensor:
    """``(image - mean) / std`` per channel of a float image or video.

    Example:
        >>> normalize(ember.ones(1, 1, 2), [0.5], [0.25])
        tensor([[[2., 2.]]])
    """
    return Normalize(mean, std, inplace)._normalize(image, keep_shape=False)  # (broadcasts)


normalize = _image_functional(_normalize_image, arrays=False, name="normalize")


def _permute_channels_image(image: Tensor, permutation: Sequence[int]) -> Tensor:
    """The channels of ``image`` in the order ``permutation``.

    Example:
        >>> permute_channels(ember.arange(3.0).reshape(3, 1, 1), [2, 0, 1]).flatten()
        tensor([2., 0., 1.])
    """
    if isinstance(permutation, Tensor):
        permutation = permutation.tolist()
    if isinstance(image, np.ndarray):  # (H, W[, C])
        channels = image.shape[2] if image.ndim == 3 else 1
        layout = "an array (H, W[, C])"
    else:
        channels = image.shape[-3] if image.ndim >= 3 else 0
        layout = "an image (..., C, H, W)"
    if sorted(permutation) != list(range(channels)) or image.ndim < 2:
        raise ArgumentError(f"permute_channels: permutation {list(permutation)} should order the "
                            f"{channels} channels of {layout} of shape {tuple(image.shape)}")
    if isinstance(image, np.ndarray):
        return image[..., list(permutation)] if image.ndim == 3 else image.copy()
    return image[..., list(permutation), :, :]


permute_channels = _image_functional(_permute_channels_image, name="permute_channels")


def _max_value(dtype: ember.DType) -> int:
    """The top of an integer dtype's image range; 1 for bool (as torchvision takes it)."""
    return 1 if dtype is ember.bool else ember.iinfo(dtype).max


def _value_bits(dtype: ember.DType) -> int:
    """Bits holding the magnitude of an integer dtype (its sign bit left out)."""
    if dtype is ember.bool:
        raise TypeError("to_dtype: scaling between integer dtypes is only defined for integer "
                        f"dtypes, got {dtype}; convert without scale=True")
    info = ember.iinfo(dtype)
    return info.bits - (1 if info.min < 0 else 0)


def _to_dtype_image(image: Tensor, dtype: ember.DType = ember.float32,
                    scale: bool = False) -> Tensor:
    """``image`` in ``dtype``; with ``scale``, values move between the ranges of the dtypes
    (``[0, 1]`` for floats, ``[0, max]`` for integers) as torchvision's ``to_dtype`` does:
    float to int multiplies by ``max + 1 - 1e-3`` and truncates, ints shift bits. Where the
    float dtype cannot hold that product to the thousandth (float32 to uint16, float16 to
    uint8) or the integer range (int32 to float16), the product is taken in float64 instead
    of wrapping around as torchvision's does."""
    if image.dtype is dtype or not scale:
        return image.to(dtype)
    if image.is_floating_point():
        if dtype.is_floating_point:
            return image.to(dtype)
        if (image.dtype is ember.float32 and dtype in (ember.int32, ember.int64)) or \
                (image.dtype is ember.float64 and dtype is ember.int64) or dtype is ember.uint64:
            raise DTypeError(f"to_dtype: the conversion from {image.dtype} to {dtype} cannot "
                               "be performed safely (the float cannot hold the integer range)")
        return _from_unit(image, dtype)
    if dtype.is_floating_point:
        if _max_value(image.dtype) > ember.finfo(dtype).max:
            return (image.to(ember.float64) * (1.0 / _max_value(image.dtype))).to(dtype)
        return image.to(dtype) * (1.0 / _max_value(image.dtype))
    shift = _value_bits(image.dtype) - _value_bits(dtype)
    if image.dtype in _NO_SHIFTS or dtype in _NO_SHIFTS:
        return _shifted_in_int64(image, shift).to(dtype)
    if shift > 0:
        return image.bitwise_right_shift(shift).to(dtype)
    return image.to(dtype).bitwise_left_shift(-shift)


# dtypes with casts but no bitwise shifts (as in PyTorch): scaled through int64
_NO_SHIFTS = (ember.uint16, ember.uint32, ember.uint64)


def _shifted_in_int64(image: Tensor, shift: int) -> Tensor:
    """``image``'s values shifted right by ``shift`` bits (left for a negative one) in
    int64; uint64 values past int64's range wrap there, and are masked back after a right
    shift."""
    wide = image.to(ember.int64)
    if shift <= 0:
        return wide.bitwise_left_shift(-shift)
    out = wide.bitwise_right_shift(shift)
    return out.bitwise_and((1 << (64 - shift)) - 1) if image.dtype is ember.uint64 else out


def to_dtype(inpt: Tensor, dtype: ember.DType = ember.float32, scale: bool = False) -> Tensor:
    """``inpt`` converted to ``dtype``; ``scale`` rescales the values of images and videos
    between the dtypes' ranges (other inputs are only cast).

    Example:
        >>> to_dtype(ember.tensor([[[0, 255]]], dtype=ember.uint8), ember.float32, scale=True)
        tensor([[[0., 1.]]])
    """
    return _dispatch(to_dtype, inpt, dtype=dtype, scale=scale)


_register_kernel_internal(to_dtype, *_IMAGES)(_to_dtype_image)


@_register_kernel_internal(to_dtype, Mask, BoundingBoxes, KeyPoints)
def _to_dtype_other(inpt: Tensor, dtype: ember.DType = ember.float32,
                    scale: bool = False) -> Tensor:
    return inpt.to(dtype)
