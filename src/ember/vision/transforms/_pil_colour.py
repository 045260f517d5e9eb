"""torchvision's PIL path for the colour functions, for the PIL modes whose bands are not one
intensity or red, green and blue: an alpha band ("RGBA", "LA"), four inks ("CMYK"), a padding
band ("RGBX"). There torchvision hands the image to Pillow, and so does Ember: Pillow's
enhancers for brightness, contrast, saturation and sharpness (they blend every colour band
and keep the alpha band), hue turned in Pillow's "HSV", gamma through Pillow's "RGB"."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ember.errors import ArgumentError, DTypeError
from ember.vision.transforms._pil import _NON_RGB_COLOURS
from ember.vision.transforms.color import _check_factor


def _enhancer(kind: str, op: str, factor_name: str) -> Callable[..., Any]:
    """``op`` for a PIL image: Pillow's ``ImageEnhance.<kind>`` by the factor."""

    def adjust(img: Any, *args: Any, **kwargs: Any) -> Any:
        from PIL import ImageEnhance

        factor = args[0] if args else kwargs[factor_name]
        _check_factor(op, factor_name, factor)
        return getattr(ImageEnhance, kind)(img).enhance(factor)

    adjust.__name__ = adjust.__qualname__ = op
    return adjust


adjust_brightness = _enhancer("Brightness", "adjust_brightness", "brightness_factor")
adjust_contrast = _enhancer("Contrast", "adjust_contrast", "contrast_factor")
adjust_saturation = _enhancer("Color", "adjust_saturation", "saturation_factor")
adjust_sharpness = _enhancer("Sharpness", "adjust_sharpness", "sharpness_factor")


def adjust_hue(img: Any, hue_factor: float) -> Any:
    """The hue band of Pillow's "HSV" turned by ``hue_factor · 255`` levels (wrapping), and
    the image converted back to its mode."""
    from PIL import Image

    if not -0.5 <= hue_factor <= 0.5:
        raise ArgumentError(f"adjust_hue: hue_factor ({hue_factor}) is not in [-0.5, 0.5].")
    h, s, v = img.convert("HSV").split()
    turned = np.array(h, np.uint8) + np.uint8(np.int32(hue_factor * 255) % 256)
    return Image.merge("HSV", (Image.fromarray(turned, "L"), s, v)).convert(img.mode)


def adjust_gamma(img: Any, gamma: float, gain: float = 1.0) -> Any:
    """``gain · x ** gamma`` of each level of the image in Pillow's "RGB", converted back to
    its mode (an alpha band comes back opaque, as in torchvision)."""
    if gamma < 0:
        raise ArgumentError(f"adjust_gamma: gamma ({gamma}) is not non-negative")
    table = [int((256.0 - 1e-3) * gain * (level / 255.0) ** gamma) for level in range(256)]
    return img.convert("RGB").point([min(max(v, 0), 255) for v in table] * 3).convert(img.mode)


def by_pillow_autocontrast(img: Any) -> bool:
    """Whether autocontrast hands ``img`` to Pillow: "L" and "RGB" (Pillow's results, as
    torchvision's), integer images and "YCbCr", "HSV", "LAB" (refused); others take the
    tensor code ("F" as floats in [0, 1]; 2 or 4 bands refused there with Ember's error,
    where Pillow raises OSError)."""
    return img.mode in ("L", "RGB", *_NON_RGB_COLOURS) or img.mode.startswith("I")


def autocontrast(img: Any) -> Any:
    """Pillow's ``ImageOps.autocontrast``, as torchvision hands PIL images to it; integer
    images ("I", "I;16") and "YCbCr", "HSV", "LAB" ones are refused there, as Pillow does
    (stretching each of their bands would shift hues)."""
    if img.mode not in ("L", "RGB"):
        integer = img.mode.startswith("I")
        raise DTypeError(f"autocontrast: a PIL image in mode {img.mode!r} is not supported (as "
                         f"Pillow's{'' if integer else ': its bands are not intensities'}). "
                         "Hint: " + ("pil_to_tensor(img) gives a tensor autocontrast takes"
                                     if integer else "img.convert('RGB') first"))
    from PIL import ImageOps

    return ImageOps.autocontrast(img)
