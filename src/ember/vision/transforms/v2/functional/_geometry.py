"""The geometric ``v2.functional`` functions: each moves an image (or video, or pure tensor)
with the v1 kernel of the same name, a mask with the same kernel at nearest-neighbour
interpolation, and boxes with the kernels of :mod:`._box_geometry`."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import ember
from ember.errors import ArgumentError
from ember.ops.interpolate import _nearest_index
from ember.tensor import Tensor
from ember.vision import tv_tensors
from ember.vision.transforms import functional as TF
from ember.vision.transforms._image import InterpolationMode, _tensor_op
from ember.vision.transforms._pil import accepts_pil
from ember.vision.transforms.basic import _size_pair
from ember.vision.transforms.v2.functional._box_geometry import (
    affine_bounding_boxes,
    crop_bounding_boxes,
    horizontal_flip_bounding_boxes,
    pad_bounding_boxes,
    quarter_turns,
    resize_bounding_boxes,
    rotate_bounding_boxes,
    vertical_flip_bounding_boxes,
)
from ember.vision.transforms.v2.functional._meta import get_size
from ember.vision.transforms.v2.functional._type_conversion import to_pure_tensor
from ember.vision.transforms.v2.functional._utils import _dispatch, _register_kernel_internal
from ember.vision.tv_tensors import BoundingBoxes, Image, Mask, Video

__all__ = ["affine", "center_crop", "crop", "hflip", "horizontal_flip", "pad", "resize",
           "resized_crop", "rotate", "vertical_flip", "vflip"]

Fill = float | Sequence[float] | None
_NEAREST = InterpolationMode.NEAREST
_IMAGES = (Tensor, Image, Video, np.ndarray)  # arrays (H, W[, C]) as the v1 kernels take them


def _on_mask(kernel: Callable, mask: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """An image ``kernel`` that copies pixels (crop, pad) run on a mask in its own dtype, so
    every label stays exact: ``(H, W)`` masks get a channel dimension for it."""
    flat = mask.ndim == 2
    out = kernel(mask.unsqueeze(0) if flat else mask, *args, **kwargs)
    return out.squeeze(0) if flat else out


def _fills(op: str, fill: Fill, x: Tensor) -> list[int] | None:
    """An integer mask ``x``'s ``fill``, one value per channel (one value stands for all),
    rounded as torchvision rounds its float32 result (half to even); None stays None. A NaN or
    infinite fill has no integer value, and one outside the dtype's range no label: refused
    with the op's name."""
    if fill is None:
        return None
    fills = [fill] if isinstance(fill, numbers.Number) else list(fill)
    for f in fills:
        if not isinstance(f, numbers.Integral) and not math.isfinite(f):
            raise ArgumentError(f"{op}: fill must be finite for an integer or bool mask, got {f}")
    given, fills = fills, [int(f) if isinstance(f, numbers.Integral) else round(float(f))
                           for f in fills]
    _check_fill_range(op, x, list(zip(given, fills)))
    return fills * x.shape[-3] if len(fills) == 1 else fills


def _check_fill_range(op: str, x: Tensor, fills: Sequence[tuple[float, float]]) -> None:
    """Refuses a fill (pairs of the given value and the value stored) that is no label of the
    integer mask ``x``'s dtype (bool takes any): torchvision's pad refuses it, its warps wrap
    it through float32 (undefined past 32 bits)."""
    if x.dtype is ember.bool:
        return
    info = ember.iinfo(x.dtype)
    for given, stored in fills:
        if not info.min <= stored <= info.max:
            shown = given if given == stored else f"{given} (rounded: {stored})"
            raise ArgumentError(f"{op}: fill {shown} is outside the range [{info.min}, "
                                f"{info.max}] of the mask's dtype {x.dtype}; give a label of it")


