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
from collections.abc import Callable, Sequence
from enum import Enum
from functools import wraps
from typing import Any

import numpy as np

import ember
import ember.nn.functional as F
from ember.tensor import Tensor
from ember.vision.transforms.basic import crop, pad

__all__ = ["InterpolationMode", "adjust_brightness", "affine", "adjust_contrast", "adjust_gamma",
           "adjust_hue", "adjust_saturation", "adjust_sharpness", "autocontrast",
           "center_crop", "crop", "equalize", "erase", "gaussian_blur", "hflip", "invert",
           "pad", "posterize", "resize", "resized_crop", "rgb_to_grayscale", "rotate",
           "solarize", "vflip"]

Image = Tensor | np.ndarray


class InterpolationMode(Enum):
    """Resampling kernels, as torchvision's enum."""

    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"


def _tensor_op(fn: Callable) -> Callable:
    """Lets ``fn`` (written for ``(..., C, H, W)`` tensors) take ``(H, W[, C])`` arrays too."""

    @wraps(fn)
    def run(img: Image, *args: Any, **kwargs: Any) -> Image:
        if isinstance(img, Tensor):
            return fn(img, *args, **kwargs)
        if not isinstance(img, np.ndarray) or img.ndim not in (2, 3):
            raise TypeError(f"{fn.__name__}: img should be a tensor (..., C, H, W) or an "
                            f"(H, W[, C]) array, got {type(img).__name__}")
        chw = img[None] if img.ndim == 2 else img.transpose(2, 0, 1)
        out = fn(ember.from_numpy(np.ascontiguousarray(chw)), *args, **kwargs).numpy()
        return out[0] if img.ndim == 2 else np.ascontiguousarray(out.transpose(1, 2, 0))

    return run


def _check_image(op: str, img: Tensor, channels: tuple[int, ...] = ()) -> None:
    if img.ndim < 3:
        raise ValueError(f"{op}: expected an image (..., C, H, W), got shape {tuple(img.shape)}")
    if channels and img.shape[-3] not in channels:
        raise ValueError(f"{op}: expected {' or '.join(map(str, channels))} channels, got "
                         f"{img.shape[-3]} (shape {tuple(img.shape)})")
    if img.dtype is not ember.uint8 and not img.dtype.is_floating_point:
        raise TypeError(f"{op}: expected a uint8 or floating image, got {img.dtype}")


def _bound(img: Tensor) -> float:
    return 255.0 if img.dtype is ember.uint8 else 1.0


def _to_float(img: Tensor) -> Tensor:
    return img if img.dtype.is_floating_point else img.to(ember.float32)


def _back(img: Tensor, dtype: ember.DType, rounded: bool) -> Tensor:
    """A float result in the input's dtype; integers rounded (or truncated) and clamped."""
    if dtype.is_floating_point:
        return img
    if rounded:
        img = img.round()
    return img.clamp(0, 255).to(dtype)


def _unit(img: Tensor) -> Tensor:
    """Intensities in ``[0, 1]``: a uint8 image divided by 255, a float one as it is."""
    return img.to(ember.float32) / 255.0 if img.dtype is ember.uint8 else img


def _from_unit(img: Tensor, dtype: ember.DType) -> Tensor:
    """Back from ``[0, 1]`` as torchvision's ``convert_image_dtype``: uint8 scales by
    ``256 - 1e-3`` and truncates, so that a value that went through :func:`_unit` comes back
    unchanged despite rounding."""
    return (img * (256.0 - 1e-3)).to(ember.uint8) if dtype is ember.uint8 else img


def _output_size(h: int, w: int, size: int | Sequence[int], max_size: int | None
                 ) -> tuple[int, int]:
    """torchvision's output size: a pair as given; one number for the smaller edge, the
    other keeping the aspect ratio (then both shrunk so the longer is at most ``max_size``)."""
    if isinstance(size, Sequence) and len(size) == 2:
        if max_size is not None:
            raise ValueError("resize: max_size is only supported for a single int size, got "
                             f"size={list(size)}")
        return int(size[0]), int(size[1])
    target = int(size[0] if isinstance(size, Sequence) else size)
    short, long = min(h, w), max(h, w)
    new_short, new_long = target, int(target * long / short)
    if max_size is not None:
        if max_size <= target:
            raise ValueError(f"resize: max_size = {max_size} must be strictly greater than "
                             f"the requested size for the smaller edge size = {target}")
        if new_long > max_size:
            new_short, new_long = int(max_size * new_short / new_long), max_size
    return (new_short, new_long) if h <= w else (new_long, new_short)


