"""PIL images in and out of the image functions and transforms: a PIL image is taken as its
``(H, W[, C])`` array, processed by the same code as arrays and tensors (torchvision's tensor
code, not Pillow's own resampling, so results may differ from torchvision's PIL path by a
level; ``resize`` hands PIL images to Pillow, as torchvision does), and the result comes back
as a PIL image of the input's mode when its layout allows that mode (else the mode PIL reads
from the array). Palette ("P") and bilevel ("1") images are refused with a hint to convert
them. Grayscale is Pillow's own luma, from any mode."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

import numpy as np

from ember.errors import ArgumentError


def is_pil_image(img: Any) -> bool:
    """Whether ``img`` is a PIL image (without importing PIL)."""
    return hasattr(img, "getbands") and hasattr(img, "__array_interface__")


def native_order(a: np.ndarray) -> np.ndarray:
    """``a`` in this machine's byte order (a big-endian PIL "I;16B" image reads as ``>u2``)."""
    return a if a.dtype.isnative else a.astype(a.dtype.newbyteorder("="))


def _as_array(img: Any, op: str) -> np.ndarray:
    if img.mode in ("P", "1"):
        raise TypeError(f"{op}: a PIL image in mode {img.mode!r} (palette or bilevel) has no "
                        f"intensities to resample. Hint: img.convert('RGB') or "
                        f"img.convert('L') first")
    return np.array(img)


def _like(out: Any, img: Any) -> Any:
    """``out`` as a PIL image like ``img`` where it is an array (tuples of them too)."""
    if isinstance(out, (tuple, list)):
        return type(out)(_like(o, img) for o in out)
    if not isinstance(out, np.ndarray):
        return out
    from PIL import Image

    if out.ndim == 3 and out.shape[2] == 1:
        out = out[:, :, 0]
    pil = Image.fromarray(out)  # the mode PIL reads from the array ("I;16" for uint16)
    bands = len(img.getbands())
    if pil.mode != img.mode and out.dtype == np.dtype(img.__array_interface__["typestr"]) and \
            (out.ndim == 2 if bands == 1 else out.ndim == 3 and out.shape[2] == bands):
        return Image.fromarray(out, mode=img.mode)  # same layout, other bands: "YCbCr", "HSV"
    return pil


_NON_RGB_COLOURS = ("YCbCr", "HSV", "LAB")  # three bands that are not red, green and blue


def _converted(out: Any, mode: str) -> Any:
    if isinstance(out, (tuple, list)):
        return type(out)(_converted(o, mode) for o in out)
    return out.convert(mode) if is_pil_image(out) else out


def _image_arg(args: tuple, kwargs: dict, i: int) -> tuple[Any, Callable]:
    """The image argument (position ``i``, or keyword ``img``) and a function giving the
    ``(args, kwargs)`` with another image in its place."""
    if len(args) > i:
        return args[i], lambda new: ((*args[:i], new, *args[i + 1:]), kwargs)
    return kwargs.get("img"), lambda new: (args, {**kwargs, "img": new})


def _has_no_colours(img: Any) -> bool:
    return len(img.getbands()) not in (1, 3)


def pillow_colours(img: Any) -> bool:
    """Whether a colour function hands ``img`` to Pillow, as torchvision's PIL path does:
    "L" and "RGB" images (Pillow's enhancers and "HSV" round uint8 levels their own way) and
    those of 2 or 4 bands. Other 1- and 3-band modes ("F", "I", "YCbCr", "HSV") stay on the
    tensor code (in RGB for the 3-band ones)."""
    return img.mode in ("L", "RGB") or _has_no_colours(img)


def accepts_pil(fn: Callable, in_rgb: bool = False, pillow: Callable | None = None,
                use_pillow: Callable[[Any], bool] = _has_no_colours) -> Callable:
    """Lets ``fn`` (an image function, or a transform's ``__call__``) take a PIL image: the
    image goes in as its array and what comes out as arrays goes back as PIL images. With
    ``in_rgb`` (functions that mix the bands as red, green and blue: saturation, hue…), a
    "YCbCr", "HSV" or "LAB" image is taken in RGB and converted back, as Pillow's enhancers do.
    ``pillow`` (same signature) takes the images for which ``use_pillow`` is true (by default
    those of 2 or 4 bands, "RGBA", "LA", "CMYK", that a colour function has no colours for,
    as torchvision gives them to Pillow).
    A function that takes PIL images already (one of these wrappers) is returned as it is."""
    if getattr(fn, "takes_pil", False):
        return fn
    method = fn.__name__ == "__call__"

    @wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        img, put = _image_arg(args, kwargs, 1 if method else 0)
        if not is_pil_image(img):
            return fn(*args, **kwargs)
        if pillow is not None and use_pillow(img):
            return pillow(*args, **kwargs)
        if in_rgb and img.mode in _NON_RGB_COLOURS:
            args, kwargs = put(img.convert("RGB"))
            return _converted(run(*args, **kwargs), img.mode)
        args, kwargs = put(_as_array(img, type(args[0]).__name__ if method else fn.__name__))
        return _like(fn(*args, **kwargs), img)

    run.takes_pil = True
    return run


def accepts_pil_in_rgb(fn: Callable, pillow: Callable | None = None,
                       use_pillow: Callable[[Any], bool] = _has_no_colours) -> Callable:
    """:func:`accepts_pil` for functions that mix the bands as red, green and blue."""
    return accepts_pil(fn, in_rgb=True, pillow=pillow, use_pillow=use_pillow)


def colours_pil(fn: Callable, in_rgb: bool = False) -> Callable:
    """:func:`accepts_pil` for a transform's ``__call__`` made of colour functions: images of
    2 or 4 bands ("RGBA", "LA", "CMYK") stay PIL images, for each colour function to hand
    them to Pillow as torchvision does."""
    return accepts_pil(fn, in_rgb=in_rgb, pillow=fn, use_pillow=pillow_colours)


def grays_pil(fn: Callable) -> Callable:
    """Lets ``rgb_to_grayscale`` take a PIL image of any mode as torchvision's PIL path does:
    Pillow's own luma (``img.convert("L")``, which knows "YCbCr", "HSV", "CMYK", palettes…),
    as "L" or, for ``num_output_channels=3``, as an "RGB" image of three equal bands."""

    @wraps(fn)
    def run(img: Any, num_output_channels: int = 1) -> Any:
        if not is_pil_image(img):
            return fn(img, num_output_channels)
        if num_output_channels not in (1, 3):
            raise ArgumentError(f"rgb_to_grayscale: num_output_channels should be either 1 or 3, "
                                f"got {num_output_channels}")
        from PIL import Image

        gray = img.convert("L")
        return gray if num_output_channels == 1 else Image.merge("RGB", (gray, gray, gray))

    run.takes_pil = True
    return run