def _warp_mask(op: str, kernel: Callable, mask: Tensor, fill: Fill, *args: Any,
               **kwargs: Any) -> Tensor:
    """A grid warp ``kernel`` (called as ``kernel(x, *args, fill=fill, **kwargs)``) run on a
    mask (``op`` names it in errors): integer and bool masks are sampled as float32, as
    torchvision's, so that the grid is float32 and nearest ties break alike. Labels or a fill
    past 2**24 (which float32, and torchvision, would round) are warped as 24-bit pieces, each
    exact in float32."""
    def run(x: Tensor) -> Tensor:
        if x.dtype.is_floating_point:
            return kernel(x, *args, fill=fill, **kwargs)
        fills = _fills(op, fill, x)
        if x.dtype is ember.uint8:
            return kernel(x, *args, fill=fill, **kwargs)
        fits = fills is None or len(fills) == x.shape[-3]  # (else the kernel's error)
        if fits and x.dtype is not ember.bool and ember.iinfo(x.dtype).bits > 16 and \
                _past_float32(x, fills):
            return _warp_pieces(lambda y, f: kernel(y, *args, fill=f, **kwargs), x, fills)
        return kernel(x.to(ember.float32), *args, fill=fills, **kwargs).to(x.dtype)
    return _on_mask(run, mask)


_PIECE = 24  # float32 holds every integer up to 2**24 exactly


def _past_float32(x: Tensor, fills: list[int] | None) -> bool:
    """Whether a label of ``x`` or a fill lies past float32's exact integers."""
    values = x.numpy()  # (NumPy's max: Ember's uint32/uint64 have none)
    bounds = [int(values.max()), int(values.min())] if values.size else []
    return any(abs(v) > 2 ** _PIECE for v in bounds + (fills or []))