@_tensor_op
def resize(img: Tensor, size: int | Sequence[int],
           interpolation: InterpolationMode = InterpolationMode.BILINEAR,
           max_size: int | None = None, antialias: bool | None = True) -> Tensor:
    """Resizes to ``size`` (``(h, w)``, or one number for the smaller edge), antialiased
    when bilinear or bicubic as torchvision does by default.

    Example:
        >>> resize(ember.zeros(3, 10, 20), (5, 5)).shape
        ember.Size([3, 5, 5])
    """
    _check_image("resize", img)
    mode = InterpolationMode(interpolation).value
    h, w = img.shape[-2:]
    out = _output_size(h, w, size, max_size)
    if out == (h, w):
        return img
    x = _to_float(img)
    batch = x.shape[:-3]
    x = x.reshape(-1, *x.shape[-3:])
    smooth = mode in ("bilinear", "bicubic")
    x = F.interpolate(x, size=out, mode=mode, align_corners=False if smooth else None,
                      antialias=bool(antialias) and smooth)
    return _back(x.reshape(*batch, *x.shape[-3:]), img.dtype, rounded=smooth)


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


@_tensor_op
def rgb_to_grayscale(img: Tensor, num_output_channels: int = 1) -> Tensor:
    """ITU-R 601 luma ``0.2989 R + 0.587 G + 0.114 B`` (truncated for uint8), repeated to
    ``num_output_channels`` (1 or 3).

    Example:
        >>> rgb_to_grayscale(ember.ones(3, 1, 1)).shape
        ember.Size([1, 1, 1])
    """
    _check_image("rgb_to_grayscale", img, (1, 3))
    if num_output_channels not in (1, 3):
        raise ValueError(f"rgb_to_grayscale: num_output_channels should be either 1 or 3, "
                         f"got {num_output_channels}")
    if img.shape[-3] == 1:
        gray = img
    else:
        r, g, b = img.unbind(-3)
        gray = (0.2989 * r + 0.587 * g + 0.114 * b).to(img.dtype).unsqueeze(-3)
    return gray.expand(*gray.shape[:-3], num_output_channels, *gray.shape[-2:]).contiguous()


def _blend(img: Tensor, other: Tensor | float, ratio: float) -> Tensor:
    """``ratio · img + (1 - ratio) · other``, clamped to the image's range (truncated to
    uint8)."""
    out = ratio * _to_float(img) + (1.0 - ratio) * other
    return out.clamp(0, _bound(img)).to(img.dtype)


def _check_factor(op: str, name: str, factor: float) -> None:
    if factor < 0:
        raise ValueError(f"{op}: {name} ({factor}) is not non-negative.")


@_tensor_op
def adjust_brightness(img: Tensor, brightness_factor: float) -> Tensor:
    """Scales intensities: 0 gives black, 1 the image.

    Example:
        >>> adjust_brightness(ember.full((3, 1, 1), 0.4), 2.0).flatten().tolist()
        [0.800000011920929, 0.800000011920929, 0.800000011920929]
    """
    _check_factor("adjust_brightness", "brightness_factor", brightness_factor)
    _check_image("adjust_brightness", img, (1, 3))
    return _blend(img, 0.0, brightness_factor)


@_tensor_op
def adjust_contrast(img: Tensor, contrast_factor: float) -> Tensor:
    """Blends with the mean gray level: 0 gives a uniform gray image, 1 the image.

    Example:
        >>> adjust_contrast(ember.tensor([[[0.0, 1.0]]]), 0.0).tolist()
        [[[0.5, 0.5]]]
    """
    _check_factor("adjust_contrast", "contrast_factor", contrast_factor)
    _check_image("adjust_contrast", img, (1, 3))
    gray = rgb_to_grayscale(img) if img.shape[-3] == 3 else img
    mean = _to_float(gray).mean(dim=(-3, -2, -1), keepdim=True)
    return _blend(img, mean, contrast_factor)


