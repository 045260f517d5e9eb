"""Image functions under ``torchvision.transforms.functional``'s names, computed as its tensor
code computes them.

Images are tensors ``(..., C, H, W)``, uint8 (0–255) or floating (0–1), or NumPy arrays
``(H, W)`` / ``(H, W, C)`` as the datasets give them (converted, processed and converted
back to the same dtype and layout). Results keep the input's dtype; uint8 results are
rounded (resampling, blurs) or truncated (colour blends) as torchvision's are.

Example:
    >>> from ember.vision.transforms import functional as TF
    >>> TF.resize(ember.zeros(3, 32, 48), 16).shape       # the smaller edge becomes 16
    ember.Size([3, 16, 24])
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

import ember
import ember.nn.functional as F
from ember.errors import ArgumentError, ArgumentTypeError
from ember.tensor import Tensor
from ember.vision.transforms import _pil_colour
from ember.vision.transforms._image import (
    Image,
    InterpolationMode,
    _back,
    _check_image,
    _grid_transform,
    _images,
    _tensor_op,
    _to_float,
)
from ember.vision.transforms._pil import (
    accepts_pil,
    accepts_pil_in_rgb,
    grays_pil,
    is_pil_image,
    pillow_colours,
)
from ember.vision.transforms._pil_geometry import (
    by_pillow,
    resize_pil,
    rotate_pil,
    transform_pil,
)
from ember.vision.transforms.basic import Normalize, ToTensor, crop, pad
from ember.vision.transforms.color import (
    adjust_brightness,
    adjust_contrast,
    adjust_gamma,
    adjust_hue,
    adjust_saturation,
    adjust_sharpness,
    autocontrast,
    equalize,
    invert,
    posterize,
    rgb_to_grayscale,
    solarize,
)
from ember.vision.transforms.convert import convert_image_dtype, pil_to_tensor, to_pil_image
from ember.vision.transforms.warp import _perspective_coeffs, elastic_transform, perspective

__all__ = ["InterpolationMode", "adjust_brightness", "affine", "adjust_contrast", "adjust_gamma",
           "adjust_hue", "adjust_saturation", "adjust_sharpness", "autocontrast",
           "center_crop", "convert_image_dtype", "crop", "elastic_transform", "equalize",
           "erase", "five_crop", "gaussian_blur", "get_dimensions", "get_image_num_channels",
           "get_image_size", "hflip", "invert", "normalize", "pad", "perspective",
           "pil_to_tensor", "posterize", "resize", "resized_crop", "rgb_to_grayscale",
           "rotate", "solarize", "ten_crop", "to_grayscale", "to_pil_image", "to_tensor",
           "vflip"]


def to_grayscale(img: Any, num_output_channels: int = 1) -> Any:
    """A PIL image in grayscale, Pillow's luma, as "L" or (``num_output_channels=3``) "RGB"; as
    torchvision's, for PIL images only (:func:`rgb_to_grayscale` takes tensors).

    Example:
        >>> from PIL import Image
        >>> to_grayscale(Image.new("RGB", (4, 2), (255, 0, 0)), 3).mode
        'RGB'
    """
    if not is_pil_image(img):
        raise TypeError(f"to_grayscale: img should be a PIL image, got {type(img).__name__}. "
                        f"Hint: rgb_to_grayscale takes tensors")
    return rgb_to_grayscale(img, num_output_channels)


def get_dimensions(img: Image) -> list[int]:
    """``[channels, height, width]`` of a ``(..., C, H, W)`` tensor (a 2-D one has one
    channel) or an ``(H, W[, C])`` array.

    Example:
        >>> get_dimensions(ember.zeros(3, 4, 5)), get_dimensions(np.zeros((4, 5)))
        ([3, 4, 5], [1, 4, 5])
    """
    if isinstance(img, Tensor):
        if img.ndim < 2:
            raise TypeError(f"get_dimensions: expected an image tensor (..., H, W), got shape "
                            f"{tuple(img.shape)}")
        channels = 1 if img.ndim == 2 else img.shape[-3]
        return [int(channels), int(img.shape[-2]), int(img.shape[-1])]
    if not isinstance(img, np.ndarray) or img.ndim not in (2, 3):
        raise TypeError(f"get_dimensions: img should be a tensor or an (H, W[, C]) array, "
                        f"got {type(img).__name__}")
    return [int(img.shape[2]) if img.ndim == 3 else 1, int(img.shape[0]), int(img.shape[1])]


def get_image_num_channels(img: Image) -> int:
    """The number of channels (see :func:`get_dimensions`).

    Example:
        >>> get_image_num_channels(ember.zeros(3, 4, 5))
        3
    """
    return get_dimensions(img)[0]


def get_image_size(img: Image) -> list[int]:
    """``[width, height]``, in torchvision's order.

    Example:
        >>> get_image_size(ember.zeros(3, 4, 5))
        [5, 4]
    """
    _, h, w = get_dimensions(img)
    return [w, h]


def to_tensor(pic: Any) -> Tensor:
    """:class:`~ember.vision.transforms.ToTensor` as a function.

    Example:
        >>> to_tensor(np.full((1, 2), 255, np.uint8)).tolist()
        [[[1.0, 1.0]]]
    """
    return ToTensor()(pic)


def normalize(tensor: Tensor, mean: Sequence[float], std: Sequence[float],
              inplace: bool = False) -> Tensor:
    """``(tensor - mean) / std`` per channel of a float ``(..., C, H, W)`` tensor.

    Example:
        >>> normalize(ember.ones(1, 1, 2), [0.5], [0.5]).tolist()
        [[[1.0, 1.0]]]
    """
    return Normalize(mean, std, inplace)(tensor)


def check_size(size: Any) -> None:
    """Refuses a resize ``size`` that is not an int or a sequence of 1 or 2 ints (a float
    would be truncated), as torchvision does."""
    ints = list(size) if isinstance(size, Sequence) and not isinstance(size, str) else [size]
    if any(isinstance(v, bool) or not isinstance(v, numbers.Integral) for v in ints):
        hint = (" (size=None, the longer edge to max_size, is transforms.v2's)" if size is None
                else "")
        raise ArgumentTypeError(f"resize: size should be an int or a sequence of 1 or 2 ints, "
                                f"got {size!r}{hint}")
    if len(ints) not in (1, 2):
        raise ArgumentError(f"resize: size must be an int or a sequence of 1 or 2 ints, got "
                            f"{ints}")


def _output_size(h: int, w: int, size: int | Sequence[int], max_size: int | None
                 ) -> tuple[int, int]:
    """torchvision's output size: a pair as given; one number for the smaller edge, the
    other keeping the aspect ratio (then both shrunk so the longer is at most ``max_size``)."""
    check_size(size)
    if isinstance(size, Sequence) and len(size) == 2:
        if max_size is not None:
            raise ArgumentError("resize: max_size is only supported for a single int size, got "
                                f"size={list(size)}")
        return int(size[0]), int(size[1])
    target = int(size[0] if isinstance(size, Sequence) else size)
    short, long = min(h, w), max(h, w)
    if short == 0:
        raise ArgumentError(f"resize: an image with an edge of size 0 ({h}x{w}) has no aspect "
                            f"ratio to keep; give both sizes, got size={size}")
    new_short, new_long = target, int(target * long / short)
    if max_size is not None:
        if max_size <= target:
            raise ArgumentError(f"resize: max_size = {max_size} must be strictly greater than "
                                f"the requested size for the smaller edge size = {target}")
        if new_long > max_size:
            new_short, new_long = int(max_size * new_short / new_long), max_size
    return (new_short, new_long) if h <= w else (new_long, new_short)


@_tensor_op
def resize(img: Tensor, size: int | Sequence[int],
           interpolation: InterpolationMode = InterpolationMode.BILINEAR,
           max_size: int | None = None, antialias: bool | None = True) -> Tensor:
    """Resizes to ``size`` (``(h, w)``, or one number for the smaller edge), antialiased
    when bilinear or bicubic as torchvision does by default. A uint8 image is resampled in
    float32 and rounded, as torchvision's (v1) tensor path does (``F.interpolate``'s uint8
    kernels, which v2 uses, round each pass and can differ); nearest modes copy its bytes.

    Example:
        >>> resize(ember.zeros(3, 10, 20), (5, 5)).shape
        ember.Size([3, 5, 5])
    """
    mode = InterpolationMode(interpolation).value
    if mode in ("box", "hamming", "lanczos"):
        raise ArgumentError(f"resize: interpolation {mode!r} is Pillow's, for PIL images only; a "
                            f"tensor takes NEAREST, NEAREST_EXACT, BILINEAR or BICUBIC")
    return _resize_tensor(img, size, mode, max_size, antialias, uint8_kernels=False)


def _resize_tensor(img: Tensor, size: int | Sequence[int], mode: str, max_size: int | None,
                  antialias: bool | None, uint8_kernels: bool) -> Tensor:
    """``resize`` of a ``(..., C, H, W)`` tensor with ``mode`` an interpolation mode's value.
    A uint8 image is resampled in float32 and rounded, or with ``uint8_kernels`` (torchvision
    0.28's v2 on a CPU with AVX2, AVX512 or ARM) by ``F.interpolate``'s uint8 kernels when
    bilinear, bicubic or lanczos; nearest modes copy its bytes."""
    _check_image("resize", img, any_int=True)
    h, w = img.shape[-2:]
    out = _output_size(h, w, size, max_size)
    if out == (h, w):
        return img
    smooth = mode in ("bilinear", "bicubic", "lanczos")
    as_bytes = img.dtype is ember.uint8 and (uint8_kernels or not smooth)
    x = img if as_bytes else _to_float(img)
    batch = x.shape[:-3]
    x = _images(x)
    if x.numel() == 0 and out[0] * out[1] != 0 and h * w == 0:
        raise ArgumentError(f"resize: cannot resize an image of no pixels ({h}x{w}) to {out}")
    x = F.interpolate(x, size=out, mode=mode, align_corners=False if smooth else None,
                      antialias=bool(antialias) and smooth)
    x = x.reshape(*batch, *x.shape[-3:])
    return x if as_bytes else _back(x, img.dtype, rounded=smooth)


def resized_crop(img: Image, top: int, left: int, height: int, width: int,
                 size: int | Sequence[int],
                 interpolation: InterpolationMode = InterpolationMode.BILINEAR,
                 antialias: bool | None = True) -> Image:
    """:func:`crop`, then :func:`resize`.

    Example:
        >>> resized_crop(ember.zeros(3, 10, 10), 2, 2, 4, 4, 8).shape
        ember.Size([3, 8, 8])
    """
    return resize(crop(img, top, left, height, width), size, interpolation,
                  antialias=antialias)


def center_crop(img: Image, output_size: int | Sequence[int]) -> Image:
    """The central window of ``output_size`` (zero-padded where the image is smaller).

    Example:
        >>> center_crop(ember.zeros(3, 10, 10), 4).shape
        ember.Size([3, 4, 4])
    """
    from ember.vision.transforms.basic import CenterCrop

    return CenterCrop(output_size)(img)


@_tensor_op
def hflip(img: Tensor) -> Tensor:
    """Mirrors left-right.

    Example:
        >>> hflip(ember.tensor([[[1, 2, 3]]])).tolist()
        [[[3, 2, 1]]]
    """
    return img.flip(-1)


@_tensor_op
def vflip(img: Tensor) -> Tensor:
    """Mirrors top-bottom.

    Example:
        >>> vflip(ember.tensor([[[1], [2]]])).tolist()
        [[[2], [1]]]
    """
    return img.flip(-2)


def five_crop(img: Image, size: int | Sequence[int]) -> tuple[Image, Image, Image, Image, Image]:
    """The top-left, top-right, bottom-left, bottom-right and central crops of ``size``.

    Example:
        >>> [c.item() for c in five_crop(ember.arange(9).reshape(1, 3, 3), 1)]
        [0, 2, 6, 8, 4]
    """
    if isinstance(size, (int, float)):
        size = (int(size), int(size))
    elif isinstance(size, Sequence) and len(size) == 1:
        size = (size[0], size[0])
    if len(size) != 2:
        raise ArgumentError(f"five_crop: please provide only two dimensions (h, w) for size, got "
                            f"{size}")
    if not isinstance(img, (Tensor, np.ndarray)):
        raise TypeError(f"five_crop: img should be a tensor (..., C, H, W) or an (H, W[, C]) "
                        f"array, got {type(img).__name__}; convert a PIL image with "
                        "PILToTensor first")
    _, h, w = get_dimensions(img)
    ch, cw = size
    if ch > h or cw > w:
        raise ArgumentError(f"five_crop: requested crop size {tuple(size)} is bigger than input "
                            f"size {(h, w)}")
    return (crop(img, 0, 0, ch, cw), crop(img, 0, w - cw, ch, cw),
            crop(img, h - ch, 0, ch, cw), crop(img, h - ch, w - cw, ch, cw),
            center_crop(img, [ch, cw]))


def ten_crop(img: Image, size: int | Sequence[int], vertical_flip: bool = False
             ) -> tuple[Image, ...]:
    """:func:`five_crop` of the image, then of its mirror image (left-right, or top-bottom
    with ``vertical_flip``).

    Example:
        >>> len(ten_crop(ember.zeros(1, 4, 4), 2))
        10
    """
    if isinstance(size, Sequence) and len(size) not in (1, 2):
        raise ArgumentError(f"ten_crop: please provide only two dimensions (h, w) for size, got "
                            f"{size}")
    first = five_crop(img, size)
    return first + five_crop(vflip(img) if vertical_flip else hflip(img), size)


def _gaussian_kernel(size: int, sigma: float, dtype: ember.DType) -> Tensor:
    half = (size - 1) * 0.5
    x = ember.linspace(-half, half, size, dtype=dtype)
    pdf = (-0.5 * (x / sigma) ** 2).exp()
    return pdf / pdf.sum()


@_tensor_op
def gaussian_blur(img: Tensor, kernel_size: int | Sequence[int],
                  sigma: float | Sequence[float] | None = None) -> Tensor:
    """Blurs with a separable Gaussian (reflected at the borders); ``sigma`` defaults to
    ``0.3 · ((k - 1) · 0.5 - 1) + 0.8`` as torchvision's.

    Example:
        >>> gaussian_blur(ember.ones(3, 5, 5), 3).shape
        ember.Size([3, 5, 5])
    """
    ks = [kernel_size, kernel_size] if isinstance(kernel_size, int) else list(kernel_size)
    if len(ks) == 1:
        ks = ks * 2
    if len(ks) != 2 or any(k <= 0 or k % 2 == 0 for k in ks):
        raise ArgumentError(f"gaussian_blur: kernel_size should have odd and positive integers, "
                            f"got {kernel_size}")
    if sigma is None:
        sig = [0.3 * ((k - 1) * 0.5 - 1) + 0.8 for k in ks]
    else:
        sig = [float(sigma)] * 2 if isinstance(sigma, (int, float)) else list(sigma)
        sig = sig * 2 if len(sig) == 1 else sig
    if len(sig) != 2 or any(s <= 0 for s in sig):
        raise ArgumentError(f"gaussian_blur: sigma should have positive values, got {sigma}")
    _check_image("gaussian_blur", img, any_int=True)
    x = _to_float(img)
    c = x.shape[-3]
    flat = _images(x)
    if flat.numel() == 0:
        return img.clone()
    kx = _gaussian_kernel(ks[0], sig[0], x.dtype)
    ky = _gaussian_kernel(ks[1], sig[1], x.dtype)
    kernel = (ky[:, None] * kx[None, :]).expand(c, 1, ks[1], ks[0])
    padded = F.pad(flat, (ks[0] // 2, ks[0] // 2, ks[1] // 2, ks[1] // 2), mode="reflect")
    out = F.conv2d(padded, kernel, groups=c)
    return _back(out.reshape(x.shape), img.dtype, rounded=True)


def erase(img: Tensor, i: int, j: int, h: int, w: int, v: Tensor | float,
          inplace: bool = False) -> Tensor:
    """The ``h`` x ``w`` window at (``i``, ``j``) set to ``v``.

    Example:
        >>> erase(ember.ones(1, 3, 3), 0, 0, 2, 2, 0.0).sum().item()
        5.0
    """
    if not isinstance(img, Tensor):
        raise TypeError(f"erase: img should be a tensor image, got {type(img).__name__}")
    out = img if inplace else img.clone()
    out[..., i:i + h, j:j + w] = v
    return out


def _inverse_affine(center: Sequence[float], angle: float, translate: Sequence[float],
                    scale: float, shear: Sequence[float]) -> np.ndarray:
    """torchvision's 2x3 map from output to input positions of the affine map that rotates by
    ``angle`` degrees (clockwise on the screen), shears by ``shear`` degrees, scales and then
    translates, about ``center``. Positions are relative to the image centre, pixel ``i`` at
    ``i + 0.5 - size / 2``."""
    rot, sx, sy = math.radians(angle), math.radians(shear[0]), math.radians(shear[1])
    a = math.cos(rot - sy) / math.cos(sy)
    b = -math.cos(rot - sy) * math.tan(sx) / math.cos(sy) - math.sin(rot)
    c = math.sin(rot - sy) / math.cos(sy)
    d = -math.sin(rot - sy) * math.tan(sx) / math.cos(sy) + math.cos(rot)
    m = np.array([[d, -b, 0.0], [-c, a, 0.0]]) / scale
    shift = np.array([-center[0] - translate[0], -center[1] - translate[1]])
    m[:, 2] = m[:, :2] @ shift + center
    return m


def _centre(op: str, center: Sequence[float] | None, w: int, h: int) -> list[float]:
    """A user's centre (pixel edges at integers) relative to the image centre."""
    if center is None:
        return [0.0, 0.0]
    if not isinstance(center, Sequence) or len(center) != 2:
        raise ArgumentError(f"{op}: center should be a sequence of length 2 (x, y), got {center}")
    return [center[0] - w * 0.5, center[1] - h * 0.5]


def _expanded_size(m: np.ndarray, w: int, h: int) -> tuple[int, int]:
    """Width and height that hold the whole rotated image (torchvision's rounding, in float32
    as torchvision computes it: its 1e-4 truncation relies on float32 absorbing the ~1e-16
    residues of ``cos(90 degrees)``, which float64 would turn into an extra pixel)."""
    corners = np.array([[-0.5 * w, -0.5 * h, 1], [-0.5 * w, 0.5 * h, 1],
                        [0.5 * w, 0.5 * h, 1], [0.5 * w, -0.5 * h, 1]], dtype=np.float32)
    moved = corners @ m.astype(np.float32).T
    half = np.array([w * 0.5, h * 0.5], dtype=np.float32)
    lo, hi = moved.min(0) + half, moved.max(0) + half
    tol = np.float32(1e-4)
    size = np.ceil(np.trunc(hi / tol) * tol) - np.floor(np.trunc(lo / tol) * tol)
    return int(size[0]), int(size[1])


def _warp(img: Tensor, m: np.ndarray, out_w: int, out_h: int, interpolation: Any,
          fill: float | Sequence[float] | None, op: str) -> Tensor:
    """Samples ``img`` at ``m``'s positions, filling the uncovered pixels with ``fill``."""
    _check_image(op, img, any_int=True)
    h, w = img.shape[-2:]
    # torchvision's grid, op for op in the image's float dtype (the matrix scaled first): a
    # nearest sample that lands on a half pixel must round the way torchvision's does
    dtype = np.float64 if _to_float(img).dtype is ember.float64 else np.float32
    scaled = (m.astype(dtype).T / np.array([0.5 * w, 0.5 * h], dtype=dtype)).astype(dtype)
    xs = (np.arange(out_w) - out_w * 0.5 + 0.5).astype(dtype)[None, :, None]
    ys = (np.arange(out_h) - out_h * 0.5 + 0.5).astype(dtype)[:, None, None]
    src = xs * scaled[0] + ys * scaled[1] + scaled[2]
    grid = ember.tensor(src[None], dtype=ember.float64 if dtype == np.float64 else ember.float32)
    return _grid_transform(img, grid, interpolation, fill, op)


@_tensor_op
def rotate(img: Tensor, angle: float,
           interpolation: InterpolationMode = InterpolationMode.NEAREST,
           expand: bool = False, center: Sequence[float] | None = None,
           fill: float | Sequence[float] | None = None) -> Tensor:
    """Rotates by ``angle`` degrees counter-clockwise about ``center`` (``(x, y)``, default
    the image centre); ``expand`` grows the output to hold the whole rotated image; uncovered
    pixels are 0, or ``fill`` (one value, or one per channel).

    Example:
        >>> rotate(ember.tensor([[[1.0, 2.0], [3.0, 4.0]]]), 90).tolist()
        [[[2.0, 4.0], [1.0, 3.0]]]
    """
    h, w = img.shape[-2:]
    m = _inverse_affine(_centre("rotate", center, w, h), -angle, (0.0, 0.0), 1.0, (0.0, 0.0))
    out_w, out_h = _expanded_size(m, w, h) if expand else (w, h)
    return _warp(img, m, out_w, out_h, interpolation, fill, "rotate")


@_tensor_op
def affine(img: Tensor, angle: float, translate: Sequence[float], scale: float,
           shear: float | Sequence[float],
           interpolation: InterpolationMode = InterpolationMode.NEAREST,
           fill: float | Sequence[float] | None = None,
           center: Sequence[float] | None = None) -> Tensor:
    """An affine warp keeping the image size: rotation by ``angle`` degrees (clockwise, as
    torchvision's ``affine``), ``shear`` degrees (one number: along x; two: x and y), ``scale``
    and a ``translate`` of ``(dx, dy)`` pixels, about ``center`` (default the image centre).

    Example:
        >>> affine(ember.tensor([[[1.0, 2.0, 3.0]]]), 0.0, (1, 0), 1.0, 0.0).tolist()
        [[[0.0, 1.0, 2.0]]]
    """
    h, w = img.shape[-2:]
    m = _affine_inverse(_centre("affine", center, w, h), angle, translate, scale, shear)
    return _warp(img, m, w, h, interpolation, fill, "affine")


def _affine_inverse(center: Sequence[float], angle: float, translate: Sequence[float],
                    scale: float, shear: float | Sequence[float]) -> np.ndarray:
    """:func:`_inverse_affine` of ``affine``'s arguments, checked (shear: one number or one
    or two values)."""
    if scale <= 0:
        raise ArgumentError(f"affine: scale should be positive, got {scale}")
    if isinstance(shear, (int, float)):
        shear = [float(shear), 0.0]
    shear = [float(shear[0])] * 2 if len(shear) == 1 else [float(v) for v in shear]
    if len(shear) != 2 or len(translate) != 2:
        raise ArgumentError(f"affine: shear and translate need two values, got shear={shear}, "
                            f"translate={list(translate)}")
    return _inverse_affine(center, angle, [float(t) for t in translate], scale, shear)


# PIL images take torchvision's PIL path: Pillow's own resampling (see _pil_geometry)
def _resize_pil(img: Any, size: int | Sequence[int],
                interpolation: InterpolationMode = InterpolationMode.BILINEAR,
                max_size: int | None = None, antialias: bool | None = True) -> Any:
    width, height = img.size
    return resize_pil(img, _output_size(height, width, size, max_size), interpolation)


def _rotate_pil(img: Any, angle: float,
                interpolation: InterpolationMode = InterpolationMode.NEAREST,
                expand: bool = False, center: Sequence[float] | None = None,
                fill: float | Sequence[float] | None = None) -> Any:
    return rotate_pil(img, angle, interpolation, expand, center, fill)


def _affine_pil(img: Any, angle: float, translate: Sequence[float], scale: float,
                shear: float | Sequence[float],
                interpolation: InterpolationMode = InterpolationMode.NEAREST,
                fill: float | Sequence[float] | None = None,
                center: Sequence[float] | None = None) -> Any:
    width, height = img.size
    center = [width * 0.5, height * 0.5] if center is None else center  # in pixels, as Pillow
    m = _affine_inverse(center, angle, translate, scale, shear)
    return transform_pil("affine", img, "affine", m.reshape(-1), interpolation, fill)


def _perspective_pil(img: Any, startpoints: Any, endpoints: Any,
                     interpolation: InterpolationMode = InterpolationMode.BILINEAR,
                     fill: float | Sequence[float] | None = None) -> Any:
    coefficients = _perspective_coeffs(startpoints, endpoints)
    return transform_pil("perspective", img, "perspective", coefficients, interpolation, fill)


# every function of an image also takes a PIL image, and gives PIL images back (see _pil)
# (images of 2 or 4 bands, "RGBA", "LA", "CMYK", take torchvision's way through Pillow for
# the colour functions: see _pil_colour)
for _name in ("center_crop", "crop", "elastic_transform", "equalize",
              "five_crop", "gaussian_blur", "get_dimensions", "get_image_num_channels",
              "get_image_size", "hflip", "invert", "pad", "posterize", "solarize", "ten_crop",
              "vflip"):
    globals()[_name] = accepts_pil(globals()[_name])
# the resampling functions hand PIL images to Pillow as torchvision does (see _pil_geometry);
# resized_crop reaches resize through crop
resize = accepts_pil(resize, pillow=_resize_pil, use_pillow=lambda img: True)
rotate = accepts_pil(rotate, pillow=_rotate_pil, use_pillow=by_pillow)
affine = accepts_pil(affine, pillow=_affine_pil, use_pillow=by_pillow)
perspective = accepts_pil(perspective, pillow=_perspective_pil, use_pillow=by_pillow)
for _name in ("adjust_brightness", "adjust_gamma", "adjust_sharpness"):
    globals()[_name] = accepts_pil(globals()[_name], pillow=getattr(_pil_colour, _name),
                                   use_pillow=pillow_colours)
for _name in ("adjust_contrast", "adjust_hue", "adjust_saturation"):  # mix the bands as RGB
    globals()[_name] = accepts_pil_in_rgb(globals()[_name], getattr(_pil_colour, _name),
                                          use_pillow=pillow_colours)
autocontrast = accepts_pil(autocontrast, pillow=_pil_colour.autocontrast,
                           use_pillow=_pil_colour.by_pillow_autocontrast)
rgb_to_grayscale = grays_pil(rgb_to_grayscale)  # Pillow's luma, from any mode (see _pil)
