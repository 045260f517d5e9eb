"""Conversions between PIL images and tensors, as torchvision's ``pil_to_tensor`` /
``PILToTensor`` and ``to_pil_image`` / ``ToPILImage``, and between image dtypes
(``convert_image_dtype`` / ``ConvertImageDtype``). Pillow is needed only to make a PIL image
(it is imported when one is made); reading one needs only its array interface."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

import ember
from ember.errors import ArgumentError, ArgumentTypeError, DTypeError, type_name
from ember.tensor import Tensor
from ember.vision.transforms._pil import is_pil_image, native_order

__all__ = ["ConvertImageDtype", "PILToTensor", "ToPILImage", "convert_image_dtype",
           "pil_to_tensor", "to_pil_image"]


def pil_to_tensor(pic: Any) -> Tensor:
    """A PIL image as a ``(C, H, W)`` tensor of its own dtype (uint8 for "L"/"RGB", int32
    for "I", float32 for "F", bool for "1"), values unscaled.

    Example:
        >>> from PIL import Image
        >>> pil_to_tensor(Image.new("RGB", (3, 2), (9, 8, 7))).shape
        ember.Size([3, 2, 3])
    """
    if not is_pil_image(pic):
        raise ArgumentTypeError(f"pil_to_tensor: pic should be PIL Image, got {type_name(pic)}")
    arr = native_order(np.array(pic, copy=True))
    chw = arr.reshape(pic.size[1], pic.size[0], len(pic.getbands())).transpose(2, 0, 1)
    return ember.from_numpy(np.ascontiguousarray(chw))


# the modes a number of channels allows, the first being the default for uint8
_MODES = {2: ("LA",), 3: ("RGB", "YCbCr", "HSV"), 4: ("RGBA", "CMYK", "RGBX")}


def _single_channel_mode(dtype: np.dtype) -> str | None:
    if dtype == np.uint8:
        return "L"
    if dtype == np.int16:
        return "I;16" if sys.byteorder == "little" else "I;16B"
    if dtype == np.int32:
        return "I"
    if dtype == np.float32:
        return "F"
    return None


def to_pil_image(pic: Tensor | np.ndarray, mode: str | None = None) -> Any:
    """A ``(C, H, W)`` tensor or an ``(H, W, C)`` array (or a 2-D one) as a PIL image; float
    values are scaled by 255 and truncated to uint8 (unless ``mode`` is "F"). The mode
    follows the channels and dtype as torchvision's does; a 2- to 4-channel image with a
    ``mode`` must be of one byte (uint8, int8 or bool, its byte the level) or int16 (its bytes
    read as levels), as torchvision reads them.

    Example:
        >>> to_pil_image(ember.ones(3, 2, 4)).size, to_pil_image(ember.ones(1, 2, 4)).mode
        ((4, 2), 'L')
    """
    from PIL import Image

    if isinstance(pic, Tensor):
        if pic.ndim not in (2, 3):
            raise ArgumentError(f"to_pil_image: pic should be 2/3 dimensional, got {pic.ndim} "
                                "dimensions")
        pic = pic.detach().numpy()
        if pic.ndim == 3:
            pic = pic.transpose(1, 2, 0)
    elif not isinstance(pic, np.ndarray):
        raise ArgumentTypeError(f"to_pil_image: pic should be Tensor or ndarray, got "
                                f"{type_name(pic)}")
    if pic.ndim == 2:
        pic = pic[:, :, None]
    if pic.ndim != 3:
        raise ArgumentError(f"to_pil_image: pic should be 2/3 dimensional, got {pic.ndim} "
                            "dimensions")
    channels = pic.shape[-1]
    if channels > 4:
        raise ArgumentError(f"to_pil_image: pic should not have > 4 channels, got {channels} "
                            "channels (a tensor is (C, H, W), an array (H, W, C))")
    if np.issubdtype(pic.dtype, np.floating) and mode != "F":
        pic = (pic * 255).astype(np.uint8)
    if channels == 1:
        pic = pic[:, :, 0]
        expected = _single_channel_mode(pic.dtype)
        if mode is not None and mode != expected:
            raise ArgumentError(f"to_pil_image: incorrect mode ({mode}) supplied for input type "
                                f"{pic.dtype}; should be {expected}")
        mode = expected
    else:
        allowed = _MODES[channels]
        if mode is not None and mode not in allowed:
            raise ArgumentError(f"to_pil_image: only modes {list(allowed)} are supported for "
                                f"{channels}-channel inputs, got {mode}")
        if mode is None and pic.dtype == np.uint8:
            mode = allowed[0]
        elif mode is not None and pic.dtype.itemsize == 1:  # (int8, bool: the byte is the level,
            pic = pic.view(np.uint8)  # as torchvision reads them)
        elif mode is not None and pic.dtype != np.int16:
            # (torchvision reads wider dtypes' raw bytes as levels, a wrong image; int16's bytes
            # are read so below, as torchvision's; Pillow refused the rest with its TypeError)
            raise DTypeError(f"to_pil_image: mode {mode} needs uint8 data for {channels} "
                             f"channels, got {pic.dtype}; convert it first (.astype(np.uint8), "
                             f"or a float image in [0, 1])")
    if mode is None:
        raise DTypeError(f"to_pil_image: input type {pic.dtype} is not supported")
    if pic.dtype == np.int16:  # its bytes as 16-bit levels, as torchvision (Pillow 13's
        height, width = pic.shape[:2]  # fromarray no longer takes int16 as "I;16")
        return Image.frombuffer(mode, (width, height), np.ascontiguousarray(pic).tobytes(),
                                "raw", mode, 0, 1)
    return Image.fromarray(np.ascontiguousarray(pic), mode=mode)


class PILToTensor:
    """:func:`pil_to_tensor` as a transform.

    Example:
        >>> from PIL import Image
        >>> PILToTensor()(Image.new("L", (2, 2))).dtype
        ember.uint8
    """

    def __call__(self, pic: Any) -> Tensor:
        return pil_to_tensor(pic)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class ToPILImage:
    """:func:`to_pil_image` as a transform (with an optional ``mode``).

    Example:
        >>> ToPILImage()(ember.zeros(3, 2, 2)).mode
        'RGB'
    """

    def __init__(self, mode: str | None = None) -> None:
        self.mode = mode

    def __call__(self, pic: Tensor | np.ndarray) -> Any:
        return to_pil_image(pic, self.mode)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(mode={self.mode})" if self.mode else \
            f"{type(self).__name__}()"


def _max_value(dtype: ember.DType) -> float:
    """The value that means full intensity: an integer dtype's maximum, 1 for floats and bool
    (so a mode "1" image converts to 0/1 floats, as torchvision's)."""
    return 1.0 if dtype.is_floating_point or dtype is ember.bool else \
        float(ember.iinfo(dtype).max)


def convert_image_dtype(image: Tensor, dtype: ember.DType = ember.float32) -> Tensor:
    """An image in another dtype, its values rescaled as torchvision's: integers span
    ``0..max`` and floats ``0..1``; float to integer scales by ``max + 1 - 0.001`` and
    truncates, integer to integer shifts (floor-divides or multiplies by a power of two).

    Example:
        >>> convert_image_dtype(ember.tensor([0.0, 0.5, 1.0]), ember.uint8).tolist()
        [0, 127, 255]
    """
    if not isinstance(image, Tensor):
        raise ArgumentTypeError(f"convert_image_dtype: expected a tensor, got "
                                f"{type_name(image)}")
    if image.dtype is dtype:
        return image
    if image.dtype.is_floating_point:
        if dtype.is_floating_point:
            return image.to(dtype)
        if (image.dtype is ember.float32 and dtype in (ember.int32, ember.int64)) or \
                (image.dtype is ember.float64 and dtype is ember.int64):
            raise DTypeError(f"convert_image_dtype: the cast from {image.dtype} to {dtype} "
                               "cannot be performed safely.")
        return (image * (_max_value(dtype) + 1.0 - 1e-3)).to(dtype)
    input_max = _max_value(image.dtype)
    if dtype.is_floating_point:
        return image.to(dtype) / input_max
    output_max = _max_value(dtype)
    if input_max > output_max:
        factor = int((input_max + 1) // (output_max + 1))
        return ember.div(image, factor, rounding_mode="floor").to(dtype)
    factor = int((output_max + 1) // (input_max + 1))
    return image.to(dtype) * factor


class ConvertImageDtype:
    """:func:`convert_image_dtype` to ``dtype`` as a transform.

    Example:
        >>> ConvertImageDtype(ember.float32)(ember.tensor([0, 255], dtype=ember.uint8)).tolist()
        [0.0, 1.0]
    """

    def __init__(self, dtype: ember.DType) -> None:
        self.dtype = dtype

    def __call__(self, image: Tensor) -> Tensor:
        return convert_image_dtype(image, self.dtype)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(dtype={self.dtype})"