@_tensor_op
def adjust_saturation(img: Tensor, saturation_factor: float) -> Tensor:
    """Blends with the grayscale image: 0 gives gray, 1 the image, 2 doubles the saturation.

    Example:
        >>> adjust_saturation(ember.tensor([[[1.0]], [[0.0]], [[0.0]]]), 0.0).flatten()
        tensor([0.2989, 0.2989, 0.2989])
    """
    _check_factor("adjust_saturation", "saturation_factor", saturation_factor)
    _check_image("adjust_saturation", img, (1, 3))
    if img.shape[-3] == 1:
        return img
    return _blend(img, _to_float(rgb_to_grayscale(img)), saturation_factor)


def _rgb_to_hsv(img: Tensor) -> Tensor:
    r, g, b = img.unbind(-3)
    maxc, minc = img.amax(-3), img.amin(-3)
    gray = maxc == minc
    cr = maxc - minc
    ones = ember.ones_like(maxc)
    s = cr / ember.where(gray, ones, maxc)
    cr_div = ember.where(gray, ones, cr)
    rc, gc, bc = (maxc - r) / cr_div, (maxc - g) / cr_div, (maxc - b) / cr_div
    hr = (maxc == r) * (bc - gc)
    hg = ((maxc == g) & (maxc != r)) * (2.0 + rc - bc)
    hb = ((maxc != g) & (maxc != r)) * (4.0 + gc - rc)
    h = ((hr + hg + hb) / 6.0 + 1.0).fmod(1.0)
    return ember.stack((h, s, maxc), dim=-3)


def _hsv_to_rgb(img: Tensor) -> Tensor:
    h, s, v = img.unbind(-3)
    i = (h * 6.0).floor()
    f = h * 6.0 - i
    i = i.to(ember.int64).remainder(6)
    p = (v * (1.0 - s)).clamp(0.0, 1.0)
    q = (v * (1.0 - s * f)).clamp(0.0, 1.0)
    t = (v * (1.0 - s * (1.0 - f))).clamp(0.0, 1.0)
    sector = [i == k for k in range(6)]
    table = {0: (v, t, p), 1: (q, v, p), 2: (p, v, t), 3: (p, q, v), 4: (t, p, v), 5: (v, p, q)}
    channels = []
    for c in range(3):
        out = ember.zeros_like(v)
        for k in range(6):
            out = ember.where(sector[k], table[k][c], out)
        channels.append(out)
    return ember.stack(channels, dim=-3)


@_tensor_op
def adjust_hue(img: Tensor, hue_factor: float) -> Tensor:
    """Rotates hues by ``hue_factor`` turns (in ``[-0.5, 0.5]``) through HSV.

    Example:
        >>> adjust_hue(ember.tensor([[[1.0]], [[0.0]], [[0.0]]]), 1 / 3).flatten()
        tensor([0., 1., 0.])
    """
    if not -0.5 <= hue_factor <= 0.5:
        raise ValueError(f"adjust_hue: hue_factor ({hue_factor}) is not in [-0.5, 0.5].")
    _check_image("adjust_hue", img, (1, 3))
    if img.shape[-3] == 1:
        return img
    h, s, v = _rgb_to_hsv(_unit(img)).unbind(-3)
    out = _hsv_to_rgb(ember.stack(((h + hue_factor).remainder(1.0), s, v), dim=-3))
    return _from_unit(out, img.dtype)


@_tensor_op
def adjust_gamma(img: Tensor, gamma: float, gain: float = 1.0) -> Tensor:
    """``gain · img ** gamma`` on intensities in ``[0, 1]``.

    Example:
        >>> adjust_gamma(ember.tensor([[[0.25]]]), 0.5).item()
        0.5
    """
    if gamma < 0:
        raise ValueError(f"adjust_gamma: gamma ({gamma}) is not non-negative")
    _check_image("adjust_gamma", img)
    return _from_unit((gain * _unit(img) ** gamma).clamp(0, 1), img.dtype)