def _warp_pieces(kernel: Callable, x: Tensor, fills: list[int] | None) -> Tensor:
    """``kernel(pieces, fill)`` run on the 24-bit pieces of an integer mask ``x`` (of its
    two's complement), stacked as channels (each channel's pieces side by side), with the
    pieces of each channel's fill; the warped pieces are put back together."""
    bits = ember.iinfo(x.dtype).bits
    shifts = np.arange(-(-bits // _PIECE), dtype=np.uint64)[:, None, None] * np.uint64(_PIECE)
    low = 2 ** _PIECE - 1
    values = x.numpy().astype(np.uint64)[..., None, :, :]  # (..., C, 1, H, W)
    pieces = ((values >> shifts) & np.uint64(low)).astype(np.float32)  # (..., C, n, H, W)
    n = len(shifts)
    if fills is not None:
        fills = [(f % 2 ** 64) >> (_PIECE * i) & low for f in fills for i in range(n)]
    out = kernel(ember.from_numpy(pieces.reshape(*x.shape[:-3], -1, *x.shape[-2:])), fills)
    out = out.numpy().astype(np.uint64).reshape(*out.shape[:-3], -1, n, *out.shape[-2:])
    whole = np.bitwise_or.reduce(out << shifts, axis=-3)
    return ember.from_numpy(whole.astype(f"uint{bits}").view(x.numpy().dtype))


def _boxes_out(boxes: BoundingBoxes, out: Tensor | tuple[Tensor, tuple[int, int]]
               ) -> BoundingBoxes:
    if isinstance(out, tuple):
        return tv_tensors.wrap(out[0], like=boxes, canvas_size=out[1])
    return tv_tensors.wrap(out, like=boxes)


def horizontal_flip(inpt: Tensor) -> Tensor:
    """Mirrors an image, video, mask or boxes left-right.

    Example:
        >>> boxes = tv_tensors.BoundingBoxes([0, 0, 1, 2], format="XYXY", canvas_size=(4, 4))
        >>> horizontal_flip(boxes).tolist()
        [[3, 0, 4, 2]]
    """
    return _dispatch(horizontal_flip, inpt)


def vertical_flip(inpt: Tensor) -> Tensor:
    """Mirrors an image, video, mask or boxes top-bottom.

    Example:
        >>> vertical_flip(tv_tensors.Mask([[1, 1], [0, 0]])).tolist()
        [[0, 0], [1, 1]]
    """
    return _dispatch(vertical_flip, inpt)


hflip = horizontal_flip
vflip = vertical_flip

_register_kernel_internal(horizontal_flip, *_IMAGES, Mask)(TF.hflip)
_register_kernel_internal(vertical_flip, *_IMAGES, Mask)(TF.vflip)


@_register_kernel_internal(horizontal_flip, BoundingBoxes, tv_tensor_wrapper=False)
def _hflip_boxes(inpt: BoundingBoxes) -> BoundingBoxes:
    return _boxes_out(inpt, horizontal_flip_bounding_boxes(to_pure_tensor(inpt), inpt.format,
                                                           inpt.canvas_size))


@_register_kernel_internal(vertical_flip, BoundingBoxes, tv_tensor_wrapper=False)
def _vflip_boxes(inpt: BoundingBoxes) -> BoundingBoxes:
    return _boxes_out(inpt, vertical_flip_bounding_boxes(to_pure_tensor(inpt), inpt.format,
                                                         inpt.canvas_size))


def _size_for_max_size(canvas: Sequence[int], max_size: int | None) -> list[int]:
    """The ``(h, w)`` whose longer edge is ``max_size``, keeping the aspect ratio."""
    if not isinstance(max_size, int):
        raise ArgumentError(f"resize: max_size must be an int when size is None, got {max_size!r}")
    height, width = canvas
    short = int(max_size * min(height, width) / max(height, width))
    return [max_size, short] if width <= height else [short, max_size]


def resize(inpt: Tensor, size: int | Sequence[int] | None,
           interpolation: InterpolationMode = InterpolationMode.BILINEAR,
           max_size: int | None = None, antialias: bool | None = True) -> Tensor:
    """Resizes to ``size`` (``(h, w)``, or one number for the smaller edge; None: the longer
    edge becomes ``max_size``); masks are resampled at nearest neighbour, boxes scaled with
    the canvas.

    Example:
        >>> boxes = tv_tensors.BoundingBoxes([2, 2, 4, 4], format="XYXY", canvas_size=(8, 8))
        >>> out = resize(boxes, 4)
        >>> out.tolist(), out.canvas_size
        ([[1, 1, 2, 2]], (4, 4))
    """
    if size is None:
        size, max_size = _size_for_max_size(get_size(inpt), max_size), None
    return _dispatch(resize, inpt, size=size, interpolation=interpolation, max_size=max_size,
                     antialias=antialias)


@_tensor_op
def _resize_image(img: Tensor, size: int | Sequence[int],
                  interpolation: InterpolationMode = InterpolationMode.BILINEAR,
                  max_size: int | None = None, antialias: bool | None = True) -> Tensor:
    # as torchvision 0.28's v2 on CPU: uint8 through F.interpolate's uint8 kernels, lanczos too
    mode = InterpolationMode(interpolation).value
    if mode in ("box", "hamming"):
        raise ArgumentError(f"resize: interpolation {mode!r} is Pillow's, for PIL images only; a "
                            f"tensor takes NEAREST, NEAREST_EXACT, BILINEAR, BICUBIC or LANCZOS")
    if mode == "lanczos" and not antialias:
        raise ArgumentError("resize: InterpolationMode.LANCZOS requires antialias=True")
    return TF._resize_tensor(img, size, mode, max_size, antialias, uint8_kernels=True)


_register_kernel_internal(resize, *_IMAGES)(accepts_pil(_resize_image, pillow=TF.resize,
                                                        use_pillow=lambda img: True))


@_register_kernel_internal(resize, Mask)
def _resize_mask(mask: Tensor, size: int | Sequence[int],
                 interpolation: InterpolationMode = InterpolationMode.BILINEAR,
                 max_size: int | None = None, **_: Any) -> Tensor:
    """Nearest neighbour (NEAREST_EXACT if asked, any other mode is NEAREST, as torchvision's)
    in the mask's own dtype, so every label stays exact: the rows and columns each output
    pixel copies are those ``F.interpolate`` picks."""
    exact = InterpolationMode(interpolation) is InterpolationMode.NEAREST_EXACT
    h, w = mask.shape[-2:]
    out = TF._output_size(h, w, size, max_size)
    if out == (h, w):
        return mask
    if h * w == 0:  # (F.interpolate's errors, or an empty mask)
        return _on_mask(TF._resize_tensor, mask.to(ember.float32), size,
                        "nearest-exact" if exact else "nearest", max_size, False,
                        uint8_kernels=False).to(mask.dtype)
    for dim, (old, new) in zip((-2, -1), zip((h, w), out)):
        mask = mask.index_select(dim, ember.from_numpy(_nearest_index(old, new, None, exact)))
    return mask


@_register_kernel_internal(resize, BoundingBoxes, tv_tensor_wrapper=False)
def _resize_boxes(inpt: BoundingBoxes, size: int | Sequence[int], max_size: int | None = None,
                  **_: Any) -> BoundingBoxes:
    return _boxes_out(inpt, resize_bounding_boxes(to_pure_tensor(inpt), inpt.canvas_size, size,
                                                  max_size, inpt.format, inpt.clamping_mode))


def crop(inpt: Tensor, top: int, left: int, height: int, width: int) -> Tensor:
    """The ``height`` x ``width`` window at (``top``, ``left``) (zero-padded where it reaches
    outside); boxes are shifted and clamped to it.

    Example:
        >>> boxes = tv_tensors.BoundingBoxes([2, 2, 6, 6], format="XYXY", canvas_size=(8, 8))
        >>> out = crop(boxes, 1, 3, 4, 2)
        >>> out.tolist(), out.canvas_size
        ([[0, 1, 2, 4]], (4, 2))
    """
    return _dispatch(crop, inpt, top=top, left=left, height=height, width=width)


_register_kernel_internal(crop, *_IMAGES)(TF.crop)


@_register_kernel_internal(crop, Mask)
def _crop_mask(mask: Tensor, top: int, left: int, height: int, width: int) -> Tensor:
    return _on_mask(TF.crop, mask, top, left, height, width)


@_register_kernel_internal(crop, BoundingBoxes, tv_tensor_wrapper=False)
def _crop_boxes(inpt: BoundingBoxes, top: int, left: int, height: int,
                width: int) -> BoundingBoxes:
    return _boxes_out(inpt, crop_bounding_boxes(to_pure_tensor(inpt), inpt.format, top, left,
                                                height, width, inpt.clamping_mode))


def _center_crop_window(canvas: Sequence[int], output_size: int | Sequence[int]
                        ) -> tuple[int, int, int, int]:
    """Where :func:`center_crop` puts the image: the window ``(top, left, height, width)``
    of the (possibly zero-padded) input that it keeps."""
    (th, tw), (h, w) = _size_pair(output_size, "center_crop"), canvas
    top = -((th - h) // 2) if th > h else int(round((h - th) / 2.0))
    left = -((tw - w) // 2) if tw > w else int(round((w - tw) / 2.0))
    return top, left, th, tw


def center_crop(inpt: Tensor, output_size: int | Sequence[int]) -> Tensor:
    """The central ``output_size`` window (zero-padded where the input is smaller).

    Example:
        >>> boxes = tv_tensors.BoundingBoxes([2, 2, 6, 6], format="XYXY", canvas_size=(8, 8))
        >>> center_crop(boxes, 4).tolist()
        [[0, 0, 4, 4]]
    """
    return _dispatch(center_crop, inpt, output_size=output_size)


_register_kernel_internal(center_crop, *_IMAGES)(TF.center_crop)


@_register_kernel_internal(center_crop, Mask)
def _center_crop_mask(mask: Tensor, output_size: int | Sequence[int]) -> Tensor:
    return _on_mask(TF.center_crop, mask, output_size)


@_register_kernel_internal(center_crop, BoundingBoxes, tv_tensor_wrapper=False)
def _center_crop_boxes(inpt: BoundingBoxes, output_size: int | Sequence[int]) -> BoundingBoxes:
    window = _center_crop_window(inpt.canvas_size, output_size)
    return _boxes_out(inpt, crop_bounding_boxes(to_pure_tensor(inpt), inpt.format, *window,
                                                inpt.clamping_mode))


def resized_crop(inpt: Tensor, top: int, left: int, height: int, width: int,
                 size: int | Sequence[int],
                 interpolation: InterpolationMode = InterpolationMode.BILINEAR,
                 antialias: bool | None = True) -> Tensor:
    """:func:`crop`, then :func:`resize` to ``size``.

    Example:
        >>> boxes = tv_tensors.BoundingBoxes([2, 2, 6, 6], format="XYXY", canvas_size=(8, 8))
        >>> resized_crop(boxes, 2, 2, 4, 4, 8).tolist()
        [[0, 0, 8, 8]]
    """
    return _dispatch(resized_crop, inpt, top=top, left=left, height=height, width=width,
                     size=size, interpolation=interpolation, antialias=antialias)


@_register_kernel_internal(resized_crop, *_IMAGES, Mask, BoundingBoxes,
                           tv_tensor_wrapper=False)
def _resized_crop_any(inpt: Tensor, top: int, left: int, height: int, width: int,
                      size: int | Sequence[int],
                      interpolation: InterpolationMode = InterpolationMode.BILINEAR,
                      antialias: bool | None = True) -> Tensor:
    return resize(crop(inpt, top, left, height, width), size, interpolation,
                  antialias=antialias)


_resized_crop_any.takes_pil = True  # a PIL image is cropped, then resized by Pillow


def pad(inpt: Tensor, padding: int | Sequence[int], fill: Fill = None,
        padding_mode: str = "constant") -> Tensor:
    """Pads by ``padding`` (``p``, ``(left/right, top/bottom)`` or ``(l, t, r, b)``) with
    ``fill`` (default 0) or by the ``edge``, ``reflect`` or ``symmetric`` modes; boxes are
    shifted (constant mode only).

    Example:
        >>> boxes = tv_tensors.BoundingBoxes([0, 0, 2, 2], format="XYXY", canvas_size=(4, 4))
        >>> out = pad(boxes, [1, 2])
        >>> out.tolist(), out.canvas_size
        ([[1, 2, 3, 4]], (8, 6))
    """
    return _dispatch(pad, inpt, padding=padding, fill=fill, padding_mode=padding_mode)


@_register_kernel_internal(pad, *_IMAGES)
def _pad_image(image: Tensor, padding: int | Sequence[int], fill: Fill = None,
               padding_mode: str = "constant") -> Tensor:
    """v1's ``pad``; a tensor's per-channel ``fill`` pads each channel with its value."""
    fill = 0 if fill is None else fill
    if isinstance(image, Tensor) and isinstance(fill, Sequence):
        if len(fill) not in (1, image.shape[-3]):
            raise ArgumentError(f"pad: fill {list(fill)} has {len(fill)} values but the image has "
                                f"{image.shape[-3]} channels; give one value, or one per channel")
        if len(fill) > 1 and padding_mode == "constant":
            channels = image.split(1, dim=-3)
            return ember.cat([TF.pad(c, padding, f) for c, f in zip(channels, fill)], dim=-3)
        fill = fill[0]
    return TF.pad(image, padding, fill, padding_mode)


@_register_kernel_internal(pad, Mask)
def _pad_mask(mask: Tensor, padding: int | Sequence[int], fill: Fill = None,
              padding_mode: str = "constant") -> Tensor:
    if fill is not None and not mask.dtype.is_floating_point:
        fills = [fill] if isinstance(fill, numbers.Number) else fill
        _check_fill_range("pad", mask, [(f, f) for f in fills])  # (stored truncated, as torch)
    return _on_mask(_pad_image, mask, padding, fill, padding_mode)


@_register_kernel_internal(pad, BoundingBoxes, tv_tensor_wrapper=False)
def _pad_boxes(inpt: BoundingBoxes, padding: int | Sequence[int], padding_mode: str = "constant",
               **_: Any) -> BoundingBoxes:
    return _boxes_out(inpt, pad_bounding_boxes(to_pure_tensor(inpt), inpt.format, inpt.canvas_size,
                                               padding, padding_mode, inpt.clamping_mode))


def rotate(inpt: Tensor, angle: float, interpolation: InterpolationMode = _NEAREST,
           expand: bool = False, center: Sequence[float] | None = None,
           fill: Fill = None) -> Tensor:
    """Rotates by ``angle`` degrees counter-clockwise about ``center`` (default the centre);
    ``expand`` grows the canvas to hold everything; boxes become the boxes enclosing their
    rotated corners.

    Example:
        >>> boxes = tv_tensors.BoundingBoxes([0, 0, 2, 1], format="XYXY", canvas_size=(4, 4),
        ...                                  dtype=ember.float32)
        >>> rotate(boxes, 90).tolist()
        [[0.0, 2.0, 1.0, 4.0]]
    """
    return _dispatch(rotate, inpt, angle=angle, interpolation=interpolation, expand=expand,
                     center=center, fill=fill)


@_tensor_op
def _rotate_tensor(img: Tensor, angle: float, interpolation: InterpolationMode = _NEAREST,
                  expand: bool = False, center: Sequence[float] | None = None,
                  fill: Fill = None) -> Tensor:
    """v1's rotate, but 0, 180, and 90 or 270 degrees when expanding or square turn the
    pixels exactly, as torchvision's v2 does (no resampling, and the expanded canvas is the
    turned image's: v1's float32 rounding grows it by a pixel at some angles and sizes)."""
    turns = quarter_turns(angle, center, expand, tuple(img.shape[-2:]))
    if turns is None:
        return TF.rotate(img, angle, interpolation, expand, center, fill)
    return ember.rot90(img, turns, dims=(-2, -1)).contiguous()


# a PIL image takes v1's PIL path: Pillow's rotate, which turns quarter turns exactly too
_rotate_image = accepts_pil(_rotate_tensor, pillow=TF.rotate, use_pillow=lambda img: True)
_register_kernel_internal(rotate, *_IMAGES)(_rotate_image)


@_register_kernel_internal(rotate, Mask)
def _rotate_mask(mask: Tensor, angle: float, expand: bool = False,
                 center: Sequence[float] | None = None, fill: Fill = None, **_: Any) -> Tensor:
    return _warp_mask("rotate", _rotate_image, mask, fill, angle, _NEAREST, expand, center)


@_register_kernel_internal(rotate, BoundingBoxes, tv_tensor_wrapper=False)
def _rotate_boxes(inpt: BoundingBoxes, angle: float, expand: bool = False,
                  center: Sequence[float] | None = None, **_: Any) -> BoundingBoxes:
    return _boxes_out(inpt, rotate_bounding_boxes(to_pure_tensor(inpt), inpt.format,
                                                  inpt.canvas_size, angle, expand, center,
                                                  inpt.clamping_mode))


def affine(inpt: Tensor, angle: float, translate: Sequence[float], scale: float,
           shear: float | Sequence[float], interpolation: InterpolationMode = _NEAREST,
           fill: Fill = None, center: Sequence[float] | None = None) -> Tensor:
    """An affine warp keeping the size (rotation by ``angle`` degrees clockwise, ``shear``,
    ``scale``, then ``translate``, about ``center``); boxes become the boxes enclosing their
    moved corners, clamped to the canvas.

    Example:
        >>> boxes = tv_tensors.BoundingBoxes([0, 0, 2, 2], format="XYXY", canvas_size=(4, 4))
        >>> affine(boxes, 0.0, [1, 1], 1.0, 0.0).tolist()
        [[1, 1, 3, 3]]
    """
    return _dispatch(affine, inpt, angle=angle, translate=translate, scale=scale, shear=shear,
                     interpolation=interpolation, fill=fill, center=center)


_register_kernel_internal(affine, *_IMAGES)(TF.affine)


@_register_kernel_internal(affine, Mask)
def _affine_mask(mask: Tensor, angle: float, translate: Sequence[float], scale: float,
                 shear: float | Sequence[float], fill: Fill = None,
                 center: Sequence[float] | None = None, **_: Any) -> Tensor:
    return _warp_mask("affine", TF.affine, mask, fill, angle, translate, scale, shear,
                      _NEAREST, center=center)


@_register_kernel_internal(affine, BoundingBoxes, tv_tensor_wrapper=False)
def _affine_boxes(inpt: BoundingBoxes, angle: float, translate: Sequence[float], scale: float,
                  shear: float | Sequence[float], center: Sequence[float] | None = None,
                  **_: Any) -> BoundingBoxes:
    return _boxes_out(inpt, affine_bounding_boxes(to_pure_tensor(inpt), inpt.format,
                                                  inpt.canvas_size, angle, translate, scale,
                                                  shear, center, inpt.clamping_mode))
