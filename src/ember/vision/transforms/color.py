"""Colour and point operations of ``torchvision.transforms.functional``: grayscale, the
brightness/contrast/saturation/hue/gamma/sharpness adjustments, and invert, posterize,
solarize, autocontrast and equalize, computed as torchvision's tensor code computes them
(re-exported by :mod:`ember.vision.transforms.functional`)."""

from __future__ import annotations

import math

import numpy as np

import ember
import ember.nn.functional as F
from ember.errors import ArgumentError, ArgumentTypeError, DTypeError
from ember.tensor import Tensor
from ember.vision.transforms._image import (
    _back,
    _bound,
    _check_image,
    _flat_as_one_channel,
    _from_unit,
    _images,
    _tensor_op,
    _to_float,
    _unit,
)

__all__ = ["adjust_brightness", "adjust_contrast", "adjust_gamma", "adjust_hue",
           "adjust_saturation", "adjust_sharpness", "autocontrast", "equalize", "invert",
           "posterize", "rgb_to_grayscale", "solarize"]


@_tensor_op
def rgb_to_grayscale(img: Tensor, num_output_channels: int = 1) -> Tensor:
    """ITU-R 601 luma ``0.2989 R + 0.587 G + 0.114 B`` (truncated for uint8), repeated to
    ``num_output_channels`` (1 or 3).

    Example:
        >>> rgb_to_grayscale(ember.ones(3, 1, 1)).shape
        ember.Size([1, 1, 1])
    """
    _check_image("rgb_to_grayscale", img, (1, 3), any_int=True)
    if num_output_channels not in (1, 3):
        raise ArgumentError(f"rgb_to_grayscale: num_output_channels should be either 1 or 3, "
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
        raise ArgumentError(f"{op}: {name} ({factor}) is not non-negative.")


@_flat_as_one_channel
@_tensor_op
def adjust_brightness(img: Tensor, brightness_factor: float) -> Tensor:
    """Scales intensities: 0 gives black, 1 the image.

    Example:
        >>> adjust_brightness(ember.full((3, 1, 1), 0.4), 2.0).flatten().tolist()
        [0.800000011920929, 0.800000011920929, 0.800000011920929]
    """
    _check_factor("adjust_brightness", "brightness_factor", brightness_factor)
    _check_image("adjust_brightness", img, (1, 3), any_int=True)
    return _blend(img, 0.0, brightness_factor)


@_tensor_op
def adjust_contrast(img: Tensor, contrast_factor: float) -> Tensor:
    """Blends with the mean gray level: 0 gives a uniform gray image, 1 the image.

    Example:
        >>> adjust_contrast(ember.tensor([[[0.0, 1.0]]]), 0.0).tolist()
        [[[0.5, 0.5]]]
    """
    _check_factor("adjust_contrast", "contrast_factor", contrast_factor)
    _check_image("adjust_contrast", img, (1, 3), any_int=True)
    gray = rgb_to_grayscale(img) if img.shape[-3] == 3 else img
    mean = _to_float(gray).mean(dim=(-3, -2, -1), keepdim=True)
    return _blend(img, mean, contrast_factor)


@_flat_as_one_channel
@_tensor_op
def adjust_saturation(img: Tensor, saturation_factor: float) -> Tensor:
    """Blends with the grayscale image: 0 gives gray, 1 the image, 2 doubles the saturation.

    Example:
        >>> adjust_saturation(ember.tensor([[[1.0]], [[0.0]], [[0.0]]]), 0.0).flatten()
        tensor([0.2989, 0.2989, 0.2989])
    """
    _check_factor("adjust_saturation", "saturation_factor", saturation_factor)
    _check_image("adjust_saturation", img, (1, 3), any_int=True)
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


def _unit32(img: Tensor) -> Tensor:
    """:func:`_unit` in float32 at least: torchvision takes hue and gamma through float32, so
    a half-float image rounds once at the end, not at every step (up to 15 ulps off)."""
    x = _unit(img)
    return x.float() if x.dtype in (ember.float16, ember.bfloat16) else x


@_flat_as_one_channel
@_tensor_op
def adjust_hue(img: Tensor, hue_factor: float) -> Tensor:
    """Rotates hues by ``hue_factor`` turns (in ``[-0.5, 0.5]``) through HSV.

    Example:
        >>> adjust_hue(ember.tensor([[[1.0]], [[0.0]], [[0.0]]]), 1 / 3).flatten()
        tensor([0., 1., 0.])
    """
    if not -0.5 <= hue_factor <= 0.5:
        raise ArgumentError(f"adjust_hue: hue_factor ({hue_factor}) is not in [-0.5, 0.5].")
    _check_image("adjust_hue", img, (1, 3), any_int=True)
    if img.shape[-3] == 1:
        return img
    h, s, v = _rgb_to_hsv(_unit32(img)).unbind(-3)
    out = _hsv_to_rgb(ember.stack(((h + hue_factor).remainder(1.0), s, v), dim=-3))
    return _from_unit(out, img.dtype)


@_flat_as_one_channel
@_tensor_op
def adjust_gamma(img: Tensor, gamma: float, gain: float = 1.0) -> Tensor:
    """``gain · img ** gamma`` on intensities in ``[0, 1]``.

    Example:
        >>> adjust_gamma(ember.tensor([[[0.25]]]), 0.5).item()
        0.5
    """
    if gamma < 0:
        raise ArgumentError(f"adjust_gamma: gamma ({gamma}) is not non-negative")
    _check_image("adjust_gamma", img, any_int=True)
    return _from_unit((gain * _unit32(img) ** gamma).clamp(0, 1), img.dtype)


def _smooth(img: Tensor) -> Tensor:
    """torchvision's sharpness blur: a 3x3 smoothing kernel inside, the border kept."""
    x = _to_float(img)
    kernel = ember.tensor([[1.0, 1.0, 1.0], [1.0, 5.0, 1.0], [1.0, 1.0, 1.0]],
                          dtype=x.dtype) / 13.0
    c = x.shape[-3]
    flat = _images(x)
    if flat.numel() == 0:
        return x
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
    _check_image("adjust_sharpness", img, (1, 3), any_int=True)
    if img.shape[-1] <= 2 or img.shape[-2] <= 2:
        return img
    return _blend(img, _smooth(img), sharpness_factor)


@_tensor_op
def invert(img: Tensor) -> Tensor:
    """``bound - img``: ``1 - img`` for floats, ``max - img`` for integer dtypes (their value
    bits flipped, as torchvision's, so a negative value keeps its sign).

    Example:
        >>> invert(ember.tensor([[[0, 200]]], dtype=ember.uint8)).tolist()
        [[[255, 55]]]
    """
    _check_image("invert", img, any_int=True)
    if img.dtype.is_floating_point:
        return 1.0 - img
    return ember.bitwise_xor(img, ember.iinfo(img.dtype).max)


@_tensor_op
def posterize(img: Tensor, bits: int) -> Tensor:
    """Keeps the ``bits`` high bits of each uint8 value.

    Example:
        >>> posterize(ember.tensor([[[255, 37]]], dtype=ember.uint8), 2).tolist()
        [[[192, 0]]]
    """
    if img.dtype is not ember.uint8:
        raise DTypeError(f"posterize: only uint8 images are supported, got {img.dtype}")
    if not 0 <= bits <= 8:
        raise ArgumentError(f"posterize: bits must be in [0, 8], got {bits}")
    mask = -int(2 ** (8 - bits)) & 0xFF
    return img & mask


@_tensor_op
def solarize(img: Tensor, threshold: float) -> Tensor:
    """Inverts the values at or above ``threshold``.

    Example:
        >>> solarize(ember.tensor([[[0.2, 0.8]]]), 0.5).tolist()
        [[[0.20000000298023224, 0.19999998807907104]]]
    """
    _check_image("solarize", img, any_int=True)
    if threshold > _bound(img):
        raise ArgumentTypeError(f"solarize: threshold {threshold} should be at most the image's "
                                f"bound {_bound(img)}")
    return ember.where(_at_or_above(img, threshold), invert(img), img)


def _at_or_above(img: Tensor, threshold: float) -> Tensor:
    """``img >= threshold``, exact in every dtype: PyTorch's uint16 and uint32 have no
    comparisons (compared in int64); uint64 is compared as int64 with its top bit flipped,
    which keeps the order (float64 would round values past 2**53)."""
    if img.dtype in (ember.uint16, ember.uint32):
        return img.to(ember.int64) >= threshold
    if img.dtype is not ember.uint64:
        return img >= threshold
    if math.isnan(threshold):
        return ember.zeros(img.shape, dtype=ember.bool)
    edge = 0 if threshold <= 0 else math.ceil(threshold)  # (at most the bound, checked)
    return (img ^ 2 ** 63).view(ember.int64) >= edge - 2 ** 63


@_tensor_op
def autocontrast(img: Tensor) -> Tensor:
    """Stretches each channel to the full range ``0..bound`` of the dtype (1 for floats, the
    dtype's maximum for integers); channels that are constant are kept.

    Example:
        >>> autocontrast(ember.tensor([[[0.25, 0.5]]])).tolist()
        [[[0.0, 1.0]]]
    """
    return _stretch(img, v2=False)


def _stretch(img: Tensor, v2: bool) -> Tensor:
    """Autocontrast as torchvision computes it, in float32 for integer images: v1 as
    ``(x - lo) * ((1 / (hi - lo)) * bound)`` (a non-finite scale marks a flat channel), v2 as
    ``(x - lo) / ((hi - lo) * (1 / bound))`` (``hi == lo`` marks it); truncated back. Where
    the float32 top of an int32/int64 range (2**31, 2**63) overflows torch's cast to the most
    negative value, Ember gives the dtype's maximum."""
    if img.dtype is ember.bool:
        raise DTypeError("autocontrast: expected an integer or floating image, got ember.bool")
    _check_image("autocontrast", img, channels=(1, 3), any_int=True)
    if img.numel() == 0:
        return img.clone()
    integer = not img.dtype.is_floating_point
    bound = float(ember.iinfo(img.dtype).max) if integer else 1.0
    x = img.to(ember.float32) if integer else img
    lo, hi = x.amin((-2, -1), keepdim=True), x.amax((-2, -1), keepdim=True)
    if v2:
        flat = hi == lo
        step = ember.where(flat, ember.ones_like(hi), (hi - lo) * (1.0 / bound))
        out = (x - ember.where(flat, ember.zeros_like(lo), lo)) / step
    else:
        scale = (1.0 / (hi - lo)) * bound   # torch's bound / t: a reciprocal, then a product
        flat = ~scale.isfinite()
        scale = ember.where(flat, ember.ones_like(scale), scale)
        out = (x - ember.where(flat, ember.zeros_like(lo), lo)) * scale
    out = out.clamp(0, bound)
    if not integer:
        return out
    # bound in float32 is the dtype's top, or 2**31/2**63 just past it: both give the maximum
    top = ember.full_like(img, ember.iinfo(img.dtype).max)
    return ember.where(out < bound, out.to(img.dtype), top)


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
        raise DTypeError(f"equalize: only uint8 images are supported, got {img.dtype}")
    _check_image("equalize", img)
    x = img.numpy()
    flat = x.reshape(int(np.prod(x.shape[:-2])), *x.shape[-2:])
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