def _smooth(img: Tensor) -> Tensor:
    """torchvision's sharpness blur: a 3x3 smoothing kernel inside, the border kept."""
    x = _to_float(img)
    kernel = ember.tensor([[1.0, 1.0, 1.0], [1.0, 5.0, 1.0], [1.0, 1.0, 1.0]],
                          dtype=x.dtype) / 13.0
    c = x.shape[-3]
    flat = x.reshape(-1, c, *x.shape[-2:])
    inner = F.conv2d(flat, kernel.expand(c, 1, 3, 3), groups=c)
    inner = _back(inner, img.dtype, rounded=True).to(x.dtype)
    out = flat.clone()
    out[..., 1:-1, 1:-1] = inner
    return out.reshape(x.shape)


@_tensor_op
def adjust_sharpness(img: Tensor, sharpness_factor: float) -> Tensor:
    """Blends with a smoothed image: 0 blurs, 1 keeps, 2 sharpens.

    Example:
        >>> adjust_sharpness(ember.ones(3, 4, 4), 2.0).shape
        ember.Size([3, 4, 4])
    """
    _check_factor("adjust_sharpness", "sharpness_factor", sharpness_factor)
    _check_image("adjust_sharpness", img, (1, 3))
    if img.shape[-1] <= 2 or img.shape[-2] <= 2:
        return img
    return _blend(img, _smooth(img), sharpness_factor)


@_tensor_op
def invert(img: Tensor) -> Tensor:
    """``bound - img``.

    Example:
        >>> invert(ember.tensor([[[0, 200]]], dtype=ember.uint8)).tolist()
        [[[255, 55]]]
    """
    _check_image("invert", img)
    return (255 - img) if img.dtype is ember.uint8 else 1.0 - img


@_tensor_op
def posterize(img: Tensor, bits: int) -> Tensor:
    """Keeps the ``bits`` high bits of each uint8 value.

    Example:
        >>> posterize(ember.tensor([[[255, 37]]], dtype=ember.uint8), 2).tolist()
        [[[192, 0]]]
    """
    if img.dtype is not ember.uint8:
        raise TypeError(f"posterize: only uint8 images are supported, got {img.dtype}")
    if not 0 <= bits <= 8:
        raise ValueError(f"posterize: bits must be in [0, 8], got {bits}")
    mask = -int(2 ** (8 - bits)) & 0xFF
    return img & mask


@_tensor_op
def solarize(img: Tensor, threshold: float) -> Tensor:
    """Inverts the values at or above ``threshold``.

    Example:
        >>> solarize(ember.tensor([[[0.2, 0.8]]]), 0.5).tolist()
        [[[0.20000000298023224, 0.19999998807907104]]]
    """
    _check_image("solarize", img)
    if threshold > _bound(img):
        raise TypeError("solarize: threshold should be less than bound of img.")
    return ember.where(img >= threshold, invert(img), img)


@_tensor_op
def autocontrast(img: Tensor) -> Tensor:
    """Stretches each channel to the full range (channels that are constant are kept).

    Example:
        >>> autocontrast(ember.tensor([[[0.25, 0.5]]])).tolist()
        [[[0.0, 1.0]]]
    """
    _check_image("autocontrast", img)
    bound = _bound(img)
    x = _to_float(img)
    lo, hi = x.amin((-2, -1), keepdim=True), x.amax((-2, -1), keepdim=True)
    flat = hi == lo
    scale = bound / ember.where(flat, ember.ones_like(hi), hi - lo)
    lo = ember.where(flat, ember.zeros_like(lo), lo)
    scale = ember.where(flat, ember.ones_like(scale), scale)
    return ((x - lo) * scale).clamp(0, bound).to(img.dtype)


@_tensor_op
def equalize(img: Tensor) -> Tensor:
    """Histogram equalization of each channel of a uint8 image (PIL's algorithm).

    Example:
        >>> x = (ember.arange(512) // 8).to(ember.uint8).reshape(1, 16, 32)  # 0..63, 8 each
        >>> y = equalize(x)
        >>> y[0, 0, 8].item(), y.max().item()                 # 1 -> 8, spread to 255
        (8, 255)
    """
    if img.dtype is not ember.uint8:
        raise TypeError(f"equalize: only uint8 images are supported, got {img.dtype}")
    _check_image("equalize", img)
    x = img.numpy()
    flat = x.reshape(-1, *x.shape[-2:])
    out = np.empty_like(flat)
    for k, channel in enumerate(flat):
        hist = np.bincount(channel.ravel(), minlength=256)
        nonzero = hist[hist != 0]
        step = (nonzero.sum() - nonzero[-1]) // 255 if len(nonzero) else 0
        if step == 0:
            out[k] = channel
            continue
        lut = (np.cumsum(hist) + step // 2) // step
        lut = np.concatenate([[0], lut[:-1]]).clip(0, 255).astype(np.uint8)
        out[k] = lut[channel]
    return ember.from_numpy(out.reshape(x.shape))


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
        raise ValueError(f"gaussian_blur: kernel_size should have odd and positive integers, "
                         f"got {kernel_size}")
    if sigma is None:
        sig = [0.3 * ((k - 1) * 0.5 - 1) + 0.8 for k in ks]
    else:
        sig = [float(sigma)] * 2 if isinstance(sigma, (int, float)) else list(sigma)
        sig = sig * 2 if len(sig) == 1 else sig
    if len(sig) != 2 or any(s <= 0 for s in sig):
        raise ValueError(f"gaussian_blur: sigma should have positive values, got {sigma}")
    _check_image("gaussian_blur", img)
    x = _to_float(img)
    c = x.shape[-3]
    flat = x.reshape(-1, c, *x.shape[-2:])
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
        raise ValueError(f"{op}: center should be a sequence of length 2 (x, y), got {center}")
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
    """Samples ``img`` at ``m``'s positions (``grid_sample``, zeros outside), filling the
    uncovered pixels with ``fill`` as torchvision does."""
    _check_image(op, img)
    mode = InterpolationMode(interpolation).value
    if mode not in ("nearest", "bilinear"):
        raise ValueError(f"{op}: interpolation must be NEAREST or BILINEAR, got {mode}")
    h, w = img.shape[-2:]
    x = _to_float(img)
    c = x.shape[-3]
    flat = x.reshape(-1, c, h, w)
    xs, ys = np.meshgrid(np.arange(out_w) - out_w * 0.5 + 0.5, np.arange(out_h) - out_h * 0.5 + 0.5)
    src = np.stack([xs, ys, np.ones_like(xs)], -1) @ m.T / [0.5 * w, 0.5 * h]
    grid = ember.tensor(src[None], dtype=x.dtype).expand(flat.shape[0], out_h, out_w, 2)
    if fill is None:
        out = F.grid_sample(flat, grid, mode=mode, padding_mode="zeros", align_corners=False)
    else:
        fills = [float(fill)] if isinstance(fill, (int, float)) else [float(f) for f in fill]
        if len(fills) not in (1, c):
            raise ValueError(f"{op}: fill {fill} has {len(fills)} values but the image has {c} "
                             "channel(s); give one value, or one per channel")
        ones = ember.ones(flat.shape[0], 1, h, w, dtype=x.dtype)
        sampled = F.grid_sample(ember.cat((flat, ones), 1), grid, mode=mode,
                                padding_mode="zeros", align_corners=False)
        out, covered = sampled[:, :c], sampled[:, c:]
        back = ember.tensor(fills * (c // len(fills)), dtype=x.dtype).reshape(1, c, 1, 1)
        if mode == "nearest":
            out = ember.where(covered < 0.5, back.expand_as(out), out)
        else:
            out = out * covered + (1.0 - covered) * back
    return _back(out.reshape(*x.shape[:-2], out_h, out_w), img.dtype, rounded=True)


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
    if scale <= 0:
        raise ValueError(f"affine: scale should be positive, got {scale}")
    if isinstance(shear, (int, float)):
        shear = [float(shear), 0.0]
    shear = [float(shear[0])] * 2 if len(shear) == 1 else [float(v) for v in shear]
    if len(shear) != 2 or len(translate) != 2:
        raise ValueError(f"affine: shear and translate need two values, got shear={shear}, "
                         f"translate={list(translate)}")
    h, w = img.shape[-2:]
    m = _inverse_affine(_centre("affine", center, w, h), angle, [float(t) for t in translate],
                        scale, shear)
    return _warp(img, m, w, h, interpolation, fill, "affine")
